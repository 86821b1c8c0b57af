"""Hardening of the command line: a closed stdout is quiet, bad .npy headers and impossible sizes are one
line and exit 2 before any work, and the messages say what is true (host/cli.py, host/cli_args.py,
host/points.py, host/run_report.py, host/progress.py)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nantucket.hw.model import ntt as N
from nantucket.hw.model.field import P
from nantucket.host import backends, memory
from nantucket.host.cli import main
from nantucket.host.points import PointFileError, read_points, write_points
from nantucket.host.progress import Progress


@pytest.fixture
def pair(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)                  # build/log of the device backends lands in tmp_path
    x = np.random.default_rng(24).integers(0, P, 64, dtype=np.uint64)
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    write_points(i, x)
    write_points(e, N.ntt_radix2(x))
    return i, e


def _one_line(err: str, *needles) -> bool:
    return err.count("\n") == 1 and err.startswith("nantucket: ") and all(n in err for n in needles)


@pytest.fixture
def memory_limit(monkeypatch):
    """memory.check_fits as on a machine with ``limit[0]`` bytes available; records what was asked."""
    limit, asked = [1 << 62], []

    def check_fits(nbytes, what):
        asked.append((nbytes, what))
        if nbytes > limit[0]:
            raise memory.MemoryTooSmall(f"{what}: needs {nbytes} bytes, more than the {limit[0]} available")
    monkeypatch.setattr(memory, "check_fits", check_fits)
    return limit, asked


# -- 1. a closed stdout: quiet, and the command's own exit status -------------------------------------------

def _cli(*argv):
    return [sys.executable, "-m", "nantucket", *map(str, argv)]


@pytest.mark.parametrize("argv, status", [
    (["run", "{i}", "{e}"], 0),
    (["run", "{i}", "{i}"], 1),                 # a failed test stays a failed test
    (["run", "{i}", "{e}", "--json"], 0),
    (["points", "6", "{d}/a.txt", "{d}/b.txt"], 0),
    (["--version"], 0),
    (["--help"], 0),
    (["run", "--help"], 0),
])
def test_a_reader_that_closes_at_once_gets_no_traceback(pair, tmp_path, argv, status):
    i, e = pair
    argv = [a.format(i=i, e=e, d=tmp_path) for a in argv]
    proc = subprocess.Popen(_cli(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                         # before the interpreter has even started: `| true`
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == status and err == b""


_SLOW_RUN = textwrap.dedent("""
    import sys, time
    from nantucket.host import backends
    from nantucket.host.cli import main

    class Slow(backends.ModelBackend):      # the report's first lines are out before the transform ends
        def run(self, *a, **k):
            time.sleep(0.5)
            return super().run(*a, **k)

    backends.BACKENDS["slow"] = Slow
    sys.exit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize("expected, status", [("e", 0), ("i", 1)])
def test_a_reader_that_stops_after_one_line_gets_no_traceback(pair, expected, status):
    """`nantucket run IN EXP | head -1`: the first line is read, then the pipe closes mid-report."""
    i, e = pair
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_RUN, "run", str(i), str({"e": e, "i": i}[expected]),
                             "--backend", "slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert first.startswith(b"N....") and proc.wait(timeout=60) == status and err == b""


# -- 2. .npy files that are not, or whose header does not parse or lies --------------------------------------

def _npy_with_header(path, header: bytes, data: bytes = b"") -> None:
    """A version 1.0 .npy file with the given header text (padded as numpy pads it)."""
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_an_npy_header_that_does_not_parse_is_one_line_exit_2(pair, tmp_path, capsys, json_flag):
    i, e = pair
    bad = tmp_path / "bad.npy"
    _npy_with_header(bad, b"{'descr': '<u8\n", bytes(64))        # tokenize.TokenError inside np.load
    assert main(["run", str(bad), str(e), *json_flag]) == 2
    out, err = capsys.readouterr()
    assert _one_line(err, f"{bad}: ", "header does not parse")
    # the --json contract for bad input: the one-line error on stderr, and with --json one JSON object on
    # stdout that says the same (nothing on stdout without it)
    text = tmp_path / "bad.txt"
    text.write_text("zz\n")
    assert main(["run", str(text), str(e), *json_flag]) == 2
    out2, err2 = capsys.readouterr()
    if not json_flag:
        assert out == out2 == ""
    else:
        for o, er in ((out, err), (out2, err2)):
            report = json.loads(o)
            assert report["verdict"] == "ERROR" and report["exit_status"] == 2
            assert er == f"nantucket: error: {report['error']}\n"


