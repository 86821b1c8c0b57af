"""The `nantucket` command.

Exit codes: 0 success (TEST PASSED), 1 the result differs from the expected points (TEST FAILED),
2 bad input (files, arguments, parameters) with a one-line error on stderr, 3 the device failed
(a one-line error naming what failed).

Subcommands are plain functions registered in :data:`COMMANDS` by ``add_*`` functions, so a new one is
a function and one line.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from hw.model import ntt as ntt_model
from hw.model.params import BuildParams
from . import backends
from .points import PointFileError, read_points, write_points
from .workloads import KINDS, make_points
from .cli_rtl import add_rtl, add_synth

__all__ = ["main", "UsageError"]


class UsageError(Exception):
    """Bad arguments or input: reported as one line, exit status 2."""


def _log(msg: str) -> None:
    print(msg, flush=True)


# -- points ----------------------------------------------------------------------------------------

def add_points(sub):
    p = sub.add_parser("points", help="write a random (or structured) input file and its expected NTT")
    p.add_argument("log_n", type=int, metavar="LOG_N", help="log2 of the number of points (1..30)")
    p.add_argument("input", type=Path, metavar="INPUT")
    p.add_argument("expected", type=Path, metavar="EXPECTED")
    p.add_argument("--kind", choices=KINDS, default="random")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inverse", action="store_true", help="EXPECTED holds the inverse NTT instead")
    p.set_defaults(func=cmd_points)


def cmd_points(args) -> int:
    if not 1 <= args.log_n <= 30:
        raise UsageError(f"LOG_N: must be in 1..30, got {args.log_n}")
    t0 = time.perf_counter()
    x = make_points(args.log_n, args.kind, args.seed)
    y = ntt_model.ntt(x, inverse=args.inverse)
    write_points(args.input, x)
    write_points(args.expected, y)
    _log(f"Wrote {x.size} {args.kind} points to {args.input} and their "
         f"{'inverse ' if args.inverse else ''}NTT to {args.expected} ({time.perf_counter() - t0:.2f} s)")
    return 0


# -- run -------------------------------------------------------------------------------------------

def add_run(sub):
    p = sub.add_parser("run", help="transform INPUT on a device and check it against EXPECTED")
    p.add_argument("input", type=Path, metavar="INPUT")
    p.add_argument("expected", type=Path, metavar="EXPECTED")
    p.add_argument("--backend", default="model", help="device: " + ", ".join(sorted(backends.BACKENDS)))
    p.add_argument("--inverse", action="store_true", help="run the inverse transform")
    p.add_argument("--output", type=Path, help="also write the computed points to this file")
    p.add_argument("--lanes", type=int, help="build parameter L (sim backend)")
    p.add_argument("--log-core", type=int, help="build parameter k (sim backend)")
    p.add_argument("--channels", type=int, help="build parameter C (sim backend)")
    p.add_argument("--xclbin", type=Path, help="xclbin to load (xrt backend)")
    p.add_argument("--device", type=int, default=0, help="device index (xrt backend)")
    p.add_argument("--mismatches", type=int, default=8, help="how many mismatches to list on failure")
    p.set_defaults(func=cmd_run)


def _device_options(args) -> dict:
    given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core),
                               ("channels", args.channels)) if v is not None}
    opts = {"params": None, "xclbin": args.xclbin, "device": args.device}
    if given:
        try:
            opts["params"] = BuildParams(**given)
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from e
    return opts


def cmd_run(args) -> int:
    if args.backend not in backends.BACKENDS:
        raise UsageError(f"--backend: unknown backend {args.backend!r} "
                         f"(choose from {', '.join(sorted(backends.BACKENDS))})")
    t0 = time.perf_counter()
    x = read_points(args.input)
    expected = read_points(args.expected)
    if expected.size != x.size:
        raise UsageError(f"{args.expected}: holds {expected.size} points but {args.input} holds {x.size}")
    t_read = time.perf_counter() - t0
    n = x.size
    _log(f"N................. {n}")
    _log(f"Input points...... {args.input}")
    _log(f"Expected points... {args.expected}")
    _log(f"Direction......... {'inverse' if args.inverse else 'forward'}")
    _log(f"Backend........... {args.backend}")
    _log(f"Read files........ {t_read:.3f} s")
    try:
        device = backends.make_backend(args.backend, **_device_options(args))
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from e
    try:
        reason = device.supports(n)
        if reason:
            raise UsageError(f"{args.input}: {reason}")
        y = device.run(x, inverse=args.inverse)
    finally:
        device.close()
    for phase, seconds in device.timings.items():
        label = f"{phase.capitalize()} time"
        _log(f"{label:.<18} {seconds * 1e3:.3f} ms")
    for label, text in device.report.items():
        _log(f"{label:.<18} {text}")
    if args.output:
        write_points(args.output, y)
        _log(f"Output points..... {args.output}")
    _log("Checking computed results against expected ...")
    bad = np.flatnonzero(y != expected)
    if bad.size == 0:
        _log("TEST PASSED")
        return 0
    _log(f"{bad.size} of {n} points differ; first mismatches:")
    for i in bad[: args.mismatches]:
        _log(f"  [{i}] computed 0x{int(y[i]):016x} expected 0x{int(expected[i]):016x}")
    _log("TEST FAILED")
    return 1


# -- main ------------------------------------------------------------------------------------------

COMMANDS = [add_points, add_run, add_rtl, add_synth]


class _Parser(argparse.ArgumentParser):
    def error(self, message):           # argparse's own errors: one line, exit 2
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="nantucket", description="Goldilocks NTT accelerator: points, runs, RTL.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (UsageError, PointFileError) as e:
        print(f"nantucket: error: {e}", file=sys.stderr)
        return 2
    except backends.DeviceError as e:
        print(f"nantucket: device error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("nantucket: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
