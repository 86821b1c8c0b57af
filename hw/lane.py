# amaranth: UnusedElaboratable=no
"""One lane (the reference's "chain"): k Gentleman-Sande stages, a corner turn, and bit reversal.

    points ─► HalfChain(a stages) ─► corner turn (FrameReorder) ─► HalfChain(b stages) ─► bit reversal ─► points
    twiddles ─┘          stream ─► SecondHalfTwiddles (capture, replay) ─┘

A lane transforms back-to-back 2^k-point frames at two points per cycle, one frame every P = 2^(k-1)
enabled cycles, k = a + b with a = ceil(k/2). Points enter in ``hw.model.schedule.lane_input_order``
(the first 2^k reorder of the reference is folded into the DMA's read order) and leave in natural order.

Each half chain works on groups of 2^d points (d = a or b) that form independent 2^d-point transforms,
two points a cycle. Between its stages s and s+1 a *delay commutator* of depth D = 2^(d-2-s) swaps the
role of the port with the cycle-index bit of weight D: the lower stream is delayed by D, the two streams
are exchanged on cycles whose bit D is set, then the upper stream is delayed by D. It holds 2D points
(32, 16, 8, 4, 2 at k = 12) and adds D cycles of latency.

Twiddles travel with the points (hw/model/lane.py defines the stream): stage 0 of a half consumes
``w_first``; ``w_rest`` rides down the butterflies' pass-through. Stage s >= 1 needs T_s = 2^(d-1-s)
distinct words per group, each 2^s times; it takes them from the stream on its first T_s cycles of the
group and replays them from a T_s-word loop. The stream is delayed less than the points in the
commutators (by 0 after stage 0, by 2D after the others) precisely so that each stage's words pass by on
its first T_s cycles. The second half's words ride in slot 0 of each first-half group; they are captured
at the corner turn into a ping-pong table and replayed for every group of the second half in the same
two-word format. The lane never knows which pass it is in: only the twiddle values differ.

The pass-1 four-step scale is not folded into the stage twiddles: they stay plain, so stages k-6 .. k-1
(64th roots of unity, powers of two) are butterflies without a multiplier (ShiftMultiplier) and an
OutputScale after the bit reversal multiplies output m by w_N^(n2*m); the column n2 rides the stream's
free slot (hw.model.lane.shift_stream) and is picked up where the second half emits it. In BabyBear and
KoalaBear (2 has a large order modulo p) only the last stage, whose one twiddle is 1, is shift-only (a
pass-through); every other stage and the output scale multiply by Montgomery words (hw/multiplier.py).

Run-time frame sizes: ``log_frame`` = f (2..k, taken at ``restart``) makes the lane a lane of
2^f points, one frame every 2^(f-1) enabled cycles. The frame's a_f = ceil(f/2) and b_f = f - a_f stages
run on the LAST a_f stages of the first half and the last b_f of the second
(hw.model.lane.physical_stages): the remaining stages, with their commutator depths 2^(d-2-s), are
exactly a half chain of depth a_f (b_f), so each HalfChain muxes its input into its first active stage,
skips the others (no delay, nothing valid in them) and shifts its phase by the skipped stages' offset;
the reorders, the second-half table and the phase counters use f's orders, frame parity (bit f - 1)
and restart values; the output scale multiplies by w_N^(column*m) with N = 2^log_n. So
``latency_at(f)`` is what a chain of only the active stages takes; ``latency`` = ``latency_at(k)``.

Coset transforms (hw/coset/, hw/model/coset.py) run on the output scale's multipliers, which a lane
places at its head (after the input register) in a forward coset run and at its tail otherwise. Modes,
taken at ``restart`` like the frame size:

    plain runs, inverse coset pass 1   tail, the four-step factor (column from the stream) or 1/N
    forward coset pass 1               head, stream: x * (S * K), S on i_f0/i_f1, K the frame word i_k
    forward coset pass 2               head, the four-step factor w_N^(k1 n2) of the input n2, row k1 = i_k
    inverse coset pass 2               tail, stream: y * (S * K), K = h^k1 / N (no separate 1/N)

The latency is the same in every mode (the output scale is in the chain once, at one end or the other):
with the head scaled the twiddle words wait at the head as long as the points, and the frame clocks of
the blocks after it start that much later. No multiplier is added for the coset.

Handshake: valid-only pipeline with the global enable ``en``. The chain's reorders run on a free-running
frame clock (counted in enabled cycles), so a transform must start on an enabled cycle where
``o_slot_start`` is 1 and occupy P consecutive enabled cycles; whole idle frames (``i_valid`` low for a
frame) are fine, stalls are done with ``en``. Output frames start exactly ``latency`` enabled cycles
after their input frames (``latency_at(f)`` at frame size f).
"""

from typing import Callable

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import select_tree
from nantucket.hw.butterfly import Butterfly
from nantucket.hw.model import field as F
from nantucket.hw.model import lane as lane_model
from nantucket.hw.output_scale import OutputScale
from nantucket.hw.reorder import FrameReorder
from nantucket.hw.run import lane_run_layout
from nantucket.hw.shared import share
from nantucket.hw.multiplier import ShiftMultiplier, general_multiplier
from nantucket.hw.twiddles import stream_word_bits

# The file's first line: a lane built for its properties (latencies, sizes) is never elaborated, nor are
# the sub-blocks a shared lane's module stands for (hw/shared.py); the warning would only be noise.

__all__ = ["HalfChain", "SecondHalfTwiddles", "Lane"]
#: Width of the twiddle stream after the first shift stage: only shift amounts (8 bits) and the frame's
#: column (k <= 12 bits) are still to be used downstream.
SHIFT_WORD_BITS = 16


def _check_int(name: str, value, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}: must be in {lo}..{hi}, got {value}")
    return value


