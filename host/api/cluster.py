"""Several hosts: ``nantucket.open(backend, cluster=client_or_address, ...)`` on Dask distributed.

A :class:`ClusterDevice` splits every batch by rows over the cluster's workers (as equal as the rows
allow; a single row to the next worker in turn). Each worker opens its own device the first time a call
of this ClusterDevice reaches it (``nantucket.open(backend, field=..., devices=..., **options)``, kept in
the worker's process for every later task, not opened per task) and keeps the arrays it made there: a
:class:`ClusterArray` is its parts' (worker, key), so chained transforms move nothing between hosts and
``numpy()`` gathers the rows back in order.

A worker that leaves the cluster while it holds a part of a call whose input is host data (``asarray``,
``ntt``/``lde`` of a numpy array) has that part redone on another worker (the host still has the rows);
a part that only lived on the worker (a ClusterArray's) is lost, and the call raises :class:`WorkerLost`
naming the worker. Dask is an optional dependency (``pip install 'nantucket[dask]'``).

On a real cluster run one worker per card (``dask worker SCHEDULER --nworkers 1 --nthreads 1``, and on
the xrt backend ``NANTUCKET_XRT_DEVICE=i`` in worker i's environment picks its card when the options
give no ``device``); see docs/api.md "Several hosts".
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import os
import threading
import uuid

import numpy as np

from nantucket.host.backend_base import DeviceError

from . import checks as C
from .device import check_not_freed, check_out, row_indices
from .futures import DeviceFuture
from .protocol import DeviceProtocol
from .split import SplitArray

__all__ = ["ClusterDevice", "ClusterArray", "WorkerLost", "open_cluster"]

#: On a worker: {device uid: Device} opened by this process, {device uid: times opened}, {key: DeviceArray}
_DEVICES: dict = {}
_OPENED: dict = {}
_ARRAYS: dict = {}
_WORKER_LOCK = threading.Lock()
#: How often a waiting call checks that the workers it waits for are still there (seconds).
_POLL_S = 0.25


class WorkerLost(DeviceError):
    """A worker holding part of an array left the cluster: ``worker`` its address."""

    def __init__(self, message: str, worker: str):
        super().__init__(message)
        self.worker = worker


# -- on the workers -------------------------------------------------------------------------------------

def _device(spec):
    uid, opener, backend, field, devices, max_pending, options = spec
    with _WORKER_LOCK:
        dev = _DEVICES.get(uid)
        if dev is None:
            if backend == "xrt" and devices is None and "device" not in options and "NANTUCKET_XRT_DEVICE" in os.environ:
                options = dict(options, device=int(os.environ["NANTUCKET_XRT_DEVICE"]))
            dev = _DEVICES[uid] = opener(backend, C.check_field(field), devices, max_pending, options)
            _OPENED[uid] = _OPENED.get(uid, 0) + 1
        return dev


def _here() -> str:
    from distributed import get_worker
    return get_worker().address


def _keep(a):
    """Keep the array a call made here (an LDE's with ``return_coeffs``: (array, coefficients)); its
    handle (this worker, its key, the coefficients or None)."""
    a, coeffs = a if isinstance(a, tuple) else (a, None)
    key = uuid.uuid4().hex
    _ARRAYS[key] = a
    return _here(), key, coeffs


def _w_put(spec, rows, op, kw):
    """asarray / ntt / lde of host rows on this worker's device; the new array's handle."""
    return _keep(getattr(_device(spec), op)(rows, **kw))


def _array(key):
    try:
        return _ARRAYS[key]
    except KeyError:
        raise RuntimeError(f"the array part {key} is not on worker {_here()} (its worker restarted?)") from None


def _w_apply(spec, key, op, kw):
    """ntt / intt in place (the same handle) or lde (a new one) of an array held here."""
    a = getattr(_device(spec), op)(_array(key), **kw)
    if op == "lde":
        return _keep(a)
    return _here(), key, None


def _w_numpy(spec, key):
    return _array(key).numpy()


def _w_rows(spec, key, indices):
    return _array(key).rows(indices)


def _w_free(keys):
    for k in keys:
        _ARRAYS.pop(k, None)


def _w_close(uid):
    dev = _DEVICES.pop(uid, None)
    if dev is not None:
        dev.close()


def _w_opened(uid):
    return _OPENED.get(uid, 0)


# -- on the client --------------------------------------------------------------------------------------

class ClusterArray(SplitArray):
    """An array whose rows live on the cluster's workers: ``parts`` [(worker, key, rows)], in row order."""

    _where, _holders_name = "the cluster's workers", "workers"
    workers = property(lambda self: [w for w, _, _ in self.parts])

    def _holders(self) -> list:
        return self.workers


class _Task:
    """One part of a call: ``fn(*args)`` on ``worker``; ``retry``: may run on another worker instead."""

    def __init__(self, fn, args, worker, retry):
        self.fn, self.args, self.worker, self.retry, self.future = fn, args, worker, retry, None


class ClusterDevice(DeviceProtocol):
    """A device per worker of a Dask cluster, as one device (see the module's docstring): the device
    protocol's operations (host/api/protocol.py), each split over the workers."""

    front = "ClusterDevice"

    def __init__(self, client, own_client: bool, opener, backend: str, field, devices, max_pending: int,
                 options: dict):
        self.client, self._own_client = client, own_client
        self.name = f"{backend} on {len(self.workers())} workers"
        self.field = field
        self.max_pending = max_pending
        self._spec = (uuid.uuid4().hex, opener, backend, field.name, devices, max_pending, options)
        self._next = itertools.count()
        self._calls = cf.ThreadPoolExecutor(1, thread_name_prefix="nantucket cluster")    # submission order
        self._slots = threading.BoundedSemaphore(max_pending)
        self.closed = False

    def workers(self) -> list[str]:
        """The addresses of the cluster's workers now."""
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def opened(self) -> dict[str, int]:
        """{worker: how many times it opened this device} (once each, however many tasks it ran)."""
        return self.client.run(_w_opened, self._spec[0])

    # -- running parts ------------------------------------------------------------------------------

    def _submit(self, task: _Task) -> None:
        task.future = self.client.submit(task.fn, *task.args, workers=[task.worker], allow_other_workers=False,
                                         pure=False)

    def _run(self, tasks: list[_Task]) -> list:
        """Every task's value, in order; a task whose worker left is moved to another worker when it may
        be (``retry``), else WorkerLost."""
        from distributed import wait as dask_wait
        for t in tasks:
            self._submit(t)
        while True:
            try:
                dask_wait([t.future for t in tasks], timeout=_POLL_S)
            except (TimeoutError, cf.TimeoutError):
                pass
            if all(t.future.status == "finished" for t in tasks):
                values = self._fetch(tasks)
                if values is not None:
                    return values
                continue                            # a finished part's worker left: moved, wait again
            alive = self.workers()
            for t in tasks:
                if t.future.status == "finished":
                    continue
                gone = t.worker not in alive
                if t.future.status == "error" and not gone:
                    t.future.result()               # raises the worker's error
                if gone or t.future.status == "error":
                    if not t.retry:
                        raise WorkerLost(f"worker {t.worker} left the cluster holding part of the array "
                                         "(its rows are lost; compute them again)", t.worker)
                    self._move(t, alive)

    def _move(self, t: _Task, alive: list[str]) -> None:
        """Run ``t`` again on another worker (its own left, or failed there)."""
        if not alive:
            alive = self.workers()          # asked again: one answer can be empty while workers come and go
        if not alive:
            raise WorkerLost(f"worker {t.worker} left the cluster and no worker is left", t.worker)
        t.future.cancel()
        t.worker = alive[next(self._next) % len(alive)]
        self._submit(t)

    def _fetch(self, tasks: list[_Task]) -> list | None:
        """The values of finished tasks, each fetched from its worker, which may leave before it is
        fetched: then a ``retry`` task is moved (None: wait for it again), any other raises WorkerLost.
        (A fetch without a timeout from a worker that left waits forever.)"""
        values = []
        for t in tasks:
            while True:
                try:
                    values.append(t.future.result(timeout=4 * _POLL_S))
                    break
                except (TimeoutError, cf.TimeoutError):
                    alive = self.workers()
                    if t.worker in alive:
                        continue
                    if not t.retry:
                        raise WorkerLost(f"worker {t.worker} left the cluster holding part of the array "
                                         "(its rows are lost; compute them again)", t.worker) from None
                    self._move(t, alive)
                    return None
        return values

    def _split(self, rows: int) -> list[tuple[str, int, int]]:
        alive = self.workers()
        if not alive:
            raise RuntimeError(f"cluster: no workers left in {self.client.scheduler.address}")
        if rows == 1:
            return [(alive[next(self._next) % len(alive)], 0, 1)]
        k, parts, r0 = min(len(alive), rows), [], 0
        for i in range(k):
            n = rows // k + (i < rows % k)
            parts.append((alive[i], r0, n))
            r0 += n
        return parts

    def _put(self, x, name, op, kw, blowup=1, axis=None, ext=None):
        """Host points split over the workers by the batch's elements (rows, or columns with axis 0; the
        limbs of an element together), each part a contiguous copy taken now (it is pickled anyway; a
        ``wait=False`` call's tasks go out later, and must send what was checked, not what the caller's
        array holds by then). An LDE with
        ``return_coeffs`` gives (the ClusterArray, the parts' coefficients joined in the points' layout)."""
        points, layout = self._points(x, name, axis, ext)
        parts = self._split(layout.elements)
        kw = dict(kw, axis=layout.axis, ext=layout.ext)
        tasks = [_Task(_w_put, (self._spec, np.array(layout.part(points, e0, e0 + n), order="C"), op, kw), w, True)
                 for w, e0, n in parts]
        out = layout.resized(layout.n * blowup)

        def run():
            handles = self._run(tasks)
            a = ClusterArray(self, [(w, k, n) for (w, k, _), (_, _, n) in zip(handles, parts)], out.shape, out)
            return self._with_coeffs(a, handles, layout, kw)
        return run

    @staticmethod
    def _with_coeffs(a, handles, layout, kw):
        """``a``, or (``a``, the coefficients of the parts joined in ``layout``) for an LDE's
        ``return_coeffs``."""
        return (a, layout.join([c for _, _, c in handles])) if kw.get("return_coeffs") else a

    def _apply(self, a, op, kw, blowup=1):
        tasks = [_Task(_w_apply, (self._spec, key, op, kw), w, False) for w, key, _ in a.parts]
        out = a.layout.resized(a.layout.n * blowup)

        def run():
            handles = self._run(tasks)
            if op != "lde":
                return a
            new = ClusterArray(self, [(w, k, n) for (w, k, _), (_, _, n) in zip(handles, a.parts)], out.shape, out)
            return self._with_coeffs(new, handles, a.layout, kw)
        return run

    def _points(self, x, name, axis=None, ext=None):
        if self.closed:
            raise RuntimeError(f"device {self.name!r} is closed")
        if isinstance(x, DeviceFuture):
            x = x.result()
        if isinstance(x, ClusterArray):
            return x
        return C.as_shaped(x, name, self.field, -1 if axis is None else axis, ext, native=True)

    def _go(self, wait: bool, what: str, run):
        if wait:
            return run()
        self._slots.acquire()
        fut = DeviceFuture(self, what)

        def job():
            try:
                fut.set_result(run())
            except BaseException as e:
                fut.set_exception(e)
            finally:
                self._slots.release()
        self._calls.submit(job)
        return fut

    def _own(self, a, name):
        if isinstance(a, DeviceFuture) and a.device is self:
            a = a.result()
        if isinstance(a, ClusterArray):
            if a.device is not self:
                raise ValueError(f"{name}: the array lives on another device ({a.device.name!r})")
            if self.closed:
                raise RuntimeError(f"device {self.name!r} is closed")
            check_not_freed(a, name)
            return a
        return None

    # -- the protocol's operations (host/api/protocol.py declares them, their keywords and wait) -------

    def _serve_asarray(self, x, axis, ext, wait):
        own = self._own(x, "x")
        if own is not None:
            own.layout.check_same(axis, ext, "x")
            return self._go(wait, "asarray", lambda: own)
        return self._go(wait, "asarray", self._put(x, "x", "asarray", {}, axis=axis, ext=ext))

    def _serve_ntt(self, a, inverse, coset, order, axis, ext, wait):
        kw = dict(inverse=C.check_inverse(inverse), order=C.check_order(order),
                  coset=None if coset is None else C.check_shift(coset, "coset", self.field))
        own = self._own(a, "a")
        if own is not None:
            own.layout.check_same(axis, ext, "a")
        run = self._apply(own, "ntt", kw) if own is not None else self._put(a, "a", "ntt", kw, axis=axis, ext=ext)
        return self._go(wait, "ntt", run)

    def _serve_lde(self, values, blowup, shift, order, return_coeffs, axis, ext, wait):
        """Device.lde split by the batch's elements over the workers; with ``return_coeffs`` (a new
        ClusterArray, the coefficients of every worker's part joined back in order)."""
        kw = dict(blowup=C.check_blowup(blowup), shift=C.check_shift(shift, "shift", self.field),
                  order=C.check_order(order), return_coeffs=C.check_flag(return_coeffs, "return_coeffs"))
        own = self._own(values, "values")
        if own is not None:
            own.layout.check_same(axis, ext, "values")
            return self._go(wait, "lde", self._apply(own, "lde", kw, blowup))
        return self._go(wait, "lde", self._put(values, "values", "lde", kw, blowup, axis=axis, ext=ext))

    def _serve_numpy(self, a, out, wait):
        own = self._own(a, "a")
        if own is None:
            raise TypeError(f"a: expected a ClusterArray, got {type(a).__name__}")
        check_out(out, own.shape, own.dtype)
        tasks = [_Task(_w_numpy, (self._spec, key), w, False) for w, key, _ in own.parts]

        def run():
            joined = own.layout.join(self._run(tasks))     # along the batch axis
            if out is None:
                return joined
            np.copyto(out, joined)
            return out
        return self._go(wait, "numpy", run)

    def _serve_rows(self, a, indices, wait):
        """Device.rows over the workers: each worker brings back only the rows asked of its part, joined
        in the order asked."""
        own = self._own(a, "a")
        if own is None:
            raise TypeError(f"a: expected a ClusterArray, got {type(a).__name__}")
        wanted = row_indices(own, indices)
        tasks, picks, r0 = [], [], 0
        for w, key, rows in own.parts:
            mine = np.flatnonzero((wanted >= r0) & (wanted < r0 + rows))
            if mine.size:
                tasks.append(_Task(_w_rows, (self._spec, key, (wanted[mine] - r0).tolist()), w, False))
                picks.append(mine)
            r0 += rows
        n, dtype = own.shape[1], own.dtype

        def run():
            out = np.empty((wanted.size, n), dtype=dtype)
            for mine, got in zip(picks, self._run(tasks)):
                out[mine] = got
            return out
        return self._go(wait, "rows", run)

    def _serve_free(self, a) -> None:
        """Drop an array's parts on their workers (the workers' memory; ``a`` becomes unusable), after
        the calls submitted before."""
        own = self._own(a, "a")
        if own is None:
            raise TypeError(f"a: expected a ClusterArray of this device, got {type(a).__name__}")
        own.freed = True
        self._serve_synchronize()
        for w, key, _ in own.parts:
            if w in self.workers():
                self.client.submit(_w_free, [key], workers=[w], pure=False).result()

    def _serve_synchronize(self) -> None:
        self._calls.submit(lambda: None).result()

    def _serve_close(self) -> None:
        """Finish the calls submitted so far, close every worker's device, and the client if
        ``open`` made it from an address."""
        if self.closed:
            return
        self._calls.shutdown(wait=True)
        self.closed = True
        try:
            self.client.run(_w_close, self._spec[0])
        finally:
            if self._own_client:
                self.client.close()

    def __repr__(self) -> str:
        return f"<nantucket.ClusterDevice {self.name!r} {self.field.name}{' (closed)' if self.closed else ''}>"


def open_cluster(cluster, backend: str, opener, *, field, devices, max_pending: int, **options) -> ClusterDevice:
    """:func:`nantucket.open` with ``cluster``: a ``distributed.Client`` or a scheduler address; each
    worker opens its device with ``opener(backend, field, devices, max_pending, options)``."""
    try:
        import distributed
    except ImportError as e:
        raise RuntimeError(f"cluster: needs Dask distributed ({e}): pip install 'nantucket[dask]'") from e
    if isinstance(cluster, distributed.Client):
        client, own = cluster, False
    elif isinstance(cluster, str):
        client, own = distributed.Client(cluster, timeout="10s"), True
    else:
        raise TypeError(f"cluster: expected a dask.distributed Client or a scheduler address (str), got "
                        f"{type(cluster).__name__} {cluster!r:.40}")
    dev = ClusterDevice(client, own, opener, backend, field, devices, max_pending, dict(options))
    if not dev.workers():
        dev.close()
        raise ValueError(f"cluster: the scheduler at {client.scheduler.address} has no workers")
    return dev