def test_a_raw_file_named_npy_is_not_a_npy_file_and_no_unpickling_is_suggested(pair, tmp_path, capsys):
    i, e = pair
    raw = tmp_path / "raw.npy"
    raw.write_bytes(np.arange(64, dtype="<u8").tobytes()[::-1])     # not the magic, not pickle either
    assert main(["run", str(raw), str(e)]) == 2
    err = capsys.readouterr().err
    assert _one_line(err, f"{raw}: not a .npy file (no NUMPY magic") and "pickle" not in err
    npz = tmp_path / "points.npy"
    np.savez(tmp_path / "points.npz", a=np.arange(4, dtype=np.uint64))
    os.rename(tmp_path / "points.npz", npz)
    with pytest.raises(PointFileError, match="no NUMPY magic: a zip archive"):
        read_points(npz)


@pytest.mark.parametrize("shape, data_points, needle", [
    ("(128,)", 64, "says 128 points (1024 bytes) but the file holds 512 bytes"),
    ("(1099511627776,)", 8, "says 1099511627776 points"),            # 2^40: 8 TiB never allocated
    ("(8,)", 9, "says 8 points (64 bytes) but the file holds 72 bytes"),
])
def test_an_npy_header_that_lies_is_refused_before_the_data_is_read(tmp_path, monkeypatch, shape, data_points,
                                                                     needle):
    f = tmp_path / "lies.npy"
    _npy_with_header(f, f"{{'descr': '<u8', 'fortran_order': False, 'shape': {shape}, }}".encode(),
                     np.ones(data_points, dtype="<u8").tobytes())

    def no_read(*a, **k):
        raise AssertionError("the data was read")
    monkeypatch.setattr(np, "fromfile", no_read)
    with pytest.raises(PointFileError) as e:
        read_points(f)
    assert str(e.value).startswith(f"{f}: the .npy header ") and needle in str(e.value)


def test_an_npy_beyond_the_field_or_the_memory_is_refused_before_reading(tmp_path, monkeypatch, memory_limit):
    f = tmp_path / "big.npy"
    n = (1 << 32) + 1                                               # sparse: no disk, no memory
    _npy_with_header(f, f"{{'descr': '<u8', 'fortran_order': False, 'shape': ({n},), }}".encode())
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size + 8 * n)
    monkeypatch.setattr(np, "fromfile", lambda *a, **k: pytest.fail("the data was read"))
    with pytest.raises(PointFileError, match=f"^{f}: holds {n} points, more than 2\\^32"):
        read_points(f)
    limit, asked = memory_limit
    limit[0] = 1 << 30
    with pytest.raises(PointFileError, match=f"^{f}: reading its {n} points: needs "):
        read_points(f, batch=2)
    assert asked[-1][0] >= 8 * n                                    # at least the points themselves


# -- 3. sizes: the field's largest and the machine's memory, before any work ---------------------------------

def test_log_n_beyond_the_field_is_exit_2_and_the_help_says_the_range(tmp_path, capsys):
    assert main(["points", "33", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]) == 2
    assert _one_line(capsys.readouterr().err, "LOG_N: must be in 1..32", "2^32")
    assert main(["points", "--help"]) == 0
    assert "1..32" in " ".join(capsys.readouterr().out.split())
    assert not any(tmp_path.iterdir())


