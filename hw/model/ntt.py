"""Number Theoretic Transforms over any field of hw.model.field (docs/architecture.md, "The transform").

Forward: X[k] = sum_j x[j] * w^(j*k), w = g^((p-1)/N) for the field's generator g, natural order in and
out, no scaling. Every function takes ``field=`` (a Field or its name; default Goldilocks).
Inverse: the same with w^-1, then every output times N^-1.

Three independent implementations, so tests can check one against another:

- :func:`dft_naive`: the O(N^2) definition on Python ints (tests only; small N).
- :func:`ntt_radix2`: a plain vectorized Gentleman-Sande transform over the whole array.
- :func:`ntt`: the fast one: the four-step split of :mod:`hw.model.fourstep`, processed in
  cache-sized batches of rows on two threads. This is what the model backend runs.

Gentleman-Sande (decimation in frequency) is what the hardware implements; :func:`dif_stages` is the
stage-by-stage reference for it, including the "running twiddle" c that folds the four-step pass-1
scale into the stages (docs/architecture.md, "The four-step split and the folded pass-1 scale").
"""

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
import os

import numpy as np

from . import field as F
from .field import Field

_GL = F.GOLDILOCKS

__all__ = [
    "log2_exact", "bit_reverse_indices", "stage_twiddles", "twiddle_rom", "dif_stage", "dif_stages",
    "dft_naive", "ntt_radix2", "ntt", "intt", "RADIX2_MAX_LOG_N", "ORDERS", "transform_naive", "transform",
]

#: Input/output orders of :func:`transform`: natural ("n") or bit-reversed ("r"), input first.
ORDERS = ("nn", "nr", "rn", "rr")


