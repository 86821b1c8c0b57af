"""Devices and device-resident arrays.

:func:`open` makes a :class:`Device` for a backend of :mod:`host.backends` (``model``, ``sim``, ``xrt``,
or any registered one). There are two kinds, with one interface:

- the model backend gets a :class:`ModelDevice`: its device memory is the numpy buffers of its
  :class:`DeviceArray` objects and the golden model computes on them directly, so chained transforms
  move nothing (only ``asarray`` and ``numpy`` do);
- every other backend gets a :class:`BackendDevice`. On a card (xrt) an array of a native size lives in
  the kernel's device buffers (host/api/resident.py): ``asarray`` places it for the kernel,
  ``ntt``/``intt`` run the kernel on those buffers in place and leave the result where the next run
  reads it (a (B, N) array is one batched kernel call, or the fewest calls of the kernel's largest
  batch; the inverse, the coset and the orders are kernel flags and layout tables), ``lde`` chains its
  two runs on the card, ``numpy`` brings the points back. An array the card cannot hold natively (a size
  below the kernel's smallest, a backend without device buffers) is staged in host memory and each
  transform is one ``Backend.run`` (points to the card, the batched kernel call, points back).

``transfers`` counts the bytes each device moved between host memory and the backend's memory;
``relayouts`` the host round trips a resident array needed between transforms (see resident.py).

Every public method refuses a keyword it does not take (TypeError naming it and the valid ones) and
holds the device's lock while it runs: threads sharing a device take turns (docs/api.md, "Threads").
Every device computes in one prime field, ``dev.field`` (:func:`open`'s ``field``, default Goldilocks):
its arrays hold that field's elements, checked below its p, and come back as ``field.dtype`` (uint64 for
Goldilocks, uint32 for the 31-bit fields; inside, every field's points are uint64 rows).

The model device refuses, before allocating, a transform whose arrays and temporaries would not fit in
the memory the machine has available (host/memory.py).
"""

import contextlib
import threading
import time
import weakref

import numpy as np

from nantucket.host.backend_base import CardDriver, ResidentArrays, keywords_checked, step_record
from nantucket.host.backends import Backend, ModelBackend, backend_options, make_backend
from nantucket.host.memory import check_fits
from nantucket.host.projection import project_steps, projection_note
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.run import Run

from . import checks as C
from . import resident as RS
from . import transforms as T
from .futures import DEFAULT_MAX_PENDING, STAGES, DeviceFuture, Pipeline
from .protocol import DeviceProtocol

__all__ = ["Device", "ModelDevice", "BackendDevice", "DeviceArray", "make_device", "check_out", "row_indices",
           "check_not_freed"]

#: Rows up to this length go through the whole-array radix-2 model in one call; longer rows one by one
#: through the model's fast four-step transform (the model's own threshold between the two).
_RADIX2_MAX = 1 << ntt_model.RADIX2_MAX_LOG_N
_CHUNK_POINTS = 1 << 16
#: Calls that allocate less are not checked against the available memory (reading it costs ~0.1 ms,
#: a small transform ~1 ms)
_MEMORY_CHECK_MIN_BYTES = 16 << 20


def _array_of(x):
    """The DeviceArray ``x`` is, or will be: x itself, or the array a DeviceFuture makes (None otherwise)."""
    if isinstance(x, DeviceArray):
        return x
    if isinstance(x, DeviceFuture):
        return x.array
    return None


def _check_source(x) -> None:
    """A call given the future of an earlier one fails with that call's error (the arrays it would read
    are not what it was to make)."""
    if isinstance(x, DeviceFuture):
        error = x.exception()
        if error is not None:
            raise error


class _Plan:
    """A checked call: ``steps`` {stage: callable()} (the last one's value is the call's), the arrays it
    ``reads`` and ``writes`` (for the order of asynchronous calls), the array it makes or transforms."""

    def __init__(self, what: str, steps: dict, reads=(), writes=(), array=None, value=None):
        self.what, self.steps, self.reads, self.writes, self.array = what, steps, reads, writes, array
        self.value = value              # no steps: the call's value, at once


class DeviceArray:
    """A 1-D (N) or 2-D (B, N) array of field elements held by a device (or (N, B) columns with
    ``axis`` 0, with a trailing axis of ``ext`` limbs for an extension field). Get it back with
    :meth:`numpy`, in the same shape."""

    def __init__(self, device: "Device", store, shape: tuple[int, ...], layout: C.Shape | None = None):
        self._device = device
        #: the device's own storage of the points: (B, N) canonical uint64 rows in host memory, or
        #: ResidentRows on a card (host/api/resident.py); None until the call that makes it has run
        self.store = store
        #: whether the device's ``free`` gave the array's memory back (every later use raises)
        self.freed = False
        self.shape = tuple(shape)
        self._layout = layout if layout is not None else C.Shape.rows_of(self.shape)
        # for asynchronous calls (futures.py): the last job writing this array, the jobs reading it since
        self._writer = None
        self._readers: list = []

    @property
    def device(self) -> "Device":
        return self._device

    @property
    def layout(self) -> C.Shape:
        """How the shape maps onto the rows the device holds (checks.Shape: the points axis, the limbs)."""
        return self._layout

    @property
    def resident(self) -> bool:
        """Whether the points live in the card's device buffers (else in host memory)."""
        return isinstance(self.store, RS.ResidentRows)

    def jobs_before(self, writing: bool) -> list:
        """The earlier jobs (futures.Job) a call reading the array waits for (its last writer), or with
        ``writing`` a call writing it (its last writer and the readers since)."""
        return ([self._writer] if self._writer is not None else []) + (self._readers if writing else [])

    def add_job(self, job, writing: bool) -> None:
        """``job`` reads the array (``writing``: writes it) after the jobs of :meth:`jobs_before`."""
        if writing:
            self._writer, self._readers = job, []
        else:
            self._readers = [r for r in self._readers if not r.finished.is_set()] + [job]

    @property
    def axis(self) -> int:
        """The axis holding each polynomial's points, among the axes that are not limbs (0 for 1-D arrays and
        columns, 1 for rows)."""
        return self._layout.axis

    @property
    def ext(self) -> int | None:
        """The limbs of an extension element on the trailing axis (None: base-field points)."""
        return self._layout.ext

    @property
    def dtype(self) -> np.dtype:
        """The dtype :meth:`numpy` gives: the device field's (uint64, or uint32 for a 31-bit field)."""
        return self._device.field.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __len__(self) -> int:
        return self.shape[0]

    @keywords_checked("DeviceArray.numpy")
    def numpy(self, *, out: np.ndarray | None = None, wait: bool = True) -> np.ndarray:
        """A new numpy array of the device field's dtype with the contents (moved from the device), or
        written into ``out`` (a writable C-contiguous array of this shape and dtype) and ``out`` returned;
        ``wait=False``: a DeviceFuture of it (see :meth:`Device.numpy`)."""
        return self._device.numpy(self, out=out, wait=wait)

    @keywords_checked("DeviceArray.rows")
    def rows(self, indices, *, wait: bool = True) -> np.ndarray:
        """Rows ``indices`` of a (B, N) array as a new (len(indices), N) numpy array, moving only those rows
        from the card (see :meth:`Device.rows`)."""
        return self._device.rows(self, indices, wait=wait)

    def __array__(self, dtype=None, copy=None):
        # An implicit conversion would hide a transfer from the device; make it explicit.
        raise TypeError("a DeviceArray lives on a device: call .numpy() to bring its data back")

    def __repr__(self) -> str:
        state = "closed" if self._device.closed else self._device.name
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={state!r})"


