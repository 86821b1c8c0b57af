"""Plonky3's ``MerkleTreeMmcs`` (binary, N = 2), bit-exact with ``merkle-tree/src/{merkle_tree.rs,mmcs/}``
at the tag :mod:`.schemes` pins.

Commit:

- heights must sit on the ladder ``ceil(max_height / 2^k)`` (``validate_commit_reachable_heights``):
  a height h needs ``h == ((max_height - 1) >> (log2_ceil(max_height) - log2_ceil(h))) + 1``, else
  :class:`IncompatibleHeights`; no matrix, or all of height 0, :class:`EmptyBatch`;
- matrices are stably sorted by height, tallest first; a leaf is one sponge over the concatenated row i of
  every matrix of the greatest height (in insertion order); the leaf layer is padded with all-zero digests
  to an even length (``padded_len``) unless it is the root;
- each next layer: ``C(left, right)`` per pair, and where the layer's pre-pad length ``(len / 2)`` rounds up
  to the same power of two as the next matrices' height, those matrices are injected:
  ``C(C(left, right), H(their row i))`` (their rows concatenated, in insertion order); then padded again;
- the commitment is the cap: layer ``depth - cap_height`` (``cap_height`` clamped to the depth), its first
  ``min(2^cap_height, len)`` digests (cap_height 0: the root alone).

Open: row ``index >> (log2_ceil(max_height) - log2_ceil(height))`` of every matrix (insertion order), and
the sibling ``layers[k][(index >> k) ^ 1]`` of every layer below the cap. Verify replays the same walk from
the dimensions (``verify_batch``), injecting the opened rows where their height is reached.
"""

from __future__ import annotations

import numpy as np

from .errors import (CapMismatch, EmptyBatch, IncompatibleHeights, IndexOutOfBounds, WrongBatchSize, WrongHeight,
                     WrongWidth)
from .layers import compress_pairs, log2_ceil, next_power_of_two, padded_len

__all__ = ["MerkleTreeMmcs", "reachable_max_height"]


def reachable_max_height(heights) -> int:
    """The tallest height, once every height is on its ladder (Plonky3 ``validate_commit_reachable_heights``)."""
    heights = list(heights)
    max_height = max(heights, default=0)
    if max_height <= 0:
        raise EmptyBatch("matrices: no matrix of height above 0 to commit to")
    log_max = log2_ceil(max_height)
    for i, h in enumerate(heights):
        bits = log_max - log2_ceil(h)
        expected = ((max_height - 1) >> bits) + 1
        if h != expected:
            raise IncompatibleHeights(
                f"matrices[{i}]: height {h} incompatible with tallest height {max_height}; expected "
                f"ceil({max_height} / 2^{bits}) = {expected}")
    return max_height


def _tallest_first(heights) -> list[int]:
    return sorted(range(len(heights)), key=lambda i: -heights[i])       # stable, as itertools' sorted_by_key


def _injection_groups(heights, max_height):
    """[(layer, [matrix indices])] in the order the build meets them: the matrices of each shorter height,
    at the layer whose pre-pad length rounds up to their height's power of two."""
    order = [i for i in _tallest_first(heights) if heights[i] != max_height]
    groups, curr, layer = [], padded_len(max_height), 0
    while curr > 1:
        raw = curr // 2
        curr, layer = padded_len(raw), layer + 1
        take = [i for i in order if next_power_of_two(heights[i]) == next_power_of_two(raw)]
        if take:
            groups.append((layer, [i for i in take if heights[i] == heights[take[0]]]))
            order = [i for i in order if i not in groups[-1][1]]
    return groups


