"""Butterfly (hw.butterfly): cocotb/Verilator acceptance bench, quick amaranth.sim check, lint, synthesis."""

import random

import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from hw import catalog
from hw.arith import ModSub, MulReduce
from hw.butterfly import Butterfly
from hw.model import field as F
from sim.benchlib import EDGE_VALUES
from sim.runner import lint_verilog, run_bench


def test_bench():
    run_bench(Butterfly(), name="butterfly", test_module="sim.bench_butterfly")


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
    got = []

    async def tb(ctx):
        i = 0
        for _ in range(20 * len(items)):
            if len(got) == len(items):
                break
            en = rng.random() < 0.7
            ctx.set(dut.en, en)
            if en and ctx.get(dut.o_valid):       # taken at this edge
                got.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1), ctx.get(dut.o_w_pass)))
            send = en and i < len(items) and rng.random() < 0.8
            if send:
                x0, x1, w, wp = items[i]
                ctx.set(dut.i_x0, x0); ctx.set(dut.i_x1, x1); ctx.set(dut.i_w, w); ctx.set(dut.i_w_pass, wp)
                i += 1
            ctx.set(dut.i_valid, send)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(tb)
    sim.run()
    assert got == [Butterfly.model(x0, x1, w) + (wp,) for x0, x1, w, wp in items]


def test_lint():
    lint_verilog(catalog.emit_verilog("butterfly"), "butterfly")


def test_synthesis(tmp_path):
    from hw.synth import synthesize
    r = synthesize("butterfly", {}, tmp_path, quiet=True)
    assert r["DSP48E2"] == 12
    assert r["logic_depth"] <= 20


def test_hierarchical_synthesis_counts_the_shared_multiplier_per_instance(tmp_path):
    """The butterfly holds its multiply/reduce unit as a shared module (hw/shared.py): kept hierarchical,
    it is synthesized once and counted once per instance, giving the flattened DSP count."""
    from hw.arith import MulReduce
    from hw.butterfly import Butterfly
    from hw.synth import synthesize
    r = synthesize("butterfly", {}, tmp_path, quiet=True, flatten=False)
    assert r["DSP48E2"] == MulReduce().dsp_tiles == Butterfly().dsp_tiles
    assert r["flatten"] is False and r["logic_depth"] <= 20
