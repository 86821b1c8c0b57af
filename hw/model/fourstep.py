"""The four-step split the engine uses, pass by pass (docs/architecture.md, "The four-step split and the
folded pass-1 scale").

N = N1 * N2, input index n = N2*n1 + n2, output index k = k1 + N1*k2.

- Pass 1 (:func:`pass1`): for every column n2 (points at stride N2), an N1-point Gentleman-Sande
  transform whose stage s multiplies its lower output by (the stage's twiddle) * c^(2^s), c = w_N^n2.
  That folds the scale w_N^(n2*k1) into the stages, exactly as a hardware lane fed pass-1 twiddles does.
- Pass 2 (:func:`pass2`): for every row k1, a plain N2-point transform; the result for (k1, k2) is
  X[k1 + N1*k2].

An inverse transform uses w^-1 throughout (pass 1's scale becomes w_N^(-n2*k1)) and takes its 1/N in
pass 2 (``normalize``), as the engine does (hw/engine.py). A batch is every element through the same
passes (the engine runs them back to back in one pass, hw.model.schedule.pass_schedule).

The state between the passes is a 2-D array ``state[n2, k1]``: row n2 is what the lane that worked on
column n2 emitted, in natural k1 order. Benches compare the RTL against it pass by pass.
"""

import numpy as np

from . import field as F
from .field import Field

_GL = F.GOLDILOCKS
from .ntt import bit_reverse_indices, dif_stages, log2_exact

__all__ = ["split", "column_scale_bases", "pass1", "pass2", "four_step"]


def split(n_total: int, n1: int | None = None) -> tuple[int, int]:
    """(N1, N2) for a transform of n_total points; N1 defaults to 2^floor(n/2), N2 = N / N1."""
    logn = log2_exact(n_total, "n_total")
    if n1 is None:
        n1 = 1 << (logn // 2)
    l1 = log2_exact(n1, "n1")
    if l1 > logn:
        raise ValueError(f"n1: {n1} is larger than the transform size {n_total}")
    return n1, n_total // n1


def column_scale_bases(n_total: int, n2: int, inverse: bool = False, field: Field = _GL) -> np.ndarray:
    """c for every column: c[col] = w_N^col (the running twiddle each pass-1 transform starts from)."""
    field = F.get(field)
    w = field.root_of_unity(n_total)
    if inverse:
        w = field.inv(w)
    return field.powers(w, n2)


def pass1(x, n1: int | None = None, inverse: bool = False, *, field: Field = _GL) -> np.ndarray:
    """State after pass 1: ``state[n2, k1] = w_N^(n2*k1) * sum_n1 x[N2*n1 + n2] * w_N1^(n1*k1)``."""
    field = F.get(field)
    x = field.vcanon(field.as_u64(x))
    n1, n2 = split(x.shape[0], n1)
    cols = np.ascontiguousarray(x.reshape(n1, n2).T)             # cols[n2, n1]
    c = column_scale_bases(x.shape[0], n2, inverse, field)
    y = dif_stages(cols, c=c, inverse=inverse, field=field)                    # DIF order along k1
    return y[:, bit_reverse_indices(log2_exact(n1))]


def pass2(state: np.ndarray, inverse: bool = False, *, normalize: bool = False, field: Field = _GL) -> np.ndarray:
    """Finish the transform from the pass-1 state ``state[n2, k1]``; returns X in natural order, times
    1/N if ``normalize`` (the engine's pass 2 of an inverse run: 1/N folded into the lanes' output scale;
    without it the 1/N of an inverse transform is left out)."""
    field = F.get(field)
    state = field.as_u64(state)
    n2, n1 = state.shape
    rows = np.ascontiguousarray(state.T)                          # rows[k1, n2]
    z = dif_stages(rows, inverse=inverse, field=field)[:, bit_reverse_indices(log2_exact(n2))]   # z[k1, k2]
    out = np.ascontiguousarray(z.T).reshape(n1 * n2)              # X[k1 + N1*k2]
    if normalize:
        out = field.vmul(out, np.uint64(field.inv(n1 * n2)))
    return out


def four_step(x, n1: int | None = None, inverse: bool = False, *, field: Field = _GL) -> np.ndarray:
    """The whole transform through the two passes (inverse includes the 1/N scaling, in pass 2)."""
    x = F.as_u64(x)
    return pass2(pass1(x, n1, inverse, field=field), inverse, normalize=inverse, field=field)
