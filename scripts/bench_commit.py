"""`make bench-commit`: the golden model's Merkle commitments, leaves per second per scheme.

Commits a random matrix of 2^k rows x ``--cols`` columns (default 2^12, 2^14, 2^16 rows x 8) under every
scheme of nantucket.SCHEMES (or ``--schemes``), best of ``--repeats``, and prints a table: seconds,
leaves/s, the permutations one commit makes (sponge blocks per leaf x leaves + the tree's compressions)
and the permutations/s that implies. The model is a bit-exact reference, vectorized with numpy, not a
fast prover: these are the figures a gateware hash engine is compared with (docs/commitments.md).
``--write`` puts the table into docs/performance.md's "commitments" section (perfdoc.update_section).

``--end-to-end`` (on by default with ``--write``, so in `make bench-commit`; ``--no-end-to-end`` skips it;
``--e2e-only`` runs it alone): the PCS step of a
prover, ``dev.lde_commit`` of a BabyBear 2^18 x 64 trace at blowup 2 (``--e2e-log-n``, ``--e2e-cols``) on the
stand-in card (xrt over nantucket.sim.fake_pyxrt with its link model, ``LinkTiming()``: PCIe Gen3 x4 at
the measured rates, each kernel run its ideal cycles at the build's NTT clock), the tree on the host: the
split of its parts (link in, kernel, tree, link out) as projected and as measured, into the section
"commit-end-to-end" with ``--write``.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

import nantucket
from nantucket.hw.model import field as F
from nantucket.hw.model.hash import PERMUTATIONS, permutation
from nantucket.hw.model.hash.permutation import permutations_per_second
from nantucket.tools import perfdoc


def permutations_per_commit(name: str, rows: int, cols: int) -> int:
    """Permutation calls of one commit: the leaves' sponge blocks and one per node (a cap of 1)."""
    s = nantucket.SCHEMES[name]
    tree = s.tree
    if name == "plonky2" and cols <= 4:
        blocks = 0
    else:
        rate = getattr(tree.hasher, "rate", None) or getattr(getattr(tree.hasher, "sponge", None), "rate", 8)
        blocks = -(-cols // rate)
    return rows * blocks + (rows - 1)


def bench(name: str, log_rows: int, cols: int, repeats: int, seed: int = 1) -> tuple[float, int]:
    f = F.get(nantucket.SCHEMES[name].field)
    m = np.random.default_rng(seed).integers(0, f.p, size=(1 << log_rows, cols), dtype=np.uint64).astype(f.dtype)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        nantucket.commit(m, scheme=name)
        best = min(best, time.perf_counter() - t0)
    return best, permutations_per_commit(name, 1 << log_rows, cols)


def permutation_table(repeats: int, states: int = 1 << 14) -> str:
    """Every registered permutation: its structure, general multiplies and the model's permutations/s."""
    lines = [f"Permutations, {states:,} random states in one call, best of {repeats} (wall clock; CPU time in "
             "brackets, the steadier figure on a shared machine):", "",
             "| permutation | width | rounds (full + partial) | S-box | general multiplies | permutations/s |",
             "|---|---:|---|---|---:|---:|"]
    for name in sorted(PERMUTATIONS):
        perm = permutation(name)
        st = perm.structure
        rounds = (f"{st.rounds} double rounds" if st.rounds else f"{st.full_rounds} + {st.partial_rounds}")
        wall = permutations_per_second(perm, states, repeats)
        cpu = permutations_per_second(perm, states, repeats, cpu=True)
        lines.append(f"| {name} | {perm.width} | {rounds} | x^{st.sbox_degree}"
                     f"{' and x^(1/' + str(st.sbox_degree) + ')' if st.inverse_sbox else ''} | "
                     f"{perm.general_multiplies:,} | {wall:,.0f} ({cpu:,.0f}) |")
    return "\n".join(lines) + "\n"


#: Published per-permutation CPU figures the card is compared with (one core, vectorized Rust), with sources.
CPU_FIGURES = """Published CPU figures for the same permutations (what a prover on one core reaches; the card is
compared with these, not with the model):

| permutation | time per permutation | where | source |
|---|---:|---|---|
| plonky2 Poseidon-12 (Goldilocks) | 0.77 us | Apple M1, one core | github.com/0xPolygonZero/plonky2/pull/294 |
| plonky2 Poseidon-12 (Goldilocks) | 0.87 us | aarch64 NEON | github.com/0xPolygonZero/plonky2/pull/231 |
| Plonky3 Poseidon2-16 BabyBear, packed 4 lanes | 1.157 us a call (about 0.29 us each) | aarch64 NEON | github.com/Plonky3/Plonky3/pull/1023 |
| Plonky3 Poseidon2-24 BabyBear, packed 4 lanes | 1.81 us a call (about 0.45 us each) | aarch64 NEON | github.com/Plonky3/Plonky3/pull/1023 |
| Plonky3 Poseidon2-16 KoalaBear, packed 4 lanes | 0.92 us a call (about 0.23 us each) | aarch64 NEON | github.com/Plonky3/Plonky3/pull/1023 |
| Plonky3 Poseidon1 Goldilocks, scalar | 1.41 us (width 8), 1.83 us (width 12) | aarch64 | github.com/Plonky3/Plonky3/pull/1401 |
"""


def table(results, cols: int) -> str:
    lines = [f"Golden model (numpy, one core of {platform.machine()} {platform.python_implementation()} "
             f"{platform.python_version()}, numpy {np.__version__}), {cols} columns, cap height 0, best of repeats:",
             "", "| scheme | rows | seconds | leaves/s | permutations | permutations/s |", "|---|---:|---:|---:|---:|---:|"]
    for name, log_rows, seconds, perms in results:
        rows = 1 << log_rows
        lines.append(f"| {name} | 2^{log_rows} | {seconds:.3f} | {rows / seconds:,.0f} | {perms:,} | "
                     f"{perms / seconds:,.0f} |")
    return "\n".join(lines) + "\n"


def end_to_end(log_n: int, cols: int, blowup: int, scheme: str = "plonky3-babybear-16", seed: int = 3):
    """The commit report of ``lde_commit`` of a random 2^log_n x cols trace on the stand-in card, and the
    call's wall time."""
    import tempfile
    from pathlib import Path

    from nantucket.host.api.commit_device import device_lde_commit
    from nantucket.hw.model.params import BuildParams
    from nantucket.sim.fake_pyxrt import FakePyxrt, LinkTiming, write_xclbin
    s = nantucket.SCHEMES[scheme]
    f = F.get(s.field)
    trace = np.random.default_rng(seed).integers(0, f.p, size=(1 << log_n, cols), dtype=np.uint64).astype(f.dtype)
    params = BuildParams(field=s.field)
    with tempfile.TemporaryDirectory() as tmp:
        xclbin = write_xclbin(Path(tmp) / "nantucket.xclbin", params)
        with nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=FakePyxrt(timing=LinkTiming()),
                            field=s.field, progress=False) as dev:
            a = dev.asarray(trace, axis=0)
            t0 = time.perf_counter()
            c, _ = device_lde_commit(dev, a, blowup, scheme=scheme)
            wall = time.perf_counter() - t0
    return c.report, wall, params


