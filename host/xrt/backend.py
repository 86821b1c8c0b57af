"""The XRT backend class, :class:`XrtBackend`: a card opened through the pyxrt adapter, with its
transfers (transfers.py), runs (runs.py) and identification (identity.py). See host/xrt/__init__.py."""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as cf_wait
from dataclasses import astuple
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import CYCLE_WORDS, StatusRecord
from nantucket.hw.model.run import Run
from nantucket.hw.flow.build_root import build_base
from nantucket.host.backend_base import (Backend, CardDriver, ResidentArrays, check_build_field, check_params,
                                        keywords_checked, step_record)
from nantucket.host import large
from nantucket.host.kernel_plan import KERNEL_TRANSFORMS, plan_transform

from . import identity
from .adapter import PyxrtAdapter, import_pyxrt
from .errors import KernelRefused, UnsupportedSize, XclbinNotFound, XrtError, noting_errors
from .runs import KernelRuns, kernel_calls_text, kernel_size_text
from .transfers import DeviceBuffers, Transfers, progress_sink

__all__ = ["XrtBackend", "default_xclbin", "MEASURED_LINES"]

#: The report lines of the kernel's own cycle counts (its status records), when it counts them.
MEASURED_LINES = ("Measured cycles", "Measured time")
#: Buffer sets a run of several kernel calls turns through: the call being uploaded, the one running,
#: the one coming back (three times the largest call's 2^(2k) points of HBM: 384 MiB on the default build;
#: two would make the upload of call i+1 wait for the read-back of call i-1).
_BUFFER_SETS = 3


def default_xclbin() -> Path:
    """build/hw_emu/nantucket.xclbin under XCL_EMULATION_MODE=hw_emu, else build/hw/nantucket.xclbin (the
    build folder of hw/flow/build_root.py: ~/.cache/nantucket installed from a wheel, or NANTUCKET_BUILD_DIR)."""
    target = "hw_emu" if os.environ.get("XCL_EMULATION_MODE") == "hw_emu" else "hw"
    return build_base() / target / f"{R.KERNEL_NAME}.xclbin"


def _check_timeout(timeout_s) -> float | None:
    """``timeout_s``: None (the default), a positive number of seconds, or math.inf (no limit)."""
    if timeout_s is None:
        return None
    if not isinstance(timeout_s, Real) or isinstance(timeout_s, (bool, np.bool_)):
        raise TypeError(f"timeout_s: expected a positive number of seconds (or None), got "
                        f"{type(timeout_s).__name__} {timeout_s!r:.60}")
    timeout_s = float(timeout_s)
    if not timeout_s > 0:           # also nan
        raise ValueError(f"timeout_s: expected a positive number of seconds, got {timeout_s!r}")
    return timeout_s


def _check_computes(kernel_computes) -> frozenset:
    """``kernel_computes``: a collection of names from KERNEL_TRANSFORMS (a str is not one)."""
    if isinstance(kernel_computes, (str, bytes)) or not isinstance(kernel_computes, (set, frozenset, list, tuple)):
        raise TypeError(f"kernel_computes: expected a set of transform names (from "
                        f"{', '.join(sorted(KERNEL_TRANSFORMS))}), got {type(kernel_computes).__name__} "
                        f"{kernel_computes!r:.60}")
    unknown = [c for c in kernel_computes if c not in KERNEL_TRANSFORMS]
    if unknown:
        raise ValueError(f"kernel_computes: unknown transforms {unknown} (known: "
                         f"{', '.join(sorted(KERNEL_TRANSFORMS))})")
    return frozenset(kernel_computes)


