"""Merkle commitments in the library API: ``nantucket.commit`` and ``nantucket.verify`` (docs/commitments.md).

Thin wrappers over the golden model's schemes (nantucket.hw.model.commit), which do the work on the CPU:
each scheme reproduces its prover's root bit for bit. Argument errors are one-line ValueError/TypeError
naming the argument, raised before any hashing; an unknown keyword is a TypeError naming the valid ones;
a refused opening is a named :class:`CommitmentError` (a ValueError).
"""

from __future__ import annotations

import time

from nantucket.host.backend_base import keywords_checked, unknown_keyword_error
from nantucket.hw.model import commit as _model
from nantucket.hw.model import field as F
from nantucket.hw.model.commit.commitment import as_matrices
from nantucket.hw.model.commit import (CapMismatch, Commitment, CommitmentError, Dimensions, EmptyBatch,
                                       IncompatibleHeights, IndexOutOfBounds, Opening, UnsupportedShape,
                                       WrongBatchSize, WrongHeight, WrongWidth)

from . import checks as C

__all__ = ["commit", "verify", "Commitment", "Opening", "Dimensions", "SCHEMES", "SCHEME_NAMES", "CommitmentError",
           "EmptyBatch", "IncompatibleHeights", "UnsupportedShape", "WrongBatchSize", "WrongWidth", "WrongHeight",
           "IndexOutOfBounds", "CapMismatch"]

#: Every commitment scheme by name (``nantucket.SCHEMES["plonky2"].pin`` says which version it matches).
SCHEMES = _model.SCHEMES
SCHEME_NAMES = _model.SCHEME_NAMES


def commit(matrices, scheme: str, *, cap_height: int = 0, backend: str | None = None, blowup: int | None = None,
           shift: int | None = None, **options) -> Commitment:
    """Commit to ``matrices`` (a 2-D array whose rows are the leaves, or a list of them) under ``scheme``
    (a name of :data:`SCHEMES`): a :class:`Commitment` with ``.root`` (``.cap`` for cap_height > 0),
    ``.dimensions`` and ``.open(indices)``. Values must be canonical elements of the scheme's field.

    ``backend`` (model, sim, xrt, ...): the matrices go through a device opened with ``options``
    (:func:`nantucket.open`'s: ``devices=``, ``params=``, ...; ``field`` by default the scheme's preset, or
    one of the same p without ``blowup``: a plonky2 tree over a goldilocks card's values) and
    ``dev.commit`` (host/api/commit_device.py); ``.report`` then says what moved and ran where.
    ``blowup``: commit the coset LDE of each matrix instead (its columns are the polynomials, as a
    Plonky3 trace's), ``shift`` the coset (default the scheme's), in the scheme's row order. Without
    ``backend`` the golden model commits on the CPU directly (``blowup`` then on the model device)."""
    if backend is None and options:
        raise unknown_keyword_error("commit", list(options), ("cap_height", "backend", "blowup", "shift"))
    s = _model.scheme(scheme)
    if backend is None and blowup is None and shift is None and not options:
        return _model.commit(matrices, s, cap_height=cap_height)
    from . import commit_device as CD
    from .opening import open as open_device
    field = F.get(s.field)
    device_field = F.get(options.pop("field", s.field), "field")
    if device_field.p != field.p or (blowup is not None and device_field.name != field.name):
        what = f"the {field.name} preset's LDE" if blowup is not None else f"{field.name} elements"
        raise ValueError(f"field: {s.name} commits {what}; a device in {device_field.name} cannot")
    mats = as_matrices(matrices, field)
    cap_height = CD.check_cap_height(cap_height)
    if blowup is None and shift is not None:
        raise ValueError("shift: a coset shift is for an LDE; give blowup= too")
    if blowup is not None:
        blowup = C.check_blowup(blowup)
        shift = s.lde_shift if shift is None else C.check_shift(shift, "shift", field)
    dims = [(m.shape[0] * (blowup or 1), m.shape[1]) for m in mats]
    s.tree.check_heights([d[0] for d in dims], cap_height)
    CD.check_tree_memory(s, dims, f"commit: the {s.name} tree on the host")
    with open_device("model" if backend is None else backend, field=device_field, **options) as dev:
        since, started = CD.transfers_of(dev), time.perf_counter()
        arrays = [dev.asarray(m.astype(field.dtype), axis=0) for m in mats]
        steps, lde_s = None, None
        if blowup is not None:
            order, steps, ldes = CD.scheme_order(s), [], []
            for a in arrays:
                ldes.append(dev.lde(a, blowup, shift, order=order))
                steps += list(getattr(getattr(dev, "backend", None), "steps", None) or [])
            arrays, lde_s = ldes, time.perf_counter() - started
        return CD.device_commit(dev, arrays, scheme=s, cap_height=cap_height, since=since, steps=steps,
                                lde_s=lde_s)


@keywords_checked("verify")
def verify(scheme: str, commitment_root_or_cap, dimensions, index: int, opening, *,
           cap_height: int | None = None) -> bool:
    """True when ``opening`` (from ``Commitment.open(index)``) opens leaf ``index`` of the commitment whose
    root (or cap) is given, over matrices of these ``dimensions`` ((height, width) each, in commit order);
    otherwise the named CommitmentError of the failed check (CapMismatch for a tampered row, sibling or
    index, WrongWidth/WrongHeight/IncompatibleHeights/WrongBatchSize for a tampered shape)."""
    return _model.verify(scheme, commitment_root_or_cap, dimensions, index, opening, cap_height=cap_height)
