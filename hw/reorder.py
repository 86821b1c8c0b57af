"""Whole-frame reorder of a two-points-per-cycle stream: the lane's corner turn and bit reversal.

A frame is one 2^f-point transform arriving as 2^(f-1) cycles of two points. The frame is written in
its ``write_order`` and read back one frame later in its ``read_order``; both orders must be *bit
permutations* of (cycle, port), which every order in a lane is. That lets two simple dual-port banks do
it with no conflicts: a point with index i goes to bank i[wb] ^ i[rb] (wb: the index bit that tells the
two written points apart, rb: the one that tells the two read points apart), at address (i without bit
wb, frame parity; the bits of i other than wb in the order the write cycle holds them, so a point's
address is the cycle it was written on). The two points written together differ only in wb, so they
share an address and land in different banks; the two read together differ only in rb, so they also
come from different banks.

Frame sizes are chosen at run time (``log_frame`` = f, one of the sizes the block was built with, held
constant between ``restart`` pulses): each size has its own pair of orders, hence its own bit sources,
selected per size. The banks are 2^k deep for the largest size k: frame parity on the top address bit,
a 2^f frame's f - 1 index bits on the lowest address bits. Ping-pong by frame parity keeps it simple:
2^(k+1) points in two banks of 2^k x 65 bits (the 65th bit is the point's valid flag, so valid travels
with the data); at k = 12 each bank is one 4K x 72 URAM288 (``ram_style="ultra"``, which the lane asks
for when the banks are 4096 deep).
"""

import operator
from functools import reduce
from typing import Mapping

import numpy as np
from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["FrameReorder", "bit_sources"]

#: Source tag of an index bit that comes from the port (0 or 1) rather than from a cycle bit.
PORT = -1


def bit_sources(order: np.ndarray) -> list[int]:
    """For an order array of shape (2^(k-1), 2) (index of the point on cycle t, port q), the source of
    every index bit: ``PORT`` or the cycle bit it copies. ValueError if the order is not a bit permutation
    of (cycle, port)."""
    order = np.asarray(order)
    if order.ndim != 2 or order.shape[1] != 2 or order.shape[0] & (order.shape[0] - 1):
        raise ValueError(f"order: expected shape (2^(k-1), 2), got {order.shape}")
    cycles = order.shape[0]
    k = cycles.bit_length()
    t = np.arange(cycles)[:, None]
    q = np.array([[0, 1]])
    candidates = {PORT: np.broadcast_to(q, order.shape)}
    for b in range(k - 1):
        candidates[b] = np.broadcast_to((t >> b) & 1, order.shape)
    sources = []
    for ib in range(k):
        bits = (order >> ib) & 1
        match = [s for s, v in candidates.items() if np.array_equal(bits, v)]
        if not match:
            raise ValueError(f"order: index bit {ib} is not a copy of a cycle or port bit")
        sources.append(match[0])
    if sorted(sources) != [PORT] + list(range(k - 1)):
        raise ValueError("order: not a permutation of the cycle and port bits")
    return sources


def _check_orders(orders) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    if not isinstance(orders, Mapping) or not orders:
        raise TypeError(f"orders: expected a non-empty mapping log_frame -> (write_order, read_order), "
                        f"got {type(orders).__name__}")
    out = {}
    for f, pair in orders.items():
        if not isinstance(f, int) or isinstance(f, bool) or not 1 <= f <= 16:
            raise ValueError(f"orders: frame size exponents must be ints in 1..16, got {f!r}")
        try:
            write_order, read_order = (np.asarray(o) for o in pair)
        except (TypeError, ValueError):
            raise TypeError(f"orders[{f}]: expected a (write_order, read_order) pair") from None
        if write_order.shape != read_order.shape:
            raise ValueError(f"orders[{f}]: read order's shape {read_order.shape} differs from the write "
                             f"order's {write_order.shape}")
        if write_order.ndim != 2 or write_order.shape != (1 << (f - 1), 2):
            raise ValueError(f"orders[{f}]: expected shape ({1 << (f - 1)}, 2) for 2^{f} points, "
                             f"got {write_order.shape}")
        out[f] = (write_order.copy(), read_order.copy())
    return dict(sorted(out.items()))


