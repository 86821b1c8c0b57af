"""Projected kernel cycles of a run, without a simulator: a projection, the simulated cycles stay the authority.

:func:`projected_cycles` gives the NTT cycles (``ap_clk_2``, from the accepted ``ap_start`` to ``ap_done``:
what the simulated card's ``ntt_cycles`` counts) of one kernel start, and :func:`projection` the same with
its breakdown (:class:`Projection`), for every run the kernel accepts (:class:`hw.model.run.Run`: sizes
2^min_log_n .. 2^(2k), inverse, coset, batches, row steps, zero-extended inputs, chained outputs). A run
the host splits (sizes below or past the native range, a batch larger than the buffers) is one
projection per kernel call it makes; :func:`projected_calls` adds them up.

The formula, per pass p (1, 2) with lane frames of 2^f points (f = n1 = ceil(n/2), then n2 = floor(n/2)):

    pass_p = max(B N / 2L, the HBM's time for the pass's beats) + engine latency_at(f)
             + the DMA's pipeline (HBM read latency + DMA_PIPELINE_CYCLES[p] + the write path's tail)
             + a coset pass's extra cycles + (refresh) the expected HBM refresh share
    run    = pass_1 + pass_2 + 2 (PASS_SETUP_CYCLES + 1) + (SETTLE_CYCLES + 1) + RECORD_CYCLES

Where each term comes from:

- B N / 2L: the engine takes 2L points a cycle (hw/engine.py); the HBM's time: each of the C/2 read channels
  moves B N / (C/2) / P beats a pass (P points a beat, hw.model.layout) at most one a cycle of its port
  (:data:`HBM_PORT_MHZ`) against the DMA clock.
- ``latency_at(f)``: the engine's published per-frame latency (``NttEngine.latency_at``: the twiddle
  generator's prefill plus the lane's chain). hw.model cannot import the gateware, so :func:`engine_latency`
  restates it from the lane's structure (input register, the two half chains of butterflies and
  commutators, the corner turn and bit reversal, the output scale) with the blocks' published latencies
  restated in :data:`LANE_BLOCKS`; tests/test_cycle_projection.py checks that it equals the gateware's
  ``latency_at(f)`` for every f of many builds in every field. An ``engine`` given to the functions below
  (an ``hw.engine.NttEngine`` of the build) is used instead.
- the DMA's pipeline: the HBM's read latency (:data:`HBM_LATENCY_NS`, restated from sim/hbm.py, which the
  test pins), the DMA's own registered stages from a pass's start to its first point and from the
  engine's last point to the last write response (:data:`DMA_PIPELINE_CYCLES`: measured on the simulated
  card without refresh, not published by the gateware, which has no such figure), and the write path's
  tail: pass 1's corner turn holds a block of L/2 payloads, and the last unit leaves in L/P beats.
- the set-up and settle states of the pass sequencer (hw/ntt_operation.py's PASS_SETUP_CYCLES and
  SETTLE_CYCLES, restated here and pinned by the test) and the status record (:data:`RECORD_CYCLES`:
  its four beats, their write response and ``ap_done``, measured).
- a coset pass: the coset factor generator's published set-up and frame-word stalls
  (``CosetFactors.setup_cycles``, ``frame_word_stall_cycles``), of which the set-up is hidden behind the
  DMA's first data (:data:`DMA_FIRST_DATA_CYCLES` after the engine's start): taken from ``engine`` when it is
  given; without it a coset pass's extra cycles are not counted (``Projection.coset_counted`` is False:
  at most 136 cycles a run at k = 12, 0.01 % at 2^24). A new shift's chain job (``new_shift=True``) adds
  ``chain_cycles`` less what the DMA's start hides.
- HBM refresh (``refresh=True``): every channel's controller refreshes :data:`REFRESH_NS` of every
  :data:`REFRESH_PERIOD_NS`, taking no request meanwhile, each at its own phase (sim/hbm.py's model and
  the simulated card's phases, :func:`refresh_phases`, restated and pinned by the test), and a call starts
  at a time it does not know: the projection is the mean over that time. A pass waits at its start until
  the last of its read channels has taken its first read and returned its data (a window of any of them
  between the first AR and the HBM latency later holds the pass) and at its end likewise for its write
  channels (:func:`expected_window_wait`, averaged over a refresh period); the status record's write may
  meet channel 0's window; and when the channels' bandwidth left after refresh is below what the engine
  takes, the beats' time grows by the windows' share. A card's HBM controllers refresh at phases of their
  own: the projection takes the simulated card's.

Accuracy (docs/projection.md, tests/test_cycle_projection.py): without refresh the simulated cycles
repeat exactly and the projection is within 1 % of them for every run kind measured on L4_k4_C4 and
L8_k5_C8_koalabear (worst 0.86 %; one batch of 4 x 2^4 on L4_k4_C4 is 1.33 % under), and within 0.3 % of
the default build's 2^8 .. 2^14. With refresh a small call's cycles move by a window or more from start to
start (144 DMA cycles at 450 MHz), so the projection is their mean and one small call may be 30 % off it;
from 2^16 on the 16-lane Goldilocks build and 2^17 on the 32-lane 31-bit builds the projection is within
1 % of every simulated table (worst 0.90 %). A new shift's chain job (``new_shift``) is an estimate
(1.3-1.6 % off on the small builds); row steps within 4 %, chained and zero-extended runs (projected as
the plain run) within 1 % but a blowup-4 chain (2.1 %) and a same-size chain at odd n (5.5 %) on
L4_k4_C4, a build at its HBM bandwidth limit.

How a host converts: cycles / (``params.ntt_mhz`` x 1e6) seconds (the NTT clock, ``BuildParams.ntt_mhz``;
the DMA-domain parts are already converted with ``ntt_mhz / dma_mhz``).
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from functools import lru_cache

from .lane import halves, shift_stages
from .layout import points_per_beat
from .ops import OP_NTT
from .params import BuildParams
from .run import FLAG_COSET, FLAG_INVERSE, Run

__all__ = ["Projection", "PassProjection", "projection", "projected_cycles", "projected_calls", "engine_latency",
           "expected_window_wait", "refresh_phases", "hbm_cycles", "LANE_BLOCKS", "HBM_PORT_MHZ", "HBM_LATENCY_NS",
           "REFRESH_PERIOD_NS", "REFRESH_NS", "PHASE_STEP", "PHASE_SEED", "PASS_SETUP_CYCLES", "SETTLE_CYCLES",
           "RECORD_CYCLES", "DMA_PIPELINE_CYCLES", "DMA_FIRST_DATA_CYCLES", "TWIDDLE_PREFILL_CYCLES",
           "SHORT_PASS_PAYLOADS", "CHAIN_HIDDEN_CYCLES", "CHAIN_HIDDEN_STEPPING_CYCLES"]

# -- restated from sim/hbm.py (the HBM channel model's timing; tests/test_cycle_projection.py pins them) --
#: A pseudo-channel's AXI port moves at most one 32-byte beat a cycle of this clock.
HBM_PORT_MHZ = 450.0
#: A read's first beat comes back this long after its address.
HBM_LATENCY_NS = 320 / 3
#: Each controller refreshes REFRESH_NS of every REFRESH_PERIOD_NS (20 %), taking no request meanwhile.
REFRESH_PERIOD_NS = 1600.0
REFRESH_NS = 320.0

# -- restated from hw/ntt_operation.py (the pass sequencer; pinned by the test) --
PASS_SETUP_CYCLES = 4
SETTLE_CYCLES = 16

# -- restated from the gateware's blocks (the engine's latencies; the test checks engine_latency against
#    NttEngine.latency_at for every frame of many builds) --
#: Cycles of each lane block by point width (64: Goldilocks, 32: BabyBear, KoalaBear): the general
#: butterfly, the shift-only butterfly (Goldilocks' stages k-6 .. k-2), the last stage's pass-through
#: (twiddle 1), the output scale, the input and head registers (Lane.INPUT_LATENCY) and the frame
#: reorders' read latency (FrameReorder: 2^(f-1) + this).
LANE_BLOCKS = {64: {"general": 14, "shift": 9, "last": 2, "output_scale": 26, "input": 2, "reorder": 2},
               32: {"general": 11, "shift": 11, "last": 2, "output_scale": 20, "input": 2, "reorder": 2}}
#: The twiddle generator's depth, the engine's PREFILL (NttEngine.prefill_cycles).
TWIDDLE_PREFILL_CYCLES = 2

# -- measured on the simulated card (the gateware publishes no such figure) --
#: DMA cycles of the DMA's own pipeline in a pass beyond the HBM's read latency and the write path's tail
#: (its registered issue decisions, ISSUE_DELAY, the read FIFOs' clock crossing, the assembler, the write
#: FIFOs, the AXI write master and the last write response), by pass: measured without refresh on
#: L4_k4_C4 and L8_k5_C8_koalabear at 450 / 450 MHz, 2026-12-02 (docs/projection.md).
DMA_PIPELINE_CYCLES = {1: 26, 2: 25}
#: A pass of fewer payloads than this takes the difference more (measured as above: 2^4 on L4_k4_C4).
SHORT_PASS_PAYLOADS = 4
#: NTT cycles from the engine's start to the DMA's first payload (a coset pass's set-up up to this is
#: hidden): the start's crossing, ISSUE_DELAY and the HBM's read latency; measured as above (every
#: set-up up to 46 cycles was hidden on L4_k4_C4).
DMA_FIRST_DATA_CYCLES = 60
#: NTT cycles of a new shift's chain job hidden before its pass needs it: the host's register writes after
#: the shift's (the job starts when the shift is written) and the DMA's start; measured as above.
CHAIN_HIDDEN_CYCLES = 80
#: The same with a row step (the host writes the step after the shift: less of the job is hidden).
CHAIN_HIDDEN_STEPPING_CYCLES = 20
#: DMA cycles from the last pass's settle to ``ap_done``, with the status record's four beats and their
#: write response (the simulated card counts its busy window through a synchronizer: included); measured.
RECORD_CYCLES = 7


def _dma_cycles(ns: float, dma_mhz: float) -> int:
    """A time of the HBM model in DMA cycles, rounded as the model rounds (sim.hbm.hbm_timing)."""
    return max(1, round(ns * dma_mhz / 1000))


def hbm_cycles(params: BuildParams) -> dict:
    """The HBM model's figures at the build's DMA clock: ``latency``, ``refresh_period``,
    ``refresh_cycles`` (DMA cycles) and ``beats_per_cycle`` (a port's beats per DMA cycle, at most 1)."""
    mhz = params.dma_mhz
    return {"latency": _dma_cycles(HBM_LATENCY_NS, mhz), "refresh_period": _dma_cycles(REFRESH_PERIOD_NS, mhz),
            "refresh_cycles": _dma_cycles(REFRESH_NS, mhz), "beats_per_cycle": min(1.0, HBM_PORT_MHZ / mhz)}


def engine_latency(params: BuildParams, log_frame: int) -> int:
    """``NttEngine(params).latency_at(log_frame)``, restated: the twiddle prefill plus the lane's chain at
    frames of 2^f points (its last ceil(f/2) first-half and last floor(f/2) second-half stages: hw/lane.py)."""
    k = params.log_core
    if not 2 <= log_frame <= k:
        raise ValueError(f"log_frame: must be in 2..{k}, got {log_frame}")
    blocks = LANE_BLOCKS[params.prime_field.point_bits]
    first_shift = shift_stages(k, params.prime_field)
    stage = [blocks["last"] if s == k - 1 else blocks["shift"] if s >= first_shift else blocks["general"]
             for s in range(k)]
    a, _ = halves(k)
    fa, fb = halves(log_frame)

    def half(lat, active):           # HalfChain.latency_at: the last ``active`` stages and their commutators
        d = len(lat)
        first = d - active
        return sum(lat[first:]) + sum(1 << (d - 2 - s) for s in range(first, d - 1))

    reorder = (1 << (log_frame - 1)) + blocks["reorder"]
    return (TWIDDLE_PREFILL_CYCLES + blocks["input"] + half(stage[:a], fa) + reorder + half(stage[a:], fb)
            + reorder + blocks["output_scale"])


#: The simulated card's refresh phases (sim.hbm.channel_models, restated; the test pins it): channel c's
#: refresh counter starts at (c x PHASE_STEP + seed x PHASE_SEED) mod the period, seed 1.
PHASE_STEP, PHASE_SEED = 2654435761, 97


def refresh_phases(channels: int, period: int, seed: int = 1) -> tuple[int, ...]:
    """Each HBM channel's refresh phase in the simulated card's models (its counter's value at reset)."""
    return tuple((c * PHASE_STEP + seed * PHASE_SEED) % period for c in range(channels))


@lru_cache(maxsize=256)
def expected_window_wait(phases: tuple, window: int, period: int, ahead: int) -> float:
    """The mean over a uniform random time t of the longest wait any of the channels (refresh counters
    at ``phases``, a window of ``window`` of every ``period`` cycles) imposes on a step that needs every
    channel free from t to t + ``ahead``: a window of channel c starting at s in [t - W, t + ahead] holds it
    min(W, s + W - t) cycles."""
    if window <= 0:
        return 0.0
    total = 0
    starts = [(-q) % period for q in phases]
    for t in range(period):
        wait = 0
        for s0 in starts:
            for s in (s0 - 2 * period, s0 - period, s0, s0 + period):
                if t - window <= s <= t + ahead:
                    wait = max(wait, min(window, s + window - t))
        total += wait
    return total / period


@dataclass(frozen=True)
class PassProjection:
    """One pass's projected NTT cycles and their parts (each in NTT cycles)."""
    pass_index: int
    log_frame: int
    payloads: int            # B N / 2L: the engine's cycles of points
    hbm_bound: float         # the beats' time at the HBM ports (the larger of this and payloads counts)
    engine_latency: int      # latency_at(f)
    dma_pipeline: float      # HBM read latency, the DMA's own stages, the write path's tail
    coset: float             # a coset pass's extra cycles (0 when not counted)
    refresh: float           # the expected refresh share (0 without refresh)

    @property
    def cycles(self) -> float:
        return (max(self.payloads, self.hbm_bound) + self.engine_latency + self.dma_pipeline + self.coset
                + self.refresh)


@dataclass(frozen=True)
class Projection:
    """A run's projected NTT cycles (:attr:`cycles`, rounded) with its parts: the two passes, the
    sequencer's and the record's fixed cycles, and what is counted (``coset_counted``: the coset's extra
    cycles came from a given engine; ``refresh``: the expected refresh share is in)."""
    params: BuildParams
    run: Run
    passes: tuple
    fixed: float
    refresh: bool
    coset_counted: bool
    notes: tuple = dc_field(default=())

    @property
    def cycles(self) -> int:
        return round(sum(p.cycles for p in self.passes) + self.fixed)

    @property
    def ideal(self) -> int:
        """B x the ideal cycles of the size: two passes of B N / 2L."""
        return self.params.ideal_cycles(self.run.log_n) * max(1, self.run.batch)

    @property
    def refresh_cycles(self) -> float:
        """The expected refresh share of :attr:`cycles`."""
        return sum(p.refresh for p in self.passes)

    def seconds(self) -> float:
        """:attr:`cycles` at the build's NTT clock."""
        return self.cycles / (self.params.ntt_mhz * 1e6)

    def as_dict(self) -> dict:
        """For a report: cycles, ideal, seconds, and every pass's parts."""
        return {"cycles": self.cycles, "ideal": self.ideal, "seconds": self.seconds(),
                "fixed": self.fixed, "refresh": self.refresh, "refresh_cycles": self.refresh_cycles,
                "coset_counted": self.coset_counted, "notes": list(self.notes),
                "passes": [{"pass": p.pass_index, "log_frame": p.log_frame, "payloads": p.payloads,
                            "hbm_bound": p.hbm_bound, "engine_latency": p.engine_latency,
                            "dma_pipeline": p.dma_pipeline, "coset": p.coset, "refresh": p.refresh,
                            "cycles": p.cycles} for p in self.passes]}


def _check(params, run):
    if not isinstance(params, BuildParams):
        raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
    if not isinstance(run, Run):
        raise TypeError(f"run: expected a hw.model.run.Run, got {type(run).__name__}")
    if run.op != OP_NTT:
        raise ValueError(f"run: op {run.op} is not the NTT ({OP_NTT}); only the NTT's cycles are projected")
    bad = run.check(params)
    if bad:
        raise ValueError(f"run: the {params.tag()} build refuses this start (STATUS bits {bad:#x}); a refused "
                         f"start runs no pass")


def _coset_extra(engine, run, pass_index, cached, new_shift, stepping):
    """A coset pass's extra NTT cycles from the engine's published figures (0 for a pass that does not
    stream the factors)."""
    from .coset import pass_frame, streams
    inverse = bool(run.flags & FLAG_INVERSE)
    if not streams(pass_index, inverse):
        return 0.0
    f = pass_frame(run.log_n, pass_index)
    factors = engine.coset_factors
    setup = factors.setup_cycles(f, cached, stepping)
    first = max(setup, engine.prefill_cycles + 1, DMA_FIRST_DATA_CYCLES)
    extra = max(0, setup - max(engine.prefill_cycles + 1, DMA_FIRST_DATA_CYCLES))
    batch = max(1, run.batch)
    stalls = factors.frame_word_stall_cycles(run.log_n, pass_index, inverse, batch, cached, first=first)
    if stepping:        # the element boundaries' step stalls and the frame words' stalls overlap (measured)
        stalls = max(stalls, batch * factors.step_stall_cycles(f, run.log_n))
    extra += stalls
    if new_shift:
        extra += max(0, factors.chain_cycles - (CHAIN_HIDDEN_STEPPING_CYCLES if stepping else CHAIN_HIDDEN_CYCLES))
    return float(extra)


def _pass(params, run, pass_index, *, refresh, engine, cached, new_shift):
    """One pass's :class:`PassProjection`."""
    hbm = hbm_cycles(params)
    ratio = params.ntt_mhz / params.dma_mhz          # NTT cycles per DMA cycle
    batch = max(1, run.batch)
    n1, n2 = params.pass_log_sizes(run.log_n)
    f = n1 if pass_index == 1 else n2
    points = batch << run.log_n
    payloads = points // params.points_per_cycle
    p_beat = points_per_beat(params)
    reads = params.channels // 2
    beats = points / (reads * p_beat)                # beats each read (and each write) channel moves
    supply = hbm["beats_per_cycle"]
    window, period = (hbm["refresh_cycles"], hbm["refresh_period"]) if refresh else (0, hbm["refresh_period"])
    share = window / period
    hbm_bound = beats / supply * ratio
    unit_beats = max(1, params.lanes // p_beat)
    tail = unit_beats - 1 + (params.lanes // 2 if pass_index == 1 else 0)
    # a pass of fewer than SHORT_PASS_PAYLOADS payloads ends that many cycles later (measured: the DMA's
    # registered end of pass does not overlap so short a stream)
    short = max(0, SHORT_PASS_PAYLOADS - payloads)
    pipeline = (hbm["latency"] + DMA_PIPELINE_CYCLES[pass_index]) * ratio + tail + short
    latency = engine.latency_at(f) if engine is not None else engine_latency(params, f)
    coset = 0.0
    if run.flags & FLAG_COSET and engine is not None:
        coset = _coset_extra(engine, run, pass_index, cached, new_shift, run.steps_rows)
    extra = 0.0
    if refresh:
        # the start waits for the last read channel out of its windows, from the first AR to its data (the
        # HBM latency), the end for the last write channel likewise; pass 1 reads the even HBM channels and
        # writes the odd ones, pass 2 the other way round
        phases = refresh_phases(params.channels, period)
        ahead = hbm["latency"]
        for parity in (0, 1):
            extra += expected_window_wait(phases[parity::2], window, period, ahead) * ratio
        # the beats' time when the bandwidth left after refresh is below the engine's need
        stretched = hbm_bound / (1 - share)
        if stretched > payloads:
            extra += stretched - max(payloads, hbm_bound)
    return PassProjection(pass_index, f, payloads, hbm_bound, latency, pipeline, coset, extra)


def projection(params: BuildParams, run: Run, *, refresh: bool = True, engine=None, cached: bool = True,
               new_shift: bool = False) -> Projection:
    """The projected NTT cycles of one kernel start of ``run`` on the ``params`` build, with its parts.

    refresh:   the HBM refresh windows (on, as on a card and the simulated card by default): their expected
               share is added.
    engine:    the engine's published figures (an ``hw.engine.NttEngine(params)``, or anything with its
               ``latency_at(f)``, ``prefill_cycles`` and ``coset_factors``); None: this module's
               restatement of the latencies, and a coset pass's extra cycles not counted.
    cached:    a coset run whose shift, direction and size are the last coset run's (its tables kept).
    new_shift: a coset run whose shift the card has not seen before (the chain job, 1,235 cycles at k = 12).
    """
    _check(params, run)
    for name, value in (("refresh", refresh), ("cached", cached), ("new_shift", new_shift)):
        if not isinstance(value, bool):
            raise TypeError(f"{name}: expected True or False, got {type(value).__name__}")
    passes = tuple(_pass(params, run, i, refresh=refresh, engine=engine, cached=cached, new_shift=new_shift)
                   for i in (1, 2))
    ratio = params.ntt_mhz / params.dma_mhz
    fixed = (2 * (PASS_SETUP_CYCLES + 1) + SETTLE_CYCLES + 1 + RECORD_CYCLES) * ratio
    if refresh:             # the status record's write on HBM channel 0 may meet its window
        hbm = hbm_cycles(params)
        fixed += expected_window_wait(refresh_phases(1, hbm["refresh_period"]), hbm["refresh_cycles"],
                                      hbm["refresh_period"], 0) * ratio
    notes = []
    coset = bool(run.flags & FLAG_COSET)
    if coset and engine is None:
        notes.append("a coset pass's extra cycles not counted (no engine given)")
    if run.input_log_m or run.chain_log_n:
        notes.append("a zero-extended input or chained output projected as the plain run")
    return Projection(params, run, passes, fixed, refresh, coset and engine is not None, tuple(notes))


def projected_cycles(params: BuildParams, run: Run, *, refresh: bool = True, engine=None, cached: bool = True,
                     new_shift: bool = False) -> int:
    """The projected NTT cycles of one kernel start (:func:`projection`'s ``cycles``)."""
    return projection(params, run, refresh=refresh, engine=engine, cached=cached, new_shift=new_shift).cycles


def projected_calls(params: BuildParams, runs, *, refresh: bool = True, engine=None, shift=None) -> int:
    """The projected NTT cycles of several kernel starts one after the other (the calls a host makes for
    one request): the sum of each start's. A coset start's tables count as kept when the coset start
    before it had the same shift, direction and size; with ``engine`` given, a coset start whose shift or
    row step is not the previous coset start's (the first one: not ``shift``, the (shift, row step) the
    card last had, None: unknown, counted as new) pays the chain job."""
    total, last, seen = 0, None, shift
    for run in runs:
        key = (run.coset, run.inverse, run.log_n)
        word = (run.coset, run.row_step if run.steps_rows else 0)
        coset = run.coset is not None
        total += projected_cycles(params, run, refresh=refresh, engine=engine, cached=coset and key == last,
                                  new_shift=coset and engine is not None and word != seen)
        if coset:
            last, seen = key, word
    return total
