"""Node compressions: two digests to one, for every pair of a tree layer at once.

- :class:`TruncatedPermutation` (Plonky3 ``symmetric/src/compression.rs``, N = 2): the state is
  ``[left | right | 0 ...]``, permuted, the first ``chunk`` elements kept. plonky2's ``compress``
  (``hash/hashing.rs``) is the same construction with chunk 4 in a width-12 state: ``[x | y | 0 0 0 0]``,
  permute, keep 4.
- :class:`Rp64Merge` (Winterfell ``Rp64_256::merge``): ``state[4 .. 12] = [left | right]``, ``state[0] = 8``
  (the element count, as ``hash_elements`` of the 8 elements would set it), permute, keep ``state[4 .. 8]``.

``compress(left, right)`` takes two (n, chunk) uint64 arrays of canonical values, returns (n, chunk).
"""

from __future__ import annotations

import numpy as np

from ..hash.permutation import Permutation

__all__ = ["TruncatedPermutation", "Rp64Merge"]


class TruncatedPermutation:
    """Plonky3 ``TruncatedPermutation<P, 2, CHUNK, WIDTH>`` (and plonky2's ``compress``)."""

    def __init__(self, perm: Permutation, chunk: int, width: int, arity: int = 2):
        if perm.width != width:
            raise ValueError(f"width: the permutation {perm.name} has width {perm.width}, not {width}")
        if arity != 2 or 2 * chunk > width:
            raise ValueError(f"arity, chunk: this model compresses 2 chunks of {chunk} in width {width}")
        self.perm, self.digest, self.width = perm, chunk, width

    def compress(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        state = np.zeros((left.shape[0], self.width), dtype=np.uint64)
        state[:, :self.digest] = left
        state[:, self.digest:2 * self.digest] = right
        out = self.perm.permute(state)
        return out[:, :self.digest].astype(np.uint64)

    def __repr__(self) -> str:
        return f"TruncatedPermutation<{self.perm.name}, 2, {self.digest}, {self.width}>"


class Rp64Merge:
    """Winterfell ``Rp64_256::merge`` over the rp64-256 permutation."""

    def __init__(self, perm: Permutation):
        if perm.width != 12:
            raise ValueError(f"perm: Rp64_256 needs a width-12 permutation, got {perm.name} ({perm.width})")
        self.perm, self.digest = perm, 4

    def compress(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        state = np.zeros((left.shape[0], 12), dtype=np.uint64)
        state[:, 0] = 8
        state[:, 4:8] = left
        state[:, 8:12] = right
        out = self.perm.permute(state)
        return out[:, 4:8].astype(np.uint64)

    def __repr__(self) -> str:
        return f"Rp64_256::merge<{self.perm.name}>"
