"""Devices and device-resident arrays.

:func:`open` makes a :class:`Device` for a backend of :mod:`host.backends` (``model``, ``sim``, ``xrt``,
or any registered one). There are two kinds, with one interface:

- the model backend gets a :class:`ModelDevice`: its device memory is the numpy buffers of its
  :class:`DeviceArray` objects and the golden model computes on them directly, so chained transforms
  move nothing (only ``asarray`` and ``numpy`` do);
- every other backend gets a :class:`BackendDevice`: the arrays are staged in host memory by this layer
  and each transform of a row is one ``Backend.run`` (points to the card, kernel, points back), because
  the backend interface has no device-resident buffers yet. Orders, coset scaling, batches and the LDE's
  zero-extension are done on the host around those runs.

``transfers`` counts the bytes each device moved between host memory and the backend's memory.
"""

import numpy as np

from host.backends import Backend, ModelBackend, make_backend
from hw.model import ntt as ntt_model

from . import checks as C
from . import transforms as T

__all__ = ["Device", "ModelDevice", "BackendDevice", "DeviceArray", "open"]

#: Rows up to this length go through the whole-array radix-2 model in one call; longer rows one by one
#: through the model's fast four-step transform (the model's own threshold between the two).
_RADIX2_MAX = 1 << ntt_model.RADIX2_MAX_LOG_N
_CHUNK_POINTS = 1 << 16


class DeviceArray:
    """A 1-D (N) or 2-D (B, N) array of field elements held by a device. Get it back with :meth:`numpy`."""

    def __init__(self, device: "Device", data: np.ndarray, shape: tuple[int, ...]):
        self._device = device
        self._rows = data            # always (B, N), canonical uint64
        self.shape = shape

    @property
    def device(self) -> "Device":
        return self._device

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.uint64)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __len__(self) -> int:
        return self.shape[0]

    def numpy(self) -> np.ndarray:
        """A new numpy uint64 array with the contents (moved from the device)."""
        self._device._check_open()
        return self._device._from_device(self._rows).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        # An implicit conversion would hide a transfer from the device; make it explicit.
        raise TypeError("a DeviceArray lives on a device: call .numpy() to bring its data back")

    def __repr__(self) -> str:
        state = "closed" if self._device.closed else self._device.name
        return f"DeviceArray(shape={self.shape}, dtype=uint64, device={state!r})"


