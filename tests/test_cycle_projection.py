"""The cycle projection without a simulator (hw/model/cycles.py) against simulated cycles.

- The figures it restates from the gateware and the HBM model are theirs: the engine's per-frame latency
  (``NttEngine.latency_at``) for every frame of builds in every field, the sequencer's set-up and settle
  cycles, the HBM model's timing and refresh phases.
- On the small build make test simulates anyway (L4_k4_C4, tests/test_kernel.py's: no build of its own),
  HBM refresh off (the cycles then repeat exactly): the projection within 1 % of the kernel's own count for
  every run kind (forward, inverse, coset, inverse coset, batches), measured here.
- Against the full-size tables of docs/performance.md (refresh on, quoted below with their commands and
  dates; nothing here is read from the code under test): within 1 % from 2^16 up on the 16-lane Goldilocks
  build and from 2^17 up on the 32-lane 31-bit one (2^11 payloads a pass and more), where the refresh
  windows' phase moves a call by less than 1 %; and the default build's sizes without refresh.
"""

import inspect

import numpy as np
import pytest

from nantucket.hw.model import cycles as C
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.ops import OP_NTT
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

SMALL = BuildParams(lanes=4, log_core=4, channels=4)


def _rel(projected: int, simulated: int) -> float:
    return abs(projected - simulated) / simulated


# -- the restated figures are the gateware's and the HBM model's ---------------------------------------------

@pytest.mark.parametrize("params", [
    BuildParams(lanes=4, log_core=4, channels=4), BuildParams(lanes=8, log_core=6, channels=8),
    BuildParams(lanes=4, log_core=9, channels=4), BuildParams(),
    BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
    BuildParams(lanes=8, log_core=7, channels=8, field="koalabear"), BuildParams.default_for("babybear"),
    BuildParams(lanes=4, log_core=3, channels=4, field="goldilocks-plonky2"),
], ids=lambda p: p.tag())
def test_engine_latency_is_the_engines_published_one(params):
    from nantucket.hw.engine import NttEngine
    engine = NttEngine(params)
    for f in range(2, params.log_core + 1):
        assert C.engine_latency(params, f) == engine.latency_at(f), (params.tag(), f)


def test_engine_latency_every_core_and_field():
    """Every k of every point width, through the lane and the twiddle generator (the engine's parts)."""
    from nantucket.hw.lane import Lane
    from nantucket.hw.twiddles import TwiddleGenerator
    for field in ("goldilocks", "babybear"):
        for k in range(3, 12):
            params = BuildParams(lanes=4 if field == "goldilocks" else 8, log_core=k, channels=4, field=field)
            lane, prefill = Lane(k, field=field), TwiddleGenerator(params).latency
            for f in range(2, k + 1):
                assert C.engine_latency(params, f) == prefill + lane.latency_at(f), (field, k, f)


def test_restated_constants_are_the_sources():
    from nantucket.hw import ntt_operation
    from nantucket.sim import hbm
    assert (C.PASS_SETUP_CYCLES, C.SETTLE_CYCLES) == (ntt_operation.PASS_SETUP_CYCLES, ntt_operation.SETTLE_CYCLES)
    assert (C.HBM_PORT_MHZ, C.HBM_LATENCY_NS, C.REFRESH_PERIOD_NS, C.REFRESH_NS) == (
        hbm.HBM_PORT_MHZ, hbm.HBM_LATENCY_NS, hbm.REFRESH_PERIOD_NS, hbm.REFRESH_NS)
    for mhz in (300.0, 450.0, 500.0):
        t = hbm.hbm_timing(mhz)
        got = C.hbm_cycles(BuildParams(dma_mhz=mhz))
        assert (got["latency"], got["refresh_period"], got["refresh_cycles"]) == (
            t["latency"], t["refresh_period"], t["refresh_cycles"])
        assert got["beats_per_cycle"] == pytest.approx(min(1.0, t["hbm_num"] / t["hbm_den"]), rel=0.02)
    # the channel models' refresh phases (sim.hbm.channel_models has no public accessor for them)
    source = inspect.getsource(hbm.channel_models)
    assert f"(c * {C.PHASE_STEP} + seed * {C.PHASE_SEED}) % refresh_period" in source
    assert C.refresh_phases(3, 720) == tuple((c * 2654435761 + 97) % 720 for c in range(3))


def test_expected_wait_against_a_direct_count():
    """One channel, no look-ahead: the mean residual of a window W of every T cycles, W^2 / 2T (whole
    cycles: W (W + 1) / 2T); more channels and a look-ahead wait longer, never more than W."""
    w, t = 144, 720
    one = C.expected_window_wait((0,), w, t, 0)
    assert one == pytest.approx(w * (w + 1) / 2 / t)
    phases = C.refresh_phases(16, t)
    more = C.expected_window_wait(phases, w, t, 48)
    assert one < C.expected_window_wait(phases, w, t, 0) < more <= w