def _check_factory(butterfly, field=F.GOLDILOCKS):
    if butterfly is None:
        general = general_multiplier(field)
        return lambda: Butterfly(multiplier=general)
    if not callable(butterfly):
        raise TypeError(f"butterfly: expected a callable returning a butterfly component, "
                        f"got {type(butterfly).__name__}")
    return butterfly


def _twiddle_bits(bf) -> int:
    """Bits of ``i_w`` a butterfly reads (a shift stage reads only its shift amount): the chain keeps
    only these in the stage's replay loop and twiddle mux."""
    return min(getattr(bf, "twiddle_bits", len(bf.i_w)), len(bf.i_w))


def _delay(m: Module, en, value, depth: int, name: str):
    """``value`` delayed by ``depth`` enabled cycles in reset-less registers (SRLs in synthesis) but the
    last, which keeps a reset so it stays a flip-flop: every delay here is read by a mux, and an SRL output
    starting that path was over the NTT clock's period (hw.arith.pipe's ``last_ff``; no cycle added)."""
    for i in range(depth):
        r = Signal(len(value), name=f"{name}_{i}", reset_less=i < depth - 1)
        with m.If(en):
            m.d.sync += r.eq(value)
        value = r
    return value


class HalfChain(wiring.Component):
    """d Gentleman-Sande stages over groups of 2^d_f points with delay commutators between them; d_f
    (``i_depth``, 1..d, chosen at run time) of them active.

    Ports: en, i_depth (d_f: the chain runs its last d_f stages, held constant while data flows and set at
    least one cycle before the first pair enters (its stage flags are registered); by the
    self-similarity of the DIF network they are a d_f-stage chain, the first d - d_f stages and their
    commutators are skipped, adding no delay), i_phase (d-1 bits, whose low d_f - 1 are the cycle within
    its group of the pair entering now; free-running), i_valid, i_x0, i_x1, i_w_first, i_w_rest,
    o_valid, o_x0, o_x1, o_w_rest (its low ``out_bits`` bits, the rest 0: what the consumer reads).
    A group's pair on input cycle c carries local indices (c, c + 2^(d_f-1)); on output cycle c it
    carries (2c, 2c + 1) (DIF positions, hw.model.lane.interface_orders). ``o_w_rest`` is the twiddle
    stream re-aligned so that the word of input slot c of a group leaves with that group's output cycle c.
    """

    def __init__(self, depth: int, *, butterfly: Callable | None = None, stages: list | None = None,
                 out_bits: int = 64, width: int = 64, word_bits: int = 64):
        self._d = _check_int("depth", depth, 1, 6)
        self._width = _check_int("width", width, 1, 64)
        self._out_bits = _check_int("out_bits", out_bits, 1, word_bits)
        if stages is None:
            factory = _check_factory(butterfly)
            stages = [factory() for _ in range(depth)]
        elif len(stages) != depth:
            raise ValueError(f"stages: expected {depth} butterflies, got {len(stages)}")
        self._stages = list(stages)
        # Stages may differ in latency (shift-only stages are shorter): the stream rides each stage's own
        # pass-through, so twiddles and points stay aligned whatever the latencies.
        self._bf_latencies = [bf.latency for bf in self._stages]
        super().__init__({
            "en": In(1), "i_depth": In(range(depth + 1)), "i_phase": In(max(depth - 1, 1)), "i_valid": In(1),
            "i_x0": In(width), "i_x1": In(width), "i_w_first": In(word_bits), "i_w_rest": In(word_bits),
            "o_valid": Out(1), "o_x0": Out(width), "o_x1": Out(width), "o_w_rest": Out(word_bits),
        })

    @property
    def depth(self) -> int:
        return self._d

    @property
    def group_cycles(self) -> int:
        """Cycles per group with every stage active, 2^(d-1)."""
        return 1 << (self._d - 1)

    @property
    def butterfly_latencies(self) -> list[int]:
        return list(self._bf_latencies)

    @property
    def dsp_tiles(self) -> int:
        return sum(bf.dsp_tiles for bf in self._stages)

    @property
    def commutator_depths(self) -> list[int]:
        """D of the commutator after stage s, s = 0..d-2."""
        return [1 << (self._d - 2 - s) for s in range(self._d - 1)]

    @property
    def buffer_points(self) -> list[int]:
        """Points held by each commutator (2D; 3D for D <= LATE_SWAP_DEPTH)."""
        return [(3 if dd <= self.LATE_SWAP_DEPTH else 2) * dd for dd in self.commutator_depths]

    @property
    def stored_points(self) -> int:
        return sum(self.buffer_points)

    @property
    def stream_delays(self) -> list[int]:
        """Delay of the twiddle stream in commutator s with every stage active: 0 after stage 0, 2D after
        the others (with d_f active: 0 after the first active stage)."""
        return [0 if s == 0 else 2 * dd for s, dd in enumerate(self.commutator_depths)]

    @property
    def stored_twiddles(self) -> int:
        """Words in the replay loops, the stream delays and the output re-alignment."""
        loops = sum(1 << (self._d - 1 - s) for s in range(1, self._d))
        return loops + sum(self.stream_delays) + self._realign

    @property
    def _realign(self) -> int:
        # At the last stage the stream runs T_(d-1) = 1 slot ahead of the points (none for d = 1).
        return 1 if self._d > 1 else 0

    def _check_active(self, active: int) -> int:
        return _check_int("active", active, 1, self._d)

    def _offset(self, stage: int) -> int:
        """Enabled cycles from stage 0's input to stage ``stage``'s with every stage active."""
        return sum(self._bf_latencies[:stage]) + sum(self.commutator_depths[:stage])

    def latency_at(self, active: int) -> int:
        """Enabled cycles from input to output with the last ``active`` (d_f) stages running."""
        first = self._d - self._check_active(active)
        return self._offset(self._d - 1) - self._offset(first) + self._bf_latencies[-1]

    @property
    def latency(self) -> int:
        """``latency_at(d)``: every stage active."""
        return self.latency_at(self._d)

    #: Commutators up to this depth swap after the upper delay (see _commutator).
    LATE_SWAP_DEPTH = 2

    def _commutator(self, m: Module, s: int, x0, x1, valid, cycle, cycle_late):
        """Delay commutator after stage s: exchange the port with cycle bit D (``cycle``: the cycle of the
        data entering it now, ``cycle_late``: of the data D cycles behind). Valid rides with each point.
        Returns the next stage's (x0, x1, valid).

        The textbook form delays the lower port by D, swaps, then delays the upper port by D (2D points).
        For D <= LATE_SWAP_DEPTH the swap of the upper port moves after its delay (it picks the lower port
        delayed 2D or the upper one delayed D, by the bit of the data D cycles behind): one point more
        held per cycle of D, in flip-flops at these depths, but both outputs are then LUT outputs, so the
        next stage's input mux (run-time frame sizes) merges into them instead of adding a LUT a bit."""
        en, dd, bit = self.en, self.commutator_depths[s], self._d - 2 - s
        # the swap registered from the next cycle's phase (``cycle`` and ``cycle_late`` are of the next
        # cycle): from the phase adders through the swap and the next stage's input mux into the
        # butterfly's adder it was 3 LUTs and a 64-bit carry chain (0 cycles; stale in the
        # cycle after a restart, while the chain is empty)
        swap = Signal(name=f"c{s}_swap")
        m.d.sync += swap.eq(cycle[bit])
        width = self._width
        upper, lower = Cat(x0, valid), Cat(x1, valid)
        lower_d = _delay(m, en, lower, dd, f"c{s}_low")
        lower_sw = Signal(width + 1, name=f"c{s}_lo")
        upper_out = Signal(width + 1, name=f"c{s}_up")
        m.d.comb += lower_sw.eq(Mux(swap, upper, lower_d))
        if dd <= self.LATE_SWAP_DEPTH:
            swap_late = Signal(name=f"c{s}_swap_late")
            m.d.sync += swap_late.eq(cycle_late[bit])
            m.d.comb += [upper_out.eq(Mux(swap_late, _delay(m, en, lower_d, dd, f"c{s}_low2"),
                                          _delay(m, en, upper, dd, f"c{s}_up")))]
        else:
            upper_sw = Signal(width + 1, name=f"c{s}_up_sw")
            m.d.comb += [upper_sw.eq(Mux(swap, lower_d, upper)), upper_out.eq(_delay(m, en, upper_sw, dd, f"c{s}_up"))]
        return upper_out[:width], lower_sw[:width], upper_out[width]

    def elaborate(self, platform):
        m = Module()
        d, en = self._d, self.en
        group = 1 << (d - 1)
        # Per d_f: the stage taking the chain's input is d - d_f. Its input sits offset(d - d_f) cycles
        # behind stage 0's in a full chain; advancing the phase by that much lets every later stage use
        # its full-chain offset. Only the low d_f - 1 bits of a cycle count.
        # Decoded into flip-flops (every cycle, not gated by en): from the depth register through a compare
        # they were a LUT level more in front of the first active stage's input mux and the butterfly's
        # subtractor, 3 LUTs and a carry chain. i_depth is therefore taken a cycle before the data
        # (the lane registers it at restart, and its input register holds the first pair a cycle more).
        first = [Signal(name=f"s{s}_first", init=s == 0) for s in range(d)]
        active = [Signal(name=f"s{s}_active", init=1) for s in range(d)]
        for s in range(d):
            m.d.sync += [first[s].eq(self.i_depth == d - s), active[s].eq(self.i_depth >= d - s)]
        # the phase advance and the cycle mask of d_f, registered like the flags (picked by i_depth in front of
        # the phase adder they were the third LUT level before the commutators' swaps)
        phase = Signal(max(d - 1, 1), name="phase")
        advance = Signal(max(d - 1, 1), name="phase_advance", init=0)
        cycle_mask = Signal(max(d - 1, 1), name="cycle_mask", init=(1 << (d - 1)) - 1)
        with m.Switch(self.i_depth):
            for df in range(1, d + 1):
                with m.Case(df):
                    m.d.sync += [advance.eq(self._offset(d - df) % group), cycle_mask.eq((1 << (df - 1)) - 1)]
            with m.Default():                   # no stage active: nothing to time
                m.d.sync += [advance.eq(0), cycle_mask.eq(0)]
        m.d.comb += phase.eq(self.i_phase + advance)
        # the phase of the next cycle (the commutators' registered swaps)
        phase_next = Signal(max(d - 1, 1), name="phase_next")
        m.d.comb += phase_next.eq(Mux(en, self.i_phase + 1, self.i_phase) + advance)

        def cycle_at(offset: int, base=phase):
            """Cycle within the group (d-1 bits, the low d_f - 1 valid) of the data ``offset`` enabled
            cycles behind stage 0's input in a full chain (``base``: of this cycle's phase, or the next's)."""
            if d == 1:
                return Const(0, 1)
            return (base + ((-offset) % group))[:d - 1]

        x0, x1, valid = self.i_x0, self.i_x1, self.i_valid
        stream = self.i_w_rest
        # the stream after the last commutator: (undelayed, delayed 2D), chosen by whether the stage
        # before it is the first active one (then no delay)
        stream_taps = None
        offset = 0
        for s, bf in enumerate(self._stages):
            m.submodules[f"bf{s}"] = share(bf)
            if s == 0:
                w = self.i_w_first
            else:
                # The first active stage takes the chain's input (stage 0's role) ...
                x0, x1, valid = (Mux(first[s], new, old) for new, old in
                                 ((self.i_x0, x0), (self.i_x1, x1), (self.i_valid, valid)))
                # ... the others replay: take the stream on the group's first T_s cycles, then recirculate.
                t_s = 1 << (d - 1 - s)
                c = cycle_at(offset)
                tb = _twiddle_bits(bf)
                loop = [Signal(tb, name=f"s{s}_loop{i}", reset_less=True) for i in range(t_s)]
                # w from one 4:1 mux with a 2-bit select shared by all bits (one LUT a bit): the chain's
                # w_first, the undelayed or the delayed stream, or the loop
                sel = Signal(2, name=f"s{s}_w_sel")
                with m.If(first[s]):
                    m.d.comb += sel.eq(0)
                with m.Elif((c & cycle_mask)[d - 1 - s:] == 0):
                    m.d.comb += sel.eq(Mux(first[s - 1], 1, 2))
                with m.Else():
                    m.d.comb += sel.eq(3)
                undelayed, delayed = stream_taps
                w = Signal(tb, name=f"s{s}_w")
                m.d.comb += w.eq(Mux(sel[1], Mux(sel[0], loop[-1], delayed[:tb]),
                                     Mux(sel[0], undelayed[:tb], self.i_w_first[:tb])))
                stream = Mux(first[s], self.i_w_rest, Mux(first[s - 1], undelayed, delayed))
                with m.If(en):
                    m.d.sync += [loop[0].eq(w)] + [loop[i].eq(loop[i - 1]) for i in range(1, t_s)]
            # Skipped stages carry nothing valid: what they still held of an earlier pass (with more
            # stages skipped, their path is longer) must not reach an active stage in the next one.
            m.d.comb += [
                bf.en.eq(en), bf.i_valid.eq(valid & active[s]), bf.i_x0.eq(x0), bf.i_x1.eq(x1),
                bf.i_w.eq(w), bf.i_w_pass.eq(stream),
            ]
            x0, x1, valid, stream = bf.o_x0, bf.o_x1, bf.o_valid, bf.o_w_pass
            offset += self._bf_latencies[s]
            if s == d - 1:
                break
            dd = self.commutator_depths[s]
            x0, x1, valid = self._commutator(m, s, x0, x1, valid, cycle_at(offset, phase_next),
                                             cycle_at(offset + dd, phase_next))
            # Later stages and the output need only this many bits of the stream.
            stream = stream[:max([_twiddle_bits(later) for later in self._stages[s + 1:]] + [self._out_bits])]
            # The stream is delayed 2D, except after the first active stage (always so after stage 0).
            stream_taps = (stream, _delay(m, en, stream, self.stream_delays[s], f"c{s}_w") if s else stream)
            offset += dd
        stream = stream[:self._out_bits]
        if d > 1:
            # re-alignment by one slot, none when only the last stage runs
            stream = Mux(first[d - 1], stream, _delay(m, en, stream, 1, "w_align"))
        m.d.comb += [self.o_x0.eq(x0), self.o_x1.eq(x1), self.o_valid.eq(valid), self.o_w_rest.eq(stream)]
        return m