def test_points_beyond_any_machine_is_exit_2_with_the_bytes_needed(tmp_path, capsys, monkeypatch):
    """2^44 points on the machine's real memory: refused before the generator starts."""
    import nantucket.host.cli as cli
    monkeypatch.setattr(cli, "make_points", lambda *a: pytest.fail("generation started"))
    assert main(["points", "32", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--batch", "4096"]) == 2
    err = capsys.readouterr().err
    assert _one_line(err, "LOG_N 32 x --batch 4096", f"{4096 << 32} points", "TiB of memory", "available")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("argv, named", [
    (["20"], "LOG_N 20 (1048576 points"),
    (["4", "--batch", "1000000000"], "LOG_N 4 x --batch 1000000000 (16000000000 points"),
])
def test_points_that_do_not_fit_the_memory_are_refused_naming_the_argument(tmp_path, capsys, monkeypatch,
                                                                            memory_limit, argv, named):
    import nantucket.host.cli as cli
    limit, asked = memory_limit
    limit[0] = 8 << 20
    monkeypatch.setattr(cli, "make_points", lambda *a: pytest.fail("generation started"))
    assert main(["points", argv[0], str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert _one_line(err, named, "needs ") and not any(tmp_path.iterdir())
    n_points = int(named.split("(")[1].split()[0])
    # at least the two arrays of points and the two text files (19 bytes a point) of the output
    assert asked[0][0] >= n_points * (8 + 8 + 19)


@pytest.mark.parametrize("log_n, batch, flags", [(14, 1, []), (12, 8, ["--coset", "7", "--order", "in=rev,out=rev"]),
                                                 (14, 1, ["--inverse", "--coset", "7"])])
def test_the_size_estimates_hold_what_the_work_takes(tmp_path, capsys, memory_limit, log_n, batch, flags):
    """The estimates checked before the work bound the peak the work then takes (tracemalloc: numpy's
    arrays and Python's objects)."""
    import tracemalloc
    _, asked = memory_limit
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    for argv in (["points", str(log_n), str(i), str(e), "--batch", str(batch), *flags],
                 ["run", str(i), str(e), "--batch", str(batch), *flags, "--output", str(tmp_path / "o.txt")]):
        asked.clear()
        tracemalloc.start()
        try:
            assert main(argv) == 0
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        held = 8 * (batch << log_n) if argv[0] == "run" else 0      # the run checks after reading INPUT
        assert max(nbytes for nbytes, _ in asked) + held >= peak, (argv[0], asked, peak)


def test_a_sparse_64_gib_bin_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch, memory_limit):
    limit, _ = memory_limit
    big, e = tmp_path / "big.bin", tmp_path / "exp.bin"
    with open(big, "wb") as f:
        f.truncate(64 << 30)                                       # a hole: no disk, no memory
    e.write_bytes(bytes(8))
    import pathlib
    monkeypatch.setattr(pathlib.Path, "read_bytes", lambda self: pytest.fail(f"{self} was read"))
    assert main(["run", str(big), str(e)]) == 2                    # 2^33 points: beyond the field
    assert _one_line(capsys.readouterr().err, f"{big}: holds {1 << 33} points, more than 2^32")
    limit[0] = 1 << 30
    assert main(["run", str(big), str(e), "--batch", "2"]) == 2    # in the field, not in 1 GiB
    assert _one_line(capsys.readouterr().err, f"{big}: reading its {1 << 33} points: needs ")


def test_a_text_file_is_checked_by_its_size_then_by_its_lines(tmp_path, capsys, memory_limit):
    limit, asked = memory_limit
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    x = np.arange(1 << 12, dtype=np.uint64)
    write_points(i, x)
    write_points(e, N.ntt(x))
    limit[0] = i.stat().st_size                                    # not even the file's bytes fit
    assert main(["run", str(i), str(e)]) == 2
    assert _one_line(capsys.readouterr().err, f"{i}: reading its {i.stat().st_size} bytes: needs ")
    loose = tmp_path / "loose.txt"                                 # 2-byte lines: the general parser
    loose.write_bytes(b"1\n" * (1 << 12))
    limit[0] = 1 << 62
    read_points(loose)
    fast, lines = asked[-2][0], asked[-1][0]
    limit[0] = (fast + lines) // 2                                 # the bytes fit, the parsing does not
    with pytest.raises(PointFileError, match=f"^{loose}: parsing its 4097 lines: needs "):
        read_points(loose)


def test_a_run_that_does_not_fit_is_refused_after_input_before_expected(pair, capsys, memory_limit, tmp_path):
    limit, _ = memory_limit
    i, _ = pair
    limit[0] = 16 << 20                                            # the 64 points read; a run needs more
    assert main(["run", str(i), str(tmp_path / "missing.txt")]) == 2
    assert _one_line(capsys.readouterr().err, f"{i}: a run of its 64 points: needs ")


class _TestBackend(backends.Backend):
    """A device backend of the tests: takes the build parameters (all a backend outside the CLI's table
    gets) and runs as the test says."""

    def __init__(self, params=None):
        super().__init__()


class _OutOfMemoryBackend(_TestBackend):
    def run(self, *a, **k):
        raise MemoryError()


def test_an_unforeseen_memory_error_names_what_was_being_done(pair, capsys, monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, "oom", _OutOfMemoryBackend)
    assert main(["run", *map(str, pair), "--backend", "oom"]) == 2
    out, err = capsys.readouterr()
    assert _one_line(err, "out of memory while transforming 64 points on the oom backend")


# -- 4. messages that say what is true -----------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux) for a write that fails")
def test_json_carries_the_output_write_error(pair, capsys):
    assert main(["run", *map(str, pair), "--json", "--output", "/dev/full"]) == 3
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["verdict"] == "PASSED" and report["output"] == "/dev/full"
    assert "/dev/full: cannot write" in report["output_error"] and report["error"] == report["output_error"]
    assert _one_line(err, "/dev/full: cannot write")


def test_progress_into_a_pipe_is_whole_lines_at_stage_changes_and_ends_at_100(tmp_path, monkeypatch):
    import time
    import nantucket.host.progress as P
    monkeypatch.setattr(P, "DELAY_S", 0.0)
    out = tmp_path / "err.txt"
    with open(out, "w") as f:
        with Progress("run", [("read", 0.5), ("check", 0.5)], mode="on", stream=f) as p:
            p.stage("read")
            time.sleep(1.2)                  # a terminal would get a redrawn line every 0.5 s
            p.stage("check")
            time.sleep(0.3)
    text = out.read_text()
    lines = text.splitlines()
    assert "\r" not in text and "\x1b" not in text
    assert [ln.split("% ")[1].split(",")[0] for ln in lines[:-1]] == ["read", "check"]
    assert lines[-1].startswith("run: 100% done, ")


def test_progress_on_into_a_pipe_ends_with_100_even_for_a_short_run(pair, capsys):
    assert main(["run", *map(str, pair), "--progress", "on"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("nantucket run: 100% done")


def test_a_bom_is_skipped_and_bad_bytes_are_shown_escaped(pair, tmp_path, capsys):
    i, e = pair
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + i.read_bytes())              # what Notepad saves as "UTF-8"
    assert np.array_equal(read_points(bom), read_points(i))
    assert main(["run", str(bom), str(e)]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"0x1\n\xe2\x80\x8b0x2\n")                     # a zero-width space before the value
    assert main(["run", str(bad), str(e)]) == 2
    err = capsys.readouterr().err
    assert _one_line(err, f"{bad}:2: not a 64-bit hex value: '\\xe2\\x80\\x8b0x2'") and "\ufffd" not in err


def test_mismatches_0_prints_the_count_only(pair, capsys):
    i, _ = pair
    assert main(["run", str(i), str(i), "--mismatches", "0"]) == 1
    out = capsys.readouterr().out
    assert "64 of 64 points differ\n" in out and "first mismatches" not in out and "  [" not in out


@pytest.mark.parametrize("option, value", [
    ("--coset", "\u0667"), ("--coset", "1_000"), ("--coset", " 7"), ("--coset", "+7"), ("--coset", "0x_1f"),
    ("--batch", "\u0661"), ("--batch", "1_0"), ("--seed", "\u0663"), ("--mismatches", "+1"),
    ("--device", "\u0660"), ("--lanes", "\u0664"), ("--log-core", "4_0"), ("--channels", " 4"),
])
def test_integer_arguments_take_ascii_digits_only(pair, capsys, option, value):
    i, e = pair
    argv = ["run", str(i), str(e), option, value]
    if option == "--seed":
        argv = ["points", "4", "a.txt", "b.txt", option, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert _one_line(err, option, ascii(value)) and "ASCII" in err


def test_log_n_takes_ascii_digits_only(tmp_path, capsys):
    assert main(["points", "\u0661\u0660", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]) == 2
    assert _one_line(capsys.readouterr().err, "LOG_N", "'\\u0661\\u0660'")


def test_ascii_coset_spellings_still_work(pair, capsys):
    i, _ = pair
    for g in ("7", "0x7", "0X1f"):
        e = i.with_name(f"exp_{g}.txt")
        assert main(["points", "6", str(i), str(e), "--coset", g]) == 0
        assert main(["run", str(i), str(e), "--coset", g]) == 0


@pytest.mark.parametrize("make, needle", [
    (lambda d: d / "missing.xclbin", "does not exist"),
    (lambda d: d, "is a directory"),
])
def test_a_bad_xclbin_path_is_a_bad_argument(pair, tmp_path, capsys, make, needle):
    path = make(tmp_path)
    assert main(["run", *map(str, pair), "--backend", "xrt", "--xclbin", str(path)]) == 2
    assert _one_line(capsys.readouterr().err, f"--xclbin: {path} {needle}")
    assert not (tmp_path / "build" / "log").exists()               # refused before the device opened


@pytest.mark.parametrize("option", [["--xclbin", "x.xclbin"], ["--device", "1"]])
def test_xrt_options_for_another_backend_are_refused(pair, capsys, option):
    assert main(["run", *map(str, pair), *option]) == 2
    assert _one_line(capsys.readouterr().err, option[0], "the model backend takes no", "only xrt")


class _StrictModel(backends.ModelBackend):
    """Takes the model's one option and nothing else, as api.open's backends will."""

    def __init__(self, params=None):
        super().__init__()


class _StrictSim(backends.ModelBackend):
    seen = None

    def __init__(self, params=None, progress=None):
        super().__init__()
        type(self).seen = {"params": params, "progress": progress}


def test_each_backend_gets_only_the_options_it_takes(pair, capsys, monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, "model", _StrictModel)
    assert main(["run", *map(str, pair)]) == 0
    monkeypatch.setitem(backends.BACKENDS, "sim", _StrictSim)
    monkeypatch.setattr(backends, "build_params", lambda name, n, given, field=None: None)
    assert main(["run", *map(str, pair), "--backend", "sim"]) == 0
    assert _StrictSim.seen["params"] is None and callable(_StrictSim.seen["progress"])


class _QuietFailure(_TestBackend):
    def run(self, *a, **k):
        raise backends.DeviceError("the kernel did not start")


class _ChattyFailure(_TestBackend):
    def run(self, *a, **k):
        print("driver: register 0x10 reads 0xdead", flush=True)
        raise backends.DeviceError("the kernel did not start")


def test_a_device_error_names_the_log_only_when_it_holds_something(pair, tmp_path, capfd, monkeypatch):
    logs = tmp_path / "logs"
    monkeypatch.setitem(backends.BACKENDS, "quiet", _QuietFailure)
    assert main(["run", *map(str, pair), "--backend", "quiet", "--log-dir", str(logs)]) == 3
    err = capfd.readouterr().err
    assert _one_line(err, "device error: the kernel did not start") and "device log" not in err
    assert not list(logs.iterdir())                                # the empty log is not left behind
    monkeypatch.setitem(backends.BACKENDS, "chatty", _ChattyFailure)
    assert main(["run", *map(str, pair), "--backend", "chatty", "--log-dir", str(logs)]) == 3
    err = capfd.readouterr().err
    log = err.split("device log: ")[1].rstrip(")\n")
    assert "reads 0xdead" in open(log).read()


def test_an_unwritable_build_folder_is_refused_before_the_files_are_read(tmp_path, capsys, monkeypatch):
    """--backend sim with NANTUCKET_BUILD_DIR on a file: one line naming the variable, exit 2, and nothing
    read (the input does not even exist)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("NANTUCKET_BUILD_DIR", str(blocker / "build"))
    assert main(["run", str(tmp_path / "absent.txt"), str(tmp_path / "absent2.txt"), "--backend", "sim",
                 "--log-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "NANTUCKET_BUILD_DIR" in err and "absent" not in err
