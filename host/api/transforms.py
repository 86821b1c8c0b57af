"""The transforms of the API built from a plain natural-order NTT of rows, on uint64 arrays.

Every function computes in the ``field`` it is given (a :class:`hw.model.field.Field`; points of a
31-bit field travel as uint64 here too). ``rows_ntt(rows, inverse)`` is the one thing a device has to
provide: the natural-order NTT (or its inverse, with the 1/N scale) of every row of a 2-D array, in the
same field. Everything else is expressed around it here:

- orders: a bit-reversed input is permuted to natural before, a bit-reversed output after;
- coset with shift g: forward X_k = sum_j x_j g^j w^(jk) is the NTT of (x_j g^j); the inverse
  x_j = g^(-j) (1/N) sum_k X_k w^(-jk) is the inverse NTT followed by the scale g^(-j);
- lde: inverse NTT of the M-point rows, zero-extension to blowup*M, coset NTT with the shift.

The model device runs these on its own memory. The other devices leave them to the kernel (flags) and
the host driver's layout step (orders); on a card the LDE's zero extension is the kernel's too
(``chain_log_n`` / ``input_log_m``), and :func:`zero_extend` serves the fallbacks for the pairs of sizes a
build cannot place and the staged devices (docs/api.md, "The LDE on the card").
"""

import time
from typing import Callable

import numpy as np

from nantucket.host.backend_base import step_record
from nantucket.hw.model import field as F
from nantucket.hw.model.ntt import bit_reverse_indices, log2_exact

RowsNtt = Callable[[np.ndarray, bool], np.ndarray]


#: Points per field multiplication of :func:`coset_scale`: a multiplication makes about ten temporaries
#: the size of its operands, so a whole large array at once would need ten times its size.
SCALE_CHUNK_POINTS = 1 << 16


def coset_scale(rows: np.ndarray, g: int, field: F.Field = F.DEFAULT_FIELD) -> np.ndarray:
    """rows[:, j] * g^j for every row of a 2-D array (a new array), in chunks of SCALE_CHUNK_POINTS."""
    n = rows.shape[-1]
    scale = field.powers(g, n)
    out = np.empty_like(rows)
    if n >= SCALE_CHUNK_POINTS:
        for r in range(rows.shape[0]):
            for c0 in range(0, n, SCALE_CHUNK_POINTS):
                c1 = c0 + SCALE_CHUNK_POINTS
                out[r, c0:c1] = field.vmul(rows[r, c0:c1], scale[c0:c1])
    else:
        per = SCALE_CHUNK_POINTS // n
        for r0 in range(0, rows.shape[0], per):
            out[r0:r0 + per] = field.vmul(rows[r0:r0 + per], scale)
    return out


def bit_reverse(rows: np.ndarray) -> np.ndarray:
    """The rows with their columns in bit-reversed order (its own inverse; a new array)."""
    return rows[:, bit_reverse_indices(log2_exact(rows.shape[-1], "row length"))]


def transform(rows: np.ndarray, rows_ntt: RowsNtt, inverse: bool, coset: int | None, order: str,
              field: F.Field = F.DEFAULT_FIELD) -> np.ndarray:
    """NTT (or inverse) of every row of a canonical (B, N) array, with coset and orders; a new array."""
    if order[0] == "r":
        rows = bit_reverse(rows)
    if coset is not None and not inverse:
        rows = coset_scale(rows, coset, field)
    rows = rows_ntt(rows, inverse)
    if coset is not None and inverse:
        rows = coset_scale(rows, field.inv(coset), field)
    if order[1] == "r":
        rows = bit_reverse(rows)
    return rows


def zero_extend(rows: np.ndarray, blowup: int) -> np.ndarray:
    """Each (B, M) row followed by (blowup - 1) M zeros: a new (B, blowup M) array."""
    extended = np.zeros((rows.shape[0], rows.shape[1] * blowup), dtype=np.uint64)
    extended[:, :rows.shape[1]] = rows
    return extended


def lde(rows: np.ndarray, rows_ntt: RowsNtt, blowup: int, shift: int,
        field: F.Field = F.DEFAULT_FIELD, order: str = "nn", steps: list | None = None):
    """Low-degree extension of every row of a (B, M) array of evaluations on the M-th roots of unity:
    their interpolating polynomials evaluated on the coset shift * <w_(blowup*M)>. ``order``: the
    values' order then the result's (n natural, r bit-reversed). Returns (the (B, blowup M) result, the
    (B, M) coefficients, natural order). ``steps``: a list that gets one record per step (inverse,
    zero-extension, coset forward) with its CPU seconds (:func:`host.backend_base.step_record`)."""
    m, t = rows.shape[1], rows.shape[1] * blowup
    log_m, log_t = m.bit_length() - 1, t.bit_length() - 1
    t0 = time.process_time()
    if order[0] == "r":
        rows = bit_reverse(rows)
    coeffs = rows_ntt(rows, True)
    t1 = time.process_time()
    extended = np.zeros((rows.shape[0], t), dtype=np.uint64)
    extended[:, :m] = coset_scale(coeffs, shift, field)     # the zeros scale to zeros
    t2 = time.process_time()
    out = rows_ntt(extended, False)
    if order[1] == "r":
        out = bit_reverse(out)
    t3 = time.process_time()
    if steps is not None:
        work = "all of it (the golden model on the CPU)"
        b = rows.shape[0]
        steps += [step_record("inverse", log_m, host_work=work, cpu_s=t1 - t0, rows=b),
                  step_record("zero-extension", log_t, host_work=f"{work}, with the coset scale g^j",
                              cpu_s=t2 - t1, rows=b),
                  step_record("coset forward", log_t, host_work=work, cpu_s=t3 - t2, rows=b)]
    return out, coeffs
