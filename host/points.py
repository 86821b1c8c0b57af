"""Point files: the formats of docs/formats.md, read and written vectorized; the extension chooses.

Every reader and writer takes the prime field of the points (``field``: a name of hw.model.field.FIELDS
or a Field; default Goldilocks). A point takes the field's ``point_bits`` (64 for Goldilocks, 32 for the
31-bit fields BabyBear and KoalaBear):

- ``.bin``: raw little-endian uint64 (uint32 for a 31-bit field), N * 8 (N * 4) bytes, no header;
- ``.npy``: numpy's own format (``np.save``/``np.load``, never pickles), a 1-D uint64 array (uint32 for
  a 31-bit field, which also reads a uint64 array whose values are below its p);
- anything else: text, one point per line, written as ``0x`` + 16 lowercase hex digits + ``\\n`` (8 digits
  for a 31-bit field); N lines, no header. Readers accept the value with or without ``0x``, any case, blanks around it, CRLF line ends,
  trailing blank lines at the end of the file, and a UTF-8 byte order mark at its start (which some
  Windows editors add). Bytes shown in an error are escaped (``'\\xef0x12'``), never decoded.

In every format N is a power of two (or, for ``--batch B``, B times a power of two: the B transforms
points back to back), each transform at most 2^(the field's 2-adicity) points (2^32 Goldilocks, 2^27
BabyBear, 2^24 KoalaBear), and every value is below the field's p. Readers return the field's dtype
(``Field.dtype``: uint64, or uint32 for a 31-bit field); writers take uint64 arrays or arrays of that
dtype. Every error names the file and the line (text) or the element index (binary formats).

Sizes are checked before a file is read: a ``.bin`` file's size and a ``.npy`` file's header give its
points, which must fit the field and (host.memory) the machine's available memory together with what
reading takes; a ``.npy`` header that does not match the file's size is refused. A text file's points are
known only once it is read (a line may be 2 bytes or 2 kB), so its size is checked first for what the
fast reader takes and its line count before the general parser runs.

Files in the canonical fixed-width format (what :func:`write_points` produces and what the ZPrize
harness used) are parsed with whole-array numpy operations; a file that is not exactly in that form (a
padded line, a digit that is not hex) goes to the per-line parser, so both paths give the same values for
every file, and no value >= p passes either.
"""

import errno
import io
import os
import stat
from pathlib import Path

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.field import Field, TWO_ADICITY
from . import memory
from .outfile import check_output, write_output

__all__ = ["PointFileError", "FORMATS", "MAX_TRANSFORM_POINTS", "point_format", "read_points", "write_points", "encode_points",
           "format_point", "format_points"]

#: File formats by extension (lower case); any other extension is text.
FORMATS = {".bin": "bin", ".npy": "npy"}

#: The most points one Goldilocks transform can have: p - 1 = 2^32 (2^32 - 1) has roots of unity up to
#: 2^32 (another field's: 1 << field.two_adicity).
MAX_TRANSFORM_POINTS = 1 << TWO_ADICITY

_BOM = b"\xef\xbb\xbf"
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
# Peak bytes of the text readers beyond the file's bytes, measured with tracemalloc (2^20 lines): the
# fast path keeps 8 bytes per line (the values) plus a chunk's temporaries; the general parser a padded
# copy of the file and about 76 bytes per line (line bounds, digits, masks).
_FIXED_BYTES_PER_LINE = 10
_LOOSE_BYTES_PER_LINE = 80
_READER_BASE = 4 << 20

_CHUNK = 1 << 14                # rows per vectorized step: the temporaries of a step stay in the cache
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Each 16-bit value -> its 4 hex digits (most significant first) as the bytes of one little-endian uint32.
_w = np.arange(1 << 16)
_HEX4 = np.ascontiguousarray(np.stack([_HEX_DIGITS[(_w >> s) & 15] for s in (12, 8, 4, 0)], axis=1)
                             ).view("<u4").reshape(-1)
del _w
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

    def __init__(self, path, message, line: int | None = None, index: int | None = None):
        where = f"{path}:{line}" if line is not None else f"{path}"
        if index is not None:
            where += f": element {index}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line
        self.index = index


def point_format(path) -> str:
    """"bin", "npy" or "text", by the file's extension (any case)."""
    return FORMATS.get(Path(path).suffix.lower(), "text")


def _field(field) -> Field:
    return F.get(field, "field")


def _line_bytes(field: Field) -> int:
    """Bytes of a canonical text line: b"0x", the field's hex digits, b"\n" (19, or 11 for 31 bits)."""
    return field.hex_digits + 3


