"""`make bench-sizes`: every run-time size of one build through the kernel RTL (Verilator, HBM models with
refresh), one simulated card, the sizes back to back without a reset; every point checked against the
golden model. Records NTT cycles, the ratio to the ideal 2 x N / 2L and the projected time per size in
docs/performance.md ("Run-time sizes") and draws docs/img/sizes.svg (projected time against n, with the
reference's flat 2.47 ms beside it).

Default: the default build (16 lanes, k = 12, 32 channels), n = 8 .. 24. ``--field babybear`` (or
``FIELD=`` on make): that field's default build (32 lanes), its section "Run-time sizes: babybear" and
docs/img/sizes_babybear.svg. ``--sizes 8-20`` or ``--sizes 10,16`` for fewer; ``--no-doc`` to only print.
The whole default range takes about 15 min.
"""

import argparse
import os
import sys
import time

from nantucket.tools.perfdoc import StepProgress, doc_path, update_section

import numpy as np

from nantucket.hw.model import field as F, ntt
from nantucket.hw.model.params import BuildParams
from nantucket.host.sim_backend import SimBackend
from nantucket.host.workloads import make_points

#: The ZPrize 2022 winner's measured kernel time, the same for every size (it pads to 2^24).
REFERENCE_MS = 2.47
#: The targets on the default build (2^24: the first full-size run's count, so a change that costs cycles
#: shows): n -> (limit in NTT cycles, how it is stated).
TARGETS = {24: (1_057_713, "<= 1,057,713 (no regression)"), 23: (None, "<= 1.02 x ideal"),
           20: (72_090, "<= 72,090 (1.10 x ideal)"), 18: (23_000, "<= 23,000"), 16: (8_000, "<= 8,000")}
#: the picture beside docs/performance.md (None installed without a checkout: not drawn)
PICTURE = doc_path("docs/img/sizes.svg")


def parse_sizes(text: str, params: BuildParams) -> list[int]:
    sizes = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        sizes += list(range(int(lo), int(hi or lo) + 1))
    for n in sizes:
        params.check_log_n(n)
    return sizes


# A size's run costs a fixed part (making points, the driver, the kernel's set-up: about 25 s of the
# simulator) plus time proportional to N (2^24 points about 8 min): the fixed part is about 2^20 points' worth.
FIXED_POINTS = 1 << 20


def size_weights(sizes: list[int]) -> list[int]:
    """Each size's cost in points' worth, by that model: the progress display's weights."""
    return [(1 << n) + FIXED_POINTS for n in sizes]


def target_met(n: int, cycles: int, ideal: int) -> str:
    if n not in TARGETS:
        return ""
    limit, text = TARGETS[n]
    ok = cycles <= (limit if limit is not None else 1.02 * ideal)
    return f"{text}: {'met' if ok else 'MISSED'}"


