#!/usr/bin/env python3
"""List every clock-domain crossing of the Vitis kernel and check it (hw/flow/crossings.py, hw/flow/constraints.py).

    check_crossings.py [--lanes 4 --log-core 4 --channels 2] [--workdir build/crossings]

Emits the kernel Verilog (top module ``nantucket``), reads it with Yosys, prints one line per crossing
(start domain -> end domain, endpoint, an example start point, through what), then evaluates the
generated constraint Tcl in tclsh against the same netlist. Ends with ``CROSSINGS OK`` (exit 0) or
``CROSSINGS FAILED`` and the reasons (exit 1): a crossing through neither a synchronizer nor a
dual-clock RAM, a constraint naming a cell that does not exist, a synchronizer or dual-clock RAM
without its constraint. Bad parameters: one line, exit 2. The default is a small build (seconds); the
crossings do not depend on the lane count or core size, the channel count only repeats the FIFOs.
"""

import argparse
import re
import sys
import time
from pathlib import Path

from nantucket.hw.flow import catalog  # noqa: E402
from nantucket.hw.flow.constraints import cdc_tcl  # noqa: E402
from nantucket.hw.flow.crossings import check_constraint_names, find_crossings, format_crossings, read_netlist  # noqa: E402
from nantucket.hw.kernel import VitisKernel  # noqa: E402
from nantucket.hw.model import regmap  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402


def constraint_problems(crossings, names: dict) -> list[str]:
    """Synchronizers and RAMs the constraints miss, and names that resolved to nothing."""
    problems = [f"constraint query found nothing: {q}" for q in names["empty"]]
    constrained = {re.sub(r"_reg(\[\d+\])?(/\w+)?$", "", c) for c in names["constrained"]}
    for c in crossings:
        if c.via == "synchronizer" and c.endpoint.replace(".", "/") not in constrained:
            # The later stages of a reset synchronizer are constrained through their PRE pins too.
            problems.append(f"synchronizer {c.endpoint} has no max-delay constraint")
        elif c.via and c.via.startswith("RAM ") and c.via[4:].replace(".", "/") not in constrained:
            problems.append(f"dual-clock {c.via} has no max-delay constraint")
    return problems


def check(kernel: VitisKernel, workdir: Path | None = None, out=print) -> bool:
    """Print the crossings of ``kernel`` and what is wrong with them; True when nothing is."""
    t0 = time.monotonic()
    params = kernel.params
    verilog = catalog.verilog_of(kernel, regmap.KERNEL_NAME)
    netlist = read_netlist(verilog, regmap.KERNEL_NAME, workdir)
    crossings = find_crossings(netlist, VitisKernel.CLOCKS, VitisKernel.port_domain)
    out(f"Kernel {params.tag()}: {len(crossings)} crossings between the dma and ntt domains")
    out(format_crossings(crossings))
    tcl = cdc_tcl(verilog, regmap.KERNEL_NAME, VitisKernel.CLOCK_NETS)
    names = check_constraint_names(tcl, netlist)
    problems = [f"crossing {c.start_domain} -> {c.end_domain} into {c.endpoint} (from {c.start}) passes "
                f"through no synchronizer and no dual-clock RAM" for c in crossings if c.via is None]
    problems += constraint_problems(crossings, names)
    out(f"Constraints: {len(names['constrained'])} cells/pins with a max delay, {len(names['async_reg'])} "
        f"with ASYNC_REG, every name found in the netlist: {'yes' if not names['empty'] else 'no'}")
    out(f"Checked in {time.monotonic() - t0:.1f} s")
    for p in problems:
        out(f"  {p}")
    out("CROSSINGS OK" if not problems else f"CROSSINGS FAILED ({len(problems)} problems)")
    return not problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="check_crossings", description=__doc__.split("\n\n")[0])
    ap.add_argument("--lanes", type=int, default=4)
    ap.add_argument("--log-core", type=int, default=4)
    ap.add_argument("--channels", type=int, default=2)
    ap.add_argument("--workdir", type=Path, help="keep design.v and netlist.json here")
    args = ap.parse_args(argv)
    try:
        kernel = VitisKernel(BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels))
    except (TypeError, ValueError) as e:
        print(f"check_crossings: {e}", file=sys.stderr)
        return 2
    return 0 if check(kernel, args.workdir) else 1


if __name__ == "__main__":
    sys.exit(main())