class SecondHalfTwiddles(wiring.Component):
    """Captures the second half's 2^b_f-word table from slot 0 of each first-half group (frame j) and
    replays it, two words a cycle, for every second-half group of frame j + 1.

    Ports: en, log_frame (f = 2..k, constant while frames flow; (a_f, b_f) = halves(f)), i_phase (k bits,
    the corner turn's write phase: parity at bit f - 1), i_w (first-half ``o_w_rest``), o_w_first,
    o_w_rest (aligned with the corner turn's output: ``latency`` = FrameReorder.READ_LATENCY like it, the
    table's read register and an output register).
    """

    def __init__(self, log_core: int, width: int = 64):
        self._k = _check_int("log_core", log_core, 2, 12)
        self._width = _check_int("width", width, 1, 64)
        self._a, self._b = lane_model.halves(log_core)
        super().__init__({"en": In(1), "log_frame": In(range(log_core + 1)), "i_phase": In(log_core),
                          "i_w": In(width), "o_w_first": Out(width), "o_w_rest": Out(width)})

    @property
    def latency(self) -> int:
        return FrameReorder.READ_LATENCY

    @property
    def stored_twiddles(self) -> int:
        """Two frames of 2^b words."""
        return 2 << self._b

    def _controls(self, f: int):
        """Frame size f's (slot 0, word's port, write address, read address) from i_phase; addresses are
        b bits: the b_f - 1 word bits at the bottom, the frame parity on top."""
        b = self._b
        af, bf = lane_model.halves(f)
        cycle, parity = self.i_phase[:f - 1], self.i_phase[f - 1]
        group = cycle[af - 1:]                           # first-half group r (b_f bits)
        slot0 = (cycle[:af - 1] == 0) if af > 1 else Const(1, 1)

        def address(word, par):
            return Cat(word[:bf - 1], Const(0, b - bf), par)
        # words 0..M'-1 go to w_first, M'.. to w_rest
        return slot0, group[bf - 1], address(group, parity), address(cycle, ~parity)

    def elaborate(self, platform):
        m = Module()
        b = self._b
        slot0, top = Signal(name="slot0"), Signal(name="word_port")
        w_addr, r_addr = Signal(b, name="w_addr"), Signal(b, name="r_addr")
        with m.Switch(self.log_frame):
            for f in range(2, self._k + 1):
                with m.Case(f):
                    m.d.comb += [s.eq(v) for s, v in zip((slot0, top, w_addr, r_addr), self._controls(f))]
            with m.Default():                   # not a frame size: nothing captured
                m.d.comb += [s.eq(0) for s in (slot0, top, w_addr, r_addr)]
        for n, port in enumerate((self.o_w_first, self.o_w_rest)):
            mem = Memory(shape=unsigned(self._width), depth=1 << b, init=[])
            m.submodules[f"words{n}"] = mem
            wp, rp = mem.write_port(), mem.read_port(domain="sync")
            m.d.comb += [
                wp.en.eq(self.en & slot0 & (top == n)),
                wp.addr.eq(w_addr),
                wp.data.eq(self.i_w),
                rp.en.eq(self.en),
                rp.addr.eq(r_addr),
            ]
            with m.If(self.en):                 # the output register, as the corner turn's
                m.d.sync += port.eq(rp.data)
        return m


