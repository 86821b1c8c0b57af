"""`make bench-chain`: transforms that chain on the card through the kernel RTL (Verilator,
HBM models with refresh) on one simulated card, register by register, every point checked against the
golden model (hw.model.ntt.transform on a zero-extended copy made here):

- a low-degree extension of blowup 2: the inverse NTT of 2^m evaluations writes its coefficients
  (``chain_log_n`` = m + 1) as the zero-extended input of the coset NTT of 2^(m+1) points, which reads
  them with ``input_log_m`` = m and no HBM read of the zeros; NTT cycles of each run against the same run
  unchained (output placement, a full input read), and the whole sequence against the ideal of both;
- a transform whose output is written into its own size's input placement (``chain_log_n`` = n), so the
  next transform of the same array needs no host round trip: NTT cycles against the plain run.

Writes docs/performance.md, section "chain". Default: the default build (16 lanes, k = 12, 32 channels),
LDE sizes m = 15, 19, 23 and same-size chains at n = 16, 19, 20, 23; ``--lde``/``--same`` for others;
``--no-doc`` to only print.
"""

import argparse
import os
import sys
import warnings

from nantucket.tools.perfdoc import StepProgress, parse_list, update_section

import numpy as np
from amaranth.hdl import UnusedElaboratable

from nantucket.hw.model import ntt, regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.record import RECORD_BYTES
from nantucket.hw.model.params import BuildParams
from nantucket.host.sim_backend import SimBackend
from nantucket.host.workloads import make_points

SHIFT = 7


class Card:
    """The simulated card's kernel driven by its registers, on buffers of the largest size allocated here
    (one per channel, as the card's memory holds them)."""

    def __init__(self, backend: SimBackend, params: BuildParams):
        self.params = params
        self.kernel = k = backend.kernel
        self.rmap = R.RegisterMap(params)
        nbytes = HbmLayout(params).channel_bytes
        bases = [k.hbm.allocate(ch, nbytes) for ch in range(params.channels)]
        # the status record's own buffer (the kernel writes one after every start, hw.model.record)
        k.set_args(**{R.pointer_arg(ch): base for ch, base in enumerate(bases)},
                   **{R.RECORD_ARG: k.hbm.allocate(0, RECORD_BYTES)})
        self.mem = [k.hbm.view(base, nbytes, bank=ch).view(np.uint64) for ch, base in enumerate(bases)]

    def run(self, **args) -> int:
        """One run with these arguments (the others as last set); its NTT cycles."""
        defaults = dict(batch=1, flags=0, input_log_m=0, chain_log_n=0, **self.rmap.split_shift(SHIFT))
        self.kernel.set_args(**{**defaults, **args})
        status = self.kernel.start_and_wait()
        if status:
            raise RuntimeError(f"the kernel refused {args}: STATUS {R.decode_status(status)}")
        return self.kernel.last_ntt_cycles

    def place(self, x, log_n: int, buffer: str = "input") -> None:
        HbmLayout(self.params, log_n).scatter_into(x, self.mem, buffer)

    def fetch(self, log_n: int, buffer: str) -> np.ndarray:
        return HbmLayout(self.params, log_n).gather_from(self.mem, buffer)


def lde_row(card: Card, m: int, seed: int) -> dict:
    """Blowup 2 from 2^m evaluations: chained against unchained, each checked."""
    t = m + 1
    evals = make_points(m, "random", seed)
    coeffs = ntt.transform(evals, inverse=True)
    want = ntt.transform(np.concatenate([coeffs, np.zeros(1 << m, dtype=np.uint64)]), coset=SHIFT)
    bad = 0
    # unchained: the inverse leaves the output placement; the host would gather, zero-extend and scatter
    card.place(evals, m)
    inv_plain = card.run(log_n=m, flags=R.FLAG_INVERSE)
    bad += int(np.count_nonzero(card.fetch(m, "output") != coeffs))
    card.place(np.concatenate([coeffs, np.zeros(1 << m, dtype=np.uint64)]), t)
    fwd_plain = card.run(log_n=t, flags=R.FLAG_COSET)
    bad += int(np.count_nonzero(card.fetch(t, "output") != want))
    # chained: nothing leaves the card between the two runs; the zeros' words hold garbage
    for ch in card.mem:
        ch[:] = 0xBAD0_BAD0_BAD0_BAD0
    card.place(evals, m)
    inv_chain = card.run(log_n=m, flags=R.FLAG_INVERSE, chain_log_n=t)
    fwd_chain = card.run(log_n=t, flags=R.FLAG_COSET, input_log_m=m)
    bad += int(np.count_nonzero(card.fetch(t, "output") != want))
    ideal = card.params.ideal_cycles(m) + card.params.ideal_cycles(t)
    return {"m": m, "inv_plain": inv_plain, "inv_chain": inv_chain, "fwd_plain": fwd_plain,
            "fwd_chain": fwd_chain, "ideal": ideal, "bad": bad}


