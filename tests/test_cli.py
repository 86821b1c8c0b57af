"""The `nantucket` command end to end on the model backend: reports and exit codes."""

import subprocess
import sys

import numpy as np
import pytest

from hw.model import ntt as N
from host.cli import main
from host.points import read_points, write_points


@pytest.fixture
def pair(tmp_path):
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "10", str(i), str(e), "--seed", "4"]) == 0
    return i, e


def test_points_writes_input_and_expected(pair):
    i, e = pair
    x = read_points(i)
    assert x.size == 1024
    assert np.array_equal(read_points(e), N.ntt_radix2(x))


def test_run_passes(pair, capsys):
    assert main(["run", *map(str, pair)]) == 0
    out = capsys.readouterr().out
    assert "N................. 1024" in out and "Kernel time" in out
    assert "Checking computed results against expected ..." in out
    assert out.rstrip().endswith("TEST PASSED")


def test_run_inverse_and_output(pair, tmp_path, capsys):
    i, e = pair
    o = tmp_path / "o.txt"
    # inverse of the expected file gives back the input
    assert main(["run", str(e), str(i), "--inverse", "--output", str(o)]) == 0
    assert np.array_equal(read_points(o), read_points(i))


def test_run_fails_on_mismatch(pair, tmp_path, capsys):
    i, e = pair
    y = read_points(e)
    y[5] ^= np.uint64(1)
    bad = tmp_path / "bad.txt"
    write_points(bad, y)
    assert main(["run", str(i), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "1 of 1024 points differ" in out and "[5]" in out
    assert out.rstrip().endswith("TEST FAILED")


@pytest.mark.parametrize("argv_tail, needle", [
    (["--backend", "nope"], "unknown backend"),
    (["--lanes", "3"], "lanes"),
])
def test_run_bad_arguments(pair, capsys, argv_tail, needle):
    assert main(["run", *map(str, pair), *argv_tail]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_run_bad_files(pair, tmp_path, capsys):
    i, e = pair
    bad = tmp_path / "b.txt"
    bad.write_text("0x1\n0x2\nhello\n0x4\n")
    assert main(["run", str(bad), str(e)]) == 2
    assert f"{bad}:3:" in capsys.readouterr().err
    short = tmp_path / "s.txt"
    short.write_text("0x1\n0x2\n")
    assert main(["run", str(i), str(short)]) == 2
    assert "holds 2 points" in capsys.readouterr().err


def test_failed_run_leaves_no_output(pair, tmp_path, capsys):
    i, _ = pair
    bad = tmp_path / "b.txt"
    bad.write_text("0x1\n")
    o = tmp_path / "o.txt"
    assert main(["run", str(i), str(bad), "--output", str(o)]) == 2
    assert not o.exists()


def test_points_bad_arguments(tmp_path, capsys):
    assert main(["points", "0", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert main(["points", "4", str(tmp_path / "a"), str(tmp_path / "b"), "--kind", "weird"]) == 2
    assert main([]) == 2
    assert not any(tmp_path.iterdir())


def test_console_script_exit_codes(pair):
    i, e = pair
    ok = subprocess.run([sys.executable, "-m", "host.cli", "run", str(i), str(e)], capture_output=True)
    assert ok.returncode == 0 and b"TEST PASSED" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "host.cli", "run", str(i), "/nonexistent"],
                         capture_output=True)
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1
