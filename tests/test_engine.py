"""NTT engine: both passes through L lanes and the twiddle generator, on Verilator, against the model."""

import pytest

from hw.engine import NttEngine
from hw.model.params import BuildParams
from sim.runner import run_bench

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

# N = 2^8 with 1, 2, 4, 16 lanes; N = 2^12 with 4 and 16 lanes.
CONFIGS = [(1, 4), (2, 4), (4, 4), (16, 4), (4, 6), (16, 6)]


@pytest.mark.parametrize("lanes, k", CONFIGS, ids=[f"L{l}_k{k}" for l, k in CONFIGS])
def test_engine(lanes, k):
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    run_bench(NttEngine(params), name="engine", params={"params": params.as_dict()},
              test_module="sim.bench_engine")


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
              params={"params": params.as_dict(), "scale": "stages"}, test_module="sim.bench_engine")
