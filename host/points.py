"""Point files: the text format of docs/formats.md, read and written vectorized.

One point per line, written as ``0x`` + 16 lowercase hex digits + ``\\n``; N lines, N a power of two,
no header. Readers accept the value with or without ``0x``, any case, CRLF line ends, and trailing blank
lines at the end of the file. Every error names the file and the line.

Files in the canonical fixed-width format (what :func:`write_points` produces and what the ZPrize
harness used) are parsed with whole-array numpy operations; a file that is not exactly in that form (a
padded line, a digit that is not hex) goes to the per-line parser, so both paths give the same values for
every file, and no value >= p passes either.
"""

from pathlib import Path

import numpy as np

from hw.model.field import P
from .outfile import check_output, write_output

__all__ = ["PointFileError", "read_points", "write_points", "format_point", "format_points"]

_LINE = 19                      # b"0x" + 16 digits + b"\n"
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i
# Two hex digits read as one little-endian uint16 (first digit in the low byte) -> their byte value, or
# _BAD_PAIR when either is not a hex digit: the fast path looks up 8 pairs per line instead of 16 digits.
_BAD_PAIR = 0xFFFF
_first, _second = np.arange(1 << 16) & 0xFF, np.arange(1 << 16) >> 8
_PAIR = np.where((_NIBBLE[_first] == 255) | (_NIBBLE[_second] == 255), _BAD_PAIR,
                 (_NIBBLE[_first].astype(np.uint16) << 4) | _NIBBLE[_second]).astype(np.uint16)
del _first, _second


class PointFileError(ValueError):
    """A point file that cannot be used; the message is one line naming the file (and line)."""

    def __init__(self, path, message, line: int | None = None):
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line


def format_point(value: int) -> str:
    return f"0x{value:016x}"


def _parse_line(path, lineno: int, raw: bytes) -> int:
    text = raw.strip()
    if not text:
        raise PointFileError(path, "empty line inside the point data", lineno)
    digits = text[2:] if text[:2] in (b"0x", b"0X") else text
    shown = text[:40].decode("ascii", "replace")
    if not digits or len(digits) > 16 or any(_NIBBLE[c] == 255 for c in digits):
        raise PointFileError(path, f"not a 64-bit hex value: {shown!r}", lineno)
    value = int(digits, 16)
    if value >= P:
        raise _not_below_p(path, lineno, shown)
    return value


def _not_below_p(path, lineno: int, shown: str) -> PointFileError:
    return PointFileError(path, f"value {shown} is not below the field modulus p = 0x{P:016x}", lineno)


def _check_count(path, n: int) -> None:
    if n == 0:
        raise PointFileError(path, "no points in file")
    if n & (n - 1):
        raise PointFileError(path, f"{n} points is not a power of two")


def _read_fixed(path, data: bytes) -> np.ndarray | None:
    """Fast path for the canonical fixed-width format; None when the file is not exactly in it."""
    if len(data) % _LINE:
        return None
    rows = np.frombuffer(data, dtype=np.uint8).reshape(-1, _LINE)
    if not (np.all(rows[:, 0] == ord("0")) and np.all(rows[:, 1] | 0x20 == ord("x"))
            and np.all(rows[:, 18] == ord("\n"))):
        return None
    packed = _PAIR[rows[:, 2:18].view("<u2")]
    if packed.size and packed.max() == _BAD_PAIR:
        return None                 # padding or a bad digit: the per-line parser reads or refuses it
    # The 8 bytes of each row, read as one big-endian uint64.
    values = packed.astype(np.uint8).view(">u8").reshape(-1).astype(np.uint64)
    big = np.flatnonzero(values >= np.uint64(P))
    if big.size:
        line = int(big[0])
        raise _not_below_p(path, line + 1, rows[line, :18].tobytes().decode("ascii"))
    return values


_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\r\x0b\x0c")] = True          # what bytes.strip() removes, besides the line's b"\n"
_MAX_BLANKS = 64


