"""The `nantucket` command.

Exit codes: 0 success (TEST PASSED), 1 the result differs from the expected points (TEST FAILED),
2 bad input (files, arguments, parameters, output paths, a size the field, the backend, its build or this
machine's memory cannot take; sizes are checked before any work) with a one-line error on stderr, 3 the
device failed or an output could not be written (a one-line error naming what failed; a run still prints
its verdict first).

A closed stdout (``nantucket run IN EXP | head -1``, ``| true``) changes neither what a command does nor its
exit status: the rest of the report is dropped without a word (no traceback, no "Exception ignored"), the
command finishes and exits with its own status (0, 1, 2 or 3 above), so ``set -o pipefail`` still sees
the verdict. (Not 141, as a process killed by SIGPIPE would give: that would hide the verdict.)

Subcommands are plain functions registered in :data:`COMMANDS` by ``add_*`` functions, so a new one is
a function and one line.
"""

import argparse
import contextlib
import os
import sys
import time

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.field import TWO_ADICITY
from . import api, backends, memory
from .backend_base import check_build_field
from .outfile import OutputBatch, OutputPathError, OutputWriteError, check_directory, check_output
from .points import PointFileError, encode_points, point_format, read_points
from .progress import Progress
from .run_report import DEFAULT_LOG_DIR, ChatterLog, RunReport, version
from .workloads import KINDS, make_points
from .cli_args import (Parser, UsageError, axis_arg, batch_arg, blowup_arg, check_coset, coset_arg, ext_arg, field_arg,
                       flush_stdout, int_arg, order_arg, order_text, path_arg, say)
from .cli_rtl import add_rtl, add_synth
from .cli_commit import add_commit, add_query, add_verify

__all__ = ["main", "UsageError"]


#: argparse type of a seed or count: an int >= 0.
_count_arg = int_arg(0, "an integer >= 0")
#: argparse type of LOG_N: the field's range is checked by the command, which can say why.
_log_n_arg = int_arg(1, "an integer LOG_N >= 1")

#: What the running command is doing, for the one line a MemoryError gets should it still happen.
_activity = "starting"


def _doing(what: str) -> None:
    global _activity
    _activity = what


def _fits(nbytes: int, what: str) -> None:
    """A size this machine cannot hold is a bad argument (exit 2), refused before the work starts."""
    try:
        memory.check_fits(nbytes, what)
    except memory.MemoryTooSmall as e:
        raise UsageError(str(e)) from None


# Peak bytes per point of the work below, measured with tracemalloc from 2^12 x 1024 to 2^22 x 1 points
# and rounded up: per point of the whole batch, the generated rows and their stack (or the points read,
# expected and computed), the model's coset multiply over the batch and the text being encoded; per
# point of one transform, the model's four-step temporaries (it transforms the rows one by one).
_BATCH_BYTES = 32
_RUN_BATCH_BYTES = 44
_COSET_BYTES = 80
_TEXT_BYTES = 4
_ROW_BYTES = 24
_BASE_BYTES = 32 << 20           # tables (twiddles, hex digits) and the interpreter's own churn


def _points_bytes(log_n: int, batch: int, coset: bool, text: bool) -> int:
    """What `points` needs at its peak: generator, model and encoding."""
    per = _BATCH_BYTES + (_COSET_BYTES if coset else 0) + (_TEXT_BYTES if text else 0)
    return (batch << log_n) * per + (_ROW_BYTES << log_n) + _BASE_BYTES


def _run_bytes(total: int, n: int, coset: bool) -> int:
    """What `run` needs at its peak for ``total`` points (transforms of ``n``), the points read included.
    Measured on the model backend; the device backends hold as many host arrays (the points, their
    layout for the device, the result)."""
    per = _RUN_BATCH_BYTES + (_COSET_BYTES if coset else 0)
    return total * per + n * _ROW_BYTES + _BASE_BYTES


# -- points ----------------------------------------------------------------------------------------

