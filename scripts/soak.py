"""`make soak N=.. SEED=..`: the constrained-random kernel regression (sim/regression.py) at length.

N random starts (size, batch, flags, coset shift, chained output or zero-extended input, refused
arguments, HBM refresh and random AXI stalls) through the kernel RTL in Verilator, register by register,
every result checked against the golden model and every status record checked. `make test` runs 500 of
them (tests/test_kernel_faults.py); this runs as many as asked, on the build asked for (default the
4-lane k = 4 build `make test` uses). The report goes to stdout, progress with ETA to stderr, the
simulator's output to a log file named on failure. Exit 0: every run passed; 1: a run failed (the line
names the seed and the run: the same SEED reproduces it); 2: bad arguments.
"""

import argparse
import shutil
import sys
import warnings
from pathlib import Path

from nantucket.tools.perfdoc import StepProgress  # noqa: E402

from amaranth.hdl import UnusedElaboratable  # noqa: E402

from nantucket.hw.model.layout import HbmLayout  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402
from nantucket.sim.cosim import SimulatedKernel  # noqa: E402
from nantucket.sim.kernel_model import HbmModel  # noqa: E402
from nantucket.sim.regression import RegisterCard, RegressionFailure, regress  # noqa: E402

warnings.simplefilter("ignore", UnusedElaboratable)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, nargs="?", default=5000, help="random starts (default 5000)")
    ap.add_argument("--seed", type=int, default=1, help="the regression's seed (default 1)")
    ap.add_argument("--lanes", type=int, default=4)
    ap.add_argument("--log-core", type=int, default=4)
    ap.add_argument("--channels", type=int, default=4)
    args = ap.parse_args(argv)
    if args.n < 1:
        print(f"soak: N: expected a positive number of runs, got {args.n}", file=sys.stderr)
        return 2
    try:
        params = BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels)
        layout = HbmLayout(params)
    except (TypeError, ValueError) as e:
        print(f"soak: build parameters: {e}", file=sys.stderr)
        return 2
    print(f"[soak] {args.n} random starts on the {params.tag()} build, seed {args.seed}; building or reusing "
          "the simulator", file=sys.stderr, flush=True)
    kernel = SimulatedKernel(params, HbmModel(params.channels), layout,
                             progress=lambda line: None)
    log = kernel._log_path()
    steps = max(1, args.n // 100)
    progress = StepProgress(-(-args.n // steps))
    try:
        counts = regress(RegisterCard(kernel), args.n, args.seed,
                         progress=lambda i, n: (i % steps == 0 or i == n) and progress(f"{i}/{n} runs"))
    except RegressionFailure as e:
        kept = Path("build") / "soak" / "simulator.log"     # the scratch directory goes with the simulator
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, kept)
        kernel.close()
        print(f"soak: FAILED: {e} (simulator log: {kept})", file=sys.stderr)
        return 1
    kernel.close()
    secs = counts.pop("seconds")
    print(f"soak: PASSED: {counts['runs']} random starts on {params.tag()}, seed {args.seed}, in {secs:.0f} s "
          f"({counts['runs'] / secs:.1f} runs/s)")
    print("  " + ", ".join(f"{k} {v}" for k, v in counts.items() if k != "runs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
