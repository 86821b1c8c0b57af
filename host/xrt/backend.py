"""The XRT backend class, :class:`XrtBackend`: a card opened through the pyxrt adapter (the
:class:`~host.xrt.card.Card` its parts share), with its transfers (transfers.py), runs (runs.py) and
identification (identity.py). See host/xrt/__init__.py."""

from __future__ import annotations

import math
import os
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import StatusRecord
from nantucket.hw.model.run import Run
from nantucket.hw.flow.build_root import build_base
from nantucket.host.backend_base import (Backend, CardDriver, ResidentArrays, check_build_field, check_params,
                                        keywords_checked, step_record)
from nantucket.host.kernel_plan import KERNEL_TRANSFORMS, plan_transform

from . import identity
from .adapter import PyxrtAdapter, import_pyxrt
from .card import Card
from .large_run import run_four_step
from .errors import UnsupportedSize, XclbinNotFound, noting_errors
from .runs import MEASURED_LINES, hbm_location, kernel_calls_text, kernel_size_text, measured_lines, run_calls
from .transfers import DeviceBuffers, progress_sink

__all__ = ["XrtBackend", "default_xclbin", "MEASURED_LINES"]
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
                             "`make build TARGET=hw`, or pass its path: nantucket.open(..., xclbin=PATH), "
                             "`nantucket run --xclbin PATH`)")
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


def _as_rows(points, field: F.Field) -> tuple[np.ndarray, np.ndarray]:
    """``points`` as canonical uint64 (reduced only when needed) and as (B, n) rows (UnsupportedSize for
    another shape)."""
    x = F.as_u64(points)
    if x.size and x.max() >= field.p:     # one read pass; reduce only when needed
        x = field.vcanon(x)
    if x.ndim not in (1, 2) or x.size == 0:
        raise UnsupportedSize(f"points: expected a 1-D array or a (B, N) batch, got shape {x.shape}")
    return x, x.reshape(-1, x.shape[-1])


def _check_run(reason: str | None, n: int, row_step, field: F.Field, params: BuildParams) -> None:
    """A run of rows of ``n`` points with ``row_step``: UnsupportedSize for the ``reason`` a size is not
    supported (None: it is) or a row step past one kernel call, ValueError for a row step not in the field."""
    if reason:
        raise UnsupportedSize(reason)
    if row_step is not None and not (isinstance(row_step, int) and 0 <= row_step < field.p):
        raise ValueError(f"row_step: expected a field element 0 <= s < p, got {row_step!r}")
    if n > params.n_points and row_step is not None and row_step > 1:
        raise UnsupportedSize(f"row_step: {n} points is past one kernel call (2^{params.max_log_n})")


