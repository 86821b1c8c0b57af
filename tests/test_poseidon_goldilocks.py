"""plonky2's Poseidon over Goldilocks, width 12 (hw/model/hash/poseidon.py), against plonky2's own
known-answer vectors and a plain slow implementation written here from the definition (Python ints, one
state at a time).

Known-answer vectors: plonky2 (https://github.com/0xPolygonZero/plonky2), tag v1.1.0, commit
82791c4809d6275682c34b926390ecdbdc2a5297, plonky2/src/hash/poseidon_goldilocks.rs ``tests::test_vectors``
(quoted in tests/hash_vectors.py, which names the same source).

The definition (plonky2/src/hash/poseidon.rs ``poseidon_naive``): 4 full rounds, 22 partial rounds, 4 full
rounds; every round adds its 12 constants, applies x^7 (to every element in a full round, to element 0 in a
partial one) and multiplies by the MDS matrix C + D, C circulant with first row MDS_MATRIX_CIRC
(``mds_row_shf``: row r is sum_i CIRC[i] v[(i + r) % 12]) and D = diag(MDS_MATRIX_DIAG).
"""

import numpy as np
import pytest

from hash_vectors import P_MINUS_1, PLONKY2_POSEIDON_GOLDILOCKS_12, PLONKY2_SOURCE
from nantucket.hw.model.field import GOLDILOCKS, GOLDILOCKS_PLONKY2
from nantucket.hw.model.hash import permutation
from nantucket.hw.model.hash import poseidon_constants as C
from nantucket.hw.model.hash.poseidon import (PLONKY2_COMMIT, PLONKY2_TAG, PoseidonGoldilocks, by_blocks,
                                              small_matrix_apply)

P = 2**64 - 2**32 + 1
#: plonky2 v1.1.0 poseidon_goldilocks.rs, quoted
CIRC = [17, 15, 41, 16, 2, 28, 13, 13, 39, 18, 34, 20]
DIAG = [8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]


def slow_poseidon(state):
    """plonky2's poseidon_naive on one state of Python ints."""
    s = [int(v) for v in state]
    rc = C.ALL_ROUND_CONSTANTS

    def mds(v):
        return [(sum(CIRC[i] * v[(i + r) % 12] for i in range(12)) + DIAG[r] * v[r]) % P for r in range(12)]

    for rnd in range(30):
        s = [(s[i] + rc[12 * rnd + i]) % P for i in range(12)]
        if 4 <= rnd < 26:
            s[0] = pow(s[0], 7, P)
        else:
            s = [pow(v, 7, P) for v in s]
        s = mds(s)
    return s


@pytest.fixture(scope="module")
def perm():
    return permutation("poseidon-goldilocks-12")


def _edge_states():
    rng = np.random.default_rng(7)
    edges = [[0] * 12, [P - 1] * 12, [1] * 12, [P - 1, 0] * 6, [0] * 11 + [P - 1], [P - 1] + [0] * 11,
             [2**32 - 1, 2**32, 2**63, P - 2, 2**64 - 2**32, 1, 0, P - 1, 2**32 + 1, 7, 2**31, 12345]]
    rand = rng.integers(0, P, size=(10, 12), dtype=np.uint64).tolist()
    return edges + rand


def test_the_pin_is_the_one_the_constants_and_vectors_name():
    assert (PLONKY2_TAG, PLONKY2_COMMIT) == ("v1.1.0", "82791c4809d6275682c34b926390ecdbdc2a5297")
    assert (PLONKY2_SOURCE["tag"], PLONKY2_SOURCE["commit"]) == (PLONKY2_TAG, PLONKY2_COMMIT)
    assert list(C.MDS_MATRIX_CIRC) == CIRC and list(C.MDS_MATRIX_DIAG) == DIAG
    assert len(C.ALL_ROUND_CONSTANTS) == 360 and max(C.ALL_ROUND_CONSTANTS) < P
    # poseidon.rs: "all round constants being in 0..0xfffeeac900011537"
    assert max(C.ALL_ROUND_CONSTANTS) < 0xfffeeac900011537


@pytest.mark.parametrize("index", range(len(PLONKY2_POSEIDON_GOLDILOCKS_12)))
def test_plonky2_known_answers(perm, index):
    state, expected = PLONKY2_POSEIDON_GOLDILOCKS_12[index]
    assert [int(v) for v in perm.permute(list(state))] == list(expected)
    assert [int(v) for v in perm.permute_fast(list(state))] == list(expected)
    assert slow_poseidon(state) == list(expected)          # the slow reference is right too


def test_known_answer_inputs_are_the_documented_ones():
    inputs = [list(s) for s, _ in PLONKY2_POSEIDON_GOLDILOCKS_12]
    assert inputs[0] == [0] * 12 and inputs[1] == list(range(12)) and inputs[2] == [P_MINUS_1] * 12


