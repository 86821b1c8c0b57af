"""ShiftButterfly / ShiftReduce (hw.shift_butterfly): the power-of-two facts they rely on, cocotb benches
on Verilator (all 192 shift amounts and a lane stage's restricted set), a quick amaranth.sim check,
lint and synthesis (no DSP48E2)."""

import random

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.arith import ModSub
from nantucket.hw.model import field as F
from nantucket.hw.shift_butterfly import ALL_SHIFTS, ShiftButterfly, ShiftReduce
from nantucket.sim.benchlib import EDGE_VALUES, pysim_pipeline
from nantucket.sim.runner import emit_verilog, lint_verilog, run_bench


def test_roots_of_unity_up_to_64_are_powers_of_two():
    """The facts the shift stages rest on, from the model's root chain: w_2^q = 2^(39 * 64 / 2^q mod 192)."""
    assert F.pow_(2, 96) == F.P - 1 and F.pow_(2, 192) == 1
    assert [j for j in range(1, 193) if F.pow_(2, j) == 1] == [192]     # 2 has order 192
    expected = {2: 96, 4: 48, 8: 120, 16: 156, 32: 78, 64: 39}
    for n, shift in expected.items():
        assert F.root_of_unity(n) == F.pow_(2, shift), n
        assert shift == 39 * (64 // n) % 192


@pytest.mark.parametrize("shifts", [None, (0, 48)], ids=["all", "stage_w4"])
def test_bench(shifts):
    dut = ShiftButterfly(shifts)
    run_bench(dut, name="shift_butterfly", params={"shifts": dut.shared_key},
              test_module="nantucket.sim.bench_shift_butterfly")


def test_model_matches_golden():
    rng = random.Random(5)
    for _ in range(2000):
        x0, x1, s = rng.randrange(F.P), rng.randrange(F.P), rng.randrange(192)
        assert ShiftButterfly.model(x0, x1, s) == ((x0 + x1) % F.P, (x0 - x1) * pow(2, s, F.P) % F.P)


def test_properties():
    parts = [ShiftButterfly(), ShiftButterfly((0, 48)), ModSub()]
    for c in parts:
        Fragment.get(c, None)
    assert parts[0].latency == ModSub.LATENCY + ShiftReduce.LATENCY
    assert parts[0].dsp_tiles == 0 and parts[0].shifts == ALL_SHIFTS
    assert parts[0].shared_key != parts[1].shared_key
    assert ShiftReduce((0,)).latency == 0 and ShiftReduce((0, 48)).latency == ShiftReduce.LATENCY


def test_rejects_bad_shift_sets():
    with pytest.raises(ValueError, match="shifts"):
        ShiftReduce([192])
    with pytest.raises(ValueError, match="shifts"):
        ShiftButterfly([])
    with pytest.raises(TypeError, match="shifts"):
        ShiftButterfly(3)


@pytest.mark.parametrize("shifts", [None, (0, 48), (96,), (3, 99, 150)])
def test_amaranth_sim_shift_reduce(shifts):
    """Every allowed shift with edge and random operands through ShiftReduce alone, with stalls."""
    dut = ShiftReduce(shifts)
    rng = random.Random(11)
    items = [(a, s) for s in dut.shifts for a in (0, 1, F.P - 1, 2**32, 2**63, rng.randrange(F.P))]
    got = [p for (p,) in pysim_pipeline(dut, items, ["i_a", "i_shift"], ["o_p"], seed=11)]
    assert got == [a * pow(2, s, F.P) % F.P for a, s in items]


def test_lint():
    lint_verilog(emit_verilog(ShiftButterfly(), "shift_butterfly"), "shift_butterfly")


def test_synthesis_uses_no_dsp(tmp_path):
    from nantucket.hw.synth import synthesize
    r = synthesize("shift_butterfly", {}, tmp_path, quiet=True, component=ShiftButterfly())
    assert r["DSP48E2"] == 0
    assert r["logic_depth"] <= 20


@pytest.mark.parametrize("shifts", [(0,), (0, 48, 144)])
def test_amaranth_sim_stage_butterflies(shifts):
    """A lane's last stages: twiddle 1 only (no shift unit at all, latency 2) and {1, w_4, w_4^-1}; edge
    operands, a narrowed pass-through, stalls and gaps."""
    dut = ShiftButterfly(shifts, pass_width=16)
    assert dut.latency == (ModSub.LATENCY if shifts == (0,) else ModSub.LATENCY + ShiftReduce.LATENCY)
    rng = random.Random(3)
    items = [(a, b, s, rng.getrandbits(16)) for s in shifts for a in EDGE_VALUES for b in EDGE_VALUES]
    got = pysim_pipeline(dut, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=3)
    assert got == [ShiftButterfly.model(x0, x1, s) + (wp,) for x0, x1, s, wp in items]
