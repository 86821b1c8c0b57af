"""Butterfly (hw.butterfly) with both multipliers of the seam (hw.multiplier), per field: the power-of-two
facts the shift multiplier relies on, cocotb/Verilator acceptance benches (Goldilocks: the general
multiplier, the shift multiplier with all 192 amounts and a lane stage's restricted set; BabyBear and
KoalaBear: the Montgomery multiplier and the amount-0 pass-through), the seam's per-field API (encode,
keys, widths), quick amaranth.sim checks with stalls, ShiftReduce alone, lint and synthesis (12 DSP48E2
general Goldilocks, 2 Montgomery, none shift-only)."""

import random

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.flow import catalog
from nantucket.hw.arith import ModSub, MulReduce
from nantucket.hw.butterfly import Butterfly
from nantucket.hw.model import field as F
from nantucket.hw.mont_reduce import MontgomeryMulReduce
from nantucket.hw.multiplier import (GENERAL, GeneralMultiplier, MontgomeryMultiplier, ShiftMultiplier,
                                     general_multiplier)
from nantucket.hw.shift_reduce import ALL_SHIFTS, ShiftReduce
from nantucket.sim.benches.arith import field_edge_values
from nantucket.sim.benches.lib import EDGE_VALUES, pysim_pipeline
from nantucket.hw.flow.runner import lint_verilog, run_bench

SMALL_FIELDS = ("babybear", "koalabear")
#: Fewer random sets for the 31-bit benches (each case takes seconds; Goldilocks keeps the full run).
SMALL_BENCH_ENV = {"BUTTERFLY_RANDOM_SETS": "2000", "BUTTERFLY_CROSSED_SETS": "150"}
R = 2**32


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


@pytest.mark.parametrize("field_name", SMALL_FIELDS)
def test_bench_31bit_general(field_name):
    dut = Butterfly(multiplier=general_multiplier(field_name))
    run_bench(dut, name="butterfly", params={"field": field_name}, extra_env=SMALL_BENCH_ENV,
              test_module="nantucket.sim.benches.butterfly")


@pytest.mark.parametrize("field_name", SMALL_FIELDS)
def test_bench_31bit_shift(field_name):
    """The last stage's butterfly of a 31-bit lane: amount 0 only, the multiplier a wire."""
    dut = Butterfly(multiplier=ShiftMultiplier(field=field_name))
    run_bench(dut, name="shift_butterfly", params={"field": field_name, "shifts": dut.shared_key},
              facts={"shifts": list(dut.multiplier.shifts)}, extra_env=SMALL_BENCH_ENV,
              test_module="nantucket.sim.benches.butterfly")


# -- models and properties ------------------------------------------------------------------------------

def test_models_match_golden():
    rng = random.Random(5)
    general, shift = Butterfly(), Butterfly(multiplier=ShiftMultiplier())
    _elaborated(general, shift)
    for _ in range(2000):
        x0, x1, w, s = rng.randrange(F.P), rng.randrange(F.P), rng.randrange(F.P), rng.randrange(192)
        assert general.model(x0, x1, w) == ((x0 + x1) % F.P, (x0 - x1) * w % F.P)
        assert shift.model(x0, x1, s) == ((x0 + x1) % F.P, (x0 - x1) * pow(2, s, F.P) % F.P)


