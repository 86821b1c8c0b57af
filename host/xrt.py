"""The XRT backend: the ONE module that calls pyxrt (XRT's Python binding).

:class:`XrtBackend` opens a card, loads ``nantucket.xclbin``, checks the kernel's identification
registers against the build parameters, and then, per transform: allocates one buffer per HBM channel
with ``kernel.group_id``, sized for the run (kept while the size stays the same), scatters the points
with the shared :class:`hw.model.layout.HbmLayout` of the run's size, syncs the input channels to the
device, sets the arguments of :class:`hw.model.regmap.RegisterMap`, starts, waits with a timeout, syncs
the output channels back and gathers. ``timings`` holds the three phases (``to-device``, ``kernel``,
``from-device``) in seconds.

Every XRT failure becomes a named :class:`XrtError` raised ``from`` the original exception.

Sizes and transforms (the kernel computes, per call, B transforms of N = 2^log_n points back to back,
forward or inverse with the 1/N inside, with or without a coset shift g, natively for every log_n from
``params.min_log_n`` to ``params.max_log_n`` = 2k, chosen per call by its arguments):

- n = 2^m points with m in that range run natively (``log_n = m``), in buffers of B x N points per
  channel region (element e of the batch at byte e * channel_bytes of every channel);
- a smaller power of two n = N / r, N = 2^min_log_n, is zero-padded to N: the padded transform evaluates
  the same polynomial at the N-th roots of unity, and w_n = w_N^r, so X_n[k] = X_N[r*k];
- a batch larger than the kernel takes (B x N > 2^MAX_LOG_N) is split into calls of the largest B that
  fits; input and output orders are part of the host's layout step (host/hbm_io.py), never kernel time;
- what a kernel does not compute (``kernel_computes``) the host does around it (host/kernel_plan.py).

A start the kernel would refuse (RegisterMap.check_start) is :class:`KernelRefused` before anything is
sent; one the kernel refuses (STATUS.bad_size / bad_batch / bad_shift / bad_flags / bad_extend) is the
same error naming each STATUS reason and the argument. ``report["Kernel size"]``,
``report["Kernel calls"]`` and ``kernel_log_n`` say what the kernel ran in the last run; ``kernel_runs``
lists every call.

Device-resident data: :meth:`XrtBackend.allocate` gives a :class:`DeviceBuffers` set of its own,
:meth:`~XrtBackend.upload` / :meth:`~XrtBackend.download` move points in and out through the layout
step, :meth:`~XrtBackend.execute` runs the kernel on such a set in place (host/api/resident.py).
Every run sets the arguments ``input_log_m`` and ``chain_log_n`` (0 when unused): ``execute`` takes a
run's ``log_n`` (a run smaller than the buffers, the first of a chain), ``chain_log_n`` = t (the output
written as the zero-extended input of a 2^t-point run: buffers sized for 2^t points) and ``input_log_m``
= m (an input of only 2^m points per row, placed by :meth:`~XrtBackend.upload_extended`, which writes
only those points' units, or by a chained run), so transforms chain on the card without a host round
trip (hw.model.layout: ``extension_supported``, ``HbmLayout.output_as_input``).

Identification: XRT's C++ ``xrt::kernel::read_register`` is not bound by XRT's published pyxrt (its
pyxrt.pyi declares no register access); when a module offers it the ID block (MAGIC, VERSION, LANES,
LOG_CORE, CHANNELS) is read with exclusive CU access. Otherwise the xclbin's metadata (kernel name and
argument count, which only tells the channel count) is checked and then one self-test transform of a
known input at the largest size 2^(2k) (the impulse at index 1, whose transform is the powers of w_N, all
distinct) must come back exact, and a start with log_n = 2k + 1 must leave memory untouched: a kernel
built with other lanes or k rejects a size, transforms one this build rejects, or places the points
elsewhere, and is reported as :class:`IdentityMismatch` before any user data runs.
``report["Identity"]`` says which.

Pointer arguments are checked before every start (:class:`BadPointer`): each buffer is aligned to the
32-byte beat and to the longest DMA burst (so no AXI burst crosses a 4 KiB boundary: the layout cuts
every burst at a multiple of its own length from the buffer's start), lies inside the HBM
pseudo-channel its master is wired to (the xclbin's memory topology, or 256 MiB windows), is large
enough, and overlaps no other buffer.

A run that times out cannot be aborted (pyxrt declares no ``run.abort``): its buffers are kept (never
freed while the kernel may still write them; after ``close()`` until the process exits) and the backend
refuses new runs with a clear :class:`KernelTimeout` until the timed-out run has completed.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from dataclasses import replace
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import BEAT_BYTES, CHANNEL_WINDOW_BYTES, PAGE_BYTES, HbmLayout, extension_pairs
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.build_root import build_base
from .backend_base import Backend, DeviceError, check_params, keywords_checked
from .hbm_io import gather_rows, scatter_extended, scatter_rows
from .kernel_plan import KERNEL_TRANSFORMS, plan_transform

__all__ = [
    "XrtBackend", "XrtError", "XrtUnavailable", "XclbinNotFound", "DeviceOpenFailed", "XclbinLoadFailed",
    "KernelNotFound", "IdentityMismatch", "BufferAllocFailed", "TransferFailed", "KernelTimeout",
    "KernelFailed", "KernelRefused", "UnsupportedSize", "BadPointer", "DeviceBuffers", "import_pyxrt",
    "default_xclbin", "kernel_size_text", "kernel_calls_text", "c_int", "extend_refusal_text",
]

SETUP_HINT = "source /opt/xilinx/xrt/setup.sh"
#: Sizes from which scatter/gather and the transfers show progress on stderr.
PROGRESS_MIN_POINTS = 1 << 20
#: The longest wait XRT's run.wait takes (a C int of milliseconds); longer ones wait without a limit.
_MAX_WAIT_MS = 2**31 - 1
#: Buffers of runs that timed out, kept alive (not freed) while their kernel may still write them.
_STRANDED: list = []


class XrtError(DeviceError):
    """Base of every error of the XRT backend."""


class XrtUnavailable(XrtError):
    """pyxrt cannot be imported (XRT not installed or its setup script not sourced)."""


class XclbinNotFound(XrtError, ValueError):
    """No xclbin file at the given (or default) path: nothing there, or a directory. A bad argument (a
    ValueError, exit 2 on the command line) as much as a device error."""


class DeviceOpenFailed(XrtError):
    """The card could not be opened."""


class XclbinLoadFailed(XrtError):
    """The xclbin could not be read or programmed onto the card."""


class KernelNotFound(XrtError):
    """The xclbin has no ``nantucket`` compute unit."""


class IdentityMismatch(XrtError):
    """The kernel on the card was built with other parameters (or is not a nantucket kernel)."""


class BufferAllocFailed(XrtError):
    """A device buffer could not be allocated (or mapped)."""


class TransferFailed(XrtError):
    """A host <-> device buffer sync failed."""


class KernelTimeout(XrtError):
    """The kernel did not finish within the timeout. ``waited``: seconds waited (None when a previous
    run's timeout is what stops this one); ``status``: the decoded STATUS word ("" if clear or
    unreadable)."""

    def __init__(self, message: str, waited: float | None = None, status: str = ""):
        super().__init__(message)
        self.waited = waited
        self.status = status


class KernelFailed(XrtError):
    """The kernel run ended in an error state or reported an error status."""


class KernelRefused(KernelFailed):
    """The kernel refused a start (STATUS.bad_size / bad_batch / bad_shift / bad_flags / bad_extend): it
    finished at once and touched no memory; or the host saw that it would and sent nothing. ``reasons``:
    the STATUS field names."""

    def __init__(self, message: str, reasons: tuple[str, ...]):
        super().__init__(message)
        self.reasons = reasons

    @classmethod
    def from_status(cls, status: int, log_n: int, flags: int, batch: int, shift: int, params: BuildParams,
                    by: str, input_log_m: int = 0, chain_log_n: int = 0) -> "KernelRefused":
        texts, reasons = [], []
        for name, bit, text in (
                ("bad_size", R.STATUS_BAD_SIZE, f"rejected log_n = {log_n} (STATUS.bad_size): the build "
                 f"runs 2^{params.min_log_n} .. 2^{params.max_log_n}"),
                ("bad_batch", R.STATUS_BAD_BATCH, f"rejected batch = {batch} of 2^{log_n} points "
                 f"(STATUS.bad_batch): 1 <= B and B x 2^log_n <= 2^{params.max_log_n}"),
                ("bad_shift", R.STATUS_BAD_SHIFT, f"rejected coset_shift = {shift} (STATUS.bad_shift): "
                 "0 < g < p"),
                ("bad_flags", R.STATUS_BAD_FLAGS, f"rejected flags = 0x{flags:x} (STATUS.bad_flags): known "
                 f"bits 0x{R.FLAGS_KNOWN:x}"),
                ("bad_extend", R.STATUS_BAD_EXTEND, extend_refusal_text(params, log_n, batch, input_log_m,
                                                                       chain_log_n))):
            if status & bit:
                reasons.append(name)
                texts.append(text)
        return cls(f"{by} refused the start: {'; '.join(texts)}; nothing ran, no memory was touched",
                   tuple(reasons))


def _sizes_text(logs) -> str:
    return ", ".join(f"2^{v}" for v in sorted(logs)) or "none"


def extend_refusal_text(params: BuildParams, log_n: int, batch: int, input_log_m: int, chain_log_n: int) -> str:
    """Why a start's ``input_log_m`` / ``chain_log_n`` get STATUS.bad_extend, naming the argument and the
    sizes this build accepts with ``log_n`` (hw.model.layout.extension_pairs)."""
    rmap = R.RegisterMap(params)
    pairs = extension_pairs(params)
    parts = []
    if input_log_m and not rmap.extension_ok(input_log_m, log_n):
        parts.append(f"rejected input_log_m = {input_log_m} with log_n = {log_n} (STATUS.bad_extend): a "
                     f"2^{log_n}-point run of the {params.tag()} build takes zero-extended inputs of "
                     f"{_sizes_text(m for m, n in pairs if n == log_n)} points")
    if chain_log_n and not rmap.extension_ok(log_n, chain_log_n):
        parts.append(f"rejected chain_log_n = {chain_log_n} after log_n = {log_n} (STATUS.bad_extend): the "
                     f"output of a 2^{log_n}-point run of the {params.tag()} build can be written as the "
                     f"input of {_sizes_text(n for m, n in pairs if m == log_n)}-point runs")
    elif chain_log_n and not 1 <= batch <= rmap.max_batch(chain_log_n):
        parts.append(f"rejected chain_log_n = {chain_log_n} with batch = {batch} (STATUS.bad_extend): B x "
                     f"2^chain_log_n <= 2^{params.max_log_n}")
    return "; ".join(parts) or (f"rejected input_log_m = {input_log_m} / chain_log_n = {chain_log_n} with "
                                f"log_n = {log_n} (STATUS.bad_extend)")


class UnsupportedSize(XrtError):
    """The transform size cannot be run on this kernel."""


class BadPointer(XrtError):
    """A buffer given to the kernel breaks the beat/burst alignment, leaves its HBM channel, is too
    small, or overlaps another buffer."""


def import_pyxrt():
    """``import pyxrt``, or XrtUnavailable with the line that fixes it."""
    try:
        import pyxrt
    except ImportError as e:
        raise XrtUnavailable(f"cannot import pyxrt, XRT's Python binding ({e}): {SETUP_HINT} "
                             "(it puts /opt/xilinx/xrt/python on PYTHONPATH) and run again") from e
    return pyxrt


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


#: ID registers that report the kernel's native log_n range (read and checked when the register map has them).
_RANGE_IDS = ("MIN_LOG_N", "MAX_LOG_N")

#: Run states of a command that has not finished.
_UNFINISHED = ("ERT_CMD_STATE_TIMEOUT", "ERT_CMD_STATE_NEW", "ERT_CMD_STATE_QUEUED",
               "ERT_CMD_STATE_SUBMITTED", "ERT_CMD_STATE_RUNNING")


def kernel_size_text(log_n: int, n_points: int) -> str:
    """What the report says of a run of n_points on a kernel that ran 2^log_n points: "2^18 points,
    native" or "2^8 points (2^5 zero-padded by the host)"."""
    if n_points == 1 << log_n:
        return f"2^{log_n} points, native"
    return f"2^{log_n} points (2^{n_points.bit_length() - 1} zero-padded by the host)"


