# amaranth: UnusedElaboratable=no
"""The NTT engine: L lanes fed by one twiddle generator, one pass of the four-step transform at a time.

    points_in ──► L x Lane ──► points_out          (stream payloads: one engine cycle, 2L points)
                    ▲
    TwiddleGenerator┘ (w_first, w_rest per lane)

A pass is 2^k / L rounds; in round g lane l transforms column (pass 1) or row (pass 2) L*g + l, taking its
points in ``hw.model.schedule.pass_schedule`` order, so one ``points_in`` payload carries every lane's pair
for one cycle (``hw.points.payload_layout``: element l is lane l's pair x0, x1). ``points_out`` uses
the same layout, in pass_schedule's write order.

Control. The datapath is the valid-only pipeline with a global enable of docs/architecture.md; this block
turns the two streams into that enable: the lanes advance when a payload is available (or the pass is
draining) and the output is not blocked. Two things must line up before the first payload enters:

- the twiddle generator runs ``twiddles.latency`` cycles ahead of the points (its words for a cycle leave
  exactly when that cycle's points enter), so at the start of a pass it is pre-filled alone;
- the lanes' reorders run on a frame clock counted in enabled cycles, so a transform must enter on a
  frame boundary; the lanes' frame counters restart at ``start`` (the pipeline is empty between passes).

Both happen in the PREFILL state, ``latency - lane latency`` cycles. Cycles per pass with no stalls:
N / (2L) + ``latency``.

The run. ``run`` (``hw.run.run_layout``, held by the control through a run) carries every field of the
run; the engine hands it whole to the twiddle generator and the coset factor generator, and the fields a
lane reads (``hw.run.lane_run_layout``) to each lane, so a field a block needs reaches it without being
named at every layer.

Run-time sizes. The run's ``log_n`` (n) selects N = 2^n; pass 1 runs lane
frames of 2^n1 points (n1 = ceil(n/2)) and pass 2 of 2^n2 (n2 = floor(n/2)), as
``hw.model.schedule.pass_schedule(params, pass, n)`` says. The frame size reaches the lanes and the twiddle
generator in the cycle of ``start`` (with the lanes' ``restart``) and is held through the pass. A pass
of 2^n points takes 2^n / (2L) + ``latency_at(f)`` cycles with no stalls.

Inverse and batches. The run's ``inverse`` makes the
run the inverse transform, 1/N included, in the same two passes and cycles: the generator sends the
inverse stream (inverse twiddle rows), pass 1's output scale multiplies by w_N^(-n2 k1) and pass 2's by
1/N (Goldilocks: 2^(192 - n), a shift; BabyBear and KoalaBear: its Montgomery word through the output
scale's factor multiplier, hw/output_scale.py); no multiplier is added. The run's ``batch`` = B (>= 1; 0 acts as 1) runs
B transforms stored back to back in one pass of B x as many columns (rows), ``pass_schedule(params,
pass, n, B)``: the lanes run the elements back to back with the pipeline full, the generator's column
wraps at each element's N2. A pass then takes B * 2^n / (2L) + ``latency_at(f)`` cycles with no stalls.
Both are taken at ``start`` like ``log_n``.

Coset transforms (hw/coset/, hw/model/coset.py). With the run's ``coset`` set, the lanes apply the
shift's powers on their output scales (at the head forward, at the tail inverse): one shared
``CosetFactors`` streams the factor pair S of each cycle (the same for every lane) and each lane's frame
word (K, or forward pass 2's row). It builds its tables and the first words at the start of a streaming
pass (forward pass 1, inverse pass 2), in parallel with PREFILL; the first payload is taken once it is
``ready``, so such a pass takes ``coset_pass_extra_cycles`` more than a plain one (its set-up beyond
PREFILL, ``coset_extra_cycles(f)``, and rounds shorter than the job that computes the next round's
words); the other pass costs nothing; plus ``coset.chain_cycles`` once after the shift changed, unless
the engine was idle that long before. The lanes' latency is the same in every mode.

Fields. The build's field (``params.prime_field``) reaches every block: 64-bit points in Goldilocks,
31-bit points (in 32-bit payload slots) in BabyBear and KoalaBear, whose twiddle, scale and coset words
are in Montgomery form (the field's general multiplier, hw/multiplier.py) and whose lanes have one
shift-only stage (the last, twiddle 1) where Goldilocks' have six.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .coset import CosetFactors
from .lane import Lane
from .points import payload_layout
from .run import connect_run, run_layout
from .shared import share
from .model.params import BuildParams
from .model.run import max_batch
from .twiddles import TwiddleGenerator

# The file's first line: an engine's lanes are emitted once and instantiated (hw/shared.py), so the
# lanes the module stands for are never elaborated; the warning would only be noise.

__all__ = ["NttEngine"]


class NttEngine(wiring.Component):
    """One pass at a time of the four-step NTT over N = 2^(2k) points.

    Ports:
      start      pulse while idle: begin a pass (``pass2`` selects the second)
      run        the run (hw.run.run_layout), stable while busy, except ``coset_shift``, which may
                 change while idle (the coset generator follows it). The engine reads:
                   log_n        n, N = 2^n (params.min_log_n .. params.max_log_n)
                   inverse      1: the inverse transform (1/N included)
                   batch        B: transforms per pass, 1 .. max_batch (0 acts as 1)
                   coset        1: a coset pass with shift ``coset_shift`` (64 bits, canonical,
                                nonzero); with ``inverse`` the lanes scale their outputs instead of
                                their inputs
      pass2      0: pass 1 (columns, scaled outputs), 1: pass 2 (rows)
      busy       a pass is in progress
      done       one-cycle pulse when the last payload of the pass has left
      points_in  stream of payloads (2L points of ``field.point_bits``: 64 bits, 32 in a 31-bit field) in
                 pass_schedule read order
      points_out stream of payloads in pass_schedule write order
    Properties: params, payload_width, beats_per_pass, latency, lane_latency, prefill_cycles, mul_units,
    max_batch, sizes; methods latency_at(f), coset_extra_cycles(f).
    """

    def __init__(self, params: BuildParams):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        self._twiddles = TwiddleGenerator(params)
        self._lanes = [Lane(params.log_core, field=params.prime_field) for _ in range(params.lanes)]
        lane = self._lanes[0]
        self._coset = CosetFactors(params, {f: lane.coset_output_offset(f) for f in range(2, params.log_core + 1)},
                                   input_offset=lane.scale_input_offset)
        # the coset generator sets its word counters up in the cycle after start, and the lanes' output
        # scales settle for CONTROL_LEAD cycles after the restart (a pair reaches a head output scale
        # scale_input_offset enabled cycles after it entered): no payload may enter before either
        if self._twiddles.latency < max(2, lane.output_scale.CONTROL_LEAD - lane.scale_input_offset):
            raise ValueError(f"params: the twiddle generator's {self._twiddles.latency}-cycle PREFILL is shorter "
                             f"than the coset generator and the output scale need")
        super().__init__({
            "start": In(1),
            "pass2": In(1),
            "run": In(run_layout(params)),
            "busy": Out(1),
            "done": Out(1),
            "points_in": In(stream.Signature(payload_layout(params.lanes, params.prime_field))),
            "points_out": Out(stream.Signature(payload_layout(params.lanes, params.prime_field))),
        })

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def max_batch(self) -> int:
        """Largest ``batch``: 2^(max_log_n - min_log_n), as many of the smallest transforms as points of
        the largest."""
        return max_batch(self._params)

    @property
    def payload_width(self) -> int:
        return 2 * self._params.prime_field.point_bits * self._params.lanes

    @property
    def beats_per_pass(self) -> int:
        """Payloads in (and out) per pass: N / (2L)."""
        return self._params.cycles_per_pass

    @property
    def lane_latency(self) -> int:
        return self._lanes[0].latency

    def latency_at(self, log_frame: int) -> int:
        """``latency`` of a pass whose lane frames hold 2^log_frame points."""
        return self.prefill_cycles + self._lanes[0].latency_at(log_frame)

    @property
    def frame_latencies(self) -> list[int]:
        """``latency_at(f)`` for f = 2..k (element f - 2): the engine's published per-size latencies."""
        return [self.latency_at(f) for f in range(2, self._params.log_core + 1)]

    @property
    def sizes(self) -> list[int]:
        """The run-time log_n this engine transforms."""
        p = self._params
        return list(range(p.min_log_n, p.max_log_n + 1))

    @property
    def prefill_cycles(self) -> int:
        """Cycles between ``start`` and the first cycle a payload can enter: the generator's depth."""
        return self._twiddles.latency

    @property
    def latency(self) -> int:
        """``done`` rises N / (2L) + latency cycles after the cycle ``start`` was taken, with a payload
        always available and the output always ready."""
        return self.prefill_cycles + self.lane_latency

    @property
    def coset_factors(self) -> CosetFactors:
        """The shared coset factor generator (its figures: chain_cycles, setup_cycles(f), mul_units)."""
        return self._coset

    def coset_extra_cycles(self, log_frame: int, cached: bool = False) -> int:
        """Cycles a streaming coset pass (forward pass 1, inverse pass 2) with frames of 2^f waits beyond
        a plain one before its first payload, the generator's chains computed for the shift: its set-up
        beyond PREFILL (``cached``: its tables were kept from the last pass of the same kind, see
        hw/coset/)."""
        return max(0, self._coset.setup_cycles(log_frame, cached) - (self.prefill_cycles + 1))

    def coset_pass_extra_cycles(self, log_n: int, pass_index: int, inverse: bool, batch: int = 1,
                                cached: bool = False) -> int:
        """Cycles a coset pass (no row step) takes beyond the plain one with no stalls, the chains computed:
        0 for forward pass 2 and inverse pass 1; for the streaming pass its set-up (``coset_extra_cycles``)
        and the rounds that wait for their frame words (``CosetFactors.frame_word_stall_cycles``)."""
        from .model import coset as coset_model
        if not coset_model.streams(pass_index, inverse):
            return 0
        f = coset_model.pass_frame(log_n, pass_index)
        first = max(self._coset.setup_cycles(f, cached), self.prefill_cycles + 1)
        return (self.coset_extra_cycles(f, cached)
                + self._coset.frame_word_stall_cycles(log_n, pass_index, inverse, batch, cached, first=first))

    @property
    def mul_units(self) -> int:
        """Multiply/reduce units: the lanes' (general butterflies, output scale) plus
        the twiddle generator's and the coset factor generator's."""
        return (sum(lane.mul_units for lane in self._lanes) + self._twiddles.mul_units
                + self._coset.mul_units)

    @property
    def dsp_tiles(self) -> int:
        """DSP48E2 tiles of the multiply/reduce units (12 a Goldilocks unit, 2 a 31-bit Montgomery one)."""
        return (sum(lane.dsp_tiles for lane in self._lanes) + self._twiddles.dsp_tiles
                + self._coset.dsp_tiles)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        most = self.beats_per_pass * self.max_batch     # payloads in a pass of the largest batch
        tg = m.submodules.twiddles = self._twiddles
        cf = m.submodules.coset_factors = self._coset
        for i, lane in enumerate(self._lanes):
            m.submodules[f"lane{i}"] = share(lane)

        issued = Signal(range(most + 1))        # cycles handed to the twiddle generator
        taken = Signal(range(most + 1))         # payloads that entered the lanes
        sent = Signal(range(most + 1))          # payloads that left
        prefill = Signal(range(tg.latency + 1))

        # The run's size: payloads per pass 2^n / 2L, and the frame size of this pass (n1 or n2),
        # given to the lanes and the generator from the start cycle on.
        total = Signal(range(most + 1))
        frame_now = Signal(range(p.log_core + 1))
        frame = Signal(range(p.log_core + 1))
        run = self.run
        m.d.comb += frame_now.eq(Mux(self.pass2, run.log_n >> 1, (run.log_n + 1) >> 1))
        batch = Mux(run.batch == 0, 1, run.batch)

        en = Signal()                           # the lanes' (and, outside PREFILL, the generator's) enable
        tg_en = Signal()
        accept = Signal()                       # a payload enters the lanes this cycle
        # A lane output stays on its port until the lanes advance; once taken while they are stalled it
        # must not be offered again.
        out_taken = Signal()
        out_pending = self._lanes[0].o_valid & ~out_taken
        out_fire = self.points_out.valid & self.points_out.ready
        out_ok = ~out_pending | self.points_out.ready
        with m.If(en):
            m.d.sync += out_taken.eq(0)
        with m.Elif(out_fire):
            m.d.sync += out_taken.eq(1)

        restart = Signal()
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [issued.eq(0), taken.eq(0), sent.eq(0), prefill.eq(0), frame.eq(frame_now),
                                 total.eq(batch << (run.log_n - p.lanes.bit_length()).as_unsigned())]
                    m.d.comb += restart.eq(1)
                    m.next = "PREFILL"
            with m.State("PREFILL"):
                m.d.comb += [self.busy.eq(1), tg_en.eq(1)]
                m.d.sync += prefill.eq(prefill + 1)
                with m.If(prefill == tg.latency - 1):
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [self.busy.eq(1), accept.eq(self.points_in.valid & out_ok & cf.ready),
                             en.eq(accept), tg_en.eq(accept), self.points_in.ready.eq(out_ok & cf.ready)]
                with m.If(accept & (taken == total - 1)):
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                # the coset generator may hold the outputs too (a stepping pass's next element, hw/coset/)
                m.d.comb += [self.busy.eq(1), en.eq(out_ok & cf.ready)]
                with m.If(out_fire & (sent == total - 1)):
                    m.d.comb += self.done.eq(1)
                    m.next = "IDLE"

        with m.If(accept):
            m.d.sync += taken.eq(taken + 1)
        issue = tg_en & (issued < total)
        with m.If(issue):
            m.d.sync += issued.eq(issued + 1)
        with m.If(out_fire):
            m.d.sync += sent.eq(sent + 1)

        log_frame = Mux(restart, frame_now, frame)
        m.d.comb += [tg.en.eq(tg_en), tg.start.eq(restart), tg.pass2.eq(self.pass2), tg.i_valid.eq(issue),
                     tg.log_frame.eq(log_frame), tg.run.eq(run)]
        m.d.comb += [cf.start.eq(restart), cf.pass2.eq(self.pass2), cf.run.eq(run), cf.en.eq(en)]
        for i, lane in enumerate(self._lanes):
            m.d.comb += connect_run(lane.run, run)
            m.d.comb += [
                lane.i_f0.eq(cf.o_f0), lane.i_f1.eq(cf.o_f1), lane.i_k.eq(cf.o_k[i]),
                lane.en.eq(en), lane.restart.eq(restart), lane.i_valid.eq(accept),
                lane.log_frame.eq(log_frame), lane.pass2.eq(self.pass2),
                lane.i_x0.eq(self.points_in.payload[i].x0),
                lane.i_x1.eq(self.points_in.payload[i].x1),
                lane.i_w_first.eq(tg.o_w_first[i]), lane.i_w_rest.eq(tg.o_w_rest[i]),
                self.points_out.payload[i].x0.eq(lane.o_x0),
                self.points_out.payload[i].x1.eq(lane.o_x1),
            ]
        m.d.comb += self.points_out.valid.eq(out_pending & self.busy)
        return m
