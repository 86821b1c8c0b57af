"""`make`-less projection: transforms past one kernel call on a build (default: the default build,
L16_k12_C32, sizes 2^25 .. 2^28), as host/large.py runs them: the four-step over batched kernel calls with
the transposes on the host and the between-steps twiddles in the kernel's coset row steps
(``four_step(row_steps=True)``, as the sim and xrt backends run it).

Per size: the kernel calls of each step (``host.large.plan_steps``), the kernel's HBM traffic (each call
reads and writes every point once per pass: 4 x N x point bytes a step), the PCIe transfers (each step
moves the points to the card and back), and the projected times:

- kernel: the model of the kernel's cycles the run report and the stand-in card use
  (``BuildParams.ideal_cycles(log_n)`` x rows, two passes of N / 2L cycles; measured batches run at
  1.010 .. 1.018 x it, docs/performance.md "Transforms in the kernel") at the build's NTT clock;
- link: the platform's PCIe Gen3 x4 rates (nantucket.hw.model.platform, which sim.fake_pyxrt.LinkTiming reads: 3.24 GB/s to the card, 2.38 GB/s
  from it), the two directions of a step one after the other (no overlap assumed);
- host: the transposes of host/large.py measured on this machine at 2^``--measure`` points and scaled by
  the point count (numpy, one thread); the host's twiddles (the four-step without row steps) are measured
  too, for comparison.

Writes the section "large-sizes" of docs/performance.md (``--no-doc``: print only).
"""

import argparse
import datetime
import sys
import time

from nantucket.tools.perfdoc import parse_list, update_section  # noqa: E402

import numpy as np  # noqa: E402

from nantucket.host import large as L  # noqa: E402
from nantucket.hw.model import field as F  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402
from nantucket.sim.fake_pyxrt import LinkTiming  # noqa: E402


def host_seconds_per_point(field: F.Field, log_n: int, min_log_n: int, row_steps: bool = True) -> float:
    """The host's share of a four-step (the gather before step 1, the transpose between the steps, the
    transpose after step 2; without ``row_steps`` the between-steps twiddles too) per point, measured with
    the identity as the kernel at 2^log_n points."""
    x = np.random.default_rng(0).integers(0, field.p, 1 << log_n, dtype=np.uint64)
    max_log_n = log_n - min_log_n
    t0 = time.perf_counter()
    L.four_step(x, inverse=False, coset=7, order="nn", field=field, min_log_n=min_log_n, max_log_n=max_log_n,
                native=lambda rows, inverse, coset, order, step=None: rows, row_steps=row_steps)
    return (time.perf_counter() - t0) / (1 << log_n)


def rows_for(params: BuildParams, sizes: list[int], host_per_point: float, link: LinkTiming) -> list[dict]:
    point_bytes = params.prime_field.point_bytes
    out = []
    for log_n in sizes:
        steps = L.plan_steps(params, log_n, row_steps=True)
        n = 1 << log_n
        cycles = sum(s["rows"] * params.ideal_cycles(s["log_n"]) for s in steps)
        kernel_s = cycles / (params.ntt_mhz * 1e6)
        moved = n * point_bytes                      # per step, each direction
        link_s = len(steps) * (link.sync_seconds(moved, True) + link.sync_seconds(moved, False))
        host_s = host_per_point * n
        out.append({"log_n": log_n, "steps": steps, "calls": sum(s["kernel_calls"] for s in steps),
                    "hbm_bytes": len(steps) * 4 * moved, "pcie_bytes": 2 * len(steps) * moved,
                    "cycles": cycles, "kernel_s": kernel_s, "link_s": link_s, "host_s": host_s,
                    "host_gib": 3 * moved / 2**30})
    return out


def gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.0f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:,.0f} MiB"


def row_step_setup_cycles(params: BuildParams) -> int:
    """NTT cycles a row-stepped call spends before its first factors beyond a call that reuses its shift:
    the chain job for its new shift and its table sets, at most (``CosetFactors.new_word_cycles``)."""
    from nantucket.hw.coset import CosetFactors
    return CosetFactors(params, {f: 0 for f in range(2, params.log_core + 1)}).new_word_cycles(params.log_core)


