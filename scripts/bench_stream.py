"""Throughput of a stream of columns through the xrt driver on the stand-in card's timing model: one card
and two, each call blocking (no overlap) or submitted with wait=False (the pipeline overlaps the link
and the kernel), and a two-worker Dask LocalCluster; against the projection for real cards. Writes the
"stream" section of docs/performance.md.

    .venv/bin/python scripts/bench_stream.py                  # 64 columns of 2^20 points
    .venv/bin/python scripts/bench_stream.py --log-n 16 --columns 16 --no-doc

The stand-in (nantucket.sim.fake_pyxrt.FakePyxrt) runs with ``timing=LinkTiming()`` (PCIe Gen3 x4:
3.24 GB/s to the card, 2.38 GB/s from it, each direction of each card one transfer at a time; a kernel
run takes its ideal cycles at the build's projected NTT clock) and ``compute=False`` (its register-level
kernel answers every start but does not compute the transform, which the golden model would take about a
second per 2^20 column for on the CPU). So the wall times are the timing model's plus the host driver's
own work (the layout step: scatter and gather in numpy), which is real. ``--scale 1,4`` (the default)
measures at the platform's rates and with every modelled time x 4: on a machine whose host work a column
is about the link's, only the slower link shows what the overlap and a second card take off.
"""

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nantucket.tools.perfdoc import update_section  # noqa: E402

import nantucket  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402
from nantucket.hw.model.platform import PCIE_FROM_CARD_GBPS, PCIE_TO_CARD_GBPS  # noqa: E402
from nantucket.sim.fake_pyxrt import FakePyxrt, LinkTiming, write_xclbin  # noqa: E402

TO_GBPS, FROM_GBPS = PCIE_TO_CARD_GBPS, PCIE_FROM_CARD_GBPS


#: Calls of a pipelined stream submitted ahead of the oldest result taken (its device pipeline holds
#: max_pending = 4 calls a card).
AHEAD = 8


def stream(dev, column, columns: int, overlap: bool, per_call: int) -> tuple[float, float, float]:
    """(wall, user CPU, system CPU) seconds of this process to send ``columns`` columns (``per_call`` a
    call) through ``dev`` and bring them back. Each result is taken as it comes and then dropped, as a
    consumer of a stream does (holding all of them would measure fresh pages for every result instead)."""
    batch = np.broadcast_to(column, (per_call, column.size)).copy() if per_call > 1 else column
    calls = columns // per_call
    c0, t0 = os.times(), time.perf_counter()
    if overlap:
        futs = collections.deque()
        for _ in range(calls):
            futs.append(dev.numpy(dev.ntt(batch, wait=False), wait=False))
            if len(futs) > AHEAD:
                futs.popleft().result()
        while futs:
            futs.popleft().result()
    else:
        for _ in range(calls):
            dev.ntt(batch).numpy()
    wall, c1 = time.perf_counter() - t0, os.times()
    return wall, c1.user - c0.user, c1.system - c0.system


def projection(params: BuildParams, log_n: int, cards: int) -> tuple[float, float]:
    """(seconds per column without overlap, with) on real cards: link in, kernel, link out."""
    nbytes = (1 << log_n) * 8
    t_in, t_out = nbytes / (TO_GBPS * 1e9), nbytes / (FROM_GBPS * 1e9)
    t_kernel = params.ideal_cycles(log_n) / (params.ntt_mhz * 1e6)
    return (t_in + t_kernel + t_out) / cards, max(t_in, t_kernel, t_out) / cards


