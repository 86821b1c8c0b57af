"""Winterfell's Rescue Prime Rp64_256 permutation (hw/model/hash/rescue.py), against Winterfell's own
known-answer vector and a plain slow implementation written here from the definition (Python ints, one
state at a time).

Known-answer vector: Winterfell (https://github.com/facebook/winterfell), tag v0.13.1, commit
2f78ee9bf667a561bdfcdfa68668d0f9b18b8315, crypto/src/hash/rescue/rp64_256/tests.rs ``apply_permutation``
(quoted in tests/hash_vectors.py, which names the same source). The other tests there are mirrored here:
``test_alphas`` (x^7 then x^(1/7) is the identity), ``test_sbox`` / ``test_inv_sbox`` (the S-boxes equal
x^ALPHA and x^INV_ALPHA), ``mds_inv_test`` (MDS times INV_MDS is the identity) and ``mds_freq_proptest``
(the frequency-domain MDS equals the matrix: the model uses the matrix, so the slow reference below
multiplies by the circulant built from the first row the source documents).

The definition (crypto/src/hash/rescue/rp64_256/mod.rs ``apply_round``, 7 rounds): x^7 on every element,
MDS, add ARK1[round]; x^INV_ALPHA on every element, MDS, add ARK2[round].
"""

import numpy as np
import pytest

from hash_vectors import WINTERFELL_RP64_256, WINTERFELL_SOURCE
from nantucket.hw.model.field import GOLDILOCKS_PLONKY2
from nantucket.hw.model.hash import permutation
from nantucket.hw.model.hash import rescue_constants as C
from nantucket.hw.model.hash.rescue import (INV_SBOX_CHAIN, WINTERFELL_COMMIT, WINTERFELL_TAG, RescuePrime64,
                                            chain_multiplies, run_chain)

P = 2**64 - 2**32 + 1
#: Winterfell v0.13.1 rp64_256/mod.rs, quoted
ALPHA = 7
INV_ALPHA = 10540996611094048183
#: crypto/src/hash/mds/mds_f64_12x12.rs: "The circulant matrix is identified by its first row: ..."
FIRST_ROW = [7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8]


def slow_rescue(state):
    """Rp64_256::apply_permutation on one state of Python ints."""
    s = [int(v) for v in state]
    mds = [[FIRST_ROW[(j - i) % 12] for j in range(12)] for i in range(12)]

    def linear(v, ark):
        return [(sum(mds[i][j] * v[j] for j in range(12)) + ark[i]) % P for i in range(12)]

    for r in range(7):
        s = linear([pow(v, ALPHA, P) for v in s], C.ARK1[r])
        s = linear([pow(v, INV_ALPHA, P) for v in s], C.ARK2[r])
    return s


@pytest.fixture(scope="module")
def perm():
    return permutation("rp64-256")


def _edge_states():
    rng = np.random.default_rng(17)
    edges = [[0] * 12, [P - 1] * 12, [1] * 12, [0, P - 1] * 6, [P - 1] + [0] * 11,
             [2**32 - 1, 2**32, 2**63, P - 2, 1, 0, P - 1, 2**32 + 1, 7, 2**31, 8, 12345]]
    return edges + rng.integers(0, P, size=(6, 12), dtype=np.uint64).tolist()


def test_the_pin_is_the_one_the_constants_and_vectors_name():
    assert (WINTERFELL_TAG, WINTERFELL_COMMIT) == ("v0.13.1", "2f78ee9bf667a561bdfcdfa68668d0f9b18b8315")
    assert (WINTERFELL_SOURCE["tag"], WINTERFELL_SOURCE["commit"]) == (WINTERFELL_TAG, WINTERFELL_COMMIT)
    assert (C.NUM_ROUNDS, C.ALPHA, C.INV_ALPHA) == (7, ALPHA, INV_ALPHA)
    assert len(C.ARK1) == len(C.ARK2) == 7 and all(len(r) == 12 and max(r) < P for r in C.ARK1 + C.ARK2)


def test_winterfell_known_answer(perm):
    state, expected = WINTERFELL_RP64_256[0]
    assert list(state) == list(range(12))
    assert [int(v) for v in perm.permute(list(state))] == list(expected)
    assert slow_rescue(state) == list(expected)            # the slow reference is right too