def end_to_end_table(report: dict, wall: float, params, log_n: int, cols: int, blowup: int) -> str:
    parts, moved, perms = report["projected_s"], report["transfers_bytes"], report["permutations"]
    rate = report["cpu_rates"]
    measured = report["measured_s"]

    def ms(v):
        return "-" if v is None else f"{v * 1e3:,.1f}"
    perm = next(iter(rate))
    lines = [f"`dev.lde_commit` of a {report['field']} 2^{log_n} x {cols} trace (the trace already on the card), "
             f"blowup {blowup}, {report['scheme']}, on the stand-in card (build {params.lanes} lanes, "
             f"2^{params.log_core} core, {params.channels} channels, NTT clock {params.ntt_mhz:g} MHz; link "
             f"{report['link']['name']}). The LDE stays on the card; its {perms['total']:,} permutations "
             f"({perms['leaves']:,} leaf blocks, {perms['nodes']:,} compressions) run on the host ({report['host_work']}):",
             "", "| part | bytes | projected (ms) | how |", "|---|---:|---:|---|",
             f"| link in | {moved['to-device']:,} | {ms(parts['link_in'])} | {report['link']['to_card_gbps']:g} GB/s |",
             f"| kernel (LDE) | | {ms(parts['kernel'])} | {report['kernel_projection']} |",
             f"| link out (the LDE back for the tree) | {moved['from-device']:,} | {ms(parts['link_out'])} | "
             f"{report['link']['from_card_gbps']:g} GB/s |",
             f"| tree on one CPU core | | {ms(parts['tree'])} | {perms['total']:,} x "
             f"{rate[perm]['seconds'] * 1e6:.3f} us: {rate[perm]['source']} |",
             f"| total | | {ms(parts['total'])} | one after the other |", "",
             f"Measured on this machine (stand-in card with its link model; the golden model's tree, not a "
             f"prover's): LDE call {ms(measured.get('lde'))} ms, the LDE back {ms(measured.get('fetch'))} ms, "
             f"the tree {ms(measured.get('tree'))} ms; the whole call {wall * 1e3:,.0f} ms.", ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nantucket.tools.bench_commit", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="12,14,16", help="log2 of the row counts, e.g. 12,14,16 or 12-16")
    ap.add_argument("--cols", type=int, default=8, help="columns of the committed matrix (default 8)")
    ap.add_argument("--schemes", default=",".join(nantucket.SCHEMES), help="comma-separated scheme names")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="write docs/performance.md's commitments section")
    ap.add_argument("--end-to-end", action=argparse.BooleanOptionalAction, default=None,
                    help="also the lde_commit split on the stand-in card (default: with --write, as make "
                         "bench-commit runs it; a few minutes at 2^18 x 64)")
    ap.add_argument("--e2e-log-n", type=int, default=18, help="log2 of the trace's rows (default 18)")
    ap.add_argument("--e2e-cols", type=int, default=64, help="the trace's columns (default 64)")
    ap.add_argument("--e2e-blowup", type=int, default=2, help="the LDE's blowup (default 2)")
    ap.add_argument("--e2e-only", action="store_true", help="only the end-to-end split")
    args = ap.parse_args(argv)
    try:
        sizes = perfdoc.parse_list(args.sizes)
        names = args.schemes.split(",")
        for n in names:
            if n not in nantucket.SCHEMES:
                raise ValueError(f"--schemes: unknown scheme {n!r} (valid: {', '.join(nantucket.SCHEMES)})")
        if args.cols < 1 or args.repeats < 1 or not sizes or min(sizes) < 1 or max(sizes) > 24:
            raise ValueError("--cols, --repeats: at least 1; --sizes: 1 .. 24")
    except ValueError as exc:
        print(f"bench_commit: {exc}", file=sys.stderr)
        return 2
    if args.end_to_end or (args.end_to_end is None and (args.write or args.e2e_only)):
        report, wall, params = end_to_end(args.e2e_log_n, args.e2e_cols, args.e2e_blowup)
        e2e = end_to_end_table(report, wall, params, args.e2e_log_n, args.e2e_cols, args.e2e_blowup)
        print(e2e, flush=True)
        if args.write:
            doc = perfdoc.update_section("commit-end-to-end", "## Commitments end to end: LDE on the card, tree on "
                                         f"the host\n\nMeasured {time.strftime('%Y-%m-%d')} with `python -m "
                                         "nantucket.tools.bench_commit` (`make bench-commit`), load average "
                                         f"{os.getloadavg()[0]:.1f}.\n\n" + e2e)
            if doc is not None:
                print(f"wrote {os.path.relpath(doc)}")
        if args.e2e_only:
            return 0
    results = []
    for name in names:
        for log_rows in sizes:
            seconds, perms = bench(name, log_rows, args.cols, args.repeats)
            results.append((name, log_rows, seconds, perms))
            print(f"{name:22s} 2^{log_rows}: {seconds:8.3f} s  {(1 << log_rows) / seconds:12,.0f} leaves/s  "
                  f"{perms / seconds:10,.0f} permutations/s", flush=True)
    text = permutation_table(args.repeats) + "\n" + table(results, args.cols) + "\n" + CPU_FIGURES
    print()
    print(text)
    if args.write:
        load = os.getloadavg()[0]
        measured = (f"Measured {time.strftime('%Y-%m-%d')} with `python -m nantucket.tools.bench_commit "
                    f"{' '.join(argv if argv is not None else sys.argv[1:])}` (`make bench-commit`), load average "
                    f"{load:.1f} on this machine's {os.cpu_count()} cores: the model is this project's bit-exact "
                    "reference, not a prover's CPU speed; the published CPU figures below are that.\n\n")
        doc = perfdoc.update_section("commitments", "## Commitments (golden model)\n\n" + measured + text)
        if doc is not None:
            print(f"wrote {os.path.relpath(doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
