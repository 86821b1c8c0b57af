"""Run-time sizes end to end: the kernel RTL (Verilator, HBM models with refresh) under the host's XRT
driver transforms every native size of small builds, sizes switching from run to run on one simulated
card without a reset (HBM refresh off, so that cycle counts repeat), every input kind, forward and inverse, against the golden model; sizes below
the smallest native one go through the host's zero-padding; and the default build (L16_k12_C32) runs
a size below its maximum natively."""

import numpy as np
import pytest

from nantucket.hw.model import ntt
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.host.sim_backend import SimBackend
from nantucket.host.workloads import KINDS, make_points

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

BUILDS = [BuildParams(lanes=4, log_core=4, channels=4), BuildParams(lanes=8, log_core=5, channels=8)]
#: the 8-lane build in make test-full, as in tests/test_kernel.py
CARDS = [pytest.param(p, id=p.tag(), marks=[pytest.mark.full] if p.lanes == 8 else []) for p in BUILDS]


def _card(params, refresh=True):
    backend = SimBackend(params, refresh=refresh, progress=lambda line: None)
    backend.open(params)
    return backend


@pytest.fixture(scope="module", params=CARDS)
def card(request):
    # HBM refresh off: its windows come at fixed times, so with it on a run's cycle count depends on
    # when it starts
    backend = _card(request.param, refresh=False)
    yield request.param, backend
    backend.close()


def _check(backend, n, kind, seed, inverse=False):
    x = make_points(n, kind, seed)
    want = ntt.intt(x) if inverse else ntt.ntt(x)
    got = np.asarray(backend.run(x, inverse=inverse), dtype=np.uint64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"2^{n} {kind}{' inverse' if inverse else ''}: {bad.size} points differ, first at {bad[0]}"
    return backend.kernel.last_ntt_cycles


def test_every_size_switching_without_reset(card):
    """Every native n, largest first, then up and down; every input kind; the inverse on every size."""
    params, backend = card
    sizes = list(range(params.min_log_n, params.max_log_n + 1))
    order = sizes[::-1] + sizes[::2] + sizes[1::2]
    cycles = {}
    for i, n in enumerate(order):
        cycles.setdefault(n, []).append(_check(backend, n, KINDS[i % len(KINDS)], seed=i,
                                               inverse=(i >= len(sizes))))
    # the same size always takes the same number of cycles (nothing left over from the size before),
    # give or take the few cycles of the two clocks' phase at the start (the DMA and NTT clocks are
    # unrelated, and a run starts wherever the previous one left them); a smaller size is faster
    for n, cs in cycles.items():
        assert max(cs) - min(cs) <= 4, f"2^{n}: cycle counts {cs} differ from run to run"
    firsts = [cycles[n][0] for n in sizes]
    assert firsts == sorted(firsts), f"cycles by size {dict(zip(sizes, firsts))} do not grow with the size"
    # bounds: at least the ideal 2 x N / 2L, and well under the largest size's count for small sizes
    for n in sizes:
        assert params.ideal_cycles(n) <= cycles[n][0] < 4 * params.ideal_cycles(n) + 3000


def test_sizes_below_the_smallest_native_size_are_padded_by_the_host(card):
    params, backend = card
    for n in range(1, params.min_log_n):
        padded = _check(backend, n, "random", seed=n)
        assert backend.kernel_log_n == params.min_log_n
        assert abs(padded - _check(backend, params.min_log_n, "zeros", seed=0)) <= 4


def test_identification_reports_the_native_sizes(card):
    params, backend = card
    driver = backend.open(params)
    ids = {name: backend.kernel.read(R.ID_BASE + 4 * R.ID_REGISTERS.index(name))
           for name in ("MIN_LOG_N", "MAX_LOG_N")}
    assert ids == {"MIN_LOG_N": params.min_log_n, "MAX_LOG_N": params.max_log_n}
    assert driver is backend.open(params)


@pytest.mark.full
def test_default_build_runs_a_smaller_size_natively():
    """L16_k12_C32 (HBM refresh on) transforms 2^10 and 2^9 points natively (not padded to 2^24): about
    2 x 2^n / 32 cycles plus the lane latency of 2^5-point frames, far from the 1.06 M cycles of 2^24."""
    params = BuildParams()
    backend = _card(params)
    try:
        for n in (10, 9):
            cycles = _check(backend, n, "random", seed=n)
            assert params.ideal_cycles(n) <= cycles < 20_000, f"2^{n}: {cycles} cycles"
    finally:
        backend.close()