class Device:
    """A backend opened for transforms. Use as a context manager, or call :meth:`close`.

    Transform methods take a :class:`DeviceArray` of this device (transformed in place and returned)
    or anything :func:`nantucket.ntt` takes (moved to the device first; a new DeviceArray is returned).
    A device is not thread-safe.
    """

    def __init__(self, name: str, backend: Backend):
        self.name = name
        self.backend = backend
        self.closed = False
        #: bytes moved between host memory and the backend's memory so far
        self.transfers = {"to-device": 0, "from-device": 0}

    # -- what a kind of device provides ----------------------------------------------------------------

    def _to_device(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _from_device(self, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _rows_ntt(self, rows: np.ndarray, inverse: bool) -> np.ndarray:
        raise NotImplementedError

    # -- public ------------------------------------------------------------------------------------------

    def asarray(self, x) -> DeviceArray:
        """x (numpy uint64 array or list of ints, 1-D or 2-D) as a DeviceArray on this device.
        A DeviceArray of this device is returned as is."""
        return self._device_array(x, "x")

    def ntt(self, a, *, inverse: bool = False, coset: int | None = None, order: str = "nn") -> DeviceArray:
        """The NTT (or with inverse=True the inverse NTT) of every row of a, in place; returns a.
        If a run fails, a keeps its previous contents.

        coset: shift g (0 < g < p) or None; order: "nn", "nr", "rn" or "rr" (input then output order,
        n = natural, r = bit-reversed). See docs/api.md for the definitions."""
        inverse = C.check_inverse(inverse)
        coset = None if coset is None else C.check_shift(coset)
        order = C.check_order(order)
        a = self._device_array(a, "a")
        a._rows = T.transform(a._rows, self._rows_ntt, inverse, coset, order)
        return a

    def intt(self, a, *, coset: int | None = None, order: str = "nn") -> DeviceArray:
        """The inverse NTT of every row of a, in place; returns a. Same arguments as :meth:`ntt`."""
        return self.ntt(a, inverse=True, coset=coset, order=order)

    def lde(self, values, blowup: int, shift: int) -> DeviceArray:
        """Low-degree extension, as one sequence on the device; returns a new DeviceArray.

        values: the M evaluations of a polynomial of degree < M on the M-th roots of unity (natural
        order), 1-D or a (B, M) batch; the result holds its evaluations on the coset
        shift * <w_(blowup*M)>, natural order: inverse NTT of size M, zero-extension to blowup*M,
        coset NTT with the shift. values is left unchanged."""
        self._check_open()
        blowup = C.check_blowup(blowup)
        shift = C.check_shift(shift, "shift")
        if not isinstance(values, DeviceArray):
            points = C.as_points(values, "values")
            self._check_sizes("values", points.shape[-1], points.shape[-1] * blowup)
            values = self._load(points)
        else:
            self._check_own(values, "values")
            self._check_sizes("values", values.shape[-1], values.shape[-1] * blowup)
        rows = T.lde(values._rows, self._rows_ntt, blowup, shift)
        return DeviceArray(self, rows, values.shape[:-1] + (rows.shape[-1],))

    def close(self) -> None:
        """Release the backend; the device's arrays become unusable."""
        if not self.closed:
            self.closed = True
            self.backend.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<nantucket.Device {self.name!r}{' (closed)' if self.closed else ''}>"

    def _device_array(self, x, name: str) -> DeviceArray:
        self._check_open()
        if isinstance(x, DeviceArray):
            self._check_own(x, name)
            return x
        points = C.as_points(x, name)
        self._check_sizes(name, points.shape[-1])
        return self._load(points)

    def _load(self, points: np.ndarray) -> DeviceArray:
        rows = np.ascontiguousarray(points.reshape(-1, points.shape[-1]))
        return DeviceArray(self, self._to_device(rows), points.shape)

    # -- checks ----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"device {self.name!r} is closed")

    def _check_own(self, a: DeviceArray, name: str) -> None:
        self._check_open()
        if a.device is not self:
            raise ValueError(f"{name}: the array lives on another device ({a.device.name!r}); "
                             f"move it with {name}.numpy() first")

    def _check_sizes(self, name: str, *sizes: int) -> None:
        for n in sizes:
            C.check_size(self.name, self.backend.supports(n), name)


class ModelDevice(Device):
    """The golden model: the arrays' buffers are the device memory and are transformed where they are."""

    def _to_device(self, rows):
        self.transfers["to-device"] += rows.nbytes
        return rows.copy()

    def _from_device(self, rows):
        self.transfers["from-device"] += rows.nbytes
        return rows.copy()

    def _rows_ntt(self, rows, inverse):
        out = np.empty_like(rows)
        n = rows.shape[-1]
        if n <= _RADIX2_MAX:
            per = max(1, _CHUNK_POINTS // n)          # bounds the model's temporaries for large batches
            for r0 in range(0, rows.shape[0], per):
                out[r0:r0 + per] = ntt_model.ntt_radix2(rows[r0:r0 + per], inverse)
        else:
            for r, row in enumerate(rows):
                out[r] = ntt_model.ntt(row, inverse)
        return out


class BackendDevice(Device):
    """Any other backend: arrays staged in host memory, one ``Backend.run`` per row and transform."""

    def _to_device(self, rows):
        return rows.copy()

    def _from_device(self, rows):
        return rows.copy()

    def _rows_ntt(self, rows, inverse):
        out = np.empty_like(rows)
        for r, row in enumerate(rows):
            self.transfers["to-device"] += row.nbytes
            out[r] = self.backend.run(row, inverse=inverse)
            self.transfers["from-device"] += row.nbytes
        return out


def open(backend: str = "model", **options) -> Device:
    """Open a device: ``backend`` is a name of host.backends (model, sim, xrt, ...), ``options`` its
    constructor options (e.g. params=BuildParams(...) for sim, xclbin=... and device=... for xrt)."""
    if not isinstance(backend, str):
        raise TypeError(f"backend: expected a backend name (str), got {type(backend).__name__}")
    dev = make_backend(backend, **options)
    kind = ModelDevice if isinstance(dev, ModelBackend) else BackendDevice
    return kind(backend, dev)