def log2_exact(n: int, name: str = "n") -> int:
    """log2(n) for a power of two n >= 1, else ValueError naming the parameter."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{name}: expected an int, got {type(n).__name__}")
    if n < 1 or n & (n - 1):
        raise ValueError(f"{name}: expected a power of two, got {n}")
    return int(n).bit_length() - 1


@lru_cache(maxsize=64)
def bit_reverse_indices(k: int) -> np.ndarray:
    """rev[i] = i with its k low bits reversed (read-only array of length 2^k)."""
    rev = np.zeros(1, dtype=np.int64)
    for _ in range(k):
        rev = np.concatenate([rev * 2, rev * 2 + 1])
    rev.flags.writeable = False
    return rev


@lru_cache(maxsize=256)
def stage_twiddles(n: int, s: int, inverse: bool = False, field: Field = _GL) -> np.ndarray:
    """Twiddles of Gentleman-Sande stage s of an n-point transform: w_(2h)^j for j < h, h = n >> (s+1)."""
    field = F.get(field)
    h = n >> (s + 1)
    w = field.root_of_unity(2 * h)
    if inverse:
        w = field.inv(w)
    tw = field.powers(w, h)
    tw.flags.writeable = False
    return tw


def twiddle_rom(k: int, inverse: bool = False, field: Field = _GL) -> np.ndarray:
    """The 2^k - 1 twiddles a 2^k-point GS pipeline consumes, stage 0 first (2^(k-1), then 2^(k-2), ...).

    This is the content of the engine's single twiddle ROM, shared by all lanes and both passes.
    """
    n = 1 << k
    if k == 0:
        return np.zeros(0, dtype=np.uint64)
    field = F.get(field)
    return np.concatenate([stage_twiddles(n, s, inverse, field) for s in range(k)])


def dif_stage(x: np.ndarray, s: int, c=None, inverse: bool = False, field: Field = _GL) -> np.ndarray:
    """One Gentleman-Sande stage over the last axis of x (length n = 2^k), returning a new array.

    Pairs (a, b) at distance h = n >> (s+1) inside blocks of 2h become (a + b, (a - b) * w_(2h)^j * c^(2^s)).
    ``c`` is the running twiddle: a scalar or one value per row (shape x.shape[:-1]); None means 1.
    """
    field = F.get(field)
    x = field.as_u64(x)
    n = x.shape[-1]
    h = n >> (s + 1)
    if h < 1:
        raise ValueError(f"s: stage {s} does not exist in a {n}-point transform")
    v = x.reshape(x.shape[:-1] + (n // (2 * h), 2, h))
    a = v[..., 0, :]
    b = v[..., 1, :]
    out = np.empty_like(v)
    out[..., 0, :] = field.vadd(a, b)
    tw = stage_twiddles(n, s, inverse, field)
    if c is not None:
        c = np.asarray(c, dtype=np.uint64)
        cs = c
        for _ in range(s):
            cs = field.vmul(cs, cs)
        tw = field.vmul(tw, cs[..., None]) if cs.ndim else field.vmul(tw, cs)
        tw = tw[..., None, :] if tw.ndim > 1 else tw
    out[..., 1, :] = field.vmul(field.vsub(a, b), tw)
    return out.reshape(x.shape)


def dif_stages(x: np.ndarray, c=None, inverse: bool = False, stages=None, field: Field = _GL) -> np.ndarray:
    """Run GS stages (all k of them by default) over the last axis; output stays in DIF order.

    After all k stages, out[..., bitrev(m)] = c^m * X[m] with X the n-point NTT of the row.
    """
    x = field.as_u64(x)
    k = log2_exact(x.shape[-1], "x length")
    for s in (range(k) if stages is None else stages):
        x = dif_stage(x, s, c, inverse, field)
    return x


def dft_naive(x, inverse: bool = False, field: Field = _GL) -> list[int]:
    """The O(N^2) definition on Python ints. For tests only."""
    field = F.get(field)
    x = [int(v) % field.p for v in x]
    n = len(x)
    log2_exact(n, "len(x)")
    w = field.root_of_unity(n)
    if inverse:
        w = field.inv(w)
    out = []
    for k in range(n):
        wk = pow(w, k, field.p)
        acc, t = 0, 1
        for v in x:
            acc += v * t
            t = t * wk % field.p
        out.append(acc % field.p)
    if inverse:
        ninv = field.inv(n)
        out = [v * ninv % field.p for v in out]
    return out


def _scale_inverse(y: np.ndarray, n: int, field: Field) -> np.ndarray:
    return field.vmul(y, np.uint64(field.inv(n)))


def ntt_radix2(x: np.ndarray, inverse: bool = False, field: Field = _GL) -> np.ndarray:
    """Plain whole-array Gentleman-Sande NTT followed by a bit-reversal permutation."""
    field = F.get(field)
    x = field.vcanon(field.as_u64(x))
    k = log2_exact(x.shape[-1], "x length")
    y = dif_stages(x, inverse=inverse, field=field)[..., bit_reverse_indices(k)]
    return _scale_inverse(y, 1 << k, field) if inverse else y


# -- fast batched transform ------------------------------------------------------------------------

#: Rows are processed in batches of about this many points so the temporaries stay in cache.
_BATCH_POINTS = 1 << 15
_THREADS = min(2, os.cpu_count() or 1)


def _rows_ntt(rows: np.ndarray, inverse: bool, scale_base=None, row0: int = 0, field: Field = _GL) -> np.ndarray:
    """Natural-order NTT of every row of a 2-D array (rows independent), optionally then scaling
    element (r, m) by scale_base^((row0 + r) * m). Returns a new array."""
    n = rows.shape[1]
    k = log2_exact(n, "row length")
    y = rows
    for s in range(k):
        h = n >> (s + 1)
        v = y.reshape(rows.shape[0], n // (2 * h), 2, h)
        a = v[:, :, 0, :]
        b = v[:, :, 1, :]
        out = np.empty_like(v)
        out[:, :, 0, :] = field.vadd(a, b)
        d = field.vsub(a, b)
        if h > 1:
            d = field.vmul(d, stage_twiddles(n, s, inverse, field))
        out[:, :, 1, :] = d
        y = out.reshape(rows.shape)
    y = y[:, bit_reverse_indices(k)]
    if scale_base is not None:
        # scale[r, m] = (base^(row0 + r))^m, built by doubling along m.
        c = field.vpow(scale_base, np.arange(row0, row0 + rows.shape[0], dtype=np.uint64))
        scale = np.empty_like(y)
        scale[:, 0] = 1
        filled, step = 1, c
        while filled < n:
            scale[:, filled:2 * filled] = field.vmul(scale[:, :filled], step[:, None])
            filled *= 2
            step = field.vmul(step, step)
        y = field.vmul(y, scale)
    return y


def _batched_rows_ntt(m: np.ndarray, inverse: bool, scale_base=None, field: Field = _GL) -> np.ndarray:
    """_rows_ntt over all rows of m, in cache-sized batches spread over two threads."""
    nrows, n = m.shape
    per = max(1, _BATCH_POINTS // n)
    out = np.empty_like(m)

    def job(r0):
        out[r0:r0 + per] = _rows_ntt(m[r0:r0 + per], inverse, scale_base, r0, field)

    starts = range(0, nrows, per)
    if _THREADS > 1 and len(starts) > 1:
        with ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(job, starts))
    else:
        for r0 in starts:
            job(r0)
    return out


#: Up to 2^RADIX2_MAX_LOG_N points the whole-array radix-2 transform is used; above, the four-step one.
RADIX2_MAX_LOG_N = 10


def ntt(x, inverse: bool = False, *, field: Field = _GL) -> np.ndarray:
    """Forward (or inverse) NTT of a 1-D array of 2^n points, natural order in and out.

    Accepts any uint64 values (reduced first); returns a new canonical uint64 array.
    """
    field = F.get(field)
    x = field.vcanon(field.as_u64(x))
    if x.ndim != 1:
        raise ValueError(f"x: expected a 1-D array, got shape {x.shape}")
    n_total = x.shape[0]
    logn = log2_exact(n_total, "len(x)")
    if logn <= RADIX2_MAX_LOG_N:
        return ntt_radix2(x, inverse, field)
    # Four-step, N = N1 * N2 (docs/architecture.md): columns, scale by w_N^(n2*k1), rows, transpose.
    l1 = logn // 2
    n1, n2 = 1 << l1, 1 << (logn - l1)
    w = field.root_of_unity(n_total)
    if inverse:
        w = field.inv(w)
    cols = np.ascontiguousarray(x.reshape(n1, n2).T)            # cols[n2, n1]
    y = _batched_rows_ntt(cols, inverse, scale_base=w, field=field)           # y[n2, k1] scaled by w^(n2*k1)
    rows = np.ascontiguousarray(y.T)                             # rows[k1, n2]
    del cols, y
    z = _batched_rows_ntt(rows, inverse, field=field)                       # z[k1, k2]
    out = np.ascontiguousarray(z.T).reshape(n_total)             # X[k1 + N1*k2]
    return _scale_inverse(out, n_total, field) if inverse else out


def intt(x, *, field: Field = _GL) -> np.ndarray:
    return ntt(x, inverse=True, field=field)


# -- The transforms a prover needs (inverse, coset, orders, batches, zero-extended input) -------------

def _check_transform_args(shape, size, coset, order, field: Field) -> tuple[int, int]:
    """(M, N) of a transform call, after checking every argument (ValueError naming it)."""
    if len(shape) not in (1, 2):
        raise ValueError(f"x: expected a 1-D array or a (B, M) batch, got shape {shape}")
    m = shape[-1]
    n = m if size is None else size
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"size: expected an int, got {type(n).__name__}")
    log2_exact(int(n), "size")
    if not 1 <= m <= n:
        raise ValueError(f"x: {m} points per transform do not fit the size {n} (need 1 <= M <= N)")
    if order not in ORDERS:
        raise ValueError(f"order: must be one of {', '.join(ORDERS)}, got {order!r}")
    if m < n and order[0] == "r":
        raise ValueError("order: a zero-extended input (M < N) must be in natural order")
    if coset is not None and int(coset) % field.p == 0:
        raise ValueError(f"coset: the shift must be nonzero modulo p ({field.name})")
    return m, int(n)


def transform_naive(x, *, inverse: bool = False, coset: int | None = None, order: str = "nn",
                    size: int | None = None, field: Field = _GL) -> list[list[int]]:
    """The O(B N^2) definition of :func:`transform`, on Python ints, straight from the sums. Tests only.

    forward: X_k = sum_j x_j g^j w^(jk); inverse: x_j = g^(-j) (1/N) sum_k X_k w^(-jk) (g = 1 without a
    coset); the input zero-extended from M to N = ``size`` points; "r" orders index bit-reversed."""
    rows = np.atleast_2d(np.asarray(x, dtype=object))
    field = F.get(field)
    m, n = _check_transform_args(np.shape(x), size, coset, order, field)
    logn = log2_exact(n)
    rev = [int(v) for v in bit_reverse_indices(logn)] if logn else [0]
    w = field.root_of_unity(n)
    g = 1 if coset is None else int(coset) % field.p
    if inverse:
        w, g = field.inv(w), field.inv(g)
    out = []
    for row in rows:
        full = [int(v) % field.p for v in row] + [0] * (n - m)
        if order[0] == "r":
            full = [full[rev[j]] for j in range(n)]
        res = []
        for k in range(n):
            acc = 0
            for j, v in enumerate(full):
                term = v * pow(w, j * k, field.p) % field.p
                acc += term if inverse else term * pow(g, j, field.p)
            acc %= field.p
            if inverse:
                acc = acc * field.inv(n) % field.p * pow(g, k, field.p) % field.p
            res.append(acc)
        if order[1] == "r":
            res = [res[rev[k]] for k in range(n)]
        out.append(res)
    return out


def transform(x, *, inverse: bool = False, coset: int | None = None, order: str = "nn",
              size: int | None = None, field: Field = _GL) -> np.ndarray:
    """Forward or inverse NTT of one transform (1-D) or of every row of a (B, M) batch, fast.

    - ``inverse``: x_j = (1/N) sum_k X_k w^(-jk);
    - ``coset`` g (nonzero): forward X_k = sum_j x_j g^j w^(jk), inverse x_j = g^(-j) (1/N) sum_k ...;
    - ``order``: input then output, each natural ("n") or bit-reversed ("r"): "nn", "nr", "rn", "rr";
    - ``size`` N >= M: the input is zero-extended from M to N points (natural input order only).

    Returns canonical uint64, shape (N,) or (B, N)."""
    field = F.get(field)
    x = field.vcanon(field.as_u64(x))
    m, n = _check_transform_args(x.shape, size, coset, order, field)
    rows = x.reshape(-1, m)
    if m < n:
        rows = np.concatenate([rows, np.zeros((rows.shape[0], n - m), dtype=np.uint64)], axis=1)
    rev = bit_reverse_indices(log2_exact(n))
    if order[0] == "r":
        rows = rows[:, rev]
    if coset is not None and not inverse:
        rows = field.vmul(rows, field.powers(int(coset) % field.p, n))
    out = np.stack([ntt(r, inverse, field=field) for r in rows])
    if coset is not None and inverse:
        out = field.vmul(out, field.powers(field.inv(int(coset) % field.p), n))
    if order[1] == "r":
        out = out[:, rev]
    return out.reshape(n) if x.ndim == 1 else out
