"""Input vectors for tests, benchmarks and `nantucket points`."""

import numpy as np

from nantucket.hw.model import field as F

__all__ = ["KINDS", "make_points"]

KINDS = ("random", "linear", "zeros", "ones", "skewed")


def make_points(log_n: int, kind: str = "random", seed: int = 0, field="goldilocks") -> np.ndarray:
    """2^log_n canonical points of ``field`` (a name or Field; default Goldilocks) of the given kind, as
    the field's dtype (uint64, or uint32 for a 31-bit field). Goldilocks' points of a seed are those of
    every earlier version.

    random: uniform in [0, p).  linear: 1, 2, 0, 0, ... (the polynomial 1 + 2x).
    zeros / ones: constant vectors.  skewed: imitates prover witnesses: mostly zeros and ones plus a
    few hundred distinct values, each repeated many times (thousands at 2^24).
    """
    if not isinstance(log_n, int) or isinstance(log_n, bool):
        raise TypeError(f"log_n: expected an int, got {type(log_n).__name__}")
    field = F.get(field, "field")
    if not 1 <= log_n <= field.two_adicity:
        raise ValueError(f"log_n: must be in 1..{field.two_adicity} in {field.name}, got {log_n}")
    if kind not in KINDS:
        raise ValueError(f"kind: must be one of {', '.join(KINDS)}, got {kind!r}")
    return _make(log_n, kind, seed, field.p).astype(field.dtype, copy=False)


def _make(log_n: int, kind: str, seed: int, p: int) -> np.ndarray:
    n = 1 << log_n
    rng = np.random.default_rng(seed)
    if kind == "random":
        return rng.integers(0, p, n, dtype=np.uint64)
    if kind == "zeros":
        return np.zeros(n, dtype=np.uint64)
    if kind == "ones":
        return np.ones(n, dtype=np.uint64)
    if kind == "linear":
        out = np.zeros(n, dtype=np.uint64)
        out[0] = 1
        if n > 1:
            out[1] = 2
        return out
    # skewed: 45% zeros, 45% ones, 10% drawn from a pool of a few hundred values (biased towards
    # small ones and p - small, as witness columns of counters and negations are).
    pool_size = max(1, min(300, n // 32))
    pool = np.concatenate([
        rng.integers(2, 1 << 16, pool_size - pool_size // 3, dtype=np.uint64),
        np.uint64(p) - rng.integers(1, 1 << 16, pool_size // 3, dtype=np.uint64),
    ])
    rng.shuffle(pool)
    pick = rng.random(n)
    out = np.where(pick < 0.45, np.uint64(0), np.uint64(1)).astype(np.uint64)
    rare = pick >= 0.90
    out[rare] = pool[rng.integers(0, pool_size, int(rare.sum()))]
    return out
