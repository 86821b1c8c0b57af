"""`nantucket run` as a scriptable tool: --json, --version, device chatter kept off stdout and stderr,
mismatch locations, progress lines (host/cli.py, host/run_report.py, host/progress.py)."""

import json
import os
import subprocess
import sys
from importlib.metadata import version

import numpy as np
import pytest

from nantucket.hw.model import ntt as N
from nantucket.host import backends
from nantucket.host.cli import main
from nantucket.host.points import read_points, write_points
from nantucket.host.progress import Progress
from nantucket.sim.kernel_model import ModelCard


@pytest.fixture
def pair(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                  # build/log of the chatty backends lands in tmp_path
    x = np.random.default_rng(7).integers(0, 2**64 - 2**32, 64, dtype=np.uint64)
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    write_points(i, x)
    write_points(e, N.ntt_radix2(x))
    return i, e


class ChattyBackend(backends.Backend):
    """Talks on stdout and stderr from this process and from a child, as the simulator does; places
    point i at a made-up address so mismatches can be located. Computes with the golden model."""

    name = "chatty"

    def __init__(self, **_options):
        super().__init__()

    def run(self, points, inverse=False):
        print("register write 0x10", flush=True)
        print("cocotb INFO something", file=sys.stderr, flush=True)
        os.write(1, b"raw fd 1\n")
        child = "import sys; print('child out'); print('child err', file=sys.stderr)"
        subprocess.run([sys.executable, "-c", child], check=True)
        y = N.ntt(np.asarray(points, dtype=np.uint64), inverse=inverse)
        self.timings = {"kernel": 0.001}
        self.report = {"Kernel cycles": "123 NTT cycles"}
        return y

    def locate(self, index):
        return f"HBM channel {index % 4}, byte 0x{8 * index:x}"


@pytest.fixture
def chatty(monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, "chatty", ChattyBackend)


def test_json_report_is_one_object(pair, capsys):
    assert main(["run", *map(str, pair), "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert out.count("\n") == 1 and err == ""
    assert report["verdict"] == "PASSED" and report["n"] == 64 and report["mismatch_count"] == 0
    # the model has no kernel: its compute phase is CPU time
    assert {"read", "to-device", "cpu", "from-device"} <= set(report["timings_s"])


def test_json_mismatches_name_index_and_location(pair, tmp_path, capsys, chatty):
    i, e = pair
    y = read_points(e)
    y[[3, 9]] ^= np.uint64(1)
    bad = tmp_path / "bad.txt"
    write_points(bad, y)
    assert main(["run", str(i), str(bad), "--backend", "chatty", "--json", "--mismatches", "1"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "FAILED" and report["mismatch_count"] == 2
    assert report["mismatches"] == [{"index": 3, "computed": f"0x{int(y[3]) ^ 1:016x}",
                                     "expected": f"0x{int(y[3]):016x}", "location": "HBM channel 3, byte 0x18"}]
    assert report["device_report"] == {"Kernel cycles": "123 NTT cycles"}
    assert os.path.isfile(report["log"])


def test_text_mismatch_line_names_location_and_log(pair, tmp_path, capsys, chatty):
    i, e = pair
    y = read_points(e)
    y[5] ^= np.uint64(1)
    bad = tmp_path / "bad.txt"
    write_points(bad, y)
    assert main(["run", str(i), str(bad), "--backend", "chatty"]) == 1
    out = capsys.readouterr().out
    assert "[5] computed" in out and "(HBM channel 1, byte 0x28)" in out
    assert "Device log" in out and out.rstrip().endswith("TEST FAILED")


def test_device_chatter_goes_to_the_log_not_stdout_or_stderr(pair, capfd, chatty):
    assert main(["run", *map(str, pair), "--backend", "chatty", "--log-dir", "logs"]) == 0
    out, err = capfd.readouterr()
    assert err == ""
    for noise in ("register write", "cocotb", "raw fd", "child out", "child err"):
        assert noise not in out
    assert out.rstrip().endswith("TEST PASSED") and "Kernel cycles..... 123 NTT cycles" in out
    (log,) = os.listdir("logs")
    text = open(os.path.join("logs", log)).read()
    for noise in ("register write", "cocotb", "raw fd", "child out", "child err"):
        assert noise in text


def test_unwritable_log_dir_is_refused_before_any_work(pair, tmp_path, capsys, chatty):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["run", *map(str, pair), "--backend", "chatty", "--log-dir", str(blocker / "logs")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--log-dir" in err


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"nantucket {version('nantucket')}"
    proc = subprocess.run([sys.executable, "-m", "nantucket.host.cli", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"nantucket {version('nantucket')}"


def test_help_is_exit_0(capsys):
    assert main(["run", "--help"]) == 0
    assert "--json" in capsys.readouterr().out


def test_progress_line_has_percent_and_eta(monkeypatch):
    import nantucket.host.progress as P
    clock = [0.0]
    monkeypatch.setattr(P.time, "monotonic", lambda: clock[0])
    p = Progress("run", [("read", 2.0), ("transform", 6.0), ("check", 2.0)], mode="off")
    p.stage("read")
    clock[0] = 1.0
    assert p.line() == "run:  10% read, 0:01 elapsed, ETA 0:09"
    clock[0] = 2.0
    p.stage("transform")
    clock[0] = 5.0                       # read took its estimate; transform half done
    assert p.line() == "run:  50% transform, 0:05 elapsed, ETA 0:05"
    clock[0] = 100.0                     # overdue: the percent stays inside the stage
    assert p.line().startswith("run:  79% transform")
    unknown = Progress("run", [("read", 1.0), ("transform", None)], mode="off")
    unknown.stage("transform")
    unknown.note("[cosim] simulator connected")
    assert unknown.line() == "run: stage 2/2 transform ([cosim] simulator connected), 0:00 elapsed, ETA --"


def test_progress_draws_on_a_stream_only_when_asked(tmp_path):
    import io
    import nantucket.host.progress as P
    stream = io.StringIO()
    with Progress("run", [("a", 1.0)], mode="auto", stream=stream) as p:
        p.stage("a")
    assert not p.enabled and stream.getvalue() == ""
    out = tmp_path / "err.txt"
    with open(out, "w") as f:
        old = P.DELAY_S
        P.DELAY_S = 0.0
        try:
            with Progress("run", [("a", 1.0)], mode="on", stream=f) as p:
                p.stage("a")
                import time
                time.sleep(0.8)
        finally:
            P.DELAY_S = old
    assert "run:" in out.read_text() and "% a" in out.read_text()


# -- sizes that cannot run: one line, exit 2 --------------------------------------------------------------

def test_make_run_log_n_25_on_sim_takes_the_largest_build(tmp_path, capsys, monkeypatch):
    """`make run LOG_N=25` = `nantucket points 25 in out` then `nantucket run in out --backend sim`: past the
    largest sim build's 2^24 the CLI hands the sim backend that build (k = 12), on which the size runs as a
    four-step over its calls (the four-step itself: the tests below, on a tiny build). Kept small: the
    generator, the model, the file contents and the device are stand-ins (no 2^25-point files are written,
    no k = 12 card simulated), the commands and their checks are the CLI's own."""
    import nantucket.host.cli as cli
    from nantucket.hw.model.layout import HbmLayout
    from nantucket.hw.model.params import BuildParams
    big = np.zeros(1 << 25, dtype=np.uint64)             # calloc'd: no memory is touched
    written, given = {}, []
    monkeypatch.setattr(cli, "make_points", lambda log_n, kind, seed, field=None: big[: 1 << log_n])
    monkeypatch.setattr(cli.ntt_model, "ntt", lambda x, inverse=False, field=None: x)

    def encode(path, values, field=None):                 # remembers the points, writes a stand-in
        written[str(path)] = values
        return b"stand-in\n"
    monkeypatch.setattr(cli, "encode_points", encode)
    monkeypatch.setattr(cli, "read_points", lambda path, batch=1, field=None: written[str(path)])
    monkeypatch.setattr(cli.memory, "check_fits", lambda nbytes, what: None)   # nothing big is allocated

    def device(args, params, x, report, progress):        # the device: the build it is given, recorded
        given.append(params)
        return x, lambda i: None
    monkeypatch.setattr(cli, "_transform", device)
    i, e = tmp_path / "in_25_random.txt", tmp_path / "out_25_random.txt"
    assert main(["points", "25", str(i), str(e)]) == 0
    assert written[str(i)].size == 1 << 25
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--backend", "sim"]) == 0
    largest = BuildParams.smallest_for(1 << 24, check=HbmLayout)
    assert given == [largest] and largest.log_core == 12 and largest.n_points < 1 << 25


def test_out_of_memory_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    import nantucket.host.cli as cli

    def no_memory(*a, **k):
        raise MemoryError()
    monkeypatch.setattr(cli, "make_points", no_memory)         # a MemoryError the size check did not foresee
    assert main(["points", "10", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out of memory while generating LOG_N 10" in err
    assert not any(tmp_path.iterdir())


class FailingBackend(ChattyBackend):
    def run(self, points, inverse=False):
        print("simulator: something broke", flush=True)
        raise backends.DeviceError("simulated kernel: the simulator closed the connection")


def test_device_error_is_exit_3_naming_the_log(pair, capfd, monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, "failing", FailingBackend)
    assert main(["run", *map(str, pair), "--backend", "failing", "--json"]) == 3
    out, err = capfd.readouterr()
    report = json.loads(out)
    assert report["verdict"] == "ERROR" and "closed the connection" in report["error"]
    assert err.count("\n") == 1 and err.startswith("nantucket: device error: ") and "device log: " in err
    log = err.split("device log: ")[1].rstrip(")\n")
    assert "something broke" in open(log).read()


# -- the sim backend's report of the size the kernel ran (its kernel stubbed by the kernel model) ---------

class _CountingKernel(ModelCard):
    """The simulated card over the register-level kernel model (no Verilator): a run of B x 2^log_n points
    "takes" 3 x (2 x B x 2^log_n / 2L) NTT cycles."""

    def __init__(self, params, hbm, layout, **options):
        super().__init__(params, hbm, layout, **options,
                         ntt_cycles=lambda log_n, batch: 3 * 2 * batch * (1 << log_n) // (2 * params.lanes))


@pytest.mark.parametrize("log_n, ran, size_text", [(6, 6, "2^6 points, native"),
                                                   (8, 8, "2^8 points, native"),
                                                   (3, 4, "2^4 points (2^3 zero-padded by the host)")])
def test_sim_run_with_build_options_runs_a_smaller_size_natively(tmp_path, monkeypatch, capsys, log_n, ran,
                                                                   size_text):
    """`--lanes 4 --log-core 4 --channels 4` (native 2^4 .. 2^8): 2^6 runs natively on that build and
    the report says so, with the cycle ratio against the ideal of the size that ran; --json carries it."""
    import nantucket.sim.cosim
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _CountingKernel)
    monkeypatch.chdir(tmp_path)
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", str(log_n), str(inp), str(exp)]) == 0
    capsys.readouterr()
    build = ["--backend", "sim", "--lanes", "4", "--log-core", "4", "--channels", "4"]
    assert main(["run", str(inp), str(exp), *build]) == 0
    out = capsys.readouterr().out
    ideal = 2 * (1 << ran) // 8                       # two passes of 2^ran points, 8 points per cycle
    assert f"Kernel size....... {size_text}\n" in out
    assert f"Kernel cycles..... {3 * ideal} NTT cycles (3.000 x the {ideal}-cycle ideal of 2^{ran} points)" in out
    assert "Build params...... L4_k4_C4 (native sizes 2^4 .. 2^8)" in out and "TEST PASSED" in out
    assert main(["run", str(inp), str(exp), *build, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kernel_log_n"] == ran and report["device_report"]["Kernel size"] == size_text


def test_sim_run_without_build_options_keeps_the_smallest_build(tmp_path, monkeypatch, capsys):
    """No build options: the smallest build that holds the points (here 2^5: k = 3, native 2^4 .. 2^6),
    on which the size runs natively."""
    import nantucket.sim.cosim
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _CountingKernel)
    monkeypatch.chdir(tmp_path)
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "5", str(inp), str(exp), "--inverse"]) == 0
    capsys.readouterr()
    assert main(["run", str(inp), str(exp), "--backend", "sim", "--inverse", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["device_report"]["Build params"].startswith("L4_k3_C4 ")
    assert report["kernel_log_n"] == 5 and report["device_report"]["Kernel size"] == "2^5 points, native"


def test_sim_run_of_a_batch_reports_the_cycles_of_every_call(tmp_path, monkeypatch, capsys):
    """10 transforms of 2^5 with a coset on the sim backend (its kernel stubbed): the kernel takes at
    most 8 of them per call on L4_k4_C4 (B x N <= 2^8), so the driver makes two calls (8 + 2) with the
    coset flag set and does no arithmetic itself; the cycles of the calls add up, against 10 x the ideal;
    --json has the number."""
    import nantucket.sim.cosim
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _CountingKernel)
    monkeypatch.chdir(tmp_path)
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    flags = ["--batch", "10", "--coset", "7", "--order", "out=rev"]
    assert main(["points", "5", str(inp), str(exp), *flags]) == 0
    capsys.readouterr()
    build = ["--backend", "sim", "--lanes", "4", "--log-core", "4", "--channels", "4"]
    assert main(["run", str(inp), str(exp), *build, *flags, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ideal = 2 * (1 << 5) // 8
    assert report["verdict"] == "PASSED" and report["kernel_cycles"] == 3 * 10 * ideal
    assert report["device_report"]["Kernel cycles"] == \
        f"{30 * ideal} NTT cycles over 2 calls (3.000 x the {10 * ideal}-cycle ideal of 10 x 2^5 points)"
    assert report["device_report"]["Kernel calls"] == "2 calls, batch 10 (split: at most 8 per call), flags coset"
    assert "coset" not in report["device_report"]["Host work"]


def test_sim_lde_reports_every_step_and_the_link(tmp_path, monkeypatch, capsys):
    """An LDE (--blowup 16 from 2^4 on L4_k4_C4, whose (4, 8) pair goes through 2^5) on the sim backend
    (its kernel stubbed): chained on the card, no host work in any step; the steps' calls and cycles add up
    to the run's; the end-to-end projection adds the bytes moved at the platform's link rates."""
    import nantucket.sim.cosim
    from nantucket.hw.model.platform import pcie_seconds
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _CountingKernel)
    monkeypatch.chdir(tmp_path)
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    flags = ["--blowup", "16", "--coset", "7", "--order", "out=rev", "--batch", "2"]
    assert main(["points", "4", str(inp), str(exp), *flags]) == 0
    capsys.readouterr()
    build = ["--backend", "sim", "--lanes", "4", "--log-core", "4", "--channels", "4"]
    assert main(["run", str(inp), str(exp), *build, *flags, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "PASSED" and report["direction"] == "lde" and report["blowup"] == 16
    steps = report["steps"]
    assert [s["step"] for s in steps] == ["inverse", "zero-extension", "coset forward"]
    assert all(s["where"] == "card" and s["host_work"].startswith("none") for s in steps)
    # per batch element: the 2^4 inverse, a forward and an inverse run at 2^5, the 2^8 coset NTT
    assert [s["kernel_calls"] for s in steps] == [2, 4, 2]
    cycles = lambda log_n: 3 * 2 * (1 << log_n) // 8        # the stub's cycles of one element
    assert [s["cycles"] for s in steps] == [2 * cycles(4), 2 * (2 * cycles(5)), 2 * cycles(8)]
    assert report["kernel_cycles"] == sum(s["cycles"] for s in steps)
    moved = report["transfers_bytes"]
    assert moved == {"to-device": 2 * 16 * 8, "from-device": 2 * 256 * 8}
    from nantucket.hw.model.params import DEFAULT
    assert report["projected_kernel_s"] == pytest.approx(report["kernel_cycles"] / (DEFAULT.ntt_mhz * 1e6))
    assert report["projected_pcie_s"] == pytest.approx(pcie_seconds(moved["to-device"], moved["from-device"]))
    assert report["projected_end_to_end_s"] == pytest.approx(report["projected_kernel_s"] + report["projected_pcie_s"])
    assert main(["run", str(inp), str(exp), *build, *flags]) == 0
    out = capsys.readouterr().out
    assert "Step 3 coset fwd.. 2 x 2^8, on the card, 2 kernel calls" in out   # its two polynomials
    assert "End to end........ " in out and "Kernel only....... " in out


def test_model_lde_report_says_the_host_did_it_all(tmp_path, capsys):
    """On the model every step is the host's CPU; the kernel time is a card's, projected from the cycle
    formulas (the inverse and the coset forward; the zero-extension has no start of its own)."""
    inp, exp = tmp_path / "in.bin", tmp_path / "exp.bin"
    assert main(["points", "5", str(inp), str(exp), "--blowup", "4"]) == 0
    capsys.readouterr()
    assert main(["run", str(inp), str(exp), "--blowup", "4", "--order", "in=rev", "--json"]) == 1
    assert main(["points", "5", str(inp), str(exp), "--blowup", "4", "--order", "in=rev"]) == 0
    capsys.readouterr()
    assert main(["run", str(inp), str(exp), "--blowup", "4", "--order", "in=rev", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [s["where"] for s in report["steps"]] == ["host"] * 3
    assert all(s["cpu_s"] is not None and "golden model" in s["host_work"] for s in report["steps"])
    assert "kernel" not in report["timings_s"] and all(s["kernel_calls"] == 0 for s in report["steps"])
    assert [s["cycles"] is not None for s in report["steps"]] == [True, False, True]
    assert report["projected_kernel_s"] == pytest.approx(sum(s["projected_s"] for s in report["steps"]
                                                              if s["projected_s"] is not None))
    assert "Kernel projection" in report["device_report"]


def test_blowup_refuses_inverse_and_a_wrong_expected_size(tmp_path, capsys):
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "4", str(inp), str(exp), "--blowup", "2", "--inverse"]) == 2
    assert main(["points", "4", str(inp), str(exp), "--blowup", "3"]) == 2
    assert main(["points", "4", str(inp), str(exp)]) == 0
    assert main(["run", str(inp), str(exp), "--blowup", "2"]) == 2
    err = capsys.readouterr().err
    assert "--blowup" in err and "power of two" in err and "an LDE with --blowup 2 gives 32" in err


# -- sizes past one kernel call on the command line (the sim backend, its kernel stubbed) --------------------

#: a tiny build: native 2^4 .. 2^6 points a call, so 2^7 and up run as a four-step over its calls
_TINY = ["--backend", "sim", "--lanes", "4", "--log-core", "3", "--channels", "4"]


def _stub_run(tmp_path, monkeypatch, capsys, log_n: int, flags: list, text: bool = False):
    """`nantucket points LOG_N` then `run` with ``flags`` on the tiny build, the sim kernel stubbed: the
    JSON report (and with ``text`` the text report of the same run, second)."""
    import nantucket.sim.cosim
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _CountingKernel)
    monkeypatch.chdir(tmp_path)
    inp, exp = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", str(log_n), str(inp), str(exp), *flags]) == 0
    capsys.readouterr()
    assert main(["run", str(inp), str(exp), *_TINY, *flags, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    if not text:
        return report
    assert main(["run", str(inp), str(exp), *_TINY, *flags]) == 0
    return report, capsys.readouterr().out


def _stub_cycles(rows: int, log_n: int) -> int:
    """The stub kernel's NTT cycles of ``rows`` transforms of 2^log_n points (4 lanes: 8 points a cycle)."""
    return 3 * 2 * rows * (1 << log_n) // 8


def _check_step_cycles(steps: list) -> None:
    """Every step's cycles are the stub's for its transforms (a size below the build's 2^4 runs zero-padded
    to 2^4; a composite step's: its parts')."""
    for st in steps:
        if st["parts"]:
            _check_step_cycles(st["parts"])
            assert st["cycles"] == sum(p["cycles"] or 0 for p in st["parts"])
            assert st["kernel_calls"] == sum(p["kernel_calls"] for p in st["parts"])
        elif st["kernel_calls"]:
            assert st["cycles"] == _stub_cycles(st["rows"], max(st["log_n"], 4)), st
        else:
            assert st["cycles"] is None and st["where"] == "host"


@pytest.mark.parametrize("log_n, flags", [(8, ["--coset", "7", "--order", "out=rev", "--batch", "2"]),
                                          (9, ["--inverse", "--order", "in=rev"])])
def test_sim_run_past_one_kernel_call_lists_every_step(tmp_path, monkeypatch, capsys, log_n, flags):
    """`nantucket run` of a file past the build's 2^6 points a call: the four-step over its calls, PASSED;
    the report has a line per step (columns, twiddles, rows) and --json their records, whose cycles are the
    stub kernel's for each step's transforms and add up to the run's."""
    from nantucket.host import large as L
    from nantucket.hw.model.params import BuildParams
    report, out = _stub_run(tmp_path, monkeypatch, capsys, log_n, flags, text=True)
    batch = 2 if "--batch" in flags else 1
    n1, n2 = L.split_log_n(log_n, 4, 6)
    steps = report["steps"]
    assert report["verdict"] == "PASSED" and report["kernel_log_n"] == log_n
    assert [(s["step"], s["log_n"], s["rows"]) for s in steps] == [
        ("columns", n1, batch << n2), ("twiddles", log_n, batch), ("rows", n2, batch << n1)]
    assert steps[1]["where"] == "host" and steps[1]["kernel_calls"] == 0 and "twiddles" in steps[1]["host_work"]
    _check_step_cycles(steps)
    plan = L.plan_steps(BuildParams(lanes=4, log_core=3, channels=4), log_n, batch)
    assert [s["kernel_calls"] for s in steps if s["kernel_calls"]] == [p["kernel_calls"] for p in plan]
    assert report["kernel_cycles"] == sum(s["cycles"] for s in steps if s["kernel_calls"])
    assert report["projected_kernel_s"] == pytest.approx(report["kernel_cycles"] / (BuildParams().ntt_mhz * 1e6))
    # the kernel's own counts (its status records) over the calls of every step
    assert report["kernel_measured"]["calls"] == sum(p["kernel_calls"] for p in plan)
    assert "Measured time" in report["device_report"]
    # the points to the card and back once per step: twice
    points = 8 * batch << log_n
    assert report["transfers_bytes"] == {"to-device": 2 * points, "from-device": 2 * points}
    assert "Step 1 columns" in out and "Step 2 twiddles" in out and "Step 3 rows" in out and "TEST PASSED" in out


def test_sim_lde_past_one_kernel_call_nests_the_four_step(tmp_path, monkeypatch, capsys):
    """An LDE from 2^5 to 2^9 (--blowup 16) on the tiny build: the inverse in one call, the zero-extension on
    the host, the 2^9 coset NTT a four-step whose steps are its ``parts`` (text: "Step 3.1 columns" ...)."""
    flags = ["--blowup", "16", "--coset", "7", "--order", "out=rev"]
    report, out = _stub_run(tmp_path, monkeypatch, capsys, 5, flags, text=True)
    steps = report["steps"]
    assert report["verdict"] == "PASSED"
    assert [(s["step"], s["where"], s["parts"] is not None) for s in steps] == [
        ("inverse", "card", False), ("zero-extension", "host", False), ("coset forward", "card and host", True)]
    assert steps[0]["cycles"] == _stub_cycles(1, 5) and steps[0]["kernel_calls"] == 1
    assert [p["step"] for p in steps[2]["parts"]] == ["columns", "twiddles", "rows"]
    _check_step_cycles(steps[2:])
    assert report["kernel_cycles"] == steps[0]["cycles"] + steps[2]["cycles"]
    # the values to the card and their coefficients back (2^5), the zero-extended 2^9 points to the card and
    # back once per step of its four-step (twice)
    assert report["transfers_bytes"] == {"to-device": 8 * (32 + 2 * 512), "from-device": 8 * (32 + 2 * 512)}
    assert all(f"Step 3.{i} " in out for i in (1, 2, 3)) and "TEST PASSED" in out


def test_sim_a_step_past_one_call_nests_again(tmp_path, monkeypatch, capsys):
    """2^13 on the tiny build: 2^7-point columns (past one call themselves) x 2^6-point rows; the columns
    step's parts are their own four-step (its kernel steps and the rows step: three round trips)."""
    report = _stub_run(tmp_path, monkeypatch, capsys, 13, [])
    steps = report["steps"]
    assert report["verdict"] == "PASSED" and steps[0]["log_n"] == 7 and steps[0]["parts"] is not None
    _check_step_cycles(steps)
    assert report["kernel_cycles"] == sum(s["cycles"] for s in steps if s["kernel_calls"])
    # three kernel steps (the columns' two, the rows): the points to the card and back three times
    assert report["transfers_bytes"] == {"to-device": 3 * 8 << 13, "from-device": 3 * 8 << 13}
    assert report["timings_s"]["to-device"] > 0 and report["timings_s"]["from-device"] > 0


def test_sim_columns_of_limbs_past_one_kernel_call(tmp_path, monkeypatch, capsys):
    """--axis 0 --ext 2 --batch 2 at 2^7 on the tiny build: the file an N x 2 matrix of 2-limb points, its
    4 limb columns transformed as a four-step over the build's calls (4 rows in each step's count)."""
    from nantucket.host import large as L
    flags = ["--batch", "2", "--axis", "0", "--ext", "2", "--inverse", "--coset", "3"]
    report = _stub_run(tmp_path, monkeypatch, capsys, 7, flags)
    n1, n2 = L.split_log_n(7, 4, 6)
    assert report["verdict"] == "PASSED" and (report["axis"], report["ext"]) == (0, 2)
    assert [(s["step"], s["rows"]) for s in report["steps"]] == [("columns", 4 << n2), ("twiddles", 4),
                                                                 ("rows", 4 << n1)]
    _check_step_cycles(report["steps"])
