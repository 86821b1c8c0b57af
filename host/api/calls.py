"""One-call transforms: open a device, transform, bring the result back, close."""

import numpy as np

from nantucket.host.backend_base import unknown_keyword_error
from nantucket.host.backends import backend_options

from . import checks as C
from .device import DeviceArray
from .opening import open as open_device

__all__ = ["ntt", "intt", "lde"]


def ntt(x, *, inverse: bool = False, coset: int | None = None, order: str = "nn", axis: int = -1,
        ext: int | None = None, backend: str = "model", field="goldilocks", **options) -> np.ndarray:
    """The NTT of x over ``field``, as a new numpy array of x's shape and the field's dtype (uint64 for
    Goldilocks, uint32 for the 31-bit fields BabyBear and KoalaBear).

    x: numpy uint64 array (uint32 too for a 31-bit field) or list of ints, 1-D (N points) or 2-D (B rows
    of N points, each row transformed), values in [0, p), N a power of two up to 2^(the field's
    2-adicity). inverse: the inverse NTT (with the 1/N scale). coset: shift g, 0 < g < p, or None.
    order: "nn", "nr", "rn", "rr" (input then output order, n = natural, r = bit-reversed). axis: the
    axis of each polynomial's points (-1: rows, the default; 0: the columns of an (N, B) matrix). ext: D,
    the trailing axis holds the D limbs of extension-field elements, transformed limb by limb (axis counts
    the other axes); see docs/api.md "Shapes". field: a
    preset's name (hw.model.field.FIELDS: goldilocks, goldilocks-plonky2, babybear, koalabear) or a
    Field. backend and options: as for :func:`nantucket.open`.

    Every argument is checked before the backend is opened, a keyword that neither this function nor
    the backend takes included (TypeError naming it and the valid ones); for several transforms on one
    device (sim and xrt start a simulator or open a card) use :func:`nantucket.open`.
    """
    _check_keywords("ntt", ("inverse", "coset", "order", "axis", "ext", "backend", "field"), backend, options)
    if isinstance(x, DeviceArray):
        raise TypeError("x: a DeviceArray is transformed by its device: use dev.ntt(a) (or a.numpy())")
    field = C.check_field(field)
    points, layout = C.as_shaped(x, "x", field, axis, ext, native=True)
    inverse = C.check_inverse(inverse)
    coset = None if coset is None else C.check_shift(coset, "coset", field)
    order = C.check_order(order)
    with open_device(backend, field=field, **options) as dev:
        a = dev.asarray(points, axis=layout.axis, ext=layout.ext)
        dev.ntt(a, inverse=inverse, coset=coset, order=order)
        return a.numpy()


def intt(x, *, coset: int | None = None, order: str = "nn", axis: int = -1, ext: int | None = None,
         backend: str = "model", field="goldilocks", **options) -> np.ndarray:
    """The inverse NTT of x: ``ntt(x, inverse=True, ...)``."""
    _check_keywords("intt", ("coset", "order", "axis", "ext", "backend", "field"), backend, options)
    return ntt(x, inverse=True, coset=coset, order=order, axis=axis, ext=ext, backend=backend, field=field,
               **options)


def lde(values, blowup: int, shift: int, *, order: str = "nn", return_coeffs: bool = False, axis: int = -1,
        ext: int | None = None, backend: str = "model", field="goldilocks", **options):
    """The low-degree extension of ``values`` over ``field`` as a new numpy array (the field's dtype, the
    values' shape with blowup x M points on ``axis``): :meth:`Device.lde` on a device opened for the call
    (``backend`` and ``options`` as for :func:`nantucket.open`), the result brought back. values: the M
    evaluations of each polynomial on the M-th roots of unity (1-D, or a batch as for :func:`ntt`); the
    result its evaluations on the coset shift * <w_(blowup M)>. ``order``, ``return_coeffs`` (then
    (evaluations, coefficients)), ``axis``, ``ext``: as for Device.lde. Every argument is checked before
    the backend is opened."""
    _check_keywords("lde", ("order", "return_coeffs", "axis", "ext", "backend", "field"), backend, options)
    if isinstance(values, DeviceArray):
        raise TypeError("values: a DeviceArray is extended by its device: use dev.lde(a, ...) (or a.numpy())")
    field = C.check_field(field)
    points, layout = C.as_shaped(values, "values", field, axis, ext, native=True)
    blowup = C.check_blowup(blowup)
    shift = C.check_shift(shift, "shift", field)
    order = C.check_order(order)
    return_coeffs = C.check_flag(return_coeffs, "return_coeffs")
    shape = layout.shape if layout.plain else layout.rows_shape
    C.check_lde_pair(shape[-1], blowup, "values", field)
    with open_device(backend, field=field, **options) as dev:
        got = dev.lde(points, blowup, shift, order=order, return_coeffs=return_coeffs, axis=layout.axis,
                      ext=layout.ext)
        if return_coeffs:
            return got[0].numpy(), got[1]
        return got.numpy()


def _check_keywords(what: str, own: tuple[str, ...], backend, options: dict) -> None:
    """The backend's name, then every keyword in ``options`` against those it takes: an unknown one is a
    TypeError naming it and the valid ones (this function's and the backend's)."""
    valid = backend_options(backend)
    if valid is None:
        return
    unknown = [k for k in options if k not in valid]
    if unknown:
        raise unknown_keyword_error(what, unknown, own + tuple(v for v in valid if v not in own))