def add_points(sub):
    p = sub.add_parser("points", help="write a random (or structured) input file and its expected NTT")
    p.add_argument("log_n", type=_log_n_arg, metavar="LOG_N",
                   help=f"log2 of the number of points: 1..{TWO_ADICITY} in Goldilocks (the field's 2-adicity: "
                        f"{', '.join(f'{f.two_adicity} {f.name}' for f in F.FIELDS.values() if f.p != F.P)}); "
                        "the machine's memory sets the practical limit (checked before any work)")
    p.add_argument("input", type=path_arg, metavar="INPUT", help="point file (.txt, .bin, .npy)")
    p.add_argument("expected", type=path_arg, metavar="EXPECTED", help="point file (.txt, .bin, .npy)")
    p.add_argument("--kind", choices=KINDS, default="random")
    p.add_argument("--seed", type=_count_arg, default=0)
    p.add_argument("--inverse", action="store_true", help="EXPECTED holds the inverse NTT instead")
    _transform_options(p, "EXPECTED holds")
    p.set_defaults(func=cmd_points)


def _transform_options(p, what: str) -> None:
    """--field, --coset, --order and --batch, shared by `points` and `run`."""
    p.add_argument("--field", type=field_arg, default=F.DEFAULT_FIELD.name, metavar="NAME",
                   help=f"the prime field of the points: {', '.join(F.FIELD_NAMES)} (default "
                        f"{F.DEFAULT_FIELD.name}; a 31-bit field's files hold 32-bit points)")
    p.add_argument("--coset", type=coset_arg, metavar="G",
                   help=f"{what} the coset transform with shift G (decimal or 0x hex, 0 < G < p)")
    p.add_argument("--order", type=order_arg, default="in=nat,out=nat", metavar="in=nat|rev,out=nat|rev",
                   help="input and output order: natural or bit-reversed (default in=nat,out=nat)")
    p.add_argument("--batch", type=batch_arg, default=1, metavar="B",
                   help="B transforms of N points back to back (the point files hold B x N points)")
    p.add_argument("--blowup", type=blowup_arg, metavar="F",
                   help=f"{what} the low-degree extension instead: the N values' interpolant evaluated on "
                        "the coset G x <w_FN> (G from --coset, default 1), F x N points a row")
    p.add_argument("--axis", type=axis_arg, default=-1, metavar="0|-1",
                   help="0: the files hold a row-major N x B matrix, each of its B columns a transform (a "
                        "prover's trace); -1 (default): the B transforms back to back")
    p.add_argument("--ext", type=ext_arg, metavar="D",
                   help="each point is an extension-field element of D limbs, stored one after the other "
                        "(the files hold D values a point; the transform acts limb by limb)")


def _limbs(args) -> int:
    """D, the values a point takes in the files (1 without --ext)."""
    return getattr(args, "ext", None) or 1


def _file_order(rows: np.ndarray, args) -> np.ndarray:
    """The (B x D, N) rows of a batch (row e x D + l: limb l of transform e) as the files hold their values,
    flat: (B, N, D) in C order, or (N, B, D) with --axis 0 (each column a transform)."""
    batch, d = rows.shape[0] // _limbs(args), _limbs(args)
    cube = rows.reshape(batch, d, rows.shape[1])
    return cube.transpose((2, 0, 1) if args.axis == 0 else (0, 2, 1)).reshape(-1)


def _array_shape(args, n: int) -> tuple[int, ...]:
    """The shape the files' flat values take for the device (the API's ``axis`` and ``ext``): (N, B) with
    --axis 0, (B, N) for a batch, (N,) for one transform; with --ext a trailing axis of D limbs."""
    shape = (n, args.batch) if args.axis == 0 else (args.batch, n) if args.batch > 1 else (n,)
    return shape + ((args.ext,) if args.ext else ())


def _check_lde_options(args) -> None:
    """--blowup takes no --inverse (the LDE is an inverse then a forward), and F x N stays a size."""
    if getattr(args, "blowup", None) is not None and args.inverse:
        raise UsageError("--blowup: an LDE takes no --inverse (it is the inverse NTT, the zero-extension "
                         "and the coset NTT)")


