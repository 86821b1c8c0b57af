"""The kernel time of the model's work on a card, projected from the kernel's cycle formulas.

The model backend computes on the host's CPU and has no kernel to count cycles, yet a user sizing a card
wants to know what the kernel would take for a size on a build. :mod:`hw.model.cycles` projects the NTT
cycles of each kernel start from the kernel's published facts (within 1 % of the simulated cycles from
2^16 up; docs/projection.md says where it is less exact); here the model's steps (one transform, an LDE's
inverse and coset forward) become the kernel starts a card of the build would make (host/large.py's plan
for sizes past one call, batches split at the build's buffer limit) and their projected cycles and time
at the build's NTT clock go into the steps' ``cycles`` and ``projected_s``. Simulated cycles stay the
authority: the report says these are a projection.
"""

from __future__ import annotations

from functools import lru_cache

from nantucket.hw.engine import NttEngine
from nantucket.hw.model.cycles import projected_calls
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run, max_batch
from nantucket.host.large import card_twiddles, split_log_n

__all__ = ["PROJECTION_SOURCE", "card_runs", "project_steps", "projection_note"]

#: What the report says of a projected kernel time.
PROJECTION_SOURCE = "projected from the kernel's cycle formulas (hw/model/cycles.py), not simulated"

# An LDE's steps the card runs as kernel starts, with their direction; its zero-extension is the coset
# forward's padded input on the card (no start of its own).
_KERNEL_STEPS = {"transform": None, "inverse": True, "coset forward": False}


def card_runs(params: BuildParams, log_n: int, rows: int, *, inverse: bool, coset: int | None,
              row_step: int | None = None) -> list[Run]:
    """The kernel starts a card of ``params`` makes for ``rows`` transforms of 2^log_n points: a native
    size split at the build's batch limit (a size below the smallest run at the smallest), or past one
    call host/large.py's four-step as a card backend runs it (the twiddles in the kernel's row steps, one
    stepped call per transform row, the coset's shifts on the steps :func:`host.large.four_step` gives)."""
    if log_n <= params.max_log_n:
        n = max(log_n, params.min_log_n)
        per = max_batch(params, n)
        field = params.prime_field
        # a stepped call split at the batch limit: the chunk from row r0 starts at the shift g x s^r0
        return [Run.ntt(n, inverse=inverse, batch=min(per, rows - r0), row_step=row_step,
                        coset=coset if row_step is None else coset * field.pow_(row_step, r0) % field.p)
                for r0 in range(0, rows, per)]
    field = params.prime_field
    n1, n2 = split_log_n(log_n, params.min_log_n, params.max_log_n)
    on_card = card_twiddles(log_n, inverse, params.min_log_n, params.max_log_n) and row_step is None
    w = field.root_of_unity(1 << log_n)
    g = None if coset is None else coset % field.p
    if on_card and inverse:
        first = [r for _ in range(rows) for r in card_runs(params, n1, 1 << n2, inverse=True,
                                                            coset=1 if g is None else g, row_step=w)]
    else:
        shift1 = None if g is None or inverse else field.pow_(g, 1 << n2)
        first = card_runs(params, n1, rows << n2, inverse=inverse, coset=shift1)
    if on_card and not inverse:
        second = [r for _ in range(rows) for r in card_runs(params, n2, 1 << n1, inverse=False,
                                                             coset=1 if g is None else g, row_step=w)]
    else:
        shift2 = field.pow_(g, 1 << n1) if g is not None and inverse else None
        second = card_runs(params, n2, rows << n1, inverse=inverse, coset=shift2)
    return first + second


@lru_cache(maxsize=4)
def _engine(params: BuildParams):
    """The build's NTT engine, for its published latencies and coset figures (built once per build)."""
    return NttEngine(params)


def project_steps(steps: list[dict], params: BuildParams, *, inverse: bool = False,
                  coset: int | None = None, shift: int | None = None) -> list[dict]:
    """Fill each kernel step of ``steps`` (step records of the model: "transform" with ``inverse`` and
    ``coset``; an LDE's "inverse" and its "coset forward" with ``shift``) with the projected ``cycles``
    and ``projected_s`` of the starts a card of ``params`` would make; returns ``steps``."""
    for st in steps:
        if st["step"] not in _KERNEL_STEPS:
            continue
        direction = _KERNEL_STEPS[st["step"]]
        inv = inverse if direction is None else direction
        g = coset if st["step"] == "transform" else (shift if st["step"] == "coset forward" else None)
        runs = card_runs(params, st["log_n"], st["rows"] or 1, inverse=inv, coset=g)
        cycles = projected_calls(params, runs, engine=_engine(params))
        st["cycles"] = cycles
        st["projected_s"] = cycles / (params.ntt_mhz * 1e6)
    return steps


def projection_note(params: BuildParams) -> str:
    """The report line that says what the projected figures are."""
    return (f"{PROJECTION_SOURCE}: the {params.tag()} build at {params.ntt_mhz:g} MHz NTT / "
            f"{params.dma_mhz:g} MHz DMA, HBM refresh on; simulated cycles are the authority")
