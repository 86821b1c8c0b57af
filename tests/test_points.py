"""Point files: round trip, accepted variants, and every bad-input case with file and line."""

import numpy as np
import pytest

from hw.model.field import P
from host.points import PointFileError, read_points, write_points
from host.workloads import KINDS, make_points


def test_round_trip(tmp_path):
    x = np.random.default_rng(1).integers(0, P, 1 << 12, dtype=np.uint64)
    x[:4] = [0, 1, P - 1, 2**63]
    f = tmp_path / "x.txt"
    write_points(f, x)
    text = f.read_text()
    assert text.splitlines()[2] == "0xffffffff00000000"
    assert all(len(line) == 18 for line in text.splitlines())
    assert np.array_equal(read_points(f), x)


def test_accepts_variants(tmp_path):
    f = tmp_path / "v.txt"
    f.write_bytes(b"0X00000000000000FF\r\nabc\n0x1\n  0xffffffff00000000  \n\n\n")
    assert read_points(f).tolist() == [255, 0xABC, 1, P - 1]


@pytest.mark.parametrize("content, line, what", [
    (b"0x1\n0xzz\n0x2\n0x3\n", 2, "not a 64-bit hex value"),
    (b"0x1\n\n0x2\n0x3\n", 2, "empty line"),
    (b"0x1\n0x2\n0xffffffff00000001\n0x3\n", 3, "not below the field modulus"),
    (b"0x1\n0x2\n0x12345678123456789\n0x3\n", 3, "not a 64-bit hex value"),
    (b"0x1\n0x2\n0x3\n", None, "3 points is not a power of two"),
    (b"", None, "no points"),
    # the fixed-width fast path must report the same way
    (b"0x0000000000000001\n0x00000000000000g1\n", 2, "not a 64-bit hex value"),
    (b"0x0000000000000001\n0xffffffffffffffff\n", 2, "not below the field modulus"),
])
def test_bad_files_name_file_and_line(tmp_path, content, line, what):
    f = tmp_path / "bad.txt"
    f.write_bytes(content)
    with pytest.raises(PointFileError, match=what) as e:
        read_points(f)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}:{line}:" if line else f"{f}:")


def test_missing_file(tmp_path):
    with pytest.raises(PointFileError, match="No such file"):
        read_points(tmp_path / "absent.txt")


def test_write_is_atomic(tmp_path, monkeypatch):
    f = tmp_path / "out.txt"
    f.write_text("old\n")
    import host.outfile as outfile_module

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(outfile_module.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_points(f, np.arange(4, dtype=np.uint64))
    assert f.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_write_rejects_noncanonical(tmp_path):
    with pytest.raises(ValueError, match="canonical"):
        write_points(tmp_path / "o.txt", np.array([P], dtype=np.uint64))
    assert not (tmp_path / "o.txt").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_workloads(kind):
    x = make_points(12, kind, seed=3)
    assert x.dtype == np.uint64 and x.size == 4096 and np.all(x < np.uint64(P))
    if kind == "linear":
        assert x[:3].tolist() == [1, 2, 0] and not x[2:].any()
    if kind == "skewed":
        assert np.mean(x <= 1) > 0.8
        assert 50 <= np.unique(x).size <= 302


def test_skewed_full_size_statistics():
    x = make_points(20, "skewed", seed=1)
    values, counts = np.unique(x[x > 1], return_counts=True)
    assert 250 <= values.size <= 300 and counts.min() > 100