class Lane(wiring.Component):
    """A 2^k-point NTT lane running frames of 2^f points, f = 2..k chosen at run time: back-to-back
    transforms, two points in and two out per enabled cycle.

    Ports:
      en                global enable; everything holds while 0
      i_valid           the pair on i_x0/i_x1 is part of a transform (whole frames only, see module doc)
      i_x0, i_x1        two canonical points in ``lane_input_order(f)``
      i_w_first         the twiddle the frame's stage 0 consumes on this cycle  } columns 0 and 1 of
      i_w_rest          the stream of the later stages' twiddles                } the stream (see below)
      restart           rewind the frame clock to its reset state and take ``log_frame``, ``run`` and
                        ``pass2`` (only while the lane is empty: the engine pulses it at every pass
                        start, so every pass starts on a frame boundary; the pass's first pair enters on
                        a later cycle, as the halves' stage flags are registered from the frame size)
      log_frame         f, 2..k: the frame size of the pass, taken at ``restart`` (the lane runs 2^k
                        frames until the first restart). Any other value: nothing valid comes out.
      run               the run's fields a lane reads (hw.run.lane_run_layout), taken at ``restart``:
                        log_n (n, 0..2k: the output scale's N = 2^n), inverse, coset
      pass2             0: pass 1, 1: pass 2, taken at ``restart``. Pass 1 of an inverse run multiplies
                        output m by w_N^(-column * m) (the stream is then shift_stream(k, column,
                        inverse=True)); pass 2 of an inverse run by 1/N instead (the column ignored).
                        A coset run applies its factors on the output scale's multipliers, at the head
                        (forward) or the tail (inverse; module docstring).
      i_f0, i_f1        the coset stream's words S of the pair at the output scale's input on this cycle
                        (forward pass 1: the pair ``scale_input_offset`` enabled cycles behind the input;
                        inverse pass 2: ``coset_output_offset(f)`` behind)
      i_k               the frame word of the pair entering the output scale on the next enabled cycle
                        (constant over a frame): K (a multiplier word) in a streaming pass, the row k1
                        in forward coset pass 2
      o_slot_start      1 when the pair taken on this cycle (if en) is the first of a transform slot
      o_valid, o_x0, o_x1   outputs (X[2t], X[2t+1]) on output cycle t, ``latency_at(f)`` cycles after input
                        (in every mode)
    With ``log_frame`` = f the lane is exactly a lane of 2^f points: one frame every 2^(f-1) enabled
    cycles; it runs the frame's stages on the last ceil(f/2) stages of the first half and the last
    floor(f/2) of the second (hw.model.lane.physical_stages), skipping the others with no delay.
    Stream: hw.model.lane.shift_stream(k, column, frame=f) (output m is multiplied by w_N^(column * m),
    N = 2^log_n: hw.model.lane.scaled_lane_transform(..., log_core=k, log_n=n)).
    Field: ``field`` (a name or hw.model.field.Field, default Goldilocks) sets the points' width
    (``field.width``), which stages are shift-only (``shift_stages(k, field)``: the last six in both
    Goldilocks chains), their shift amounts, the output scale's tables and the general multiplier; the
    stream is the field's (``shift_stream(..., field=field)``), general stages' words as that multiplier
    takes them (its ``encode``, hw/multiplier.py).
    Properties: log_core, field, tail_bits, period, latency, stored_points, stored_twiddles, buffer_points,
    butterfly_latencies, mul_units, dsp_tiles; method latency_at(f).
    """

    def __init__(self, log_core: int = 12, *, butterfly: Callable | None = None, field=F.GOLDILOCKS):
        self._k = _check_int("log_core", log_core, 2, 12)
        self._field = field = F.get(field)
        factory = _check_factory(butterfly, field)
        self._default_butterfly = butterfly is None
        self._a, self._b = lane_model.halves(log_core)
        width, words = field.width, stream_word_bits(field)
        # The second half's words: shift amounts (8 bits) and the column (k bits) when every second-half
        # stage is a shift stage (Goldilocks: b <= 6), else field values.
        self._tail_bits = SHIFT_WORD_BITS if lane_model.shift_stages(log_core, field) <= self._a else words
        stages = [self._stage(s, factory) for s in range(log_core)]
        # Only the bits used downstream leave each half: the second-half words (the table's width) and
        # the frame's column (k bits).
        self._half1 = HalfChain(self._a, stages=stages[:self._a], out_bits=self._tail_bits, width=width,
                                word_bits=words)
        self._half2 = HalfChain(self._b, stages=stages[self._a:], out_bits=log_core, width=width,
                                word_bits=words)
        self._out_scale = OutputScale(log_core, field=field)
        # 4096-deep banks fill a URAM288 (4K x 72) exactly; smaller ones are left to the tool.
        style = "ultra" if log_core >= 12 else None
        sizes = range(2, log_core + 1)
        orders = {f: lane_model.interface_orders(f) for f in sizes}
        self._turn = FrameReorder({f: (orders[f]["turn_in"], orders[f]["turn_out"]) for f in sizes},
                                  width, ram_style=style)
        self._reverse = FrameReorder({f: (orders[f]["reverse_in"], orders[f]["output"]) for f in sizes},
                                     width, ram_style=style)
        self._tw2 = SecondHalfTwiddles(log_core, self._tail_bits)
        super().__init__({
            "en": In(1), "restart": In(1), "log_frame": In(range(log_core + 1)),
            "run": In(lane_run_layout(log_core)), "pass2": In(1),
            "i_valid": In(1), "i_x0": In(width), "i_x1": In(width),
            "i_w_first": In(words), "i_w_rest": In(words), "i_f0": In(width), "i_f1": In(width), "i_k": In(width),
            "o_slot_start": Out(1), "o_valid": Out(1), "o_x0": Out(width), "o_x1": Out(width),
        })

    def _stage(self, stage: int, factory):
        """The butterfly of global stage ``stage``: shift-only where the twiddles are powers of two
        (forward and inverse twiddle sets), else the general one. The default general butterfly of the
        last first-half stage passes on only the second half's words (``tail_bits``)."""
        field = self._field
        if stage >= lane_model.shift_stages(self._k, field):
            shifts = set(lane_model.stage_shifts(self._k, stage, field=field)) | set(
                lane_model.stage_shifts(self._k, stage, inverse=True, field=field))
            return Butterfly(multiplier=ShiftMultiplier(shifts, field=field), pass_width=SHIFT_WORD_BITS)
        if self._default_butterfly and stage == self._a - 1:
            return Butterfly(multiplier=general_multiplier(field), pass_width=self._tail_bits)
        return factory()

    @property
    def log_core(self) -> int:
        return self._k

    @property
    def field(self) -> F.Field:
        """The prime field the lane computes in (its points are ``field.width`` bits)."""
        return self._field

    @property
    def tail_bits(self) -> int:
        """Bits of the second half's twiddle words (the corner-turn table's width)."""
        return self._tail_bits

    @property
    def shift_stage_count(self) -> int:
        return sum(bf.dsp_tiles == 0 for bf in self._half1._stages + self._half2._stages)

    @property
    def mul_units(self) -> int:
        """Multiply/reduce units: general butterflies plus the output scale's (which also serve the coset)."""
        general = self._k - self.shift_stage_count
        return general + self._out_scale.mul_units

    @property
    def dsp_tiles(self) -> int:
        return self._half1.dsp_tiles + self._half2.dsp_tiles + self._out_scale.dsp_tiles

    @property
    def shared_key(self) -> str | None:
        """``lane_k<k>`` with the default butterfly (the lane is then a function of k alone, so the engine
        emits it once, hw/shared.py); None with a custom butterfly."""
        if not self._default_butterfly:
            return None
        field = "" if self._field is F.DEFAULT_FIELD else "_" + self._field.name.replace("-", "_")
        return f"lane_k{self._k}{field}"

    @property
    def period(self) -> int:
        """Enabled cycles per transform, 2^(k-1) (steady-state throughput)."""
        return 1 << (self._k - 1)

    @property
    def butterfly_latencies(self) -> list[int]:
        """Latency of every stage's butterfly, stage 0 first."""
        return self._half1.butterfly_latencies + self._half2.butterfly_latencies

    @property
    def first_half_stages(self) -> int:
        return self._a

    @property
    def second_half_stages(self) -> int:
        return self._b

    @property
    def buffer_points(self) -> list[int]:
        """Points held by each small reorder buffer (commutator), first half then second half."""
        return self._half1.buffer_points + self._half2.buffer_points

    #: The input register, between the lane input and the head (the output scale in a forward coset run,
    #: else the first half): the first active stage's input mux and adder start at a flip-flop, within
    #: the NTT clock's period (+1 enabled cycle).
    SCALE_INPUT_OFFSET = 1
    #: The input register and the head register (the first half's input: the output scale's output in a
    #: forward coset run, else the input register's, picked in front of it: the pick in front of the
    #: first active stage's input mux and adder made them 3 LUTs and a 64-bit carry chain; +1
    #: enabled cycle).
    INPUT_LATENCY = SCALE_INPUT_OFFSET + 1

    def _block_latencies(self, log_frame: int) -> tuple[int, int, int, int, int, int]:
        """Latencies of the input register, first half, corner turn, second half, bit reversal, output
        scale at f."""
        f = _check_int("log_frame", log_frame, 2, self._k)
        af, bf = lane_model.halves(f)
        return (self.INPUT_LATENCY, self._half1.latency_at(af), self._turn.latency_at(f), self._half2.latency_at(bf),
                self._reverse.latency_at(f), self._out_scale.latency)

    def latency_at(self, log_frame: int) -> int:
        """Enabled cycles from a 2^f-point transform's first input pair to its first output pair, with
        ``log_frame`` = f: what a lane of only the active stages takes, in every mode (plain or coset)."""
        return sum(self._block_latencies(log_frame))

    @property
    def scale_input_offset(self) -> int:
        """Enabled cycles from a pair's entry to the output scale's input at the head (forward coset)."""
        return self.SCALE_INPUT_OFFSET

    def coset_output_offset(self, log_frame: int) -> int:
        """Enabled cycles from a frame's first input pair to the output scale's input at the tail (frame
        size f): where the inverse coset's factors apply."""
        return self.latency_at(log_frame) - self._out_scale.latency

    @property
    def output_scale(self) -> OutputScale:
        return self._out_scale

    @property
    def latency(self) -> int:
        """``latency_at(k)``: enabled cycles from a 2^k-point transform's first input pair to its first
        output pair."""
        return self.latency_at(self._k)

    @property
    def stored_points(self) -> int:
        """Points held in all reorder storage: commutators, corner turn and bit reversal."""
        return (self._half1.stored_points + self._half2.stored_points
                + self._turn.stored_points + self._reverse.stored_points)

    @property
    def ram_style(self) -> str | None:
        """Synthesis hint for the corner-turn and bit-reversal banks ("ultra" at k = 12)."""
        return self._turn.ram_style

    @property
    def stored_twiddles(self) -> int:
        """Twiddle words held (replay loops, stream delays, second-half table)."""
        return self._half1.stored_twiddles + self._half2.stored_twiddles + self._tw2.stored_twiddles

    def model(self, pairs, stream, log_n: int | None = None, *, inverse: bool = False, normalize: bool = False):
        """Bit-exact reference: hw.model.lane.scaled_lane_transform (log_core = k, ``log_n``, default 2k,
        ``inverse``, ``normalize``), pairs and stream of one or more frames of 2^f."""
        return lane_model.scaled_lane_transform(pairs, stream, log_core=self._k, log_n=log_n,
                                                inverse=inverse, normalize=normalize, field=self._field)

    def elaborate(self, platform):
        m = Module()
        k, en = self._k, self.en
        sizes = range(2, k + 1)
        h1, turn, h2, rev, tw2 = self._half1, self._turn, self._half2, self._reverse, self._tw2
        m.submodules.half1, m.submodules.turn, m.submodules.half2 = h1, turn, h2
        m.submodules.reverse, m.submodules.twiddles2 = rev, tw2

        # The pass's frame size and N, taken at restart (until then, 2^k frames and N = 2^(2k)).
        frame = Signal(range(k + 1), name="frame", init=k)
        log_n = Signal(range(2 * k + 1), name="log_n_q", init=2 * k)
        inverse, normalize = Signal(name="inverse_q"), Signal(name="normalize_q")
        # the output scale's place and mode (module docstring): at_head, stream (S * K), rows (head, the
        # row from i_k)
        at_head, stream, rows = Signal(name="scale_at_head"), Signal(name="scale_stream"), Signal(name="scale_rows")
        run, head_scaled = self.run, self.run.coset & ~self.run.inverse
        with m.If(self.restart):
            m.d.sync += [frame.eq(self.log_frame), log_n.eq(run.log_n),
                         inverse.eq(run.inverse & ~self.pass2), normalize.eq(run.inverse & self.pass2 & ~run.coset),
                         at_head.eq(head_scaled), stream.eq(run.coset & (self.pass2 == run.inverse)),
                         rows.eq(head_scaled & self.pass2)]
        out = m.submodules.out_scale = self._out_scale
        head = out.latency                      # with the head scaled, everything after the head starts later

        def phase_counter(name: str, blocks: int, ahead: int = 0, lane_input: bool = False):
            """Free-running k-bit phase (parity at bit f - 1, the cycle within the frame below) of the data
            at the input of block ``blocks`` (0 = the input register, 1 = first half, 2 = turn, ...), ``ahead`` enabled cycles
            early. Restarts to the new frame size's value."""
            init = {f: (ahead - sum(self._block_latencies(f)[:blocks])) % (1 << k) for f in sizes}
            late = {f: init[f] if lane_input else (init[f] - head) % (1 << k) for f in sizes}
            ctr = Signal(k, name=name, init=init[k])
            with m.If(self.restart):            # (0 for a size not built: the lane then emits nothing)
                m.d.sync += ctr.eq(Mux(head_scaled, select_tree(self.log_frame, late),
                                       select_tree(self.log_frame, init)))
            with m.Elif(en):
                m.d.sync += ctr.eq(ctr + 1)
            return ctr

        # the frame's cycle mask, 2^(f-1) - 1, registered at restart with the frame size (0 for a size not
        # built)
        cycle_mask = Signal(max(k - 1, 1), name="frame_cycle_mask", init=(1 << (k - 1)) - 1)
        with m.If(self.restart):
            m.d.sync += cycle_mask.eq(select_tree(self.log_frame, {f: (1 << (f - 1)) - 1 for f in sizes}))

        def frame_bits(phase, name: str):
            """(cycle within the frame, zero above bit f - 2; frame parity) of a phase at this frame size
            (a mask and a balanced select: by a Switch over the sizes they were LUT chains)."""
            cycle, parity = Signal(max(k - 1, 1), name=f"{name}_cycle"), Signal(name=f"{name}_parity")
            m.d.comb += [cycle.eq(phase[:max(k - 1, 1)] & cycle_mask),
                         parity.eq(select_tree(frame, {f: phase[f - 1] for f in sizes}))]
            return cycle, parity

        in_phase = phase_counter("in_phase", 1)
        slot_phase = phase_counter("slot_phase", 0, lane_input=True)
        turn_phase = phase_counter("turn_phase", 2)
        h2_phase = phase_counter("half2_phase", 3)
        rev_phase = phase_counter("reverse_phase", 4)
        in_cycle, _ = frame_bits(slot_phase, "slot")
        m.d.comb += self.o_slot_start.eq(in_cycle == 0)

        # active stages of each half: a_f and b_f, registered at restart like the frame size itself (decoded
        # from ``frame`` they were LUT levels in front of every stage's input mux and adder carry chain)
        depth1 = Signal(range(self._a + 1), name="depth1", init=self._a)
        depth2 = Signal(range(self._b + 1), name="depth2", init=self._b)
        with m.If(self.restart):
            with m.Switch(self.log_frame):
                for f in sizes:
                    with m.Case(f):
                        m.d.sync += [depth1.eq(lane_model.halves(f)[0]), depth2.eq(lane_model.halves(f)[1])]
                with m.Default():
                    m.d.sync += [depth1.eq(0), depth2.eq(0)]
        m.d.comb += [h1.i_depth.eq(depth1), h2.i_depth.eq(depth2)]
        for blk in (h1, turn, h2, rev, tw2):
            m.d.comb += blk.en.eq(en)
        # the reorders register their size from log_frame: given the new one in the restart's cycle
        for blk in (turn, rev):
            m.d.comb += blk.log_frame.eq(Mux(self.restart, self.log_frame, frame))
        m.d.comb += tw2.log_frame.eq(frame)
        m.d.comb += [turn.restart.eq(self.restart), rev.restart.eq(self.restart)]
        # with the head scaled the twiddle words wait at the head as long as the points
        words_in = Cat(self.i_w_first, self.i_w_rest)
        words = _delay(m, en, Mux(at_head, _delay(m, en, words_in, head, "coset_w"), words_in),
                       self.INPUT_LATENCY, "in_w")
        # the input register (SCALE_INPUT_OFFSET): valid keeps its reset, the points none
        in_valid = _delay(m, en, self.i_valid, self.SCALE_INPUT_OFFSET, "in_valid")
        in_x = _delay(m, en, Cat(self.i_x0, self.i_x1), self.SCALE_INPUT_OFFSET, "in_x")
        width = len(self.i_x0)
        # the head register: the first half takes the output scale's output (head) or the input register's
        head_valid = _delay(m, en, Mux(at_head, out.o_valid, in_valid), self.INPUT_LATENCY - self.SCALE_INPUT_OFFSET,
                            "head_valid")
        head_x = _delay(m, en, Mux(at_head, Cat(out.o_x0, out.o_x1), in_x), self.INPUT_LATENCY - self.SCALE_INPUT_OFFSET,
                        "head_x")
        m.d.comb += [
            h1.i_phase.eq(in_phase), h1.i_valid.eq(head_valid),
            h1.i_x0.eq(head_x[:len(self.i_x0)]), h1.i_x1.eq(head_x[len(self.i_x0):]),
            h1.i_w_first.eq(words[:len(self.i_w_first)]), h1.i_w_rest.eq(words[len(self.i_w_first):]),

            turn.i_phase.eq(turn_phase), turn.i_valid.eq(h1.o_valid),
            turn.i_x0.eq(h1.o_x0), turn.i_x1.eq(h1.o_x1),
            tw2.i_phase.eq(turn_phase), tw2.i_w.eq(h1.o_w_rest),

            h2.i_phase.eq(h2_phase), h2.i_valid.eq(turn.o_valid),
            h2.i_x0.eq(turn.o_x0), h2.i_x1.eq(turn.o_x1),
            h2.i_w_first.eq(tw2.o_w_first), h2.i_w_rest.eq(tw2.o_w_rest),

            rev.i_phase.eq(rev_phase), rev.i_valid.eq(h2.o_valid),
            rev.i_x0.eq(h2.o_x0), rev.i_x1.eq(h2.o_x1),
        ]
        # The frame's column rides the stream's free slot; it leaves the second half with the frame's
        # first pair (word M' of the second-half table, block 0 cycle 0). Kept per frame parity until
        # the bit reversal emits that frame; the output scale takes it one enabled cycle ahead.
        rev_cycle, rev_parity = frame_bits(rev_phase, "reverse")
        # the output scale's next pair: starts a frame (its cycle is 0) and its frame's parity, from a phase two
        # cycles ahead through a register: the phase counter and the frame-size switch in front of the scale's
        # step arithmetic were 5 LUT levels over the NTT clock's period, the zero test there 2 more after its
        # exponent adder (no cycle added). Right after a restart the register is one cycle stale,
        # while the lane is empty.
        cycle_n, parity_n = frame_bits(phase_counter("out_next_phase", 5, ahead=2, lane_input=True), "out_next")
        out_first, out_parity = Signal(name="out_next_first_q", init=1), Signal(name="out_next_parity_q")
        with m.If(en):
            m.d.sync += [out_first.eq(cycle_n == 0), out_parity.eq(parity_n)]
        column = [Signal(k, name=f"column{i}") for i in range(2)]
        for parity in range(2):
            with m.If(en & (rev_cycle == 0) & (rev_parity == parity)):
                m.d.sync += column[parity].eq(h2.o_w_rest[:k])
        # At the head the output scale's next pair is the one entering the lane now: its cycle counts enabled
        # cycles from the restart (the pass's first pair starts a frame), modulo the frame. The scale takes
        # the frame start (cycle 0) and the residue start (the low (f - 1) // 2 bits 0: lane_input_order's
        # t = r 2^(a-1) + mm, a = ceil(f/2)) as flags registered with the count.
        head_cycle = Signal.like(cycle_n, name="head_next_cycle")
        head_first = Signal(name="head_next_first", init=1)
        head_new_r = Signal(name="head_next_new_r", init=1)
        residue_mask = Signal(max(1, (k - 1) // 2), name="frame_residue_mask")
        with m.If(self.restart):
            m.d.sync += [head_cycle.eq(0), head_first.eq(1), head_new_r.eq(1),
                         residue_mask.eq(select_tree(self.log_frame, {f: (1 << ((f - 1) // 2)) - 1 for f in sizes}))]
        with m.Elif(en):
            # the count wraps (or its low bits do) on the next cycle when it is at the mask now
            m.d.sync += [head_cycle.eq((head_cycle + 1) & cycle_mask), head_first.eq(head_cycle == cycle_mask),
                         head_new_r.eq((head_cycle[:len(residue_mask)] & residue_mask) == residue_mask)]
        # The output scale's registered controls need CONTROL_LEAD enabled cycles before the first pair: it
        # runs that many cycles after a restart, while the lane is empty (nothing valid inside it).
        lead = out.CONTROL_LEAD
        settle = Signal(range(lead + 1), name="scale_settle")
        with m.If(self.restart):
            m.d.sync += settle.eq(lead)
        with m.Elif(settle != 0):
            m.d.sync += settle.eq(settle - 1)
        m.d.comb += [
            out.en.eq(en | (settle != 0)),
            out.i_valid.eq(Mux(at_head, in_valid, rev.o_valid)),
            out.i_x0.eq(Mux(at_head, in_x[:width], rev.o_x0)), out.i_x1.eq(Mux(at_head, in_x[width:], rev.o_x1)),
            out.i_next_first.eq(Mux(at_head, head_first, out_first)), out.i_next_new_r.eq(head_new_r),
            out.i_log_n.eq(log_n),
            out.i_log_frame.eq(frame), out.i_head.eq(at_head), out.i_stream.eq(stream),
            out.i_inverse.eq(inverse), out.i_normalize.eq(normalize),
            out.i_next_column.eq(Mux(rows, self.i_k[:k], Mux(out_parity, column[1], column[0]))),
            out.i_next_k.eq(self.i_k), out.i_s0.eq(self.i_f0), out.i_s1.eq(self.i_f1),
            self.o_valid.eq(Mux(at_head, rev.o_valid, out.o_valid)),
            self.o_x0.eq(Mux(at_head, rev.o_x0, out.o_x0)), self.o_x1.eq(Mux(at_head, rev.o_x1, out.o_x1)),
        ]
        return m
