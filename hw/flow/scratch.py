"""Scratch directories and child processes that a killed run cannot leave behind.

- :func:`scratch_dir` makes ``<parent>/<prefix><pid>-<random>``: the owner's pid is in the name, so
  the next process to make one with that prefix removes those whose owner is dead (a ``kill -9`` runs
  no cleanup code; the sweep is what guarantees nothing is left for long).
- :func:`run_guarded` runs a command (Verilator, make, the simulator) in its own process group under a
  small watchdog that kills the whole group when this process dies, however it dies (Linux
  ``PR_SET_PDEATHSIG`` plus a poll of the parent pid); an exception here (Ctrl-C) kills the group too.
- :func:`exit_on_termination` turns SIGTERM/SIGHUP into SystemExit in the main thread, so ``finally``
  blocks and ``close()`` methods run on a polite kill as they do on Ctrl-C.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["scratch_dir", "sweep_stale", "pid_alive", "run_guarded", "kill_group", "exit_on_termination"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove ``parent/<prefix><pid>-*`` entries whose owner process is dead; returns what was removed."""
    removed = []
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if not m or int(m.group(1)) == os.getpid() or pid_alive(int(m.group(1))):
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def scratch_dir(prefix: str, parent: Path | str | None = None) -> tempfile.TemporaryDirectory:
    """A TemporaryDirectory ``<parent>/<prefix><pid>-<random>`` (parent: the system temp directory),
    made after sweeping the dead owners' directories of the same prefix."""
    parent = Path(parent if parent is not None else tempfile.gettempdir())
    sweep_stale(parent, prefix)
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-", dir=parent)


#: Runs in a fresh ``python -I``: argv = [parent pid, command...]. It leads its own process group,
#: asks the kernel for SIGTERM when its parent dies, and then kills the whole group.
_WATCHDOG = r"""
import ctypes, os, signal, subprocess, sys, threading, time
parent = int(sys.argv[1])
def kill_group(*_):
    os.killpg(0, signal.SIGKILL)
for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(sig, kill_group)
try:
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)          # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
def watch():
    while True:
        if os.getppid() != parent:
            kill_group()
        time.sleep(0.5)
threading.Thread(target=watch, daemon=True).start()
rc = subprocess.Popen(sys.argv[2:]).wait()
sys.exit(rc if rc >= 0 else 128 - rc)
"""


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group led by ``proc`` (started by :func:`run_guarded`) and reap ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_guarded(cmd, *, cwd=None, env=None, stdout=None, stderr=None) -> int:
    """Run ``cmd`` to completion in its own process group that dies with this process; its exit code
    (128 + n when signal n killed it). Any exception while waiting (KeyboardInterrupt, SystemExit)
    kills the whole group before it propagates."""
    proc = subprocess.Popen([sys.executable, "-I", "-c", _WATCHDOG, str(os.getpid()), *map(str, cmd)],
                            cwd=cwd, env=env, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        # Wait without reaping: while the watchdog is a zombie its pid (the group id) cannot be reused,
        # so killing the group afterwards only reaches what it left behind.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    except BaseException:
        kill_group(proc)
        raise
    kill_group(proc)
    return proc.returncode


def _raise_exit(signum, _frame):
    raise SystemExit(128 + signum)


def exit_on_termination() -> None:
    """In the main thread, make SIGTERM and SIGHUP raise SystemExit (only where nobody installed a
    handler), so the cleanup that Ctrl-C gets runs on a polite kill too."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _raise_exit)
