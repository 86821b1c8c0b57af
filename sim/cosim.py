"""The simulated kernel behind the host's driver: register accesses and device memory bridged into a
running Verilator simulation of :class:`sim.kernel_harness.KernelHarness`.

:class:`SimulatedKernel` has the interface of :class:`sim.kernel_model.KernelModel` (``read(offset)``,
``write(offset, value)``, ``interrupt``), so :class:`sim.fake_pyxrt.FakePyxrt` can put it behind the
pyxrt surface and the very driver used with a card (host/xrt/) runs against the RTL:

- every register access becomes an AXI4-Lite transaction on ``s_axi_control`` in the simulator;
- writing ap_start first copies every buffer the host allocated in banks HBM[0..C-1] into the HBM
  channel models (their file backdoor: one hex file per channel in this object's temporary directory,
  loaded in one cycle), then lets the simulator run;
- reading CTRL while a run is in progress runs the simulator until the kernel is idle again (or a cycle
  budget is spent: then ap_done reads 0, which the driver reports as a timeout), then copies the buffers
  back, so the host's ``sync(FROM_DEVICE)`` sees what the RTL wrote.

The simulator runs in a child process (cocotb under hw.flow.runner); commands travel over a Unix socket
as length-prefixed pickles (sim/cosim_server.py is the other end).
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import sys
import threading
import time

import numpy as np

from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.layout import BEAT_BYTES, HbmLayout
from nantucket.sim.hbm import HBM_DIR_PLUSARG, memory_file, read_dump_file, write_load_file
from nantucket.sim.kernel_harness import FILE_STEM, RECORD_PAGE_BEATS
from nantucket.hw.flow.scratch import scratch_dir

#: Prefix of this object's scratch directory (HBM exchange files, the socket), in the system temp dir.
SCRATCH_PREFIX = "nantucket-cosim-"

__all__ = ["SimulatedKernel", "SimulationError", "send_msg", "recv_msg"]


class SimulationError(RuntimeError):
    """The simulator could not be built or started, or it died."""


def send_msg(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(struct.pack("<Q", len(data)) + data)


def recv_msg(sock: socket.socket):
    head = _recv_exact(sock, 8)
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(_recv_exact(sock, n))


def _recv_exact(sock, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise SimulationError("the simulator closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class SimulatedKernel:
    """A KernelModel-compatible kernel backed by the Verilator simulation of the RTL.

    params, hbm (sim.kernel_model.HbmModel), layout: as for KernelModel.
    refresh / stalls: HBM refresh windows and random AXI stalls in the channel models.
    cycle_budget: NTT cycles every run may take before the driver sees a timeout; None (default): per run,
    8 x ``params.ideal_cycles(log_n)`` of the run's size + 2^16 (see :meth:`budget_for`), so a small run
    that hangs is caught quickly. ``run_budget`` is the budget of the last run started.
    progress: callable(str) for build/run progress lines, the runner's included (default: stderr).
    """

    def __init__(self, params: BuildParams, hbm, layout, *, refresh: bool = True, stalls: bool = False,
                 cycle_budget: int | None = None, progress=None, seed: int = 1):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self.params = params
        self.hbm = hbm
        self.layout = layout
        self.rmap = R.RegisterMap(params)
        self.cycle_budget = cycle_budget
        #: bytes each HBM channel model holds from its window's start (the harness's default depth)
        self.channel_bytes = (HbmLayout(params).beats_per_channel + RECORD_PAGE_BEATS) * BEAT_BYTES
        self.run_budget = self.budget_for(params.max_log_n)
        self._log_n_arg = 0                 # the log_n argument as last written
        self.progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
        self.last_ntt_cycles: int | None = None
        #: wall seconds of the last phases: "start" (build + simulator start), "preload", "kernel", "read-back"
        self.timings: dict[str, float] = {}
        self.runs = 0
        #: the last run spent the whole cycle budget: no more cycles are simulated until reset()
        self.hung = False
        self._running = False
        self._error: BaseException | None = None
        self._dir = scratch_dir(SCRATCH_PREFIX)
        path = os.path.join(self._dir.name, "sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(1)
        self._thread = threading.Thread(target=self._simulate, name="nantucket-simulator", daemon=True,
                                        args=(path, refresh, stalls, seed))
        self._sock = None
        self._thread.start()
        try:
            self._sock = self._accept()
        except BaseException:
            self.close()
            raise

    # -- the simulator process -----------------------------------------------------------------------

    def _simulate(self, path, refresh, stalls, seed):
        try:
            from nantucket.sim.kernel_harness import KernelHarness
            from nantucket.hw.flow.runner import lines_to, run_bench
            harness = KernelHarness(self.params)
            # the runner's own lines (build, start, result) are this card's progress, like its [cosim] ones
            with lines_to(self.progress):
                run_bench(harness, name="kernel_harness", params={"params": self.params.as_dict()},
                          test_module="nantucket.sim.cosim_server",
                          plusargs=(f"+{HBM_DIR_PLUSARG}={self._dir.name}",), log_file=self._log_path(),
                          facts={"socket": path, "refresh": int(refresh), "stalls": int(stalls), "seed": seed},
                          params_complete=True)
        except BaseException as e:            # reported to the waiting host thread
            self._error = e

    def _log_path(self) -> str:
        """The simulator's output (stdout carries only the host's report)."""
        return os.path.join(self._dir.name, "simulator.log")

    def _log_tail(self, lines: int = 5) -> str:
        try:
            with open(self._log_path(), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
        except OSError:
            return ""
        return "; simulator log ends: " + " | ".join(t.strip() for t in tail) if tail else ""

    def _accept(self) -> socket.socket:
        self._listener.settimeout(1.0)
        t0 = time.monotonic()
        while True:
            try:
                sock, _ = self._listener.accept()
                sock.settimeout(None)
                self.timings["start"] = time.monotonic() - t0
                self.progress(f"[cosim] simulator connected after {time.monotonic() - t0:.1f} s")
                return sock
            except socket.timeout:
                if not self._thread.is_alive():
                    raise SimulationError(f"the simulator did not start: {self._error}{self._log_tail()}") \
                        from self._error

    def _call(self, *cmd):
        try:
            send_msg(self._sock, cmd)
            reply = recv_msg(self._sock)
        except (OSError, SimulationError) as e:
            raise SimulationError(f"simulator connection lost during {cmd[0]}: {self._error or e!r}"
                                  f"{self._log_tail()}") from e
        if reply[0] != "ok":
            raise SimulationError(f"simulator: {reply[1]}")
        return reply[1:]

    # -- KernelModel interface -------------------------------------------------------------------

    def read(self, offset: int) -> int:
        if offset == R.CTRL and self._running and not self.hung:
            self._finish_run()
        (value,) = self._call("read", offset)
        return value

    def budget_for(self, log_n: int) -> int:
        """NTT cycles a run with argument log_n may take: ``cycle_budget`` when set, else 8 x the
        ideal cycles of 2^log_n points + 2^16 (2^16 alone for a size the kernel rejects at once)."""
        if self.cycle_budget is not None:
            return self.cycle_budget
        p = self.params
        ideal = p.ideal_cycles(log_n) if p.min_log_n <= log_n <= p.max_log_n else 0
        return 8 * ideal + (1 << 16)

    def write(self, offset: int, value: int) -> None:
        if offset == self.rmap.arg("log_n").offset:
            self._log_n_arg = value & 0xFFFF_FFFF
        starting = offset == R.CTRL and value & R.CTRL_AP_START and not self._running
        if starting:
            self.run_budget = self.budget_for(self._log_n_arg)
            self._push_memory()
        self._call("write", offset, value & 0xFFFF_FFFF)
        if starting:
            self._running = True

    def read_raw(self, offset: int) -> int:
        """A register read with no run bookkeeping (does not wait for a run in progress)."""
        (value,) = self._call("read", offset)
        return value

    def write_raw(self, offset: int, value: int) -> None:
        """A register write with no memory transfer or run bookkeeping."""
        self._call("write", offset, value & 0xFFFF_FFFF)

    def inject(self, channel: int, rresp: int = 0, bresp: int = 0) -> None:
        """From now on every R beat (``rresp``) / B response (``bresp``) of HBM channel ``channel``'s model
        carries that AXI response code (2 SLVERR, 3 DECERR; 0 OKAY ends it), as a failing controller
        would. One channel at a time: a new call moves the injection."""
        if not isinstance(channel, int) or not 0 <= channel < self.params.channels:
            raise ValueError(f"channel: expected 0..{self.params.channels - 1}, got {channel!r}")
        for name, code in (("rresp", rresp), ("bresp", bresp)):
            if code not in (0, 1, 2, 3):
                raise ValueError(f"{name}: expected an AXI response code 0..3, got {code!r}")
        self._call("inject", channel, rresp, bresp)

    def traffic(self, *, refresh: bool, stalls: bool) -> None:
        """HBM refresh windows and random stalls on every AXI channel (AR, R, AW, W, B) of every model, on
        or off from now on."""
        self._call("traffic", int(bool(refresh)), int(bool(stalls)))

    def step(self, ntt_cycles: int) -> None:
        """Let the simulation run for ``ntt_cycles`` cycles of the NTT clock."""
        self._call("step", ntt_cycles)

    @property
    def interrupt(self) -> bool:
        (value,) = self._call("interrupt")
        return bool(value)

    # -- runs and memory ---------------------------------------------------------------------------

    def _buffers(self):
        """(channel, first beat, uint8 view) of every host buffer in the kernel's banks."""
        span = self.hbm.bank_bytes
        for address, buf in self.hbm.buffers().items():
            ch = address // span
            if ch < self.params.channels:
                yield ch, (address - ch * span) // BEAT_BYTES, buf

    def _by_channel(self):
        """{channel: [(first beat, uint8 view), ...]} for every channel (empty lists included)."""
        chans: dict[int, list] = {c: [] for c in range(self.params.channels)}
        for ch, beat, buf in self._buffers():
            chans[ch].append((beat, buf))
        return chans

    def _file(self, channel: int, kind: str) -> str:
        return memory_file(self._dir.name, f"{FILE_STEM}{channel}", kind)

    def _push_memory(self):
        t0 = time.monotonic()
        nbytes = 0
        for ch, chunks in self._by_channel().items():
            for beat, buf in chunks:
                if beat * BEAT_BYTES + buf.size > self.channel_bytes:
                    raise SimulationError(f"HBM[{ch}]: a buffer at byte 0x{beat * BEAT_BYTES:x} ({buf.size} "
                                          f"bytes) lies beyond the {self.channel_bytes} bytes the simulated "
                                          "channel holds")
            nbytes += write_load_file(self._file(ch, "load"), chunks)
        self._call("load")
        self.timings["preload"] = time.monotonic() - t0
        self.progress(f"[cosim] preloaded {nbytes / 2**20:.1f} MiB into the HBM models in "
                      f"{time.monotonic() - t0:.1f} s")

    def _pull_memory(self):
        t0 = time.monotonic()
        nbytes = 0
        (depth,) = self._call("dump")
        for ch, chunks in self._by_channel().items():
            if not chunks:
                continue
            path = self._file(ch, "dump")
            mem = read_dump_file(path, depth)
            for beat, buf in chunks:
                lo = beat * BEAT_BYTES
                if lo + buf.size > mem.size:
                    raise SimulationError(f"buffer at beat {beat} of channel {ch} ({buf.size} bytes) lies "
                                          f"beyond the model's {depth} beats")
                buf[:] = mem[lo:lo + buf.size]
                nbytes += buf.size
            os.unlink(path)
        self.timings["read-back"] = time.monotonic() - t0
        self.progress(f"[cosim] read back {nbytes / 2**20:.1f} MiB in {time.monotonic() - t0:.1f} s")

    def _finish_run(self):
        t0 = time.monotonic()
        idle, cycles, err = self._call("wait_idle", self.run_budget)
        if err:
            raise SimulationError(f"HBM model protocol errors (per channel): {err}")
        if not idle:
            self.hung = True                         # ap_done stays 0: the driver times out
            self.progress(f"[cosim] the kernel is still busy after its budget of {self.run_budget} "
                          "NTT cycles")
            return
        self._running = False
        self.runs += 1
        self.last_ntt_cycles = cycles
        self.timings["kernel"] = time.monotonic() - t0
        self.progress(f"[cosim] kernel done: {cycles} NTT cycles, simulated in {time.monotonic() - t0:.1f} s")
        self._pull_memory()

    # -- register-level runs (benches and tests that drive the kernel without the host's driver) ----

    def set_args(self, **values: int) -> None:
        """Write kernel arguments by name (every 32-bit word of each), as the register map lays them out."""
        for name, value in values.items():
            for i, offset in enumerate(self.rmap.arg(name).word_offsets):
                self.write(offset, (value >> (32 * i)) & 0xFFFF_FFFF)

    def arg_words(self, name: str) -> int:
        """An argument's value as the kernel's registers hold it."""
        return sum(self.read_raw(o) << (32 * i) for i, o in enumerate(self.rmap.arg(name).word_offsets))

    def start_and_wait(self) -> int:
        """Start a run with the arguments as they are, simulate it to done and return STATUS (0: it ran;
        else the refusal or AXI error bits). A run still busy after its budget is a SimulationError."""
        self.write(R.CTRL, R.CTRL_AP_START)
        if not self.read(R.CTRL) & R.CTRL_AP_DONE:
            raise SimulationError(f"the kernel is still busy after its budget of {self.run_budget} NTT cycles")
        return self.read_raw(self.rmap.id_offset("STATUS"))

    def reset(self, cycles: int = 16) -> None:
        """Assert both resets (kernel and memory models together, as the platform does)."""
        self._call("reset", cycles)
        self._running = False
        self.hung = False

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._call("quit")
            except SimulationError:
                pass
            self._sock.close()
            self._sock = None
            self._thread.join(timeout=60)
        self._listener.close()
        self._dir.cleanup()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