@pytest.mark.parametrize("field_name", SMALL_FIELDS)
def test_models_match_big_int_31bit(field_name):
    """The butterfly's and the multipliers' models against big-int arithmetic; a Montgomery twiddle word
    is w * 2^32 mod p (encode), and the product comes out as the plain (x0 - x1) * w."""
    f = F.get(field_name)
    p = f.p
    general, last = Butterfly(multiplier=general_multiplier(f)), Butterfly(multiplier=ShiftMultiplier(field=f))
    _elaborated(general, last)
    rng = random.Random(6)
    edges = field_edge_values(f)
    for _ in range(2000):
        x0, x1, w = rng.choice(edges) if rng.random() < 0.2 else rng.randrange(p), rng.randrange(p), rng.randrange(p)
        word = general.multiplier.encode(w)
        assert word == w * R % p
        assert general.model(x0, x1, word) == ((x0 + x1) % p, (x0 - x1) * w % p)
        assert general.multiplier.model(x0, word) == x0 * w % p
        assert last.model(x0, x1, last.multiplier.encode(1)) == ((x0 + x1) % p, (x0 - x1) % p)
    assert last.multiplier.encode(1) == 0                # the twiddle 1 is shift amount 0
    with pytest.raises(ValueError, match="value"):
        last.multiplier.encode(2)                        # 2 = 2^1: not an amount this unit takes
    with pytest.raises(ValueError, match="shift amount 1"):
        last.multiplier.model(5, 1)


def test_encode_goldilocks():
    """Goldilocks' general twiddle word is the value itself, a shift unit's is the amount s of 2^s."""
    rng = random.Random(2)
    for _ in range(100):
        w = rng.randrange(F.P)
        assert GENERAL.encode(w) == w
    shift = ShiftMultiplier()
    for s in (0, 1, 39, 96, 191):
        assert shift.encode(pow(2, s, F.P)) == s
    with pytest.raises(ValueError, match="value"):
        ShiftMultiplier((0, 48)).encode(pow(2, 96, F.P))


def test_general_multiplier_per_field():
    kinds = {n: general_multiplier(n) for n in F.FIELD_NAMES}
    assert kinds["goldilocks"] == GENERAL and isinstance(kinds["goldilocks-plonky2"], GeneralMultiplier)
    assert kinds["goldilocks-plonky2"] == GENERAL and kinds["goldilocks-plonky2"].field is F.GOLDILOCKS_PLONKY2
    for n in SMALL_FIELDS:
        kind = kinds[n]
        assert isinstance(kind, MontgomeryMultiplier) and kind.field is F.get(n)
        assert kind.operand_bits == 31 and kind.dsp_tiles == MontgomeryMulReduce.DSP_TILES <= 3
        assert kind.latency == MontgomeryMulReduce.LATENCY
    assert len({k.key for k in kinds.values()}) == 3          # one per distinct prime
    with pytest.raises(ValueError, match="field"):
        GeneralMultiplier(field="babybear")
    with pytest.raises(ValueError, match="field"):
        MontgomeryMultiplier("goldilocks")


def test_shift_multiplier_per_field():
    """Goldilocks: amounts 0..191 (8-bit word), as before. A 31-bit field: amount 0 only (1-bit word), a
    pass-through with no DSP and no latency."""
    assert ShiftMultiplier(field="goldilocks-plonky2") == ShiftMultiplier()
    assert ShiftMultiplier(field="goldilocks-plonky2").key == "shift"
    for n in SMALL_FIELDS:
        kind = ShiftMultiplier(field=n)
        assert kind.shifts == (0,) and kind.operand_bits == 1 and kind.latency == 0 and kind.dsp_tiles == 0
        assert kind == ShiftMultiplier([0], field=n) and kind.key != ShiftMultiplier((0,)).key
        with pytest.raises(ValueError, match="shifts"):
            ShiftMultiplier([1], field=n)
    assert ShiftMultiplier(field="babybear").key != ShiftMultiplier(field="koalabear").key


