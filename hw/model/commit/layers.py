"""Arithmetic on tree shapes shared by the trees, and one layer's compression.

The names follow the references: ``next_power_of_two`` as Rust's ``usize::next_power_of_two`` (1 for 0),
``log2_ceil`` as ``p3_util::log2_ceil_usize``, ``padded_len`` as Plonky3 ``merkle_tree.rs``'s (N = 2).
"""

from __future__ import annotations

import numpy as np

__all__ = ["next_power_of_two", "log2_ceil", "padded_len", "compress_pairs"]


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def log2_ceil(n: int) -> int:
    return 0 if n <= 1 else (n - 1).bit_length()


def padded_len(raw_len: int, arity: int = 2) -> int:
    """Plonky3's layer length: a root (<= 1) as it is, else up to a multiple of the arity (at least it)."""
    if raw_len <= 1:
        return raw_len
    if raw_len >= arity:
        return -(-raw_len // arity) * arity
    return arity


def compress_pairs(compressor, layer: np.ndarray) -> np.ndarray:
    """C(layer[2i], layer[2i + 1]) for every i below len(layer) // 2, in one call of the compressor
    (an odd last digest is dropped, as Plonky3's ``compress`` does)."""
    half = layer.shape[0] // 2
    return compressor.compress(layer[0:2 * half:2], layer[1:2 * half:2])
