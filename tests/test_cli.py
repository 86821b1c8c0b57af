"""The `nantucket` command end to end on the model backend: reports and exit codes."""

import subprocess
import sys

import numpy as np
import pytest

from nantucket.hw.model import ntt as N
from nantucket.host.backends import Backend, ModelBackend
from nantucket.host.cli import main
from nantucket.host.points import read_points, write_points


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)         # the device logs of the sim backend (build/log) land in tmp_path


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
    assert "N................. 1024" in out and "CPU time.......... " in out and "Kernel time" not in out
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
    ok = subprocess.run([sys.executable, "-m", "nantucket.host.cli", "run", str(i), str(e)], capture_output=True)
    assert ok.returncode == 0 and b"TEST PASSED" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "nantucket.host.cli", "run", str(i), "/nonexistent"],
                         capture_output=True)
    assert bad.returncode == 2 and bad.stderr.count(b"\n") == 1


# -- build options and sizes (the sim backend's rule, host.backends.build_params) ----------------------

class _RecordingBackend(Backend):
    """Stands in for the simulated card: records the BuildParams it is given, computes with the model."""

    made = []

    def __init__(self, params=None, **_options):
        super().__init__()
        self.params = params
        self._model = ModelBackend()
        _RecordingBackend.made.append(params)

    def supports(self, n):
        return None if n <= self.params.n_points else "too big"

    def run(self, x, inverse=False):
        return self._model.run(x, inverse=inverse)

    def close(self):
        pass


@pytest.fixture
def recording_sim(monkeypatch):
    from nantucket.host import backends
    _RecordingBackend.made = []
    monkeypatch.setitem(backends.BACKENDS, "sim", _RecordingBackend)
    return _RecordingBackend.made


@pytest.mark.parametrize("options, want", [
    ([], dict(lanes=4, log_core=4, channels=4)),
    (["--lanes", "4"], dict(lanes=4, log_core=4, channels=4)),
    (["--lanes", "16"], dict(lanes=16, log_core=4, channels=4)),
    (["--channels", "32"], dict(lanes=4, log_core=4, channels=32)),
    (["--log-core", "6"], dict(lanes=4, log_core=6, channels=4)),
])
def test_sim_unspecified_build_options_are_the_smallest_that_hold_n(tmp_path, recording_sim, options, want):
    from nantucket.hw.model.params import BuildParams
    i, e = tmp_path / "i.txt", tmp_path / "e.txt"
    assert main(["points", "8", str(i), str(e)]) == 0
    assert main(["run", str(i), str(e), "--backend", "sim", *options]) == 0
    got = recording_sim[-1]
    assert got == BuildParams(**want)
    # the smallest: 2^8 points need 2^(2k) >= 256, i.e. k = 4, and 4 lanes / 4 channels are the defaults
    assert got.n_points >= 256


@pytest.mark.parametrize("options, needle", [
    (["--lanes", "2"], "lanes"),                 # the kernel's HBM layout needs 4 lanes or more
    (["--lanes", "3"], "lanes"),
    (["--log-core", "13"], "log_core"),
    (["--lanes", "16", "--log-core", "3"], "lanes"),
])
@pytest.mark.parametrize("backend", ["sim", "xrt"])
def test_kernel_build_options_are_checked_before_any_file_is_read(tmp_path, capsys, options, needle, backend):
    missing = tmp_path / "absent.txt"
    assert main(["run", str(missing), str(missing), "--backend", backend, *options]) == 2
    out, err = capsys.readouterr()
    assert needle in err and "absent" not in err and err.count("\n") == 1 and out == ""


@pytest.mark.parametrize("backend", ["sim", "model"])
def test_past_the_fields_largest_transform_is_a_usage_error_before_expected_is_read(tmp_path, capsys, monkeypatch,
                                                                                    backend):
    """Sizes past one kernel call run (as a four-step); past the field's 2-adicity nothing does: BabyBear's
    2^27, refused (one line naming INPUT, exit 2) before EXPECTED is read."""
    import nantucket.host.cli as cli
    reads = []

    def fake_read(path, batch=1, field=None):           # a 2^28-point INPUT without writing it (nor touching it)
        reads.append(path)
        if len(reads) > 1:
            raise AssertionError("EXPECTED was read although INPUT cannot run")
        return np.empty(1 << 28, dtype=np.uint64)
    monkeypatch.setattr(cli, "read_points", fake_read)
    assert main(["run", str(tmp_path / "big.txt"), str(tmp_path / "exp.txt"), "--backend", backend,
                 "--field", "babybear"]) == 2
    err = capsys.readouterr().err
    assert "big.txt" in err and "2^27" in err and "babybear" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv_tail", [["--mismatches", "-1"], ["--mismatches", "x"], ["--device", "-1"]])
