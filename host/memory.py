"""Refuse a size the machine cannot hold before allocating it.

A transform or a file that does not fit in memory would otherwise end in a
MemoryError traceback or, worse, in the kernel's out-of-memory killer with no
message at all.  `check_fits` is called with an honest estimate of what an
operation allocates, before any of it is allocated.
"""

import os

__all__ = ["MemoryTooSmall", "available_bytes", "check_fits", "format_bytes"]


class MemoryTooSmall(ValueError):
    """The operation needs more memory than the machine has available."""


def _meminfo_available():
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    fields = line.split()
                    scale = 1024 if fields[2:3] == ["kB"] else 1
                    return int(fields[1]) * scale
    except (OSError, ValueError, IndexError):
        pass
    return None


def _sysconf_available():
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        page_size = os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None
    if pages <= 0 or page_size <= 0:
        return None
    return pages * page_size


def _cgroup_available():
    """What a cgroup v2 memory limit still allows (a container's OOM killer
    acts on it, not on the machine's MemAvailable)."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as f:
            current = int(f.read().strip())
        return max(int(limit) - current, 0)
    except (OSError, ValueError):
        return None


def available_bytes():
    """Bytes this process can still allocate, or None when it cannot be told."""
    machine = _meminfo_available()
    if machine is None:
        machine = _sysconf_available()
    cgroup = _cgroup_available()
    known = [n for n in (machine, cgroup) if n is not None]
    return min(known) if known else None


def format_bytes(nbytes):
    """1536 -> '1.5 KiB'; people read sizes, not byte counts."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def check_fits(nbytes: int, what: str) -> None:
    """Raise MemoryTooSmall when `what` (e.g. "lde of 2^31 points") needs
    `nbytes` and the machine has less available.  Does nothing when the
    available memory cannot be read."""
    available = available_bytes()
    if available is not None and nbytes > available:
        raise MemoryTooSmall(
            f"{what} needs {format_bytes(nbytes)} of memory, "
            f"this machine has {format_bytes(available)} available")
