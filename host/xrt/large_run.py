"""A transform past one kernel call on the XRT backend: the four-step of host/large.py over the backend's
own batched runs, with a step record per step and the report's lines."""

from __future__ import annotations

import numpy as np

from nantucket.host import large
from nantucket.host.backend_base import step_record

__all__ = ["run_four_step"]


def run_four_step(be, rows: np.ndarray, inverse: bool, coset, order: str) -> tuple[np.ndarray, dict | None]:
    """The transforms of the (B, N) ``rows`` on the backend ``be`` (N past one kernel call): the four-step
    over ``be.run`` of each step's rows (which may split again); sets ``be.steps`` (a step record per
    step, a step whose rows split again with that run's steps as its ``parts``), ``be.timings`` (the
    transfers and kernel calls of every step), ``be.kernel_log_n``, ``be.extra_transfers`` and the
    report's four-step lines. Returns the result and the kernel's own counts summed over every step's
    calls (None unless it counted in each)."""
    steps: list = []
    n = rows.shape[1]
    log_n = n.bit_length() - 1
    params = be.params
    first = len(be.kernel_runs)
    phases = dict.fromkeys(("to-device", "kernel", "from-device"), 0.0)
    moved, measured = [0], []

    def native(r, i, c, o, s=None):
        """A step's batched kernel calls (their rows may split again), their phases, bytes and the
        kernel's own counts summed; ``s`` the step's row step (its twiddles on the card)."""
        out = be.run(r, i, coset=c, order=o, row_step=s)
        for phase, seconds in be.timings.items():
            phases[phase] += seconds
        moved[0] += r.size * be.field.point_bytes     # what the link moves: the field's word a point
        measured.append(be.kernel_measured)
        return out

    y = large.four_step(rows, inverse=inverse, coset=None if coset is None else int(coset), order=order,
                        field=be.field, min_log_n=params.min_log_n, max_log_n=params.max_log_n,
                        native=native, steps=steps, calls=lambda: len(be.kernel_runs),
                        row_steps={"coset", "inverse"} <= set(be.kernel_computes))
    n1, n2 = large.split_log_n(log_n, params.min_log_n, params.max_log_n)
    # every step's rows went to the card and back: beyond the caller's one round trip of the points
    for direction in be.extra_transfers:
        be.extra_transfers[direction] += moved[0] - rows.size * be.field.point_bytes
    be.steps = [_step_record(be, s, log_n, rows.shape[0]) for s in steps]
    be.note_composite(first, len(be.kernel_runs), be.steps)
    be.report.update(large.summary(steps, log_n, n1, n2))
    # the transfers and kernel calls of every step (the host's transposes and twiddles in no phase: the
    # steps' seconds say them)
    be.timings = phases
    be.kernel_log_n = log_n
    return y, (None if not measured or None in measured else
               {key: sum(m[key] for m in measured) for key in measured[0]})


def _step_record(be, step: large.Step, log_n: int, batch: int) -> dict:
    """The step record (host.backend_base.step_record) of a step of the four-step of ``batch`` x 2^log_n
    points: the host's step (no size of its own) works on the whole transforms, a step whose rows were
    past one call has the steps of their own four-step as its ``parts``."""
    calls = step.kernel_calls
    host = bool(step.host_work) and not step.host_work.startswith("none")
    whole = step.log_n is None
    return step_record(step.name, log_n if whole else step.log_n, rows=batch if whole else step.rows,
                       where=("card and host" if host else "card") if calls else "host", kernel_calls=calls,
                       seconds=step.seconds, host_work=step.host_work or "none",
                       parts=be.parts_of(step.first_call, step.first_call + calls) if calls else None)