def _check_options(device, progress, xclbin) -> tuple[int, Path]:
    """The device index and the xclbin path, checked (TypeError, ValueError, XclbinNotFound)."""
    if not isinstance(device, Integral) or isinstance(device, bool):
        raise TypeError(f"device: expected a device index (int >= 0), got {type(device).__name__} {device!r}")
    if device < 0:
        raise ValueError(f"device: expected a device index >= 0, got {device!r}")
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress: expected None, True, False or a callable taking one line, got "
                        f"{type(progress).__name__} {progress!r:.60}")
    if xclbin is not None and not isinstance(xclbin, (str, os.PathLike)):
        raise TypeError(f"xclbin: expected a path (str or os.PathLike), got {type(xclbin).__name__} {xclbin!r:.60}")
    path = Path(xclbin) if xclbin is not None else default_xclbin()
    if path.is_dir():
        raise XclbinNotFound(f"xclbin: {path} is a directory, not an xclbin file")
    if not path.is_file():
        raise XclbinNotFound(f"xclbin: {path} does not exist (build it with "
                             "`make build TARGET=hw`, or pass --xclbin PATH)")
    return int(device), path


def _emulation(xclbin: Path, timeout_s: float | None) -> tuple[float | None, str | None]:
    """(the wait timeout: 10 s on a card by default, none under XCL_EMULATION_MODE or with math.inf;
    the report's "Emulation" line or None). Points XRT at the xclbin's emconfig.json when emulated."""
    emulated = os.environ.get("XCL_EMULATION_MODE") in ("hw_emu", "sw_emu")
    if timeout_s is None:
        timeout_s = None if emulated else 10.0
    elif math.isinf(timeout_s):
        timeout_s = None
    emconfig = xclbin.parent / "emconfig.json"
    if emulated and "EMCONFIG_PATH" not in os.environ and emconfig.is_file():
        # XRT looks for emconfig.json next to the executable (python) unless told where.
        os.environ["EMCONFIG_PATH"] = str(emconfig.parent.resolve())
        return timeout_s, f"{os.environ['XCL_EMULATION_MODE']}, EMCONFIG_PATH={emconfig.parent}"
    return timeout_s, None


