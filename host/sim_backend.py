"""The `sim` device backend: the host's XRT driver (host/xrt/) running against the RTL in Verilator.

The very adapter used with a card scatters the points with the HBM layout, writes the arguments and
ap_start as XRT would, waits, and gathers; underneath, sim.fake_pyxrt provides the pyxrt surface and
sim.cosim.SimulatedKernel turns register accesses and buffer syncs into AXI4-Lite transactions and HBM
backdoor transfers in a running simulation of the kernel Verilog with one HBM channel model per port.

The simulated Verilog kernel computes the inverse, the coset and batches itself (SIM_KERNEL_COMPUTES),
exactly as a card's would; the host does only the zero-padding of sizes below the native range
(host/kernel_plan.py). The report's "Kernel calls" and "Host work" lines say what ran where, and "Kernel
cycles" adds up the cycles of every call of a run (a batch larger than the kernel takes is split);
"Measured cycles" and "Measured time" are what the kernel counted itself and wrote into its status
records (the driver's, host/xrt/backend.py), when it counts.

Without explicit build parameters it picks the smallest build that holds N points (k = ceil(log2(N)/2),
4 lanes, 4 channels); each new build is compiled once and cached under build/sim/. With parameters, every
size up to the build's 2^(2k) runs on that build: natively from 2^min_log_n, zero-padded below.
"""

import contextlib
import copy
import sys
import threading
import time
from numbers import Integral
from pathlib import Path

import numpy as np

from nantucket.host.backend_base import (Backend, DeviceError, ResidentArrays, check_build_field, check_params,
                                        fill_step_cycles, keywords_checked)
from nantucket.host.kernel_plan import KERNEL_TRANSFORMS
from nantucket.hw.model import field as F
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.build_root import writable_build_base
from nantucket.hw.flow.scratch import exit_on_termination, scratch_dir

#: log2 of the largest size a sim build transforms in one call (k = 12); larger sizes run on that build
#: as a four-step over its calls (host/large.py)
_LARGEST_SIM_LOG_N = 24
#: Prefix of the scratch directory holding the card's xclbin, in the system temp dir.
SCRATCH_PREFIX = "nantucket-sim-"

__all__ = ["SimBackend", "smallest_params", "SIM_KERNEL_COMPUTES"]

#: What the simulated Verilog kernel computes itself: everything a kernel may (the same RTL as the card's).
SIM_KERNEL_COMPUTES = KERNEL_TRANSFORMS