def measure(params: BuildParams, column: np.ndarray, columns: int, scale: float, dask: bool,
            xclbin: Path) -> list[tuple]:
    """One row per stream (what, seconds a column, (user, sys, the stand-in's) CPU a column or None, load
    at its end, projected seconds a column on real cards) with every modelled time x ``scale``."""
    log_n = column.size.bit_length() - 1
    timing = LinkTiming(scale=scale)
    opts = dict(params=params, xclbin=xclbin, progress=False, timeout_s=60.0)
    rows = []

    def row(what, cards, overlap, measured, stand_in=None):
        seconds, user, system = measured
        proj = projection(params, log_n, cards)[1 if overlap else 0] * scale
        per = seconds / columns
        cpu = None if user is None else (user / columns, system / columns, stand_in / columns)
        now = os.getloadavg()[0]
        rows.append((what, per, cpu, now, proj))
        print(f"x{scale:g} {what:<58} {per * 1e3:8.2f} ms/column  ({columns / seconds:7.1f} columns/s; "
              + ("" if cpu is None else f"CPU user {cpu[0] * 1e3:.2f} + sys {cpu[1] * 1e3:.2f} ms/column, the "
                 f"stand-in's {cpu[2] * 1e3:.2f} of it; ")
              + f"load {now:.1f}; projected {proj * 1e3:.2f} ms)", flush=True)

    n = column.size
    for cards, per_call in ((1, 1), (2, 2)):
        for overlap in (False, True):
            fake = FakePyxrt(devices=2, timing=timing, compute=False)
            with nantucket.open("xrt", pyxrt_module=fake, devices=list(range(cards)), **opts) as dev:
                dev.ntt(np.broadcast_to(column, (per_call, n)).copy()).numpy()     # tables and buffers
                own = fake.cpu_seconds
                seconds = stream(dev, column, columns, overlap, per_call)
                own = fake.cpu_seconds - own
            how = "wait=False, pipelined" if overlap else "each call blocking"
            unit = "a column a call" if per_call == 1 else f"{per_call} columns a call, one a card"
            row(f"{cards} card{'s' if cards > 1 else ''}, {unit}, {how}", cards, overlap, seconds, own)
    if dask:
        import distributed
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                                           dashboard_address=None, silence_logs=50)
        client = distributed.Client(cluster)
        try:
            fake = FakePyxrt(devices=1, timing=timing, compute=False)      # each worker: its own card
            with nantucket.open("xrt", cluster=client, pyxrt_module=fake, **opts) as dev:
                for _ in range(2):
                    dev.ntt(np.broadcast_to(column, (2, n)).copy()).numpy()
                seconds = stream(dev, column, columns, True, 2)[0]   # the CPU is the workers'
            row("Dask LocalCluster, 2 workers x 1 card, 2 columns a call, wait=False", 2, True,
                (seconds, None, None))
        finally:
            client.close()
            cluster.close()
    return rows


def table(rows: list[tuple]) -> list[str]:
    lines = ["| stream | ms a column | CPU ms a column (user + sys) | the stand-in's | host driver's | load | "
             "projected ms a column (real cards) |",
             "|---|---|---|---|---|---|---|"]
    return lines + [f"| {what} | {per * 1e3:.2f} | "
                    + ("- | - | -" if c is None else f"{c[0] * 1e3:.2f} + {c[1] * 1e3:.2f} | {c[2] * 1e3:.2f} | "
                       f"{(c[0] + c[1] - c[2]) * 1e3:.2f}")
                    + f" | {now:.1f} | {proj * 1e3:.2f} |" for what, per, c, now, proj in rows]