def _read_loose(path, data: bytes) -> np.ndarray:
    """Every accepted spelling (padding, CRLF, no 0x, any case, dropped leading zeros), vectorized: the
    lines and their stripped tokens are those of :func:`_read_lines`, which reports the first bad line."""
    flat = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(flat == ord("\n"))
    first = np.concatenate(([0], breaks + 1))       # each line is flat[first : end]
    end = np.concatenate((breaks, [flat.size]))
    pad = np.append(flat, np.uint8(ord("\n")))     # a non-space sentinel at flat.size
    last = end - 1
    # Strip blanks one column per step (padding, the \r of CRLF); lines with a long run of blanks are
    # left to the per-line parser rather than taking a step per blank.
    for _ in range(_MAX_BLANKS + 1):
        more = np.flatnonzero(_SPACE[pad[first]] & (first < end))
        if not more.size:
            break
        first[more] += 1
    else:
        return _read_lines(path, data)
    for _ in range(_MAX_BLANKS + 1):
        more = np.flatnonzero((last >= first) & _SPACE[pad[np.maximum(last, 0)]])
        if not more.size:
            break
        last[more] -= 1
    else:
        return _read_lines(path, data)
    filled = np.flatnonzero(last >= first)
    n = int(filled[-1]) + 1 if filled.size else 0   # trailing blank lines are not points
    first, last = first[:n], last[:n]
    prefixed = ((last - first >= 1) & (pad[first] == ord("0"))
                & (pad[np.minimum(first + 1, flat.size)] | 0x20 == ord("x")))
    digits = last + 1 - (first + 2 * prefixed)
    bad = (digits < 1) | (digits > 16)
    values = np.zeros(n, dtype=np.uint64)
    for j in range(16):                             # the j-th digit from the right, where there is one
        has = j < digits
        nib = _NIBBLE[pad[np.where(has, last - j, flat.size)]]
        bad |= has & (nib == 255)
        values |= np.where(has & (nib != 255), nib, 0).astype(np.uint64) << np.uint64(4 * j)
    bad |= values >= np.uint64(P)
    if bad.any():
        line = int(np.argmax(bad))
        _parse_line(path, line + 1, data[end[line - 1] + 1 if line else 0: end[line]])     # raises
        return _read_lines(path, data)              # never reached while the two parsers agree
    return values


def _read_lines(path, data: bytes) -> np.ndarray:
    """The per-line parser: every accepted spelling; the reference the vectorized paths must agree with."""
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():      # trailing newline(s) at the end of the file
        lines.pop()
    return np.fromiter((_parse_line(path, i + 1, raw) for i, raw in enumerate(lines)),
                       dtype=np.uint64, count=len(lines))


def read_points(path) -> np.ndarray:
    """Read a point file into a canonical uint64 array; raises PointFileError naming file and line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise PointFileError(path, e.strerror or str(e)) from e
    values = _read_fixed(path, data)
    if values is None:
        values = _read_loose(path, data)
    _check_count(path, values.shape[0])
    return values


def format_points(values) -> np.ndarray:
    """The canonical text of a point file, as a uint8 array (bytes-like); values must be canonical."""
    values = np.asarray(values)
    if values.dtype != np.uint64:
        raise TypeError(f"values: expected a uint64 array, got {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"values: expected a 1-D array, got shape {values.shape}")
    if values.size and values.max() >= np.uint64(P):
        raise ValueError(f"values: index {int(np.argmax(values >= np.uint64(P)))} is not a canonical point")
    rows = np.empty((values.shape[0], _LINE), dtype=np.uint8)
    rows[:, 0] = ord("0")
    rows[:, 1] = ord("x")
    rows[:, 18] = ord("\n")
    # Each value's 8 big-endian bytes, each byte split into its two hex digits.
    be = values.astype(">u8").view(np.uint8).reshape(-1, 8)
    rows[:, 2:18:2] = _HEX_DIGITS[be >> 4]
    rows[:, 3:18:2] = _HEX_DIGITS[be & 15]
    return rows.reshape(-1)


def write_points(path, values) -> None:
    """Write points in the canonical format with the rules of host.outfile: checked path, a temporary
    file renamed into place (or written through a device or pipe), never a clobbered link or input."""
    data = format_points(values)
    write_output(check_output(path, "output"), data)
