"""Twiddle generator: cocotb/Verilator bench against the model, plus parameter checks."""

import pytest

from hw.model.params import BuildParams
from hw.twiddles import TwiddleGenerator
from sim.runner import run_bench

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")


@pytest.mark.parametrize("scale", ["output", "stages"])
@pytest.mark.parametrize("lanes, k, crossed", [(1, 2, True), (4, 4, True), (2, 5, True), (16, 6, False)])
def test_twiddle_generator(lanes, k, crossed, scale):
    """Small configurations cross every idle/stall pattern; the 16-lane one runs random stalls."""
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    run_bench(TwiddleGenerator(params, scale=scale), name="twiddles",
              params={"params": params.as_dict(), "scale": scale},
              test_module="sim.bench_twiddles", testcase=None if crossed else "test_random_stalls")


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params"):
        TwiddleGenerator({"lanes": 4})


def test_resources():
    tg = TwiddleGenerator(BuildParams(), scale="stages")
    assert tg.mul_units == 3 * 16
    assert tg.lookahead == 1          # 2048 cycles per column leave plenty of room at k = 12
    plain = TwiddleGenerator(BuildParams())
    assert plain.scale == "output" and plain.mul_units == 0 and plain.dsp_tiles == 0
    assert plain.latency == tg.latency - 12
    with pytest.raises(ValueError, match="scale"):
        TwiddleGenerator(BuildParams(), scale="input")
