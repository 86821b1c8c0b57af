"""Whole-frame reorder of a two-points-per-cycle stream: the lane's corner turn and bit reversal.

A frame is one 2^k-point transform arriving as 2^(k-1) cycles of two points. The frame is written in
``write_order`` and read back one frame later in ``read_order``; both orders must be *bit permutations*
of (cycle, port), which every order in a lane is. That lets two simple dual-port banks do it with no
conflicts: a point with index i goes to bank i[wb] ^ i[rb] (wb: the index bit that tells the two written
points apart, rb: the one that tells the two read points apart), at address (frame parity, i without
bit wb). The two points written together differ only in wb, so they share an address and land in
different banks; the two read together differ only in rb, so they also come from different banks.

Ping-pong by frame parity keeps it simple: 2^(k+1) points in two banks of 2^k x 65 bits (the 65th bit is
the point's valid flag, so valid travels with the data); at k = 12 each bank is one 4K x 72 URAM288
(``ram_style="ultra"``, which the lane asks for when the banks are 4096 deep).
"""

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


class FrameReorder(wiring.Component):
    """Reorders back-to-back frames of 2^k points (two a cycle) from ``write_order`` to ``read_order``.

    Ports: en (global enable: everything holds while 0), restart (forget every stored frame: their
    valid flags read as 0 until the bank is written again; used with a rewound i_phase), i_phase (k bits:
    frame parity on top, then the cycle within the frame of the pair entering now), i_valid, i_x0, i_x1,
    o_valid, o_x0, o_x1.
    The pair entering on cycle t of a frame holds points write_order[t]; the pair leaving on cycle t
    of the frame holds points read_order[t]. Output frames start ``latency`` = 2^(k-1) + 1 enabled cycles
    after input frames; ``o_valid`` is the valid flag stored with the point on ``o_x0``.
    """

    def __init__(self, write_order: np.ndarray, read_order: np.ndarray, width: int = 64, *,
                 ram_style: str | None = None):
        if not isinstance(width, int) or isinstance(width, bool):
            raise TypeError(f"width: expected an int, got {type(width).__name__}")
        if width < 1:
            raise ValueError(f"width: must be >= 1, got {width}")
        if ram_style not in (None, "ultra", "block", "distributed"):
            raise ValueError(f"ram_style: must be None, 'ultra', 'block' or 'distributed', "
                             f"got {ram_style!r}")
        self._ram_style = ram_style
        write_order, read_order = np.asarray(write_order), np.asarray(read_order)
        if write_order.shape != read_order.shape:
            raise ValueError(f"read_order: shape {read_order.shape} differs from write_order's "
                             f"{write_order.shape}")
        self._wsrc = bit_sources(write_order)
        self._rsrc = bit_sources(read_order)
        self._k = len(self._wsrc)
        self._width = width
        self._write_order = write_order.copy()
        self._read_order = read_order.copy()
        super().__init__({
            "en": In(1), "restart": In(1), "i_phase": In(self._k), "i_valid": In(1),
            "i_x0": In(width), "i_x1": In(width),
            "o_valid": Out(1), "o_x0": Out(width), "o_x1": Out(width),
        })

    @property
    def log_points(self) -> int:
        return self._k

    @property
    def period(self) -> int:
        """Cycles per frame, 2^(k-1)."""
        return 1 << (self._k - 1)

    @property
    def latency(self) -> int:
        """Enabled cycles from a frame's first input pair to its first output pair."""
        return self.period + 1

    @property
    def ram_style(self) -> str | None:
        """Synthesis hint for the two banks (Vivado/Yosys ``ram_style``), None to let the tool choose."""
        return self._ram_style

    @property
    def stored_points(self) -> int:
        """Points held by the two banks (two frames)."""
        return 2 << self._k

    def model(self, frames: np.ndarray) -> np.ndarray:
        """Bit-exact reference on whole frames: input pairs (..., 2^(k-1), 2) -> output pairs."""
        frames = np.asarray(frames)
        natural = np.empty(frames.shape[:-2] + (1 << self._k,), dtype=frames.dtype)
        natural[..., self._write_order] = frames
        return natural[..., self._read_order]

    def elaborate(self, platform):
        m = Module()
        k, wsrc, rsrc = self._k, self._wsrc, self._rsrc
        wb, rb = wsrc.index(PORT), rsrc.index(PORT)
        cycle, parity = self.i_phase[:k - 1], self.i_phase[k - 1]

        def index0(sources):
            """Index of the port-0 point on this cycle (port bit 0)."""
            return Cat(*[(Const(0, 1) if s == PORT else cycle[s]) for s in sources])

        def address(index, par):
            return Cat(*[index[b] for b in range(k) if b != wb], par)

        def bank(index):
            return (index[wb] ^ index[rb]) if wb != rb else 0

        banks = []
        for n in range(2):
            # The banks' initial contents never matter (reads of unwritten banks are masked by
            # bank_fresh), so they may live in URAM, which cannot be initialized.
            attrs = {"ram_style": self._ram_style} if self._ram_style else None
            mem = Memory(shape=unsigned(self._width + 1), depth=1 << k, init=[], attrs=attrs)
            m.submodules[f"bank{n}"] = mem
            banks.append((mem.write_port(), mem.read_port(domain="sync")))

        # Write: both points share the address; port 0's point goes to bank(i0).
        i0 = Signal(k, name="w_index0")
        m.d.comb += i0.eq(index0(wsrc))
        w_addr = address(i0, parity)
        swap_w = Signal(name="w_swap")
        m.d.comb += swap_w.eq(bank(i0))
        p0 = Cat(self.i_x0, self.i_valid)
        p1 = Cat(self.i_x1, self.i_valid)
        for n, (wp, _) in enumerate(banks):
            m.d.comb += [
                wp.en.eq(self.en),
                wp.addr.eq(w_addr),
                wp.data.eq(Mux(swap_w, p1, p0) if n == 0 else Mux(swap_w, p0, p1)),
            ]

        # Read the other frame: j0 (rb = 0) and j1 (rb = 1) come from different banks.
        j0 = Signal(k, name="r_index0")
        m.d.comb += j0.eq(index0(rsrc))
        j1 = j0 | (1 << rb)
        swap_r = Signal(name="r_swap")
        m.d.comb += swap_r.eq(bank(j0))
        a0, a1 = address(j0, ~parity), address(j1, ~parity)
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
            m.d.sync += fresh_q.eq(fresh.bit_select(~parity, 1))
            with m.If(cycle == 0):
                m.d.sync += armed.eq(1)
            with m.If((cycle == self.period - 1) & (armed | (cycle == 0))):
                m.d.sync += fresh.bit_select(parity, 1).eq(1)
        d0, d1 = banks[0][1].data, banks[1][1].data
        out0 = Mux(swap_q, d1, d0)
        out1 = Mux(swap_q, d0, d1)
        m.d.comb += [
            self.o_x0.eq(out0[:self._width]),
            self.o_valid.eq(out0[self._width] & fresh_q),
            self.o_x1.eq(out1[:self._width]),
        ]
        return m
