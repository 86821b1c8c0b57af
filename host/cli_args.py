"""What every `nantucket` subcommand shares: the usage error (exit 2) and argparse argument types."""

import argparse

__all__ = ["UsageError", "path_arg"]


class UsageError(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


def path_arg(text: str) -> str:
    """argparse type of a file argument: kept as given, since Path("") would silently mean the current
    directory and Path("out/") would drop the slash that says "a directory"."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text