def test_bad_arguments():
    with pytest.raises(TypeError, match="params"):
        C.projected_cycles("L4", Run.ntt(8))
    with pytest.raises(TypeError, match="run"):
        C.projected_cycles(SMALL, 8)
    with pytest.raises(ValueError, match="run: the L4_k4_C4 build refuses"):
        C.projected_cycles(SMALL, Run.ntt(9))
    with pytest.raises(ValueError, match="only the NTT's cycles"):
        C.projected_cycles(SMALL, Run(8, op=OP_NTT + 1))
    with pytest.raises(TypeError, match="refresh"):
        C.projected_cycles(SMALL, Run.ntt(8), refresh=1)
    with pytest.raises(TypeError):
        C.projected_cycles(SMALL, Run.ntt(8), refresh_on=True)


def test_report_fields():
    pr = C.projection(BuildParams(), Run.ntt(24))
    d = pr.as_dict()
    assert d["cycles"] == pr.cycles and d["ideal"] == 1 << 20 and len(d["passes"]) == 2
    assert d["seconds"] == pytest.approx(pr.cycles / 450e6)
    assert pr.refresh_cycles > 0 and C.projection(BuildParams(), Run.ntt(24), refresh=False).refresh_cycles == 0
    assert C.projection(SMALL, Run.ntt(8, coset=7)).notes          # coset extras not counted without an engine
    assert C.projected_calls(SMALL, [Run.ntt(8), Run.ntt(8)], refresh=False) == 2 * C.projected_cycles(
        SMALL, Run.ntt(8), refresh=False)


# -- against the simulated card -----------------------------------------------------------------------------

#: (log_n - min_log_n, batch, inverse, coset): every run kind the kernel takes, on a build of 2^4 native sizes
RUNS = [(0, 1, False, None), (2, 1, False, None), (4, 1, False, None), (1, 1, True, None), (3, 1, True, None),
        (4, 1, False, 7), (2, 1, False, 7), (3, 1, True, 7), (4, 1, True, 7), (0, 2, False, None),
        (0, 16, False, None), (1, 8, True, None), (1, 8, False, 7), (0, 16, True, 7)]
#: make test's L4_k4_C4 (tests/test_kernel.py's build); make test-full adds test_kernel_fields31.py's
#: KoalaBear build (a second simulator start)
SIM_BUILDS = [pytest.param(SMALL, id=SMALL.tag()),
              pytest.param(BuildParams(lanes=8, log_core=5, channels=8, field="koalabear"), id="L8_k5_C8_koalabear",
                           marks=pytest.mark.full)]


@pytest.mark.parametrize("params", SIM_BUILDS)
def test_projection_within_one_percent_of_the_simulated_small_build(params):
    """Every run kind on a simulated small card without refresh (the cycles repeat exactly), against the
    kernel's own count of NTT cycles from start to done; the worst error is printed."""
    from nantucket.host.sim_backend import SimBackend
    from nantucket.hw.engine import NttEngine
    engine = NttEngine(params)
    be = SimBackend(params, field=params.field, refresh=False, progress=lambda line: None)
    rng = np.random.default_rng(3)
    dtype = params.prime_field.dtype
    worst = 0.0
    try:
        first = rng.integers(0, 1 << 30, 1 << params.min_log_n).astype(dtype)
        be.run(first, coset=7)                  # the shift's chain job, before any count
        for dn, batch, inverse, coset in RUNS:
            log_n = params.min_log_n + dn
            x = rng.integers(0, 1 << 30, (batch, 1 << log_n)).astype(dtype)
            be.run(x if batch > 1 else x[0], inverse, coset=coset)
            simulated = be.kernel.last_ntt_cycles
            run = Run.ntt(log_n, inverse=inverse, coset=coset, batch=batch)
            projected = C.projected_cycles(params, run, refresh=False, engine=engine)
            if coset is None:       # the restated latencies are the engine's
                assert projected == C.projected_cycles(params, run, refresh=False)
            err = _rel(projected, simulated)
            worst = max(worst, err)
            assert err <= 0.01, (log_n, batch, inverse, coset, projected, simulated)
        others = _row_steps(be, params, engine, rng) + _chains(be, params, engine)
    finally:
        be.close()
    print(f"{params.tag()}, refresh off: worst error {100 * worst:.2f} %; row steps and chains: "
          + ", ".join(f"{what} {100 * err:.2f} %" for what, err in others))


def _row_steps(be, params, engine, rng):
    """Row-step batches on a kept shift and step (the second call of each): within 4 % (the element
    boundaries' stalls and the frame words' overlap, which the projection takes as the larger)."""
    out = []
    for dn, batch in ((4, 1), (2, 4), (0, 16)):
        log_n = params.min_log_n + dn
        x = rng.integers(0, 1 << 30, (batch, 1 << log_n)).astype(params.prime_field.dtype)
        for _ in range(2):
            be.run(x if batch > 1 else x[0], coset=7, row_step=12345)
        run = Run.ntt(log_n, coset=7, batch=batch, row_step=12345)
        err = _rel(C.projected_cycles(params, run, refresh=False, engine=engine, cached=True),
                   be.kernel.last_ntt_cycles)
        assert err <= 0.04, (log_n, batch, err)
        out.append((f"row step 2^{log_n} x {batch}", err))
    return out