def _lde_expected(rows: np.ndarray, blowup: int, shift: int, order: str, field) -> np.ndarray:
    """The golden model's LDE of (B, N) rows: the inverse (input order), zero-extended, the coset forward
    (output order)."""
    coeffs = ntt_model.transform(rows, inverse=True, order=order[0] + "n", field=field)
    ext = np.zeros((rows.shape[0], rows.shape[1] * blowup), dtype=np.uint64)
    ext[:, :rows.shape[1]] = coeffs
    return ntt_model.transform(ext, coset=shift, order="n" + order[1], field=field)


def cmd_points(args) -> int:
    field = args.field
    s = field.two_adicity
    if args.log_n > s:
        raise UsageError(f"LOG_N: must be in 1..{s} (a transform in {field.name} has at most 2^{s} points), "
                         f"got {args.log_n}")
    check_coset(args.coset, field)
    _check_lde_options(args)
    if args.blowup is not None and args.log_n + args.blowup.bit_length() - 1 > s:
        raise UsageError(f"--blowup: {args.blowup} x 2^{args.log_n} points is beyond {field.name}'s largest "
                         f"transform, 2^{s}")
    rows_n = args.batch * _limbs(args)         # the rows of one transform each: limbs transform alone
    total = rows_n << args.log_n
    named = (f"LOG_N {args.log_n}" + (f" x --batch {args.batch}" if args.batch > 1 else "")
             + (f" x --ext {args.ext}" if args.ext else ""))
    text = "text" in (point_format(args.input), point_format(args.expected))
    _fits(_points_bytes(args.log_n, rows_n, args.coset is not None, text),
          f"{named} ({total} points; {field.name} allows LOG_N up to {s}, this machine's memory decides)")
    input_target = check_output(args.input, "INPUT")
    expected_target = check_output(args.expected, "EXPECTED", inputs=[("INPUT", args.input)])
    t0 = time.perf_counter()
    # row e of a batch: the kind's points with seed + e (row 0 is the file of --batch 1); with --ext D,
    # limb l of transform e is row e x D + l (seed + e x D + l): a transform acts on each limb alone
    _doing(f"generating {named} ({total} points)")
    rows = np.stack([make_points(args.log_n, args.kind, args.seed + e, field).astype(np.uint64, copy=False)
                     for e in range(rows_n)])
    x = _file_order(rows, args)
    _doing(f"computing the expected transform of {named} ({total} points)")
    if args.blowup is not None:
        y = _lde_expected(rows, args.blowup, 1 if args.coset is None else args.coset, args.order, field)
    else:
        y = ntt_model.transform(rows, inverse=args.inverse, coset=args.coset, order=args.order, field=field)
    y = _file_order(y, args)
    # Both files staged, then both renamed: a failure never leaves a new INPUT beside an old EXPECTED.
    with OutputBatch() as batch:
        _doing(f"encoding INPUT {args.input}")
        batch.add(input_target, encode_points(args.input, x, field))
        _doing(f"encoding EXPECTED {args.expected}")
        batch.add(expected_target, encode_points(args.expected, y, field))
    what = " ".join(filter(None, ["inverse" if args.inverse else "", "coset" if args.coset else "", "NTT"]))
    if args.blowup is not None:
        what = f"LDE (blowup {args.blowup}, shift {1 if args.coset is None else args.coset})"
    batch = f" ({args.batch} transforms of 2^{args.log_n})" if args.batch > 1 else ""
    batch += (", as the columns of a matrix" if args.axis == 0 else "") + (f", {args.ext} limbs a point" if args.ext else "")
    order = f", order {order_text(args.order)}" if args.order != "nn" else ""
    kind = args.kind if field is F.DEFAULT_FIELD else f"{args.kind} {field.name}"
    say(f"Wrote {x.size} {kind} points{batch} to {args.input} and their {what}{order} to "
        f"{args.expected} ({time.perf_counter() - t0:.2f} s)")
    return 0