def format_point(value: int, field="goldilocks") -> str:
    return f"0x{value:0{_field(field).hex_digits}x}"


def _hex_p(field: Field) -> str:
    return f"0x{field.p:0{field.hex_digits}x} ({field.name})"


def _quoted(raw: bytes) -> str:
    """Bytes of a file as an error shows them: quoted, anything but printable ASCII escaped (\\xef),
    so a stray byte is seen as what it is rather than as mojibake."""
    return repr(bytes(raw))[1:]


def _parse_line(path, lineno: int, raw: bytes, field: Field = F.DEFAULT_FIELD) -> int:
    text = raw.strip()
    if not text:
        raise PointFileError(path, "empty line inside the point data", lineno)
    digits = text[2:] if text[:2] in (b"0x", b"0X") else text
    if not digits or len(digits) > 16 or any(_NIBBLE[c] == 255 for c in digits):
        more = "..." if len(text) > 40 else ""
        raise PointFileError(path, f"not a 64-bit hex value: {_quoted(text[:40])}{more}", lineno)
    value = int(digits, 16)
    if value >= field.p:
        raise _not_below_p(path, lineno, text.decode("ascii"), field)      # hex digits only: ASCII
    return value


def _not_below_p(path, lineno: int, shown: str, field: Field) -> PointFileError:
    return PointFileError(path, f"value {shown} is not below the field modulus p = {_hex_p(field)}", lineno)


def _check_count(path, n: int, batch: int = 1) -> None:
    if n == 0:
        raise PointFileError(path, "no points in file")
    per, rest = divmod(n, batch)
    if batch == 1 and n & (n - 1):
        raise PointFileError(path, f"{n} points is not a power of two")
    if rest or per & (per - 1) or per == 0:
        raise PointFileError(path, f"{n} points is not {batch} x 2^log_n (the --batch {batch} transforms of "
                                   "a power-of-two size, back to back)")


def _read_fixed(path, data: bytes, field: Field = F.DEFAULT_FIELD) -> np.ndarray | None:
    """Fast path for the field's canonical fixed-width format; None when the file is not exactly in it."""
    line = _line_bytes(field)
    digits = field.hex_digits
    if len(data) % line:
        return None
    rows = np.frombuffer(data, dtype=np.uint8).reshape(-1, line)
    values = np.empty(rows.shape[0], dtype=np.uint64)
    for start in range(0, rows.shape[0], _CHUNK):
        part = rows[start:start + _CHUNK]
        if not (np.all(part[:, 0] == ord("0")) and np.all(part[:, 1] | 0x20 == ord("x"))
                and np.all(part[:, line - 1] == ord("\n"))):
            return None
        packed = _PAIR[part[:, 2:2 + digits].view("<u2")]
        if packed.max() == _BAD_PAIR:
            return None             # padding or a bad digit: the per-line parser reads or refuses it
        # The digits // 2 bytes of each row, read as one big-endian uint64 (uint32).
        values[start:start + _CHUNK] = packed.astype(np.uint8).view(f">u{digits // 2}").reshape(-1)
    big = np.flatnonzero(values >= np.uint64(field.p))
    if big.size:
        at = int(big[0])
        raise _not_below_p(path, at + 1, rows[at, :line - 1].tobytes().decode("ascii"), field)
    return values


_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\r\x0b\x0c")] = True          # what bytes.strip() removes, besides the line's b"\n"
_MAX_BLANKS = 64


def _read_loose(path, data: bytes, field: Field = F.DEFAULT_FIELD) -> np.ndarray:
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
        return _read_lines(path, data, field)
    for _ in range(_MAX_BLANKS + 1):
        more = np.flatnonzero((last >= first) & _SPACE[pad[np.maximum(last, 0)]])
        if not more.size:
            break
        last[more] -= 1
    else:
        return _read_lines(path, data, field)
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
    bad |= values >= np.uint64(field.p)
    if bad.any():
        line = int(np.argmax(bad))
        _parse_line(path, line + 1, data[end[line - 1] + 1 if line else 0: end[line]], field)     # raises
        return _read_lines(path, data, field)       # never reached while the two parsers agree
    return values


def _read_lines(path, data: bytes, field: Field = F.DEFAULT_FIELD) -> np.ndarray:
    """The per-line parser: every accepted spelling; the reference the vectorized paths must agree with."""
    lines = data.split(b"\n")
    while lines and not lines[-1].strip():      # trailing newline(s) at the end of the file
        lines.pop()
    return np.fromiter((_parse_line(path, i + 1, raw, field) for i, raw in enumerate(lines)),
                       dtype=np.uint64, count=len(lines))


