"""The plain binary Merkle trees of plonky2 and Winterfell: one height, a power of two, no injection.

A leaf is the hash of row i of every matrix, concatenated in insertion order (plonky2's ``MerkleTree`` and
Winterfell's ``MerkleTree`` take one list of leaves: a prover's batch of polynomials is one matrix whose
rows are the leaves; several equal-height matrices here are the columns of that one matrix). Node
``C(layer[2i], layer[2i + 1])``; the sibling of leaf/node j at level k is ``layers[k][j ^ 1]``.

- :class:`Plonky2MerkleTree` (plonky2 ``hash/merkle_tree.rs``, ``merkle_proofs.rs``): any power-of-two
  number of rows (1 included), ``cap_height <= log2(rows)`` (``MerkleTree::new`` asserts it); the cap is the
  layer ``cap_height`` below the root, ``2^cap_height`` digests in order; a proof stops below it and the
  verifier compares with ``cap[index >> levels]``.
- :class:`WinterfellMerkleTree` (Winterfell ``crypto/src/merkle/mod.rs``): at least 2 rows, a power of two
  (``TooFewLeaves``, ``NumberOfLeavesNotPowerOfTwo``); ``nodes[1]`` is the root; no cap. Winterfell's
  ``prove`` returns the leaf digest and a path whose first entry is the sibling leaf digest: the sibling path
  here is the same list.
"""

from __future__ import annotations

import numpy as np

from .errors import CapMismatch, EmptyBatch, IndexOutOfBounds, UnsupportedShape, WrongBatchSize, WrongHeight, WrongWidth
from .layers import compress_pairs

__all__ = ["Plonky2MerkleTree", "WinterfellMerkleTree"]


class _PowerOfTwoTree:
    reference = ""
    min_rows = 1
    caps = True

    def __init__(self, hasher, compressor):
        if hasher.digest != compressor.digest:
            raise ValueError(f"hasher, compressor: digests of {hasher.digest} and {compressor.digest} elements")
        self.hasher, self.compressor, self.digest = hasher, compressor, hasher.digest

    def check_heights(self, heights, cap_height: int = 0) -> int:
        heights = list(heights)
        if not heights:
            raise EmptyBatch("matrices: no matrix to commit to")
        rows = heights[0]
        for i, h in enumerate(heights):
            if h != rows:
                raise UnsupportedShape(f"matrices[{i}]: height {h}, matrices[0] has {rows}; {self.reference} "
                                       "commits one height (its leaves are the rows of one matrix)")
        if rows < self.min_rows or rows & (rows - 1):
            raise UnsupportedShape(f"matrices: {rows} rows; {self.reference} needs a power of two"
                                   f"{' of at least 2' if self.min_rows > 1 else ''}")
        self.check_cap_height(rows, cap_height)
        return rows

    def check_cap_height(self, rows: int, cap_height: int) -> None:
        log_rows = rows.bit_length() - 1
        if not self.caps and cap_height:
            raise UnsupportedShape(f"cap_height: {self.reference} commits to the root (cap_height 0), "
                                   f"got {cap_height}")
        if cap_height > log_rows:
            raise UnsupportedShape(f"cap_height: {cap_height} should be at most log2(rows) = {log_rows}")

    def build(self, matrices, cap_height: int = 0) -> list[np.ndarray]:
        """The digest layers from the leaves' up to the cap's (2^cap_height digests)."""
        rows = self.check_heights([m.shape[0] for m in matrices], cap_height)
        layers = [self.hasher.hash_rows(np.concatenate(matrices, axis=1))]
        while layers[-1].shape[0] > 1 << cap_height:
            layers.append(compress_pairs(self.compressor, layers[-1]))
        assert layers[-1].shape[0] == 1 << cap_height and layers[0].shape[0] == rows
        return layers

    @staticmethod
    def cap(layers, cap_height: int) -> np.ndarray:
        return layers[-1].copy()

    def open(self, matrices, layers, index: int, cap_height: int):
        rows = matrices[0].shape[0]
        if not 0 <= index < rows:
            raise IndexOutOfBounds(f"indices: index {index} out of bounds for {rows} rows")
        levels = len(layers) - 1
        siblings = np.array([layers[k][(index >> k) ^ 1] for k in range(levels)], dtype=np.uint64)
        return [m[index].copy() for m in matrices], siblings.reshape(levels, self.digest)

    def verify(self, cap, dimensions, index: int, rows, siblings, cap_height: int) -> None:
        if len(dimensions) != len(rows):
            raise WrongBatchSize(f"opening: {len(rows)} rows for {len(dimensions)} matrices")
        height = self.check_heights([d[0] for d in dimensions], cap_height)
        levels = (height.bit_length() - 1) - cap_height
        if siblings.shape[0] != levels:
            raise WrongHeight(f"opening: expected {levels} siblings, got {siblings.shape[0]}")
        for i, ((_, width), row) in enumerate(zip(dimensions, rows)):
            if row.shape[0] != width:
                raise WrongWidth(f"opening: row of matrix {i} has {row.shape[0]} values, its width is {width}")
        if not 0 <= index < height:
            raise IndexOutOfBounds(f"index: {index} out of bounds for {height} rows")
        digest = self.hasher.hash_rows(np.concatenate([r.reshape(1, -1) for r in rows], axis=1))
        for k in range(levels):
            sibling = siblings[k:k + 1]
            pair = (sibling, digest) if (index >> k) & 1 else (digest, sibling)
            digest = self.compressor.compress(*pair)
        cap_index = index >> levels
        if cap_index >= cap.shape[0] or not np.array_equal(cap[cap_index], digest[0]):
            raise CapMismatch(f"opening: index {index}'s digest is not entry {cap_index} of the commitment")


class Plonky2MerkleTree(_PowerOfTwoTree):
    """plonky2 ``MerkleTree<F, PoseidonHash>`` with ``cap_height``."""
    reference = "plonky2's MerkleTree"


class WinterfellMerkleTree(_PowerOfTwoTree):
    """Winterfell ``MerkleTree<Rp64_256>`` (root only)."""
    reference = "Winterfell's MerkleTree"
    min_rows = 2
    caps = False
