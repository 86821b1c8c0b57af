"""The CLI in every field: `nantucket points --field`, `nantucket run --field` on text, .bin and .npy point
files (32-bit points for the 31-bit fields), the report naming the field, and the refusals (exit 2, one
line, nothing written).

Files are read back here with plain Python and numpy (not host.points), and transforms are checked
against O(N^2) sums written here with each field's p and generator.
"""

import json

import numpy as np
import pytest

from nantucket.host.cli import build_parser, main
from nantucket.host.points import PointFileError, read_points, write_points
from nantucket.host.workloads import make_points

from field_reference import SPEC as REF, naive, rev  # noqa: F401

SPEC = {name: REF[name][:2] for name in REF}  # name: (p, generator)
THIRTY_ONE = ["babybear", "koalabear"]






def raw(path, digits: int):
    """A point file's values as Python ints, read here: text lines of 0x + ``digits`` lowercase hex
    digits, .bin little-endian of digits/2 bytes, .npy by numpy."""
    path = str(path)
    if path.endswith(".npy"):
        a = np.load(path, allow_pickle=False)
        assert a.dtype == np.dtype(f"<u{digits // 2}")
        return [int(v) for v in a]
    data = open(path, "rb").read()
    if path.endswith(".bin"):
        width = digits // 2
        assert len(data) % width == 0
        return [int.from_bytes(data[i:i + width], "little") for i in range(0, len(data), width)]
    lines = data.decode("ascii").split("\n")
    assert lines[-1] == ""
    for line in lines[:-1]:
        assert len(line) == 2 + digits and line.startswith("0x") and line[2:] == line[2:].lower(), line
    return [int(line, 16) for line in lines[:-1]]


def one_line(err: str, *needles) -> bool:
    return err.count("\n") == 1 and err.startswith("nantucket: error: ") and all(n in err for n in needles)


# -- points and run, each format -------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SPEC))
@pytest.mark.parametrize("ext_in, ext_out", [("txt", "txt"), ("bin", "bin"), ("npy", "npy"), ("txt", "npy")])
def test_points_then_run_round_trip_in_each_format(tmp_path, capsys, name, ext_in, ext_out):
    p = SPEC[name][0]
    digits = 8 if name in THIRTY_ONE else 16
    i, e = tmp_path / f"in.{ext_in}", tmp_path / f"exp.{ext_out}"
    assert main(["points", "5", str(i), str(e), "--field", name, "--seed", "3"]) == 0
    x, y = raw(i, digits), raw(e, digits)
    assert len(x) == 32 and all(0 <= v < p for v in x) and len(set(x)) > 16
    assert y == naive(x, name)
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--field", name]) == 0
    out = capsys.readouterr().out
    assert f"{'Field':.<18} {name} (p = {p})\n" in out and out.rstrip().endswith("TEST PASSED")


@pytest.mark.parametrize("name", THIRTY_ONE)
def test_run_with_coset_order_inverse_batch_and_output(tmp_path, capsys, name):
    p = SPEC[name][0]
    shift = p - 2
    i, e, o = tmp_path / "in.bin", tmp_path / "exp.npy", tmp_path / "out.txt"
    opts = ["--field", name, "--coset", str(shift), "--order", "in=rev,out=nat", "--inverse", "--batch", "3"]
    assert main(["points", "4", str(i), str(e), *opts]) == 0
    x, y = raw(i, 8), raw(e, 8)
    assert len(x) == 48
    for r in range(3):
        assert y[16 * r:16 * r + 16] == naive(x[16 * r:16 * r + 16], name, inverse=True, coset=shift, order="rn")
    capsys.readouterr()
    assert main(["run", str(i), str(e), *opts, "--output", str(o), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "PASSED" and report["field"] == name and report["coset"] == shift
    assert raw(o, 8) == y


def test_the_field_of_a_run_is_its_own_and_a_mismatch_shows_the_field_s_digits(tmp_path, capsys):
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "3", str(i), str(e), "--field", "babybear"]) == 0
    capsys.readouterr()
    # BabyBear's p is below KoalaBear's: the files are valid KoalaBear points, whose transform differs
    assert main(["run", str(i), str(e), "--field", "koalabear", "--mismatches", "1"]) == 1
    out = capsys.readouterr().out
    assert "TEST FAILED" in out and f"{'Field':.<18} koalabear" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("  ["))
    computed, expected = line.split("computed ")[1].split(" expected ")
    assert len(computed) == len(expected.split()[0]) == 10        # 0x + 8 digits


def test_goldilocks_files_are_unchanged(tmp_path, capsys):
    """No --field: 16-digit text lines and 8-byte .bin points, as before; the report names Goldilocks."""
    i, e = tmp_path / "in.txt", tmp_path / "exp.bin"
    assert main(["points", "3", str(i), str(e)]) == 0
    assert raw(e, 16) == naive(raw(i, 16), "goldilocks")
    capsys.readouterr()
    assert main(["run", str(i), str(e)]) == 0
    assert f"{'Field':.<18} goldilocks (p = {2**64 - 2**32 + 1})" in capsys.readouterr().out


# -- readers ---------------------------------------------------------------------------------------------

def test_a_31_bit_reader_accepts_every_spelling_today_s_reader_does(tmp_path):
    f = tmp_path / "x.txt"
    f.write_bytes(b"\xef\xbb\xbf0x0000000000000001\r\n  77FFFFFF \n0X2a\n5\n\n")
    got = read_points(f, field="babybear")
    assert got.dtype == np.uint32 and got.tolist() == [1, 0x77FFFFFF, 42, 5]


