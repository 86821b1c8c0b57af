"""How much memory this machine can give a piece of work, checked before the work starts.

The kernel's out-of-memory killer ends a process without a word; a size that cannot fit is refused
up front instead, as a bad parameter, naming what needed the memory.
"""

import os

__all__ = ["MemoryTooSmall", "available_bytes", "check_fits", "format_bytes"]


class MemoryTooSmall(ValueError):
    """The work would need more memory than the machine has available; a one-line message."""


def available_bytes() -> int | None:
    """Memory the kernel can give without swapping (MemAvailable), else the free physical pages;
    None when neither can be read."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def format_bytes(n: int) -> str:
    """1536 -> "1.5 KiB"; exact below 1 KiB."""
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")


def check_fits(nbytes: int, what: str) -> None:
    """Raise MemoryTooSmall naming ``what`` when ``nbytes`` would not fit in the available memory
    (nothing is checked when the machine does not say what it has)."""
    free = available_bytes()
    if free is not None and nbytes > free:
        raise MemoryTooSmall(f"{what}: needs about {format_bytes(nbytes)} of memory, more than the "
                             f"{format_bytes(free)} this machine has available")