def _check_values(path, values: np.ndarray, field: Field) -> np.ndarray:
    big = np.flatnonzero(values >= values.dtype.type(field.p))
    if big.size:
        i = int(big[0])
        raise PointFileError(path, f"value 0x{int(values[i]):0{field.hex_digits}x} is not below the field "
                                   f"modulus p = {_hex_p(field)} ({big.size} of the {values.size} values are "
                                   f">= p)", index=i)
    return values


def _not_whole_points(path, size: int, field: Field) -> PointFileError:
    return PointFileError(path, f"{size} bytes is not a whole number of {field.point_bytes}-byte points "
                                f"(a {field.name} .bin file is raw little-endian uint{field.point_bits})")


def _read_bin(path, data: bytes, field: Field) -> np.ndarray:
    if len(data) % field.point_bytes:
        raise _not_whole_points(path, len(data), field)
    return _check_values(path, np.frombuffer(data, dtype=f"<u{field.point_bytes}").astype(field.dtype), field)


def _npy_header(path, f, file_size: int | None, field: Field) -> tuple[np.dtype, int]:
    """The dtype and point count of the .npy file open as ``f``, left at the start of its data; checked
    against the file's size (when it is a regular file) before anything else is read. np.load is not
    used: on a file that is not .npy it suggests unpickling, and a header that does not parse escapes it
    as tokenize or syntax errors."""
    magic = f.read(len(_NPY_MAGIC))
    if magic != _NPY_MAGIC:
        what = "a zip archive (.npz?)" if magic.startswith(_ZIP_MAGIC) else \
            "empty" if not magic else f"it starts with {_quoted(magic)}"
        raise PointFileError(path, f"not a .npy file (no NUMPY magic: {what})")
    f.seek(0)
    try:
        major, minor = np.lib.format.read_magic(f)
        read_header = {1: np.lib.format.read_array_header_1_0, 2: np.lib.format.read_array_header_2_0}.get(major)
        if read_header is None:
            raise ValueError(f"format version {major}.{minor} is not one this reader knows (1.0, 2.0)")
        shape, fortran_order, dtype = read_header(f)
    except Exception as e:          # ValueError, SyntaxError, tokenize.TokenError, EOFError, ...: numpy's own
        said = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)    # TokenError: (msg, pos)
        first = (said.splitlines() or [type(e).__name__])[0][:120]
        raise PointFileError(path, f"the .npy header does not parse ({first})") from None
    if dtype.hasobject or dtype.kind != "u" or dtype.itemsize not in (8, field.point_bytes):
        held = "uint64" if field.point_bytes == 8 else "uint32 (or uint64 below p)"
        raise PointFileError(path, f"holds dtype {dtype}; {field.name} point files hold {held}")
    if len(shape) != 1:
        raise PointFileError(path, f"holds an array of shape {shape}; point files are 1-D")
    n = int(shape[0])
    if file_size is not None:
        data = file_size - f.tell()
        if data != dtype.itemsize * n:
            raise PointFileError(path, f"the .npy header says {n} points ({dtype.itemsize * n} bytes) but the "
                                       f"file holds {data} bytes of data")
    return dtype, n


def _check_field(path, n: int, batch: int, field: Field) -> None:
    """Refuse a file of more points than ``batch`` transforms of the field's largest size, naming it."""
    s = field.two_adicity
    if n > batch << s:
        most = f"{batch} x 2^{s}" if batch > 1 else f"2^{s}"
        raise PointFileError(path, f"holds {n} points, more than {most} (a transform in {field.name} has at "
                                   f"most 2^{s} points)")


def _check_memory(path, need: int, what: str) -> None:
    """Refuse a file whose reading (``need`` bytes at the peak) would not fit in the machine's
    available memory, naming the file."""
    try:
        memory.check_fits(need + _READER_BASE, what)
    except memory.MemoryTooSmall as e:
        raise PointFileError(path, str(e)) from None


def _read_npy(path, batch: int, file_size: int | None, field: Field) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            dtype, n = _npy_header(path, f, file_size, field)
            _check_field(path, n, batch, field)
            # the array, a >= p mask and the copy in the field's dtype
            _check_memory(path, (2 * dtype.itemsize + 1) * n, f"reading its {n} points")
            if file_size is not None:
                arr = np.fromfile(f, dtype=dtype, count=n)
            else:                                   # a pipe or device: np.fromfile wants a seekable file
                arr = np.frombuffer(bytearray(f.read(dtype.itemsize * n)), dtype=dtype)
    except OSError as e:
        raise PointFileError(path, e.strerror or str(e)) from e
    if arr.size != n:
        raise PointFileError(path, f"the .npy header says {n} points but the file ends after {arr.size}")
    # checked before the conversion: a uint64 value >= 2^32 must not wrap into a 31-bit field's range
    return _check_values(path, arr, field).astype(field.dtype, copy=False)