def test_butterfly_widths_and_keys_per_field():
    """Ports read the field's width; one shared key per distinct hardware (the Goldilocks presets share)."""
    bfs = {}
    for n in F.FIELD_NAMES:
        for kind in (general_multiplier(n), ShiftMultiplier(field=n)):
            bf = Butterfly(multiplier=kind)
            _elaborated(bf)
            width = F.get(n).p.bit_length()
            assert len(bf.i_x0) == len(bf.o_x1) == len(bf.i_w) == width and bf.pass_width == width
            assert bf.latency == ModSub.LATENCY + kind.latency
            bfs[(n, type(kind).__name__)] = bf
    keys = {k: bf.shared_key for k, bf in bfs.items()}
    assert keys[("goldilocks", "GeneralMultiplier")] == keys[("goldilocks-plonky2", "GeneralMultiplier")] == "butterfly"
    assert keys[("goldilocks", "ShiftMultiplier")] == keys[("goldilocks-plonky2", "ShiftMultiplier")]
    assert len(set(keys.values())) == 6
    assert catalog.emit_verilog("butterfly", field="goldilocks-plonky2") == catalog.emit_verilog("butterfly")
    narrow = Butterfly(multiplier=general_multiplier("babybear"), pass_width=16)
    _elaborated(narrow)
    assert narrow.shared_key != keys[("babybear", "MontgomeryMultiplier")]


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


@pytest.mark.parametrize("field_name", SMALL_FIELDS)
def test_amaranth_sim_31bit_with_stalls(field_name):
    """Edge pairs under edge twiddles (in Montgomery form) and the pass-through stage, stalls and gaps."""
    f = F.get(field_name)
    p = f.p
    rng = random.Random(8)
    edges = field_edge_values(f)
    general = Butterfly(multiplier=general_multiplier(f))
    ws = (0, 1, p - 1, 2**16, rng.randrange(p))
    items = [(a, b, w * R % p, rng.getrandbits(31)) for a in edges for b in edges[::3] for w in ws]
    got = pysim_pipeline(general, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=8)
    inv_r = pow(R, -1, p)
    assert got == [((x0 + x1) % p, (x0 - x1) * (w * inv_r) % p, wp) for x0, x1, w, wp in items]
    last = Butterfly(multiplier=ShiftMultiplier(field=f), pass_width=16)
    items = [(a, b, rng.getrandbits(30) << 1, rng.getrandbits(16)) for a in edges for b in edges]
    got = pysim_pipeline(last, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=9)
    assert got == [((x0 + x1) % p, (x0 - x1) % p, wp) for x0, x1, _, wp in items]


# -- lint and synthesis -----------------------------------------------------------------------------------

@pytest.mark.parametrize("field_name", ["goldilocks", *SMALL_FIELDS])
@pytest.mark.parametrize("multiplier", ["general", "shift"])
def test_lint(multiplier, field_name):
    lint_verilog(catalog.emit_verilog("butterfly", multiplier=multiplier, field=field_name), "butterfly")


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
@pytest.mark.parametrize("params,dsp", [({}, MulReduce.DSP_TILES), ({"multiplier": "shift"}, 0)],
                         ids=["general", "shift"])
def test_synthesis(tmp_path, params, dsp):
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("butterfly", params, tmp_path, quiet=True)
    assert r["DSP48E2"] == dsp
    assert r["logic_depth"] <= 20


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
@pytest.mark.parametrize("field_name", SMALL_FIELDS)
def test_synthesis_31bit(tmp_path, field_name):
    """The Montgomery butterfly holds the multiplier's DSP48E2 only (at most 3); the pass-through none."""
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("butterfly", {"field": field_name}, tmp_path / "general", quiet=True)
    assert r["DSP48E2"] == MontgomeryMulReduce.DSP_TILES <= 3 and r["logic_depth"] <= 12
    r = synthesize("butterfly", {"field": field_name, "multiplier": "shift"}, tmp_path / "shift", quiet=True)
    assert r["DSP48E2"] == 0 and r["logic_depth"] <= 12


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
def test_hierarchical_synthesis_counts_the_shared_multiplier_per_instance(tmp_path):
    """The butterfly holds its multiply/reduce unit as a shared module (hw/shared.py): kept hierarchical,
    it is synthesized once and counted once per instance, giving the flattened DSP count."""
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("butterfly", {}, tmp_path, quiet=True, flatten=False)
    assert r["DSP48E2"] == MulReduce().dsp_tiles == Butterfly().dsp_tiles
    assert r["flatten"] is False and r["logic_depth"] <= 20