def same_row(card: Card, n: int, seed: int) -> dict:
    """A forward transform written into its own input placement, then transformed again from there."""
    x = make_points(n, "random", seed)
    card.place(x, n)
    plain = card.run(log_n=n)
    bad = int(np.count_nonzero(card.fetch(n, "output") != ntt.ntt(x)))
    card.place(x, n)
    chained = card.run(log_n=n, chain_log_n=n)
    bad += int(np.count_nonzero(card.fetch(n, "input") != ntt.ntt(x)))
    again = card.run(log_n=n)
    bad += int(np.count_nonzero(card.fetch(n, "output") != ntt.ntt(ntt.ntt(x))))
    return {"n": n, "plain": plain, "chained": chained, "again": again, "ideal": card.params.ideal_cycles(n),
            "bad": bad}


def main(argv=None):
    os.environ.setdefault("NANTUCKET_SIM_OPT", "-O2")   # long runs: compile for speed (set here, not at import)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=16)
    ap.add_argument("--log-core", type=int, default=12)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--lde", default="15,19,23", help="m values of the blowup-2 rows (2^m -> 2^(m+1))")
    ap.add_argument("--same", default="16,19,20,23", help="n values of the same-size chain rows")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args(argv)
    try:
        params = BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels)
        rmap = R.RegisterMap(params)
        ldes = [params.check_log_n(m) for m in parse_list(args.lde)]
        sames = [params.check_log_n(n) for n in parse_list(args.same)] if args.same else []
        for m in ldes:
            if m + 1 > params.max_log_n or not rmap.lde_pair_ok(m, m + 1):
                raise ValueError(f"--lde: 2^{m} -> 2^{m + 1} does not chain on the {params.tag()} build")
    except (TypeError, ValueError) as e:
        print(f"bench_chain: {e}", file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore", category=UnusedElaboratable)
    progress = StepProgress(len(ldes) + len(sames))

    backend = SimBackend(params, refresh=True, progress=lambda line: None)
    lde_rows, same_rows = [], []
    try:
        backend.open(params)
        card = Card(backend, params)
        print(f"[{progress.elapsed():7.1f} s] simulated card {params.tag()} ready", file=sys.stderr)
        for m in ldes:
            r = lde_row(card, m, args.seed + m)
            lde_rows.append(r)
            progress(f"LDE 2^{m} -> 2^{m + 1}: {'PASSED' if not r['bad'] else 'FAILED'}")
        for n in sames:
            r = same_row(card, n, args.seed + 100 + n)
            same_rows.append(r)
            progress(f"same-size chain 2^{n}: {'PASSED' if not r['bad'] else 'FAILED'}")
    finally:
        backend.close()

    def verdict(bad):
        return "PASSED" if not bad else "FAILED"

    t1 = ["| m -> m+1 | inverse 2^m | chained | coset 2^(m+1) | zero-extended | LDE on the card | "
          "ideal | ratio | result |", "|---|---|---|---|---|---|---|---|---|"]
    for r in lde_rows:
        total = r["inv_chain"] + r["fwd_chain"]
        t1.append(f"| {r['m']} -> {r['m'] + 1} | {r['inv_plain']:,} | {r['inv_chain']:,} "
                  f"({100 * (r['inv_chain'] / r['inv_plain'] - 1):+.2f} %) | {r['fwd_plain']:,} | "
                  f"{r['fwd_chain']:,} ({100 * (r['fwd_chain'] / r['fwd_plain'] - 1):+.2f} %) | {total:,} "
                  f"({total / params.ntt_mhz:,.1f} us) | {r['ideal']:,} | {total / r['ideal']:.3f} | "
                  f"{verdict(r['bad'])} |")
    t2 = ["| n | plain | output as input | vs plain | transformed again | ideal | result |",
          "|---|---|---|---|---|---|---|"]
    for r in same_rows:
        t2.append(f"| {r['n']} | {r['plain']:,} | {r['chained']:,} | {100 * (r['chained'] / r['plain'] - 1):+.2f} % "
                  f"| {r['again']:,} | {r['ideal']:,} | {verdict(r['bad'])} |")
    print("\n".join(t1 + [""] + t2))
    failed = any(r["bad"] for r in lde_rows + same_rows)
    if not args.no_doc and not failed:
        body = ["## Transforms that chain on the card: low-degree extension, same-size chains", "",
                f"Command: `make bench-chain` (scripts/bench_chain.py, {params.tag()}, HBM refresh on, one "
                "simulated card driven register by register, every point checked against "
                "hw.model.ntt.transform on a zero-extended copy). NTT cycles; projected times at "
                f"{params.ntt_mhz:g} MHz.", "",
                "Blowup-2 low-degree extension: the inverse of 2^m evaluations with `chain_log_n` = m + 1, then "
                f"the coset (g = {SHIFT}) NTT of 2^(m+1) points with `input_log_m` = m (the zeros are not "
                "read; their words held garbage). Beside each, the same run unchained. Ideal: "
                "ideal(2^m) + ideal(2^(m+1)).", ""] + t1 + ["",
                "A forward transform written into its own size's input placement (`chain_log_n` = n), then "
                "transformed again from there with no host round trip:", ""] + t2
        update_section("chain", "\n".join(body))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
