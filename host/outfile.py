"""Files the CLI writes: checked before any work starts, never clobbering, never left half-written.

The rules are those of careful command-line tools:

- the path is not empty, not a directory, and its directory exists and is writable;
- a symbolic link is followed: its target is written, the link itself stays;
- a character device or FIFO (``/dev/null``, a pipe, ``/dev/stdout``) is written through, never replaced;
  other special files (block devices, sockets) are refused;
- an existing read-only file is refused, and so is an output that is one of the command's own inputs;
- a regular file is written to a temporary file in its directory, fsynced and renamed into place; a new
  file gets the mode the user's umask allows, a replaced file keeps its mode.

:func:`check_output` raises :class:`OutputPathError` (a bad argument, exit 2 in the CLI);
:class:`OutputBatch` raises :class:`OutputWriteError` (an I/O failure while writing, exit 3).
"""

import os
import stat
import sys
import tempfile
from dataclasses import dataclass

__all__ = ["OutputPathError", "OutputWriteError", "OutputTarget", "check_output", "check_directory",
           "OutputBatch", "write_output"]


class OutputPathError(ValueError):
    """An output path that must not be written; the message is one line naming the path."""


class OutputWriteError(OSError):
    """Writing an output failed (full disk, I/O error); the message is one line naming the path."""


@dataclass(frozen=True)
class OutputTarget:
    """A checked output. ``shown`` is the path as given, ``path`` the file to write (links resolved),
    ``through`` says it is an existing special file written in place rather than replaced."""

    shown: str
    path: str
    through: bool = False


def _through_proc(path: str) -> bool:
    """True when the path is, or links to, a /proc or /dev/fd magic link (``/dev/stdout``): such a path
    names an open file of this process and is written through even when it is a regular file."""
    p = os.path.abspath(path)
    for _ in range(40):
        if p.startswith(("/proc/", "/dev/fd/")):
            return True
        try:
            link = os.readlink(p)
        except OSError:
            return False
        p = os.path.normpath(os.path.join(os.path.dirname(p), link))
    return False


def _writable(path: str) -> bool:
    """Writable by its mode as well as for this user: root may write anything, but a file or directory
    the user made read-only is not to be replaced (nor added to) by a tool."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    need = os.W_OK | (os.X_OK if stat.S_ISDIR(mode) else 0)
    return bool(mode & 0o222) and os.access(path, need)


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path, label: str, *, inputs=()) -> OutputTarget:
    """Check that ``path`` may be written as the output ``label`` (e.g. "--output"); ``inputs`` are
    (label, path) pairs of files the command reads or also writes, which the output must not be."""
    text = os.fspath(path)
    where = f"{label} {text}" if text else label
    if not text:
        raise OutputPathError(f"{label}: the path is empty")
    if text.endswith(os.sep):
        raise OutputPathError(f"{where}: names a directory, not a file")
    for other_label, other in inputs:
        if _same_file(text, os.fspath(other)):
            raise OutputPathError(f"{where}: is the {other_label} file {other}")
    try:
        st = os.stat(text)                      # follows links
    except FileNotFoundError:
        st = None
    except OSError as e:                        # ENOTDIR, EACCES, ELOOP, ...
        raise OutputPathError(f"{where}: {e.strerror or e}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise OutputPathError(f"{where}: is a directory")
        special = stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)
        if special or (stat.S_ISREG(st.st_mode) and _through_proc(text)):
            if not os.access(text, os.W_OK):
                raise OutputPathError(f"{where}: is not writable")
            return OutputTarget(text, text, through=True)
        if not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{where}: is neither a regular file nor a character device or pipe; "
                                  "refusing to write it")
        if not _writable(text):
            raise OutputPathError(f"{where}: is read-only")
    real = os.path.realpath(text)
    directory = os.path.dirname(real)
    if not os.path.isdir(directory):
        raise OutputPathError(f"{where}: directory {directory} does not exist")
    if not _writable(directory):
        raise OutputPathError(f"{where}: directory {directory} is not writable")
    return OutputTarget(text, real)


def check_directory(path, label: str) -> None:
    """Check that ``path`` is, or can be created as, a writable directory."""
    text = os.fspath(path)
    if not text:
        raise OutputPathError(f"{label}: the path is empty")
    probe = os.path.abspath(text)
    while not os.path.exists(probe):            # the nearest existing ancestor decides
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise OutputPathError(f"{label} {text}: {probe} is not a directory")
    if not _writable(probe):
        raise OutputPathError(f"{label} {text}: directory {probe} is not writable")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_all(fd: int, data) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view[: 1 << 26]):]


def _write_through(path: str, data) -> None:
    """Write into an existing device, pipe or open file. When it is this process's own stdout or stderr
    (``/dev/stdout``, even redirected to a file), write to that descriptor, so the bytes land where its
    other output does instead of at an offset of their own."""
    target = os.stat(path)
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            same = os.path.samestat(target, os.fstat(fd))
        except (AttributeError, OSError, ValueError):       # replaced or closed streams
            continue
        if same:
            stream.flush()
            _write_all(fd, data)
            return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass                                    # some filesystems cannot fsync a directory
    finally:
        os.close(fd)


class OutputBatch:
    """Outputs written all or nothing (as far as a filesystem allows): :meth:`add` writes each regular
    file to a fsynced temporary file beside it (special files are written through at once), :meth:`commit`
    renames them all into place, and :meth:`discard` (or leaving the ``with`` block by an exception)
    removes the temporary files. A file is therefore never left new beside an old partner."""

    def __init__(self):
        self._staged: list[tuple[str, OutputTarget]] = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.discard()
        return False

    def add(self, target: OutputTarget, data) -> None:
        """Write ``data`` (any bytes-like object) for ``target``."""
        try:
            if target.through:
                _write_through(target.path, data)
                return
            self._staged.append((self._stage(target, data), target))
        except OSError as e:
            self.discard()
            raise OutputWriteError(f"{target.shown}: cannot write: {e.strerror or e}") from e

    @staticmethod
    def _stage(target: OutputTarget, data) -> str:
        try:
            mode = stat.S_IMODE(os.stat(target.path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        directory, name = os.path.split(target.path)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
        try:
            try:
                _write_all(fd, data)
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            _unlink(tmp)
            raise
        return tmp

    def commit(self) -> None:
        staged, self._staged = self._staged, []
        try:
            while staged:
                tmp, target = staged[0]
                os.replace(tmp, target.path)
                staged.pop(0)
                _fsync_directory(os.path.dirname(target.path))
        except OSError as e:
            for tmp, _ in staged:
                _unlink(tmp)
            raise OutputWriteError(f"{target.shown}: cannot write: {e.strerror or e}") from e

    def discard(self) -> None:
        staged, self._staged = self._staged, []
        for tmp, _ in staged:
            _unlink(tmp)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_output(target: OutputTarget, data) -> None:
    """Write one checked output (see :class:`OutputBatch`)."""
    with OutputBatch() as batch:
        batch.add(target, data)
