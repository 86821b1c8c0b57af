"""Commit to matrices under a named scheme, open rows with their sibling paths, verify an opening.

``commit(matrices, scheme, cap_height=0)`` takes one 2-D array (rows are the leaves) or a list of them (of
any heights Plonky3 accepts; one height for plonky2 and Winterfell) holding canonical values of the
scheme's field, and returns a :class:`Commitment`. ``Commitment.open(indices)`` gives an :class:`Opening`
per index (each matrix's row at ``index >> (log_max - log_height)`` and the sibling path below the cap);
``verify(scheme, root_or_cap, dimensions, index, opening)`` replays the reference's verifier and returns
True or raises the named :class:`~.errors.CommitmentError` of the check that failed.
"""

from __future__ import annotations

from numbers import Integral
from typing import NamedTuple

import numpy as np

from .. import field as F
from .errors import CommitmentError
from .schemes import Scheme, scheme as get_scheme

__all__ = ["Dimensions", "Opening", "Commitment", "commit", "verify", "as_matrices"]


class Dimensions(NamedTuple):
    """A committed matrix's shape, as Plonky3's ``p3_matrix::Dimensions`` (height = rows)."""
    height: int
    width: int


class Opening(NamedTuple):
    """One index's opening: ``rows[j]`` is matrix j's opened row (the field's dtype), ``siblings`` the
    (levels, digest) sibling digests from the leaf layer up to just below the cap."""
    rows: tuple
    siblings: np.ndarray


def _as_matrix(m, field: F.Field, name: str) -> np.ndarray:
    if isinstance(m, np.ndarray):
        if m.dtype.kind not in "ui":
            raise TypeError(f"{name}: expected an integer array of {field.name} elements, got dtype {m.dtype}")
        if m.dtype.kind == "i" and m.size and m.min() < 0:
            raise ValueError(f"{name}: negative value {int(m.min())}; field elements are 0 .. p-1")
        a = m.astype(np.uint64)
    elif isinstance(m, (list, tuple)):
        obj = np.array(m, dtype=object)
        for v in obj.reshape(-1).tolist():
            if isinstance(v, bool) or not isinstance(v, Integral):
                raise TypeError(f"{name}: expected field elements (ints), got {type(v).__name__} {v!r}")
            if not 0 <= v < field.p:
                raise ValueError(f"{name}: value {v} is not a field element of {field.name} (0 .. {field.p - 1})")
        a = np.array(obj.reshape(-1).tolist(), dtype=np.uint64).reshape(obj.shape)
    else:
        raise TypeError(f"{name}: expected a 2-D array or a list of them, got {type(m).__name__}")
    if a.ndim != 2:
        hint = "; one column: x.reshape(-1, 1)" if a.ndim == 1 else ""
        raise ValueError(f"{name}: expected a 2-D array (rows are the leaves), got shape {a.shape}{hint}")
    field.check_canonical(a, name)
    return a


def _is_list_of_matrices(matrices) -> bool:
    if not isinstance(matrices, (list, tuple)) or not matrices:
        return False
    return all(isinstance(m, np.ndarray) or (isinstance(m, (list, tuple)) and m and isinstance(m[0], (list, tuple)))
               for m in matrices)


def as_matrices(matrices, field: F.Field, name: str = "matrices") -> list[np.ndarray]:
    """``matrices`` (one 2-D array/list of rows, or a list of them) as a list of uint64 2-D arrays."""
    if isinstance(matrices, (list, tuple)) and not matrices:
        raise ValueError(f"{name}: no matrices given")
    if _is_list_of_matrices(matrices):
        return [_as_matrix(m, field, f"{name}[{i}]") for i, m in enumerate(matrices)]
    return [_as_matrix(matrices, field, name)]


def _cap_height(cap_height) -> int:
    if isinstance(cap_height, bool) or not isinstance(cap_height, Integral):
        raise TypeError(f"cap_height: expected an int, got {type(cap_height).__name__}")
    if cap_height < 0:
        raise ValueError(f"cap_height: must not be negative, got {cap_height}")
    return int(cap_height)


