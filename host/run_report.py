"""What `nantucket run` prints, and where the device's own output goes.

:class:`RunReport` is the report on stdout: ``Label..... value`` lines as the run goes, or with
``--json`` one JSON object at the end (also after bad input, a device or an output error, with
``"verdict": "ERROR"``, ``"error"`` and ``"exit_status"``).
:class:`ChatterLog` sends everything a device process writes to file descriptors 1 and 2 (the Verilator
build, cocotb and its AXI models, driver progress) to a log file while the device is open, so stdout
carries the report only; the log's path is shown when the run fails and the log holds something (an empty
log is removed when the device closes).
"""

import json
import os
import sys
import time
from importlib.metadata import PackageNotFoundError, version as _dist_version

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.platform import PCIE_FROM_CARD_GBPS, PCIE_LINK, PCIE_TO_CARD_GBPS, pcie_seconds
from nantucket.host.projection import PROJECTION_SOURCE

from .cli_args import order_text, say

__all__ = ["RunReport", "ChatterLog", "DEFAULT_LOG_DIR", "version"]

#: Where device logs go unless --log-dir says otherwise (relative to the working directory, as `make run`'s
#: build/run is).
DEFAULT_LOG_DIR = os.path.join("build", "log")

#: Backends whose phase timings are the wall time of a simulation, not of a device.
_SIMULATED = {"sim"}
#: Step names as the text report's labels show them (18 characters at most)
_SHORT = {"zero-extension": "zero-ext", "coset forward": "coset fwd"}
#: Backends that compute on this host's CPU: their compute phase is CPU time, not a kernel's.
_ON_THE_CPU = {"model"}


def version() -> str:
    """The installed distribution's version ("unknown" in a checkout that was never installed)."""
    try:
        return _dist_version("nantucket")
    except PackageNotFoundError:
        return "unknown"




