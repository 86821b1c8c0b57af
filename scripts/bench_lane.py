"""Lane figures for docs/performance.md: latency and storage per k, and Verilator simulation speed.

    .venv/bin/python scripts/bench_lane.py [--speed-cycles 200000] [--log-core 12]

Latency and storage come from the component's properties; speed runs sim/benches/lane.py's
test_sim_speed (no Python work per cycle) and the stream test (Python work every cycle) on Verilator.
Resources come from `nantucket synth --component lane --log-core 12 --json`.
"""

import argparse
import json
import sys
import time
import warnings

from nantucket.hw.lane import Lane            # noqa: E402
from nantucket.hw.flow.runner import build_dir_for, run_bench  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speed-cycles", type=int, default=200_000)
    ap.add_argument("--log-core", type=int, default=12)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    print("| k | period (cycles) | latency (cycles) | stored points | largest small buffer | twiddle words |")
    print("|---|---|---|---|---|---|")
    for k in range(2, 13):
        lane = Lane(k)
        small = max(lane.buffer_points, default=0)
        print(f"| {k} | {lane.period} | {lane.latency} | {lane.stored_points} | {small} | {lane.stored_twiddles} |")

    k = args.log_core
    params = {"log_core": k}
    t0 = time.monotonic()
    print(f"[bench_lane] k={k}: simulation speed over {args.speed_cycles} cycles ...", file=sys.stderr, flush=True)
    run_bench(Lane(k), name="lane", params=params, test_module="nantucket.sim.benches.lane", testcase="test_sim_speed",
              facts={"speed_cycles": args.speed_cycles})
    speed = json.loads((build_dir_for("lane", params) / "speed.json").read_text())
    print(f"\nk = {k}, Verilator, no Python work per cycle: {speed['cycles']} cycles in "
          f"{speed['seconds']:.2f} s = {speed['cycles'] / speed['seconds']:,.0f} cycles/s "
          f"(elapsed {time.monotonic() - t0:.0f} s with build/cache check)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
