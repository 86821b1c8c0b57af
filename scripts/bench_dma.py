"""`make bench`: measure the DMA engine's sustained throughput with the in-design HBM model (Verilator),
print the "DMA engine and HBM" section and write it into docs/performance.md (unless --no-doc, or a batch:
the section holds the single-transform figures).

    .venv/bin/python scripts/bench_dma.py                  # default build: L=16, k=12 (2^24 points), C=32
    .venv/bin/python scripts/bench_dma.py --log-core 10 --no-doc        # quicker
    .venv/bin/python scripts/bench_dma.py --log-n 20 --no-doc           # a smaller run on the default build
    .venv/bin/python scripts/bench_dma.py --log-n 14 --batch 64 --no-doc  # 64 transforms of 2^14 per pass

For each configuration (refresh off, refresh 20 %) it runs both passes of a loopback (the DMA's own output
fed straight back, the NTT engine replaced by a FIFO that never stalls), the build's DMA and NTT clocks
(BuildParams.dma_mhz / ntt_mhz), HBM model with read latency 32 DMA cycles, and reports the NTT cycles from the first point out to
the last point in against the ideal N / 2L per pass (B x N / 2L for a batch of B transforms), the
burst-length histogram and the bytes moved. Progress goes to stderr, the section to stdout.
"""

import argparse
import json
import os
import sys
import time

from nantucket.tools.perfdoc import update_section  # noqa: E402

from nantucket.hw.model.layout import BEAT_BYTES, HbmLayout  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402
from nantucket.hw.dma.engine import READ_FIFO_BEATS  # noqa: E402
from nantucket.sim.hbm import HBM_LATENCY, REFRESH_CYCLES, REFRESH_PERIOD, DmaLoopback  # noqa: E402
from nantucket.hw.flow.runner import build_dir_for, run_bench  # noqa: E402


def _progress(msg: str) -> None:
    print(f"[bench_dma] {msg}", file=sys.stderr, flush=True)


def measure(params: BuildParams, *, refresh: bool, refresh_cycles: int, refresh_period: int,
            latency: int, fifo_beats: int, log_n: int | None = None, batch: int = 1,
            reuse: bool = False) -> dict:
    dut = DmaLoopback(params, store=False, stall_rate=0, loop_stall_rate=0, latency=latency,
                      refresh_cycles=refresh_cycles, refresh_period=refresh_period, guard_beats=0,
                      fifo_beats=fifo_beats)
    tag = dict(params.as_dict(), timing=1, rc=refresh_cycles, rp=refresh_period, lat=latency, fifo=fifo_beats)
    log_n = params.max_log_n if log_n is None else params.check_log_n(log_n)
    size = ("" if log_n == params.max_log_n else f"_n{log_n}") + ("" if batch == 1 else f"_b{batch}")
    out = build_dir_for("dma_throughput", tag) / f"result_refresh{int(refresh)}{size}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if reuse and out.exists():
        _progress(f"  reusing {out}")
        return json.loads(out.read_text())
    run_bench(dut, name="dma_throughput", params=tag, test_module="nantucket.sim.benches.dma_throughput",
              facts={"out": str(out), "refresh": refresh, "log_n": log_n, "batch": batch})
    return json.loads(out.read_text())