def test_run_rejects_negative_counts(pair, capsys, argv_tail):
    assert main(["run", *map(str, pair), *argv_tail]) == 2
    out, err = capsys.readouterr()
    assert argv_tail[0] in err and err.count("\n") == 1 and out == ""


# -- kernel transforms on the command line: --coset, --order, --batch -------------------------------------

P = 2**64 - 2**32 + 1


@pytest.mark.parametrize("flags, kwargs", [
    (["--coset", "7"], dict(coset=7)),
    (["--coset", "0xffffffff00000000", "--inverse"], dict(coset=2**64 - 2**32, inverse=True)),
    (["--order", "in=rev"], dict(order="rn")),
    (["--order", "out=rev,in=nat"], dict(order="nr")),
    (["--order", "in=rev,out=rev", "--coset", str(P - 1), "--inverse"], dict(order="rr", coset=P - 1, inverse=True)),
])
@pytest.mark.parametrize("batch", [1, 3])
def test_points_and_run_with_transform_flags(tmp_path, capsys, flags, kwargs, batch):
    """`points` writes B x N points and their transform (each row: hw.model.ntt.transform of the
    row), `run` checks them, and --json names the flags, the order and the batch."""
    import json
    i, e = tmp_path / "i.bin", tmp_path / "e.npy"
    assert main(["points", "5", str(i), str(e), "--batch", str(batch), *flags]) == 0
    x, y = read_points(i, batch).reshape(batch, 32), read_points(e, batch).reshape(batch, 32)
    for r in range(batch):
        assert np.array_equal(y[r], N.transform(x[r], **kwargs)), f"row {r}"
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--batch", str(batch), "--json", *flags]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "PASSED" and report["batch"] == batch and report["n"] == 32
    assert report["coset"] == kwargs.get("coset")
    assert report["flags"] == {"inverse": kwargs.get("inverse", False), "coset": "coset" in kwargs}
    order = kwargs.get("order", "nn")
    assert report["order"] == f"in={'rev' if order[0] == 'r' else 'nat'},out={'rev' if order[1] == 'r' else 'nat'}"
    assert "kernel_cycles" in report and report["kernel_cycles"] is None     # the model counts no cycles


@pytest.mark.parametrize("flags, needle", [
    (["--coset", "0"], "argument --coset: the shift must satisfy 0 < g < p"),
    (["--coset", str(P)], "argument --coset: the shift must satisfy 0 < g < p"),
    (["--coset", "-7"], "argument --coset"),
    (["--coset", "1.5"], "argument --coset: expected a decimal or 0x-hex shift"),
    (["--coset", "0x"], "argument --coset: expected a decimal or 0x-hex shift"),
    (["--coset", "0b101"], "argument --coset: expected a decimal or 0x-hex shift"),
    (["--order", "in=natural"], "argument --order: expected in=nat|rev,out=nat|rev"),
    (["--order", "in=rev,in=nat"], "argument --order: expected in=nat|rev,out=nat|rev"),
    (["--order", "rev"], "argument --order"),
    (["--batch", "0"], "argument --batch: expected a number of transforms B >= 1, got 0"),
    (["--batch", "two"], "argument --batch"),
])
def test_bad_transform_flags_are_one_line_exit_2_before_any_work(tmp_path, capsys, flags, needle):
    i, e, out = tmp_path / "i.txt", tmp_path / "e.txt", tmp_path / "out.txt"
    assert main(["run", str(i), str(e), "--output", str(out), *flags]) == 2      # the files do not even exist
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not out.exists()
    assert main(["points", "4", str(i), str(e), *flags]) == 2
    assert not i.exists() and not e.exists()


@pytest.mark.parametrize("count, batch", [(48, 2), (48, 5), (64, 3), (24, 1)])
def test_a_point_file_that_is_not_b_times_a_power_of_two_is_exit_2(tmp_path, capsys, count, batch):
    i, e = tmp_path / "i.txt", tmp_path / "e.txt"
    write_points(i, np.arange(count, dtype=np.uint64))
    write_points(e, np.arange(count, dtype=np.uint64))
    assert main(["run", str(i), str(e), "--batch", str(batch)]) == 2
    err = capsys.readouterr().err
    assert str(i) in err and err.count("\n") == 1 and f"{count} points is not" in err