def _regular_size(path) -> int | None:
    """The size of a regular file (None for a pipe or device, whose size says nothing)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise PointFileError(path, e.strerror or str(e)) from e
    if stat.S_ISDIR(st.st_mode):
        raise PointFileError(path, os.strerror(errno.EISDIR))
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def read_points(path, batch: int = 1, field="goldilocks") -> np.ndarray:
    """Read a point file of ``field`` (format by extension) into a canonical array of ``batch`` x 2^log_n
    points (the rows of a batch back to back) of the field's dtype (uint64, or uint32 for a 31-bit
    field); raises PointFileError naming the file and the line (text) or element index (binary)."""
    field = _field(field)
    path = Path(path)
    kind = point_format(path)
    size = _regular_size(path)
    if kind == "npy":
        values = _read_npy(path, batch, size, field)
    else:
        if size is not None:
            if kind == "bin":
                width = field.point_bytes
                if size % width:
                    raise _not_whole_points(path, size, field)
                _check_field(path, size // width, batch, field)
                # the file's bytes, their copy and a >= p mask
                _check_memory(path, 2 * size + size // width, f"reading its {size // width} points")
            else:
                # at the least (canonical lines): the bytes and the fast reader's values
                _check_memory(path, size + _FIXED_BYTES_PER_LINE * (size // _line_bytes(field)),
                              f"reading its {size} bytes")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise PointFileError(path, e.strerror or str(e)) from e
        if kind == "bin":
            values = _read_bin(path, data, field)
        else:
            if data.startswith(_BOM):
                data = data[len(_BOM):]
            values = _read_fixed(path, data, field)
            if values is None:
                lines = data.count(b"\n") + 1
                _check_memory(path, 2 * len(data) + _LOOSE_BYTES_PER_LINE * lines, f"parsing its {lines} lines")
                values = _read_loose(path, data, field)
            _check_field(path, values.shape[0], batch, field)
            values = values.astype(field.dtype, copy=False)
    _check_count(path, values.shape[0], batch)
    return values


def _checked(values, field: Field) -> np.ndarray:
    """A 1-D array of canonical points of ``field`` in the field's file dtype (``<u8`` or ``<u4``)."""
    values = np.asarray(values)
    if values.dtype != np.uint64 and values.dtype != field.dtype:
        raise TypeError(f"values: expected a uint64{'' if field.dtype == np.uint64 else ' or uint32'} array, "
                        f"got {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"values: expected a 1-D array, got shape {values.shape}")
    if values.size and values.max() >= field.p:
        raise ValueError(f"values: index {int(np.argmax(values >= values.dtype.type(field.p)))} is not a "
                         f"canonical point of {field.name}")
    return np.ascontiguousarray(values, dtype=f"<u{field.point_bytes}")


def format_points(values, field="goldilocks") -> np.ndarray:
    """The canonical text of a point file, as a uint8 array (bytes-like); values must be canonical."""
    field = _field(field)
    values = _checked(values, field)
    n, digits, line = values.shape[0], field.hex_digits, _line_bytes(field)
    rows = np.empty((n, line), dtype=np.uint8)
    rows[:, 0] = ord("0")
    rows[:, 1] = ord("x")
    rows[:, line - 1] = ord("\n")
    # The 16-bit words of each value, most significant first, each looked up as its 4 hex digits.
    words = values.view("<u2").reshape(n, digits // 4)[:, ::-1]
    for start in range(0, n, _CHUNK):
        rows[start:start + _CHUNK, 2:2 + digits] = (_HEX4[words[start:start + _CHUNK]].view(np.uint8)
                                                    .reshape(-1, digits))
    return rows.reshape(-1)


def encode_points(path, values, field="goldilocks"):
    """The bytes (a bytes-like object) of a point file of ``field`` in the format ``path``'s extension
    chooses."""
    field = _field(field)
    kind = point_format(path)
    values = _checked(values, field)
    if kind == "bin":
        return values.view(np.uint8)
    if kind == "npy":
        buf = io.BytesIO()
        np.save(buf, values, allow_pickle=False)
        return buf.getbuffer()
    return format_points(values, field)


def write_points(path, values, field="goldilocks") -> None:
    """Write points of ``field`` in the format the extension chooses, with the rules of host.outfile:
    checked path, a temporary file renamed into place (or written through a device or pipe), never a
    clobbered link or input."""
    data = encode_points(path, values, field)
    write_output(check_output(path, "output"), data)
