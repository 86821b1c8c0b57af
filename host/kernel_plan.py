"""How one transform request (inverse, coset, orders, size) splits between the kernel and the host.

The kernel computes, per call, B transforms of its native size N = 2^log_n in natural order, forward or
inverse (1/N inside) and with or without a coset shift; the host's layout step (host/hbm_io.py) puts the
orders into the placement at no cost. What is left for the host is only what the kernel cannot do:

- a size n below the kernel's smallest native size N is zero-padded to N (the padded forward transform
  evaluates the same polynomial at the N-th roots of unity and w_n = w_N^(N/n), so X_n[k] = X_N[(N/n) k],
  also with a coset shift; the padded inverse gives (n/N) x_n at every (N/n)-th point, scaled back by
  N/n; an inverse coset of a padded size multiplies by g^(-j) on the host, as g^(-(N/n) j) is not it);
- a kernel built without some transform (``kernel_computes`` lacks "inverse" or "coset": an
  ``XrtBackend(kernel_computes=...)`` told so; the kernels this project builds compute both) gets the forward transform and the host does the rest:
  the inverse from the reverse-index identity intt(x)[k] = ntt(x)[(-k) mod n] / n, the coset by scaling
  with g^j before (forward) or g^(-j) after (inverse).

When the host touches the points before or after the kernel, it does the orders there too (the data is
on the host anyway); otherwise they go to the layout step. Every product the host computes is in the
plan's field (the build's: Goldilocks, BabyBear, KoalaBear), on the uint64 rows the driver holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.ntt import bit_reverse_indices
from nantucket.hw.model.run import Run, coset_shift_ok

__all__ = ["KERNEL_TRANSFORMS", "ORDERS", "TransformPlan", "plan_transform"]

#: What a kernel may compute itself (``XrtBackend(kernel_computes=...)``).
KERNEL_TRANSFORMS = frozenset({"inverse", "coset", "batch"})
ORDERS = ("nn", "nr", "rn", "rr")


@dataclass(frozen=True)
class TransformPlan:
    """One request: n points per row, kernel size N = 2^log_n; which steps the kernel and the host take."""
    n: int
    log_n: int
    inverse: bool
    coset: int | None
    order: str
    kernel_inverse: bool        # FLAG_INVERSE
    kernel_coset: bool          # FLAG_COSET with shift ``coset``
    host_before: bool           # the host prepares the rows (order, coset scale, padding) before the kernel
    host_after: bool            # the host finishes the rows (padding, inverse, coset scale, order) after it
    field: F.Field = F.DEFAULT_FIELD    # the field of the host's products (the build's)

    @property
    def padded(self) -> bool:
        return self.n < 1 << self.log_n

    def run(self, batch: int, *, input_log_m: int = 0, chain_log_n: int = 0, row_step: int | None = None,
            first_row: int = 0) -> Run:
        """The kernel call of ``batch`` rows of this plan (``input_log_m`` / ``chain_log_n`` / ``row_step``:
        see :class:`hw.model.run.Run`); with a row step s, the call's first row is row ``first_row`` of the
        request, whose shift is g x s^first_row."""
        coset = self.coset if self.kernel_coset else None
        if row_step is not None and row_step > 1:
            if coset is None:
                raise ValueError("row_step: a row step needs the kernel's coset (a coset request the kernel "
                                 "computes itself)")
            coset = self.field.mul(coset, self.field.pow_(row_step, first_row))
        return Run.of(self.log_n, inverse=self.kernel_inverse, coset=coset, batch=batch, input_log_m=input_log_m,
                      chain_log_n=chain_log_n, row_step=row_step)

    @property
    def layout_reverse_in(self) -> bool:
        """The layout step reads the rows bit-reversed (the input order, when the host does not prepare)."""
        return self.order[0] == "r" and not self.host_before

    @property
    def layout_reverse_out(self) -> bool:
        return self.order[1] == "r" and not self.host_after

    def host_work(self) -> list[str]:
        """What the host computes, for the report ([] when the kernel and the layout step do it all)."""
        work = []
        if self.padded:
            work.append(f"zero-padding 2^{self.n.bit_length() - 1} to 2^{self.log_n} points")
        if self.inverse and not self.kernel_inverse:
            work.append("the inverse (index reversal and 1/N)")
        if self.coset is not None and not self.kernel_coset:
            work.append("the coset scaling")
        return work

    def prepare(self, rows: np.ndarray) -> np.ndarray:
        """The (B, n) rows as the kernel's (B, N) natural-order input (only when ``host_before``)."""
        if not self.host_before:
            return rows
        n = self.n
        if self.order[0] == "r":
            rows = rows[:, bit_reverse_indices(n.bit_length() - 1)]
        if self.coset is not None and not self.inverse and not self.kernel_coset:
            rows = self.field.vmul(rows, self.field.powers(self.coset, n))
        if self.padded:
            padded = np.zeros((rows.shape[0], 1 << self.log_n), dtype=np.uint64)
            padded[:, :n] = rows
            rows = padded
        return np.ascontiguousarray(rows)

    def finish(self, rows: np.ndarray) -> np.ndarray:
        """The kernel's (B, N) natural-order output as the (B, n) result (only when ``host_after``)."""
        if not self.host_after:
            return rows
        n, big, f = self.n, 1 << self.log_n, self.field
        if self.padded:
            rows = rows[:, :: big // n]
            if self.kernel_inverse:
                rows = f.vmul(rows, np.uint64(big // n))
        if self.inverse and not self.kernel_inverse:
            rows = f.vmul(rows[:, (-np.arange(n)) % n], np.uint64(f.inv(n)))
        if self.coset is not None and self.inverse and not self.kernel_coset:
            rows = f.vmul(rows, f.powers(f.inv(self.coset), n))
        if self.order[1] == "r":
            rows = rows[:, bit_reverse_indices(n.bit_length() - 1)]
        return np.ascontiguousarray(rows)

    def kernel_index(self, index: int) -> int:
        """The kernel output element (natural index within a row of N) that result point ``index`` of a
        row came from."""
        n = self.n
        k = int(bit_reverse_indices(n.bit_length() - 1)[index]) if self.order[1] == "r" else index
        if self.inverse and not self.kernel_inverse:
            k = (-k) % n
        return k * ((1 << self.log_n) // n)


def plan_transform(n: int, log_n: int, inverse: bool, coset: int | None, order: str,
                   kernel_computes=KERNEL_TRANSFORMS, field: F.Field = F.DEFAULT_FIELD) -> TransformPlan:
    """The split of a request of n-point rows on a kernel running 2^log_n points (n <= 2^log_n), the
    host's part computed in ``field`` (the build's)."""
    if order not in ORDERS:
        raise ValueError(f"order: expected one of {', '.join(ORDERS)} (input then output; n natural, "
                         f"r bit-reversed), got {order!r}")
    if coset is not None and not coset_shift_ok(coset, field.p):
        raise ValueError(f"coset: the shift must satisfy 0 < g < p (the {field.name} modulus p = {field.p}), "
                         f"got {coset}")
    padded = n < 1 << log_n
    k_inv = inverse and "inverse" in kernel_computes
    k_coset = (coset is not None and "coset" in kernel_computes
               and (not inverse or (k_inv and not padded)))
    before = padded or (coset is not None and not inverse and not k_coset)
    after = padded or (inverse and not k_inv) or (coset is not None and inverse and not k_coset)
    return TransformPlan(n, log_n, inverse, coset, order, k_inv, k_coset, before, after, field)