def section(params: BuildParams, rows: list[dict], measure: int, per_point: float, link: LinkTiming,
            command: str, twiddled_per_point: float) -> str:
    today = datetime.date.today().isoformat()
    setup = row_step_setup_cycles(params)
    lines = [
        "## Sizes past one kernel call",
        "",
        f"Command: `{command}` (scripts/large_sizes.py), {today}, {params.tag()} build, forward transform. "
        f"A projection from models, not a measurement on a card: kernel time = the ideal cycles "
        f"(`BuildParams.ideal_cycles`, 2 passes x N / {params.points_per_cycle} points a cycle, per row of "
        f"each step; measured batches run at 1.010 .. 1.018 x it) at the {params.ntt_mhz:g} MHz NTT clock; "
        f"link = the points to the card and back once per step at {link.to_card_gbps:g} / "
        f"{link.from_card_gbps:g} GB/s (PCIe Gen3 x4, `nantucket.hw.model.platform`), directions not "
        f"overlapped; host = the transposes of host/large.py (the twiddles in the kernel's row steps) "
        f"measured here at 2^{measure} points ({per_point * 1e9:.1f} ns a point, numpy, one thread, 2 cores "
        f"shared with other jobs; {twiddled_per_point * 1e9:.1f} ns a point with the twiddles on the host, "
        f"the four-step without row steps) and scaled by N. The kernel's HBM "
        f"traffic is 4 x N x {params.prime_field.point_bytes} bytes a step (each pass reads and writes "
        "every point once).",
        "",
        "| n | step 1 (columns) | step 2 (rows) | kernel calls | HBM traffic | PCIe traffic | kernel | link | "
        "host | total | host memory |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s1, s2 = r["steps"][0], r["steps"][-1]
        total = r["kernel_s"] + r["link_s"] + r["host_s"]
        lines.append(
            f"| {r['log_n']} | {s1['rows']:,} x 2^{s1['log_n']} in {s1['kernel_calls']} calls | "
            f"{s2['rows']:,} x 2^{s2['log_n']} in {s2['kernel_calls']} calls | {r['calls']} | {gib(r['hbm_bytes'])} | "
            f"{gib(r['pcie_bytes'])} | {r['kernel_s'] * 1e3:,.1f} ms | {r['link_s'] * 1e3:,.0f} ms | "
            f"{r['host_s']:,.1f} s | {total:,.1f} s | ~{r['host_gib']:.0f} GiB |")
    lines += [
        "",
        "- The card's memory holds one call's buffers (2^(2k) points per channel set), not the transform: the "
        "points stay in host memory between the steps, so the size is bounded by the host's memory "
        "(about 3 copies of the array: the input, the step's rows, its output) and the field's 2-adicity, "
        "not by the HBM.",
        f"- The kernel is {max(r['kernel_s'] / (r['kernel_s'] + r['link_s'] + r['host_s']) for r in rows):.2%} "
        "of the total or less: the host's transposes (numpy, one thread) dominate, then the link. The "
        "twiddles run in the kernel's row steps (docs/api.md \"Sizes past one kernel call\"), which "
        f"took the host from {twiddled_per_point * 1e9:.1f} to {per_point * 1e9:.1f} ns a point "
        f"({twiddled_per_point / per_point:.1f} x); keeping the points on the card between the steps (the "
        "transpose in the HBM layout) would remove the link's second round trip and the transposes.",
        f"- Not in the kernel column: each row-stepped call starts from a shift of its own, so it pays the coset "
        f"block's chain job for a new shift and its tables (`CosetFactors.new_word_cycles(k)`, at most "
        f"{setup:,} NTT cycles on this build), {setup / params.ideal_cycles(params.max_log_n):.2%} "
        f"of a {params.max_log_n}-bit call's ideal cycles; its elements ({2 * params.lanes} x `update_cycles` "
        "points or more) add no stall. Measured at L4_k6_C4: docs/api.md \"Sizes past one kernel call\".",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="25-28", help="log2 sizes past one call (default 25-28)")
    ap.add_argument("--measure", type=int, default=22, help="log2 of the size the host work is timed at")
    ap.add_argument("--no-doc", action="store_true", help="print the section, do not write the doc")
    args = ap.parse_args(argv)
    params = BuildParams()
    sizes = parse_list(args.sizes)
    for n in sizes:
        if not params.max_log_n < n <= params.prime_field.two_adicity:
            print(f"--sizes: 2^{n} is not past one call of {params.tag()} (2^{params.max_log_n}) within "
                  f"{params.field}'s 2^{params.prime_field.two_adicity}", file=sys.stderr)
            return 2
    link = LinkTiming()
    per_point = host_seconds_per_point(params.prime_field, args.measure, params.min_log_n)
    twiddled = host_seconds_per_point(params.prime_field, args.measure, params.min_log_n, row_steps=False)
    rows = rows_for(params, sizes, per_point, link)
    command = ".venv/bin/python scripts/large_sizes.py" + (f" --sizes {args.sizes}" if args.sizes != "25-28" else "")
    body = section(params, rows, args.measure, per_point, link, command, twiddled)
    print(body)
    if not args.no_doc:
        update_section("large-sizes", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