def _chains(be, params, engine):
    """An LDE's two calls on the card (the inverse chained into a larger size's input, the coset NTT of
    the zero-extended input) and a same-size chain, each projected as the plain run: within 1 % at
    blowup 2 and for the zero-extended reads; a blowup-4 chain's writes (each unit a burst of its own, spread
    over the larger input's places) 2.1 % and a same-size chain at an odd n (half the write channels for
    stretches) 5.5 % more on L4_k4_C4, a build at its bandwidth limit (one beat a cycle a channel)."""
    top = params.max_log_n
    device = be.call_driver(1 << top)
    bufs = device.allocate(HbmLayout(params), 1)
    out = []
    for run, tolerance in ((Run.ntt(top - 1, inverse=True, chain_log_n=top), 0.01),
                           (Run.ntt(top, coset=7, input_log_m=top - 1), 0.01),
                           (Run.ntt(top - 2, inverse=True, chain_log_n=top), 0.03),
                           (Run.ntt(top, coset=7, input_log_m=top - 2), 0.01),
                           (Run.ntt(top, chain_log_n=top), 0.01), (Run.ntt(top - 1, chain_log_n=top - 1), 0.06)):
        device.execute(run, bufs)
        err = _rel(C.projected_cycles(params, run, refresh=False, engine=engine), be.kernel.last_ntt_cycles)
        assert err <= tolerance, (run, err)
        out.append((f"2^{run.log_n} m={run.input_log_m} t={run.chain_log_n}", err))
    return out


# -- against docs/performance.md's full-size tables ---------------------------------------------------------

#: docs/performance.md "Run-time sizes": `make bench-sizes` (L16_k12_C32, HBM refresh on, the sizes back to
#: back on one simulated card), 2026-11-29: NTT cycles by n.
GOLDILOCKS_SIZES = {16: 5473, 17: 9841, 18: 18445, 19: 35264, 20: 68622, 21: 135191, 22: 267227, 23: 531471,
                    24: 1057946}
#: docs/performance.md "The kernel of several operations": `python -m nantucket.tools.bench_sizes --sizes 8-16
#: --no-doc` on 2026-12-02, the default build, refresh on: 2^16.
GOLDILOCKS_16_AFTER_SEAM = 5441
#: docs/performance.md "Full-size kernel simulation": `make sim-full`, 2026-11-29 (L16_k12_C32, refresh on).
GOLDILOCKS_SIM_FULL = 1057831
#: docs/performance.md "Run-time sizes: babybear": `make bench-sizes FIELD=babybear` (L32_k12_C32_babybear,
#: refresh on), 2026-11-29. From 2^17: at 2^16 (3,465 cycles) the refresh windows' phase moves a call by more
#: than 1 % (the projection, their mean, is 2.7 % under this one call).
BABYBEAR_SIZES = {17: 5746, 18: 10119, 19: 18823, 20: 35800, 21: 69623, 22: 136154, 23: 269365,
                  24: 533467}
#: docs/performance.md "Full-size kernel simulation: babybear" / "koalabear": `make sim-full FIELD=F`,
#: 2026-11-29 (L32_k12_C32, refresh on).
THIRTY_ONE_BIT_SIM_FULL = 533495
#: docs/performance.md "Run-time sizes", the paragraph after the table: the default build without refresh,
#: sizes 2^8 .. 2^14 on one simulated card (`SimBackend` with `kernel.traffic(refresh=False)`).
GOLDILOCKS_NO_REFRESH = {8: 392, 9: 440, 10: 504, 11: 611, 12: 782, 13: 1120, 14: 1714}


def test_full_size_tables_within_one_percent():
    gl, bb = BuildParams(), BuildParams.default_for("babybear")
    cases = [(gl, n, c, True) for n, c in GOLDILOCKS_SIZES.items()]
    cases += [(gl, 16, GOLDILOCKS_16_AFTER_SEAM, True), (gl, 24, GOLDILOCKS_SIM_FULL, True)]
    cases += [(bb, n, c, True) for n, c in BABYBEAR_SIZES.items()] + [(bb, 24, THIRTY_ONE_BIT_SIM_FULL, True)]
    cases += [(BuildParams.default_for("koalabear"), 24, THIRTY_ONE_BIT_SIM_FULL, True)]
    cases += [(gl, n, c, False) for n, c in GOLDILOCKS_NO_REFRESH.items()]
    worst = {}
    for params, log_n, simulated, refresh in cases:
        err = _rel(C.projected_cycles(params, Run.ntt(log_n), refresh=refresh), simulated)
        key = (params.tag(), refresh)
        worst[key] = max(worst.get(key, 0.0), err)
        assert err <= 0.01, (params.tag(), log_n, refresh, simulated)
    print("worst:", {f"{t} refresh {'on' if r else 'off'}": f"{100 * e:.2f} %" for (t, r), e in worst.items()})
