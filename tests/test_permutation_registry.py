"""The permutation interface and registry (hw/model/hash/permutation.py): names, caching, errors, the
addition-chain S-box cost, and the interface every registered permutation keeps (shapes, dtypes, inputs)."""

import numpy as np
import pytest

from nantucket.hw.model.field import BABYBEAR, GOLDILOCKS
from nantucket.hw.model.hash import PERMUTATIONS, Permutation, RoundStructure, permutation, register
from nantucket.hw.model.hash.permutation import addition_chain_length, permutations_per_second

POSEIDON2_NAMES = ["poseidon2-babybear-16", "poseidon2-babybear-24", "poseidon2-koalabear-16",
                   "poseidon2-koalabear-24", "poseidon2-goldilocks-8", "poseidon2-goldilocks-12"]

#: l(n), the length of a shortest addition chain, n = 1 .. 20 (OEIS A003313)
A003313 = [0, 1, 2, 2, 3, 3, 4, 3, 4, 4, 5, 4, 5, 5, 5, 4, 5, 5, 6, 5]


def test_poseidon2_names_are_registered():
    assert set(POSEIDON2_NAMES) <= set(PERMUTATIONS)


def test_permutation_is_cached_and_named():
    for name in PERMUTATIONS:
        perm = permutation(name)
        assert perm is permutation(name)
        assert isinstance(perm, Permutation) and perm.name == name


def test_unknown_name_lists_the_valid_ones_with_a_hint():
    with pytest.raises(ValueError) as err:
        permutation("poseidon2-babybear-61")
    message = str(err.value)
    assert "poseidon2-babybear-16" in message and "poseidon2-goldilocks-12" in message
    assert "did you mean 'poseidon2-babybear-16'" in message
    with pytest.raises(TypeError):
        permutation(16)


def test_a_name_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="registered twice"):
        register("poseidon2-babybear-16", lambda: None)


def test_addition_chain_lengths():
    assert [addition_chain_length(n) for n in range(1, 21)] == A003313
    with pytest.raises(ValueError):
        addition_chain_length(0)


def test_round_structure_counts():
    s = RoundStructure(full_rounds=8, partial_rounds=13, sbox_degree=7)
    assert s.sbox_multiplies == 4
    assert s.sboxes(16) == 8 * 16 + 13
    assert s.sbox_general_multiplies(16) == (8 * 16 + 13) * 4
    assert RoundStructure(8, 20, 3).sbox_multiplies == 2
    # Rescue-style: every round an x^d layer and an x^(1/d) layer on all elements
    r = RoundStructure(rounds=7, sbox_degree=7, inverse_sbox=True, inverse_sbox_multiplies=72)
    assert r.sboxes(12) == r.inverse_sboxes(12) == 84
    assert r.sbox_general_multiplies(12) == 84 * 4 + 84 * 72
    for bad in (dict(sbox_degree=1), dict(full_rounds=-1), dict(inverse_sbox_multiplies=3)):
        with pytest.raises(ValueError):
            RoundStructure(**bad)


class _Reverse(Permutation):
    """A stand-in that reverses the state: checks the base class's conversions, not a hash."""
    name, field, width = "reverse-4", BABYBEAR, 4
    structure = RoundStructure(full_rounds=1, sbox_degree=3)
    linear_multiplies = 5

    def _permute(self, states):
        assert states.dtype == np.uint64 and states.ndim == 2 and states.shape[1] == 4
        return states[:, ::-1].copy()


def test_base_class_conversions():
    t = _Reverse()
    assert t.general_multiplies == 4 * 2 + 5
    assert t.permute([1, 2, 3, 4]).tolist() == [4, 3, 2, 1]
    assert t.permute((1, 2, 3, 4)).dtype == np.uint32
    assert t.permute(np.array([[1, 2, 3, 4]], dtype=np.int64)).tolist() == [[4, 3, 2, 1]]
    assert t.permute([[1, 2, 3, 4], [5, 6, 7, 8]]).shape == (2, 4)
    # values of 2^63 and more stay exact (numpy alone would make floats of [2^63, 1])
    wide = _Reverse()
    wide.field = GOLDILOCKS
    assert wide.permute([GOLDILOCKS.p - 1, 2**63 + 1, 1, 0]).tolist() == [0, 1, 2**63 + 1, GOLDILOCKS.p - 1]
    assert wide.permute([[GOLDILOCKS.p - 1, 0, 0, 1]]).dtype == np.uint64
    for bad in ([1, 2, 3], [[1, 2, 3]], [[1, 2, 3, 4], [5]], [-1, 0, 0, 0], [2**64, 0, 0, 0],
                [BABYBEAR.p, 0, 0, 0]):
        with pytest.raises(ValueError):
            t.permute(bad)
    for bad in (7, [1.0, 2, 3, 4], [True, 0, 0, 0], ["1", 0, 0, 0], np.ones(4, dtype=np.float32)):
        with pytest.raises(TypeError):
            t.permute(bad)


@pytest.mark.parametrize("name", sorted(PERMUTATIONS))
def test_every_registered_permutation_keeps_the_interface(name):
    perm = permutation(name)
    assert isinstance(perm.structure, RoundStructure)
    assert isinstance(perm.general_multiplies, int) and perm.general_multiplies > 0
    p, w = perm.field.p, perm.width
    rng = np.random.default_rng(3)
    batch = rng.integers(0, p, size=(2, 3, w), dtype=np.uint64).astype(perm.field.dtype)
    out = perm.permute(batch)
    assert out.shape == (2, 3, w) and out.dtype == perm.field.dtype and (out < p).all()
    assert out[1, 2].tolist() == perm([int(v) for v in batch[1, 2]]).tolist()
    assert perm.permute(np.zeros((0, w), dtype=perm.field.dtype)).shape == (0, w)
    with pytest.raises(ValueError):
        perm.permute([p] + [0] * (w - 1))
    with pytest.raises(ValueError):
        perm.permute([0] * (w + 1))


def test_permutations_per_second():
    assert permutations_per_second("poseidon2-babybear-16", states=8, repeats=1) > 0
    assert permutations_per_second(permutation("poseidon2-koalabear-16"), states=8, repeats=2, cpu=True) > 0
    with pytest.raises(ValueError):
        permutations_per_second("poseidon2-babybear-16", states=0)
