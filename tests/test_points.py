"""Point files: round trip, accepted variants, and every bad-input case with file and line."""

import numpy as np
import pytest

from nantucket.hw.model.field import P
from nantucket.host.points import PointFileError, read_points, write_points
from nantucket.host.workloads import KINDS, make_points


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
    import nantucket.host.outfile as outfile_module

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


# -- property test: every accepted spelling means its value, through every reader path ----------------

_EDGES = [0, 1, 2, P - 1, P - 2, 2**32, 2**32 - 1, 2**63, P - 2**32, 0xFFFFFFFF00000000]


def _pick(rng, choices):
    """One of choices (not rng.choice, whose numpy strings drop a trailing NUL)."""
    return choices[int(rng.integers(0, len(choices)))]


def _values(rng, n):
    v = rng.integers(0, P, n, dtype=np.uint64)
    picks = rng.random(n) < 0.3
    v[picks] = rng.choice(np.array(_EDGES, dtype=np.uint64), int(picks.sum()))
    return v


def _digits(rng, value: int) -> str:
    """Hex digits of value with a random number of leading zeros (none up to 16 digits) in random case."""
    text = f"{value:x}"
    text = "0" * int(rng.integers(0, 17 - len(text))) + text
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)


def _spelling(rng, value: int, width: int | None) -> str:
    body = _pick(rng, ["0x", "0X", ""]) + _digits(rng, value)
    if width is not None:                       # space padding to a fixed width (the fast path's size)
        pad = " " * (width - len(body))
        return pad + body if rng.random() < 0.5 else body + pad
    return " \t"[int(rng.integers(0, 2))] * int(rng.integers(0, 3)) + body + " " * int(rng.integers(0, 3))


def _valid_file(rng, values) -> bytes:
    """A random valid spelling of values; about half of the files have every line exactly 19 bytes."""
    if rng.random() < 0.15:                     # the fast path's own form, in random case
        return b"".join(b"%s%s\n" % (_pick(rng, [b"0x", b"0X"]), _digits(rng, int(v)).rjust(16, "0").encode())
                        for v in values)
    fixed = rng.random() < 0.35
    crlf = rng.random() < 0.3 and not fixed
    lines = [_spelling(rng, int(v), 18 if fixed else None) for v in values]
    ends = ["\r\n" if crlf or rng.random() < 0.1 and not fixed else "\n" for _ in lines]
    text = "".join(line + end for line, end in zip(lines, ends))
    if not fixed and rng.random() < 0.3:
        text = text.rstrip("\n") if rng.random() < 0.5 else text + "\n \n\r\n"
    return text.encode()


def _read_every_path(path, data):
    """What each reader path makes of data: the fixed-width fast path (None when it declines), the
    vectorized parser of every spelling, and the per-line reference parser."""
    import nantucket.host.points as points_module
    return (points_module._read_fixed(path, data), points_module._read_loose(path, data),
            points_module._read_lines(path, data))


def test_every_valid_spelling_reads_as_its_value(tmp_path):
    rng = np.random.default_rng(2024)
    f = tmp_path / "v.txt"
    fast_hits = 0
    for case in range(400):
        values = _values(rng, 1 << int(rng.integers(0, 6)))
        data = _valid_file(rng, values)
        f.write_bytes(data)
        assert np.array_equal(read_points(f), values), (case, data[:200])
        fast, loose, slow = _read_every_path(f, data)
        assert np.array_equal(slow, values) and np.array_equal(loose, values), (case, data[:200])
        if fast is not None:
            fast_hits += 1
            assert np.array_equal(fast, values), (case, data[:200])
    assert fast_hits > 20           # the fast path was exercised, not only the general parsers


def test_padded_fixed_width_lines_are_read_as_written(tmp_path):
    """The case that the fast path once misread: 19-byte lines of '0x%-16x\\n' (blanks became f)."""
    f = tmp_path / "pad.txt"
    f.write_bytes(b"".join(b"0x%-16x\n" % v for v in (0x1234, 1, 0, P - 1)))
    assert read_points(f).tolist() == [0x1234, 1, 0, P - 1]


def _corrupt(rng, line: str) -> str:
    """An invalid spelling in place of a valid line."""
    kind = int(rng.integers(0, 8))
    if kind == 0:                               # a value >= p, written canonically (the fast path's width)
        return f"0x{int(rng.integers(P, 2**64, dtype=np.uint64)):016x}"
    if kind == 1:                               # a value >= p in a loose spelling
        return " 0X" + f"{int(rng.integers(P, 2**64, dtype=np.uint64)):X}"
    if kind == 2:                               # more than 64 bits
        return "0x1" + "0" * 16
    if kind == 3:                               # a bad character inside the value (padding stays padding)
        token = line.strip()
        pos = int(rng.integers(1, len(token)))
        return line.replace(token, token[:pos] + _pick(rng, "gG_-+ \tz.\x00") + token[pos:])
    if kind == 4:
        return _pick(rng, ["0x", "0X", "x", "-1", "+1", "0x-1", "0x0x1", "1.5", "0o7", "0x 1"])
    if kind == 5:                               # a blank line inside the data
        return " " * int(rng.integers(0, 3))
    if kind == 6 and len(line) == 18 and line == line.strip():     # "0x" + 16 digits, one made non-hex
        pos = int(rng.integers(2, 17))
        return line[:pos] + _pick(rng, "g \t") + line[pos + 1:]
    return "0x" + "\u0661" * 2                  # non-ASCII digits that int() would take


def test_every_invalid_spelling_is_refused_with_file_and_line(tmp_path):
    import nantucket.host.points as points_module
    rng = np.random.default_rng(7)
    f = tmp_path / "bad.txt"
    for case in range(400):
        n = 1 << int(rng.integers(1, 6))
        values = _values(rng, n)
        loose = rng.random() < 0.5              # else canonical lines around the bad one
        lines = [_spelling(rng, int(v), None) if loose else f"0x{int(v):016x}" for v in values]
        bad = int(rng.integers(0, n - 1))       # never the last line: a blank one there is allowed
        lines[bad] = _corrupt(rng, lines[bad])
        end = "\r\n" if loose and rng.random() < 0.5 else "\n"
        data = (end.join(lines) + end).encode("utf-8")
        f.write_bytes(data)
        messages = []
        for reader in (read_points, lambda p: points_module._read_loose(p, data),
                       lambda p: points_module._read_lines(p, data)):
            with pytest.raises(PointFileError) as e:
                reader(f)
            messages.append(str(e.value))
        msg = messages[0]
        assert msg.startswith(f"{f}:{bad + 1}: ") and "\n" not in msg, (case, lines[bad], msg)
        assert messages[1] == messages[2] == msg


def test_long_runs_of_blanks_read_like_short_ones(tmp_path):
    f = tmp_path / "wide.txt"
    f.write_bytes(b" " * 1000 + b"0x5\r\n" + b"7" + b"\t" * 500 + b"\n\n" + b" " * 300 + b"\n")
    assert read_points(f).tolist() == [5, 7]
    f.write_bytes(b" " * 1000 + b"0x5\n" + b" " * 200 + b"0x 7\n")
    with pytest.raises(PointFileError, match=f"^{f}:2: not a 64-bit hex value"):
        read_points(f)