def kernel_calls_text(rows: int, limit: int, calls: int, flags: int) -> str:
    """What the report says of the kernel calls of a run: "1 call, batch 4, flags inverse+coset"."""
    names = [name for name, bit in (("inverse", R.FLAG_INVERSE), ("coset", R.FLAG_COSET)) if flags & bit]
    split = f" (split: at most {limit} per call)" if calls > 1 else ""
    return (f"{calls} call{'s' if calls > 1 else ''}, batch {rows}{split}, flags "
            f"{'+'.join(names) or 'none (forward)'}")


def c_int(word: int) -> int:
    """A 32-bit register word as the C int pyxrt's ``run.set_arg`` takes (words >= 2^31 negative)."""
    if not 0 <= word < 1 << 32:
        raise ValueError(f"word: expected a 32-bit value, got {word}")
    return word - (1 << 32) if word >= 1 << 31 else word


class DeviceBuffers:
    """One buffer per HBM channel, each of ``batch`` regions of ``layout.channel_bytes``: where a batch of
    transforms of the layout's size lives on the card (element e of every buffer in region e)."""

    def __init__(self, layout: HbmLayout, batch: int):
        self.layout, self.batch = layout, batch
        self.bos: dict[int, object] = {}
        self.views: dict[int, np.ndarray] = {}
        self.groups: dict[int, int] = {}

    @property
    def channel_bytes(self) -> int:
        return self.layout.channel_bytes * self.batch

    def release(self) -> None:
        """Drop the buffers (pyxrt frees a buffer's device memory with its last reference)."""
        self.views.clear()
        self.bos.clear()


