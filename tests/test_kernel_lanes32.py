"""32 lanes (64 points per NTT cycle): the smallest 32-lane kernel, L32_k5_C32 (N = 2^10), end to end on
the simulated card against the golden model, forward and inverse, with the HBM refresh windows on."""

import numpy as np
import pytest

from nantucket.hw.model import ntt
from nantucket.hw.model.params import BuildParams
from nantucket.host.sim_backend import SimBackend
from nantucket.host.workloads import make_points

# A larger build (a 32-lane kernel, about 5 minutes of Verilator build): make test-full.
pytestmark = [pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable"), pytest.mark.full]

L32 = BuildParams(lanes=32, log_core=5, channels=32)


@pytest.fixture(scope="module")
def card():
    backend = SimBackend(L32, progress=lambda line: None)
    backend.open(L32)
    yield backend
    backend.close()


def test_32_lanes_is_a_build():
    assert L32.points_per_cycle == 64 and L32.n_points == 1 << 10


@pytest.mark.parametrize("kind,seed,inverse", [("random", 1, False), ("skewed", 2, False), ("random", 3, True)])
def test_32_lane_kernel_matches_the_golden_model(card, kind, seed, inverse):
    x = make_points(L32.log_n, kind, seed)
    want = ntt.intt(x) if inverse else ntt.ntt(x)
    got = card.run(x, inverse=inverse)
    assert np.array_equal(np.asarray(got, dtype=np.uint64), np.asarray(want, dtype=np.uint64))
