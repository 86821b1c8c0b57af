"""`nantucket commit`, `nantucket query` and `nantucket verify`: Merkle commitments from the command line.

- ``commit INPUT [INPUT ...] --scheme S``: each INPUT a point file holding one matrix (``--batch B``
  polynomials of N points, back to back, or with ``--axis 0`` a row-major N x B matrix whose columns are
  the polynomials, a prover's trace; ``--ext D``: D limbs a point); with ``--blowup F [--coset G]`` their
  coset LDE (limb by limb) in the scheme's row
  order is committed instead. Prints the root (cap) and the report (``--json``: one object); ``--tree
  FILE`` saves the tree (docs/formats.md, "Commitment files").
- ``query (INPUT ... | --tree FILE) --index I [I ...]``: the opened rows and sibling paths; ``--output
  FILE`` saves them as an openings file.
- ``verify OPENINGS [--commitment FILE]``: checks every opening of the file against its cap (or the
  commitment file's). Exit 0 all hold, 1 one does not (its check named), 2 bad input.

Bad input is exit 2 with a one-line error naming the file (and line) or the argument, before any work;
an output file is written whole (a temporary file renamed) or not at all.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model.commit import SCHEMES, CommitmentError, scheme as get_scheme

from . import api, backends
from .cli_args import UsageError, axis_arg, batch_arg, blowup_arg, coset_arg, ext_arg, int_arg, path_arg, say
from .points import PointFileError, read_points
from .run_report import RunReport

__all__ = ["add_commit", "add_query", "add_verify", "COMMITMENT_FORMAT", "OPENINGS_FORMAT", "load_json_file"]

COMMITMENT_FORMAT = "nantucket-commitment"
OPENINGS_FORMAT = "nantucket-openings"
FORMAT_VERSION = 1

_index_arg = int_arg(0, "an index >= 0")
_cap_arg = int_arg(0, "a cap height >= 0")
_device_arg = int_arg(0, "a device index >= 0")


def _scheme_arg(text: str) -> str:
    try:
        return get_scheme(text).name
    except ValueError as e:
        raise UsageError(f"--scheme: {str(e).removeprefix('scheme: ')}") from None


def _matrix_options(p) -> None:
    p.add_argument("inputs", nargs="*", type=path_arg, metavar="INPUT",
                   help="point files (.txt, .bin, .npy), one matrix each")
    p.add_argument("--scheme", metavar="S", help=f"the commitment scheme: {', '.join(SCHEMES)}")
    p.add_argument("--batch", type=batch_arg, default=1, metavar="B", help="B polynomials a file (default 1)")
    p.add_argument("--axis", type=axis_arg, default=-1, metavar="0|-1",
                   help="0: each file is a row-major N x B matrix, its columns the polynomials; -1 (default): "
                        "the B polynomials back to back")
    p.add_argument("--ext", type=ext_arg, metavar="D",
                   help="each point is an extension element of D limbs, one after the other (a leaf holds "
                        "every polynomial's limbs in limb order, as Plonky3's ExtensionMmcs)")
    p.add_argument("--blowup", type=blowup_arg, metavar="F", help="commit the coset LDE of blowup F instead")
    p.add_argument("--coset", type=coset_arg, metavar="G", help="the LDE's shift (default: the scheme's)")
    p.add_argument("--cap-height", type=_cap_arg, default=0, metavar="C", help="commit to a cap of 2^C digests")
    p.add_argument("--backend", default="model", metavar="NAME",
                   help="the device the LDE and commit use: " + ", ".join(sorted(backends.BACKENDS)) + " (default model)")
    p.add_argument("--xclbin", type=path_arg, help="xclbin to load (xrt backend)")
    p.add_argument("--device", type=_device_arg, help="device index (xrt backend; default 0)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def add_commit(sub):
    p = sub.add_parser("commit", help="commit to matrices under a scheme: print the root, save the tree")
    _matrix_options(p)
    p.add_argument("--tree", type=path_arg, metavar="FILE", help="save the commitment (tree) as JSON")
    p.set_defaults(func=cmd_commit)


def add_query(sub):
    p = sub.add_parser("query", help="open rows of a commitment: their values and sibling paths")
    _matrix_options(p)
    p.add_argument("--tree", type=path_arg, metavar="FILE", help="a commitment file saved by commit --tree")
    p.add_argument("--index", type=_index_arg, nargs="+", required=True, metavar="I", help="leaf indices")
    p.add_argument("--output", type=path_arg, metavar="FILE", help="save the openings as JSON")
    p.set_defaults(func=cmd_query)


def add_verify(sub):
    p = sub.add_parser("verify", help="check openings against a commitment (exit 0 hold, 1 refused)")
    p.add_argument("openings", type=path_arg, metavar="OPENINGS", help="an openings file (query --output)")
    p.add_argument("--commitment", type=path_arg, metavar="FILE",
                   help="take the cap and dimensions from this commitment file, not the openings file")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=cmd_verify)


# -- files -------------------------------------------------------------------------------------------------

def _check_writable(path: str, option: str) -> None:
    if os.path.isdir(path):
        raise UsageError(f"{option}: {path} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise UsageError(f"{option}: cannot write {path}: no writable directory {parent}")


def _write_json(path: str, obj: dict) -> None:
    """Written whole or not at all: a temporary file in the same directory, renamed."""
    fd, tmp = tempfile.mkstemp(prefix=".nantucket-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_json_file(path: str, kind: str) -> dict:
    """A commitment or openings file, checked for its format and version (UsageError naming the file and
    its line for bad JSON)."""
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: not JSON: {e.msg}") from None
    if not isinstance(obj, dict) or obj.get("format") != kind:
        raise UsageError(f"{path}: not a {kind} file (its \"format\" must be {kind!r})")
    if obj.get("version") != FORMAT_VERSION:
        raise UsageError(f"{path}: {kind} version {obj.get('version')!r}; this nantucket reads {FORMAT_VERSION}")
    for key in ("scheme", "cap_height", "dimensions", "cap"):
        if key not in obj:
            raise UsageError(f"{path}: {kind} file without {key!r}")
    try:
        get_scheme(obj["scheme"])
    except (TypeError, ValueError) as e:
        raise UsageError(f"{path}: {e}") from None
    return obj


def _ints(a) -> list:
    return np.asarray(a).astype(np.uint64).tolist()


def _hex(digest, field: F.Field) -> str:
    return "[" + ", ".join(f"0x{int(v):0{field.hex_digits}x}" for v in digest) + "]"


# -- commit ------------------------------------------------------------------------------------------------

def _read_matrices(args, s) -> list[np.ndarray]:
    """The INPUT files as host matrices whose rows are the leaves (columns the polynomials)."""
    if not args.inputs:
        raise UsageError("INPUT: give at least one point file (or --tree FILE for query)")
    field = F.get(s.field)
    mats = []
    b, d = args.batch, args.ext or 1
    for path in args.inputs:
        pts = np.asarray(read_points(path, b * d, field)).reshape(-1)
        if args.axis == -1:         # (B, N, D): leaf i is every polynomial's point i, its limbs in order
            mats.append(np.ascontiguousarray(pts.reshape(b, -1, d).transpose(1, 0, 2).reshape(-1, b * d)))
        else:                       # (N, B, D) row-major
            mats.append(pts.reshape(-1, b * d))
    return mats


def _check_matrix_args(args):
    if args.scheme is None:
        raise UsageError("--scheme: required (one of " + ", ".join(SCHEMES) + ")")
    s = get_scheme(_scheme_arg(args.scheme))
    if args.backend not in backends.BACKENDS:
        raise UsageError(f"--backend: unknown backend {args.backend!r} (choose from {', '.join(sorted(backends.BACKENDS))})")
    for option in ("xclbin", "device"):
        if getattr(args, option) is not None and not backends.device_options(args.backend, **{option: True}):
            raise UsageError(f"--{option}: the {args.backend} backend takes no {option}")
    if args.coset is not None and args.blowup is None:
        raise UsageError("--coset: the LDE's shift; give --blowup F too")
    if args.coset is not None and not 0 < args.coset < F.get(s.field).p:
        raise UsageError(f"--coset: the shift must satisfy 0 < G < p ({s.field}), got {args.coset}")
    return s


def _commitment(args, s):
    mats = _read_matrices(args, s)
    try:
        given = {k: v for k, v in (("xclbin", args.xclbin), ("device", args.device)) if v is not None}
        return api.commit(mats, scheme=s.name, cap_height=args.cap_height, backend=args.backend,
                          blowup=args.blowup, shift=args.coset, **backends.device_options(args.backend, **given))
    except (ValueError, TypeError) as e:         # a shape the scheme or the backend refuses: bad input
        if isinstance(e, PointFileError):
            raise
        raise UsageError(str(e)) from None


def commitment_json(c) -> dict:
    """A Commitment as the commitment file holds it (docs/formats.md)."""
    return {"format": COMMITMENT_FORMAT, "version": FORMAT_VERSION, "scheme": c.scheme.name,
            "field": c.scheme.field, "cap_height": c.cap_height,
            "dimensions": [list(d) for d in c.dimensions], "cap": _ints(c.cap),
            "matrices": [_ints(m) for m in _matrices_of(c)], "layers": [_ints(layer) for layer in c.layers]}


def _matrices_of(c) -> list:
    """The committed matrices (rows the leaves), as the device call kept them (``Commitment.matrices``)."""
    return list(c.matrices)


def _print_report(c, as_json: bool, extra: dict) -> None:
    field = F.get(c.scheme.field)
    report = getattr(c, "report", None)
    if as_json:
        say(json.dumps({"scheme": c.scheme.name, "cap_height": c.cap_height,
                        "dimensions": [list(d) for d in c.dimensions], "cap": _ints(c.cap),
                        "report": report, **extra}))
        return
    say(f"{'Scheme':.<18} {c.scheme.name} ({c.scheme.pin})")
    say(f"{'Dimensions':.<18} " + ", ".join(f"{d.height} x {d.width}" for d in c.dimensions))
    if c.cap.shape[0] == 1:
        say(f"{'Root':.<18} {_hex(c.cap[0], field)}")
    else:
        for i, d in enumerate(c.cap):
            say(f"{f'Cap {i}':.<18} {_hex(d, field)}")
    if report:
        RunReport(False).commitment(report)
    for label, text in extra.items():
        say(f"{label.capitalize():.<18} {text}")


def _json_errors(cmd):
    """With --json, bad input still prints one object (``"verdict": "ERROR"``, the error, exit status 2),
    as `nantucket run --json` does; the one-line error goes to stderr as ever."""
    def run(args) -> int:
        try:
            return cmd(args)
        except (UsageError, PointFileError) as e:
            if getattr(args, "json", False):
                report = RunReport(True)
                report.fail(str(e), 2)
                report.emit()
            raise
    run.__name__ = cmd.__name__
    return run


@_json_errors
def cmd_commit(args) -> int:
    s = _check_matrix_args(args)
    if args.tree:
        _check_writable(args.tree, "--tree")
    c = _commitment(args, s)
    if args.tree:
        _write_json(args.tree, commitment_json(c))
    _print_report(c, args.json, {"tree": args.tree} if args.tree else {})
    return 0


# -- query and verify --------------------------------------------------------------------------------------

def _from_tree(path: str):
    obj = load_json_file(path, COMMITMENT_FORMAT)
    try:
        c = api.commit([np.array(m, dtype=np.uint64).reshape(d[0], d[1]) for m, d in
                        zip(obj["matrices"], obj["dimensions"])], scheme=obj["scheme"], cap_height=obj["cap_height"])
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise UsageError(f"{path}: its matrices cannot be committed: {e}") from None
    if _ints(c.cap) != obj["cap"]:
        raise UsageError(f"{path}: its matrices do not commit to its cap (the file was changed)")
    return c


def openings_json(c, indices) -> dict:
    ops = c.open(list(indices))
    return {"format": OPENINGS_FORMAT, "version": FORMAT_VERSION, "scheme": c.scheme.name,
            "cap_height": c.cap_height, "dimensions": [list(d) for d in c.dimensions], "cap": _ints(c.cap),
            "openings": [{"index": int(i), "rows": [_ints(r) for r in op.rows], "siblings": _ints(op.siblings)}
                         for i, op in zip(indices, ops)]}


@_json_errors
def cmd_query(args) -> int:
    if args.tree is not None and args.inputs:
        raise UsageError("INPUT: give the point files or --tree FILE, not both")
    if args.output:
        _check_writable(args.output, "--output")
    if args.tree is not None:
        c = _from_tree(args.tree)
    else:
        c = _commitment(args, _check_matrix_args(args))
    height = max(d.height for d in c.dimensions)
    for i in args.index:
        if i >= height:
            raise UsageError(f"--index: {i} is out of bounds for {height} leaves")
    obj = openings_json(c, args.index)
    if args.output:
        _write_json(args.output, obj)
    if args.json:
        say(json.dumps(obj))
        return 0
    field = F.get(c.scheme.field)
    for op in obj["openings"]:
        say(f"{'Index':.<18} {op['index']}")
        for j, row in enumerate(op["rows"]):
            say(f"{f'  Row {j}':.<18} {_hex(row, field)}")
        for k, sib in enumerate(op["siblings"]):
            say(f"{f'  Sibling {k}':.<18} {_hex(sib, field)}")
    if args.output:
        say(f"{'Openings':.<18} {args.output}")
    return 0


def _opening_of(path: str, k: int, op) -> tuple[int, tuple]:
    try:
        index = op["index"]
        rows = tuple(np.array(r, dtype=np.uint64) for r in op["rows"])
        siblings = np.array(op["siblings"], dtype=np.uint64)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise UsageError(f"{path}: openings[{k}]: expected index, rows and siblings of field elements ({e})") \
            from None
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise UsageError(f"{path}: openings[{k}]: index must be an int >= 0, got {index!r}")
    return index, (rows, siblings)


@_json_errors
def cmd_verify(args) -> int:
    obj = load_json_file(args.openings, OPENINGS_FORMAT)
    ref = load_json_file(args.commitment, COMMITMENT_FORMAT) if args.commitment else obj
    if ref["scheme"] != obj["scheme"]:
        raise UsageError(f"--commitment: scheme {ref['scheme']} but the openings are {obj['scheme']}")
    ops = obj.get("openings")
    if not isinstance(ops, list) or not ops:
        raise UsageError(f"{args.openings}: no openings")
    parsed = [_opening_of(args.openings, k, op) for k, op in enumerate(ops)]
    try:
        cap = np.array(ref["cap"], dtype=np.uint64)
    except (TypeError, ValueError, OverflowError) as e:
        raise UsageError(f"{args.commitment or args.openings}: cap: {e}") from None
    results, status = [], 0
    for index, opening in parsed:
        try:
            api.verify(ref["scheme"], cap, ref["dimensions"], index, opening, cap_height=ref["cap_height"])
            results.append({"index": index, "verdict": "HOLDS"})
        except CommitmentError as e:
            results.append({"index": index, "verdict": "REFUSED", "error": type(e).__name__, "message": str(e)})
            status = 1
        except (TypeError, ValueError) as e:
            raise UsageError(f"{args.openings}: index {index}: {e}") from None
    if args.json:
        say(json.dumps({"scheme": ref["scheme"], "verdict": "PASSED" if status == 0 else "FAILED",
                        "openings": results}))
    else:
        for r in results:
            label = f"Index {r['index']}"
            say(f"{label:.<18} {r['verdict']}" + (f" ({r['error']}: {r['message']})" if r["verdict"] == "REFUSED"
                                                 else ""))
        say("VERIFIED" if status == 0 else "REFUSED")
    return status