class Device(DeviceProtocol):
    """A backend opened for transforms. Use as a context manager, or call :meth:`close`. Its public
    operations are the device protocol's (host/api/protocol.py).

    Transform methods take a :class:`DeviceArray` of this device (transformed in place and returned)
    or anything :func:`nantucket.ntt` takes (moved to the device first; a new DeviceArray is returned).
    Calls are serialized: a thread calling while another's call runs waits for it (one lock per device,
    its arrays' ``numpy`` included).
    """

    front = "Device"

    def __init__(self, name: str, backend: Backend):
        self.name = name
        self.backend = backend
        #: the prime field the device computes in (hw.model.field.Field): the backend's
        self.field: F.Field = getattr(backend, "field", F.DEFAULT_FIELD)
        self.closed = False
        self._lock = threading.RLock()
        self._submit_lock = threading.Lock()      # submission order = dependency order
        self._count_lock = threading.Lock()
        self.max_pending = DEFAULT_MAX_PENDING
        self._pipeline: Pipeline | None = None     # the stage threads, from the first wait=False call
        #: bytes moved between host memory and the backend's memory so far
        self.transfers = {"to-device": 0, "from-device": 0}
        #: host round trips of resident arrays between transforms (a placement change; see resident.py)
        self.relayouts = 0

    # -- what a kind of device provides ----------------------------------------------------------------

    def _place(self, rows: np.ndarray):
        """(B, N) canonical rows -> the device's storage of them (counting what moves)."""
        raise NotImplementedError

    def _fetch(self, store) -> np.ndarray:
        """The storage's (B, N) rows as a new host array (counting what moves)."""
        raise NotImplementedError

    def _fetch_into(self, store, out: np.ndarray) -> None:
        """The storage's rows written into ``out``, a (B, N) or (E, D, N) view of the result (any strides:
        checks.Shape.view), counting what moves."""
        np.copyto(out, self._fetch(store).reshape(out.shape), casting="unsafe")

    def _transform(self, store, inverse: bool, coset, order: str):
        """Transform every row of the storage; returns the storage holding the result."""
        raise NotImplementedError

    def _lde(self, store, blowup: int, shift: int, order: str = "nn", coeffs: bool = False):
        """The LDE of every row of the storage as a new storage (the values' storage unchanged), its input
        and output orders ``order``; returns (the storage, the (B, M) coefficients as host rows, natural
        order, or None without ``coeffs``)."""
        raise NotImplementedError

    def _values_store(self, rows: np.ndarray):
        """Host rows given to ``lde``, as the storage ``_lde`` takes (default: moved to the device)."""
        return self._place(rows)

    # -- the protocol's operations (host/api/protocol.py declares them, their keywords and wait) -------

    def _serve_asarray(self, x, axis, ext, wait):
        return self._call(wait, lambda: self._asarray_plan(x, axis, ext, held=not wait))

    def _serve_ntt(self, a, inverse, coset, order, axis, ext, wait):
        return self._call(wait, lambda: self._ntt_plan(a, inverse, coset, order, axis, ext, not wait))

    def _serve_lde(self, values, blowup, shift, order, return_coeffs, axis, ext, wait):
        return self._call(wait, lambda: self._lde_plan(values, blowup, shift, order, return_coeffs, axis, ext,
                                                       not wait))

    def _serve_numpy(self, a, out, wait):
        return self._call(wait, lambda: self._numpy_plan(a, out))

    def _serve_rows(self, a, indices, wait):
        return self._call(wait, lambda: self._rows_plan(a, indices))

    def _serve_free(self, a) -> None:
        self._call(True, lambda: self._free_plan(a))

    def _serve_synchronize(self) -> None:
        pipe = self._pipeline
        if pipe is not None:
            pipe.drain()

    def _serve_close(self) -> None:
        with self._lock:
            if self.closed:
                return
            with self._submit_lock:
                pipe, self._closing = self._pipeline, True
            if pipe is not None:
                pipe.stop()
            self.closed = True
            self.backend.close()

    # -- calls: checked in the caller's thread, run inline or by the pipeline ----------------------------

    _closing = False

    def _call(self, wait: bool, prepare):
        """Check the call (``prepare`` -> _Plan) and run it: inline while the device has no pipeline and
        the caller waits, else through the pipeline (a blocking call then waits for its future, so it
        runs after the calls submitted before it)."""
        if wait:
            with self._lock:
                if self._pipeline is None:
                    plan = prepare()
                    value = plan.value
                    for stage in STAGES:
                        if stage in plan.steps:
                            value = plan.steps[stage]()
                    return value
        with self._lock:
            self._check_open()
            if self._pipeline is None:
                self._pipeline = Pipeline(self.name, self.max_pending)
                # dropped without close(): its stage threads end when it is collected
                weakref.finalize(self, self._pipeline.release)
        if self._pipeline.on_stage_thread():
            raise RuntimeError(f"device {self.name!r}: a call from inside one of its own calls")
        with self._submit_lock:
            if self._closing:
                raise RuntimeError(f"device {self.name!r} is closed")
            plan = prepare()
            future = DeviceFuture(self, plan.what, plan.array)
            if not plan.steps:
                future.set_result(plan.value)
            else:
                deps = [job for arr in plan.reads for job in arr.jobs_before(writing=False)]
                deps += [job for arr in plan.writes for job in arr.jobs_before(writing=True)]
                job = self._pipeline.submit(future, plan.steps, deps)
                for arr in plan.reads:
                    arr.add_job(job, writing=False)
                for arr in plan.writes:
                    arr.add_job(job, writing=True)
        return future.result() if wait else future

    def _asarray_plan(self, x, axis=None, ext=None, held=False) -> _Plan:
        self._check_open()
        own = _array_of(x)
        if own is not None:
            self._check_own(own, "x")
            check_not_freed(own, "x")
            _check_layout(own, axis, ext, "x")
            return _Plan("asarray", {}, value=own)
        points, layout = self._own_or_points(x, "x", axis, ext)
        self._check_sizes("x", layout.n)
        self._check_memory(_row_bytes(points) * (2 if held else 1),
                           f"x: {_shape_text(layout.shape if layout.plain else layout.rows_shape)} on the device")
        points = _held(points, x, held)
        arr = DeviceArray(self, None, points.shape, layout)
        return _Plan("asarray", {"upload": lambda: self._fill(arr, points)}, writes=[arr], array=arr)

    def _fill(self, arr: DeviceArray, points: np.ndarray) -> DeviceArray:
        # the rows as a view of the points (columns, limbs): the device's placement reads them in place
        arr.store = self._place(arr.layout.view(points))
        return arr

    def _ntt_plan(self, a, inverse, coset, order, axis=None, ext=None, held=False) -> _Plan:
        self._check_open()
        inverse = C.check_inverse(inverse)
        coset = None if coset is None else C.check_shift(coset, "coset", self.field)
        order = C.check_order(order)
        points, layout = self._own_or_points(a, "a", axis, ext)
        shape = layout.shape if layout.plain else layout.rows_shape     # rows of N points
        if points is not None:
            self._check_sizes("a", shape[-1])
        self._check_memory(self._transform_bytes(shape, inverse)
                           + (0 if points is None else _row_bytes(points) * (2 if held else 1)),
                           f"{'inverse ' if inverse else ''}ntt of {_shape_text(shape)}")
        points = _held(points, a, held)
        arr = _array_of(a) if points is None else DeviceArray(self, None, points.shape, layout)

        def transform():
            _check_source(a)
            store = self._store_of(arr, "a")
            with _writing(store, "intt" if inverse else "ntt"):
                arr.store = self._transform(store, inverse, coset, order)
            return arr
        steps = {"kernel": transform}
        if points is not None:
            steps["upload"] = lambda: self._fill(arr, points)
        return _Plan("intt" if inverse else "ntt", steps, writes=[arr], array=arr)

    def _lde_plan(self, values, blowup, shift, order="nn", return_coeffs=False, axis=None, ext=None,
                  held=False) -> _Plan:
        self._check_open()
        blowup = C.check_blowup(blowup)
        shift = C.check_shift(shift, "shift", self.field)
        order = C.check_order(order)
        C.check_flag(return_coeffs, "return_coeffs")
        points, layout = self._own_or_points(values, "values", axis, ext)
        shape = layout.shape if layout.plain else layout.rows_shape     # rows of N points
        C.check_lde_pair(shape[-1], blowup, "values", self.field)
        self._check_sizes("values", shape[-1], shape[-1] * blowup)
        copy = 0 if points is None else _row_bytes(points) * (2 if held else 1)
        self._check_memory(self._lde_bytes(shape, blowup) + copy,
                           f"lde to {_shape_text(shape[:-1] + (shape[-1] * blowup,))}")
        points = _held(points, values, held)
        src = _array_of(values) if points is None else None
        out_layout = layout.resized(shape[-1] * blowup)
        out = DeviceArray(self, None, out_layout.shape, out_layout)

        def lde():
            _check_source(values)
            if src is not None:
                store = self._store_of(src, "values")
            else:
                store = self._values_store(layout.view(points))
            out.store, coeffs = self._lde(store, blowup, shift, order, bool(return_coeffs))
            if return_coeffs:
                return out, _in_layout(coeffs, layout, self.field.dtype)
            return out
        return _Plan("lde", {"kernel": lde}, reads=[src] if src is not None else [], writes=[out], array=out)

    def _numpy_plan(self, a, given=None) -> _Plan:
        self._check_open()
        arr = _array_of(a)
        if arr is None:
            raise TypeError(f"a: expected a DeviceArray (or a DeviceFuture of one), got {type(a).__name__}")
        self._check_own(arr, "a")
        check_not_freed(arr, "a")
        check_out(given, arr.shape, arr.dtype)

        def fetch():
            _check_source(a)
            self._check_open()
            out = np.empty(arr.shape, dtype=arr.dtype) if given is None else given
            # the rows straight into their places (columns, limbs): one pass, the layout's view of out
            self._fetch_into(self._store_of(arr, "a"), arr.layout.view(out))
            return out
        return _Plan("numpy", {"download": fetch}, reads=[arr])

    def _rows_plan(self, a, indices) -> _Plan:
        self._check_open()
        arr = _array_of(a)
        if arr is None:
            raise TypeError(f"a: expected a DeviceArray (or a DeviceFuture of one), got {type(a).__name__}")
        self._check_own(arr, "a")
        check_not_freed(arr, "a")
        wanted = row_indices(arr, indices)

        def fetch():
            _check_source(a)
            self._check_open()
            got = self._fetch_rows(self._store_of(arr, "a"), wanted)
            return got.astype(arr.dtype, copy=False)
        return _Plan("rows", {"download": fetch}, reads=[arr])

    def _fetch_rows(self, store, wanted: np.ndarray) -> np.ndarray:
        """Rows ``wanted`` of the storage as new host rows, counting what moves (default: host rows)."""
        self._count_points("from-device", len(set(wanted.tolist())) * store.shape[1])
        return store[wanted]

    def _free_plan(self, a) -> _Plan:
        self._check_open()
        arr = _array_of(a)
        if arr is None:
            raise TypeError(f"a: expected a DeviceArray of this device (or a DeviceFuture of one), got "
                            f"{type(a).__name__}")
        self._check_own(arr, "a")
        check_not_freed(arr, "a")
        arr.freed = True                # refused from now on; the memory goes once earlier calls are done

        def free():
            store, arr.store = arr.store, None
            if isinstance(store, RS.ResidentRows):
                store.release()
        return _Plan("free", {"kernel": free}, writes=[arr])

    def _store_of(self, arr: DeviceArray, name: str):
        if arr.store is None:
            check_not_freed(arr, name)
            raise RuntimeError(f"{name}: the array has no contents: the call that was to make it failed")
        failed = getattr(arr.store, "failed", None)
        if failed is not None:
            raise RuntimeError(f"{name}: the array may be half-written: {failed}; its contents are neither the "
                               f"old ones nor the result: make it again with asarray")
        return arr.store

    def _count(self, direction: str, nbytes: int) -> None:
        with self._count_lock:          # the stages count from their threads
            self.transfers[direction] += nbytes

    def _count_points(self, direction: str, points: int) -> None:
        """``points`` moved over the link: the field's word each (4 bytes in a 31-bit field, 8 in
        Goldilocks: what a card's HBM, the link and the point files hold), whatever the host's rows are."""
        self._count(direction, points * self.field.point_bytes)

    def __repr__(self) -> str:
        return f"<nantucket.Device {self.name!r} {self.field.name}{' (closed)' if self.closed else ''}>"

    def _own_or_points(self, x, name: str, axis=None, ext=None) -> tuple[np.ndarray | None, C.Shape]:
        """(None, its layout) for a DeviceArray of this device (or a DeviceFuture of one; ``axis`` and
        ``ext`` None or its own), else (x checked as points, their layout: checks.Shape, ``axis`` default
        -1)."""
        own = _array_of(x)
        if own is not None:
            self._check_own(own, name)
            check_not_freed(own, name)
            _check_layout(own, axis, ext, name)
            return None, own.layout
        if isinstance(x, DeviceFuture):
            raise TypeError(f"{name}: a future of {x.what} is not an array")
        return C.as_shaped(x, name, self.field, -1 if axis is None else axis, ext, native=True)

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

    # -- memory: what a call allocates on the host, checked before it does (0: nothing worth checking) --

    def _check_memory(self, nbytes: int, what: str) -> None:
        if nbytes >= _MEMORY_CHECK_MIN_BYTES:
            check_fits(nbytes, what)

    def _transform_bytes(self, shape: tuple[int, ...], inverse: bool) -> int:
        return 0

    def _lde_bytes(self, shape: tuple[int, ...], blowup: int) -> int:
        return 0


