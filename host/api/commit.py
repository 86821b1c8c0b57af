"""Merkle commitments in the library API: ``nantucket.commit`` and ``nantucket.verify`` (docs/commitments.md).

Thin wrappers over the golden model's schemes (nantucket.hw.model.commit), which do the work on the CPU:
each scheme reproduces its prover's root bit for bit. Argument errors are one-line ValueError/TypeError
naming the argument, raised before any hashing; an unknown keyword is a TypeError naming the valid ones;
a refused opening is a named :class:`CommitmentError` (a ValueError).
"""

from __future__ import annotations

from nantucket.host.backend_base import keywords_checked
from nantucket.hw.model import commit as _model
from nantucket.hw.model.commit import (CapMismatch, Commitment, CommitmentError, Dimensions, EmptyBatch,
                                       IncompatibleHeights, IndexOutOfBounds, Opening, UnsupportedShape,
                                       WrongBatchSize, WrongHeight, WrongWidth)

__all__ = ["commit", "verify", "Commitment", "Opening", "Dimensions", "SCHEMES", "SCHEME_NAMES", "CommitmentError",
           "EmptyBatch", "IncompatibleHeights", "UnsupportedShape", "WrongBatchSize", "WrongWidth", "WrongHeight",
           "IndexOutOfBounds", "CapMismatch"]

#: Every commitment scheme by name (``nantucket.SCHEMES["plonky2"].pin`` says which version it matches).
SCHEMES = _model.SCHEMES
SCHEME_NAMES = _model.SCHEME_NAMES


@keywords_checked("commit")
def commit(matrices, scheme: str, *, cap_height: int = 0) -> Commitment:
    """Commit to ``matrices`` (a 2-D array whose rows are the leaves, or a list of them) under ``scheme``
    (a name of :data:`SCHEMES`): a :class:`Commitment` with ``.root`` (``.cap`` for cap_height > 0),
    ``.dimensions`` and ``.open(indices)``. Values must be canonical elements of the scheme's field."""
    return _model.commit(matrices, _model.scheme(scheme), cap_height=cap_height)


@keywords_checked("verify")
def verify(scheme: str, commitment_root_or_cap, dimensions, index: int, opening, *,
           cap_height: int | None = None) -> bool:
    """True when ``opening`` (from ``Commitment.open(index)``) opens leaf ``index`` of the commitment whose
    root (or cap) is given, over matrices of these ``dimensions`` ((height, width) each, in commit order);
    otherwise the named CommitmentError of the failed check (CapMismatch for a tampered row, sibling or
    index, WrongWidth/WrongHeight/IncompatibleHeights/WrongBatchSize for a tampered shape)."""
    return _model.verify(scheme, commitment_root_or_cap, dimensions, index, opening, cap_height=cap_height)