class RunReport:
    """The report of one run; ``as_json`` collects it into one object printed by :meth:`emit`."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.fields: dict = {"verdict": None}
        self.log_path = None
        #: called before each printed line (a progress line sharing the terminal clears itself)
        self.before_print = None

    def _print(self, line: str) -> None:
        if self.before_print is not None:
            self.before_print()
        say(line)

    def line(self, label: str, text: str, key: str | None = None, value=None) -> None:
        if key is not None:
            self.fields[key] = text if value is None else value
        if not self.as_json:
            self._print(f"{label:.<18} {text}")

    def header(self, args, n: int, read_s: float) -> None:
        self.line("N", str(n), "n", n)
        field = getattr(args, "field", F.DEFAULT_FIELD)
        self.line("Field", f"{field.name} (p = {field.p})", "field", field.name)
        self.line("Input points", args.input, "input")
        self.line("Expected points", args.expected, "expected")
        blowup = getattr(args, "blowup", None)
        if blowup is not None:
            self.line("Direction", f"LDE, blowup {blowup}: inverse 2^{n.bit_length() - 1}, zero-extension, "
                      f"coset forward 2^{(n * blowup).bit_length() - 1}", "direction", "lde")
        else:
            self.line("Direction", "inverse" if args.inverse else "forward", "direction")
        self.fields["blowup"] = blowup          # null for a transform
        axis, ext = getattr(args, "axis", -1), getattr(args, "ext", None)
        layout = ((", the columns of an N x B matrix (axis 0)" if axis == 0 else "")
                  + (f", {ext} limbs a point (ext {ext})" if ext else ""))
        self.line("Batch", f"{args.batch} transform{'s' if args.batch > 1 else ''} of {n} points{layout}", "batch",
                  args.batch)
        self.fields["axis"], self.fields["ext"] = axis, ext       # -1: back to back; null: base-field points
        coset = getattr(args, "coset", None)
        self.line("Coset", "none" if coset is None else f"shift g = {coset} (0x{coset:x})")
        self.fields["coset"] = coset            # null without a coset
        self.line("Order", order_text(args.order), "order")
        self.fields["flags"] = {"inverse": bool(args.inverse), "coset": coset is not None}
        self.line("Backend", args.backend, "backend")
        self.fields["timings_s"] = {"read": read_s}
        self.line("Read files", f"{read_s:.3f} s")

    def device(self, backend: str, timings: dict, report: dict, wall_s: float, log,
               kernel_log_n: int | None = None, kernel_cycles: int | None = None,
               kernel_measured: dict | None = None, steps: list | None = None,
               transfers: dict | None = None) -> None:
        """The device's phase timings (wall clock of the host, or of the simulator for a simulated
        device) and its own report lines (kernel cycles, projected time, the size the kernel ran, the
        kernel's measured cycles and time, ...); ``kernel_log_n`` (log2 of the size the kernel
        transformed, None without a kernel), ``kernel_cycles`` (the simulated kernel's NTT cycles over the
        run's calls, None where no device counts them) and ``kernel_measured`` (what the kernel counted
        itself in its status records: pass 1 and pass 2 DMA and NTT cycles, the total and its seconds at
        the DMA clock; None when its records carry no counts) also go into the JSON object. ``steps``: the
        backend's step records of the call (host.backend_base.step_record), a line each and the JSON's
        ``steps``; ``transfers``: the bytes the device moved each way, which the projected end-to-end time
        puts over the card's PCIe link (hw.model.platform) beside the kernel-only time."""
        self.fields["kernel_cycles"] = kernel_cycles
        self.fields["kernel_measured"] = kernel_measured
        simulated = backend in _SIMULATED
        cpu = backend in _ON_THE_CPU
        self.fields["clock"] = "simulator" if simulated else "host"
        for phase, seconds in timings.items():
            # A simulated kernel phase is the simulator's wall time (preload, simulation, read-back);
            # the kernel's own time is in the device report (cycles, projected time). The model has no
            # kernel: its compute phase is this host's CPU at work (the call's wall time).
            suffix = " (simulator wall)" if simulated and phase == "kernel" else ""
            if cpu and phase == "kernel":
                phase, suffix = "cpu", " (the golden model on this host's CPU, wall clock)"
            self.fields["timings_s"][phase] = seconds
            label = "CPU time" if phase == "cpu" else f"{phase.capitalize()} time"
            self.line(label, f"{seconds * 1e3:.3f} ms{suffix}")
        self.fields["timings_s"]["device"] = wall_s
        started = ", simulator start included" if simulated else ""
        self.line("Device wall time", f"{wall_s:.3f} s (transfers and runs{started})")
        self.fields["device_report"] = report
        if kernel_log_n is not None:
            self.fields["kernel_log_n"] = kernel_log_n
        for label, text in report.items():
            self.line(label, text)
        self._steps(steps or [])
        self._projection(steps or [], transfers, kernel_measured, simulated)
        if log is not None and log.holds_something():
            self.log_path = self.fields["log"] = log.path

    def _steps(self, steps: list) -> None:
        """A line per step of the call (an LDE's three; a transform's one; a transform past one kernel
        call's columns, twiddles and rows) and the JSON's ``steps``; a composite step's parts (a step that
        ran as a four-step over kernel calls) follow it as "Step 2.1", "Step 2.2", ... (nested in the JSON
        as its ``parts``)."""
        self.fields["steps"] = steps
        self._step_lines(steps, "")

    def _step_lines(self, steps: list, prefix: str) -> None:
        for i, st in enumerate(steps, 1):
            rows = st.get("rows")
            size = f"2^{st['log_n']}" if rows in (None, 1) else f"{rows} x 2^{st['log_n']}"
            parts = [size, f"on the {st['where']}" if st["where"] != "card and host" else
                     "on the card and the host"]
            calls = st["kernel_calls"]
            parts.append(f"{calls} kernel call{'s' if calls != 1 else ''}")
            if st.get("cycles") is not None:     # with no kernel call (the model): a card's, projected
                parts.append(f"{st['cycles']} NTT cycles{'' if calls else ' on a card, projected'}")
            if st.get("projected_s") is not None:
                parts.append(f"{st['projected_s'] * 1e3:.4f} ms projected")
            if st.get("cpu_s") is not None:
                parts.append(f"{st['cpu_s'] * 1e3:.3f} ms CPU")
            if st.get("seconds") is not None:
                parts.append(f"{st['seconds'] * 1e3:.3f} ms wall")
            parts.append(f"host work: {st['host_work']}")
            number = f"{prefix}{i}"
            self.line(f"Step {number} {_SHORT.get(st['step'], st['step'])}", ", ".join(parts))
            if st.get("parts"):
                self._step_lines(st["parts"], f"{number}.")

    def _projection(self, steps: list, transfers: dict | None, measured: dict | None, simulated: bool) -> None:
        """The kernel-only projected time (the steps' cycles at the NTT clock; on a card without them the
        kernel's measured time) and the projected end-to-end time adding the PCIe transfers of the bytes
        the device moved at the platform's measured link rates: their own lines and JSON fields
        (``projected_kernel_s``, ``projected_pcie_s``, ``projected_end_to_end_s``, ``transfers_bytes``,
        ``link``), null where there is no kernel time to project; on the model the steps' kernel time
        projected from the cycle formulas (host/projection.py), and the report says so."""
        kernel_s = None
        projected = [st.get("projected_s") for st in steps if st["kernel_calls"]]
        # the model's steps: no kernel calls, their kernel time projected from the cycle formulas
        formula = [st["projected_s"] for st in steps if not st["kernel_calls"] and st.get("projected_s") is not None]
        if projected and all(v is not None for v in projected):
            kernel_s, source = sum(projected), "projected from the kernel's cycles"
        elif formula and not projected:
            kernel_s, source = sum(formula), PROJECTION_SOURCE
        elif measured is not None and measured.get("seconds") is not None:
            kernel_s, source = measured["seconds"], "measured by the kernel"
        moved = {"to-device": 0, "from-device": 0, **(transfers or {})}
        pcie_s = pcie_seconds(moved["to-device"], moved["from-device"])
        self.fields["transfers_bytes"] = moved
        self.fields["link"] = {"name": PCIE_LINK, "to_card_gbps": PCIE_TO_CARD_GBPS,
                               "from_card_gbps": PCIE_FROM_CARD_GBPS}
        self.fields["projected_kernel_s"] = kernel_s
        self.fields["projected_pcie_s"] = pcie_s if kernel_s is not None else None
        self.fields["projected_end_to_end_s"] = kernel_s + pcie_s if kernel_s is not None else None
        if kernel_s is None:
            return
        self.line("Kernel only", f"{kernel_s * 1e3:.4f} ms ({source}, every step)")
        self.line("End to end", f"{(kernel_s + pcie_s) * 1e3:.4f} ms projected: the kernel plus "
                  f"{moved['to-device']} bytes to the card at {PCIE_TO_CARD_GBPS:g} GB/s and "
                  f"{moved['from-device']} back at {PCIE_FROM_CARD_GBPS:g} GB/s ({PCIE_LINK}, measured), "
                  f"{pcie_s * 1e3:.4f} ms, one after the other")

    def commitment(self, report: dict) -> None:
        """A commit's report (host/api/commit_device.py ``commit_report``): its lines (permutations, host
        work, link bytes, the projected parts and the published CPU rates) and the JSON's ``commit``."""
        from .api.commit_device import report_lines
        self.fields["commit"] = report
        for label, text in report_lines(report):
            self.line(label, text)

    def output_failed(self, path: str, message: str) -> None:
        """--output could not be written: the JSON says so next to the verdict (which still stands: the
        computed points were checked), and the run exits 3."""
        self.fields["output"] = path
        self.fields["output_error"] = message

    def check(self, y: np.ndarray, expected: np.ndarray, listed: int, locate, field=F.DEFAULT_FIELD,
              hint=None) -> int:
        """Compare, report the verdict and the first ``listed`` mismatches (hex with the field's digits);
        returns the exit status. ``hint``: called on a mismatch, what the user may have got wrong (a line,
        or None), reported before the verdict (``"hint"`` in the JSON report)."""
        digits = F.get(field).hex_digits
        if not self.as_json:
            self._print("Checking computed results against expected ...")
        bad = np.flatnonzero(y != expected)
        self.fields["mismatch_count"] = int(bad.size)
        self.fields["mismatches"] = []
        if bad.size == 0:
            self.fields["verdict"] = "PASSED"
            if not self.as_json:
                self._print("TEST PASSED")
            return 0
        if not self.as_json:
            self._print(f"{bad.size} of {y.size} points differ" + ("; first mismatches:" if listed else ""))
        for i in bad[:listed]:
            i = int(i)
            where = locate(i)
            computed, wanted = f"0x{int(y[i]):0{digits}x}", f"0x{int(expected[i]):0{digits}x}"
            self.fields["mismatches"].append({"index": i, "computed": computed, "expected": wanted,
                                              "location": where})
            if not self.as_json:
                self._print(f"  [{i}] computed {computed} expected {wanted}"
                       + (f" ({where})" if where else ""))
        self.fields["verdict"] = "FAILED"
        said = hint(bad.size) if hint is not None else None
        if said:
            self.fields["hint"] = said
            if not self.as_json:
                self._print(f"{'Hint':.<18} {said}")
        if not self.as_json:
            if self.log_path is not None:
                self._print(f"{'Device log':.<18} {self.log_path}")
            self._print("TEST FAILED")
        return 1

    def fail(self, message: str, exit_status: int) -> None:
        """Bad input (exit 2), a device or an output error (exit 3): the JSON report says so, with the
        exit status (the text report has printed its lines; the one-line error goes to stderr)."""
        if self.fields["verdict"] is None:
            self.fields["verdict"] = "ERROR"
        self.fields["error"] = message
        self.fields["exit_status"] = exit_status

    def emit(self) -> None:
        """Print the JSON object, when there is a verdict (with --json every run that got past the
        argument parser prints one: PASSED, FAILED or ERROR)."""
        if self.as_json and self.fields["verdict"] is not None:
            self._print(json.dumps(self.fields))