class MerkleTreeMmcs:
    """``MerkleTreeMmcs<P, PW, H, C, 2, DIGEST_ELEMS>``: a hasher (``hash_rows``) and a compressor (``compress``)."""

    def __init__(self, hasher, compressor):
        if hasher.digest != compressor.digest:
            raise ValueError(f"hasher, compressor: digests of {hasher.digest} and {compressor.digest} elements")
        self.hasher, self.compressor, self.digest = hasher, compressor, hasher.digest

    def check_heights(self, heights, cap_height: int = 0) -> int:
        """The tallest height (any cap_height is clamped to the tree's depth, as ``commit`` does)."""
        return reachable_max_height(heights)

    def _hash(self, matrices, indices, rows=slice(None)) -> np.ndarray:
        return self.hasher.hash_rows(np.concatenate([matrices[i][rows] for i in indices], axis=1))

    def build(self, matrices: list[np.ndarray], cap_height: int = 0) -> list[np.ndarray]:
        """Every digest layer, the leaves' first, the root's (one digest) last."""
        heights = [m.shape[0] for m in matrices]
        max_height = reachable_max_height(heights)
        tallest = [i for i in _tallest_first(heights) if heights[i] == max_height]
        layer = np.zeros((padded_len(max_height), self.digest), dtype=np.uint64)
        layer[:max_height] = self._hash(matrices, tallest)
        layers, groups = [layer], dict(_injection_groups(heights, max_height))
        while layers[-1].shape[0] > 1:
            prev = layers[-1]
            raw = prev.shape[0] // 2
            parents = compress_pairs(self.compressor, prev)
            inject = groups.get(len(layers))
            if inject:
                h = heights[inject[0]]          # == raw on the ladder: every parent gets a row
                parents[:h] = self.compressor.compress(parents[:h], self._hash(matrices, inject))
            layer = np.zeros((padded_len(raw), self.digest), dtype=np.uint64)
            layer[:raw] = parents
            layers.append(layer)
        return layers

    @staticmethod
    def cap_layer(layers, cap_height: int) -> int:
        return len(layers) - 1 - min(cap_height, len(layers) - 1)

    def cap(self, layers, cap_height: int) -> np.ndarray:
        k = self.cap_layer(layers, cap_height)
        depth_above = len(layers) - 1 - k
        return layers[k][:min(1 << depth_above, layers[k].shape[0])].copy()

    def open(self, matrices, layers, index: int, cap_height: int):
        heights = [m.shape[0] for m in matrices]
        max_height = max(heights)
        if not 0 <= index < max_height:
            raise IndexOutOfBounds(f"indices: index {index} out of bounds for height {max_height}")
        log_max = log2_ceil(max_height)
        rows = [m[index >> (log_max - log2_ceil(m.shape[0]))].copy() for m in matrices]
        levels = self.cap_layer(layers, cap_height)
        siblings = np.array([layers[k][(index >> k) ^ 1] for k in range(levels)], dtype=np.uint64)
        return rows, siblings.reshape(levels, self.digest)

    def verify(self, cap, dimensions, index: int, rows, siblings, cap_height: int) -> None:
        if len(dimensions) != len(rows):
            raise WrongBatchSize(f"opening: {len(rows)} rows for {len(dimensions)} matrices")
        heights = [d[0] for d in dimensions]
        max_height = reachable_max_height(heights)
        total, curr = 0, padded_len(max_height)
        while curr > 1:
            total, curr = total + 1, padded_len(curr // 2)
        levels = total - min(cap_height, total)
        if siblings.shape[0] != levels:
            raise WrongHeight(f"opening: expected {levels} siblings, got {siblings.shape[0]}")
        for i, ((_, width), row) in enumerate(zip(dimensions, rows)):
            if row.shape[0] != width:
                raise WrongWidth(f"opening: row of matrix {i} has {row.shape[0]} values, its width is {width}")
        if not 0 <= index < max_height:
            raise IndexOutOfBounds(f"index: {index} out of bounds for height {max_height}")
        one = [r.reshape(1, -1) for r in rows]
        tallest = [i for i in _tallest_first(heights) if next_power_of_two(heights[i]) == next_power_of_two(max_height)]
        digest = self._hash(one, tallest)
        groups = dict(_injection_groups(heights, max_height))
        for k in range(levels):
            sibling = siblings[k:k + 1]
            pair = (sibling, digest) if (index >> k) & 1 else (digest, sibling)
            digest = self.compressor.compress(*pair)
            if k + 1 in groups:
                digest = self.compressor.compress(digest, self._hash(one, groups[k + 1]))
        cap_index = index >> levels
        if cap_index >= cap.shape[0] or not np.array_equal(cap[cap_index], digest[0]):
            raise CapMismatch(f"opening: index {index}'s digest is not entry {cap_index} of the commitment")