class XrtBackend(Backend, ResidentArrays, CardDriver):
    """A nantucket kernel on an Alveo card through pyxrt.

    ``XrtBackend(params=None, xclbin=None, device=0, pyxrt_module=None, *, field="goldilocks", layout=None,
    timeout_s=None, progress=None, kernel_computes=KERNEL_TRANSFORMS)``

    - params: the BuildParams the xclbin was built with; None reads them from the ID block, or when
      it cannot be read from the ``build_params.json`` the Vitis flow writes beside the xclbin, or
      takes the defaults (without the ID block a self-test transform confirms them);
    - field: the field the caller's points are in; the build's (``params.field``) must be it, checked
      before the card is opened when params are given, else once the card's build is known;
    - xclbin: path; default :func:`default_xclbin`;
    - pyxrt_module: the pyxrt module to use (tests pass :class:`sim.fake_pyxrt.FakePyxrt`);
    - layout: an HbmLayout instance used for runs of its size (``layout.log_n``); every size uses
      ``hw.model.layout.HbmLayout(params, log_n)`` by default;
    - timeout_s: kernel wait timeout, a positive real number of seconds (math.inf: no limit); default
      10 s on a card, unlimited under XCL_EMULATION_MODE;
    - progress: None (transfer progress on stderr from 2^20 points on), False, True (always), or a
      callable taking one line, which also gets a line per stage (opening, loading, each kernel call)
      and every XrtError before it is raised: the device log of the command line;
    - kernel_computes: which of "inverse", "coset", "batch" the kernel computes (default all; the
      host does the rest, host/kernel_plan.py).

    Every argument is checked before pyxrt is imported or the card opened; an unknown keyword is a
    TypeError naming it and the valid ones; a missing xclbin or a directory is XclbinNotFound (also a
    ValueError: a bad argument).
    """

    name = "xrt"

    @keywords_checked()
    def __init__(self, params: BuildParams | None = None, xclbin=None, device: int = 0,
                 pyxrt_module=None, *, field="goldilocks", layout=None, timeout_s: float | None = None,
                 progress=None, kernel_computes=KERNEL_TRANSFORMS):
        super().__init__()
        check_params(params)
        # without params the card says which build (and field) it holds: checked once it is open
        self.field = F.get(field, "field") if params is None else check_build_field(field, params, "the xrt card")
        timeout_s = _check_timeout(timeout_s)
        device, self.xclbin_path = _check_options(device, progress, xclbin)
        computes = _check_computes(kernel_computes)
        self._progress_opt = progress
        self._xrt = PyxrtAdapter(pyxrt_module if pyxrt_module is not None else import_pyxrt())
        self.timeout_s, emulation = _emulation(self.xclbin_path, timeout_s)
        if emulation is not None:
            self.report["Emulation"] = emulation
        self.device_index = device
        #: what the kernel computes itself; the host does the rest (host/kernel_plan.py)
        self.kernel_computes = computes
        self._transfers, self._runs = Transfers(self), KernelRuns(self)
        self._scratch: DeviceBuffers | None = None      # the buffers of run(), kept while they fit
        self._scratch_more: dict[int, DeviceBuffers] = {}   # its further sets, for a run of several calls
        #: buffer sets a run of several kernel calls turns through (1: one call after the other in one set,
        #: for a card whose memory holds one call's buffers, as the simulated one)
        self.run_buffer_sets = _BUFFER_SETS
        self._last_run = None           # (plan, layout, batch limit) of the last run, for locate()
        #: (log_n, batch, flags) of every kernel call that completed, in order
        self.kernel_runs: list[tuple[int, int, int]] = []
        #: called as after_run(log_n, batch, flags) when a kernel call completed (the sim backend counts
        #: its cycles)
        self.after_run = None
        #: the status records of the kernel calls since the report last spoke of them
        self._records: list[StatusRecord] = []
        #: the kernel's own cycle counts over the calls of the last run ({word name in lower case: sum,
        #: "calls", "seconds"}), None when its records carry none
        self.kernel_measured: dict | None = None
        self._status_buffer = None
        self._device = None
        self._open(device, params, layout)

    @noting_errors
    def _open(self, device: int, params: BuildParams | None, layout) -> None:
        self._note(f"xrt: opening device {device}")
        self._device = self._xrt.open_device(device)
        self._note(f"xrt: loading {self.xclbin_path}")
        xb, uuid = self._xrt.load_xclbin(self._device, self.xclbin_path)
        self._kernel = self._xrt.open_kernel(self._device, uuid, R.KERNEL_NAME, self.xclbin_path)
        self.params, id_read = identity.identify(self, params, xb)
        check_build_field(self.field, self.params, "the xrt card")     # the build the card reported
        self.rmap = R.RegisterMap(self.params)
        self._layouts: dict[int, HbmLayout] = {}
        if layout is not None:
            if not isinstance(layout, HbmLayout) or layout.params != self.params:
                raise TypeError(f"layout: expected an HbmLayout of the {self.params.tag()} build")
            self._layouts[layout.log_n] = layout
        #: {memory group: (base, bytes)} of the xclbin's memory topology (empty: 256 MiB windows)
        self._windows = self._xrt.memory_windows(xb)
        # one status buffer for every run: the kernel writes its status record there (hw.model.record)
        self._status_buffer = self._transfers.allocate_status()
        if not id_read:
            self._note("xrt: no ID registers in this pyxrt: a self-test transform of a known input")
            identity.self_test(self)
        self._note(f"xrt: kernel '{R.KERNEL_NAME}' ready, {self.params.tag()} build; {self.report['Identity']}")
        self.report.update({"Device": f"{device}", "xclbin": str(self.xclbin_path),
                            "Build params": self.params.tag()})

    def _note(self, line: str) -> None:
        """A line for the device log: given to the ``progress`` callable (nowhere otherwise)."""
        if callable(self._progress_opt):
            self._progress_opt(line)

    def layout_for(self, log_n: int) -> HbmLayout:
        """The HBM placement of a native run of 2^log_n points (built once per size)."""
        if log_n not in self._layouts:
            self._layouts[log_n] = HbmLayout(self.params, log_n)
        return self._layouts[log_n]

    def kernel_size(self, n_points: int) -> int:
        """log2 of the size the kernel runs for n_points (a supported size): log2(n_points) when native,
        else (below the native range) ``params.min_log_n``, the size the host zero-pads to."""
        return max(n_points.bit_length() - 1, self.params.min_log_n)

    def supports(self, n_points: int) -> str | None:
        """None for every power of two up to the field's largest transform: natively up to 2^(2k) points
        per call, beyond as the four-step over kernel calls (host/large.py)."""
        if n_points < 1 or n_points & (n_points - 1):
            return f"{n_points} points: the size must be a power of two"
        largest = self.field.two_adicity
        if n_points > 1 << largest:
            return (f"{n_points} points: {self.field.name} has roots of unity up to 2^{largest} (this kernel, "
                    f"{self.params.tag()}, transforms 2^{self.params.log_n} points a call, more as a four-step)")
        return None

    def driver_for(self, n_points: int) -> "XrtBackend | None":
        """This driver, when it runs n_points natively (device-resident arrays), else None."""
        if (self._device is None or self.supports(n_points) or n_points < 1 << self.params.min_log_n
                or n_points > self.params.n_points):
            return None
        return self

    def batch_limit(self, log_n: int) -> int:
        """The most transforms of 2^log_n points one kernel call takes (1 for a kernel without batches)."""
        if "batch" not in self.kernel_computes or not self.rmap.log_n_supported(log_n):
            return 1
        return self.rmap.max_batch(log_n)

    def _check_open(self) -> None:
        if self._device is None:
            raise XrtError("the backend is closed")

    # -- buffers and transfers (transfers.py) --------------------------------------------------------

    @noting_errors
    def allocate(self, layout: HbmLayout, batch: int = 1) -> DeviceBuffers:
        """Buffers, one per HBM channel on its master's bank, each of ``batch`` regions of
        ``layout.channel_bytes`` (for device-resident arrays; ``run`` keeps its own): an idle set of that
        size from :attr:`buffer_pool` when it has one (contents undefined), else new ones; they go back to
        the pool when released (``DeviceBuffers.release``) or garbage-collected."""
        self._check_open()
        return self._transfers.allocate(layout, batch, pooled=True)

    @property
    def buffer_pool(self):
        """The :class:`~host.xrt.transfers.BufferPool` of the sets :meth:`allocate` gives (its
        ``limit_bytes``: the most it keeps idle; freed by :meth:`close`)."""
        return self._transfers.pool

    @noting_errors
    def _allocate_new(self, layout: HbmLayout, batch: int) -> DeviceBuffers:
        self._check_open()
        return self._transfers.allocate(layout, batch)

    def _allocate(self, layout: HbmLayout, batch: int = 1, *, index: int = 0) -> DeviceBuffers:
        """Scratch buffer set ``index`` of ``run`` (0, or up to _BUFFER_SETS - 1 for a run of several
        calls) for ``batch`` transforms of ``layout``'s size: the current ones while they fit, else the
        old ones are freed first (never while a run may still use them: run() refuses to go on past a
        run that timed out)."""
        cur = self._scratch if index == 0 else self._scratch_more.get(index)
        if cur is not None and cur.layout is layout and batch <= cur.batch and cur.bos:
            return cur
        if cur is not None:
            cur.release()
        bufs = self._allocate_new(layout, batch)     # not from the pool: kept while they fit
        if index == 0:
            self._scratch = bufs
        else:
            self._scratch_more[index] = bufs
        return bufs

    def _free_buffers(self) -> None:
        """Free run()'s buffer sets and the pool's idle ones."""
        for bufs in [self._scratch, *self._scratch_more.values()]:
            if bufs is not None:
                bufs.release()
        self._scratch, self._scratch_more = None, {}
        self._transfers.pool.clear()

    @property
    def layout(self) -> HbmLayout | None:
        """The layout the scratch buffers are sized for (None: no buffers)."""
        return self._scratch.layout if self._scratch is not None else None

    @property
    def _bos(self) -> dict:
        return self._scratch.bos if self._scratch is not None else {}

    @property
    def _views(self) -> dict:
        return self._scratch.views if self._scratch is not None else {}

    @noting_errors
    def upload(self, bufs: DeviceBuffers, rows: np.ndarray, *, reverse: bool = False,
               buffer: str = "input", sink=None) -> int:
        """Place the (B, N) canonical ``rows`` (bit-reversed order with ``reverse``) as ``buffer`` of a
        2^log2(N)-point run into the first B regions of that size in ``bufs`` (sized for N points or more:
        the input of the first run of a chain) and sync them to the device; returns the bytes synced."""
        return self._transfers.upload(bufs, rows, reverse, buffer, sink)

    @noting_errors
    def upload_padded(self, bufs: DeviceBuffers, rows: np.ndarray, *, sink=None) -> int:
        """Place the (B, M) canonical ``rows`` as the zero-extended input of a run of ``bufs``' size T
        (``input_log_m`` = log2(M), which needs ``rmap.lde_pair_ok(log2 M, log2 T)``): only the units of
        the M points are written (hw.model.layout.HbmLayout.zero_units), so no zeros are written; returns
        the bytes synced."""
        return self._transfers.upload_padded(bufs, rows, sink)

    @noting_errors
    def download(self, bufs: DeviceBuffers, batch: int, *, reverse: bool = False, buffer: str = "output",
                 sink=None, log_n: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Sync the first ``batch`` regions of ``buffer``'s channels (of 2^log_n-point runs; default the
        size ``bufs`` are sized for) from the device and gather their points: a new (batch, N) array
        (bit-reversed order with ``reverse``); ``out``: written into that array instead (any strides: the
        columns of an (N, B) matrix, extension limbs; hbm_io.gather_rows) and returned."""
        return self._transfers.download(bufs, batch, reverse, buffer, sink, log_n, out)

    # -- running (runs.py) ---------------------------------------------------------------------------

    @noting_errors
    def run(self, points: np.ndarray, inverse: bool = False, *, coset: int | None = None,
            order: str = "nn", row_step: int | None = None) -> np.ndarray:
        """The transform of ``points``: 1-D (n points) or 2-D (B rows of n points, each transformed);
        ``coset`` a shift 0 < g < p or None, ``order`` input then output order ("nn", "nr", "rn",
        "rr"); ``row_step`` s (with a coset, sizes of one call): row r has the shift g x s^r (the kernel's
        ``row_step`` argument). The kernel computes the inverse, the coset and the batch (split into calls
        of the largest batch it takes); see host/kernel_plan.py for what is left to the host."""
        self._check_open()
        self._runs.check_not_stuck()
        x = F.as_u64(points)
        if x.size and x.max() >= self.field.p:     # one read pass; reduce only when needed
            x = self.field.vcanon(x)
        if x.ndim not in (1, 2) or x.size == 0:
            raise UnsupportedSize(f"points: expected a 1-D array or a (B, N) batch, got shape {x.shape}")
        rows = x.reshape(-1, x.shape[-1])
        n = rows.shape[1]
        reason = self.supports(n)
        if reason:
            raise UnsupportedSize(reason)
        if row_step is not None and not (isinstance(row_step, int) and 0 <= row_step < self.field.p):
            raise ValueError(f"row_step: expected a field element 0 <= s < p, got {row_step!r}")
        if n > self.params.n_points:
            if row_step is not None and row_step > 1:
                raise UnsupportedSize(f"row_step: {n} points is past one kernel call (2^{self.params.max_log_n})")
            return self._run_large(rows, inverse, coset, order).reshape(x.shape)
        layout = self.layout_for(self.kernel_size(n))
        plan = plan_transform(n, layout.log_n, inverse, coset, order, self.kernel_computes, self.field)
        sink, limit = progress_sink(self._progress_opt, rows.size), self.batch_limit(layout.log_n)
        self._records.clear()
        outs, times = self._run_calls(rows, plan, layout, limit, sink, row_step)
        y = outs[0] if len(outs) == 1 else np.concatenate(outs)
        self.timings = dict(zip(("to-device", "kernel", "from-device"), map(float, times)))
        self.report["Host work"] = (", ".join(plan.host_work()) or "layout only (scatter and gather; the "
                                    "orders are part of the placement)")
        self.report["Kernel size"] = kernel_size_text(layout.log_n, n)
        self.report["Kernel calls"] = kernel_calls_text(rows.shape[0], limit, len(outs), plan.run(1).flags)
        self.steps = [step_record("transform", layout.log_n, where="card and host" if plan.host_work() else "card",
                                  kernel_calls=len(outs), host_work=", ".join(plan.host_work()) or "none",
                                  rows=rows.shape[0])]
        self.kernel_log_n = layout.log_n
        self._last_run = (plan, layout, limit)
        self._report_measured()
        return y.reshape(x.shape[:-1] + (n,))

    def _run_calls(self, rows: np.ndarray, plan, layout: HbmLayout, limit: int, sink,
                   row_step: int | None = None) -> tuple[list, np.ndarray]:
        """The kernel calls of :meth:`run`, ``limit`` rows a call: the results per call, and the seconds
        spent moving points to the card, in the kernel and bringing them back (summed per phase). With a
        ``row_step``, each call's run starts at its first row's shift.

        One call: upload, run, download. Several: ``run_buffer_sets`` buffer sets (three) in turn, so that while the kernel runs
        call i, one thread moves call i+1's points to the card and another brings call i-1's back (the
        link's two directions and the kernel all busy: a stream of calls goes at the pace of the slowest
        of them, not of their sum). Calls run in order; the host prepares a call's rows on the upload
        thread and finishes them on the download one."""
        times = np.zeros(3)
        starts = range(0, rows.shape[0], limit)

        def upload(bufs, r0):
            t0 = time.perf_counter()
            chunk = plan.prepare(rows[r0:r0 + limit])
            self.upload(bufs, chunk, reverse=plan.layout_reverse_in, sink=sink)
            times[0] += time.perf_counter() - t0
            return chunk.shape[0]

        def download(bufs, batch):
            t0 = time.perf_counter()
            out = plan.finish(self.download(bufs, batch, reverse=plan.layout_reverse_out, sink=sink))
            times[2] += time.perf_counter() - t0
            return out

        def execute(bufs, batch, r0):
            t0 = time.perf_counter()
            self.execute_run(bufs, plan.run(batch, row_step=row_step, first_row=r0))
            times[1] += time.perf_counter() - t0

        n_sets = self.run_buffer_sets
        if len(starts) == 1 or n_sets == 1:
            bufs, outs = self._allocate(layout, min(rows.shape[0], limit)), []
            for r0 in starts:
                batch = upload(bufs, r0)
                execute(bufs, batch, r0)
                outs.append(download(bufs, batch))
            return outs, times
        sets = [self._allocate(layout, limit, index=i) for i in range(n_sets)]
        ups, downs = [], []
        with ThreadPoolExecutor(1, thread_name_prefix="xrt-up") as to_card, \
                ThreadPoolExecutor(1, thread_name_prefix="xrt-down") as from_card:
            try:
                ups.append(to_card.submit(upload, sets[0], 0))
                for i, _ in enumerate(starts):
                    batch = ups[i].result()
                    if i + 1 < len(starts):
                        if i + 1 >= n_sets:                 # its set is free once that call's points are back
                            downs[i + 1 - n_sets].result()
                        ups.append(to_card.submit(upload, sets[(i + 1) % n_sets], starts[i + 1]))
                    execute(sets[i % n_sets], batch, starts[i])
                    downs.append(from_card.submit(download, sets[i % n_sets], batch))
                return [d.result() for d in downs], times
            finally:                                        # on an error: nothing left using the buffers
                cf_wait(ups + downs)

    def _run_large(self, rows: np.ndarray, inverse: bool, coset, order: str) -> np.ndarray:
        """A size past one kernel call: the four-step over batched kernel calls (host/large.py), a step
        record per step in :attr:`steps` (a step whose rows split again with that run's steps as its
        ``parts``) and the report."""
        steps: list = []
        n = rows.shape[1]
        log_n = n.bit_length() - 1
        t0, first = time.perf_counter(), len(self.kernel_runs)
        phases = dict.fromkeys(("to-device", "kernel", "from-device"), 0.0)
        moved, measured = [0], []

        def native(r, i, c, o, s=None):
            """A step's batched kernel calls (their rows may split again), their phases, bytes and the
            kernel's own counts summed; ``s`` the step's row step (its twiddles on the card)."""
            out = self.run(r, i, coset=c, order=o, row_step=s)
            for phase, seconds in self.timings.items():
                phases[phase] += seconds
            moved[0] += r.nbytes
            measured.append(self.kernel_measured)
            return out

        y = large.four_step(rows, inverse=inverse, coset=None if coset is None else int(coset), order=order,
                            field=self.field, min_log_n=self.params.min_log_n, max_log_n=self.params.max_log_n,
                            native=native, steps=steps, calls=lambda: len(self.kernel_runs),
                            row_steps={"coset", "inverse"} <= set(self.kernel_computes))
        n1, n2 = large.split_log_n(log_n, self.params.min_log_n, self.params.max_log_n)
        # every step's rows went to the card and back: beyond the caller's one round trip of the points
        for direction in self.extra_transfers:
            self.extra_transfers[direction] += moved[0] - rows.nbytes
        self.steps = [self._step_of(s, log_n, rows.shape[0]) for s in steps]
        self.note_composite(first, len(self.kernel_runs), self.steps)
        self.report.update(large.summary(steps, log_n, n1, n2))
        # what the kernel counted itself over every step's calls, when it counted in each
        self._measured_report(None if not measured or None in measured else
                              {key: sum(m[key] for m in measured) for key in measured[0]})
        # the transfers and kernel calls of every step (the host's transposes and twiddles in no phase: the
        # steps' seconds say them)
        self.timings = phases
        self.kernel_log_n = log_n
        self._last_run = None
        return y

    def _step_of(self, step: "large.Step", log_n: int, batch: int) -> dict:
        """The step record (host.backend_base.step_record) of a step of the four-step of ``batch`` x 2^log_n
        points: the host's step (no size of its own) works on the whole transforms, a step whose rows were
        past one call has the steps of their own four-step as its ``parts``."""
        calls = step.kernel_calls
        host = bool(step.host_work) and not step.host_work.startswith("none")
        whole = step.log_n is None
        return step_record(step.name, log_n if whole else step.log_n, rows=batch if whole else step.rows,
                           where=("card and host" if host else "card") if calls else "host", kernel_calls=calls,
                           seconds=step.seconds, host_work=step.host_work or "none",
                           parts=self.parts_of(step.first_call, step.first_call + calls) if calls else None)

    @property
    def last_record(self) -> StatusRecord | None:
        """The status record of the last kernel call that completed without an error (None before)."""
        return self._runs.last_record

    def _report_measured(self) -> None:
        """The report's lines of the kernel's own cycle counts over the calls since they were last
        reported (its status records), when the kernel counts them (a card's and the simulated kernel do,
        the register-level model does not)."""
        records = [r for r in self._records if any(r.cycles().values())]
        self._records.clear()
        if not records:
            self._measured_report(None)
            return
        sums = {name.lower(): sum(r[name] for r in records) for name in CYCLE_WORDS}
        self._measured_report(dict(sums, calls=len(records),
                                   seconds=sum(r.kernel_seconds(self.params) for r in records)))

    def _measured_report(self, measured: dict | None) -> None:
        """``kernel_measured`` and the report's lines of the kernel's own counts (none: removed)."""
        for key in MEASURED_LINES:
            self.report.pop(key, None)
        self.kernel_measured = measured
        if measured is None:
            return
        m = measured
        over = f" over {m['calls']} calls" if m["calls"] > 1 else ""
        self.report["Measured cycles"] = (
            f"pass 1 {m['pass1_dma_cycles']} DMA / {m['pass1_ntt_cycles']} NTT cycles, pass 2 "
            f"{m['pass2_dma_cycles']} DMA / {m['pass2_ntt_cycles']} NTT cycles, total "
            f"{m['total_dma_cycles']} DMA cycles{over} (measured by the kernel)")
        self.report["Measured time"] = (f"{m['seconds'] * 1e3:.4f} ms at the {self.params.dma_mhz:g} MHz DMA clock "
                                        "(measured by the kernel, start to status record)")

    def note_resident(self, n, rows, calls, inverse, coset, order) -> None:
        log_n = n.bit_length() - 1
        plan = plan_transform(n, log_n, inverse, coset, order, self.kernel_computes, self.field)
        self.report["Kernel size"] = kernel_size_text(log_n, n)
        self.report["Kernel calls"] = kernel_calls_text(rows, self.batch_limit(log_n), calls, plan.run(1).flags)
        self.report["Host work"] = "none (the points stayed on the card)"
        self.steps = [step_record("transform", log_n, where="card", kernel_calls=calls, rows=rows)]
        self.timings = {}               # no host phases: the caller times its own calls
        self.kernel_log_n = log_n
        self._last_run = (plan, self.layout_for(log_n), self.batch_limit(log_n))
        self._report_measured()

    def calls_made(self) -> int:
        return len(self.kernel_runs)

    def locate(self, index: int) -> str | None:
        """Where output point ``index`` (of the flattened result) of the last run sat in HBM: the kernel
        output element it came from (TransformPlan.kernel_index), in its batch element's region."""
        if self._last_run is None:
            return None
        plan, layout, limit = self._last_run
        row, i = divmod(index, plan.n)
        channel, offset = layout.place("output", np.array([plan.kernel_index(i)]))
        offset = int(offset[0]) + (row % limit) * layout.channel_bytes
        return f"HBM channel {int(channel[0])}, byte 0x{offset:x}"

    def execute(self, bufs: DeviceBuffers, batch: int = 1, *, inverse: bool = False,
                coset: int | None = None, log_n: int | None = None, input_log_m: int = 0,
                chain_log_n: int = 0) -> None:
        """:meth:`execute_run` of ``Run.of(log_n, inverse=, coset=, batch=, input_log_m=, chain_log_n=)``;
        ``log_n`` defaults to the size ``bufs`` are sized for."""
        log_n = bufs.layout.log_n if log_n is None else log_n
        self.execute_run(bufs, Run.of(log_n, inverse=inverse, coset=None if coset is None else int(coset),
                                      batch=batch, input_log_m=input_log_m, chain_log_n=chain_log_n))

    @noting_errors
    def execute_run(self, bufs: DeviceBuffers, run: Run) -> None:
        """Run the kernel once on the first ``run.batch`` regions of ``bufs`` (in place: the output
        overwrites the input): checks the start as the kernel would (KernelRefused before anything is
        sent), the pointers (BadPointer), starts, waits within the timeout and checks STATUS.

        ``run.log_n`` may be smaller than the size of ``bufs`` (the first run of a chain);
        ``run.input_log_m`` = m: the input holds only each element's first 2^m points (placed by
        :meth:`upload_padded` or written by a chained run); ``run.chain_log_n`` = t: the output is
        written as the zero-extended input of a 2^t-point run, so ``bufs`` must hold B x 2^t points."""
        self._check_open()
        self._runs.check_not_stuck()
        if run.batch > bufs.batch and run.log_n == bufs.layout.log_n and not run.chain_log_n:
            raise KernelRefused(f"a batch of {run.batch} does not fit buffers of {bufs.batch}", ("bad_batch",))
        refused = self.rmap.check_start(*astuple(run))     # check_start takes Run's fields, in order
        if refused:
            raise KernelRefused.from_status(refused, run, self.params, by="the host")
        self._records.append(self._runs.start_and_wait(bufs, run))
        self.kernel_runs.append((run.log_n, run.batch, run.flags))
        if self.after_run is not None:
            self.after_run(run.log_n, run.batch, run.flags)

    def _start_and_wait(self, bufs: DeviceBuffers, run: Run) -> StatusRecord:
        """Start ``run`` on ``bufs`` without the host's own check of the start (runs.py); returns its
        status record."""
        return self._runs.start_and_wait(bufs, run)

    def close(self, *, card_reset: bool = False) -> None:
        """Release buffers, kernel and device (in that order). The buffers of a run that timed out
        and may still be running are kept until the process exits instead, unless ``card_reset`` says
        the caller has reset or destroyed the card (nothing can write them any more)."""
        self._runs.release(card_reset)
        self._free_buffers()
        self._transfers.pool.close()    # sets of arrays released later are dropped, not kept
        self._status_buffer = None      # kept among a timed-out run's buffers when it may still be written
        self._kernel = None
        self._device = None