def reading(rows: list[tuple], scale: float) -> str:
    """What a table says: where the wall time goes (the host's work or the modelled link), from its rows."""
    by = {what.split(",")[0] + (" pipelined" if "pipelined" in what or "Dask" in what else ""): (per, c, proj)
          for what, per, c, _, proj in rows}
    one, one_p = by["1 card"], by["1 card pipelined"]
    host = one_p[1][0] + one_p[1][1]            # the pipelined card's CPU a column
    out = (f"Reading it: pipelining takes one card from {one[0] * 1e3:.2f} to {one_p[0] * 1e3:.2f} ms a column "
           f"(the projection {one[2] * 1e3:.2f} to {one_p[2] * 1e3:.2f}). ")
    if one_p[2] < host:
        out += (f"The host's own CPU a column ({host * 1e3:.2f} ms pipelined, the stand-in's copies included) is "
                f"above the modelled link's, so the host, one process, sets the pace more than the link does.")
    else:
        out += (f"The modelled link outlasts the host's work a column ({host * 1e3:.2f} ms CPU pipelined), so the "
                "wall times follow the projection's order: overlap, then the second card.")
    if "Dask LocalCluster pipelined" in by:
        out += (f" The Dask row ({by['Dask LocalCluster pipelined'][0] * 1e3:.2f} ms) is the cluster's own cost "
                "on this machine: each call's two columns go to the worker processes and back through the "
                "scheduler's TCP on localhost, and the workers share the same cores with the client.")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log-n", type=int, default=20, help="log2 of the points per column (default 20)")
    ap.add_argument("--columns", type=int, default=64, help="columns in the stream (default 64)")
    ap.add_argument("--scale", default="1,4", help="the timing model's slow-downs, a comma list (default 1,4: "
                    "the platform's rates, and x 4 so the link outlasts the host's work a column)")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster")
    ap.add_argument("--no-doc", action="store_true", help="print only, leave docs/performance.md alone")
    args = ap.parse_args(argv)
    try:
        scales = [float(v) for v in args.scale.split(",")]
        if not scales or min(scales) <= 0:
            raise ValueError
    except ValueError:
        ap.error(f"--scale: expected positive numbers separated by commas, got {args.scale!r}")
    params = BuildParams()
    load = os.getloadavg()[0]               # the host's work is real: say how busy the machine was
    n = 1 << args.log_n
    column = np.random.default_rng(1).integers(0, nantucket.P, n, dtype=np.uint64)
    with tempfile.TemporaryDirectory(prefix="bench_stream_") as tmp:
        xclbin = write_xclbin(Path(tmp) / "nantucket.xclbin", params)
        results = [(scale, measure(params, column, args.columns, scale, not args.no_dask, xclbin))
                   for scale in scales]
    if args.no_doc:
        return 0
    cpu = os.cpu_count()
    lines = [
        "## A stream of columns: overlap, two cards, two Dask workers",
        "",
        f"{args.columns} columns of 2^{args.log_n} points (8 bytes each: {n * 8 / 2**20:.0f} MiB a column) "
        f"through the xrt driver and back (`dev.ntt(x).numpy()`), default build {params.tag()}. **The wall "
        "times come from the stand-in card's timing model** (`nantucket.sim.fake_pyxrt.LinkTiming`: PCIe "
        f"Gen3 x4, {TO_GBPS} GB/s to the card and {FROM_GBPS} GB/s from it, each direction of each card one "
        f"transfer at a time; a kernel run its ideal cycles at the projected {params.ntt_mhz:g} MHz; in the "
        "second table every modelled time x the scale it names), with `compute=False` (the stand-in's kernel "
        "does not compute the transform), plus the host "
        f"driver's own work, which is real: the range check, the layout step (scatter into and gather "
        f"from the HBM channel buffers, numpy) and the calls' bookkeeping, on this {cpu}-core machine "
        f"(load average {load:.1f} when the run started; each row says the load "
        "when it ended). The stand-in's own copy between a buffer's host map and its modelled HBM (a "
        "card's DMA engine's work) runs within the modelled link time. Device buffers come from the "
        "driver's pool (host/xrt/transfers.py: `BufferPool`), so a column allocates nothing; each result "
        f"is taken as it comes and dropped (a pipelined stream keeps {AHEAD} calls in flight). CPU: this "
        "process's user and system time a column (the stand-in's copies included; the Dask row's work is "
        "in its workers); of it, the stand-in's own (its copies and its kernel model: `FakePyxrt.cpu_seconds`), "
        "what a card would do instead of the host; the rest is the host driver's work a column. The "
        "projection is the link and kernel alone on real cards: in + kernel + out a "
        "column without overlap, the slowest of the three with it, divided by the cards (each card its "
        "own link), times the scale.",
    ]
    for scale, rows in results:
        lines += ["", f"**{'The platform' if scale == 1 else f'Every modelled time x {scale:g}'}**"
                  + (" (rates as measured on the card's platform):" if scale == 1 else
                     " (the link slower than the host's own work a column, so the overlap and the second "
                     "card show in the wall time):"), ""]
        lines += table(rows)
        lines += ["", reading(rows, scale)]
    lines += ["", f"Measured with `.venv/bin/python scripts/bench_stream.py --log-n {args.log_n} --columns "
              f"{args.columns} --scale {args.scale}`."]
    update_section("stream", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