class FrameReorder(wiring.Component):
    """Reorders back-to-back frames of 2^f points (two a cycle) from their write order to their read order.

    ``orders``: {f: (write_order, read_order)} for every frame size the block supports (order arrays of
    shape (2^(f-1), 2)); the largest f (k) sets the banks' depth.

    Ports: en (global enable: everything holds while 0), restart (forget every stored frame: their
    valid flags read as 0 until the bank is written again; used with a rewound i_phase), log_frame (f,
    one of the built sizes, set in the restart's cycle and held until the next: it is registered, so the
    block runs it from the cycle after; any other value: nothing valid comes out),
    i_phase (k bits; frame parity at bit f - 1, below it the cycle within the frame of the pair entering
    now; bits above ignored), i_valid, i_x0, i_x1, o_valid, o_x0, o_x1.
    The pair entering on cycle t of a frame holds points write_order[t]; the pair leaving on cycle t
    of the frame holds points read_order[t]. Output frames start ``latency_at(f)`` = 2^(f-1) +
    ``READ_LATENCY`` enabled cycles after input frames; ``o_valid`` is the valid flag stored with the point
    on ``o_x0``. The outputs are registers (after the banks' read register and the port swap), so the
    logic they feed starts at a flip-flop (the swap mux in front of the next stage's input mux
    and adder was over the NTT clock's period); a restart clears ``o_valid`` at once.
    """

    #: Enabled cycles a point spends past its frame's delay: the banks' read register and the output register.
    READ_LATENCY = 2

    def __init__(self, orders: Mapping[int, tuple], width: int = 64, *, ram_style: str | None = None):
        if not isinstance(width, int) or isinstance(width, bool):
            raise TypeError(f"width: expected an int, got {type(width).__name__}")
        if width < 1:
            raise ValueError(f"width: must be >= 1, got {width}")
        if ram_style not in (None, "ultra", "block", "distributed"):
            raise ValueError(f"ram_style: must be None, 'ultra', 'block' or 'distributed', "
                             f"got {ram_style!r}")
        self._ram_style = ram_style
        self._orders = _check_orders(orders)
        self._sources = {f: (bit_sources(w), bit_sources(r)) for f, (w, r) in self._orders.items()}
        self._k = max(self._orders)
        self._width = width
        super().__init__({
            "en": In(1), "restart": In(1), "log_frame": In(range(self._k + 1)),
            "i_phase": In(self._k), "i_valid": In(1), "i_x0": In(width), "i_x1": In(width),
            "o_valid": Out(1), "o_x0": Out(width), "o_x1": Out(width),
        })

    @property
    def log_points(self) -> int:
        """k: the largest frame size (2^k points)."""
        return self._k

    @property
    def frame_sizes(self) -> tuple[int, ...]:
        """The f this block runs (``log_frame`` values)."""
        return tuple(self._orders)

    @property
    def period(self) -> int:
        """Cycles per frame of the largest size, 2^(k-1)."""
        return 1 << (self._k - 1)

    def latency_at(self, log_frame: int) -> int:
        """Enabled cycles from a 2^f-point frame's first input pair to its first output pair."""
        if log_frame not in self._orders:
            raise ValueError(f"log_frame: must be one of {list(self._orders)}, got {log_frame!r}")
        return (1 << (log_frame - 1)) + self.READ_LATENCY

    @property
    def latency(self) -> int:
        """``latency_at(k)``, the largest frame's."""
        return self.latency_at(self._k)

    @property
    def ram_style(self) -> str | None:
        """Synthesis hint for the two banks (Vivado/Yosys ``ram_style``), None to let the tool choose."""
        return self._ram_style

    @property
    def stored_points(self) -> int:
        """Points held by the two banks (two frames of the largest size)."""
        return 2 << self._k

    def model(self, frames: np.ndarray) -> np.ndarray:
        """Bit-exact reference on whole frames: input pairs (..., 2^(f-1), 2) -> output pairs, f read off
        the shape."""
        frames = np.asarray(frames)
        f = frames.shape[-2].bit_length()
        if f not in self._orders or frames.shape[-2] != 1 << (f - 1):
            raise ValueError(f"frames: {frames.shape[-2]} cycles is not a built frame size")
        write_order, read_order = self._orders[f]
        natural = np.empty(frames.shape[:-2] + (1 << f,), dtype=frames.dtype)
        natural[..., write_order] = frames
        return natural[..., read_order]

    def _controls(self, f: int):
        """This size's (write address, write swap, read address 0, read address 1, read swap, first
        cycle, last cycle, parity) as expressions of i_phase (addresses k bits, parity on top)."""
        k, (wsrc, rsrc) = self._k, self._sources[f]
        wb, rb = wsrc.index(PORT), rsrc.index(PORT)
        cycle, parity = self.i_phase[:f - 1], self.i_phase[f - 1]

        def index(sources, port: int):
            return Cat(*[(Const(port, 1) if s == PORT else cycle[s]) for s in sources])

        def address(idx, par):
            # a point's address is the cycle it was written on: no per-size mux on the write side
            low = Cat(*[idx[wsrc.index(c)] for c in range(f - 1)])
            return Cat(low, Const(0, k - f), par) if f < k else Cat(low, par)

        def bank(idx):
            return (idx[wb] ^ idx[rb]) if wb != rb else Const(0, 1)

        i0, j0, j1 = index(wsrc, 0), index(rsrc, 0), index(rsrc, 1)
        first = (cycle == 0) if f > 1 else Const(1, 1)
        last = (cycle == (1 << (f - 1)) - 1) if f > 1 else Const(1, 1)
        return (address(i0, parity), bank(i0), address(j0, ~parity), address(j1, ~parity), bank(j0),
                first, last, parity)

    def elaborate(self, platform):
        m = Module()
        k = self._k

        banks = []
        for n in range(2):
            # The banks' initial contents never matter (reads of unwritten banks are masked by
            # bank_fresh), so they may live in URAM, which cannot be initialized.
            attrs = {"ram_style": self._ram_style} if self._ram_style else None
            mem = Memory(shape=unsigned(self._width + 1), depth=1 << k, init=[], attrs=attrs)
            m.submodules[f"bank{n}"] = mem
            banks.append((mem.write_port(), mem.read_port(domain="sync")))

        # This frame size's addresses and bank selects.
        w_addr, a0, a1 = Signal(k, name="w_addr"), Signal(k, name="r_addr0"), Signal(k, name="r_addr1")
        swap_w, swap_r = Signal(name="w_swap"), Signal(name="r_swap")
        first, last, parity = Signal(name="first_cycle"), Signal(name="last_cycle"), Signal(name="parity")
        size_ok = Signal(name="size_ok")
        # The size as one flag per built size, registered from log_frame (decoded in front of the
        # per-size selects, the banks' addresses were 5 LUT levels; 0 cycles: log_frame is taken
        # from the restart cycle on). None set (a size not built): nothing valid.
        sizes = {f: Signal(name=f"size{f}", init=int(f == k)) for f in self._orders}
        m.d.sync += [flag.eq(self.log_frame == f) for f, flag in sizes.items()]
        m.d.comb += size_ok.eq(Cat(*sizes.values()).any())
        controls = {f: self._controls(f) for f in self._orders}
        for i, s in enumerate((w_addr, swap_w, a0, a1, swap_r, first, last, parity)):
            m.d.comb += s.eq(reduce(operator.or_, (Mux(flag, controls[f][i], 0) for f, flag in sizes.items())))

        # Write: both points share the address; port 0's point goes to bank(i0).
        p0 = Cat(self.i_x0, self.i_valid)
        p1 = Cat(self.i_x1, self.i_valid)
        for n, (wp, _) in enumerate(banks):
            m.d.comb += [
                wp.en.eq(self.en),
                wp.addr.eq(w_addr),
                wp.data.eq(Mux(swap_w, p1, p0) if n == 0 else Mux(swap_w, p0, p1)),
            ]

        # Read the other frame: j0 (rb = 0) and j1 (rb = 1) come from different banks.
        for n, (_, rp) in enumerate(banks):
            m.d.comb += [
                rp.en.eq(self.en),
                rp.addr.eq(Mux(swap_r, a1, a0) if n == 0 else Mux(swap_r, a0, a1)),
            ]
        swap_q = Signal(name="r_swap_q")
        with m.If(self.en):
            m.d.sync += swap_q.eq(swap_r)

        # A bank's frame counts only once it was written completely since the last restart: after a
        # restart the rewound phase may point the reads at a bank holding an old, already-read frame.
        fresh = Signal(2, name="bank_fresh")
        armed = Signal(name="w_armed")          # the frame being written began after the restart
        fresh_q = Signal(name="r_fresh_q")
        with m.If(self.restart):
            m.d.sync += [fresh.eq(0), fresh_q.eq(0), armed.eq(0)]
        with m.Elif(self.en):
            m.d.sync += fresh_q.eq(fresh.bit_select(~parity, 1) & size_ok)
            with m.If(first):
                m.d.sync += armed.eq(1)
            with m.If(last & (armed | first)):
                m.d.sync += fresh.bit_select(parity, 1).eq(1)
        d0, d1 = banks[0][1].data, banks[1][1].data
        out0 = Mux(swap_q, d1, d0)
        out1 = Mux(swap_q, d0, d1)
        # The output register (READ_LATENCY's second cycle): valid keeps its reset, so a restart drops
        # whatever the register held of the old frames.
        with m.If(self.restart):
            m.d.sync += self.o_valid.eq(0)
        with m.Elif(self.en):
            m.d.sync += [self.o_x0.eq(out0[:self._width]), self.o_valid.eq(out0[self._width] & fresh_q),
                         self.o_x1.eq(out1[:self._width])]
        return m
