"""What every `nantucket` subcommand shares: the usage error (exit 2), argparse argument types and the
report's way to stdout (:func:`say`), which a closed pipe does not interrupt."""

import argparse
import os
import re
import sys

from nantucket.hw.model import field as F
from nantucket.hw.model.field import P
from nantucket.hw.model.run import coset_shift_ok

__all__ = ["UsageError", "Parser", "path_arg", "convert_param", "coset_arg", "check_coset", "field_arg", "order_arg",
           "batch_arg", "blowup_arg", "axis_arg", "ext_arg", "int_arg", "order_text", "say", "flush_stdout"]

# What the help promises: ASCII decimal digits, or 0x and hex digits. int() also takes signs, blanks,
# underscores ("1_000") and the digits of every script ("٧"), none of which the help mentions.
_DECIMAL = re.compile(r"[0-9]+")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")


def say(line: str) -> None:
    """Print one line of a command's report on stdout, now. When the reader has gone (``| head -1``,
    ``| true``), the rest of the report is dropped without a word and the command carries on to its own
    exit status: stdout is pointed at the null device, which also keeps the interpreter's flush at exit
    from printing "Exception ignored ... BrokenPipeError" (the recipe of Python's signal docs)."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        _stdout_to_devnull()


def flush_stdout() -> None:
    """Flush stdout (argparse's --help and --version write without flushing), quietly if it is closed."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()


def _stdout_to_devnull() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):   # a stdout that is no file descriptor: replace it
        sys.stdout = open(os.devnull, "w")
    finally:
        os.close(devnull)


class UsageError(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


def path_arg(text: str) -> str:
    """argparse type of a file argument: kept as given, since Path("") would silently mean the current
    directory and Path("out/") would drop the slash that says "a directory"."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def field_arg(text: str) -> F.Field:
    """argparse type of --field: a preset's name (hw.model.field.FIELDS); an unknown one names them all."""
    try:
        return F.get(text, "field")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("field: ")) from None


def check_coset(g: int | None, field: F.Field) -> None:
    """--coset against the field's p (coset_arg checked it against the largest field's, Goldilocks')."""
    if g is not None and not coset_shift_ok(g, field.p):
        raise UsageError(f"--coset: the shift must satisfy 0 < g < p = {field.p} ({field.name}), got {g}")


def coset_arg(text: str) -> int:
    """argparse type of --coset: a shift g, decimal or 0x hex, with 0 < g < p (Goldilocks' p, the largest
    field's; the command checks its own field's with :func:`check_coset`)."""
    if _HEX.fullmatch(text):
        g = int(text[2:], 16)
    elif _DECIMAL.fullmatch(text):
        g = int(text, 10)
    else:
        raise argparse.ArgumentTypeError(f"expected a decimal or 0x-hex shift g with 0 < g < p (ASCII digits "
                                         f"only), got {_shown(text)}")
    if not coset_shift_ok(g, P):
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


def _shown(text: str) -> str:
    """An argument as quoted in an error: non-ASCII characters escaped, so what was typed is visible."""
    return ascii(text)


def int_arg(minimum: int, what: str):
    """An argparse type: an int >= ``minimum`` written in ASCII decimal digits, the error naming ``what``
    it is."""
    def parse(text: str) -> int:
        if not _DECIMAL.fullmatch(text):
            raise argparse.ArgumentTypeError(f"expected {what} in ASCII decimal digits, got {_shown(text)}")
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value
    return parse


#: argparse type of --batch: B >= 1 transforms.
batch_arg = int_arg(1, "a number of transforms B >= 1")
_blowup_int = int_arg(1, "a blowup, a power of two >= 1")


def blowup_arg(text: str) -> int:
    """--blowup: a power of two >= 1 in ASCII decimal digits."""
    value = _blowup_int(text)
    if value & (value - 1):
        raise argparse.ArgumentTypeError(f"expected a power of two >= 1, got {value}")
    return value


def axis_arg(text: str) -> int:
    """--axis: -1 (or 1: the file's transforms back to back, the default) or 0 (the file is a row-major
    N x B matrix whose columns are the transforms)."""
    if text not in ("-1", "0", "1"):
        raise argparse.ArgumentTypeError(f"expected 0 (the file is an N x B matrix, each column a transform) or "
                                         f"-1 (the transforms back to back), got {_shown(text)}")
    return -1 if text == "1" else int(text)


#: argparse type of --ext: D >= 1 limbs of an extension-field element.
ext_arg = int_arg(1, "a number of limbs D >= 1 (2 for GoldilocksExt2, 4 for a quartic extension)")


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
