"""Outputs of the `nantucket` command (host/outfile.py): checked before the work, never clobbering a link,
a device, a pipe, a read-only file or an input, written with the user's umask, and I/O failures reported
as one line with exit 3 after the verdict.

No test here writes to a system device directly: devices are reached through links in tmp_path, so the
tests stay harmless on code that would replace them.
"""

import errno
import os
import stat

import numpy as np
import pytest

from nantucket.host.cli import main
from nantucket.host.points import read_points, write_points
from nantucket.hw.model import ntt as N


@pytest.fixture
def pair(tmp_path):
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    x = np.random.default_rng(5).integers(0, 2**32, 16, dtype=np.uint64)
    write_points(i, x)
    write_points(e, N.ntt_radix2(x))
    return i, e


def _run(pair, *tail):
    return main(["run", *map(str, pair), *map(str, tail)])


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("nantucket: error: ")


def test_symlink_is_followed_not_replaced(pair, tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert _run(pair, "--output", link) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert np.array_equal(read_points(target), read_points(pair[1]))


def test_fifo_is_written_through(pair, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)     # 16 points fit in the pipe's buffer
    try:
        assert _run(pair, "--output", fifo) == 0
        data = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert data == pair[1].read_bytes()


def test_full_device_through_a_link_is_exit_3_after_the_verdict(pair, tmp_path, capsys):
    full = tmp_path / "full"
    full.symlink_to("/dev/full")
    assert _run(pair, "--output", full) == 3
    out, err = capsys.readouterr()
    assert out.rstrip().endswith("TEST PASSED")
    assert _one_line(err) and "No space left on device" in err and str(full) in err
    assert full.is_symlink()


def test_full_disk_on_a_regular_file_keeps_the_old_file(pair, tmp_path, capsys, monkeypatch):
    import nantucket.host.outfile as outfile
    out_file = tmp_path / "o.txt"
    out_file.write_text("old\n")

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(outfile, "_write_all", no_space)
    assert _run(pair, "--output", out_file) == 3
    out, err = capsys.readouterr()
    assert out.rstrip().endswith("TEST PASSED") and _one_line(err) and "No space left" in err
    assert out_file.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.txt", "in.txt", "o.txt"]


@pytest.mark.parametrize("which", ["input", "expected", "input-link", "expected-hardlink"])
def test_an_input_as_output_is_refused(pair, tmp_path, capsys, which):
    i, e = pair
    before = (i.read_bytes(), e.read_bytes())
    if which == "input-link":
        out = tmp_path / "alias.txt"
        out.symlink_to(i)
    elif which == "expected-hardlink":
        out = tmp_path / "alias.txt"
        os.link(e, out)
    else:
        out = i if which == "input" else e
    assert _run(pair, "--output", out) == 2
    out_text, err = capsys.readouterr()
    assert _one_line(err) and ("INPUT" in err or "EXPECTED" in err) and out_text == ""
    assert (i.read_bytes(), e.read_bytes()) == before


def test_read_only_file_is_refused(pair, tmp_path, capsys):
    out = tmp_path / "ro.txt"
    out.write_text("keep\n")
    out.chmod(0o444)
    assert _run(pair, "--output", out) == 2
    out_text, err = capsys.readouterr()
    assert _one_line(err) and "read-only" in err and out_text == ""
    assert out.read_text() == "keep\n"


@pytest.mark.parametrize("make_path, needle", [
    (lambda d: d / "nodir" / "o.txt", "does not exist"),
    (lambda d: d, "is a directory"),
    (lambda d: "", "empty"),
    (lambda d: d / "ro" / "o.txt", "not writable"),
    (lambda d: str(d / "sub") + "/", "directory"),
])
def test_bad_output_paths_are_refused_before_any_work(pair, tmp_path, capsys, monkeypatch, make_path, needle):
    (tmp_path / "ro").mkdir(mode=0o555)
    import nantucket.host.cli as cli

    def no_reading(path):
        raise AssertionError("a file was read before the output path was checked")
    monkeypatch.setattr(cli, "read_points", no_reading)
    assert _run(pair, "--output", make_path(tmp_path)) == 2
    out, err = capsys.readouterr()
    assert _one_line(err) and needle in err and out == ""


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(pair, tmp_path, mask):
    old = os.umask(mask)
    try:
        fresh = tmp_path / "fresh.txt"
        assert _run(pair, "--output", fresh) == 0
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~mask
        kept = tmp_path / "kept.txt"
        kept.write_text("old\n")
        kept.chmod(0o640)
        assert _run(pair, "--output", kept) == 0
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
        assert np.array_equal(read_points(kept), read_points(pair[1]))
    finally:
        os.umask(old)


# -- points ------------------------------------------------------------------------------------------

def test_points_leaves_no_new_input_beside_an_old_expected(tmp_path, capsys):
    i = tmp_path / "in.txt"
    i.write_text("old input\n")
    e = tmp_path / "exp"
    e.symlink_to("/dev/full")                # EXPECTED fails to write (ENOSPC) after INPUT was made
    assert main(["points", "4", str(i), str(e)]) == 3
    assert _one_line(capsys.readouterr().err)
    assert i.read_text() == "old input\n" and e.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp", "in.txt"]


@pytest.mark.parametrize("tail, needle", [
    (["same.txt", "same.txt"], "INPUT"),
    (["nodir/a.txt", "b.txt"], "does not exist"),
    (["a.txt", ""], "empty"),
    (["a.txt", "b.txt", "--seed", "-1"], "--seed"),
])
def test_points_bad_outputs_and_seed(tmp_path, capsys, monkeypatch, tail, needle):
    monkeypatch.chdir(tmp_path)
    assert main(["points", "4", *tail]) == 2
    out, err = capsys.readouterr()
    assert _one_line(err) and needle in err and out == ""
    assert not any(tmp_path.iterdir())


# -- rtl -o and synth --workdir ------------------------------------------------------------------------

def test_rtl_output_is_checked_before_elaboration(tmp_path, capsys):
    assert main(["rtl", "--component", "modadd", "-o", str(tmp_path / "nodir" / "x.v")]) == 2
    assert _one_line(capsys.readouterr().err) and not (tmp_path / "nodir").exists()
    ro = tmp_path / "ro.v"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    assert main(["rtl", "--component", "modadd", "-o", str(ro)]) == 2
    assert _one_line(capsys.readouterr().err) and ro.read_text() == "keep\n"
    full = tmp_path / "full.v"
    full.symlink_to("/dev/full")
    assert main(["rtl", "--component", "modadd", "-o", str(full)]) == 3
    assert _one_line(capsys.readouterr().err) and full.is_symlink()


def test_synth_workdir_is_checked_before_synthesis(tmp_path, capsys, monkeypatch):
    import nantucket.hw.flow.synth

    def no_synthesis(*a, **k):
        raise AssertionError("synthesis started before --workdir was checked")
    monkeypatch.setattr(nantucket.hw.flow.synth, "synthesize", no_synthesis)
    a_file = tmp_path / "file"
    a_file.write_text("")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    for workdir in (a_file, a_file / "sub", ro, ""):
        assert main(["synth", "--component", "modadd", "--workdir", str(workdir)]) == 2
        assert _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("stdout_to", ["pipe", "file"])
def test_a_link_to_stdout_writes_into_the_report_stream(pair, tmp_path, stdout_to):
    """`--output` through a link to /dev/stdout: the points land in stdout, in order with the report,
    whether stdout is a pipe or a file, and the link stays."""
    import subprocess
    import sys
    link = tmp_path / "out-link"
    link.symlink_to("/dev/stdout")
    argv = [sys.executable, "-m", "nantucket.host.cli", "run", *map(str, pair), "--output", str(link)]
    if stdout_to == "pipe":
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
    else:
        log = tmp_path / "report.txt"
        with open(log, "wb") as f:
            subprocess.run(argv, stdout=f, stderr=subprocess.PIPE, check=True)
        out = log.read_bytes()
    points = pair[1].read_bytes()
    assert points in out and out.index(points) < out.index(b"Output points") < out.index(b"TEST PASSED")
    assert link.is_symlink()


def test_a_socket_is_refused_not_replaced(pair, tmp_path, capsys):
    import socket
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(path))
        assert _run(pair, "--output", path) == 2
    assert _one_line(capsys.readouterr().err) and stat.S_ISSOCK(os.lstat(path).st_mode)