def svg_chart(rows: list[dict], params: BuildParams) -> str:
    """Projected kernel time (log scale) against n, nantucket's points joined by a line and the
    reference's flat 2.47 ms as a dashed line. Plain SVG, no plotting library."""
    import math
    w, h, left, right, top, bottom = 640, 360, 70, 20, 40, 50
    ns = [r["n"] for r in rows]
    times = [r["ms"] for r in rows]
    lo = 10 ** math.floor(math.log10(min(times + [REFERENCE_MS])))
    hi = 10 ** math.ceil(math.log10(max(times + [REFERENCE_MS])))
    x0, x1 = min(ns), max(ns)

    def px(n):
        return left + (n - x0) / max(1, x1 - x0) * (w - left - right)

    def py(ms):
        return top + (math.log10(hi) - math.log10(ms)) / (math.log10(hi) - math.log10(lo)) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">Projected kernel time by size, '
           f'{params.tag()} at {params.ntt_mhz:g} MHz (simulated, HBM refresh on)</text>']
    decade = lo
    while decade <= hi * 1.0001:
        y = py(decade)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#ddd"/>')
        label = f"{decade:g} ms"
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        decade *= 10
    for n in ns:
        out.append(f'<text x="{px(n):.1f}" y="{h - bottom + 18}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">n (N = 2^n points)</text>')
    yr = py(REFERENCE_MS)
    out.append(f'<line x1="{px(x0):.1f}" y1="{yr:.1f}" x2="{px(x1):.1f}" y2="{yr:.1f}" stroke="#c33" '
               'stroke-dasharray="6,4" stroke-width="2"/>')
    out.append(f'<text x="{px(x0) + 4:.1f}" y="{yr - 6:.1f}" fill="#c33">reference (ZPrize 2022 winner): '
               f'{REFERENCE_MS} ms for every size</text>')
    pts = " ".join(f"{px(r['n']):.1f},{py(r['ms']):.1f}" for r in rows)
    out.append(f'<polyline points="{pts}" fill="none" stroke="#236" stroke-width="2"/>')
    for r in rows:
        out.append(f'<circle cx="{px(r["n"]):.1f}" cy="{py(r["ms"]):.1f}" r="3.5" fill="#236">'
                   f'<title>2^{r["n"]}: {r["cycles"]:,} cycles, {r["ms"]:.4f} ms</title></circle>')
    out.append(f'<text x="{px(x1) - 4:.1f}" y="{py(times[-1]) + 18:.1f}" text-anchor="end" fill="#236">'
               'nantucket, native size</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None):
    os.environ.setdefault("NANTUCKET_SIM_OPT", "-O2")   # long runs: compile for speed (set here, not at import)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--field", default=F.DEFAULT_FIELD.name, choices=F.FIELD_NAMES)
    ap.add_argument("--lanes", type=int, help="default: the field's default build's (16; 32 in a 31-bit field)")
    ap.add_argument("--log-core", type=int, help="default: 12")
    ap.add_argument("--channels", type=int, help="default: 32")
    ap.add_argument("--sizes", default=None, help="n values, e.g. 8-24 or 10,16 (default: 8..2k)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/performance.md and the picture")
    args = ap.parse_args(argv)
    try:
        given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core), ("channels", args.channels))
                 if v is not None}
        params = BuildParams.default_for(args.field, **given)
        sizes = parse_sizes(args.sizes or f"{max(8, params.min_log_n)}-{params.max_log_n}", params)
    except (TypeError, ValueError) as e:
        print(f"bench_sizes: {e}", file=sys.stderr)
        return 2
    t_start = time.perf_counter()

    def progress(line):
        print(f"[{time.perf_counter() - t_start:7.1f} s] {line}", file=sys.stderr, flush=True)

    backend = SimBackend(params, field=params.field, refresh=True)
    field, default = params.prime_field, params.field == F.DEFAULT_FIELD.name
    rows, failed = [], 0
    try:
        backend.open(params)
        progress(f"simulated card {params.tag()} ready; the sizes' times count from here")
        step = StepProgress(weights=size_weights(sizes))
        for n in sizes:
            x = make_points(n, "random", args.seed + n, field.name).astype(np.uint64)    # a backend's rows
            t0 = time.perf_counter()
            y = backend.run(x)
            wall = time.perf_counter() - t0
            bad = int(np.count_nonzero(y != ntt.ntt(x, field=field)))
            failed += bad > 0
            cycles = backend.kernel.last_ntt_cycles
            ideal = params.ideal_cycles(n)
            ms = cycles / (params.ntt_mhz * 1e6) * 1e3
            rows.append({"n": n, "cycles": cycles, "ideal": ideal, "ms": ms, "bad": bad, "wall": wall})
            step(f"2^{n}: {'PASSED' if not bad else f'FAILED ({bad} points differ)'}, {cycles:,} cycles "
                 f"({cycles / ideal:.3f} x ideal), {ms:.4f} ms; {wall:.0f} s")
    finally:
        backend.close()
    table = ["| n | NTT cycles | ideal | ratio | projected | vs 2.47 ms | target | result |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(f"| {r['n']} | {r['cycles']:,} | {r['ideal']:,} | {r['cycles'] / r['ideal']:.3f} | "
                     f"{r['ms'] * 1e3:,.1f} us | {REFERENCE_MS / r['ms']:,.1f} x faster | "
                     f"{target_met(r['n'], r['cycles'], r['ideal']) if default else ''} | "
                     f"{'PASSED' if not r['bad'] else 'FAILED'} |")
    print("\n".join(table))
    if not args.no_doc and not failed:
        name = "sizes.svg" if default else f"sizes_{field.name}.svg"
        body = ["## Run-time sizes" + ("" if default else f": {field.name}"), "",
                f"Command: `make bench-sizes{'' if default else ' FIELD=' + field.name}` (scripts/bench_sizes.py, "
                f"{params.tag()}, random points, HBM refresh "
                f"on, one simulated card running the sizes back to back without a reset), {time.strftime('%Y-%m-%d')}. "
                f"Projected times at {params.clock_note()}; ideal = "
                f"2 passes x N / {2 * params.lanes} points per cycle. Every point of every size checked against "
                "the golden model.", "", *table, "",
                f"![Projected kernel time against n, with the reference's flat 2.47 ms](img/{name})"]
        doc = update_section("sizes" if default else f"sizes-{field.name}", "\n".join(body))
        if PICTURE is None:
            progress("installed without a checkout: the section printed above, the picture not drawn")
        else:
            picture = PICTURE.with_name(name)
            picture.write_text(svg_chart(rows, params))
            progress(f"wrote {doc} and {picture}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