def argument_parser(description: str = __doc__.splitlines()[0]) -> argparse.ArgumentParser:
    """The bench's options."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--log-core", type=int, default=12)
    ap.add_argument("--lanes", type=int, default=16)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--latency", type=int, default=HBM_LATENCY)
    ap.add_argument("--refresh-cycles", type=int, default=REFRESH_CYCLES)
    ap.add_argument("--refresh-period", type=int, default=REFRESH_PERIOD)
    ap.add_argument("--fifo-beats", type=int, default=READ_FIFO_BEATS)
    ap.add_argument("--log-n", type=int, default=None, help="run size (default: the build's largest, 2k)")
    ap.add_argument("--batch", type=int, default=1,
                    help="transforms per pass, back to back (B x 2^log_n <= 2^2k)")
    ap.add_argument("--reuse", action="store_true", help="report the last run's results instead of simulating")
    return ap


def bench(args: argparse.Namespace, ap: argparse.ArgumentParser) -> str:
    """Run the bench with ``args`` (from :func:`argument_parser`; a bad one is ``ap.error``) and return
    the markdown section."""
    # 2^24-point passes run for minutes; the loopback harness is small, so compile it for speed
    os.environ.setdefault("NANTUCKET_SIM_OPT", "-O2")
    params = BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels)
    log_n = params.max_log_n if args.log_n is None else args.log_n
    try:
        params.check_log_n(log_n)
    except ValueError as e:
        ap.error(f"--log-n: {e}")
    if not 1 <= args.batch or args.batch << log_n > params.n_points:
        ap.error(f"--batch: must be in 1 .. {params.n_points >> log_n} (B x 2^{log_n} within the build's "
                 f"2^{params.max_log_n}-point buffers), got {args.batch}")
    lay = HbmLayout(params, log_n, args.batch)
    ideal = args.batch * params.ideal_cycles(log_n) // 2
    rows = []
    t0 = time.monotonic()
    hist = None
    sim_wall = 0.0
    for refresh in (False, True):
        _progress(f"{params.tag()} refresh={'on' if refresh else 'off'} ... "
                  f"({time.monotonic() - t0:.0f} s elapsed)")
        res = measure(params, refresh=refresh, refresh_cycles=args.refresh_cycles,
                      refresh_period=args.refresh_period, latency=args.latency, fifo_beats=args.fifo_beats,
                      log_n=log_n, batch=args.batch, reuse=args.reuse)
        for ps in (1, 2):
            r = res[f"pass{ps}"]
            assert r["errors"] == 0, f"protocol errors {r['errors']:#x}"
            assert r["out_xfers"] == r["in_xfers"] == ideal
            lost = r["ntt_cycles"] - ideal
            rows.append((refresh, ps, r["ntt_cycles"], lost, 2 * params.lanes * ideal / r["ntt_cycles"],
                         r["dma_cycles"]))
            _progress(f"  pass {ps}: {r['ntt_cycles']} NTT cycles for {ideal} ideal "
                      f"({100 * lost / ideal:.2f} % lost), {r['dma_cycles']} DMA cycles")
        hist = (res["pass2"]["rd_hist"], res["pass2"]["wr_hist"])
        sim_wall += res["pass2"]["wall_s"]

    cmd = ("`.venv/bin/python scripts/bench_dma.py" + ("" if args.log_core == 12 else f" --log-core {args.log_core}")
           + ("" if args.log_n is None else f" --log-n {args.log_n}")
           + ("" if args.batch == 1 else f" --batch {args.batch}") + "`")
    lines = [
        "## DMA engine and HBM",
        "",
        f"Command: {cmd} (also run by `make bench`). Verilator 5.48, one thread, C++ {os.environ['NANTUCKET_SIM_OPT']}: "
        f"{sim_wall:.0f} s of simulation for the four passes ({sum(r[2] for r in rows) / sim_wall:,.0f} NTT "
        f"cycles/s), {(time.monotonic() - t0) / 60:.1f} min for the script including the builds.",
        f"Build {params.tag()}: N = 2^{log_n}" + ("" if args.batch == 1 else f", a batch of B = {args.batch}")
        + f", DMA clock {params.dma_mhz:g} MHz, NTT clock {params.ntt_mhz:g} MHz (simulated periods "
        f"{params.sim_period_ps('dma') / 1000:.3f} / {params.sim_period_ps('ntt') / 1000:.3f} ns), HBM model: read latency "
        f"{args.latency} DMA cycles, refresh {args.refresh_cycles} of every {args.refresh_period} DMA cycles "
        f"({100 * args.refresh_cycles / args.refresh_period:.0f} %) when on, per-channel FIFOs of "
        f"{args.fifo_beats} beats ({4 * args.fifo_beats} points). The NTT engine is replaced by a FIFO that "
        "never stalls, so every lost cycle is the DMA's.",
        "",
        "HBM model timing-only (`store=False`); the data path is checked by `tests/test_dma.py`.",
        "",
        "| refresh | pass | NTT cycles | ideal | lost | points / NTT cycle | DMA cycles |",
        "|---|---|---|---|---|---|---|",
    ]
    for refresh, ps, cyc, lost, ppc, dcyc in rows:
        lines.append(f"| {'on' if refresh else 'off'} | {ps} | {cyc} | {ideal} | {lost} ({100 * lost / ideal:.2f} %) "
                     f"| {ppc:.2f} of {2 * params.lanes} | {dcyc} |")
    names = [str(i + 1) for i in range(8)] + [">8"]
    lines += [
        "",
        "Burst lengths over both passes (beats: bursts):",
        "reads " + ", ".join(f"{n}: {c}" for n, c in zip(names, hist[0]) if c)
        + "; writes " + ", ".join(f"{n}: {c}" for n, c in zip(names, hist[1]) if c) + ".",
        "",
        f"HBM bytes moved per {'transform' if args.batch == 1 else 'batch'}: {sum(c * (i + 1) for i, c in enumerate(hist[0][:8])) * BEAT_BYTES:,} read + "
        f"{sum(c * (i + 1) for i, c in enumerate(hist[1][:8])) * BEAT_BYTES:,} written = "
        f"{lay.hbm_bytes_per_transform():,} bytes against the minimum 4 x {'' if args.batch == 1 else 'B x '}N x 8 = {4 * lay.n_points * 8:,} "
        "(every beat carries four useful points; nothing is read twice).",
        "",
        f"Target: at most 1 % of NTT cycles lost with 20 % refresh at {params.dma_mhz:g} / {params.ntt_mhz:g} MHz, C = 32.",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argument_parser()
    ap.add_argument("--no-doc", action="store_true", help="do not update docs/performance.md")
    args = ap.parse_args(argv)
    body = bench(args, ap)
    print(body)
    if not args.no_doc and args.batch == 1:
        update_section("dma", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
