"""The `nantucket` command.

Exit codes: 0 success (TEST PASSED), 1 the result differs from the expected points (TEST FAILED),
2 bad input (files, arguments, parameters, output paths) with a one-line error on stderr, 3 the device
failed or an output could not be written (a one-line error naming what failed; a run still prints its
verdict first).

Subcommands are plain functions registered in :data:`COMMANDS` by ``add_*`` functions, so a new one is
a function and one line.
"""

import argparse
import sys
import time

import numpy as np

from hw.model import ntt as ntt_model
from . import backends
from .outfile import OutputBatch, OutputPathError, OutputWriteError, check_output
from .points import PointFileError, format_points, read_points
from .workloads import KINDS, make_points
from .cli_args import UsageError, path_arg
from .cli_rtl import add_rtl, add_synth

__all__ = ["main", "UsageError"]


def _log(msg: str) -> None:
    print(msg, flush=True)


def _count_arg(text: str) -> int:
    """argparse type of a seed or count: an int >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


# -- points ----------------------------------------------------------------------------------------

def add_points(sub):
    p = sub.add_parser("points", help="write a random (or structured) input file and its expected NTT")
    p.add_argument("log_n", type=int, metavar="LOG_N", help="log2 of the number of points (1..30)")
    p.add_argument("input", type=path_arg, metavar="INPUT")
    p.add_argument("expected", type=path_arg, metavar="EXPECTED")
    p.add_argument("--kind", choices=KINDS, default="random")
    p.add_argument("--seed", type=_count_arg, default=0)
    p.add_argument("--inverse", action="store_true", help="EXPECTED holds the inverse NTT instead")
    p.set_defaults(func=cmd_points)


def cmd_points(args) -> int:
    if not 1 <= args.log_n <= 30:
        raise UsageError(f"LOG_N: must be in 1..30, got {args.log_n}")
    input_target = check_output(args.input, "INPUT")
    expected_target = check_output(args.expected, "EXPECTED", inputs=[("INPUT", args.input)])
    t0 = time.perf_counter()
    x = make_points(args.log_n, args.kind, args.seed)
    y = ntt_model.ntt(x, inverse=args.inverse)
    # Both files staged, then both renamed: a failure never leaves a new INPUT beside an old EXPECTED.
    with OutputBatch() as batch:
        batch.add(input_target, format_points(x))
        batch.add(expected_target, format_points(y))
    _log(f"Wrote {x.size} {args.kind} points to {args.input} and their "
         f"{'inverse ' if args.inverse else ''}NTT to {args.expected} ({time.perf_counter() - t0:.2f} s)")
    return 0


# -- run -------------------------------------------------------------------------------------------

def add_run(sub):
    p = sub.add_parser("run", help="transform INPUT on a device and check it against EXPECTED")
    p.add_argument("input", type=path_arg, metavar="INPUT")
    p.add_argument("expected", type=path_arg, metavar="EXPECTED")
    p.add_argument("--backend", default="model", help="device: " + ", ".join(sorted(backends.BACKENDS)))
    p.add_argument("--inverse", action="store_true", help="run the inverse transform")
    p.add_argument("--output", type=path_arg, help="also write the computed points to this file")
    p.add_argument("--lanes", type=int, help="build parameter L (sim backend)")
    p.add_argument("--log-core", type=int, help="build parameter k (sim backend)")
    p.add_argument("--channels", type=int, help="build parameter C (sim backend)")
    p.add_argument("--xclbin", type=path_arg, help="xclbin to load (xrt backend)")
    p.add_argument("--device", type=_count_arg, default=0, help="device index (xrt backend)")
    p.add_argument("--mismatches", type=_count_arg, default=8, help="how many mismatches to list on failure")
    p.set_defaults(func=cmd_run)


def _build_params(args, n_points: int, context: str):
    """The build parameters for the backend (None: the backend's own), or a UsageError."""
    given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core),
                               ("channels", args.channels)) if v is not None}
    try:
        return backends.build_params(args.backend, n_points, given)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{context}: {e}") from e


def _check_run_arguments(args):
    """Everything that can be checked before a file is read: backend, build parameters, output path."""
    if args.backend not in backends.BACKENDS:
        raise UsageError(f"--backend: unknown backend {args.backend!r} "
                         f"(choose from {', '.join(sorted(backends.BACKENDS))})")
    _build_params(args, 1, f"build parameters for the {args.backend} backend")
    if args.output is None:
        return None
    return check_output(args.output, "--output", inputs=[("INPUT", args.input), ("EXPECTED", args.expected)])


def cmd_run(args) -> int:
    output = _check_run_arguments(args)
    t0 = time.perf_counter()
    x = read_points(args.input)
    n = x.size
    params = _build_params(args, n, str(args.input))
    expected = read_points(args.expected)
    if expected.size != n:
        raise UsageError(f"{args.expected}: holds {expected.size} points but {args.input} holds {n}")
    t_read = time.perf_counter() - t0
    _log(f"N................. {n}")
    _log(f"Input points...... {args.input}")
    _log(f"Expected points... {args.expected}")
    _log(f"Direction......... {'inverse' if args.inverse else 'forward'}")
    _log(f"Backend........... {args.backend}")
    _log(f"Read files........ {t_read:.3f} s")
    try:
        device = backends.make_backend(args.backend, params=params, xclbin=args.xclbin, device=args.device)
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
    write_error = None
    if output is not None:
        try:
            with OutputBatch() as batch:
                batch.add(output, format_points(y))
            _log(f"Output points..... {args.output}")
        except OutputWriteError as e:       # reported after the verdict, which is still worth having
            write_error = e
    status = _check(y, expected, args.mismatches)
    if write_error is not None:
        raise write_error
    return status


def _check(y, expected, mismatches: int) -> int:
    _log("Checking computed results against expected ...")
    bad = np.flatnonzero(y != expected)
    if bad.size == 0:
        _log("TEST PASSED")
        return 0
    _log(f"{bad.size} of {y.size} points differ; first mismatches:")
    for i in bad[:mismatches]:
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
    except (UsageError, PointFileError, OutputPathError) as e:
        print(f"nantucket: error: {e}", file=sys.stderr)
        return 2
    except OutputWriteError as e:
        print(f"nantucket: error: {e}", file=sys.stderr)
        return 3
    except backends.DeviceError as e:
        print(f"nantucket: device error: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("nantucket: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