def test_run_with_flags_on_the_xrt_backend_reports_the_kernel_calls(tmp_path, monkeypatch, capsys):
    """Through the stand-in pyxrt: 5 transforms of 2^6 on a build of 2^8 points per call (B = 4 + 1),
    inverse coset with a shift >= 2^63, both orders reversed."""
    from nantucket.host import backends
    from nantucket.host import xrt as X
    from nantucket.hw.model.params import BuildParams
    from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin
    params = BuildParams(lanes=4, log_core=4, channels=4)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    fake = FakePyxrt()
    monkeypatch.setitem(backends.BACKENDS, "xrt", lambda **o: X.XrtBackend(pyxrt_module=fake, **o))
    i, e = tmp_path / "i.txt", tmp_path / "e.txt"
    flags = ["--batch", "5", "--coset", hex(2**63 + 1), "--order", "in=rev,out=rev", "--inverse"]
    assert main(["points", "6", str(i), str(e), *flags]) == 0
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--backend", "xrt", "--xclbin", str(xclbin), *flags]) == 0
    out = capsys.readouterr().out
    assert "TEST PASSED" in out and "Batch............. 5 transforms of 64 points" in out
    assert "Kernel calls...... 2 calls, batch 5 (split: at most 4 per call), flags inverse+coset" in out
    assert fake.kernel_model.runs == 2 and fake.kernel_model.coset_shift == 2**63 + 1


# -- --axis and --ext: how the flat files order a batch's points -------------------------------------------

@pytest.mark.parametrize("flags, shape", [
    (["--batch", "3", "--axis", "0"], lambda n: (n, 3, 1)),                 # an N x 3 matrix, row-major
    (["--batch", "3", "--ext", "2"], lambda n: (3, n, 2)),                  # 3 transforms, 2 limbs a point
    (["--batch", "2", "--axis", "0", "--ext", "4"], lambda n: (n, 2, 4)),
    (["--ext", "2"], lambda n: (1, n, 2)),
])
def test_axis_and_ext_order_the_files_values(tmp_path, capsys, flags, shape):
    """`points` writes, and `run` reads, the values in the layout the flags say: with --axis 0 the file is
    a row-major N x B matrix (column e a transform), with --ext D each point's D limbs follow one another.
    Checked against the golden model on each column and limb of the file read as that array; `run` of the
    same flags passes on the model, and the files read back to back (no flags) do not match."""
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    coset = ["--coset", "7", "--order", "out=rev"]
    assert main(["points", "6", str(i), str(e), *flags, *coset]) == 0
    rows = int(np.prod(shape(64))) // 64                    # B x D transforms of 64 values
    x, y = read_points(i, rows), read_points(e, rows)
    cube_x, cube_y = x.reshape(shape(64)), y.reshape(shape(64))
    points_axis = 0 if "--axis" in flags else 1
    for b in range(cube_x.shape[1 - points_axis]):
        for limb in range(cube_x.shape[2]):
            col = (lambda c: c[:, b, limb]) if points_axis == 0 else (lambda c: c[b, :, limb])
            assert np.array_equal(col(cube_y), N.transform(col(cube_x), coset=7, order="nr")), (b, limb)
    capsys.readouterr()
    assert main(["run", str(i), str(e), *flags, *coset, "--json"]) == 0
    report = __import__("json").loads(capsys.readouterr().out)
    assert report["verdict"] == "PASSED" and report["n"] == 64
    assert report["axis"] == (0 if "--axis" in flags else -1)
    assert report["ext"] == (int(flags[flags.index("--ext") + 1]) if "--ext" in flags else None)
    if shape(64)[2] > 1 or "--axis" in flags:           # the same values read back to back differ
        assert main(["run", str(i), str(e), "--batch", str(rows), *coset]) == 1


def test_axis_and_ext_with_the_lde(tmp_path, capsys):
    """--blowup with --axis 0 and --ext 2: each column's limbs extended alone, the result an (F x N) x B
    matrix of D-limb points, checked against the golden model's LDE of each column and limb."""
    i, e = tmp_path / "in.bin", tmp_path / "exp.npy"
    flags = ["--batch", "2", "--axis", "0", "--ext", "2", "--blowup", "4", "--coset", "5"]
    assert main(["points", "4", str(i), str(e), *flags]) == 0
    x, y = read_points(i, 4).reshape(16, 2, 2), read_points(e, 4).reshape(64, 2, 2)
    for b in range(2):
        for limb in range(2):
            coeffs = N.transform(x[:, b, limb], inverse=True)
            ext = np.concatenate([coeffs, np.zeros(48, dtype=np.uint64)])
            assert np.array_equal(y[:, b, limb], N.transform(ext, coset=5))
    assert main(["run", str(i), str(e), *flags]) == 0
    assert "TEST PASSED" in capsys.readouterr().out


@pytest.mark.parametrize("argv_tail, needle", [(["--axis", "2"], "--axis"), (["--ext", "0"], "--ext"),
                                               (["--ext", "3"], "in.txt: ")])
def test_bad_axis_and_ext_are_one_line_errors(pair, capsys, argv_tail, needle):
    """An --axis other than 0 / -1, an --ext below 1, and a file whose count is not B x D x 2^n: exit 2."""
    assert main(["run", *map(str, pair), *argv_tail]) == 2
    out, err = capsys.readouterr()
    assert needle in err and err.count("\n") == 1 and out == ""