def _check_layout(arr: DeviceArray, axis, ext, name: str) -> None:
    """``axis`` and ``ext`` given with a DeviceArray: None or the array's own (a ValueError otherwise)."""
    arr.layout.check_same(axis, ext, name)


def check_not_freed(arr, name: str) -> None:
    """A ValueError for an array the device's ``free`` gave back (any front's array: ``freed``)."""
    if arr.freed:
        raise ValueError(f"{name}: the array was freed ({arr.device.front}.free): its memory on the device was "
                         "given back; make it again with asarray")



def _in_layout(rows: np.ndarray, layout: C.Shape, dtype) -> np.ndarray:
    """(R, N) host rows as a new array of ``layout``'s shape (its points axis, its limbs) and ``dtype``."""
    out = np.empty(layout.shape, dtype=dtype)
    view = layout.view(out)
    np.copyto(view, rows.reshape(view.shape), casting="unsafe")
    return out


def row_indices(a, indices) -> np.ndarray:
    """``indices`` of ``rows()`` on the resident array ``a``: ``a`` a (B, N) array of rows (axis -1, no
    ext), ``indices`` a 1-D sequence of ints in [-B, B) (TypeError for other types, ValueError naming the
    first out of range), as non-negative int64 indices."""
    if a.ndim != 2 or not a.layout.plain:
        raise ValueError(f"a: rows() takes a (B, N) array of rows (axis -1, no ext); this one has shape "
                         f"{a.shape}, axis {a.axis}, ext {a.ext}: use numpy()")
    rows = a.shape[0]
    got = np.asarray(indices)
    if got.ndim != 1 or (got.size and not np.issubdtype(got.dtype, np.integer)):
        raise TypeError(f"indices: expected a 1-D sequence of row numbers (ints), got "
                        f"{type(indices).__name__} {indices!r:.60}")
    got = got.astype(np.int64)
    bad = np.flatnonzero((got < -rows) | (got >= rows))
    if bad.size:
        raise ValueError(f"indices: row {int(got[bad[0]])} (at position {int(bad[0])}) is outside the array's "
                         f"{rows} rows")
    return np.where(got < 0, got + rows, got)


