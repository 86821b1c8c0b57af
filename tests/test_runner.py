"""The simulation runner itself: build, cache, facts, and a failing bench must fail."""

import pytest
from amaranth.hdl import Fragment

from sim.runner import build_dir_for, component_props, param_tag, run_bench
from sim.smoke import SmokeDelay


def test_param_tag():
    assert param_tag({}) == "default"
    assert param_tag({"width": 8, "latency": 3}) == "latency3_width8"


def test_component_props():
    dut = SmokeDelay(width=5, latency=3)
    Fragment.get(dut, None)            # elaborated: no "created but never used" warning
    props = component_props(dut)
    assert props["latency"] == 3 and props["width"] == 5


@pytest.mark.parametrize("latency", [1, 3])
def test_smoke_bench(latency):
    params = {"width": 8, "latency": latency}
    run_bench(SmokeDelay(**params), name="smoke", params=params, test_module="sim.bench_smoke")
    assert (build_dir_for("smoke", params) / ".nantucket-build-hash").exists()


def test_wrong_latency_fails():
    """The bench must notice a pipeline that is not as deep as claimed (no test that cannot fail)."""
    params = {"width": 8, "latency": 3}
    with pytest.raises(AssertionError, match="cocotb tests failed"):
        run_bench(SmokeDelay(**params), name="smoke", params=params, test_module="sim.bench_smoke",
                  facts={"props": {"width": 8, "latency": 2}}, testcase="test_delay")
