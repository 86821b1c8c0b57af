"""Point files in .bin and .npy beside text (host/points.py), through `nantucket points` and `run`."""

import numpy as np
import pytest

from nantucket.hw.model import ntt as N
from nantucket.hw.model.field import P
from nantucket.host.cli import main
from nantucket.host.points import PointFileError, format_points, read_points, write_points

EDGES = [0, 1, P - 1, 2**32, 2**63, 2**32 - 1, P - 2**32]


def _one_line_error(err: str, *needles) -> bool:
    return err.count("\n") == 1 and err.startswith("nantucket: error: ") and all(n in err for n in needles)


@pytest.mark.parametrize("ext", ["bin", "npy", "BIN"])
def test_binary_round_trip_and_layout(tmp_path, ext):
    x = np.random.default_rng(2).integers(0, P, 1 << 10, dtype=np.uint64)
    x[:len(EDGES)] = EDGES
    f = tmp_path / f"x.{ext}"
    write_points(f, x)
    if ext.lower() == "bin":                  # raw little-endian uint64, nothing else
        assert f.read_bytes() == b"".join(int(v).to_bytes(8, "little") for v in x)
    else:                                     # numpy's own format, readable by numpy itself
        got = np.load(f, allow_pickle=False)
        assert got.dtype == np.dtype("<u8") and np.array_equal(got, x)
    assert np.array_equal(read_points(f), x)


def test_text_writer_matches_per_value_formatting():
    x = np.random.default_rng(3).integers(0, P, 50_000, dtype=np.uint64)
    x[:len(EDGES)] = EDGES
    want = "".join(f"0x{int(v):016x}\n" for v in x).encode()
    assert bytes(format_points(x)) == want


def test_text_reader_matches_per_value_parsing(tmp_path):
    x = np.random.default_rng(4).integers(0, P, 1 << 16, dtype=np.uint64)     # several read chunks
    x[-len(EDGES):] = EDGES
    f = tmp_path / "x.txt"
    f.write_text("".join(f"0x{int(v):016x}\n" for v in x))
    assert read_points(f).tolist() == [int(v) for v in x]


@pytest.mark.parametrize("make, needle", [
    (lambda f: f.write_bytes(b"\0" * 12), "12 bytes is not a whole number of 8-byte points"),
    (lambda f: f.write_bytes(b"".join(v.to_bytes(8, "little") for v in [1, 2, P, 3])),
     "element 2: value 0xffffffff00000001 is not below"),
    (lambda f: f.write_bytes(b"\1" + b"\0" * 23), "3 points is not a power of two"),
    (lambda f: f.write_bytes(b""), "no points"),
])
def test_bad_bin_files(tmp_path, make, needle):
    f = tmp_path / "bad.bin"
    make(f)
    with pytest.raises(PointFileError, match=needle) as e:
        read_points(f)
    assert str(e.value).startswith(f"{f}: ") and "\n" not in str(e.value)


@pytest.mark.parametrize("array, needle", [
    (np.arange(8, dtype=np.int64), "dtype int64"),
    (np.arange(8, dtype=np.uint64).reshape(2, 4), "shape (2, 4)"),
    (np.array([1, 2, 2**64 - 1, 3], dtype=np.uint64), "element 2"),
    (np.array([1, 2, 3], dtype=np.uint64), "3 points is not a power of two"),
    (np.array([{"a": 1}], dtype=object), "dtype object"),
])
def test_bad_npy_files(tmp_path, array, needle):
    f = tmp_path / "bad.npy"
    np.save(f, array, allow_pickle=True)
    with pytest.raises(PointFileError) as e:
        read_points(f)
    assert str(e.value).startswith(f"{f}: ") and needle in str(e.value) and "\n" not in str(e.value)


def test_not_an_npy_file(tmp_path):
    f = tmp_path / "text.npy"
    f.write_text("0x1\n0x2\n")
    with pytest.raises(PointFileError, match=r"not a .npy file \(no NUMPY magic"):
        read_points(f)


def test_points_and_run_in_every_format(tmp_path, capsys):
    i, e, o = tmp_path / "in.npy", tmp_path / "exp.bin", tmp_path / "out.npy"
    assert main(["points", "8", str(i), str(e), "--seed", "9"]) == 0
    x = np.load(i)
    assert np.array_equal(read_points(e), N.ntt_radix2(x))
    assert main(["run", str(i), str(e), "--output", str(o)]) == 0
    assert np.array_equal(np.load(o), N.ntt_radix2(x))
    t = tmp_path / "exp.txt"
    write_points(t, read_points(e))
    assert main(["run", str(i), str(t)]) == 0           # formats mix freely
    assert capsys.readouterr().out.rstrip().endswith("TEST PASSED")


def test_run_bad_binary_input_is_exit_2_naming_file_and_element(tmp_path, capsys):
    i, e = tmp_path / "in.bin", tmp_path / "exp.bin"
    assert main(["points", "4", str(i), str(e)]) == 0
    data = bytearray(i.read_bytes())
    data[5 * 8:6 * 8] = (2**64 - 1).to_bytes(8, "little")
    i.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["run", str(i), str(e)]) == 2
    out, err = capsys.readouterr()
    assert _one_line_error(err, str(i), "element 5") and out == ""