def _card_attribute(name: str, doc: str | None = None, *, settable: bool = False) -> property:
    """The backend's attribute that is its :class:`Card`'s ``name``."""
    def setter(self, value):
        setattr(self.card, name, value)
    return property(lambda self: getattr(self.card, name), setter if settable else None, doc=doc)


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
        xrt = PyxrtAdapter(pyxrt_module if pyxrt_module is not None else import_pyxrt())
        timeout_s, emulation = _emulation(self.xclbin_path, timeout_s)
        #: the card session: the handles, the build, the buffers, the runs and the transfers (card.py)
        self.card = Card(xrt, self.xclbin_path, self._note, timeout_s)
        if emulation is not None:
            self.report["Emulation"] = emulation
        self.device_index = device
        #: what the kernel computes itself; the host does the rest (host/kernel_plan.py)
        self.kernel_computes = computes
        #: buffer sets a run of several kernel calls turns through (1: one call after the other in one set,
        #: for a card whose memory holds one call's buffers, as the simulated one)
        self.run_buffer_sets = _BUFFER_SETS
        self._last_run = None           # (plan, layout, batch limit) of the last run, for locate()
        #: (log_n, batch, flags) of every kernel call that completed, in order
        self.kernel_runs: list[tuple[int, int, int]] = []
        #: called as after_run(log_n, batch, flags) when a kernel call completed (the sim backend counts
        #: its cycles)
        self.after_run = None
        #: the kernel's own cycle counts over the calls of the last run ({word name in lower case: sum,
        #: "calls", "seconds"}), None when its records carry none
        self.kernel_measured: dict | None = None
        self._open(device, params, layout)

    @noting_errors
    def _open(self, device: int, params: BuildParams | None, layout) -> None:
        # the build the card reports must be in the caller's field
        id_read, self.report["Identity"] = self.card.open(
            device, params, layout, lambda built: check_build_field(self.field, built, "the xrt card"))
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

    # -- the card's state, as the backend's attributes (the private ones for the tests that look at them)
    params = _card_attribute("params", "The build the card holds.")
    rmap = _card_attribute("rmap", "The build's RegisterMap.")
    timeout_s = _card_attribute("timeout_s", "The kernel wait's limit in seconds (None: no limit).", settable=True)
    _kernel = _card_attribute("kernel")
    _status_buffer = _card_attribute("status_buffer")
    _windows = _card_attribute("windows", settable=True)
    _runs = _card_attribute("runs")
    _bos = property(lambda self: getattr(self.card.scratch.first, "bos", {}))
    _views = property(lambda self: getattr(self.card.scratch.first, "views", {}))

    def layout_for(self, log_n: int) -> HbmLayout:
        """The HBM placement of a native run of 2^log_n points (built once per size)."""
        return self.card.layout_for(log_n)

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
        if (self.card.device is None or self.supports(n_points) or n_points < 1 << self.params.min_log_n
                or n_points > self.params.n_points):
            return None
        return self

    def batch_limit(self, log_n: int) -> int:
        """The most transforms of 2^log_n points one kernel call takes (1 for a kernel without batches)."""
        if "batch" not in self.kernel_computes or not self.rmap.log_n_supported(log_n):
            return 1
        return self.rmap.max_batch(log_n)

    # -- buffers and transfers (transfers.py) --------------------------------------------------------

    @noting_errors
    def allocate(self, layout: HbmLayout, batch: int = 1) -> DeviceBuffers:
        """Buffers, one per HBM channel on its master's bank, each of ``batch`` regions of
        ``layout.channel_bytes`` (for device-resident arrays; ``run`` keeps its own): an idle set of that
        size from :attr:`buffer_pool` when it has one (contents undefined), else new ones; they go back to
        the pool when released (``DeviceBuffers.release``) or garbage-collected."""
        self.card.check_open()
        return self.card.transfers.allocate(layout, batch, pooled=True)

    buffer_pool = property(lambda self: self.card.transfers.pool, doc="The :class:`~host.xrt.transfers."
                           "BufferPool` of the sets :meth:`allocate` gives (its ``limit_bytes``: the most it keeps "
                           "idle; freed by :meth:`close`).")

    layout = property(lambda self: getattr(self.card.scratch.first, "layout", None),
                      doc="The layout the scratch buffers are sized for (None: no buffers).")

    @noting_errors
    def upload(self, bufs: DeviceBuffers, rows: np.ndarray, *, reverse: bool = False,
               buffer: str = "input", sink=None) -> int:
        """Place the (B, N) canonical ``rows`` (bit-reversed order with ``reverse``) as ``buffer`` of a
        2^log2(N)-point run into the first B regions of that size in ``bufs`` (sized for N points or more:
        the input of the first run of a chain) and sync them to the device; returns the bytes synced."""
        return self.card.transfers.upload(bufs, rows, reverse, buffer, sink)

    @noting_errors
    def upload_padded(self, bufs: DeviceBuffers, rows: np.ndarray, *, sink=None) -> int:
        """Place the (B, M) canonical ``rows`` as the zero-extended input of a run of ``bufs``' size T
        (``input_log_m`` = log2(M), which needs ``rmap.lde_pair_ok(log2 M, log2 T)``): only the units of
        the M points are written (hw.model.layout.HbmLayout.zero_units), so no zeros are written; returns
        the bytes synced."""
        return self.card.transfers.upload_padded(bufs, rows, sink)

    @noting_errors
    def download(self, bufs: DeviceBuffers, batch: int, *, reverse: bool = False, buffer: str = "output",
                 sink=None, log_n: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Sync the first ``batch`` regions of ``buffer``'s channels (of 2^log_n-point runs; default the
        size ``bufs`` are sized for) from the device and gather their points: a new (batch, N) array
        (bit-reversed order with ``reverse``); ``out``: written into that array instead (any strides: the
        columns of an (N, B) matrix, extension limbs; hbm_io.gather_rows) and returned."""
        return self.card.transfers.download(bufs, batch, reverse, buffer, sink, log_n, out)

    @noting_errors
    def copy_rows(self, dst: DeviceBuffers, pieces, *, log_n: int, buffer: str = "input") -> int:
        """CardDriver.copy_rows: one ``bo.copy`` per channel and piece (transfers.py); the link bytes each way."""
        return self.card.transfers.copy_rows(dst, pieces, log_n, buffer)

    def download_regions(self, bufs: DeviceBuffers, regions, *, reverse: bool = False,
                         buffer: str = "output") -> np.ndarray:
        """Only the rows in ``regions`` of ``bufs`` synced from the device and gathered (transfers.py)."""
        return self.card.transfers.download_regions(bufs, regions, reverse, buffer)

    # -- running (runs.py) ---------------------------------------------------------------------------

    @noting_errors
    def run(self, points: np.ndarray, inverse: bool = False, *, coset: int | None = None,
            order: str = "nn", row_step: int | None = None) -> np.ndarray:
        """The transform of ``points``: 1-D (n points) or 2-D (B rows of n points, each transformed);
        ``coset`` a shift 0 < g < p or None, ``order`` input then output order ("nn", "nr", "rn",
        "rr"); ``row_step`` s (with a coset, sizes of one call): row r has the shift g x s^r (the kernel's
        ``row_step`` argument). The kernel computes the inverse, the coset and the batch (split into calls
        of the largest batch it takes); see host/kernel_plan.py for what is left to the host."""
        self.card.check_open()
        self.card.runs.check_not_stuck()
        x, rows = _as_rows(points, self.field)
        n = rows.shape[1]
        _check_run(self.supports(n), n, row_step, self.field, self.params)
        if n > self.params.n_points:
            y, measured = run_four_step(self, rows, inverse, coset, order)      # large_run.py
            self._measured_report(measured)     # the kernel's counts over every step's calls, if in each
            self._last_run = None
            return y.reshape(x.shape)
        layout = self.layout_for(self.kernel_size(n))
        plan = plan_transform(n, layout.log_n, inverse, coset, order, self.kernel_computes, self.field)
        sink, limit = progress_sink(self._progress_opt, rows.size), self.batch_limit(layout.log_n)
        self.card.runs.records.clear()
        outs, times = run_calls(self, self.card.scratch, rows, plan, layout, limit, sink, row_step,
                                self.run_buffer_sets)
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
        self._measured_report(self.card.runs.take_measured())
        return y.reshape(x.shape[:-1] + (n,))

    last_record = property(lambda self: self.card.runs.last_record, doc="The status record of the last "
                           "kernel call that completed without an error (None before).")

    def _measured_report(self, measured: dict | None) -> None:
        """``kernel_measured`` and the report's lines of the kernel's own cycle counts (none: removed): those
        of a four-step's calls, or of the status records of the calls since they were last reported
        (KernelRuns.take_measured), when the kernel counts them (a card's and the simulated kernel do, the
        register-level model does not)."""
        for key in MEASURED_LINES:
            self.report.pop(key, None)
        self.kernel_measured = measured
        if measured is not None:
            self.report.update(measured_lines(measured, self.params))

    def forget_runs(self) -> None:
        """Forget the runs so far (the identification's self-test): the report's lines of a run, the last
        run, the kernel's counts, ``kernel_runs`` and ``timings``."""
        for key in ("Kernel size", "Host work", "Kernel calls", *MEASURED_LINES):
            self.report.pop(key, None)
        self.kernel_log_n = self._last_run = self.kernel_measured = None
        self.kernel_runs.clear()
        self.timings = {}

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
        self._measured_report(self.card.runs.take_measured())

    def calls_made(self) -> int:
        return len(self.kernel_runs)

    def locate(self, index: int) -> str | None:
        """Where output point ``index`` (of the flattened result) of the last run sat in HBM: the kernel
        output element it came from (TransformPlan.kernel_index), in its batch element's region."""
        return None if self._last_run is None else hbm_location(*self._last_run, index)

    @noting_errors
    def execute(self, run: Run, buffers: DeviceBuffers) -> StatusRecord:
        """The card path (Backend.execute): run the kernel once with ``run`` (any operation the build
        carries) on the first ``run.batch`` regions of ``buffers`` in place, after the host's checks of the
        start (KernelRefused, naming e.g. bad_op, before anything is sent) and of the pointers
        (BadPointer); waits within the timeout and returns the checked status record. An NTT run's
        ``log_n`` may be below the buffers' size (a chain's first run), its ``input_log_m`` the points
        :meth:`upload_padded` placed, its ``chain_log_n`` a size the buffers hold."""
        self.card.check_open()
        record = self.card.runs.execute(buffers, run)       # the host's checks, then the run
        self.kernel_runs.append((run.log_n, run.batch, run.flags))
        if self.after_run is not None:
            self.after_run(run.log_n, run.batch, run.flags)
        return record

    def execute_ntt(self, bufs: DeviceBuffers, batch: int = 1, *, inverse: bool = False,
                    coset: int | None = None, log_n: int | None = None, input_log_m: int = 0,
                    chain_log_n: int = 0) -> StatusRecord:
        """:meth:`execute` of ``Run.ntt(log_n, inverse=, coset=, batch=, input_log_m=, chain_log_n=)``;
        ``log_n`` defaults to the size ``bufs`` are sized for."""
        log_n = bufs.layout.log_n if log_n is None else log_n
        return self.execute(Run.ntt(log_n, inverse=inverse, coset=None if coset is None else int(coset),
                                    batch=batch, input_log_m=input_log_m, chain_log_n=chain_log_n), bufs)

    def _start_and_wait(self, bufs: DeviceBuffers, run: Run) -> StatusRecord:
        """Start ``run`` on ``bufs`` without the host's checks of the start; returns its status record."""
        return self.card.runs.start_and_wait(bufs, run)

    def close(self, *, card_reset: bool = False) -> None:
        """Release buffers, kernel and device (in that order). The buffers of a run that timed out
        and may still be running are kept until the process exits instead, unless ``card_reset`` says
        the caller has reset or destroyed the card (nothing can write them any more)."""
        self.card.close(card_reset)
