#!/usr/bin/env python3
"""Host-side cost of the XRT backend at full size, measured against the stand-in pyxrt.

Runs host/xrt.py's XrtBackend on sim/fake_pyxrt.py (the kernel computed by the golden model) for a
2^(2k) transform and prints the three phases. On a card, to-device and from-device add the PCIe DMA
time to the host work measured here (scatter/gather and copies into the mapped buffers); the "kernel"
phase here is the golden model, not the card.

    .venv/bin/python scripts/bench_xrt_host.py [--lanes 16 --log-core 12 --channels 32] [--repeat 2]
"""

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.xrt import XrtBackend  # noqa: E402
from hw.model import ntt as ntt_model  # noqa: E402
from hw.model.params import BuildParams  # noqa: E402
from sim.fake_pyxrt import FakePyxrt, write_xclbin  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=16)
    ap.add_argument("--log-core", type=int, default=12)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    params = BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        xclbin = write_xclbin(Path(tmp) / "nantucket.xclbin", params)
        be = XrtBackend(params, xclbin=xclbin, pyxrt_module=FakePyxrt(), progress=True)
        print(f"{params.tag()}: N = 2^{params.log_n}; setup (load, ID check, {params.channels} buffers) "
              f"{time.perf_counter() - t0:.2f} s", flush=True)
        x = np.random.default_rng(1).integers(0, 2**64, size=params.n_points, dtype=np.uint64)
        want = ntt_model.ntt(x)
        for i in range(args.repeat):
            t = time.perf_counter()
            y = be.run(x)
            ok = np.array_equal(y, want)
            phases = ", ".join(f"{k} {v:.3f} s" for k, v in be.timings.items())
            print(f"run {i + 1}: {phases}; total {time.perf_counter() - t:.2f} s; "
                  f"{'matches' if ok else 'DIFFERS FROM'} the golden model", flush=True)
            if not ok:
                return 1
        be.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MiB; elapsed {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