# -- run -------------------------------------------------------------------------------------------

def add_run(sub):
    p = sub.add_parser("run", help="transform INPUT on a device and check it against EXPECTED")
    p.add_argument("input", type=path_arg, metavar="INPUT", help="point file (.txt, .bin, .npy)")
    p.add_argument("expected", type=path_arg, metavar="EXPECTED", help="point file (.txt, .bin, .npy)")
    p.add_argument("--backend", default="model", help="device: " + ", ".join(sorted(backends.BACKENDS)))
    p.add_argument("--inverse", action="store_true", help="run the inverse transform")
    _transform_options(p, "run")
    p.add_argument("--output", type=path_arg, help="also write the computed points to this file")
    p.add_argument("--lanes", type=_count_arg, help="build parameter L (sim backend)")
    p.add_argument("--log-core", type=_count_arg, help="build parameter k (sim backend)")
    p.add_argument("--channels", type=_count_arg, help="build parameter C (sim backend)")
    p.add_argument("--xclbin", type=path_arg, help="xclbin to load (xrt backend)")
    p.add_argument("--device", type=_count_arg, help="device index (xrt backend; default 0)")
    p.add_argument("--mismatches", type=_count_arg, default=8, help="how many mismatches to list on failure")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                   help="progress line on stderr for long runs (auto: only when stderr is a terminal)")
    p.add_argument("--log-dir", type=path_arg, default=DEFAULT_LOG_DIR,
                   help=f"where device and simulator output goes (default {DEFAULT_LOG_DIR})")
    p.set_defaults(func=cmd_run)


def _build_params(args, n_points: int, context: str):
    """The build parameters for the backend (None: the backend's own), or a UsageError."""
    given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core),
                               ("channels", args.channels)) if v is not None}
    try:
        return backends.build_params(args.backend, n_points, given, args.field)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{context}: {e}") from e


def _check_run_arguments(args):
    """Everything that can be checked before a file is read: backend, its options and build parameters,
    output path and log directory. Returns the checked output (or None)."""
    if args.backend not in backends.BACKENDS:
        raise UsageError(f"--backend: unknown backend {args.backend!r} "
                         f"(choose from {', '.join(sorted(backends.BACKENDS))})")
    # each backend takes the options its constructor declares (backends.device_options); one given for a
    # backend that does not take it is refused rather than dropped
    for option in ("xclbin", "device"):
        if getattr(args, option) is not None and not backends.device_options(args.backend, **{option: True}):
            users = sorted(name for name in backends.BACKENDS if backends.device_options(name, **{option: True}))
            raise UsageError(f"--{option}: the {args.backend} backend takes no {option} "
                             f"(only {', '.join(users)} does)")
    check_coset(args.coset, args.field)
    _check_lde_options(args)
    if args.xclbin is not None:
        _check_xclbin(args.xclbin)
    params = _build_params(args, 1, f"build parameters for the {args.backend} backend")
    if params is not None and args.backend != "model":
        # a card computes in its build's field (the model has no build): refused before any file is read
        try:
            check_build_field(args.field, params, f"the {args.backend} card")
        except ValueError as e:
            raise UsageError(str(e)) from None
    if args.backend == "sim":           # the simulated card builds there: say so before reading any file
        from nantucket.hw.flow.build_root import BuildDirUnwritable, writable_build_base
        try:
            writable_build_base()
        except BuildDirUnwritable as e:
            raise UsageError(str(e)) from None
    if args.backend != "model":
        check_directory(args.log_dir, "--log-dir")
    if args.output is None:
        return None
    return check_output(args.output, "--output", inputs=[("INPUT", args.input), ("EXPECTED", args.expected)])


