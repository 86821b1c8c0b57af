"""Every formal proof of the project, its covers and its mutants, and the one-line-a-property report.

A :class:`Proof` is a wrapper (hw/formal/dma_read.py, dma_write.py, control.py, crossing.py,
fifo_reset.py, sync.py, counts.py, kernel.py) with its depths. Running it
(:func:`run_proof`) does three things, each a SymbiYosys task:

1. ``prove`` (k-induction of ``depth`` steps): PASS -> every assertion "proved (k-induction)"; induction not
   closed -> the base case held, every assertion "bounded to depth D" (D = ``depth``); a base-case failure
   names the assertion and its counterexample VCD.
2. ``cover``: every Cover reached within ``cover_depth`` steps (so the assertions are not met vacuously).
3. one bounded run per mutant (the wrapper's ``MUTANTS``: the behaviour broken between the design and the
   monitor, only that assertion kept): the assertion must FAIL there, within ``mutant_depth`` steps.

The quick set (``deep=False``, make test) runs k-induction at ``depth`` on the proofs marked
``induct_quick`` (those it closes on, cheaply) and bounds the others to ``depth`` (BMC), and runs the first
:data:`QUICK_MUTANTS` mutants of each proof; the deep set k-induction at ``deep_depth`` and every mutant.

Each line reads ``proof.property: result``; tool output goes to a log whose path a failing line names.
"""

import dataclasses
import time
from pathlib import Path

from .control import MUTANTS as CONTROL_MUTANTS
from .control import ControlHarness
from .counts import MUTANTS as COUNTS_MUTANTS
from .counts import CountsCrossingHarness
from .crossing import MUTANTS as CROSSING_MUTANTS
from .crossing import FifoCrossingHarness
from .dma_read import MUTANTS as READ_MUTANTS
from .dma_read import ReadMasterHarness
from .dma_write import MUTANTS as WRITE_MUTANTS
from .fifo_reset import MUTANTS as RESET_MUTANTS
from .fifo_reset import FifoResetHarness
from .kernel import GROUPS as KERNEL_GROUPS
from .kernel import MUTANTS as KERNEL_MUTANTS
from .kernel import KernelHarness
from .dma_write import WriteMasterHarness
from .props import Props
from .sby import rtlil_of, run_sby
from .sync import MUTANTS as SYNC_MUTANTS
from .sync import RunCrossingHarness

__all__ = ["Proof", "PROOFS", "QUICK_MUTANTS", "run_proof", "main"]

#: the kernel proofs' depth: an accepted run's earliest start (step 10: the host writes its arguments
#: first) and the longest run (DONE_CYCLES = 22 cycles, done at step 33), and a step to spare
KERNEL_DEPTH = 34

#: mutants a proof runs in the quick set (the first of its wrapper's MUTANTS; the deep set runs them all)
QUICK_MUTANTS = 3


@dataclasses.dataclass(frozen=True)
class Proof:
    name: str
    harness: type
    kwargs: dict
    mutants: dict
    depth: int                # k-induction / bounded depth of the quick set
    deep_depth: int           # of the deep set (make formal, make test-full)
    cover_depth: int
    mutant_depth: int
    quick: bool = True        # in make test's quick set (else only in the deep one)
    induct_quick: bool = False  # the quick set tries k-induction too (cheap proofs that close)
    bmc_only: bool = False    # bounded in both sets (k-induction has no invariants to close on)


PROOFS = (
    # the three bus wrappers close by k-induction with their invariants: the quick set proves them too
    Proof("axi_read_master", ReadMasterHarness, dict(total_beats=32, burst_beats=8, fifo_beats=16),
          READ_MUTANTS, depth=6, deep_depth=8, cover_depth=24, mutant_depth=14, induct_quick=True),
    Proof("axi_write_master", WriteMasterHarness, dict(total_beats=32, write_bursts=4),
          WRITE_MUTANTS, depth=6, deep_depth=8, cover_depth=20, mutant_depth=14, induct_quick=True),
    Proof("control_slave", ControlHarness, {}, CONTROL_MUTANTS, depth=8, deep_depth=10, cover_depth=24,
          mutant_depth=14, induct_quick=True),
    # the two clocks as ticks of one: each step is a moment, not a cycle (hw/formal/crossing.py)
    Proof("fifo_crossing", FifoCrossingHarness, dict(depth=4, width=3, max_period=4), CROSSING_MUTANTS,
          depth=12, deep_depth=16, cover_depth=16, mutant_depth=12, quick=False),
    Proof("fifo_crossing_level_full", FifoCrossingHarness, dict(depth=4, width=3, max_period=4, exact_full=False),
          CROSSING_MUTANTS, depth=12, deep_depth=16, cover_depth=16, mutant_depth=12, quick=False),
    # the same FIFO with both domains' resets free, mid-stream (hw/formal/fifo_reset.py)
    Proof("fifo_reset", FifoResetHarness, dict(depth=4, width=3, max_period=3, hold=0), RESET_MUTANTS,
          depth=12, deep_depth=16, cover_depth=20, mutant_depth=14, quick=False),
    Proof("fifo_reset_level_full", FifoResetHarness, dict(depth=4, width=3, max_period=3, hold=0, exact_full=False),
          RESET_MUTANTS, depth=12, deep_depth=16, cover_depth=20, mutant_depth=14, quick=False),
    # the start pulse and the run beside it (hw/formal/sync.py), the kernel's and the DMA's pass state, at
    # 4 : 1 either way (k = 24 for the DMA's: its start takes 3 stages and 2 registers)
    Proof("run_crossing_kernel", RunCrossingHarness, dict(use="kernel", max_period=4), SYNC_MUTANTS,
          depth=16, deep_depth=16, cover_depth=40, mutant_depth=24, induct_quick=True),
    Proof("pass_crossing_dma", RunCrossingHarness, dict(use="dma", max_period=4), SYNC_MUTANTS,
          depth=24, deep_depth=24, cover_depth=40, mutant_depth=24, induct_quick=True),
    # the record's NTT cycle counts back to the dma clock, read SETTLE_CYCLES (16) after the window closed
    Proof("cycle_counts_crossing", CountsCrossingHarness, dict(settle=16, max_period=4), COUNTS_MUTANTS,
          depth=20, deep_depth=20, cover_depth=40, mutant_depth=24, induct_quick=True),
    # the kernel with a stub engine (hw/formal/kernel.py), its runs and master 0's hand-over (two solver
    # runs), bounded past the longest run (DONE_CYCLES) from the earliest start of an accepted run
    *(Proof(f"kernel_{group}", KernelHarness, dict(group=group),
            {n: KERNEL_MUTANTS[n] for n in KERNEL_GROUPS[group]}, depth=KERNEL_DEPTH, deep_depth=KERNEL_DEPTH,
            cover_depth=KERNEL_DEPTH, mutant_depth=KERNEL_DEPTH, quick=False, bmc_only=True)
      for group in KERNEL_GROUPS),
)


