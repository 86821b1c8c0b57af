"""What every `nantucket` subcommand shares: the usage error (exit 2) and argparse argument types."""

import argparse

__all__ = ["UsageError", "Parser", "path_arg", "convert_param"]


class UsageError(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


def path_arg(text: str) -> str:
    """argparse type of a file argument: kept as given, since Path("") would silently mean the current
    directory and Path("out/") would drop the slash that says "a directory"."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def convert_param(text: str):
    """A block parameter's value: ints (any base prefix), floats and true/false converted, else text."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (lambda s: int(s, 0), float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (UsageError, exit 2). With ``absorbs_params`` set (the ``rtl`` and
    ``synth`` subcommands), leftover ``--name value`` options become ``namespace.params`` (a block's
    constructor arguments, values converted by :func:`convert_param`)."""

    absorbs_params = False

    def error(self, message):
        raise UsageError(message)

    def parse_known_args(self, args=None, namespace=None):
        ns, rest = super().parse_known_args(args, namespace)
        if not self.absorbs_params:
            return ns, rest
        params = dict(getattr(ns, "params", None) or {})
        left = []
        i = 0
        while i < len(rest):
            tok = rest[i]
            if tok.startswith("--") and len(tok) > 2:
                key, eq, val = tok[2:].partition("=")
                if not eq:
                    if i + 1 >= len(rest):
                        self.error(f"--{key}: expected a value")
                    val = rest[i + 1]
                    i += 1
                params[key.replace("-", "_")] = convert_param(val)
            else:
                left.append(tok)
            i += 1
        ns.params = params
        return ns, left
