"""Butterfly (hw.butterfly): cocotb/Verilator acceptance bench, quick amaranth.sim check, lint, synthesis."""

import random

from amaranth.hdl import Fragment

from nantucket.hw import catalog
from nantucket.hw.arith import ModSub, MulReduce
from nantucket.hw.butterfly import Butterfly
from nantucket.hw.model import field as F
from nantucket.sim.benchlib import EDGE_VALUES, pysim_pipeline
from nantucket.sim.runner import lint_verilog, run_bench


def test_bench():
    run_bench(Butterfly(), name="butterfly", test_module="nantucket.sim.bench_butterfly")


def test_model_matches_golden():
    rng = random.Random(5)
    for _ in range(1000):
        x0, x1, w = (rng.randrange(F.P) for _ in range(3))
        assert Butterfly.model(x0, x1, w) == ((x0 + x1) % F.P, (x0 - x1) * w % F.P)


def test_latency_is_sub_plus_mul():
    parts = [Butterfly(), ModSub(), MulReduce()]
    for c in parts:
        Fragment.get(c, None)          # elaborated, so amaranth does not warn about unused instances
    assert parts[0].latency == parts[1].latency + parts[2].latency


def test_amaranth_sim_with_stalls():
    """Quick check with stalls; the cocotb bench is the acceptance test."""
    dut = Butterfly()
    rng = random.Random(7)
    items = [(a, b, w, rng.getrandbits(64)) for a in EDGE_VALUES for b in EDGE_VALUES for w in (0, 1, F.P - 1, 2**32)]
    got = pysim_pipeline(dut, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=7)
    assert got == [Butterfly.model(x0, x1, w) + (wp,) for x0, x1, w, wp in items]


def test_lint():
    lint_verilog(catalog.emit_verilog("butterfly"), "butterfly")


def test_synthesis(tmp_path):
    from nantucket.hw.synth import synthesize
    r = synthesize("butterfly", {}, tmp_path, quiet=True)
    assert r["DSP48E2"] == 12
    assert r["logic_depth"] <= 20


def test_hierarchical_synthesis_counts_the_shared_multiplier_per_instance(tmp_path):
    """The butterfly holds its multiply/reduce unit as a shared module (hw/shared.py): kept hierarchical,
    it is synthesized once and counted once per instance, giving the flattened DSP count."""
    from nantucket.hw.arith import MulReduce
    from nantucket.hw.butterfly import Butterfly
    from nantucket.hw.synth import synthesize
    r = synthesize("butterfly", {}, tmp_path, quiet=True, flatten=False)
    assert r["DSP48E2"] == MulReduce().dsp_tiles == Butterfly().dsp_tiles
    assert r["flatten"] is False and r["logic_depth"] <= 20