def _il(proof, **extra):
    h = proof.harness(**proof.kwargs, **extra)
    return h, rtlil_of(h, h.ports)


def _fmt(r):
    return f"{r.seconds:.0f} s"


def run_proof(proof: Proof, work: Path, *, deep=False, covers=True, mutants=None, print_=print) -> list:
    """Run ``proof`` (see the module doc) in ``work``; print and return its lines. ``mutants``: the names
    to break (default all); a line starting "FAILED" or "NOT" marks a failure."""
    work = Path(work) / proof.name
    depth = proof.deep_depth if deep else proof.depth
    lines = []

    def say(line):
        lines.append(line)
        print_(line)

    h, il = _il(proof)
    names = h.props_names
    asserts = [n for n, k in names.items() if k == "assert"]
    # the quick set bounds the proofs k-induction does not close on (its second solver is spared)
    induct = (deep or proof.induct_quick) and not proof.bmc_only
    r = run_sby(work, proof.name, il, mode="prove" if induct else "bmc", depth=depth)
    if r.status == "PASS" and not induct:
        verdict = {n: f"bounded to depth {depth} ({_fmt(r)} for the set)" for n in asserts}
    elif r.status == "PASS":
        verdict = {n: f"proved (k-induction, k = {depth}; {_fmt(r)} for the set)" for n in asserts}
    elif r.status == "UNKNOWN":
        verdict = {n: f"bounded to depth {depth} (k-induction did not close; {_fmt(r)} for the set)"
                   for n in asserts}
    elif r.status == "FAIL":
        verdict = {n: f"not decided (the proof stopped at a failure; log {r.log})" for n in asserts}
        for n in r.failed:
            verdict[n] = f"FAILED at step {r.step}: counterexample {r.trace} (log {r.log})"
    else:
        verdict = {n: f"FAILED: sby {r.status} (log {r.log})" for n in asserts}
    if mutants is None:
        mutants = list(proof.mutants) if deep else list(proof.mutants)[:QUICK_MUTANTS]
    chosen = [n for n in proof.mutants if n in mutants]
    for n in chosen:
        _, mil = _il(proof, mutant=n, only=n)
        mdepth = proof.mutant_depth
        mr = run_sby(work, f"{proof.name}_mutant_{n}", mil, mode="bmc", depth=mdepth)
        if mr.status == "FAIL" and n in mr.failed:
            verdict[n] += f"; its mutant fails it at step {mr.step} ({_fmt(mr)})"
        else:
            verdict[n] = (f"NOT shown to fail on its mutant (sby {mr.status} to depth {mdepth}, "
                          f"log {mr.log}); " + verdict[n])
    reached, cr = set(), None
    if covers:
        cr = run_sby(work, proof.name, il, mode="cover", depth=proof.cover_depth)
        reached = set(cr.reached)
    for n in asserts:
        reach = Props.reach_of(n)
        if cr is None or reach not in names:
            tail = ""
        elif reach in reached:
            tail = f"; its case reached (cover, {_fmt(cr)} for the covers)"
        else:
            tail = f"; NOT shown reachable within {proof.cover_depth} steps (log {cr.log})"
        say(f"{proof.name}.{n}: {verdict[n]}{tail}")
    for n, k in names.items():
        if k != "cover" or n.endswith("_reached") or cr is None:
            continue
        if n in reached:
            say(f"{proof.name}.{n}: reached within {proof.cover_depth} steps")
        else:
            say(f"{proof.name}.{n}: NOT reached within {proof.cover_depth} steps (log {cr.log})")
    return lines


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m nantucket.hw.formal",
                                 description="run every formal proof (hw/formal/), one line a property")
    ap.add_argument("--work", default="build/formal", help="where the sby runs go (default build/formal)")
    ap.add_argument("--quick", action="store_true", help="the quick depths (make test's) instead of the deep ones")
    ap.add_argument("--only", action="append", help="run only this proof (repeatable)")
    args = ap.parse_args(argv)
    t0, bad = time.monotonic(), 0
    for proof in PROOFS:
        if (args.only and proof.name not in args.only) or (args.quick and not proof.quick):
            continue
        lines = run_proof(proof, Path(args.work), deep=not args.quick)
        bad += sum(1 for line in lines if "FAILED" in line or "NOT " in line)
    print(f"formal: {bad} failing line(s), {time.monotonic() - t0:.0f} s")
    return 1 if bad else 0
