"""`make sim-full`: a random 2^n point transform (default n = 2k) through the kernel RTL in Verilator, checked
point by point against the golden model, with the host's XRT driver on the simulated card (sim backend).

Default: the default build (16 lanes, k = 12, 32 channels, N = 2^24), HBM refresh on. ``--log-n n`` runs
any native size of the build (`make sim-full LOG_N=18`); ``--field`` a build for another field preset with
64-bit points (`make sim-full FIELD=goldilocks-plonky2`), checked against the golden model in that field. Reports wall time
(build, preload, kernel, read-back), kernel cycles, the projected time at the NTT clock and the efficiency
against the ideal 2 * N / (2L) cycles, and writes them to docs/performance.md.
"""

import argparse
import gc
import os
import resource
import sys
import time
import warnings

from nantucket.tools.perfdoc import update_section

import numpy as np
from amaranth.hdl import UnusedElaboratable

from nantucket.hw.engine import NttEngine
from nantucket.hw.model import ntt
from nantucket.hw.model.field import DEFAULT_FIELD, FIELD_NAMES
from nantucket.hw.model.params import BuildParams
from nantucket.host.workloads import KINDS, make_points
from nantucket.host.sim_backend import SimBackend


NOTE = ("What makes it fit: each repeated block (lane, butterfly, multiply/reduce) is emitted once and "
        "instantiated (hw/shared.py; the default kernel is 3.3 MB of Verilog, 16 s to emit), the HBM models "
        "keep their data in a plain Verilog array loaded and dumped through hex files, and the run-once C++ "
        "is compiled at -O0. The 2^24 cycle count is deterministic (same seed, same count).")


def _engine_latencies(params: BuildParams, log_n: int) -> tuple[int, int]:
    """The engine's published latencies of the two passes of a 2^log_n run (an engine built for its
    properties only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        engine = NttEngine(params)
        latencies = tuple(engine.latency_at(f) for f in params.pass_log_sizes(log_n))
        del engine
        gc.collect()
    return latencies


def main(argv=None):
    os.environ.setdefault("NANTUCKET_SIM_OPT", "-O2")   # long runs: compile for speed (set here, not at import)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, help="default: the field's default build's (16, or 32 in a 31-bit field)")
    ap.add_argument("--log-core", type=int, help="default: 12")
    ap.add_argument("--channels", type=int, help="default: 32")
    ap.add_argument("--field", default=DEFAULT_FIELD.name, help=f"the build's field ({', '.join(FIELD_NAMES)})")
    ap.add_argument("--log-n", type=int, default=None, help="transform size 2^n (default: the build's largest)")
    ap.add_argument("--kind", choices=KINDS, default="random")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-refresh", action="store_true", help="HBM refresh windows off")
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/performance.md")
    args = ap.parse_args(argv)
    try:
        given = {k: v for k, v in (("lanes", args.lanes), ("log_core", args.log_core), ("channels", args.channels))
                 if v is not None}
        params = BuildParams.default_for(args.field, **given)
        log_n = params.max_log_n if args.log_n is None else params.check_log_n(args.log_n)
    except (TypeError, ValueError) as e:
        print(f"sim-full: {e}", file=sys.stderr)
        return 2
    t_start = time.perf_counter()

    def progress(line):
        print(f"[{time.perf_counter() - t_start:7.1f} s] {line}", flush=True)

    progress(f"sim-full: {params.tag()}, N = 2^{log_n}, {args.kind} points, "
             f"refresh {'off' if args.no_refresh else 'on'}, C++ {os.environ['NANTUCKET_SIM_OPT']}")
    x = make_points(log_n, args.kind, args.seed, params.field).astype(np.uint64)   # a backend's rows: uint64
    expected = ntt.transform(x, field=params.prime_field)
    progress("golden model done")
    backend = SimBackend(params, field=params.field, refresh=not args.no_refresh, progress=progress)
    try:
        backend.open(params)
        progress("simulated card ready")
        t0 = time.perf_counter()
        y = backend.run(x)
        t_run = time.perf_counter() - t0
    finally:
        cycles = backend.kernel.last_ntt_cycles if backend.kernel else None
        record = getattr(getattr(backend, "_device", None), "last_record", None)     # the run's status record
        dma_cycles = record["TOTAL_DMA_CYCLES"] if record else None
        phases = dict(backend.kernel.timings) if backend.kernel else {}
        backend.close()
    bad = np.flatnonzero(y != expected)
    wall = time.perf_counter() - t_start
    ideal = params.ideal_cycles(log_n)
    ms = cycles / (params.ntt_mhz * 1e6) * 1e3
    verdict = "PASSED" if bad.size == 0 else f"FAILED ({bad.size} points differ, first at {bad[0]})"
    latencies = _engine_latencies(params, log_n)
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 2**20
    split = ", ".join(f"{name} {phases[name]:.0f} s" for name in ("start", "preload", "kernel", "read-back")
                      if name in phases)
    rows = [
        ("result", f"{verdict}: every one of the {x.size:,} points checked against the golden model"
                   + ("" if params.field == DEFAULT_FIELD.name else f" ({params.field})")),
        ("wall time", f"{wall / 60:.1f} min in all (target 30 min); transform through the driver "
                      f"{t_run / 60:.1f} min"),
        ("of which", f"{split} (start = emit, Verilator build or cache, simulator start)"),
        ("kernel cycles", f"{cycles:,} NTT cycles = {cycles / ideal:.4f} x the {ideal:,}-cycle ideal"
                          + (" (target 1.02 x)" if log_n == params.max_log_n else "")),
        ("overhead", f"{cycles - ideal:,} cycles: engine latency {latencies[0]:,} + {latencies[1]:,} (twiddle "
                     f"prefill + lane pipeline, once per pass) + {cycles - ideal - sum(latencies):,} of DMA, HBM "
                     f"latency and pass turnaround"),
        ("DMA cycles", f"{dma_cycles:,} DMA cycles from start to record (the status record's TOTAL_DMA_CYCLES)"
                       if dma_cycles else "n/a"),
        ("projected kernel time", f"{ms:.3f} ms at {params.clock_note()} (reference: 2.47 ms on a C1100)"),
        ("simulation speed", f"{cycles / phases['kernel']:,.0f} NTT cycles/s (C++ {os.environ['NANTUCKET_SIM_OPT']})"
         if "kernel" in phases else "n/a"),
        ("peak memory", f"{rss:.1f} GiB (largest process)"),
    ]
    for k, v in rows:
        progress(f"{k}: {v}")
    if not args.no_doc and params == BuildParams.default_for(params.field) and log_n == params.max_log_n:
        default = params.field == DEFAULT_FIELD.name
        command = "make sim-full" if default else f"make sim-full FIELD={params.field}"
        body = ["## Full-size kernel simulation" + ("" if default else f": {params.field}"), "",
                f"Command: `{command}` (scripts/sim_full.py, {params.tag()}, {args.kind} points, HBM refresh "
                f"{'off' if args.no_refresh else 'on'}), {time.strftime('%Y-%m-%d')}.", "",
                "| what | figure |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows] + ["", NOTE]
        update_section("sim-full" if default else f"sim-full-{params.field}", "\n".join(body))
    print("TEST PASSED" if bad.size == 0 else "TEST FAILED", flush=True)
    return 0 if bad.size == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