@pytest.mark.parametrize("name", THIRTY_ONE)
def test_a_value_not_below_p_in_a_text_file_is_exit_2_naming_file_and_line(tmp_path, capsys, name):
    p = SPEC[name][0]
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    write_points(good, np.arange(4, dtype=np.uint32), name)
    bad.write_text(f"0x00000001\n0x00000002\n0x{p:08x}\n0x00000003\n")
    out = tmp_path / "out.txt"
    assert main(["run", str(bad), str(good), "--field", name, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert one_line(err, f"{bad}:3: value 0x{p:08x} is not below the field modulus p = 0x{p:08x} ({name})")
    assert not out.exists()
    # the same file as Goldilocks points is fine
    assert read_points(bad).tolist() == [1, 2, p, 3]


def test_a_value_not_below_p_in_binary_files_names_the_element(tmp_path, capsys):
    p = SPEC["babybear"][0]
    b, n64, e = tmp_path / "bad.bin", tmp_path / "bad.npy", tmp_path / "exp.bin"
    b.write_bytes(b"".join(v.to_bytes(4, "little") for v in [1, 2, 3, p]))
    np.save(n64, np.array([1, 1 << 32, 3, 4], dtype=np.uint64))      # would wrap to 0 as uint32
    write_points(e, np.arange(4, dtype=np.uint32), "babybear")
    for f, index, value in ((b, 3, p), (n64, 1, 1 << 32)):
        assert main(["run", str(f), str(e), "--field", "babybear"]) == 2
        assert one_line(capsys.readouterr().err, f"{f}: element {index}: value 0x{value:08x} is not below")


def test_a_uint64_npy_below_p_is_read_for_a_31_bit_field_and_uint32_is_not_for_goldilocks(tmp_path):
    f = tmp_path / "x.npy"
    np.save(f, np.array([5, 6, 7, 8], dtype=np.uint64))
    got = read_points(f, field="koalabear")
    assert got.dtype == np.uint32 and got.tolist() == [5, 6, 7, 8]
    np.save(f, np.array([5, 6, 7, 8], dtype=np.uint32))
    assert read_points(f, field="babybear").tolist() == [5, 6, 7, 8]
    with pytest.raises(PointFileError, match="holds dtype uint32; goldilocks point files hold uint64"):
        read_points(f)


def test_a_bin_file_of_a_31_bit_field_holds_4_byte_points(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"\0" * 6)
    with pytest.raises(PointFileError, match="6 bytes is not a whole number of 4-byte points"):
        read_points(f, field="babybear")
    f.write_bytes(b"\0" * 8)
    assert read_points(f, field="babybear").tolist() == [0, 0]


# -- argument refusals: exit 2, one line, nothing written ---------------------------------------------------

@pytest.mark.parametrize("argv_tail, needles", [
    (["--field", "babybare"], ["argument --field: unknown field 'babybare' (valid: goldilocks, goldilocks-plonky2, "
                               "babybear, koalabear)", "did you mean 'babybear'"]),
    (["--field", "babybear", "--coset", str(SPEC["babybear"][0])],
     ["--coset: the shift must satisfy 0 < g < p = 2013265921 (babybear)"]),
])
def test_bad_field_arguments_are_exit_2(tmp_path, capsys, argv_tail, needles):
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "3", str(i), str(e), *argv_tail]) == 2
    assert one_line(capsys.readouterr().err, *needles)
    assert not any(tmp_path.iterdir())
    assert main(["run", str(i), str(e), *argv_tail]) == 2
    assert one_line(capsys.readouterr().err, *needles)


def test_log_n_beyond_koalabear_s_two_adicity_is_exit_2_before_any_work(tmp_path, capsys):
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "25", str(i), str(e), "--field", "koalabear"]) == 2
    assert one_line(capsys.readouterr().err, "LOG_N: must be in 1..24 (a transform in koalabear has at most 2^24")
    assert not any(tmp_path.iterdir())


def test_a_4_lane_babybear_card_is_exit_2_before_reading_any_file(tmp_path, capsys):
    missing = tmp_path / "nothing-here.txt"
    assert main(["run", str(missing), str(missing), "--field", "babybear", "--backend", "sim", "--lanes", "4"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and one_line(err, "the HBM layout of babybear needs at least 8 lanes")


@pytest.mark.parametrize("argv, field", [
    (["rtl", "--component", "butterfly", "--field", "babybear", "-o", "b.v"], "babybear"),
    (["synth", "--component", "butterfly", "--field=goldilocks-plonky2"], "goldilocks-plonky2"),
])
def test_rtl_and_synth_pass_field_to_the_block(argv, field):
    # the block's factory gets field=NAME with its other parameters (hw/flow/catalog.py decides)
    assert build_parser().parse_args(argv).params == {"field": field}


@pytest.mark.parametrize("name", list(SPEC))
def test_make_points_gives_the_field_s_dtype_below_p(name):
    p = SPEC[name][0]
    for kind in ("random", "skewed", "linear"):
        x = make_points(10, kind, 1, name)
        assert x.dtype == (np.uint32 if name in THIRTY_ONE else np.uint64) and int(x.max()) < p
    assert np.array_equal(make_points(10, "random", 1), make_points(10, "random", 1, "goldilocks"))