def _check_flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _progress_sink(progress):
    """The ``progress`` option as a callable taking one line, or None for quiet."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _stderr_line
    if callable(progress):
        return progress
    raise TypeError(f"progress: expected None, True, False or a callable taking one line, got "
                    f"{type(progress).__name__} {progress!r:.60}")


def smallest_params(n_points: int, field=F.DEFAULT_FIELD) -> BuildParams:
    """The smallest configuration in ``field`` whose native size 2^(2k) holds n_points (4 channels; 4 lanes,
    8 in a 31-bit field)."""
    return BuildParams.smallest_for(n_points, check=HbmLayout, field=F.get(field).name)


class SimBackend(Backend, ResidentArrays):
    """Runs transforms on the simulated kernel. Options: params (BuildParams or None), field (the field
    the caller's points are in: it must be the build's, ``params.field``; without params the card is built
    in it, any preset), refresh (HBM
    refresh windows, default on), stalls (random AXI stalls), progress, cycle_budget (NTT cycles a run
    may take before it counts as timed out; default per run size, 8 x the ideal cycles of the size that
    runs + 2^16).

    progress: None or False (default): quiet, the simulator's output stays in its own log (the tail of
    which a SimulationError quotes); True: a line per stage on stderr (build, simulator start, each
    kernel call, transfers); a callable: each such line given to it (the CLI writes them to its device
    log), errors included.

    The build folder (hw/flow/build_root.py) must be writable: checked here, before anything starts
    (BuildDirUnwritable, a ValueError). Calls are serialized (one lock): two threads sharing the object
    take turns.

    A run that times out or loses the simulator closes the simulated card (the simulation is the
    card: closing it is the reset pyxrt cannot do), so the next run on this object starts a fresh one."""

    name = "sim"

    @keywords_checked()
    def __init__(self, params: BuildParams | None = None, *, field="goldilocks", refresh: bool = True,
                 stalls: bool = False, progress=None, cycle_budget: int | None = None):
        super().__init__()
        self._params = check_params(params)
        self.field = (F.get(field, "field") if self._params is None
                      else check_build_field(field, self._params, "the sim card"))
        self._refresh = _check_flag(refresh, "refresh")
        self._stalls = _check_flag(stalls, "stalls")
        self._say = _progress_sink(progress)
        if cycle_budget is not None and (not isinstance(cycle_budget, Integral) or isinstance(cycle_budget, bool)
                                         or cycle_budget < 1):
            raise ValueError(f"cycle_budget: expected a positive number of cycles, got {cycle_budget!r}")
        self._cycle_budget = None if cycle_budget is None else int(cycle_budget)
        self.build_dir = writable_build_base()
        self._lock = threading.RLock()
        self._device = None
        self._tmp = None
        self.kernel = None          # sim.cosim.SimulatedKernel of the open card
        self.machine = None         # sim.fake_pyxrt.FakePyxrt of the open card
        self._last_driver = None     # the XRT driver of the last run, for locate()
        self._cycles: list[tuple[int, int, int]] = []    # (log_n, batch, NTT cycles) of each kernel call
        self._history: list[int | None] = []             # NTT cycles of every kernel call, in order
        #: the kernel's NTT cycles over the calls of the last run (None before the first)
        self.kernel_cycles: int | None = None
        #: the kernel's own counts over the calls of the last run, from its status records (the XRT
        #: driver's ``kernel_measured``; None when they carry none)
        self.kernel_measured: dict | None = None
        self.kernel_log_n: int | None = None    # log2 of the size the kernel ran last

    def _note(self, line: str) -> None:
        if self._say is not None:
            self._say(line)

    def params_for(self, n_points: int) -> BuildParams:
        """The build of a run of n_points: the given one, else the smallest that holds n_points (past the
        largest sim build's 2^24, that build: the size runs as a four-step over its calls, host/large.py)."""
        if self._params is not None:
            return self._params
        return smallest_params(min(n_points, 1 << _LARGEST_SIM_LOG_N), self.field)

    def supports(self, n_points: int) -> str | None:
        if n_points < 1 or n_points & (n_points - 1):
            return f"{n_points} points: the size must be a power of two"
        if n_points > 1 << self.field.two_adicity:
            return (f"{n_points} points: {self.field.name} has roots of unity up to 2^{self.field.two_adicity}")
        try:
            p = self.params_for(n_points)
        except ValueError as e:
            return f"{n_points} points: no sim build: {e}"
        try:
            HbmLayout(p)                # the simulated card places the points with the HBM layout
        except ValueError as e:
            return f"the {p.tag()} build cannot run on the simulated card: {e}"
        return None                     # past p.n_points: the four-step over calls (host/large.py)

    def open(self, params: BuildParams):
        """Start (or reuse) the simulated card for ``params``: the XRT driver over the fake pyxrt whose
        kernel is the simulation. Returns the driver (host.xrt.XrtBackend)."""
        with self._lock:
            if self._device is not None and self._device.params == params:
                return self._device
            self.close()
            from nantucket.host.xrt import XrtBackend
            from nantucket.sim.cosim import SimulatedKernel
            from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

            quiet = self._say or (lambda line: None)

            def factory(p, hbm, layout):
                self.kernel = SimulatedKernel(p, hbm, layout, refresh=self._refresh, stalls=self._stalls,
                                              progress=quiet, cycle_budget=self._cycle_budget)
                return self.kernel

            self._note(f"sim: starting the simulated card for the {params.tag()} build (builds under "
                       f"{self.build_dir})")
            exit_on_termination()           # SIGTERM/SIGHUP: close the simulator and remove scratch files
            self._tmp = scratch_dir(SCRATCH_PREFIX)
            xclbin = write_xclbin(Path(self._tmp.name) / "nantucket.xclbin", params)
            self.machine = FakePyxrt(kernel_factory=factory)
            self._device = XrtBackend(params, xclbin=xclbin, pyxrt_module=self.machine, field=self.field,
                                      timeout_s=24 * 3600.0,
                                      progress=self._say or False, kernel_computes=SIM_KERNEL_COMPUTES)
            self._device.after_run = self._count_cycles
            self._device.run_buffer_sets = 1        # the simulated channels hold one call's buffers
            self._device.buffer_pool.limit_bytes = 0   # ... so no idle ones either
            return self._device

    def _count_cycles(self, log_n: int, batch: int, flags: int) -> None:
        self._cycles.append((log_n, batch, self.kernel.last_ntt_cycles))
        self._history.append(self.kernel.last_ntt_cycles)

    def calls_made(self) -> int:
        return len(self._history)

    def call_cycles(self, calls: int) -> list[int | None]:
        return list(self._history[len(self._history) - calls:]) if calls else []

    def call_driver(self, n_points: int):
        """The simulated card's XRT driver for the runs of one call (an LDE chained on the card) of a
        native size of the build: its buffers are the only ones the simulated HBM then holds (run()'s
        scratch buffers are freed first), and the call releases them before it returns. None for a size
        outside the build's native range (below: zero-padded; past one call: the four-step of run())."""
        params = self.params_for(n_points)
        if self.supports(n_points) or not 1 << params.min_log_n <= n_points <= params.n_points:
            return None
        with self._lock:
            device = self.open(params)
            device.card.free_buffers()
            self._cycles = []
            return device

    def note_steps(self, steps: list[dict]) -> None:
        """An LDE's steps (host/api/device.py): the report's cycles and projected time cover every
        kernel call of every step (steps that ran through run(), one after the other, counted here)."""
        device = self._device
        if device is not None and all(st.get("cycles") is None for st in steps if st["kernel_calls"]):
            fill_step_cycles(steps, self.call_cycles(sum(st["kernel_calls"] for st in steps)), device.params.ntt_mhz)
        super().note_steps(steps)
        if device is None:
            return
        params = device.params
        cycles = [st["cycles"] for st in steps if st["kernel_calls"]]
        calls = sum(st["kernel_calls"] for st in steps)
        log_t = max(st["log_n"] for st in steps)
        self.kernel_log_n = log_t
        self.report["Build params"] = f"{params.tag()} (native sizes 2^{params.min_log_n} .. 2^{params.max_log_n})"
        self.report["Kernel size"] = (f"2^{log_t} points, native (the LDE's result)" if log_t <= params.max_log_n else
                                      f"2^{log_t} points as a four-step over kernel calls (the LDE's result)")
        if cycles and all(c is not None for c in cycles):
            total = self.kernel_cycles = sum(cycles)
            self.report["Kernel cycles"] = f"{total} NTT cycles over {calls} calls (every step; per step below)"
            self.report["Projected time"] = (f"{total / (params.ntt_mhz * 1e6) * 1e3:.4f} ms at {params.ntt_mhz:g} MHz "
                                             f"(DMA at {params.dma_mhz:g} MHz)")
        self.kernel_measured = device.kernel_measured

    def driver_for(self, n_points: int):
        """None: arrays on the simulated card stay staged in host memory. Its HBM channel models hold one
        buffer per channel from byte 0, the size of the build's largest transform (sim/cosim.py), so a
        resident array's own buffers beside run()'s cannot be simulated; and without fixed build
        parameters each size may pick another build, whose opening closes the card."""
        return None

    def run(self, points, inverse: bool = False, *, coset=None, order="nn", row_step=None) -> np.ndarray:
        """The transform on the simulated card (``row_step``: XrtBackend.run's): the NTT's runs, each
        through the card path (the driver's :meth:`execute`)."""
        with self._lock:
            try:
                return self._run(points, inverse, coset, order, row_step)
            except DeviceError as e:
                self._note(f"sim: error: {e}")
                raise

    def execute(self, run, buffers):
        """The card path (Backend.execute) on the simulated card: ``run`` (a :class:`hw.model.run.Run` of
        any operation) on ``buffers``, a set of the open card's driver (``call_driver(n).allocate``);
        returns the kernel's status record. The card's errors as :meth:`run`'s (a start the build refuses:
        KernelRefused naming the STATUS reason, bad_op for an op it does not carry)."""
        with self._lock:
            device = self._device
            if device is None:
                raise DeviceError("sim: no simulated card is open: allocate the run's buffers on "
                                  "call_driver(n)'s driver first")
            try:
                with self._card_errors():
                    return device.execute(run, buffers)
            except DeviceError as e:
                self._note(f"sim: error: {e}")
                raise

    @contextlib.contextmanager
    def _card_errors(self):
        """The simulated card's failures as the backend's errors: a lost or timed-out simulator closes
        the card (the next run starts a fresh one)."""
        from nantucket.host.xrt import KernelTimeout, XclbinLoadFailed
        from nantucket.sim.cosim import SimulationError
        try:
            yield
        except SimulationError as e:
            self.close()
            raise DeviceError(f"simulated kernel: {e}") from e
        except XclbinLoadFailed as e:
            # the fake pyxrt starts the simulator when the xclbin is loaded: say what failed, the simulator
            self.close()
            if isinstance(e.__cause__, SimulationError):
                raise DeviceError(f"simulated kernel: {e.__cause__}") from e.__cause__
            raise
        except KernelTimeout as e:
            budget = self.kernel.run_budget if self.kernel is not None else None
            self.close()
            raise KernelTimeout(f"the simulated kernel did not finish: still busy after its budget of "
                                f"{budget} NTT cycles, simulated in {e.waited or 0:.1f} s{e.status}; the simulated "
                                "card was closed, the next run starts a fresh one", waited=e.waited,
                                status=e.status) from e

    def _run(self, points, inverse, coset, order, row_step=None) -> np.ndarray:
        from nantucket.host.xrt.backend import MEASURED_LINES

        shape = np.shape(points)
        n = int(shape[-1]) if shape else 1
        params = self.params_for(n)
        t0, first = time.perf_counter(), len(self._history)
        self._cycles = []
        with self._card_errors():
            device = self.open(params)
            t1 = time.perf_counter()
            extra = dict(device.extra_transfers)
            y = device.run(points, inverse=inverse, coset=coset, order=order, row_step=row_step)
            for direction, moved in device.extra_transfers.items():
                self.extra_transfers[direction] += moved - extra[direction]
        self.timings = dict(device.timings)
        log_n = self.kernel_log_n = device.kernel_log_n
        self.report = {
            "Build params": f"{params.tag()} (native sizes 2^{params.min_log_n} .. 2^{params.max_log_n})",
            "Kernel size": device.report["Kernel size"],
            "Kernel calls": device.report["Kernel calls"],
            "Host work": device.report["Host work"],
            "Simulator": f"Verilator, HBM refresh {'on' if self._refresh else 'off'}, "
                         f"AXI stalls {'on' if self._stalls else 'off'}; build and start {t1 - t0:.1f} s",
        }
        self.report.update(self.cycles_report(params, log_n))
        # the driver's steps (a run past one kernel call: the four-step's, host/large.py) with the cycles
        # of their kernel calls
        self.steps = copy.deepcopy(device.steps)
        fill_step_cycles(self.steps, [c for _, _, c in self._cycles], params.ntt_mhz)
        if n > params.n_points:
            self.note_composite(first, len(self._history), self.steps)
        # what the kernel counted itself (its status records), when it counts
        self.kernel_measured = device.kernel_measured
        self.report.update({key: device.report[key] for key in MEASURED_LINES if key in device.report})
        self._last_driver = device
        return y

    def cycles_report(self, params: BuildParams, log_n: int) -> dict[str, str]:
        """The kernel's own cycles over the calls since the last run started, against B x the ideal."""
        cycles = self.kernel_cycles = sum(c for _, _, c in self._cycles if c is not None)
        elements = sum(b for _, b, _ in self._cycles)
        sizes = sorted({n for n, _, _ in self._cycles})
        if len(sizes) > 1:          # a four-step over calls of several sizes (host/large.py): each its ideal
            ideal = sum(params.ideal_cycles(n) * b for n, b, _ in self._cycles)
            what = " + ".join(f"{sum(b for m, b, _ in self._cycles if m == n)} x 2^{n}" for n in sizes)
        else:
            ideal = params.ideal_cycles(sizes[0] if sizes else log_n) * max(1, elements)
            size = sizes[0] if sizes else log_n
            what = f"{elements} x 2^{size}" if elements > 1 else f"2^{size}"
        calls = len(self._cycles)
        over = f" over {calls} calls" if calls > 1 else ""
        return {
            "Kernel cycles": f"{cycles} NTT cycles{over} ({cycles / ideal:.3f} x the {ideal}-cycle ideal of "
                             f"{what} points)",
            "Projected time": f"{cycles / (params.ntt_mhz * 1e6) * 1e3:.4f} ms at {params.ntt_mhz:g} MHz "
                              f"(DMA at {params.dma_mhz:g} MHz)",
        }

    def locate(self, index: int) -> str | None:
        # the driver's answer needs only its layout, so it stays valid after the card is closed
        return self._last_driver.locate(index) if self._last_driver is not None else None

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._device is not None:
            self._device.close(card_reset=True)     # the simulator (the card) is closed next
            self._device = None
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