class Commitment:
    """A commitment to ``matrices`` under ``scheme``: ``.cap`` (uint[k, digest]), ``.root`` (its one digest),
    ``.dimensions``, ``.layers`` (every digest layer, leaves first) and :meth:`open`."""

    def __init__(self, matrices, scheme, cap_height: int = 0):
        self.scheme: Scheme = get_scheme(scheme)
        self.cap_height = _cap_height(cap_height)
        field = F.get(self.scheme.field)
        self._matrices = as_matrices(matrices, field)
        self.dimensions = tuple(Dimensions(*m.shape) for m in self._matrices)
        tree = self.scheme.tree
        self.layers = tree.build(self._matrices, self.cap_height)
        self.cap = tree.cap(self.layers, self.cap_height).astype(self.scheme.dtype)

    @property
    def root(self) -> np.ndarray:
        """The root digest (a commitment with cap_height 0, or a tree too small for its cap)."""
        if self.cap.shape[0] != 1:
            raise CommitmentError(f"root: this commitment is a cap of {self.cap.shape[0]} digests "
                                  f"(cap_height {self.cap_height}); use .cap")
        return self.cap[0]

    def open(self, indices):
        """An :class:`Opening` for one index (an int), or a list of them for a sequence of indices."""
        one = isinstance(indices, Integral) and not isinstance(indices, bool)
        items = [indices] if one else list(np.asarray(indices).reshape(-1).tolist()) \
            if isinstance(indices, (list, tuple, np.ndarray)) else None
        if items is None:
            raise TypeError(f"indices: expected an int or a sequence of ints, got {type(indices).__name__}")
        out = []
        for index in items:
            if isinstance(index, bool) or not isinstance(index, Integral):
                raise TypeError(f"indices: expected ints, got {type(index).__name__} {index!r}")
            rows, siblings = self.scheme.tree.open(self._matrices, self.layers, int(index), self.cap_height)
            dtype = self.scheme.dtype
            out.append(Opening(tuple(r.astype(dtype) for r in rows), siblings.astype(dtype)))
        return out[0] if one else out

    def __repr__(self) -> str:
        dims = ", ".join(f"{d.height}x{d.width}" for d in self.dimensions)
        return f"<Commitment {self.scheme.name}: [{dims}], cap of {self.cap.shape[0]}>"


def commit(matrices, scheme, cap_height: int = 0) -> Commitment:
    """Commit to ``matrices`` under the scheme named ``scheme`` (see the module docstring)."""
    return Commitment(matrices, scheme, cap_height)


def _dimensions(dimensions) -> list[Dimensions]:
    if not isinstance(dimensions, (list, tuple)) or not dimensions:
        raise TypeError(f"dimensions: expected a non-empty list of (height, width), got {dimensions!r}")
    out = []
    for i, d in enumerate(dimensions):
        if not isinstance(d, (list, tuple)) or len(d) != 2 or not all(
                isinstance(v, Integral) and not isinstance(v, bool) and v >= 0 for v in d):
            raise ValueError(f"dimensions[{i}]: expected (height, width) of non-negative ints, got {d!r}")
        out.append(Dimensions(int(d[0]), int(d[1])))
    return out


def _digests(a, field: F.Field, digest: int, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype.kind not in "ui":
        raise TypeError(f"{name}: expected an integer array of digests, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[1] != digest:
        raise ValueError(f"{name}: expected digests of {digest} elements, got shape {np.shape(a)}")
    field.check_canonical(arr.astype(np.uint64), name)
    return arr.astype(np.uint64)


def verify(scheme, commitment_root_or_cap, dimensions, index, opening, cap_height: int | None = None) -> bool:
    """True when ``opening`` (an :class:`Opening` or (rows, siblings)) opens ``index`` of a commitment with
    this root (uint[digest]) or cap (uint[k, digest]) to matrices of these ``dimensions``; otherwise the
    named CommitmentError. ``cap_height`` defaults to what the cap's length implies (ceil(log2 k))."""
    s = get_scheme(scheme)
    field = F.get(s.field)
    cap = _digests(commitment_root_or_cap, field, s.digest, "commitment_root_or_cap")
    if cap_height is None:
        cap_height = (cap.shape[0] - 1).bit_length()
    cap_height = _cap_height(cap_height)
    dims = _dimensions(dimensions)
    if isinstance(index, bool) or not isinstance(index, Integral):
        raise TypeError(f"index: expected an int, got {type(index).__name__}")
    if not isinstance(opening, (tuple, list)) or len(opening) != 2:
        raise TypeError("opening: expected an Opening (rows, siblings)")
    rows_in, siblings_in = opening
    if not isinstance(rows_in, (list, tuple)):
        raise TypeError(f"opening: rows must be a list of rows, got {type(rows_in).__name__}")
    rows = []
    for j, r in enumerate(rows_in):
        a = np.asarray(r)
        if a.dtype.kind not in "ui" or a.ndim != 1:
            raise ValueError(f"opening: row {j} must be a 1-D integer array, got {a.dtype} shape {a.shape}")
        field.check_canonical(a.astype(np.uint64), f"opening row {j}")
        rows.append(a.astype(np.uint64))
    sib = np.asarray(siblings_in)
    siblings = np.zeros((0, s.digest), dtype=np.uint64) if sib.size == 0 else \
        _digests(sib, field, s.digest, "opening siblings")
    s.tree.verify(cap, dims, int(index), rows, siblings, cap_height)
    return True
