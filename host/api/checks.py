"""Argument checks of the public API: every one raises before any data reaches a device.

Each error names the argument and says what was expected and what was given.
"""

from numbers import Integral

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.field import Field

#: The transform orders: first letter the input's order, second the output's; n = natural, r = bit-reversed.
ORDERS = ("nn", "nr", "rn", "rr")


def check_field(field, name: str = "field") -> Field:
    """A field by name (hw.model.field.FIELDS) or a Field: TypeError or ValueError naming the presets."""
    return F.get(field, name)


def _p_text(field: Field) -> str:
    return f"the {field.name} modulus p = {field.p}"


def _dtypes_text(field: Field) -> str:
    return "uint64" if field.dtype == np.uint64 else "uint32 (or uint64)"


def _is_int(v) -> bool:
    return isinstance(v, Integral) and not isinstance(v, (bool, np.bool_))


def _from_sequence(x, name: str, field: Field) -> np.ndarray:
    """A (nested) list or tuple of Python ints as a uint64 array, each value checked exactly."""
    obj = np.array(x, dtype=object)
    if obj.ndim == 0:
        raise ValueError(f"{name}: expected a 1-D or 2-D array of points, got a single value")
    for idx, v in np.ndenumerate(obj):
        if isinstance(v, (list, tuple)):
            raise ValueError(f"{name}: the rows of a batch must all have the same length "
                             f"(element {idx} is a sequence of {len(v)})")
        if not _is_int(v):
            raise TypeError(f"{name}: element {idx} is {type(v).__name__} {v!r}; a list must hold ints "
                            f"(or pass a numpy {field.dtype} array)")
        if not 0 <= v < field.p:
            raise ValueError(f"{name}: element {idx} = {v} is not in [0, p), {_p_text(field)}")
    return obj.astype(np.uint64) if obj.size else np.zeros(obj.shape, dtype=np.uint64)


def _check_dtype(x: np.ndarray, name: str, field: Field) -> None:
    """uint64 for every field; uint32 too for a field whose points are 32 bits (31-bit fields)."""
    ok = x.dtype.kind == "u" and (x.dtype.itemsize == 8 or (x.dtype.itemsize == 4 and field.point_bits == 32))
    if not ok:
        raise TypeError(f"{name}: expected a numpy {_dtypes_text(field)} array, got dtype {x.dtype} ({field.name} "
                        f"points; signed and float values are not converted implicitly: check they lie in "
                        f"[0, p) and use x.astype(np.{field.dtype}))")


def check_length(n: int, shape, name: str, field: Field) -> None:
    """A transform length: a power of two up to 2^(the field's 2-adicity)."""
    if n & (n - 1):
        raise ValueError(f"{name}: the transform length must be a power of two, got {n} (shape {shape})")
    if n > 1 << field.two_adicity:
        raise ValueError(f"{name}: {field.name} has roots of unity up to 2^{field.two_adicity}, got length "
                         f"{n} = 2^{n.bit_length() - 1}")


def as_points(x, name: str = "x", field: Field = F.DEFAULT_FIELD) -> np.ndarray:
    """x as a 1-D (N) or 2-D (B, N) uint64 array of canonical elements of ``field``, N a power of two up
    to 2^(the field's 2-adicity).

    Accepts numpy uint64 arrays (any byte order and strides; returned as is when already native), numpy
    uint32 arrays for a 31-bit field, and lists or tuples of ints. Raises TypeError for any other type or
    dtype and ValueError for values >= p, shapes other than 1-D/2-D, empty arrays and lengths that are not
    powers of two or beyond the field's largest transform. Shape and length are checked before anything
    is converted or scanned.
    """
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name}: a masked array (numpy.ma) is not accepted: its mask would be ignored; pass "
                        f"{name}.filled(v) (masked points set to v) or {name}.data (the values underneath)")
    if isinstance(x, np.ndarray):
        _check_dtype(x, name, field)
        arr = x
    elif isinstance(x, (list, tuple)):
        arr = _from_sequence(x, name, field)
    else:
        raise TypeError(f"{name}: expected a numpy {_dtypes_text(field)} array or a list of ints, got "
                        f"{type(x).__name__}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name}: expected a 1-D array (N points) or a 2-D batch (B rows of N points), "
                         f"got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: empty array (shape {arr.shape}); there is nothing to transform")
    check_length(arr.shape[-1], arr.shape, name, field)
    if isinstance(x, np.ndarray):
        bad = arr >= arr.dtype.type(field.p)
        if bad.any():
            idx = np.unravel_index(int(np.argmax(bad)), arr.shape)
            where = idx[0] if arr.ndim == 1 else tuple(int(i) for i in idx)
            raise ValueError(f"{name}: value {int(arr[idx])} at index {where} is not below {_p_text(field)} "
                             f"({int(bad.sum())} of the {arr.size} values are >= p); reduce them mod p first")
        if arr.dtype != np.uint64:
            arr = arr.astype(np.uint64)
    return arr


def check_inverse(inverse) -> bool:
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"inverse: expected True or False, got {type(inverse).__name__} {inverse!r}")
    return bool(inverse)


def check_shift(g, name: str = "coset", field: Field = F.DEFAULT_FIELD) -> int:
    """A coset shift: an int with 0 < g < p of ``field``."""
    if not _is_int(g):
        raise TypeError(f"{name}: expected an int shift g with 0 < g < p, got {type(g).__name__} {g!r}")
    g = int(g)
    if not 0 < g < field.p:
        raise ValueError(f"{name}: the shift must satisfy 0 < g < p ({_p_text(field)}), got {g}")
    return g


def check_order(order) -> str:
    if not isinstance(order, str):
        raise TypeError(f"order: expected a str, one of {', '.join(ORDERS)} (input then output order; "
                        f"n = natural, r = bit-reversed), got {type(order).__name__} {order!r:.60}")
    if order not in ORDERS:
        raise ValueError(f"order: expected one of {', '.join(ORDERS)} (input then output order; "
                         f"n = natural, r = bit-reversed), got {order!r}")
    return str(order)


def check_blowup(blowup) -> int:
    if not _is_int(blowup) or blowup < 1 or blowup & (blowup - 1):
        raise ValueError(f"blowup: expected a power of two >= 1, got {blowup!r}")
    return int(blowup)


def check_lde_pair(m: int, blowup: int, name: str = "values", field: Field = F.DEFAULT_FIELD) -> None:
    """The LDE of M = m points to blowup x M points must stay within the field's largest transform size."""
    if m * blowup > 1 << field.two_adicity:
        raise ValueError(f"blowup: {blowup} (2^{blowup.bit_length() - 1}) x {m} points = "
                         f"2^{(m * blowup).bit_length() - 1} points is beyond the field's largest transform "
                         f"size 2^{field.two_adicity} in {field.name} ({name} has {m} points per row)")


def check_size(backend_name: str, reason: str | None, name: str = "x") -> None:
    """Raise the backend's own reason (from Backend.supports) when it cannot take a size."""
    if reason:
        raise ValueError(f"{name}: backend {backend_name!r} cannot take this size: {reason}")
