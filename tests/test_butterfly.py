"""Butterfly (hw.butterfly) with both multipliers of the seam (hw.multiplier): the power-of-two facts the
shift multiplier relies on, cocotb/Verilator acceptance benches (the general multiplier; the shift
multiplier with all 192 amounts and a lane stage's restricted set), quick amaranth.sim checks with stalls,
ShiftReduce alone, lint and synthesis (12 DSP48E2 general, none shift-only)."""

import random

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.flow import catalog
from nantucket.hw.arith import ModSub, MulReduce
from nantucket.hw.butterfly import Butterfly
from nantucket.hw.model import field as F
from nantucket.hw.multiplier import GENERAL, GeneralMultiplier, ShiftMultiplier
from nantucket.hw.shift_reduce import ALL_SHIFTS, ShiftReduce
from nantucket.sim.benches.lib import EDGE_VALUES, pysim_pipeline
from nantucket.hw.flow.runner import lint_verilog, run_bench


def _elaborated(*parts):
    for c in parts:
        Fragment.get(c, None)          # elaborated, so amaranth does not warn about unused instances
    return parts


# -- the field facts of the shift multiplier ------------------------------------------------------------

def test_roots_of_unity_up_to_64_are_powers_of_two():
    """The facts the shift stages rest on, from the model's root chain: w_2^q = 2^(39 * 64 / 2^q mod 192)."""
    assert F.pow_(2, 96) == F.P - 1 and F.pow_(2, 192) == 1
    assert [j for j in range(1, 193) if F.pow_(2, j) == 1] == [192]     # 2 has order 192
    expected = {2: 96, 4: 48, 8: 120, 16: 156, 32: 78, 64: 39}
    for n, shift in expected.items():
        assert F.root_of_unity(n) == F.pow_(2, shift), n
        assert shift == 39 * (64 // n) % 192


# -- the cocotb benches ---------------------------------------------------------------------------------

def test_bench_general():
    run_bench(Butterfly(), name="butterfly", test_module="nantucket.sim.benches.butterfly")


@pytest.mark.parametrize("shifts", [None, (0, 48)], ids=["all", "stage_w4"])
def test_bench_shift(shifts):
    dut = Butterfly(multiplier=ShiftMultiplier(shifts))
    run_bench(dut, name="shift_butterfly", params={"shifts": dut.shared_key},
              facts={"shifts": list(dut.multiplier.shifts)}, test_module="nantucket.sim.benches.butterfly")


# -- models and properties ------------------------------------------------------------------------------

def test_models_match_golden():
    rng = random.Random(5)
    general, shift = Butterfly(), Butterfly(multiplier=ShiftMultiplier())
    _elaborated(general, shift)
    for _ in range(2000):
        x0, x1, w, s = rng.randrange(F.P), rng.randrange(F.P), rng.randrange(F.P), rng.randrange(192)
        assert general.model(x0, x1, w) == ((x0 + x1) % F.P, (x0 - x1) * w % F.P)
        assert shift.model(x0, x1, s) == ((x0 + x1) % F.P, (x0 - x1) * pow(2, s, F.P) % F.P)


def test_latency_and_dsp_per_multiplier():
    general, shift, stage, last = _elaborated(Butterfly(), Butterfly(multiplier=ShiftMultiplier()),
                                              Butterfly(multiplier=ShiftMultiplier((0, 48))),
                                              Butterfly(multiplier=ShiftMultiplier((0,))))
    assert general.latency == ModSub.LATENCY + MulReduce.LATENCY and general.dsp_tiles == MulReduce.DSP_TILES
    assert shift.latency == ModSub.LATENCY + ShiftReduce.LATENCY and shift.dsp_tiles == 0
    assert stage.latency == shift.latency and last.latency == ModSub.LATENCY     # shift 0 only: a wire
    assert shift.multiplier.shifts == ALL_SHIFTS
    assert general.twiddle_bits == 64 and shift.twiddle_bits == 8
    # one key per piece of hardware: the multiplier kind, its amounts and the pass width
    keys = [b.shared_key for b in (general, shift, stage, last)]
    assert len(set(keys)) == 4
    assert Butterfly(multiplier=GeneralMultiplier()).shared_key == general.shared_key
    assert GeneralMultiplier() == GENERAL and ShiftMultiplier([48, 0]) == ShiftMultiplier((0, 48))


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="shifts"):
        ShiftReduce([192])
    with pytest.raises(ValueError, match="shifts"):
        ShiftMultiplier([])
    with pytest.raises(TypeError, match="shifts"):
        ShiftMultiplier(3)
    with pytest.raises(TypeError, match="multiplier"):
        Butterfly(multiplier=MulReduce)
    with pytest.raises(ValueError, match="pass_width"):
        Butterfly(pass_width=0)
    with pytest.raises(ValueError, match="multiplier"):
        catalog.build("butterfly", multiplier="karatsuba")


