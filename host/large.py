"""Transforms larger than one kernel call: the four-step over kernel calls, orchestrated by the host driver.

A build transforms at most 2^(2k) points per kernel call (``BuildParams.max_log_n``). A transform of
N = 2^n > 2^(2k) points splits N = N1 x N2 (n = n1 + n2, both sizes the kernel runs natively, or a size
that splits again) and runs as two batched steps, each a transform of rows the kernel takes:

With the input index a = N2 a1 + a2 and the output index b = b1 + N1 b2 (a1, b1 < N1; a2, b2 < N2),
w = w_N (w^-1 for the inverse):

    X[b1 + N1 b2] = sum_a2 w_N2^(a2 b2) [ w^(a2 b1) sum_a1 x[N2 a1 + a2] w_N1^(a1 b1) ]

1. **columns:** N2 transforms of N1 points, one per a2 (the strided columns of x seen as an (N1, N2)
   matrix): the rows ``Y[a2, :]`` of one batched kernel call (or the fewest calls of the kernel's largest
   batch);
2. **between the steps** (the host): the transpose to rows ``Y[:, b1]`` and the twiddles w^(a2 b1);
3. **rows:** N1 transforms of N2 points, one per b1; X[b1 + N1 b2] is element b2 of row b1.

The twiddle of row b1 is a coset shift of that row: element a2 is scaled by (w^b1)^a2, so the kernel's
coset with a row step (the ``row_step`` argument: row r of a call has the shift g x s^r) applies it
(``row_steps``, where the backend's kernel computes the coset and the inverse):

- **forward:** step 2 is a coset call with the shift g (1 without a coset) and the row step w_N: row b1
  gets (g w^b1)^a2, the twiddle and the coset's g^a2 together;
- **inverse:** the twiddle moves to step 1's outputs: row a2 of step 1, output b1, needs (g w_N^a2)^-b1
  (w_N the forward root; g^-b1 the inverse coset's part, 1 without a coset), which is an inverse coset
  call with the shift g and the row step w_N. This needs step 1's rows to be a native size (2^n1 at
  least the kernel's smallest: an inverse coset of a padded size is the host's); else the host applies
  the twiddles.

Row r of a step's rows is then transform row r // N1 (N2)'s row b1 (a2) = r mod N1 (N2): each transform
row is its own call (the shifts restart); the host only gathers and transposes. Without ``row_steps``
the host applies the twiddles between the steps (2 field products a point).

The other transform options cost nothing more:

- **coset** g (forward): x[a] g^a = (g^N2)^a1 g^a2: step 1 is a coset call with the shift g^N2, and g^a2
  joins the twiddle: row b1 is scaled by (g w^b1)^a2;
- **inverse**: both steps are inverse calls (1/N1 and 1/N2 inside the kernel: 1/N); with a coset the
  output factor g^-b = g^-b1 (g^N1)^-b2: step 2 is an inverse coset call with the shift g^N1 and the
  constant g^-b1 of row b1 joins its twiddle;
- **orders**: a bit-reversed input is x_r.reshape(N2, N1) with its rows in bit-reversed order, each row
  read bit-reversed (the kernel's input order); a bit-reversed output is step 2's rows in bit-reversed
  order, each written bit-reversed (the kernel's output order). Only the natural orders need the host's
  transposes (before step 1, after step 2).

A step whose rows are themselves larger than one call splits again (the backend's ``run`` of those rows
comes back here). :func:`four_step` computes with any ``native(rows, inverse, coset, order)`` callable
(the driver's batched kernel calls, or the golden model in tests); each step's figures are kept as a
:class:`Step` (kernel calls, the kernel's cycles where the backend counts them, the host's work and
seconds), for the run report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field as dc_field
from typing import Callable

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.ntt import bit_reverse_indices
from nantucket.hw.model.params import BuildParams

__all__ = ["Step", "split_log_n", "card_twiddles", "four_step", "plan_steps", "ORDERS"]

ORDERS = ("nn", "nr", "rn", "rr")

#: native(rows (B, M) uint64, inverse, coset or None, order) -> the (B, M) transformed rows
Native = Callable[[np.ndarray, bool, "int | None", str], np.ndarray]


@dataclass
class Step:
    """One step of a transform past one kernel call: what it ran and what it cost.

    name: "columns", "twiddles" or "rows"; log_n: the size of each transform of the step (None for the
    host's twiddle step); rows: how many transforms; inverse, coset (the shift of the step's kernel calls;
    with ``row_step`` s the shift of each transform's first row, row b's is coset x s^b),
    order (the step's input and output order); kernel_calls: the kernel calls it made (0: host only);
    cycles: the kernel's NTT cycles over them, where the backend counts them (sim), else None;
    host_work: what the host computed; seconds: its wall time on the host (the kernel's calls included)."""

    name: str
    log_n: int | None
    rows: int
    inverse: bool = False
    coset: int | None = None
    order: str = "nn"
    kernel_calls: int = 0
    cycles: int | None = None
    host_work: str = ""
    seconds: float = 0.0
    row_step: int | None = None
    #: the index of the step's first kernel call in the backend's ``kernel_runs`` (to attach cycles)
    first_call: int = dc_field(default=0, repr=False)


def split_log_n(log_n: int, min_log_n: int, max_log_n: int) -> tuple[int, int]:
    """(n1, n2) of a transform of 2^log_n > 2^max_log_n points: n2 (the rows of step 2) as large as a call
    takes and n1 = log_n - n2 (the columns of step 1) at least ``min_log_n``, so that both are native when
    log_n <= min_log_n + max_log_n; beyond, n1 is larger than a call and splits again."""
    if log_n <= max_log_n:
        raise ValueError(f"log_n: 2^{log_n} points fit one kernel call (at most 2^{max_log_n}): no split")
    n2 = min(max_log_n, log_n - min_log_n)
    if n2 < 1:
        n2 = max_log_n
    return log_n - n2, n2


def plan_steps(params: BuildParams, log_n: int, rows: int = 1, *, inverse: bool = False,
               row_steps: bool = False) -> list[dict]:
    """The kernel calls of a 2^log_n-point transform of ``rows`` rows on a build, step by step (the
    native steps only, each split until it is native): [{"log_n", "rows", "kernel_calls"}], without
    running anything (for projections: scripts/large_sizes.py). ``row_steps``: the twiddles in the
    kernel's row steps (:func:`four_step`), whose step makes its calls per transform row."""
    if log_n <= params.max_log_n:
        n = max(log_n, params.min_log_n)
        per = 1 << (params.max_log_n - n)
        return [{"log_n": n, "rows": rows, "kernel_calls": -(-rows // per)}]
    n1, n2 = split_log_n(log_n, params.min_log_n, params.max_log_n)
    first, second = plan_steps(params, n1, rows << n2), plan_steps(params, n2, rows << n1)
    if row_steps and card_twiddles(log_n, inverse, params.min_log_n, params.max_log_n):
        stepped = first if inverse else second
        each = stepped[0]["rows"] // rows
        stepped[0]["kernel_calls"] = rows * -(-each // (1 << (params.max_log_n - stepped[0]["log_n"])))
    return first + second


def _twiddled_transpose(y: np.ndarray, field: F.Field, w: int, row_factor: int, shift: int) -> np.ndarray:
    """y: (B, N2, N1), the step-1 rows of B transforms. rows2[r, b1, a2] = y[r, a2, b1] x row_factor^b1 x
    (shift x w^b1)^a2, one b1 at a time for every r (2 field products a point, no table of N twiddles)."""
    batch, n2, n1 = y.shape
    out = np.ascontiguousarray(y.transpose(0, 2, 1))           # the transpose: rows b1
    # row b1's factors: cur = shift^a2 x (w^b1)^a2 x row_factor^b1, each row's from the last one's times
    # base = w^a2 x row_factor
    base = field.powers(w, n2, start=row_factor)
    cur = field.powers(shift, n2)
    for b1 in range(n1):
        out[:, b1] = field.vmul(out[:, b1], cur[None, :])
        if b1 + 1 < n1:
            cur = field.vmul(cur, base)
    return out.reshape(batch * n1, n2)


def card_twiddles(log_n: int, inverse: bool, min_log_n: int, max_log_n: int) -> bool:
    """Whether a backend with row steps applies the between-steps twiddles of a 2^log_n-point transform in
    its kernel calls: always forward (step 2's rows are native), inverse when step 1's rows are a native
    size without padding."""
    n1, _ = split_log_n(log_n, min_log_n, max_log_n)
    return not inverse or min_log_n <= n1 <= max_log_n


def _column_rows(x: np.ndarray, order_in: str, n1: int, n2: int) -> tuple[np.ndarray, str]:
    """Step 1's rows of the (B, N) rows ``x``: the N2 columns of N1 points of each row (row a2 holds
    x[N2 a1 + a2]); with a bit-reversed input (``order_in`` "r") the rows of x.reshape(N2, N1) in
    bit-reversed order, each read bit-reversed by the kernel. Returns them and the host's work."""
    B, N1, N2 = x.shape[0], 1 << n1, 1 << n2
    if order_in == "r":
        rev2 = bit_reverse_indices(n2)
        return np.concatenate([x[r].reshape(N2, N1)[rev2] for r in range(B)]), "row gather (bit-reversed rows)"
    return np.ascontiguousarray(x.reshape(B, N1, N2).transpose(0, 2, 1)).reshape(B * N2, N1), "transpose"


def _row_scatter(out: np.ndarray, order_out: str, n1: int, n2: int) -> tuple[Callable[[np.ndarray], None], str]:
    """finish(z): step 2's (B N1, N2) rows ``z`` into the (B, N) ``out`` (X[b1 + N1 b2] is element b2 of
    row b1; a bit-reversed output, ``order_out`` "r": the rows in bit-reversed order, each written
    bit-reversed by the kernel). Returns it and the host's work."""
    B, N1, N2 = out.shape[0], 1 << n1, 1 << n2
    if order_out == "r":
        rev1 = bit_reverse_indices(n1)

        def finish(z):
            for r in range(B):
                out[r] = z[r * N1:(r + 1) * N1][rev1].reshape(-1)
        return finish, "row scatter (bit-reversed rows)"

    def finish(z):
        out[:] = z.reshape(B, N1, N2).transpose(0, 2, 1).reshape(B, -1)
    return finish, "transpose"


def four_step(x: np.ndarray, *, inverse: bool, coset: int | None, order: str, field: F.Field,
              min_log_n: int, max_log_n: int, native: Native, steps: list | None = None,
              calls: Callable[[], int] | None = None, row_steps: bool = False) -> np.ndarray:
    """The transform of every row of ``x`` ((B, N) canonical uint64 rows, N = 2^n > 2^max_log_n) as the
    four-step over ``native`` calls (each of rows of at most 2^max_log_n points, or rows that split again
    through ``native``). ``steps``: a list that gets a :class:`Step` per step and row of ``x``;
    ``calls``: a callable giving the backend's count of kernel calls so far (for ``Step.kernel_calls``);
    ``row_steps``: ``native`` takes a fifth argument, the row step s of a coset call (row r of the call
    has the shift coset x s^r), and the twiddles go to the card (:func:`card_twiddles`)."""
    x = np.asarray(x, dtype=np.uint64)
    if x.ndim == 1:
        return four_step(x[None], inverse=inverse, coset=coset, order=order, field=field, min_log_n=min_log_n,
                         max_log_n=max_log_n, native=native, steps=steps, calls=calls, row_steps=row_steps)[0]
    n_total = x.shape[1]
    log_n = n_total.bit_length() - 1
    if n_total != 1 << log_n:
        raise ValueError(f"x: {n_total} points is not a power of two")
    if order not in ORDERS:
        raise ValueError(f"order: expected one of {', '.join(ORDERS)}, got {order!r}")
    n1, n2 = split_log_n(log_n, min_log_n, max_log_n)
    N1, N2 = 1 << n1, 1 << n2
    p = field.p
    w = field.root_of_unity(n_total)
    if inverse:
        w = field.inv(w)
    g = None if coset is None else int(coset) % p
    count = calls or (lambda: 0)
    out = np.empty_like(x)
    on_card = row_steps and card_twiddles(log_n, inverse, min_log_n, max_log_n)
    w_fwd = field.root_of_unity(n_total)            # the row step: w_N (the inverse's too, see above)

    def step(name, log_size, rows, inv, shift, step_order, work, fn, row_step=None):
        c0, t0 = count(), time.perf_counter()
        value = fn()
        if steps is not None:
            steps.append(Step(name, log_size, rows, inv, shift, step_order, count() - c0, host_work=work,
                              seconds=time.perf_counter() - t0, row_step=row_step, first_call=c0))
        return value

    def stepped(rows, per, inv, shift, step_order):
        """``native`` with the row step w_N, one call per transform row (``per`` rows each)."""
        return np.concatenate([native(rows[r:r + per], inv, shift, step_order, w_fwd)
                               for r in range(0, rows.shape[0], per)])

    B = x.shape[0]
    # step 1: N2 transforms of N1 points per row of x, the coset's g^N2 in the kernel
    rows1, gather = _column_rows(x, order[0], n1, n2)
    shift1 = None if g is None or inverse else field.pow_(g, N2)
    order1 = order[0] + "n"
    if on_card and inverse:     # the twiddles and the coset's g^-b1 on step 1's outputs
        shift1 = 1 if g is None else g
        y = step("columns", n1, B * N2, inverse, shift1, order1, f"{gather} of {B} x 2^{log_n} points",
                 lambda: stepped(rows1, N2, inverse, shift1, order1), row_step=w_fwd)
    else:
        y = step("columns", n1, B * N2, inverse, shift1, order1, f"{gather} of {B} x 2^{log_n} points",
                 lambda: native(rows1, inverse, shift1, order1))
    del rows1
    # between the steps: the transposes and the twiddles (the forward coset's g^a2, the inverse coset's
    # g^-b1 with them)
    row_factor, tw_shift = (1, 1) if g is None else (field.inv(g), 1) if inverse else (1, g)
    if on_card:
        rows2 = step("twiddles", None, B * N1, inverse, None, "nn",
                     f"transposes of {B} x 2^{log_n} points (the twiddles in the kernel's row steps)",
                     lambda: np.ascontiguousarray(y.reshape(B, N2, N1).transpose(0, 2, 1)).reshape(B * N1, N2))
    else:
        rows2 = step("twiddles", None, B * N1, inverse, None, "nn",
                     f"transposes and twiddles of {B} x 2^{log_n} points (2 field products a point)",
                     lambda: _twiddled_transpose(y.reshape(B, N2, N1), field, w, row_factor, tw_shift))
    del y
    # step 2: N1 transforms of N2 points per row of x, the inverse coset's (g^N1)^-b2 in the kernel
    shift2 = field.pow_(g, N1) if g is not None and inverse else None
    order2 = "n" + order[1]
    if on_card and not inverse:     # the twiddles and the coset's g^a2 on step 2's inputs
        shift2 = 1 if g is None else g
    finish, scatter = _row_scatter(out, order[1], n1, n2)
    if on_card and not inverse:
        step("rows", n2, B * N1, inverse, shift2, order2, f"{scatter} of {B} x 2^{log_n} points",
             lambda: finish(stepped(rows2, N1, inverse, shift2, order2)), row_step=w_fwd)
    else:
        step("rows", n2, B * N1, inverse, shift2, order2, f"{scatter} of {B} x 2^{log_n} points",
             lambda: finish(native(rows2, inverse, shift2, order2)))
    return out


def summary(steps: list[Step], log_n: int, n1: int, n2: int) -> dict[str, str]:
    """The report's lines of a transform past one kernel call (Kernel size, Kernel calls, Host work)."""
    calls = sum(s.kernel_calls for s in steps)
    parts = ", ".join(f"{s.name} {s.rows} x 2^{s.log_n} in {s.kernel_calls}" for s in steps if s.log_n is not None)
    rows = steps[0].rows >> n2 if steps else 1
    return {
        "Kernel size": (f"2^{log_n} points as a four-step over kernel calls: 2^{n2} x 2^{n1}-point "
                        f"transforms, then 2^{n1} x 2^{n2}-point ones"),
        "Kernel calls": f"{calls} calls in 2 steps ({parts})",
        "Host work": (f"four-step: the transposes of {rows} x 2^{log_n} points on the host, the between-steps "
                      "twiddles in the kernel's row steps" if any(st.row_step for st in steps) else
                      f"four-step: the transposes and the between-steps twiddles (2 field products a point) "
                      f"of {rows} x 2^{log_n} points on the host"),
    }