class ChatterLog:
    """While open, file descriptors 1 and 2 (this process's and its children's) write to a new log file
    in ``directory``; cocotb logs at WARNING unless COCOTB_LOG_LEVEL is set (no per-access AXI lines)."""

    def __init__(self, directory: str, backend: str):
        self.directory = directory
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.path = os.path.join(directory, f"run-{backend}-{stamp}-{os.getpid()}.log")
        self._fd = None
        self._saved: list[int] = []
        self._env_set = False
        self._log_stream = None

    def __enter__(self):
        os.makedirs(self.directory, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        _flush_std()
        self._saved = [os.dup(1), os.dup(2)]
        os.dup2(self._fd, 1)
        os.dup2(self._fd, 2)
        # Python-level writers too, when sys.stdout/sys.stderr are not file descriptors 1 and 2.
        self._streams = (sys.stdout, sys.stderr)
        self._log_stream = open(os.dup(self._fd), "w", buffering=1, encoding="utf-8", errors="replace")
        sys.stdout = sys.stderr = self._log_stream
        if "COCOTB_LOG_LEVEL" not in os.environ:
            os.environ["COCOTB_LOG_LEVEL"] = "WARNING"
            self._env_set = True
        return self

    def write(self, line: str) -> None:
        if self._fd is not None:
            os.write(self._fd, (str(line).rstrip("\n") + "\n").encode("utf-8", "replace"))

    def holds_something(self) -> bool:
        """Whether the device (or this process for it) wrote anything to the log yet."""
        _flush_std()
        if self._log_stream is not None and not self._log_stream.closed:
            self._log_stream.flush()
        try:
            return os.path.getsize(self.path) > 0
        except OSError:
            return False

    def hint(self) -> str:
        """" (device log: PATH)" for an error message, or "" while the log is empty: a log named in an
        error should have something to read."""
        return f" (device log: {self.path})" if self.holds_something() else ""

    def __exit__(self, *exc):
        _flush_std()
        sys.stdout, sys.stderr = self._streams
        self._log_stream.close()
        for fd, saved in zip((1, 2), self._saved):
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = []
        os.close(self._fd)
        self._fd = None
        if not self.holds_something():      # an empty log is clutter, and nothing names it
            try:
                os.unlink(self.path)
            except OSError:
                pass
        if self._env_set:
            os.environ.pop("COCOTB_LOG_LEVEL", None)
            self._env_set = False
        return False


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
