"""Leaf hashes: the sponges the three provers hash a row (or several matrices' rows, concatenated) with.

Each hashes every row of a (n, L) uint64 array of canonical values at once (the states are (n, width),
one permutation call per absorbed block for all rows) and returns (n, digest) uint64 digests.

- :class:`PaddingFreeSponge` (Plonky3 ``symmetric/src/sponge.rs``; plonky2 ``hash_n_to_m_no_pad`` is the same
  for a non-empty input): overwrite mode, rate first. The state starts at zero; each block of ``rate``
  elements overwrites ``state[0 .. rate]`` and the state is permuted; a final partial block overwrites only
  its first positions (the rest keep the previous permutation's output) and is permuted too; a length that is
  a multiple of the rate adds no extra permutation; the digest is ``state[0 .. out]``. An empty input is
  never permuted: its digest is all zero.
- :class:`HashOrNoop` (plonky2 ``Hasher::hash_or_noop``): an input of at most ``digest`` elements is its
  own digest, zero-padded; a longer one goes through the sponge.
- :class:`Rp64Sponge` (Winterfell ``Rp64_256::hash_elements``): capacity state[0 .. 4], rate state[4 .. 12].
  ``state[0]`` starts at the element count; elements are *added* into the rate, a permutation after each
  full rate and one after a final partial one; the digest is ``state[4 .. 8]``. Empty: all zero.
"""

from __future__ import annotations

import numpy as np

from ..hash.permutation import Permutation

__all__ = ["PaddingFreeSponge", "HashOrNoop", "Rp64Sponge"]


def _permute(perm: Permutation, states: np.ndarray) -> np.ndarray:
    return perm.permute(states).astype(np.uint64, copy=False)


class PaddingFreeSponge:
    """Plonky3 ``PaddingFreeSponge<P, WIDTH, RATE, OUT>`` over a model permutation."""

    def __init__(self, perm: Permutation, width: int, rate: int, out: int):
        if perm.width != width:
            raise ValueError(f"width: the permutation {perm.name} has width {perm.width}, not {width}")
        if not 0 < rate < width or not 0 < out <= width:
            raise ValueError(f"rate, out: need 0 < rate < width and 0 < out <= width, got {rate}, {out}")
        self.perm, self.width, self.rate, self.digest = perm, width, rate, out

    def hash_rows(self, rows: np.ndarray) -> np.ndarray:
        n, length = rows.shape
        state = np.zeros((n, self.width), dtype=np.uint64)
        for start in range(0, length, self.rate):
            block = rows[:, start:start + self.rate]
            state[:, :block.shape[1]] = block
            state = _permute(self.perm, state)
        return state[:, :self.digest].copy()

    def __repr__(self) -> str:
        return f"PaddingFreeSponge<{self.perm.name}, {self.width}, {self.rate}, {self.digest}>"


class HashOrNoop:
    """plonky2 ``hash_or_noop``: inputs of at most ``digest`` elements zero-padded, longer ones hashed."""

    def __init__(self, sponge: PaddingFreeSponge):
        self.sponge, self.digest = sponge, sponge.digest

    def hash_rows(self, rows: np.ndarray) -> np.ndarray:
        n, length = rows.shape
        if length <= self.digest:
            out = np.zeros((n, self.digest), dtype=np.uint64)
            out[:, :length] = rows
            return out
        return self.sponge.hash_rows(rows)

    def __repr__(self) -> str:
        return f"hash_or_noop({self.sponge!r})"


class Rp64Sponge:
    """Winterfell ``Rp64_256::hash_elements`` over the rp64-256 permutation (width 12, rate 4 .. 12)."""

    CAPACITY, RATE_START, RATE, DIGEST_START = 4, 4, 8, 4

    def __init__(self, perm: Permutation):
        if perm.width != 12:
            raise ValueError(f"perm: Rp64_256 needs a width-12 permutation, got {perm.name} ({perm.width})")
        self.perm, self.width, self.digest = perm, 12, 4

    def hash_rows(self, rows: np.ndarray) -> np.ndarray:
        n, length = rows.shape
        field = self.perm.field
        state = np.zeros((n, self.width), dtype=np.uint64)
        state[:, 0] = field.canon(length)
        for start in range(0, length, self.RATE):
            block = rows[:, start:start + self.RATE]
            lanes = slice(self.RATE_START, self.RATE_START + block.shape[1])
            state[:, lanes] = field.vadd(state[:, lanes], block)
            state = _permute(self.perm, state)
        return state[:, self.DIGEST_START:self.DIGEST_START + self.digest].copy()

    def __repr__(self) -> str:
        return f"Rp64_256::hash_elements<{self.perm.name}>"
