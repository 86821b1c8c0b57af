"""The commitment schemes by name: which prover, at which pinned version, with which sponge.

- ``plonky3-babybear-16``: leaves ``PaddingFreeSponge<poseidon2-babybear-16, 16, 8, 8>``, nodes
  ``TruncatedPermutation<poseidon2-babybear-16, 2, 8, 16>``, digests 8 x uint32;
- ``plonky3-babybear-24``: leaves ``PaddingFreeSponge<poseidon2-babybear-24, 24, 16, 8>``, nodes as -16's;
- ``plonky3-koalabear-16``, ``plonky3-koalabear-24``: the same over KoalaBear;
- ``plonky3-goldilocks``: leaves ``PaddingFreeSponge<poseidon2-goldilocks-8, 8, 4, 4>``, nodes
  ``TruncatedPermutation<poseidon2-goldilocks-8, 2, 4, 8>``, digests 4 x uint64;
- ``plonky2``: leaves ``hash_or_noop`` / ``hash_n_to_m_no_pad`` over poseidon-goldilocks-12 (rate 8), nodes
  ``compress`` (the same permutation), digests 4 x uint64, caps of 2^cap_height digests;
- ``winterfell-rp64``: leaves ``Rp64_256::hash_elements``, nodes ``Rp64_256::merge`` (rp64-256), 4 x uint64.

Plonky3's trees are ``MerkleTreeMmcs`` (:mod:`.mmcs`) over its default permutations
(``default_<field>_poseidon2_<width>()``, hw/model/hash/poseidon2.py); the 16-wide leaf sponge is the one
Plonky3's own tests and SP1 use, the 24-wide one Plonky3's examples (``examples/src/types.rs``), Goldilocks
the width-8 configuration of ``keccak-air/examples/prove_goldilocks_poseidon2.rs``. plonky2's and
Winterfell's trees are :mod:`.pow2_tree`'s.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from .. import field as F
from ..hash import permutation
from .compression import Rp64Merge, TruncatedPermutation
from .mmcs import MerkleTreeMmcs
from .pow2_tree import Plonky2MerkleTree, WinterfellMerkleTree
from .sponge import HashOrNoop, PaddingFreeSponge, Rp64Sponge

__all__ = ["Scheme", "SCHEMES", "SCHEME_NAMES", "scheme", "PLONKY3_PIN", "PLONKY2_PIN", "WINTERFELL_PIN"]


@dataclass(frozen=True)
class Pin:
    """A reference's exact version: the repository, its tag and the commit the tag names."""
    repository: str
    tag: str
    commit: str

    def __str__(self) -> str:
        return f"{self.repository} {self.tag} ({self.commit})"


PLONKY3_PIN = Pin("https://github.com/Plonky3/Plonky3", "v0.6.0", "109e95c17070f914b694e628580cb0a620bd26e6")
PLONKY2_PIN = Pin("https://github.com/0xPolygonZero/plonky2", "v1.1.0", "82791c4809d6275682c34b926390ecdbdc2a5297")
WINTERFELL_PIN = Pin("https://github.com/facebook/winterfell", "v0.13.1", "2f78ee9bf667a561bdfcdfa68668d0f9b18b8315")


@dataclass(frozen=True)
class Scheme:
    """One named commitment scheme. ``tree`` builds (once) the tree object that commits, opens and verifies.

    field:     the preset (hw/model/field.py) whose values the rows hold
    lde_shift: the coset shift of the LDE the prover commits (its field's generator for Plonky3)
    bit_reversed: whether the prover commits the LDE's rows in bit-reversed order
    """
    name: str
    field: str
    pin: Pin
    leaf: str
    node: str
    permutations: tuple[str, ...]
    lde_shift: int
    bit_reversed: bool
    build: Callable[[], object]
    default_cap_height: int = 0

    @property
    def tree(self):
        return _tree(self.name)

    @property
    def digest(self) -> int:
        return self.tree.digest

    @property
    def dtype(self):
        return F.get(self.field).dtype


def _plonky3(leaf_perm: str, node_perm: str, width: int, rate: int, out: int):
    def build():
        node = permutation(node_perm)
        return MerkleTreeMmcs(PaddingFreeSponge(permutation(leaf_perm), width, rate, out),
                              TruncatedPermutation(node, out, node.width))
    return build


def _plonky2():
    perm = permutation("poseidon-goldilocks-12")
    return Plonky2MerkleTree(HashOrNoop(PaddingFreeSponge(perm, 12, 8, 4)), TruncatedPermutation(perm, 4, 12))


def _winterfell():
    perm = permutation("rp64-256")
    return WinterfellMerkleTree(Rp64Sponge(perm), Rp64Merge(perm))


def _p3(name, field, leaf_perm, node_perm, width, rate, out) -> Scheme:
    return Scheme(name, field, PLONKY3_PIN, f"PaddingFreeSponge<{leaf_perm}, {width}, {rate}, {out}>",
                  f"TruncatedPermutation<{node_perm}, 2, {out}, {2 * out}>", (leaf_perm, node_perm),
                  F.get(field).generator, True, _plonky3(leaf_perm, node_perm, width, rate, out))


#: Every scheme by name.
SCHEMES: dict[str, Scheme] = {s.name: s for s in (
    _p3("plonky3-babybear-16", "babybear", "poseidon2-babybear-16", "poseidon2-babybear-16", 16, 8, 8),
    _p3("plonky3-babybear-24", "babybear", "poseidon2-babybear-24", "poseidon2-babybear-16", 24, 16, 8),
    _p3("plonky3-koalabear-16", "koalabear", "poseidon2-koalabear-16", "poseidon2-koalabear-16", 16, 8, 8),
    _p3("plonky3-koalabear-24", "koalabear", "poseidon2-koalabear-24", "poseidon2-koalabear-16", 24, 16, 8),
    _p3("plonky3-goldilocks", "goldilocks", "poseidon2-goldilocks-8", "poseidon2-goldilocks-8", 8, 4, 4),
    Scheme("plonky2", "goldilocks-plonky2", PLONKY2_PIN, "hash_or_noop(hash_n_to_m_no_pad<poseidon-goldilocks-12>)",
           "compress<poseidon-goldilocks-12>", ("poseidon-goldilocks-12",), 14293326489335486720, True, _plonky2),
    Scheme("winterfell-rp64", "goldilocks-plonky2", WINTERFELL_PIN, "Rp64_256::hash_elements",
           "Rp64_256::merge", ("rp64-256",), 7, False, _winterfell),
)}
SCHEME_NAMES = tuple(SCHEMES)


@lru_cache(maxsize=None)
def _tree(name: str):
    return SCHEMES[name].build()


def scheme(name) -> Scheme:
    """The scheme called ``name`` (a Scheme as it is); unknown names are a ValueError listing the valid ones."""
    if isinstance(name, Scheme):
        return name
    if not isinstance(name, str):
        raise TypeError(f"scheme: expected a scheme name ({', '.join(SCHEME_NAMES)}), got {type(name).__name__}")
    if name not in SCHEMES:
        close = difflib.get_close_matches(name, SCHEME_NAMES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"scheme: unknown scheme {name!r} (valid: {', '.join(SCHEME_NAMES)}){hint}")
    return SCHEMES[name]