def test_equals_the_slow_reference_on_edge_and_random_states(perm):
    states = _edge_states()
    out = perm.permute(np.array(states, dtype=np.uint64))
    assert out.dtype == np.uint64
    for s, o in zip(states, out.tolist()):
        assert o == slow_poseidon(s), s


def test_fast_partial_rounds_equal_the_plain_form(perm):
    rng = np.random.default_rng(11)
    states = np.concatenate([np.array(_edge_states(), dtype=np.uint64),
                             rng.integers(0, P, size=(300, 12), dtype=np.uint64)])
    assert np.array_equal(perm.permute_fast(states), perm.permute(states))


def test_batches_of_any_leading_shape_equal_one_state_at_a_time(perm):
    rng = np.random.default_rng(3)
    states = rng.integers(0, P, size=(2, 3, 12), dtype=np.uint64)
    keep = states.copy()
    out = perm(states)
    assert out.shape == (2, 3, 12) and out.dtype == GOLDILOCKS_PLONKY2.dtype
    assert np.array_equal(states, keep)                    # the input is not modified
    for idx in np.ndindex(2, 3):
        assert out[idx].tolist() == slow_poseidon(states[idx].tolist())
    assert perm.permute(np.zeros((0, 12), dtype=np.uint64)).shape == (0, 12)
    assert perm.permute_fast(np.zeros((4, 0, 12), dtype=np.uint64)).shape == (4, 0, 12)


def test_a_batch_longer_than_a_block_is_cut_correctly(perm):
    rng = np.random.default_rng(5)
    states = rng.integers(0, P, size=(7, 12), dtype=np.uint64)
    whole = perm.permute(states)
    assert np.array_equal(by_blocks(perm._permute_block, states, block=3), whole)
    assert np.array_equal(np.concatenate([perm.permute(states[i:i + 1]) for i in range(7)]), whole)


def test_bad_states_are_errors(perm):
    with pytest.raises(ValueError, match="12 elements"):
        perm.permute([0] * 11)
    with pytest.raises(ValueError):
        perm.permute([P] + [0] * 11)                       # not canonical
    with pytest.raises(ValueError):
        perm.permute_fast([P] + [0] * 11)
    with pytest.raises(TypeError):
        perm.permute(np.zeros(12, dtype=np.float64))


def test_structure_and_general_multiplies(perm):
    assert isinstance(perm, PoseidonGoldilocks) and perm.name == "poseidon-goldilocks-12"
    assert perm.field.p == P and perm.width == 12
    s = perm.structure
    assert (s.full_rounds, s.partial_rounds, s.sbox_degree, s.inverse_sbox) == (8, 22, 7, False)
    # plain form: (8 x 12 + 22) S-boxes of 4 multiplies (x^2, x^3, x^4, x^7); the MDS takes none
    assert perm.general_multiplies == (8 * 12 + 22) * 4 == 472
    assert max(CIRC) + max(DIAG) < 64                      # why the MDS is shifts and adds
    # fast form: the 11 x 11 initial matrix and 11 + 11 constants per partial round on top
    assert perm.fast_general_multiplies == 472 + 11 * 11 + 22 * 22 == 1077
    assert len(C.FAST_PARTIAL_ROUND_INITIAL_MATRIX) == 11 and len(C.FAST_PARTIAL_ROUND_VS) == 22


@pytest.mark.parametrize("field", [GOLDILOCKS, GOLDILOCKS_PLONKY2])
def test_small_matrix_apply_equals_integer_matrix_product(field):
    rng = np.random.default_rng(9)
    m = rng.integers(0, 2**28, size=(5, 12), dtype=np.uint64)
    m[0] = [2**32 - 1] + [0] * 11                          # a row at the limit
    m[1, :] = (2**32 - 1) // 12
    x = rng.integers(0, P, size=(12, 6), dtype=np.uint64)
    x[:, 0] = P - 1
    x[:, 1] = 0
    x[:, 2] = 2**32 - 1
    got = small_matrix_apply(field, m, x)
    want = [[sum(int(m[r, j]) * int(x[j, c]) for j in range(12)) % P for c in range(6)] for r in range(5)]
    assert got.tolist() == want


def test_small_matrix_apply_refuses_what_would_overflow():
    x = np.zeros((12, 1), dtype=np.uint64)
    with pytest.raises(ValueError, match="2\\^32"):
        small_matrix_apply(GOLDILOCKS, np.full((1, 12), 2**30, dtype=np.uint64), x)
    with pytest.raises(ValueError, match="shape"):
        small_matrix_apply(GOLDILOCKS, np.ones((12, 11), dtype=np.uint64), x)
    from nantucket.hw.model.field import BABYBEAR
    with pytest.raises(ValueError, match="64-bit"):
        small_matrix_apply(BABYBEAR, np.ones((12, 12), dtype=np.uint64), x)
