"""Argument checks of the public API: every one raises before any data reaches a device.

Each error names the argument and says what was expected and what was given.
"""

from numbers import Integral

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.field import Field
from nantucket.hw.model.run import coset_shift_ok

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


def check_ext(ext, name: str = "ext") -> int | None:
    """``ext``: None (base-field points) or D >= 1, the limbs of an extension-field element on the array's
    trailing axis. Any D is accepted: a transform with base-field roots and shift acts limb by limb, so
    it does not depend on the extension's irreducible polynomial (docs/api.md, "Shapes")."""
    if ext is None:
        return None
    if not _is_int(ext):
        raise TypeError(f"{name}: expected None or a positive int D (the limbs of an extension element on "
                        f"the trailing axis), got {type(ext).__name__} {ext!r:.60}")
    if ext < 1:
        raise ValueError(f"{name}: expected a positive number of limbs D (2 for GoldilocksExt2, 4 for the "
                         f"quartic BabyBear and KoalaBear extensions), got {ext}")
    return int(ext)


def check_axis(axis, ndim: int, shape, ext: int | None, name: str = "axis") -> int:
    """The points axis among the ``ndim`` axes that are not the limbs (1 or 2): -ndim <= axis < ndim; the
    non-negative index."""
    if not _is_int(axis):
        raise TypeError(f"{name}: expected an int (-1: rows are polynomials, 0: columns are), got "
                        f"{type(axis).__name__} {axis!r:.60}")
    if not -ndim <= axis < ndim:
        limbs = " (the trailing axis of the ext limbs does not count)" if ext is not None else ""
        raise ValueError(f"{name}: {axis} is out of range for {ndim}-D points of shape {tuple(shape)}{limbs}; "
                         f"expected -1 (each row one polynomial, the default) or 0 (each column one)")
    return int(axis) % ndim


class Shape:
    """How an array of points of ``shape`` maps onto the rows of N points a device transforms.

    ``axis``: the index of the points axis among the array's first ``ndim`` axes (the trailing axis of D
    = ``ext`` limbs excluded, when ``ext`` is set); the other one of those (if any) counts the batch's
    ``elements``. Rows: element e's limb l is row e * D + l (D = 1 without ``ext``), each of N points.
    :meth:`view` gives the rows as a view of an array of ``shape`` (no copy), which the layout step reads
    or writes in place."""

    def __init__(self, shape, axis: int, ext: int | None = None):
        self.shape, self.axis, self.ext = tuple(int(s) for s in shape), axis, ext

    @classmethod
    def rows_of(cls, shape) -> "Shape":
        """The plain layout: the last axis holds the points."""
        return cls(shape, len(shape) - 1)

    @property
    def ndim(self) -> int:
        """The axes that are not limbs (1: one polynomial, 2: a batch)."""
        return len(self.shape) - (self.ext is not None)

    @property
    def n(self) -> int:
        return self.shape[self.axis]

    @property
    def d(self) -> int:
        return self.ext or 1

    @property
    def elements(self) -> int:
        return self.shape[1 - self.axis] if self.ndim == 2 else 1

    @property
    def rows(self) -> int:
        return self.elements * self.d

    @property
    def rows_shape(self) -> tuple[int, int]:
        return (self.rows, self.n)

    @property
    def batch_axis(self) -> int | None:
        """The axis of the array that counts the elements (None for one polynomial)."""
        return 1 - self.axis if self.ndim == 2 else None

    @property
    def plain(self) -> bool:
        """Rows of points as the kernel takes them: the last axis the points, no limbs."""
        return self.ext is None and self.axis == self.ndim - 1

    def resized(self, n: int) -> "Shape":
        """The same layout with ``n`` points per polynomial (an LDE's result)."""
        shape = list(self.shape)
        shape[self.axis] = n
        return Shape(shape, self.axis, self.ext)

    def with_elements(self, elements: int) -> "Shape":
        """The same layout holding ``elements`` of the batch (a part of it)."""
        shape = list(self.shape)
        if self.batch_axis is not None:
            shape[self.batch_axis] = elements
        return Shape(shape, self.axis, self.ext)

    def part(self, x, e0: int, e1: int):
        """Elements [e0, e1) of ``x`` (an array of this shape; a view), along the batch axis."""
        if self.batch_axis is None:
            return x
        return x[e0:e1] if self.batch_axis == 0 else x[:, e0:e1]

    def join(self, parts: list) -> np.ndarray:
        """Arrays of this layout's parts (:meth:`part`) as one, in order."""
        return parts[0] if self.batch_axis is None else np.concatenate(parts, axis=self.batch_axis)

    def check_same(self, axis, ext, name: str) -> None:
        """``axis`` and ``ext`` given with an array of this layout: None or its own, else a ValueError."""
        if ext is not None and check_ext(ext) != self.ext:
            held = "base-field points" if self.ext is None else f"ext={self.ext} limbs"
            raise ValueError(f"ext: {name} holds {held} (set when it was made), not ext={ext}")
        if axis is not None and check_axis(axis, self.ndim, self.shape, self.ext) != self.axis:
            raise ValueError(f"axis: {name} holds its points on axis {self.axis} (set when it was made), not "
                             f"axis={axis}")

    def view(self, x: np.ndarray) -> np.ndarray:
        """The rows of ``x`` (an array of this shape) as a view: (rows, N) where the strides allow it,
        else (elements, D, N). Writing into it writes into ``x``."""
        if x.shape != self.shape:
            raise ValueError(f"expected an array of shape {self.shape}, got {x.shape}")
        if self.ext is None:
            v = x.reshape(1, -1) if self.ndim == 1 else (x if self.axis == 1 else x.T)
            return v
        if self.ndim == 1:                      # (N, D) -> (D, N)
            v = x.T[None]
        else:                                   # (E, N, D) or (N, E, D) -> (E, D, N)
            v = x.transpose(0, 2, 1) if self.axis == 1 else x.transpose(1, 2, 0)
        flat = v.view()
        try:
            flat.shape = self.rows_shape        # only when no copy is needed
        except AttributeError:
            return v
        return flat

    def __eq__(self, other) -> bool:
        return isinstance(other, Shape) and (self.shape, self.axis, self.ext) == (other.shape, other.axis, other.ext)

    def __repr__(self) -> str:
        return f"Shape({self.shape}, axis={self.axis}, ext={self.ext})"

    def describe(self) -> str:
        """'axis=0' / 'ext=2' / 'axis=0, ext=4' (empty for the plain layout)."""
        parts = ([] if self.axis == self.ndim - 1 else [f"axis={self.axis}"]) + \
                ([] if self.ext is None else [f"ext={self.ext}"])
        return ", ".join(parts)