def _check_xclbin(path: str) -> None:
    """--xclbin names a readable file: a typo is a bad argument (exit 2), not a device that cannot load."""
    if not os.path.exists(path):
        raise UsageError(f"--xclbin: {path} does not exist")
    if os.path.isdir(path):
        raise UsageError(f"--xclbin: {path} is a directory, not an xclbin file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"--xclbin: {path} is not readable")


def cmd_run(args) -> int:
    report = RunReport(args.json)
    try:
        output = _check_run_arguments(args)
        with Progress("nantucket run", _run_stages(args), args.progress) as progress:
            report.before_print = progress.clear
            try:
                status = _run(args, output, report, progress)
                progress.finish()
                return status
            finally:
                progress.close()
    except (UsageError, PointFileError, OutputPathError) as e:
        report.fail(str(e), 2)
        raise
    except (backends.DeviceError, OutputWriteError) as e:
        report.fail(str(e), 3)
        raise
    finally:
        report.emit()


def _run(args, output, report, progress) -> int:
    progress.stage("read")
    t0 = time.perf_counter()
    _doing(f"reading INPUT {args.input}")
    x = _read(args.input, args)
    n = x.size // (args.batch * _limbs(args))
    blowup = args.blowup or 1
    largest = args.field.two_adicity
    if n * blowup > 1 << largest:       # past one kernel call runs as a four-step; past this, nothing does
        raise UsageError(f"{args.input}: {n} points{f' x --blowup {blowup}' if args.blowup else ''}: "
                         f"{args.field.name} has roots of unity up to 2^{largest}")
    params = _build_params(args, n, str(args.input))
    # x is in memory already; the rest of the run (EXPECTED, the transform, the output) must fit too
    _fits(_run_bytes(x.size * (args.blowup or 1), n * (args.blowup or 1), True if args.blowup else args.coset is not None)
          - x.nbytes,
          f"{args.input}: a run of its {x.size} points")
    _doing(f"reading EXPECTED {args.expected}")
    expected = _read(args.expected, args)
    if expected.size != x.size * blowup:
        raise UsageError(f"{args.expected}: holds {expected.size} points but {args.input} holds {x.size}"
                         + (f" (an LDE with --blowup {blowup} gives {x.size * blowup})" if args.blowup else ""))
    report.header(args, n, time.perf_counter() - t0)
    progress.stage("transform", args.backend)
    _doing(f"transforming {x.size} points on the {args.backend} backend")
    y, locate = _transform(args, params, x, report, progress)
    write_error = None
    if output is not None:
        progress.stage("write")
        _doing(f"writing --output {args.output}")
        try:
            with OutputBatch() as batch:
                batch.add(output, encode_points(args.output, y, args.field))
            report.line("Output points", args.output, "output")
        except OutputWriteError as e:       # reported after the verdict, which is still worth having
            write_error = e
            report.output_failed(args.output, str(e))
    progress.stage("check")
    _doing("checking the computed points against EXPECTED")
    status = report.check(y, expected, args.mismatches, locate, args.field,
                          hint=lambda bad: _mismatch_hint(args, x, expected, bad == y.size))
    if write_error is not None:
        raise write_error
    return status


def _mismatch_hint(args, x: np.ndarray, expected: np.ndarray, every: bool = False) -> str | None:
    """Why a run may have failed that the files can tell: a 31-bit field's .bin files read as 64-bit
    words (without --field), in which every value has both 32-bit halves below 2^31 (a random 64-bit value
    has both with probability 1/4); when ``every`` point differs, the other layout of the batch (--axis 0
    given or not) if the golden model's transform in it gives EXPECTED."""
    if every:
        flags = _layout_that_matches(args, x, expected)
        if flags is not None:
            return flags
    if args.field.point_bits != 64:
        return None
    made = [(path, pts) for path, pts in ((args.input, x), (args.expected, expected)) if point_format(path) == "bin"]
    small = [F.FIELDS[name] for name in F.FIELD_NAMES if F.FIELDS[name].point_bits == 32]
    for path, pts in made:
        if pts.size and not np.any(pts & np.uint64(0x8000_0000_8000_0000)):     # bits 31 and 63
            return (f"{path}: every 64-bit value has both 32-bit halves below 2^31, as in a 31-bit field's .bin "
                    f"file read as {args.field.name} words: made with --field "
                    f"{' or '.join(f.name for f in small)}? (pass the same --field)")
    return None


def _layout_that_matches(args, x: np.ndarray, expected: np.ndarray) -> str | None:
    """The hint for a batch whose files were written in the other layout (--axis 0 or not), when the
    golden model's transform of INPUT read that way is EXPECTED; None otherwise (one transform: no layout
    to get wrong)."""
    if args.batch < 2:
        return None
    other = argparse.Namespace(**vars(args))
    other.axis = -1 if args.axis == 0 else 0
    n = x.size // (args.batch * _limbs(args))
    shift = 1 if args.coset is None else args.coset
    try:
        with api.open("model", field=args.field) as dev:
            a = dev.asarray(x.reshape(_array_shape(other, n)), axis=0 if other.axis == 0 else None, ext=args.ext)
            if args.blowup is not None:
                a = dev.lde(a, args.blowup, shift, order=args.order)
            else:
                dev.ntt(a, inverse=args.inverse, coset=args.coset, order=args.order)
            y = a.numpy().reshape(-1)
    except (ValueError, MemoryError):       # a hint is not worth a failure of its own (memory, say)
        return None
    if not np.array_equal(y, expected):
        return None
    given, wanted = ("--axis 0", "without it") if args.axis == 0 else ("no --axis", "with --axis 0")
    return (f"every point differs, but the run {wanted} matches EXPECTED: the files hold the batch in the other "
            f"layout ({given} here; --axis 0: a row-major N x B matrix, each column a transform)")


def _read(path, args) -> np.ndarray:
    """A point file's values, B x D x 2^n of them (--batch B, --ext D)."""
    try:
        return read_points(path, args.batch * _limbs(args), args.field)
    except PointFileError as e:
        if not args.ext:
            raise
        raise UsageError(f"{e} (with --ext {args.ext}: {args.batch} transform{'s' if args.batch > 1 else ''} "
                         f"of {args.ext}-limb points)") from e


def _transform(args, params, x, report, progress):
    """x transformed on the device through the library API, the device's chatter going to a log;
    reports the device's timings. Returns the points and the device's locate (see Backend.locate)."""
    log = None if args.backend == "model" else ChatterLog(args.log_dir, args.backend)
    with log if log is not None else contextlib.nullcontext():
        given = {"params": params, "xclbin": args.xclbin,
                 "device": 0 if args.device is None else args.device, "progress": _device_progress(progress, log)}
        try:
            dev = api.open(args.backend, field=args.field, **backends.device_options(args.backend, **given))
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from e
        except backends.DeviceError as e:
            raise backends.DeviceError(f"{e}{log.hint() if log else ''}") from e
        try:
            n = x.size // (args.batch * _limbs(args))
            reason = dev.backend.supports(n)
            if reason:
                raise UsageError(f"{args.input}: {reason}")
            extra = dict(getattr(dev.backend, "extra_transfers", {}))
            t0 = time.perf_counter()
            try:
                a = dev.asarray(x.reshape(_array_shape(args, n)), axis=0 if args.axis == 0 else None, ext=args.ext)
                t1 = time.perf_counter()
                if args.blowup is not None:
                    a = dev.lde(a, args.blowup, 1 if args.coset is None else args.coset, order=args.order)
                else:
                    dev.ntt(a, inverse=args.inverse, coset=args.coset, order=args.order)
                t2 = time.perf_counter()
                y = a.numpy().reshape(-1)
            except (TypeError, ValueError) as e:
                raise UsageError(f"{args.input}: {e}") from e
            except backends.DeviceError as e:
                raise backends.DeviceError(f"{e}{log.hint() if log else ''}") from e
            t3 = time.perf_counter()
            measured = {"to-device": t1 - t0, "kernel": t2 - t1, "from-device": t3 - t2}
            # The backend's own phases of its last run when it has them (sim, xrt); the model device
            # computes in its own memory, so there the API calls' wall times are the phases.
            timings = dict(dev.backend.timings) or measured
            device_report = dict(dev.backend.report)
            kernel_log_n = getattr(dev.backend, "kernel_log_n", None)
            kernel_cycles = getattr(dev.backend, "kernel_cycles", None)
            kernel_measured = getattr(dev.backend, "kernel_measured", None)
            steps = list(getattr(dev.backend, "steps", None) or [])
            # the API's count, and what the backend moved beyond it (a four-step's round trip per step)
            transfers = {k: v + getattr(dev.backend, "extra_transfers", {}).get(k, 0) - extra.get(k, 0)
                         for k, v in dev.transfers.items()}
            locate = dev.backend.locate
        finally:
            dev.close()
    # Printed once the log no longer holds stdout.
    report.device(args.backend, timings, device_report, t3 - t0, log, kernel_log_n, kernel_cycles, kernel_measured,
                  steps=steps, transfers=transfers)
    return y, locate


def _device_progress(progress, log):
    """The backends' progress callback: each line goes to the log and becomes the progress note."""
    def line(text: str) -> None:
        if log is not None:
            log.write(text)
        progress.note(str(text).strip()[:80])
    return line


def _run_stages(args):
    """Estimated seconds of each stage of `run`, from the file sizes and the backend (None: unknown)."""
    size = sum(_file_size(p) for p in (args.input, args.expected))
    field = args.field
    n = max(1, _file_size(args.input) // (field.hex_digits + 3 if point_format(args.input) == "text"
                                          else field.point_bytes))
    log_n = max(1, n.bit_length() - 1)
    device = {"model": 40e-9 * n * log_n, "xrt": 0.5 + 1e-7 * n}.get(args.backend)
    return [("read", size / 150e6), ("transform", device),
            ("write", n * (field.hex_digits + 3) / 150e6 if args.output else 0.0), ("check", 5e-9 * n)]


