"""Asynchronous device calls: :class:`DeviceFuture` and the three-stage :class:`Pipeline` behind
``wait=False``.

A call is a :class:`Job`: its argument checks run in the caller's thread when it is submitted (a bad
argument raises there and then, nothing queued), then up to three steps, each on its stage's thread:

- ``upload``: host points to the device (``asarray``, the placing of a numpy ``ntt`` argument);
- ``kernel``: the transforms (``ntt``, ``intt``, ``lde``; a staged backend's whole ``Backend.run``);
- ``download``: points back to the host (``numpy``).

Each stage takes its jobs in submission order, so while the kernel runs job i the upload stage can move
job i+1's points to the card and the download stage bring job i-1's back: a stream of jobs goes at the
pace of its slowest stage, not of their sum. A job that writes or reads an array waits for the earlier
jobs that write it (and a writer for the earlier readers too), so the results are those of the calls run
one after the other in submission order. Jobs only ever wait for earlier jobs: no deadlock.

The pipeline holds at most ``max_pending`` jobs (submitted and not finished): submitting one more
blocks until the oldest finishes, so host memory (each job's points) and one job's latency (the jobs
ahead of it) stay bounded whatever the submission rate.
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
from numbers import Integral

__all__ = ["DeviceFuture", "Pipeline", "Job", "STAGES", "DEFAULT_MAX_PENDING", "check_max_pending", "check_wait"]

STAGES = ("upload", "kernel", "download")
#: Jobs a device holds (submitted, not finished) before a further submission blocks.
DEFAULT_MAX_PENDING = 4


def check_wait(wait) -> bool:
    if not isinstance(wait, bool):
        raise TypeError(f"wait: expected True or False, got {type(wait).__name__} {wait!r:.40}")
    return wait


def check_max_pending(n) -> int:
    if not isinstance(n, Integral) or isinstance(n, bool):
        raise TypeError(f"max_pending: expected a positive int, got {type(n).__name__} {n!r:.40}")
    if n < 1:
        raise ValueError(f"max_pending: expected a positive int (jobs a device holds), got {n}")
    return int(n)


class DeviceFuture(cf.Future):
    """What a ``wait=False`` call returns: a :class:`concurrent.futures.Future` (so
    ``concurrent.futures.wait``/``as_completed`` and ``asyncio.wrap_future`` take it): ``result(timeout=None)``
    gives what the blocking call returns (or raises its error), ``done()``, ``exception(timeout=None)``,
    ``add_done_callback(fn)``. A submitted call always runs: ``cancel()`` returns False (``running()``
    says False until it is done). ``device``: the device that runs it; ``array``: the array the call makes
    or transforms (None for another call). The device settles it with ``set_result`` /
    ``set_exception``."""

    def __init__(self, device, what: str, array=None):
        super().__init__()
        self.device = device
        self.what = what
        #: the array the call makes or transforms (None: the call's value is not an array)
        self.array = array

    def cancel(self) -> bool:
        # the job is queued on the device's stages, which run every job they are given: a cancelled
        # future would later be settled by its job (InvalidStateError) and its array left half-made
        return False

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
        return f"<DeviceFuture {self.what} on {self.device.name!r} ({state})>"


class Job:
    """A submitted call: ``steps`` {stage: callable()}, the last one's value the result; ``deps`` the
    earlier jobs it waits for."""

    def __init__(self, future: DeviceFuture, steps: dict, deps: list["Job"]):
        self.future, self.steps, self.deps = future, steps, deps
        self.finished = threading.Event()
        self.stage_done = {s: threading.Event() for s in steps}
        self.error: BaseException | None = None
        self.value = None


class Pipeline:
    """The stage threads of one device and its bounded queue of jobs (see the module's docstring)."""

    def __init__(self, name: str, max_pending: int):
        self.name = name
        self.max_pending = max_pending
        self._slots = threading.BoundedSemaphore(max_pending)
        self._queues = {s: queue.SimpleQueue() for s in STAGES}
        self._submit_lock = threading.Lock()
        self._pending: set[Job] = set()
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, args=(s,), name=f"nantucket {name} {s}",
                                          daemon=True) for s in STAGES]
        self._stage_of_thread = {}
        for t in self._threads:
            t.start()
            self._stage_of_thread[t.ident] = t.name

    def on_stage_thread(self) -> bool:
        return threading.get_ident() in self._stage_of_thread

    def submit(self, future: DeviceFuture, steps: dict, deps: list[Job]) -> Job:
        """Queue a job (blocks while ``max_pending`` jobs are pending)."""
        self._slots.acquire()
        with self._submit_lock:
            if self._stopped:
                self._slots.release()
                raise RuntimeError(f"device {self.name!r} is closed")
            job = Job(future, steps, [d for d in deps if not d.finished.is_set()])
            self._pending.add(job)
            for stage in STAGES:
                if stage in steps:
                    self._queues[stage].put(job)
        return job

    def _work(self, stage: str) -> None:
        q = self._queues[stage]
        while True:
            job = q.get()
            if job is None:
                return
            before = [s for s in STAGES[:STAGES.index(stage)] if s in job.steps]
            if before:
                job.stage_done[before[-1]].wait()
            else:
                for dep in job.deps:
                    dep.finished.wait()
            if job.error is None:
                try:
                    job.value = job.steps[stage]()
                except BaseException as e:          # handed to the caller through the future
                    job.error = e
            job.stage_done[stage].set()
            if stage == [s for s in STAGES if s in job.steps][-1]:
                self._finish(job)

    def _finish(self, job: Job) -> None:
        # the job keeps nothing of the call once it is over: its steps' closures hold the arrays it read
        # and the arrays hold the job (their last writer or readers), a cycle that would keep a released
        # array's device buffers until the garbage collector's next pass
        value, job.value, job.steps, job.deps = job.value, None, {}, []
        future, job.future = job.future, None
        if job.error is not None:
            future.set_exception(job.error)
        else:
            future.set_result(value)
        with self._submit_lock:
            self._pending.discard(job)
        job.finished.set()
        self._slots.release()

    def drain(self) -> None:
        """Wait for every pending job."""
        with self._submit_lock:
            pending = list(self._pending)
        for job in pending:
            job.finished.wait()

    def release(self) -> None:
        """End the stage threads once they have run what they were given, without waiting for them: what
        a device dropped without ``close()`` does when it is collected (its stage threads hold this
        pipeline, not the device, so nothing else would end them)."""
        with self._submit_lock:
            if self._stopped:
                return
            self._stopped = True
        for stage in STAGES:
            self._queues[stage].put(None)

    def stop(self) -> None:
        """Drain, then end the stage threads; later submissions raise RuntimeError (closed)."""
        with self._submit_lock:
            self._stopped = True
        self.drain()
        for stage in STAGES:
            self._queues[stage].put(None)
        for t in self._threads:
            if t.ident != threading.get_ident():
                t.join()
