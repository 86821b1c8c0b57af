"""Measure the DMA's zero-extended pass 1 and chained pass 2 against the plain passes with the timing-only
HBM model (Verilator), the same harness and settings as scripts/bench_dma.py (the build's DMA and NTT clocks, read
latency 32, refresh 96 of every 480 DMA cycles when on, the NTT engine replaced by a FIFO that never
stalls), all passes in one simulation of one build.

    .venv/bin/python scripts/bench_dma_modes.py                       # L16_k12_C32, the default set
    .venv/bin/python scripts/bench_dma_modes.py --log-core 8 --chain 15:16 --zero 15:16

``--chain n:t`` measures pass 2 of a 2^n-point run chained into the input of a 2^t-point run against the
plain pass 2 of 2^n; ``--zero m:n`` pass 1 of a 2^n-point run reading a 2^m-point zero-extended input
against the plain pass 1 of 2^n. Prints a Markdown table of NTT cycles on stdout.
"""

import argparse
import json
import os
import sys

from nantucket.hw.model.layout import lde_pair_supported
from nantucket.hw.model.params import BuildParams         
from nantucket.hw.dma.engine import READ_FIFO_BEATS, WRITE_FIFO_BEATS
from nantucket.sim.hbm import HBM_LATENCY, REFRESH_CYCLES, REFRESH_PERIOD, DmaLoopback
from nantucket.hw.flow.runner import build_dir_for, run_bench 

DEFAULT_CHAIN = ["22:23", "23:24", "24:24", "20:20", "21:21", "22:22", "23:23"]
DEFAULT_ZERO = ["23:24", "22:23"]


def _pair(text: str, what: str) -> tuple[int, int]:
    try:
        a, b = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected two sizes as a:b, got {text!r}") from None
    return a, b


def measure(params: BuildParams, runs: list[dict], *, refresh: bool, latency: int = HBM_LATENCY,
            refresh_cycles: int = REFRESH_CYCLES, refresh_period: int = REFRESH_PERIOD,
            fifo_beats: int = READ_FIFO_BEATS, write_fifo_beats: int = WRITE_FIFO_BEATS) -> list[dict]:
    """Each run (a dict of pass, log_n, input_log_m, chain_log_n) as one pass of the timing-only
    loopback, in order, in one simulation: the bench's counters per run."""
    dut = DmaLoopback(params, store=False, stall_rate=0, loop_stall_rate=0, latency=latency,
                      refresh_cycles=refresh_cycles, refresh_period=refresh_period, guard_beats=0,
                      fifo_beats=fifo_beats, write_fifo_beats=write_fifo_beats)
    tag = dict(params.as_dict(), timing=1, rc=refresh_cycles, rp=refresh_period, lat=latency, fifo=fifo_beats,
               wfifo=write_fifo_beats)
    out = build_dir_for("dma_throughput", tag) / f"modes_refresh{int(refresh)}_{len(runs)}runs.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    run_bench(dut, name="dma_throughput", params=tag, test_module="nantucket.sim.benches.dma_throughput",
              facts={"out": str(out), "refresh": refresh, "log_n": params.max_log_n, "runs": runs})
    return json.loads(out.read_text())


def main(argv=None):
    os.environ.setdefault("NANTUCKET_SIM_OPT", "-O2")   # long runs: compile for speed (set here, not at import)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-core", type=int, default=12)
    ap.add_argument("--lanes", type=int, default=16)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--chain", action="append", type=lambda t: _pair(t, "--chain"), metavar="N:T")
    ap.add_argument("--zero", action="append", type=lambda t: _pair(t, "--zero"), metavar="M:N")
    ap.add_argument("--refresh", choices=("on", "off"), default="on")
    ap.add_argument("--fifo-beats", type=int, default=READ_FIFO_BEATS, help="per-channel read FIFO depth of the DMA (beats)")
    ap.add_argument("--write-fifo-beats", type=int, default=WRITE_FIFO_BEATS,
                    help="per-channel write FIFO depth of the DMA (beats; 128 shows the odd-size chain backlog)")
    args = ap.parse_args(argv)
    params = BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels)
    chains = args.chain or [_pair(t, "--chain") for t in DEFAULT_CHAIN]
    zeros = args.zero or [_pair(t, "--zero") for t in DEFAULT_ZERO]
    for opt, pairs in (("--chain", chains), ("--zero", [(m, n) for m, n in zeros])):
        for a, b in pairs:
            if not lde_pair_supported(params, a, b):
                ap.error(f"{opt}: {a}:{b} is not a supported pair of the {params.tag()} build")
    runs = []
    for n in sorted({n for n, _ in chains}):
        runs.append({"pass": 2, "log_n": n})
    runs += [{"pass": 2, "log_n": n, "chain_log_n": t} for n, t in chains]
    for n in sorted({n for _, n in zeros}):
        runs.append({"pass": 1, "log_n": n})
    runs += [{"pass": 1, "log_n": n, "input_log_m": m} for m, n in zeros]
    res = measure(params, runs, refresh=args.refresh == "on", fifo_beats=args.fifo_beats,
                  write_fifo_beats=args.write_fifo_beats)
    plain = {(r["pass"], r["log_n"]): r["ntt_cycles"] for r in res
             if not r.get("chain_log_n") and not r.get("input_log_m")}
    print(f"Build {params.tag()}, refresh {args.refresh}, read / write FIFOs of {args.fifo_beats} / "
          f"{args.write_fifo_beats} beats, timing-only loopback "
          "(NTT cycles of one pass):\n")
    print("| pass | mode | NTT cycles | ideal | plain pass | vs plain |")
    print("|---|---|---|---|---|---|")
    for r in res:
        assert r["errors"] == 0, f"protocol errors {r['errors']:#x} in {r}"
        ideal = (1 << r["log_n"]) // params.points_per_cycle
        assert r["out_xfers"] == r["in_xfers"] == ideal, r
        if r.get("chain_log_n"):
            mode = f"2^{r['log_n']} chained into 2^{r['chain_log_n']}"
        elif r.get("input_log_m"):
            mode = f"2^{r['log_n']} reading 2^{r['input_log_m']} zero-extended"
        else:
            mode = f"2^{r['log_n']} plain"
        base = plain[(r["pass"], r["log_n"])]
        print(f"| {r['pass']} | {mode} | {r['ntt_cycles']} | {ideal} | {base} | "
              f"{100 * (r['ntt_cycles'] - base) / base:+.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