class _Call:
    """``with _Call(ExcClass, "what"):`` turns an XRT exception into ExcClass(what: message)."""

    def __init__(self, exc: type[XrtError], what: str):
        self.exc, self.what = exc, what

    def __enter__(self):
        return self

    def __exit__(self, et, e, tb):
        if e is not None and not isinstance(e, XrtError) and isinstance(e, Exception):
            raise self.exc(f"{self.what}: {e}") from e
        return False


def _noting_errors(method):
    """An XrtError leaving ``method`` is first written to the device log (:meth:`XrtBackend._note`), once
    however many noting methods it crosses."""
    @functools.wraps(method)
    def noting(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except XrtError as e:
            if not getattr(e, "noted", False):
                e.noted = True
                self._note(f"xrt: error: {e}")
            raise
    return noting


class _Progress:
    """Progress with elapsed time for long transfers: ``to-device: 12/16 channels, 96.0 MiB, 0.31 s``.

    sink: None (silent), a callable taking each line, or "stderr" (one updating line on a terminal).
    """

    def __init__(self, label: str, total: int, sink):
        self.label, self.total, self.sink = label, total, sink
        self.t0 = time.perf_counter()
        self.nbytes = 0

    def note(self, text: str) -> None:
        self._emit(f"{self.label}: {text}", final=True)

    def step(self, done: int, nbytes: int) -> None:
        self.nbytes += nbytes
        line = (f"{self.label}: {done}/{self.total} channels, {self.nbytes / 2**20:.1f} MiB, "
                f"{time.perf_counter() - self.t0:.2f} s")
        self._emit(line, final=done == self.total, quiet=done % max(1, self.total // 4) != 0)

    def _emit(self, line: str, final: bool, quiet: bool = False) -> None:
        if self.sink is None:
            return
        if self.sink != "stderr":
            self.sink(line)
        elif sys.stderr.isatty():
            print("\r\x1b[K" + line, end="\n" if final else "", file=sys.stderr, flush=True)
        elif final or not quiet:
            print(line, file=sys.stderr, flush=True)


class XrtBackend(Backend):
    """A nantucket kernel on an Alveo card through pyxrt.

    ``XrtBackend(params=None, xclbin=None, device=0, pyxrt_module=None, *, layout=None,
    timeout_s=None, progress=None)``

    - params: the BuildParams the xclbin was built with; None reads them from the ID block, or when
      it cannot be read from the ``build_params.json`` the Vitis flow writes beside the xclbin, or
      takes the defaults (without the ID block a self-test transform confirms them);
    - xclbin: path; default :func:`default_xclbin`;
    - pyxrt_module: the pyxrt module to use (tests pass :class:`sim.fake_pyxrt.FakePyxrt`);
    - layout: an HbmLayout instance used for runs of its size (``layout.log_n``); every size uses
      ``hw.model.layout.HbmLayout(params, log_n)`` by default;
    - timeout_s: kernel wait timeout, a positive real number of seconds (math.inf: no limit); default
      10 s on a card, unlimited under XCL_EMULATION_MODE;
    - progress: None (transfer progress on stderr from 2^20 points on), False, True (always), or a
      callable taking one line, which also gets a line per stage (opening, loading, each kernel call)
      and every XrtError before it is raised: the device log of the command line;
    - kernel_computes: which of "inverse", "coset", "batch" the kernel computes (default all; the sim
      backend passes none while its Verilog kernel computes only the forward transform of one batch
      element), the host doing the rest (host/kernel_plan.py).

    Every argument is checked before pyxrt is imported or the card opened; an unknown keyword is a
    TypeError naming it and the valid ones; a missing xclbin or a directory is XclbinNotFound (also a
    ValueError: a bad argument).
    """

    name = "xrt"

    @keywords_checked()
    def __init__(self, params: BuildParams | None = None, xclbin=None, device: int = 0,
                 pyxrt_module=None, *, layout=None, timeout_s: float | None = None, progress=None,
                 kernel_computes=KERNEL_TRANSFORMS):
        super().__init__()
        check_params(params)
        if not isinstance(device, Integral) or isinstance(device, bool):
            raise TypeError(f"device: expected a device index (int >= 0), got {type(device).__name__} {device!r}")
        if device < 0:
            raise ValueError(f"device: expected a device index >= 0, got {device!r}")
        device = int(device)
        timeout_s = _check_timeout(timeout_s)
        if not (progress is None or isinstance(progress, bool) or callable(progress)):
            raise TypeError(f"progress: expected None, True, False or a callable taking one line, got "
                            f"{type(progress).__name__} {progress!r:.60}")
        computes = _check_computes(kernel_computes)
        if xclbin is not None and not isinstance(xclbin, (str, os.PathLike)):
            raise TypeError(f"xclbin: expected a path (str or os.PathLike), got {type(xclbin).__name__} {xclbin!r:.60}")
        self.xclbin_path = Path(xclbin) if xclbin is not None else default_xclbin()
        if self.xclbin_path.is_dir():
            raise XclbinNotFound(f"xclbin: {self.xclbin_path} is a directory, not an xclbin file")
        if not self.xclbin_path.is_file():
            raise XclbinNotFound(f"xclbin: {self.xclbin_path} does not exist (build it with "
                                 "`make build TARGET=hw`, or pass --xclbin PATH)")
        self._progress_opt = progress
        self._xrt = pyxrt_module if pyxrt_module is not None else import_pyxrt()
        emulated = os.environ.get("XCL_EMULATION_MODE") in ("hw_emu", "sw_emu")
        if timeout_s is None:
            timeout_s = None if emulated else 10.0
        elif math.isinf(timeout_s):
            timeout_s = None            # no limit
        emconfig = self.xclbin_path.parent / "emconfig.json"
        if emulated and "EMCONFIG_PATH" not in os.environ and emconfig.is_file():
            # XRT looks for emconfig.json next to the executable (python) unless told where.
            os.environ["EMCONFIG_PATH"] = str(emconfig.parent.resolve())
            self.report["Emulation"] = f"{os.environ['XCL_EMULATION_MODE']}, EMCONFIG_PATH={emconfig.parent}"
        self.timeout_s = timeout_s
        self.device_index = device
        #: what the kernel computes itself; the host does the rest (host/kernel_plan.py)
        self.kernel_computes = computes
        self._scratch: DeviceBuffers | None = None      # the buffers of run(), kept while they fit
        self._last_run = None           # (plan, layout, batch limit) of the last run, for locate()
        #: (log_n, batch, flags) of every kernel call that completed, in order
        self.kernel_runs: list[tuple[int, int, int]] = []
        #: called as after_run(log_n, batch, flags) when a kernel call completed (the sim backend counts
        #: its cycles)
        self.after_run = None
        #: log2 of the size the kernel transformed in the last run (None before the first)
        self.kernel_log_n: int | None = None
        self._stuck_run = None          # a run that timed out and may still be running
        self._last_shift = 0            # the coset shift last sent (left in the register between cosets)
        self._stuck_bos: dict = {}      # its buffers (kept referenced, so never freed under it)
        self._device = None
        self._open_noting(device, params, layout)

    @_noting_errors
    def _open_noting(self, device: int, params: BuildParams | None, layout) -> None:
        self._open(device, params, layout)

    def _open(self, device: int, params: BuildParams | None, layout) -> None:
        self._note(f"xrt: opening device {device}")
        with _Call(DeviceOpenFailed, f"device {device}: cannot open"):
            self._device = self._xrt.device(device)
        self._note(f"xrt: loading {self.xclbin_path}")
        with _Call(XclbinLoadFailed, f"xclbin {self.xclbin_path}: cannot load"):
            xb = self._xrt.xclbin(str(self.xclbin_path))
            self._uuid = self._device.load_xclbin(xb)
        with _Call(KernelNotFound, f"xclbin {self.xclbin_path}: no usable '{R.KERNEL_NAME}' kernel"):
            mode = getattr(getattr(self._xrt.kernel, "cu_access_mode", None), "exclusive", None)
            if mode is not None:        # exclusive access lets us read the ID registers
                self._kernel = self._xrt.kernel(self._device, self._uuid, R.KERNEL_NAME, mode)
            else:
                self._kernel = self._xrt.kernel(self._device, self._uuid, R.KERNEL_NAME)
        self._id_read = False
        self._sidecar: BuildParams | None = None
        self.params = self._identify(params, xb)
        self.rmap = R.RegisterMap(self.params)
        self._layouts: dict[int, HbmLayout] = {}
        if layout is not None:
            if not isinstance(layout, HbmLayout) or layout.params != self.params:
                raise TypeError(f"layout: expected an HbmLayout of the {self.params.tag()} build")
            self._layouts[layout.log_n] = layout
        self._windows = self._channel_windows(xb)
        if not self._id_read:
            self._note("xrt: no ID registers in this pyxrt: a self-test transform of a known input")
            self._self_test()
        self._note(f"xrt: kernel '{R.KERNEL_NAME}' ready, {self.params.tag()} build; {self.report['Identity']}")
        self.report.update({"Device": f"{device}", "xclbin": str(self.xclbin_path),
                            "Build params": self.params.tag()})

    def _note(self, line: str) -> None:
        """A line for the device log: given to the ``progress`` callable (nowhere otherwise)."""
        if callable(self._progress_opt):
            self._progress_opt(line)

    # -- setup -------------------------------------------------------------------------------------

    def layout_for(self, log_n: int) -> HbmLayout:
        """The HBM placement of a native run of 2^log_n points (built once per size)."""
        if log_n not in self._layouts:
            self._layouts[log_n] = HbmLayout(self.params, log_n)
        return self._layouts[log_n]

    def kernel_size(self, n_points: int) -> int:
        """log2 of the size the kernel runs for n_points (a supported size): log2(n_points) when native,
        else (below the native range) ``params.min_log_n``, the size the host zero-pads to."""
        return max(n_points.bit_length() - 1, self.params.min_log_n)

    def _read_id(self) -> dict[str, int] | None:
        reader = getattr(self._kernel, "read_register", None)
        if reader is None:
            return None
        with _Call(IdentityMismatch, "reading the identification registers"):
            return {name: int(reader(R.ID_BASE + 4 * i)) for i, name in enumerate(R.ID_REGISTERS)}

    def _identify(self, params: BuildParams | None, xb) -> BuildParams:
        ids = self._read_id()
        if ids is not None:
            if ids["MAGIC"] != R.MAGIC:
                raise IdentityMismatch(f"xclbin {self.xclbin_path}: MAGIC reads 0x{ids['MAGIC']:08x}, "
                                       f"not 0x{R.MAGIC:08x}: not a nantucket kernel")
            if ids["VERSION"] != R.VERSION:
                raise IdentityMismatch(f"xclbin {self.xclbin_path}: register map version "
                                       f"{ids['VERSION']}, this host speaks version {R.VERSION}")
            got = {"lanes": ids["LANES"], "log_core": ids["LOG_CORE"], "channels": ids["CHANNELS"]}
            if params is None:
                try:
                    params = BuildParams(**got)
                except (TypeError, ValueError) as e:
                    raise IdentityMismatch(f"xclbin {self.xclbin_path}: ID block reports {got}: {e}") from e
            want = {"lanes": params.lanes, "log_core": params.log_core, "channels": params.channels}
            if got != want:
                raise IdentityMismatch(f"xclbin {self.xclbin_path}: the kernel was built with {got}, "
                                       f"expected {want}")
            self._check_native_range(ids, params)
            self.report["Identity"] = (f"ID block: MAGIC 0x{ids['MAGIC']:08X} VERSION {ids['VERSION']} "
                                       f"LANES {ids['LANES']} LOG_CORE {ids['LOG_CORE']} "
                                       f"CHANNELS {ids['CHANNELS']}"
                                       + "".join(f" {name} {ids[name]}" for name in _RANGE_IDS if name in ids))
            self._id_read = True
            return params
        self._sidecar = self._sidecar_params()
        if params is None:
            params = self._sidecar if self._sidecar is not None else BuildParams()
        with _Call(IdentityMismatch, f"xclbin {self.xclbin_path}: reading its kernel list"):
            kernels = {k.get_name(): k.get_num_args() for k in xb.get_kernels()}
        want_args = len(R.RegisterMap(params).args)
        if kernels.get(R.KERNEL_NAME) != want_args:
            raise IdentityMismatch(f"xclbin {self.xclbin_path}: kernel '{R.KERNEL_NAME}' has "
                                   f"{kernels.get(R.KERNEL_NAME)} arguments, a {params.tag()} build has "
                                   f"{want_args}")
        self.report["Identity"] = (f"xclbin metadata ({want_args} arguments) and a self-test transform of "
                                   "a known input; this pyxrt cannot read registers")
        return params

    def _check_native_range(self, ids: dict[str, int], params: BuildParams) -> None:
        """The native sizes the ID block reports (MIN_LOG_N, MAX_LOG_N, where the register map has them)
        must be the build's: the host runs every size in that range natively, so a kernel that rejects
        some of them (a bitstream from before run-time sizes reads 0 there) is refused at open."""
        for name, want in zip(_RANGE_IDS, (params.min_log_n, params.max_log_n)):
            if name in ids and ids[name] != want:
                raise IdentityMismatch(f"xclbin {self.xclbin_path}: {name} reads {ids[name]}, but a "
                                       f"{params.tag()} build transforms 2^{params.min_log_n} .. "
                                       f"2^{params.max_log_n} points natively (a kernel built before "
                                       "run-time sizes? rebuild the xclbin)")

    def _self_test(self) -> None:
        """Without the ID block, two runs name a kernel built with other lanes or k before user data runs
        (the argument count only tells the channel count):

        1. the impulse at index 1 at the largest size 2^(2k) (its NTT is w_N^k, N distinct values) must
           come back exact: a kernel with other lanes places the points elsewhere, one with a smaller k
           rejects the size;
        2. a start with log_n = 2k + 1 must leave memory untouched (STATUS.bad_size): a kernel with a
           larger k transforms that size, and every size it shares with this build it places and
           transforms exactly as this build would, so step 1 cannot tell it. Not needed at k = 12."""
        native = self.params.n_points
        x = np.zeros(native, dtype=np.uint64)
        x[1] = 1
        want = F.powers(F.root_of_unity(native), native)
        tag = self.params.tag()
        hint = ("pass the parameters the xclbin was built with" if self._sidecar is None else
                f"{self._sidecar_path()} says {self._sidecar.tag()}")
        try:
            bad = int(np.count_nonzero(self.run(x) != want))
            changed = 0 if bad else self._larger_size_probe()
        except (KernelTimeout, KernelFailed) as e:
            self.close()                         # keeps the buffers if the run may still be going
            raise IdentityMismatch(f"xclbin {self.xclbin_path}: a self-test transform of a known input did "
                                   f"not complete ({e}); is the kernel built for {tag}?") from e
        if bad:
            self.close()
            raise IdentityMismatch(f"xclbin {self.xclbin_path}: the kernel is not a {tag} "
                                   f"build: a self-test transform of a known input came back with {bad} of "
                                   f"{native} points wrong (this pyxrt cannot read the ID registers; {hint})")
        if changed:
            self.close()
            raise IdentityMismatch(f"xclbin {self.xclbin_path}: the kernel is not a {tag} build: it "
                                   f"transformed 2^{self.params.max_log_n + 1} points, which a {tag} build "
                                   f"rejects (built with a larger k? this pyxrt cannot read the ID "
                                   f"registers; {hint})")
        for key in ("Kernel size", "Host work", "Kernel calls"):     # the report speaks of the user's runs
            self.report.pop(key, None)
        self.kernel_log_n = self._last_run = None
        self.kernel_runs.clear()
        self.timings = {}

    def _larger_size_probe(self) -> int:
        """Start a run of 2^(2k+1) points, which this build rejects without touching memory, in buffers
        large enough for a kernel that does transform it; returns how many words of them changed (0
        also at k = 12, where no build transforms more)."""
        p = self.params
        if p.log_core >= 12:
            return 0
        layout = HbmLayout(replace(p, log_core=p.log_core + 1), p.max_log_n + 1)
        bufs = self._allocate(layout)
        pattern = np.uint64(0x0123_4567_89AB_CDEF)   # any transform of it differs (its X[0] is N x it)
        sync = self._xrt.xclBOSyncDirection
        for ch, view in bufs.views.items():
            view[:] = pattern
            with _Call(TransferFailed, f"{R.pointer_arg(ch)}: sync to device"):
                bufs.bos[ch].sync(sync.XCL_BO_SYNC_BO_TO_DEVICE, layout.channel_bytes, 0)
        self._start_and_wait(bufs, layout.log_n)         # not execute(): the host would refuse the size
        changed = 0
        for ch, view in bufs.views.items():
            with _Call(TransferFailed, f"{R.pointer_arg(ch)}: sync from device"):
                bufs.bos[ch].sync(sync.XCL_BO_SYNC_BO_FROM_DEVICE, layout.channel_bytes, 0)
            changed += int(np.count_nonzero(view != pattern))
        del bufs
        self._free_buffers()
        return changed

    def _sidecar_path(self) -> Path:
        return self.xclbin_path.parent / "build_params.json"

    def _sidecar_params(self) -> BuildParams | None:
        """The parameters in the build_params.json that the Vitis flow (hw/flow/vitis.py) writes beside the
        xclbin, or None (absent or unreadable): a hint only, the self-test decides."""
        import json
        try:
            return BuildParams(**json.loads(self._sidecar_path().read_text())["params"])
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def _channel_windows(self, xb) -> dict[int, tuple[int, int]]:
        """{memory group: (base address, bytes)} from the xclbin's memory topology; empty if it has none
        (the checks then use CHANNEL_WINDOW_BYTES windows)."""
        windows = {}
        try:
            for m in xb.get_mems():
                windows[int(m.get_index())] = (int(m.get_base_address()), int(m.get_size_kb()) * 1024)
        except (AttributeError, RuntimeError, TypeError):
            return {}
        return windows

    def _allocate(self, layout: HbmLayout, batch: int = 1) -> DeviceBuffers:
        """The scratch buffers of ``run``, sized for ``batch`` transforms of ``layout``'s size: the current
        ones while they fit (same size, at least that batch), else the old ones are freed first and new
        ones allocated (never while a run may still use them: run() refuses to go on past a run that
        timed out)."""
        cur = self._scratch
        if cur is not None and cur.layout is layout and batch <= cur.batch and cur.bos:
            return cur
        self._free_buffers()
        self._scratch = self.allocate(layout, batch)
        return self._scratch

    @_noting_errors
    def allocate(self, layout: HbmLayout, batch: int = 1) -> DeviceBuffers:
        """New buffers, one per HBM channel on its master's bank, each of ``batch`` regions of
        ``layout.channel_bytes`` (for device-resident arrays; ``run`` keeps its own)."""
        self._check_open()
        bufs = DeviceBuffers(layout, batch)
        nbytes = bufs.channel_bytes
        flags = self._xrt.bo.normal
        for a in self.rmap.pointer_args:
            with _Call(BufferAllocFailed, f"{a.name}: allocating {nbytes} bytes on {a.port}'s bank"):
                group = self._kernel.group_id(a.index)
                bo = self._xrt.bo(self._device, nbytes, flags, group)
                view = np.frombuffer(bo.map(), dtype=np.uint64)
            bufs.bos[a.channel], bufs.views[a.channel], bufs.groups[a.channel] = bo, view, group
        return bufs

    def _free_buffers(self) -> None:
        """Drop the scratch buffers (pyxrt frees a buffer's device memory with its last reference)."""
        if self._scratch is not None:
            self._scratch.release()
        self._scratch = None

    # -- the scratch buffers, as the tests and the probe see them ----------------------------------

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

    # -- running -----------------------------------------------------------------------------------

    def supports(self, n_points: int) -> str | None:
        native = self.params.n_points
        if n_points < 1 or n_points & (n_points - 1):
            return f"{n_points} points: the size must be a power of two"
        if n_points > native:
            return (f"{n_points} points: this kernel ({self.params.tag()}) transforms at most "
                    f"{native} = 2^{self.params.log_n} points")
        return None

    def driver_for(self, n_points: int) -> "XrtBackend | None":
        """This driver, when it runs n_points natively (device-resident arrays), else None."""
        if self._device is None or self.supports(n_points) or n_points < 1 << self.params.min_log_n:
            return None
        return self

    def note_resident(self, n, rows, calls, inverse, coset, order) -> None:
        log_n = n.bit_length() - 1
        plan = plan_transform(n, log_n, inverse, coset, order, self.kernel_computes)
        self.report["Kernel size"] = kernel_size_text(log_n, n)
        self.report["Kernel calls"] = kernel_calls_text(rows, self.batch_limit(log_n), calls, plan.flags)
        self.report["Host work"] = "none (the points stayed on the card)"
        self.timings = {}               # no host phases: the caller times its own calls
        self.kernel_log_n = log_n
        self._last_run = (plan, self.layout_for(log_n), self.batch_limit(log_n))

    def _check_open(self) -> None:
        if self._device is None:
            raise XrtError("the backend is closed")

    def batch_limit(self, log_n: int) -> int:
        """The most transforms of 2^log_n points one kernel call takes (1 for a kernel without batches)."""
        if "batch" not in self.kernel_computes or not self.rmap.log_n_supported(log_n):
            return 1
        return self.rmap.max_batch(log_n)

    def _sink(self, n: int):
        opt = self._progress_opt
        if opt is False:
            return None
        if callable(opt):
            return opt
        return "stderr" if (opt is True or n >= PROGRESS_MIN_POINTS) else None

    def _rows_layout(self, bufs: DeviceBuffers, log_n: int | None, batch: int) -> HbmLayout:
        """The layout of 2^log_n-point rows (default: the size ``bufs`` are sized for) in ``bufs``, whose
        regions must hold ``batch`` of them."""
        layout = bufs.layout if log_n is None or log_n == bufs.layout.log_n else self.layout_for(log_n)
        if layout.channel_bytes * batch > bufs.channel_bytes:
            raise ValueError(f"rows: {batch} rows of 2^{layout.log_n} points need {layout.channel_bytes * batch} "
                             f"bytes per channel, the buffers hold {bufs.channel_bytes}")
        return layout

    def _sync(self, bufs: DeviceBuffers, chans, nbytes: int, to_device: bool, prog: "_Progress") -> int:
        """Sync the first ``nbytes`` of each channel in ``chans``; returns the bytes synced."""
        sync = self._xrt.xclBOSyncDirection
        direction = sync.XCL_BO_SYNC_BO_TO_DEVICE if to_device else sync.XCL_BO_SYNC_BO_FROM_DEVICE
        for i, ch in enumerate(chans):
            with _Call(TransferFailed, f"{R.pointer_arg(ch)}: sync {'to' if to_device else 'from'} device"):
                bufs.bos[ch].sync(direction, nbytes, 0)
            prog.step(i + 1, nbytes)
        return nbytes * len(chans)

    @_noting_errors
    def upload(self, bufs: DeviceBuffers, rows: np.ndarray, *, reverse: bool = False,
               buffer: str = "input", sink=None) -> int:
        """Place the (B, N) canonical ``rows`` (bit-reversed order with ``reverse``) as ``buffer`` of a
        2^log2(N)-point run into the first B regions of that size in ``bufs`` (sized for N points or more:
        the input of the first run of a chain) and sync them to the device; returns the bytes synced."""
        batch, n = rows.shape
        layout = self._rows_layout(bufs, n.bit_length() - 1, batch)
        t0 = time.perf_counter()
        scatter_rows(layout, rows, bufs.views, buffer=buffer, reverse=reverse)  # straight into the maps
        chans = list(layout.buffer_channels(buffer))
        prog = _Progress("to-device", len(chans), sink)
        prog.note(f"scattered {rows.size} points over {len(chans)} channels in {time.perf_counter() - t0:.2f} s")
        return self._sync(bufs, chans, layout.channel_bytes * batch, True, prog)

    @_noting_errors
    def upload_extended(self, bufs: DeviceBuffers, rows: np.ndarray, *, sink=None) -> int:
        """Place the (B, M) canonical ``rows`` as the zero-extended input of a run of ``bufs``' size T
        (``input_log_m`` = log2(M), which needs ``rmap.extension_ok(log2 M, log2 T)``): only the units of
        the M points are written (hw.model.layout.HbmLayout.zero_units), the kernel never reads the others,
        so no zeros are written. Syncs the B regions of the T-point layout (the M points' units are spread
        over them); returns the bytes synced."""
        layout = bufs.layout
        batch, m = rows.shape
        log_m = m.bit_length() - 1
        if not self.rmap.extension_ok(log_m, layout.log_n):
            raise ValueError(f"rows: the {self.params.tag()} build cannot read a zero-extended input of 2^{log_m} "
                             f"points in a 2^{layout.log_n}-point run (input_log_m, extension_supported)")
        self._rows_layout(bufs, None, batch)
        t0 = time.perf_counter()
        scatter_extended(layout, rows, bufs.views)
        chans = list(layout.buffer_channels("input"))
        prog = _Progress("to-device", len(chans), sink)
        prog.note(f"scattered {rows.size} points (zero-extended to {batch * layout.n_points}) over {len(chans)} "
                  f"channels in {time.perf_counter() - t0:.2f} s")
        return self._sync(bufs, chans, layout.channel_bytes * batch, True, prog)

    @_noting_errors
    def download(self, bufs: DeviceBuffers, batch: int, *, reverse: bool = False, buffer: str = "output",
                 sink=None, log_n: int | None = None) -> np.ndarray:
        """Sync the first ``batch`` regions of ``buffer``'s channels (of 2^log_n-point runs; default the
        size ``bufs`` are sized for) from the device and gather their points: a new (batch, N) array
        (bit-reversed order with ``reverse``)."""
        layout = self._rows_layout(bufs, log_n, batch)
        chans = list(layout.buffer_channels(buffer))
        prog = _Progress("from-device", len(chans), sink)
        self._sync(bufs, chans, layout.channel_bytes * batch, False, prog)
        t0 = time.perf_counter()
        rows = gather_rows(layout, bufs.views, batch, buffer=buffer, reverse=reverse)
        prog.note(f"gathered {rows.size} points in {time.perf_counter() - t0:.2f} s")
        return rows

    @_noting_errors
    def run(self, points: np.ndarray, inverse: bool = False, *, coset: int | None = None,
            order: str = "nn") -> np.ndarray:
        """The transform of ``points``: 1-D (n points) or 2-D (B rows of n points, each transformed);
        ``coset`` a shift 0 < g < p or None, ``order`` input then output order ("nn", "nr", "rn",
        "rr"). The kernel computes the inverse, the coset and the batch (split into calls of the
        largest batch it takes); see host/kernel_plan.py for what is left to the host."""
        self._check_open()
        self._check_not_stuck()
        x = F.as_u64(points)
        if x.size and x.max() >= F.P:          # one read pass; reduce only when needed
            x = F.vcanon(x)
        if x.ndim not in (1, 2) or x.size == 0:
            raise UnsupportedSize(f"points: expected a 1-D array or a (B, N) batch, got shape {x.shape}")
        rows = x.reshape(-1, x.shape[-1])
        n = rows.shape[1]
        reason = self.supports(n)
        if reason:
            raise UnsupportedSize(reason)
        layout = self.layout_for(self.kernel_size(n))
        log_n = layout.log_n
        plan = plan_transform(n, log_n, inverse, coset, order, self.kernel_computes)
        sink = self._sink(rows.size)
        limit = self.batch_limit(log_n)
        t_to = t_kernel = t_from = 0.0
        calls, outs = 0, []
        for r0 in range(0, rows.shape[0], limit):
            t0 = time.perf_counter()
            chunk = plan.prepare(rows[r0:r0 + limit])
            bufs = self._allocate(layout, min(rows.shape[0], limit))
            self.upload(bufs, chunk, reverse=plan.layout_reverse_in, sink=sink)
            t1 = time.perf_counter()
            self.execute(bufs, chunk.shape[0], inverse=plan.kernel_inverse,
                         coset=plan.coset if plan.kernel_coset else None)
            t2 = time.perf_counter()
            y = self.download(bufs, chunk.shape[0], reverse=plan.layout_reverse_out, sink=sink)
            outs.append(plan.finish(y))
            t_to, t_kernel, t_from = t_to + t1 - t0, t_kernel + t2 - t1, t_from + time.perf_counter() - t2
            calls += 1
            del bufs
        y = outs[0] if len(outs) == 1 else np.concatenate(outs)
        self.timings = {"to-device": t_to, "kernel": t_kernel, "from-device": t_from}
        self.report["Host work"] = (", ".join(plan.host_work()) or "layout only (scatter and gather; the "
                                    "orders are part of the placement)")
        self.report["Kernel size"] = kernel_size_text(log_n, n)
        self.report["Kernel calls"] = kernel_calls_text(rows.shape[0], limit, calls, plan.flags)
        self.kernel_log_n = log_n
        self._last_run = (plan, layout, limit)
        return y.reshape(x.shape[:-1] + (n,))

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

    @_noting_errors
    def execute(self, bufs: DeviceBuffers, batch: int = 1, *, inverse: bool = False,
                coset: int | None = None, log_n: int | None = None, input_log_m: int = 0,
                chain_log_n: int = 0) -> None:
        """Run the kernel once on the first ``batch`` regions of ``bufs`` (in place: the output overwrites
        the input): checks the start as the kernel would (KernelRefused before anything is sent), the
        pointers (BadPointer), starts, waits within the timeout and checks STATUS.

        ``log_n``: the run's size (default the size ``bufs`` are sized for; smaller for the first run of a
        chain). ``input_log_m`` = m: the input holds only each element's first 2^m points (placed by
        :meth:`upload_extended` or written by a chained run). ``chain_log_n`` = t: the output is written as
        the zero-extended input of a 2^t-point run (t = log_n: the same size's input placement), so the
        buffers must hold B x 2^t points per element region set."""
        self._check_open()
        self._check_not_stuck()
        flags = (R.FLAG_INVERSE if inverse else 0) | (R.FLAG_COSET if coset is not None else 0)
        shift = 0 if coset is None else int(coset)
        log_n = bufs.layout.log_n if log_n is None else log_n
        if batch > bufs.batch and log_n == bufs.layout.log_n and not chain_log_n:
            raise KernelRefused(f"a batch of {batch} does not fit buffers of {bufs.batch}", ("bad_batch",))
        refused = self.rmap.check_start(log_n, flags, batch, shift, input_log_m, chain_log_n)
        if refused:
            raise KernelRefused.from_status(refused, log_n, flags, batch, shift, self.params, by="the host",
                                            input_log_m=input_log_m, chain_log_n=chain_log_n)
        self._start_and_wait(bufs, log_n, flags, batch, shift, input_log_m, chain_log_n)
        self.kernel_runs.append((log_n, batch, flags))
        if self.after_run is not None:
            self.after_run(log_n, batch, flags)

    def _start_and_wait(self, bufs: DeviceBuffers, log_n: int, flags: int = 0, batch: int = 1,
                        shift: int = 0, input_log_m: int = 0, chain_log_n: int = 0) -> None:
        """Check the pointers, start one run with these arguments on ``bufs``, wait for it within the
        timeout, check STATUS."""
        sizes = [log_n] + ([chain_log_n] if chain_log_n else [])
        self._check_pointers(bufs, batch, sizes)
        with _Call(KernelFailed, "starting the kernel"):
            run = self._xrt.run(self._kernel)
            run.set_arg(self.rmap.arg("log_n").index, log_n)
            for a in self.rmap.pointer_args:
                run.set_arg(a.index, bufs.bos[a.channel])
            run.set_arg(self.rmap.arg("flags").index, flags)
            run.set_arg(self.rmap.arg("batch").index, batch)
            # Without a coset the shift is ignored: keep the last one in the register, so the kernel's
            # set-up for it (g^-1 and its squares, hw/coset.py) is not redone by the next coset run.
            if flags & R.FLAG_COSET:
                self._last_shift = shift
            for name, word in self.rmap.split_shift(self._last_shift).items():
                run.set_arg(self.rmap.arg(name).index, c_int(word))
            # set on every run (0 = off): a register keeps its value between runs
            run.set_arg(self.rmap.arg("input_log_m").index, input_log_m)
            run.set_arg(self.rmap.arg("chain_log_n").index, chain_log_n)
            run.start()
        # 0 waits without a limit; a longer limit than XRT's C int of milliseconds holds is none either
        timeout_ms = 0 if self.timeout_s is None else max(1, int(self.timeout_s * 1000))
        timeout_ms = 0 if timeout_ms > _MAX_WAIT_MS else timeout_ms
        self._note(f"xrt: kernel call: 2^{log_n} points, batch {batch}, flags 0x{flags:x}"
                   + (f", input_log_m {input_log_m}" if input_log_m else "")
                   + (f", chain_log_n {chain_log_n}" if chain_log_n else ""))
        t0 = time.perf_counter()
        try:
            with _Call(KernelFailed, "waiting for the kernel"):
                state = run.wait(timeout_ms)
        except BaseException:
            self._stuck_run, self._stuck_bos = run, dict(bufs.bos)    # it may still be running: keep its buffers
            raise
        waited = time.perf_counter() - t0
        name = getattr(state, "name", str(state))
        if state != self._xrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED and name in _UNFINISHED:
            self._stuck_run, self._stuck_bos = run, dict(bufs.bos)
            limit = "no limit" if self.timeout_s is None else f"limit {self.timeout_s:g} s"
            note = self._status_note()
            raise KernelTimeout(f"the kernel did not finish: still {name} after {waited:.1f} s ({limit})"
                                f"{note}; pyxrt cannot abort a run, so its buffers stay allocated and "
                                "this backend refuses new runs until it completes (reset the card with "
                                "`xbutil reset` if it never does)", waited=waited, status=note)
        # The run is over: drop it, as it holds its buffer arguments (a traceback keeps this frame, and
        # the buffers of the next size must not have to go around the old ones).
        del run
        if state != self._xrt.ert_cmd_state.ERT_CMD_STATE_COMPLETED:
            raise KernelFailed(f"the kernel run ended in state {name} after {waited:.1f} s"
                               f"{self._status_note()}")
        status = self._read_status()
        if status and status & R.STATUS_REJECTED:
            raise KernelRefused.from_status(status, log_n, flags, batch, shift, self.params, by="the kernel",
                                            input_log_m=input_log_m, chain_log_n=chain_log_n)
        if status and status & R.STATUS_AXI_ERROR:
            fault = R.decode_status(status)
            raise KernelFailed(f"HBM channel {fault['axi_channel']} answered {fault['axi_resp_name']} to a "
                               f"{'write' if fault['axi_write'] else 'read'} of the kernel; the output is "
                               f"not valid{self._status_note(status)}")
        if status:
            raise KernelFailed(f"the kernel reported a device error:{self._status_note(status)}")
        self._note(f"xrt: kernel done in {waited:.3f} s")

    def _read_status(self) -> int | None:
        """The STATUS word, or None when this pyxrt cannot read registers."""
        if getattr(self._kernel, "read_register", None) is None:
            return None
        with _Call(KernelFailed, "reading STATUS"):
            return int(self._kernel.read_register(self.rmap.id_offset("STATUS")))

    def _status_note(self, status: int | None = None) -> str:
        """`` STATUS 0x...: field=value, ...`` for every non-zero field of STATUS (any field the register
        map defines, e.g. an AXI error and its channel), or "" when it is clear or unreadable."""
        if status is None:
            try:
                status = self._read_status()
            except XrtError:
                return ""
        if not status:
            return ""
        parts, known = [], 0
        for f in self.rmap.register("STATUS").fields:
            known |= f.mask
            if status & f.mask:
                parts.append(f"{f.name}={(status & f.mask) >> f.lsb}")
        if status & ~known:
            parts.append(f"undefined bits 0x{status & ~known:x}")
        return f" STATUS 0x{status:08x}: {', '.join(parts)}"

    def _check_not_stuck(self) -> None:
        """Refuse to touch buffers that a timed-out run may still be writing (KernelTimeout), unless it
        has completed since."""
        run = self._stuck_run
        if run is None:
            return
        with _Call(KernelFailed, "checking the run that timed out"):
            state = run.state()
        name = getattr(state, "name", str(state))
        if name in _UNFINISHED:
            raise KernelTimeout(f"a previous run timed out and is still {name}: its buffers may still be "
                                "written, so this backend runs nothing more; reset the card (`xbutil "
                                "reset`) and open it again")
        self._stuck_run = None

    def _check_pointers(self, bufs: DeviceBuffers, batch: int = 1, sizes=None) -> None:
        """Every buffer of ``bufs``: aligned to the beat and to the longest burst of the run's layouts
        (``sizes``: log_n of each layout the run reads or writes, default the buffers' own; no burst
        crosses 4 KiB), inside the HBM pseudo-channel its master is wired to, large enough for ``batch``
        transforms of each size, overlapping no other (BadPointer)."""
        # a size the kernel refuses (sent past the host's check) is placed nowhere: the buffers' own then
        layouts = [bufs.layout] + [self.layout_for(s) for s in (sizes or ()) if s != bufs.layout.log_n
                                   and self.rmap.log_n_supported(s)]
        layout = max(layouts, key=lambda lay: lay.log_n)
        align = max(max(lay.burst_beats, lay.unit_beats) for lay in layouts) * BEAT_BYTES
        need = int(layout.channel_bytes) * batch
        spans = []
        for a in self.rmap.pointer_args:
            bo = bufs.bos[a.channel]
            with _Call(BadPointer, f"{a.name}: reading the buffer's address"):
                addr, size = int(bo.address()), int(bo.size())
            where = f"{a.name} (for {a.port}) at 0x{addr:x}"
            if addr % BEAT_BYTES:
                raise BadPointer(f"{where}: not aligned to the {BEAT_BYTES}-byte AXI beat")
            if addr % align:
                raise BadPointer(f"{where}: not aligned to {align} bytes, so a {align}-byte DMA burst would "
                                 f"cross a {PAGE_BYTES}-byte boundary (AXI forbids it)")
            if size < need:
                raise BadPointer(f"{where}: {size} bytes, the layout of a 2^{layout.log_n}-point run "
                                 f"needs {need}"
                                 + (f" for a batch of {batch}" if batch > 1 else ""))
            group = bufs.groups.get(a.channel, a.channel)
            base, span = self._windows.get(group, (group * CHANNEL_WINDOW_BYTES, CHANNEL_WINDOW_BYTES))
            if not (base <= addr and addr + need <= base + span):
                raise BadPointer(f"{where}: [0x{addr:x}, 0x{addr + need:x}) leaves memory bank {group} "
                                 f"[0x{base:x}, 0x{base + span:x}), the only one {a.port} is connected to")
            spans.append((addr, addr + need, a.name))
        spans.sort()
        for (lo1, hi1, n1), (lo2, hi2, n2) in zip(spans, spans[1:]):
            if lo2 < hi1:
                raise BadPointer(f"{n1} [0x{lo1:x}, 0x{hi1:x}) and {n2} [0x{lo2:x}, 0x{hi2:x}) overlap")

    def close(self, *, card_reset: bool = False) -> None:
        """Release buffers, kernel and device (in that order). The buffers of a run that timed out
        and may still be running are kept until the process exits instead, unless ``card_reset`` says
        the caller has reset or destroyed the card (nothing can write them any more)."""
        if self._stuck_run is not None and not card_reset:
            _STRANDED.append((self._stuck_run, self._stuck_bos))
        self._stuck_run, self._stuck_bos = None, {}
        self._free_buffers()
        self._kernel = None
        self._device = None