def test_equals_the_slow_reference_on_edge_and_random_states(perm):
    states = _edge_states()
    out = perm.permute(np.array(states, dtype=np.uint64))
    assert out.dtype == np.uint64
    for s, o in zip(states, out.tolist()):
        assert o == slow_rescue(s), s


def test_mds_is_the_documented_circulant_and_inv_mds_inverts_it():
    assert [list(r) for r in C.MDS] == [[FIRST_ROW[(j - i) % 12] for j in range(12)] for i in range(12)]
    for i in range(12):
        for j in range(12):
            assert sum(C.MDS[i][k] * C.INV_MDS[k][j] for k in range(12)) % P == (i == j)
    assert max(FIRST_ROW) < 32                             # why the MDS is shifts and adds


def test_alphas_inverse_sbox_undoes_x7(perm):
    rng = np.random.default_rng(23)
    x = np.concatenate([np.array([0, 1, 2, P - 1, P - 2, 2**32, 2**32 - 1, 2**63], dtype=np.uint64),
                        rng.integers(0, P, size=200, dtype=np.uint64)])
    f = GOLDILOCKS_PLONKY2
    root = perm.inverse_sbox(x)
    x7 = f.vmul(f.vmul(f.vmul(root, root), root), f.vmul(f.vmul(root, root), f.vmul(root, root)))
    assert np.array_equal(x7, x)                           # (x^(1/7))^7 == x
    assert np.array_equal(perm.inverse_sbox(f.vmul(f.vmul(f.vmul(x, x), x), f.vmul(f.vmul(x, x),
                                                                                       f.vmul(x, x)))), x)
    assert [int(v) for v in root[:40]] == [pow(int(v), INV_ALPHA, P) for v in x[:40]]
    assert ALPHA * INV_ALPHA % (P - 1) == 1


def test_the_inverse_sbox_chain_is_winterfells_72_multiplies():
    assert run_chain(INV_SBOX_CHAIN, 1, lambda e: 2 * e, lambda a, b: a + b) == INV_ALPHA
    # the chain on Python ints, against pow
    for v in (3, P - 1, 2**40 + 5):
        assert run_chain(INV_SBOX_CHAIN, v, lambda a: a * a % P, lambda a, b: a * b % P) == pow(v, INV_ALPHA, P)
    # apply_inv_sbox: 2 squarings, exp_acc 3, 6, 12, 6, 31 (M squarings + 1 each), then 4 + 3
    assert chain_multiplies(INV_SBOX_CHAIN) == 2 + (4 + 7 + 13 + 7 + 32) + 4 + 3 == 72
    assert format(INV_ALPHA, "b") == "1001001001001001001001001001000110110110110110110110110110110111"


def test_structure_and_general_multiplies(perm):
    assert isinstance(perm, RescuePrime64) and perm.name == "rp64-256"
    assert perm.field.p == P and perm.width == 12
    s = perm.structure
    assert (s.rounds, s.sbox_degree, s.inverse_sbox, s.inverse_sbox_multiplies) == (7, 7, True, 72)
    assert (s.full_rounds, s.partial_rounds) == (0, 0)
    assert perm.general_multiplies == 7 * 12 * (4 + 72) == 6384


def test_batches_of_any_leading_shape_equal_one_state_at_a_time(perm):
    rng = np.random.default_rng(29)
    states = rng.integers(0, P, size=(3, 1, 2, 12), dtype=np.uint64)
    keep = states.copy()
    out = perm(states)
    assert out.shape == (3, 1, 2, 12) and out.dtype == GOLDILOCKS_PLONKY2.dtype
    assert np.array_equal(states, keep)
    for idx in np.ndindex(3, 1, 2):
        assert out[idx].tolist() == slow_rescue(states[idx].tolist())
    assert perm.permute(np.zeros((0, 12), dtype=np.uint64)).shape == (0, 12)


def test_bad_states_are_errors(perm):
    with pytest.raises(ValueError, match="12 elements"):
        perm.permute(np.zeros((2, 8), dtype=np.uint64))
    with pytest.raises(ValueError):
        perm.permute([0] * 11 + [P])
    with pytest.raises(TypeError):
        perm.permute("0" * 12)
