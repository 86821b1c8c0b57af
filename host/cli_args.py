"""What every `nantucket` subcommand shares: the usage error (exit 2) and argparse argument types."""

import argparse

from nantucket.hw.model.field import P

__all__ = ["UsageError", "Parser", "path_arg", "convert_param", "coset_arg", "order_arg", "batch_arg", "int_arg",
           "order_text"]


class UsageError(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


def path_arg(text: str) -> str:
    """argparse type of a file argument: kept as given, since Path("") would silently mean the current
    directory and Path("out/") would drop the slash that says "a directory"."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def coset_arg(text: str) -> int:
    """argparse type of --coset: a shift g, decimal or 0x hex, with 0 < g < p."""
    try:
        g = int(text[2:], 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a decimal or 0x-hex shift g with 0 < g < p, got {text!r}") \
            from None
    if not 0 < g < P:
        raise argparse.ArgumentTypeError(f"the shift must satisfy 0 < g < p = 2^64 - 2^32 + 1, got {text}")
    return g


_ORDER_LETTER = {"nat": "n", "rev": "r"}


def order_arg(text: str) -> str:
    """argparse type of --order ``in=nat|rev,out=nat|rev`` (either part may be left out: natural):
    the API's order string, input then output ("nn", "nr", "rn", "rr")."""
    got = {"in": "n", "out": "n"}
    seen = set()
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or key not in got or value not in _ORDER_LETTER or key in seen:
            raise argparse.ArgumentTypeError(f"expected in=nat|rev,out=nat|rev (each part at most once), "
                                             f"got {text!r}")
        seen.add(key)
        got[key] = _ORDER_LETTER[value]
    return got["in"] + got["out"]


def order_text(order: str) -> str:
    """The --order spelling of an API order string: "nr" -> "in=nat,out=rev"."""
    names = {"n": "nat", "r": "rev"}
    return f"in={names[order[0]]},out={names[order[1]]}"


def int_arg(minimum: int, what: str):
    """An argparse type: an int >= ``minimum``, the error naming ``what`` it is."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value
    return parse


#: argparse type of --batch: B >= 1 transforms.
batch_arg = int_arg(1, "a number of transforms B >= 1")


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