def _file_size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# -- main ------------------------------------------------------------------------------------------

COMMANDS = [add_points, add_run, add_rtl, add_synth, add_commit, add_query, add_verify]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="nantucket", description="NTT accelerator for Goldilocks, BabyBear and KoalaBear: "
                                                  "points, runs, RTL.")
    parser.add_argument("--version", action="version", version=f"nantucket {version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in COMMANDS:
        add(sub)
    return parser


def _wants_json(argv: list) -> bool:
    """Whether the command line asks for `run --json` (or `commit`, `query`, `verify --json`; before a ``--``
    that ends the options)."""
    argv = [str(a) for a in argv]
    argv = argv[:argv.index("--")] if "--" in argv else argv
    words = [a for a in argv if not a.startswith("-")]
    return bool(words) and words[0] in ("run", "commit", "query", "verify") and "--json" in argv


def main(argv=None) -> int:
    status = _main(argv)
    flush_stdout()                      # --help and --version leave their text in stdout's buffer
    return status


def _main(argv) -> int:
    _doing("starting")
    args = None
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except SystemExit as e:             # --help, --version
        return e.code if isinstance(e.code, int) else 0
    except (UsageError, PointFileError, OutputPathError) as e:
        if args is None and _wants_json(sys.argv[1:] if argv is None else list(argv)):
            # an argument that failed the parser's own checks: `run --json` still prints its one object
            report = RunReport(True)
            report.fail(str(e), 2)
            report.emit()
        print(f"nantucket: error: {e}", file=sys.stderr)
        return 2
    except OutputWriteError as e:
        print(f"nantucket: error: {e}", file=sys.stderr)
        return 3
    except backends.DeviceError as e:
        print(f"nantucket: device error: {e}", file=sys.stderr)
        return 3
    except MemoryError:                 # a size this machine cannot hold is a parameter to change
        print(f"nantucket: error: out of memory while {_activity}: the size is too large for this machine",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nantucket: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