def check_out(out, shape: tuple, dtype) -> None:
    """``out`` of a ``numpy`` call: None, or a writable C-contiguous numpy array of ``shape`` and ``dtype``
    (TypeError for another type or dtype, ValueError for another shape or layout)."""
    if out is None:
        return
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out: expected a numpy array, got {type(out).__name__}")
    if out.dtype != np.dtype(dtype):
        raise TypeError(f"out: expected dtype {np.dtype(dtype)} (the field's), got {out.dtype}")
    if out.shape != tuple(shape):
        raise ValueError(f"out: expected shape {tuple(shape)}, got {out.shape}")
    if not out.flags.c_contiguous:
        raise ValueError("out: expected a C-contiguous array (a strided view would scatter the gather's writes)")
    if not out.flags.writeable:
        raise ValueError("out: the array is read-only")


@contextlib.contextmanager
def _writing(store, what: str):
    """A call's runs in place on ``store``: if they fail, a resident array (the card's buffers, which the
    kernel may have written in part) is marked, and every later use of it raises naming the failed run."""
    try:
        yield
    except BaseException as e:
        if isinstance(store, RS.ResidentRows):
            store.failed = f"the {what} run on it failed ({type(e).__name__}: {str(e)[:200]})"
        raise


def _held(points, given, held: bool):
    """The points a call uses: with ``held`` (a ``wait=False`` call, which runs later) a copy taken at
    submission unless the checks already made one, so that what was checked is what is used whatever the
    caller writes into its array meanwhile; else the checked points themselves."""
    if points is None or not held or not isinstance(given, np.ndarray) or not np.may_share_memory(points, given):
        return points
    return points.copy()


def _row_bytes(rows: np.ndarray) -> int:
    """The host memory of ``rows`` as the device's (B, N) rows: 8 bytes a point in every field (the
    backends' rows are uint64, a 31-bit field's too)."""
    return rows.size * 8


