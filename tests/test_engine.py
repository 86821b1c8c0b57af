"""NTT engine: both passes through L lanes and the twiddle generator, on Verilator, against the model."""

import pytest

from nantucket.hw.engine import NttEngine
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.runner import run_bench

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

# N = 2^8 with 1, 2, 4, 16 lanes; N = 2^12 with 4 and 16 lanes.
CONFIGS = [(1, 4), (2, 4), (4, 4), (16, 4), (4, 6), (16, 6)]
#: The forward single-transform tests of sim/benches/engine.py (inverse and batches: test_inverse_and_batches).
FORWARD_TESTS = ["test_random_points", "test_edge_vectors", "test_every_size", "test_back_to_back"]


@pytest.mark.parametrize("lanes, k", CONFIGS, ids=[f"L{l}_k{k}" for l, k in CONFIGS])
def test_engine(lanes, k):
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    run_bench(NttEngine(params), name="engine", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.engine", testcase=FORWARD_TESTS)


# L4_k4 with C = 2 shares test_engine's build (C only sets min_log_n, here 4 as with C = 4)
@pytest.mark.parametrize("lanes, k, channels", [(4, 4, 2), (8, 5, 8)], ids=["L4_k4", "L8_k5_C8"])
def test_engine_inverse_and_batches(lanes, k, channels):
    """Inverse at every size, batches of 1..3 mixing kinds, switching between passes without reset,
    random stalls, exact cycle counts (sim/benches/engine.py test_inverse_and_batches)."""
    params = BuildParams(lanes=lanes, log_core=k, channels=channels)
    run_bench(NttEngine(params), name="engine", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.engine", testcase="test_inverse_and_batches")


def test_engine_ports_for_the_kernel():
    """What the kernel wires: ``inverse`` (1 bit) and ``batch`` up to ``max_batch`` = as many transforms
    of the smallest size as points in the largest; the folded design runs forward single transforms."""
    params = BuildParams()
    engine = NttEngine(params)
    assert engine.max_batch == 2 ** (params.max_log_n - params.min_log_n) == 2 ** 16
    assert engine.batch.shape().width == (engine.max_batch).bit_length()
    assert engine.inverse.shape().width == 1 and engine.inverse_supported
    folded = NttEngine(params, scale="stages")
    assert folded.max_batch == 1 and not folded.inverse_supported


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params"):
        NttEngine(BuildParams(lanes=4).as_dict())


def test_default_engine_multiplier_budget():
    """Default (scale "output"): 16 lanes x (6 general butterflies + 4 output-scale units) = 160
    multiply/reduce units = 1,920 DSP48E2; the folded design: 16 x (12 + 3) = 240 = 2,880. The coset
    transforms add 2 per lane (the point scale) and 3 for the engine (the factor generator)."""
    engine = NttEngine(BuildParams())
    coset = 16 * 2 + 3
    assert engine.mul_units == 16 * (6 + 4) + coset
    assert NttEngine(BuildParams(), scale="stages").mul_units == 16 * 15 + coset
    assert engine.beats_per_pass == 2**19


def test_engine_folded_scale():
    """The folded design (scale in the stage twiddles) stays exact."""
    params = BuildParams(lanes=4, log_core=4, channels=2)
    run_bench(NttEngine(params, scale="stages"), name="engine",
              params={"params": params.as_dict(), "scale": "stages"}, test_module="nantucket.sim.benches.engine",
              testcase=FORWARD_TESTS)