# -- quick amaranth.sim checks with stalls (the cocotb benches are the acceptance tests) -----------------

def test_amaranth_sim_general_with_stalls():
    dut = Butterfly()
    rng = random.Random(7)
    items = [(a, b, w, rng.getrandbits(64)) for a in EDGE_VALUES for b in EDGE_VALUES for w in (0, 1, F.P - 1, 2**32)]
    got = pysim_pipeline(dut, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=7)
    assert got == [((x0 + x1) % F.P, (x0 - x1) * w % F.P, wp) for x0, x1, w, wp in items]


@pytest.mark.parametrize("shifts", [None, (0, 48), (96,), (3, 99, 150)])
def test_amaranth_sim_shift_reduce(shifts):
    """Every allowed shift with edge and random operands through ShiftReduce alone, with stalls."""
    dut = ShiftReduce(shifts)
    rng = random.Random(11)
    items = [(a, s) for s in dut.shifts for a in (0, 1, F.P - 1, 2**32, 2**63, rng.randrange(F.P))]
    got = [p for (p,) in pysim_pipeline(dut, items, ["i_a", "i_b"], ["o_p"], seed=11)]
    assert got == [a * pow(2, s, F.P) % F.P for a, s in items]


@pytest.mark.parametrize("shifts", [(0,), (0, 48, 144)])
def test_amaranth_sim_stage_butterflies(shifts):
    """A lane's last stages: twiddle 1 only (no shift unit at all, latency 2) and {1, w_4, w_4^-1}; edge
    operands, a narrowed pass-through, random bits above the shift amount, stalls and gaps."""
    dut = Butterfly(multiplier=ShiftMultiplier(shifts), pass_width=16)
    rng = random.Random(3)
    items = [(a, b, (rng.getrandbits(56) << 8) | s, rng.getrandbits(16))
             for s in shifts for a in EDGE_VALUES for b in EDGE_VALUES]
    got = pysim_pipeline(dut, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=3)
    assert got == [((x0 + x1) % F.P, (x0 - x1) * pow(2, w & 0xFF, F.P) % F.P, wp) for x0, x1, w, wp in items]


# -- lint and synthesis -----------------------------------------------------------------------------------

@pytest.mark.parametrize("multiplier", ["general", "shift"])
def test_lint(multiplier):
    lint_verilog(catalog.emit_verilog("butterfly", multiplier=multiplier), "butterfly")


@pytest.mark.parametrize("params,dsp", [({}, MulReduce.DSP_TILES), ({"multiplier": "shift"}, 0)],
                         ids=["general", "shift"])
def test_synthesis(tmp_path, params, dsp):
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("butterfly", params, tmp_path, quiet=True)
    assert r["DSP48E2"] == dsp
    assert r["logic_depth"] <= 20


def test_hierarchical_synthesis_counts_the_shared_multiplier_per_instance(tmp_path):
    """The butterfly holds its multiply/reduce unit as a shared module (hw/shared.py): kept hierarchical,
    it is synthesized once and counted once per instance, giving the flattened DSP count."""
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("butterfly", {}, tmp_path, quiet=True, flatten=False)
    assert r["DSP48E2"] == MulReduce().dsp_tiles == Butterfly().dsp_tiles
    assert r["flatten"] is False and r["logic_depth"] <= 20