def as_points(x, name: str = "x", field: Field = F.DEFAULT_FIELD) -> np.ndarray:
    """x as a 1-D (N) or 2-D (B, N) uint64 array of canonical elements of ``field``, N a power of two up
    to 2^(the field's 2-adicity): ``as_shaped(x, name, field)``'s points."""
    return as_shaped(x, name, field)[0]


def as_shaped(x, name: str = "x", field: Field = F.DEFAULT_FIELD, axis=-1, ext=None, *,
              native: bool = False) -> tuple[np.ndarray, Shape]:
    """x as a uint64 array of canonical elements of ``field`` and its :class:`Shape`: 1-D (N) or 2-D, the
    points on ``axis`` (-1: rows, 0: columns), plus a trailing axis of ``ext`` limbs when ``ext`` is set;
    N a power of two up to 2^(the field's 2-adicity).

    Accepts numpy uint64 arrays (any byte order and strides; returned as is when already native), numpy
    uint32 arrays for a 31-bit field (with ``native``: kept as uint32, the field's own dtype, for a
    caller whose every path takes either, such as a device: no conversion pass and half the memory), and
    lists or tuples of ints. Raises TypeError for any other type or
    dtype (and a non-int axis or ext) and ValueError for values >= p, other shapes, an axis out of range,
    a trailing axis that is not ``ext`` long, empty arrays and lengths that are not powers of two or
    beyond the field's largest transform. Shape and length are checked before anything is converted or
    scanned.
    """
    ext = check_ext(ext)
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
    if ext is None and arr.ndim not in (1, 2):
        raise ValueError(f"{name}: expected a 1-D array (N points) or a 2-D batch (B rows of N points), "
                         f"got shape {arr.shape}")
    if ext is not None and arr.ndim not in (2, 3):
        raise ValueError(f"{name}: with ext={ext}, expected a 2-D array (N elements of {ext} limbs) or a 3-D "
                         f"batch (the last axis the {ext} limbs), got shape {arr.shape}")
    if ext is not None and arr.shape[-1] != ext:
        raise ValueError(f"{name}: ext={ext} limbs per element, but the trailing axis has {arr.shape[-1]} "
                         f"(shape {arr.shape})")
    ndim = arr.ndim - (ext is not None)
    shape = Shape(arr.shape, check_axis(axis, ndim, arr.shape, ext), ext)
    if arr.size == 0:
        raise ValueError(f"{name}: empty array (shape {arr.shape}); there is nothing to transform")
    check_length(shape.n, arr.shape, name, field)
    if isinstance(x, np.ndarray):
        if int(arr.max()) >= field.p:           # one reduction pass; the comparison array only on error
            bad = arr >= arr.dtype.type(field.p)
            idx = np.unravel_index(int(np.argmax(bad)), arr.shape)
            where = idx[0] if arr.ndim == 1 else tuple(int(i) for i in idx)
            raise ValueError(f"{name}: value {int(arr[idx])} at index {where} is not below {_p_text(field)} "
                             f"({int(bad.sum())} of the {arr.size} values are >= p); reduce them mod p first")
        if native and arr.dtype.itemsize == 4:
            if arr.dtype != field.dtype:        # another byte order: the field's own uint32
                arr = arr.astype(field.dtype)
        elif arr.dtype != np.uint64:
            arr = arr.astype(np.uint64)
    return arr, shape


def check_flag(value, name: str) -> bool:
    """A True/False option (``inverse``, ``return_coeffs``), numpy's bool included."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r:.60}")
    return bool(value)


def check_inverse(inverse) -> bool:
    return check_flag(inverse, "inverse")


def check_shift(g, name: str = "coset", field: Field = F.DEFAULT_FIELD) -> int:
    """A coset shift: an int with 0 < g < p of ``field``."""
    if not _is_int(g):
        raise TypeError(f"{name}: expected an int shift g with 0 < g < p, got {type(g).__name__} {g!r}")
    g = int(g)
    if not coset_shift_ok(g, field.p):
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