def _contiguous_rows(rows: np.ndarray) -> np.ndarray:
    """A new C-contiguous (R, N) uint64 copy of (R, N) or (E, D, N) rows of any strides (one pass)."""
    out = np.empty((rows.size // rows.shape[-1], rows.shape[-1]), dtype=np.uint64)
    np.copyto(out.reshape(rows.shape), rows, casting="unsafe")
    return out


def _shape_text(shape: tuple[int, ...]) -> str:
    """(8, 2^20) -> '8 x 2^20 points'; (2^31,) -> '2^31 points'."""
    n = f"2^{shape[-1].bit_length() - 1}"
    return f"{shape[0]} x {n} points" if len(shape) > 1 else f"{n} points"


#: What the model device's host computes: everything
_MODEL_WORK = "all of it (the golden model on this host's CPU)"


class ModelDevice(Device):
    """The golden model: the arrays' buffers are the device memory and are transformed where they are."""

    def _place(self, rows):
        self._count_points("to-device", rows.size)
        return _contiguous_rows(rows)

    def _fetch(self, rows):
        self._check_memory(rows.nbytes, f"the copy of {_shape_text(rows.shape if len(rows) > 1 else rows.shape[1:])}")
        self._count_points("from-device", rows.size)
        return rows.copy()

    def _fetch_into(self, rows, out):
        self._check_memory(rows.nbytes, f"the copy of {_shape_text(rows.shape if len(rows) > 1 else rows.shape[1:])}")
        self._count_points("from-device", rows.size)
        np.copyto(out, rows.reshape(out.shape), casting="unsafe")

    def _transform(self, rows, inverse, coset, order):
        t0 = time.process_time()
        out = T.transform(rows, self._rows_ntt, inverse, coset, order, self.field)
        self.backend.steps = self._projected([step_record(
            "transform", rows.shape[1].bit_length() - 1, cpu_s=time.process_time() - t0, host_work=_MODEL_WORK,
            rows=rows.shape[0])], inverse=inverse, coset=coset)
        self.backend.report["Host work"] = _MODEL_WORK
        return out

    def _projected(self, steps: list[dict], **how) -> list[dict]:
        """``steps`` with the kernel time a card of the model's build (its ``params``, else the field's
        default build) would take, projected from the cycle formulas (host/projection.py), and the
        report's line saying so."""
        params = self.backend.params or BuildParams.default_for(self.field.name)
        self.backend.report["Kernel projection"] = projection_note(params)
        return project_steps(steps, params, **how)

    # The model's peak allocations, measured with tracemalloc (numpy reports its buffers) and rounded up:
    # a transform holds about three arrays of the whole size at once (the bit-reversed or scaled copy, the
    # result of the row transforms, the scaled result) plus the temporaries of the row transforms. Rows
    # up to 2^10 points go through the radix-2 model in chunks of 2^16 points, about 14 chunks' worth (as
    # much as the coset scale's chunks); a longer row through the four-step model, about 5 rows' worth
    # forward and 14 inverse (its 1/N scale is a field multiplication of the whole row), plus its batches
    # of up to 2^15 points in two threads (about 24 batches' worth). An LDE holds the coefficients twice
    # (before and after the coset scale), the zero-extended array, its transform and that transform's
    # temporaries.

    @staticmethod
    def _row_temps(n: int, total: int, inverse: bool) -> int:
        chunked = 14 * 8 * min(total, _CHUNK_POINTS)      # also the coset scale's (transforms.py)
        if n <= _RADIX2_MAX:
            return chunked
        return max(chunked, (14 if inverse else 5) * 8 * n + 24 * 8 * min(n, 1 << 15))

    def _transform_bytes(self, shape, inverse):
        total = int(np.prod(shape))
        return 3 * 8 * total + self._row_temps(shape[-1], total, inverse)

    def _lde_bytes(self, shape, blowup):
        total = int(np.prod(shape))
        m, t = shape[-1], shape[-1] * blowup
        return (2 * 8 * total + 3 * 8 * total * blowup
                + max(self._row_temps(m, total, True), self._row_temps(t, total * blowup, False)))

    def _lde(self, rows, blowup, shift, order="nn", coeffs=False):
        steps: list[dict] = []
        out, c = T.lde(rows, self._rows_ntt, blowup, shift, self.field, order, steps)
        self.backend.steps = self._projected(steps, shift=shift)
        self.backend.report["Host work"] = _MODEL_WORK
        return out, (c if coeffs else None)

    def _rows_ntt(self, rows, inverse):
        out = np.empty_like(rows)
        n = rows.shape[-1]
        if n <= _RADIX2_MAX:
            per = max(1, _CHUNK_POINTS // n)          # bounds the model's temporaries for large batches
            for r0 in range(0, rows.shape[0], per):
                out[r0:r0 + per] = ntt_model.ntt_radix2(rows[r0:r0 + per], inverse, field=self.field)
        else:
            for r, row in enumerate(rows):
                out[r] = ntt_model.ntt(row, inverse, field=self.field)
        return out


#: Host bytes a point of a call's result needs at the peak where the host stages the rows (a size below
#: the kernel's smallest or past one call, a backend without device buffers, an LDE's values or result
#: off the card): the rows' copies for the device, the zero-extended coefficients, the run's result, the
#: layout step's. Measured with tracemalloc on the stand-in card (sim/fake_pyxrt.py, its modelled HBM
#: being host memory too): at most 10.3 x 8 bytes a point over 2^10 .. 2^16-point transforms and LDEs;
#: rounded up.
_STAGED_BYTES_PER_POINT = 11 * 8


class BackendDevice(Device):
    """Any other backend: an array of a native size lives on the card when the backend keeps arrays there
    (:class:`host.backend_base.ResidentArrays`: ``backend.driver_for`` gives a
    :class:`~host.backend_base.CardDriver`), else it is staged in host memory and each transform is one
    batched ``Backend.run``. The memory check counts a call's working memory on the host: the staged rows'
    copies, or for a result that stays on the card its buffers' host maps (XRT keeps a host copy of each
    buffer object), both ways of the link."""

    def _transform_bytes(self, shape, inverse):
        total = int(np.prod(shape))
        if self._driver(shape[-1]) is not None:
            return 0                # in the array's own buffers, counted when it was placed
        return _STAGED_BYTES_PER_POINT * total

    def _lde_bytes(self, shape, blowup):
        m, total = shape[-1], int(np.prod(shape)) * blowup
        if self._driver(m) is not None and self._driver(m * blowup) is not None:
            # chained on the card: the result's buffers (input and output regions) and their host maps
            return 2 * 8 * total + 8 * total // blowup
        return _STAGED_BYTES_PER_POINT * total

    def _driver(self, n: int) -> CardDriver | None:
        if not isinstance(self.backend, ResidentArrays):
            return None
        driver = self.backend.driver_for(n)
        if driver is not None and not isinstance(driver, CardDriver):
            raise TypeError(f"{type(self.backend).__name__}.driver_for({n}): expected a CardDriver or None, "
                            f"got {type(driver).__name__}")
        return driver

    def _place(self, rows):
        driver = self._driver(rows.shape[-1])
        if driver is None:
            return _contiguous_rows(rows)       # staged: each run moves it
        store = RS.upload_rows(driver, rows)    # a view (columns, limbs) is read in place by the scatter
        self._count_points("to-device", rows.size)
        return store

    def _fetch(self, store):
        if not isinstance(store, RS.ResidentRows):
            return store.copy()
        rows = RS.download_rows(store)
        self._count_points("from-device", rows.size)
        return rows

    def _fetch_into(self, store, out):
        if not isinstance(store, RS.ResidentRows):
            np.copyto(out, store.reshape(out.shape), casting="unsafe")
            return
        RS.download_rows(store, out=out)        # the gather writes each point in its place
        self._count_points("from-device", store.rows * store.n)

    def _fetch_rows(self, store, wanted):
        if not isinstance(store, RS.ResidentRows):
            return store[wanted]                # staged in host memory: nothing moves
        out = np.empty((wanted.size, store.n), dtype=np.uint64)
        for chunk in store.chunks:
            mine = np.flatnonzero((wanted >= chunk.row0) & (wanted < chunk.row0 + chunk.rows))
            if mine.size:
                out[mine] = store.driver.download_regions(chunk.bufs, (wanted[mine] - chunk.row0).tolist(),
                                                          buffer=chunk.placement[0], reverse=chunk.placement[1])
        self._count_points("from-device", len(set(wanted.tolist())) * store.n)
        return out

    def _run(self, rows, inverse, coset, order):
        """One Backend.run of host rows (the whole batch in one call), counted."""
        if rows.ndim != 2 or rows.dtype != np.uint64:  # (E, D, N) limbs, uint32: a backend takes (R, N) uint64 rows
            rows = _contiguous_rows(rows)
        # a single row goes as a 1-D array and the options only when set: a backend written for the
        # plain interface (run(points, inverse)) keeps working for what it can do
        options = {} if coset is None and order == "nn" else {"coset": coset, "order": order}
        out = self.backend.run(rows[0] if rows.shape[0] == 1 else rows, inverse, **options)
        out = np.asarray(out, dtype=np.uint64).reshape(rows.shape)
        # a size below the kernel's smallest goes zero-padded to it, over the link both ways
        kernel_n = 1 << (getattr(self.backend, "kernel_log_n", None) or 0)
        moved = rows.shape[0] * max(rows.shape[1], kernel_n)
        self._count_points("to-device", moved)
        self._count_points("from-device", moved)
        return out

    def _relayout(self, store, chunk, placement) -> bool:
        """Give ``chunk`` the placement the next kernel run needs (through the host when it differs)."""
        if chunk.placement == placement:
            return False
        points = RS.relayout(store, chunk, placement)
        self._count_points("from-device", points)
        self._count_points("to-device", points)
        return True

    @staticmethod
    def _in_kernel(driver, inverse: bool, coset) -> bool:
        need = ({"inverse"} if inverse else set()) | ({"coset"} if coset is not None else set())
        return need <= driver.kernel_computes

    def _transform(self, store, inverse, coset, order):
        if not isinstance(store, RS.ResidentRows):
            return self._run(store, inverse, coset, order)
        driver = store.driver
        if not self._in_kernel(driver, inverse, coset):
            # this kernel lacks a transform (a kernel built without it): the host does it around a
            # run, so the points make a round trip
            out = self._run(self._fetch(store), inverse, coset, order)
            self._refill(store, out)
            self.relayouts += 1
            return store
        moved = False
        for chunk in store.chunks:
            moved |= self._relayout(store, chunk, ("input", order[0] == "r"))
            # chain_log_n = log_n: X lands where the next run of this size reads its input
            driver.execute_run(chunk.bufs, Run.of(store.log_n, inverse=inverse, coset=coset, batch=chunk.rows,
                                                  chain_log_n=store.log_n))
            chunk.placement = ("input", order[1] == "r")
        self.relayouts += moved
        self.backend.note_resident(store.n, store.rows, len(store.chunks), inverse, coset, order)
        return store

    def _refill(self, store, rows) -> None:
        """Put host rows back into a resident array's own buffers (natural input placement)."""
        for chunk in store.chunks:
            store.driver.upload(chunk.bufs, rows[chunk.row0:chunk.row0 + chunk.rows])
            chunk.placement = RS.INPUT_NATURAL
        self._count_points("to-device", rows.size)

    def _values_store(self, rows):
        return rows                         # the LDE moves host values itself (each path counts its own)

    def _call_driver(self, n: int) -> CardDriver | None:
        """The driver for the runs of one call of n points per row (host.backend_base.ResidentArrays.
        call_driver: the sim backend runs an LDE on its card although its arrays stay staged)."""
        if not isinstance(self.backend, ResidentArrays):
            return None
        driver = self.backend.call_driver(n)
        return driver if isinstance(driver, CardDriver) else None

    def _lde(self, store, blowup, shift, order="nn", coeffs=False):
        """On a card, when the kernel computes the inverse and the coset and the build chains 2^m to 2^t
        (RS.lde_path: directly, or through sizes between where the pair itself is not placed evenly): the
        values to the card once (a resident array's not at all: copied there between buffer sets,
        :meth:`_lde_chain`) and every run chained there, the orders in the layout step; with ``coeffs`` the
        inverse's coefficients come back between the runs. Otherwise the coefficients come from
        :meth:`_coefficients`, and the coset NTT runs on the card when the size is native there (only the M
        points' units written when the pair is supported), else as one staged run. A backend whose
        arrays stay staged (sim) gets the result back at once. Fills ``backend.steps``."""
        resident = isinstance(store, RS.ResidentRows)
        m = store.n if resident else store.shape[-1]
        log_m, log_t = m.bit_length() - 1, (m * blowup).bit_length() - 1
        keeps = self._driver(m * blowup) is not None       # the result stays on the card
        driver = self._call_driver(m * blowup)
        on_card = driver is not None and self._in_kernel(driver, False, shift)
        path = RS.lde_path(driver.rmap, log_m, log_t) if on_card and self._in_kernel(driver, True, None) else None
        before = self.backend.calls_made()
        if path is not None:
            tags: list[str] = []
            out, c, stayed = self._lde_chain(store, keeps, driver, path, shift, order, coeffs, tags)
            if c is not None:
                self._count_points("from-device", c.size)
            hops = " -> ".join(f"2^{s}" for s in path)
            zero = ("on the card: the inverse writes the coefficients as the zero-extended input of the next "
                    "size (chain_log_n), which reads only them (input_log_m)"
                    + (f"; through {hops}, a forward and an inverse run at each size between (the build "
                       f"cannot place 2^{log_m} points evenly in a 2^{log_t}-point input)" if len(path) > 2 else ""))
            steps = self._card_steps(driver, tags, log_m, log_t, out.rows, {
                "inverse": "none" if not coeffs else "none (the coefficients come back: an inverse kept at "
                           f"2^{log_m} and a forward run restoring the values, then the chained inverse)",
                "zero-extension": "none (" + zero + ")", "coset forward": "none"})
            work = (f"none (the LDE ran on the card: the 2^{log_m}-point inverse chained into the 2^{log_t}-point "
                    f"coset NTT{', through ' + hops if len(path) > 2 else ''}"
                    f"{'; the input stayed on the card, copied between buffer sets there' if stayed else ''}"
                    f"{'; the coefficients brought back' if coeffs else ''})")
            per = len(tags) // len(out.chunks)
            through = f" through {', '.join(f'2^{s}' for s in path[1:-1])}" if len(path) > 2 else ""
            calls = (f"{len(tags)} calls: {len(out.chunks)} x (2^{log_m} inverse chained{through} into 2^{log_t} coset"
                     f"{f', {per} runs' if per != 2 else ''}), batch {out.rows}")
            if not keeps:
                self.backend.report["Host work"] = work
                self.backend.report["Kernel calls"] = calls
                self.backend.note_steps(steps)
                self._count_points("from-device", out.rows_host.size)
                return out.rows_host, c
        else:
            c, inv_where = self._coefficients(store, order[0] == "r"), "card"
            inv_calls = self.backend.calls_made() - before
            # asked again: the inverse may have run on another build of a staged backend
            driver = self._call_driver(m * blowup)
            on_card = driver is not None and self._in_kernel(driver, False, shift)
            if not on_card:
                mid = self.backend.calls_made()
                out = self._run(T.zero_extend(c, blowup), False, shift, "n" + order[1])
                n_rows = int(np.prod(c.shape[:-1]))
                self.backend.steps = [
                    step_record("inverse", log_m, where=inv_where, kernel_calls=inv_calls, rows=n_rows),
                    step_record("zero-extension", log_t, rows=n_rows, host_work=f"the coefficients zero-extended on "
                                f"the host to 2^{log_t} points (the coefficients came back, the zeros go to the device)"),
                    step_record("coset forward", log_t, where="card", kernel_calls=self.backend.calls_made() - mid,
                                rows=n_rows)]
                self._fill_cycles(self.backend.steps, driver)
                self.backend.note_steps(self.backend.steps)
                return self._place(out), (c if coeffs else None)
            padded = driver.rmap.lde_pair_ok(log_m, log_t)
            mid = self.backend.calls_made()
            out = self._coset_padded(keeps, driver, c, log_t, shift, order[1] == "r")
            calls = None
            why = ("the kernel computes no inverse" if not self._in_kernel(driver, True, None) else
                   f"2^{log_m} points are below the kernel's native sizes")
            work = (f"the coefficients through the host ({why}), zero-extended on the card (input_log_m = {log_m})"
                    if padded else f"the coefficients through the host ({why}), zero-extended there")
            self.backend.steps = [
                step_record("inverse", log_m, where=inv_where, kernel_calls=inv_calls, rows=out.rows,
                            host_work="none (the coefficients come to the host)"),
                step_record("zero-extension", log_t, where="card" if padded else "host", rows=out.rows,
                            host_work="none (the host writes only the coefficients' units; the kernel reads "
                                      f"them zero-extended, input_log_m = {log_m})" if padded else
                                      f"the coefficients zero-extended on the host to 2^{log_t} points"),
                step_record("coset forward", log_t, where="card", kernel_calls=self.backend.calls_made() - mid,
                            rows=out.rows)]
            steps = self.backend.steps
            self._fill_cycles(steps, driver)
        self.backend.note_resident(out.n, out.rows, len(out.chunks), False, shift, "n" + order[1])
        self.backend.report["Host work"] = work
        if calls is not None:
            self.backend.report["Kernel calls"] = calls
        self.backend.note_steps(steps)
        if not keeps:                       # a staged backend: the result came back chunk by chunk
            self._count_points("from-device", out.rows_host.size)
            return out.rows_host, (c if coeffs else None)
        return out, (c if coeffs else None)

    def _lde_chain(self, store, keeps: bool, driver, path: list[int], shift: int, order: str, coeffs: bool,
                   tags: list[str]):
        """The LDE chained on the card along ``path`` (RS.lde_path), each run's step appended to ``tags``;
        returns (the result, the coefficients or None, whether the input stayed on the card). A resident
        array of this driver whose result stays on the card too: its rows copied on the card into the
        chain's buffers (RS.lde_resident: ``copy_rows``, host.xrt's ``bo.copy``: no link bytes; the bytes a
        driver without a copy on the card moves are counted both ways), when every chunk sits in the input
        placement of ``order``'s input order. Else the host's rows go to the card: a resident array's not
        in that order come back first (one round trip, as a relayout would be, but the array keeps its
        placement and ``relayouts`` its count)."""
        log_t = path[-1]
        reverse_in, reverse_out = order[0] == "r", order[1] == "r"
        on_run = lambda step, run: tags.append(step)            # noqa: E731
        if (isinstance(store, RS.ResidentRows) and keeps and store.driver is driver
                and all(c.placement == ("input", reverse_in) for c in store.chunks)):
            out, c, link = RS.lde_resident(store, log_t, shift, path=path, reverse_in=reverse_in,
                                           reverse_out=reverse_out, coeffs=coeffs, on_run=on_run)
            self._count("to-device", link)
            self._count("from-device", link)
            return out, c, link == 0
        rows = self._fetch(store) if isinstance(store, RS.ResidentRows) else store
        out, c = self._chunked(keeps, driver, log_t, rows, lambda part: RS.lde_chained(
            driver, part, log_t, shift, path=path, reverse_in=reverse_in, reverse_out=reverse_out,
            coeffs=coeffs, on_run=on_run))
        self._count_points("to-device", rows.size)
        return out, c, False

    def _coset_padded(self, keeps: bool, driver, coeffs, log_t: int, shift: int, reverse_out: bool):
        """The coset NTT of the host ``coeffs`` zero-extended to 2^log_t points on the card (RS.coset_padded),
        its result in the input placement (bit-reversed with ``reverse_out``); for a staged backend one
        chunk of the largest batch at a time, each brought back and its buffers released before the next
        (:meth:`_chunked`: the simulated HBM holds one buffer set)."""
        moved = [0]

        def run(part):
            out, nbytes = RS.coset_padded(driver, part, log_t, shift)
            for chunk in out.chunks:
                chunk.placement = ("input", reverse_out)
            moved[0] += nbytes
            return out, None
        out, _ = self._chunked(keeps, driver, log_t, coeffs, run)
        self._count("to-device", moved[0])
        return out

    def _chunked(self, keeps: bool, driver, log_t: int, rows, run):
        """``run(rows)`` -> (ResidentRows, coefficients or None) on the card; for a backend whose arrays
        stay staged (sim: its simulated HBM holds one buffer set at a time) a chunk of the largest batch at
        a time (RS.parts: views of ``rows``, (R, N) or (E, D, N)), each brought back and released before
        the next (``rows_host`` of the result, (R, N))."""
        if keeps:
            return run(rows)
        outs, cs, chunks = [], [], []
        for r0, part in RS.parts(driver, rows, log_t):     # (R, N) rows or an (E, D, N) view: whole rows
            out, c = run(part)
            outs.append(RS.download_rows(out))
            chunks += [RS.Chunk(r0 + ch.row0, ch.rows, None) for ch in out.chunks]
            out.release()
            cs.append(c)
        done = RS.ResidentRows(driver, 1 << log_t, chunks)      # released: only what ran where, for the report
        done.rows_host = np.concatenate(outs) if len(outs) > 1 else outs[0]
        got = None if cs[0] is None else (np.concatenate(cs) if len(cs) > 1 else cs[0])
        return done, got

    def _card_steps(self, driver, tags: list[str], log_m: int, log_t: int, rows: int, work: dict) -> list[dict]:
        """The step records of kernel runs tagged in order with their steps (RS.lde_runs), for ``rows``
        polynomials."""
        cycles = self.backend.call_cycles(len(tags))
        steps = []
        for name, size in (("inverse", log_m), ("zero-extension", log_t), ("coset forward", log_t)):
            mine = [cy for tag, cy in zip(tags, cycles) if tag == name]
            steps.append(step_record(name, size, where="card", kernel_calls=len(mine), host_work=work[name],
                                     rows=rows))
            if mine and all(cy is not None for cy in mine):
                steps[-1]["cycles"] = sum(mine)
                steps[-1]["projected_s"] = sum(mine) / (driver.params.ntt_mhz * 1e6)
        return steps

    def _fill_cycles(self, steps: list[dict], driver) -> None:
        """The cycles of the steps' kernel calls (the last ones made, in the steps' order), where counted."""
        total = sum(st["kernel_calls"] for st in steps)
        cycles = self.backend.call_cycles(total)
        i = 0
        for st in steps:
            mine = cycles[i:i + st["kernel_calls"]]
            i += st["kernel_calls"]
            if mine and all(cy is not None for cy in mine) and driver is not None:
                st["cycles"] = sum(mine)
                st["projected_s"] = sum(mine) / (driver.params.ntt_mhz * 1e6)

    def _coefficients(self, store, reverse_in: bool = False) -> np.ndarray:
        """The inverse NTT of the values' rows (bit-reversed order with ``reverse_in``), as host rows: a
        resident array's on the card in its own buffers (then restored there by a forward run:
        ntt(intt(v)) = v, nothing uploaded), else one staged Backend.run."""
        if not isinstance(store, RS.ResidentRows) or not self._in_kernel(store.driver, True, None):
            rows = self._fetch(store) if isinstance(store, RS.ResidentRows) else store
            return self._run(rows, True, None, "rn" if reverse_in else "nn")
        driver, parts, moved = store.driver, [], False
        with _writing(store, "lde's inverse (in the values' own buffers)"):
            for chunk in store.chunks:
                moved |= self._relayout(store, chunk, ("input", reverse_in))
                driver.execute_run(chunk.bufs, Run.of(store.log_n, inverse=True, batch=chunk.rows,
                                                      chain_log_n=store.log_n))
                chunk.placement = RS.INPUT_NATURAL          # the coefficients, natural order
                parts.append(RS.download_rows(store, [chunk]))
                driver.execute_run(chunk.bufs, Run.of(store.log_n, batch=chunk.rows, chain_log_n=store.log_n))
                chunk.placement = ("input", reverse_in)     # the values again, where they were
        self.relayouts += moved
        coeffs = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self._count_points("from-device", coeffs.size)
        return coeffs


def make_device(backend: str, field, max_pending: int, options: dict) -> Device:
    """One backend opened as a Device (options checked by the caller: host/api/opening.py)."""
    valid = backend_options(backend)
    if valid is None or "field" in valid:
        options = dict(options, field=field)
    elif field is not F.DEFAULT_FIELD:
        raise ValueError(f"field: the {backend} backend computes in {F.DEFAULT_FIELD.name} only, not {field.name}")
    if backend == "sim" and "progress" not in options:     # the start shown on a terminal, else logged
        from nantucket.host.progress import StartLines
        options = dict(options, progress=StartLines())
    dev = make_backend(backend, **options)
    kind = ModelDevice if isinstance(dev, ModelBackend) else BackendDevice
    device = kind(backend, dev)
    device.max_pending = max_pending
    return device
