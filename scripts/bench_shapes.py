#!/usr/bin/env python3
"""Column batches and extension limbs in the host's layout step, against the row layout.

Times host/hbm_io.py's scatter (host points into the per-channel buffers of a kernel call) and gather
(back into a host array) for B polynomials of N points on a build (default: the default card's,
L16_k12_C32, one full 2^24-point call: N = 2^--log-n, B = 2^24 / N), buffers in host memory (the syncs,
PCIe on a card, are not part of it):

- rows: a C-contiguous (B, N) array, each row a polynomial (the layout as before ``axis``);
- columns, composed: an (N, B) row-major matrix (``axis=0``): the scatter reads the matrix's columns in
  place (a strided view), the gather writes straight into a new (N, B) matrix;
- columns, transposed first: what a caller had to do without ``axis``: ``np.ascontiguousarray(x.T)``
  then the row scatter; the row gather then a transposing copy back;
- ext=2 limbs, composed: (B/2, N, 2) GoldilocksExt2-style elements (``ext=2``), limbs de-interleaved by
  the same scatter and interleaved by the gather;

and ``np.copyto`` of the same points as the yardstick. Best of ``--repeat``. Writes the "shapes" section of
docs/performance.md with ``--write``.

    .venv/bin/python scripts/bench_shapes.py [--log-n 16] [--repeat 5] [--write]
"""

import argparse
import platform
import sys
import time

import numpy as np


from nantucket.host import hbm_io  # noqa: E402
from nantucket.host.api.checks import Shape  # noqa: E402
from nantucket.hw.model.layout import HbmLayout  # noqa: E402
from nantucket.hw.model.params import BuildParams  # noqa: E402
from nantucket.tools.perfdoc import update_section  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log-n", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = ap.parse_args(argv)
    params = BuildParams()
    layout = HbmLayout(params, args.log_n)
    n = 1 << args.log_n
    b = params.n_points // n
    rng = np.random.default_rng(1)
    rows = rng.integers(0, 2**63, (b, n), dtype=np.uint64)
    cols = np.ascontiguousarray(rows.T)                    # the same polynomials as an (N, B) matrix
    limbs = np.ascontiguousarray(rows.reshape(b // 2, 2, n).transpose(0, 2, 1))     # (B/2, N, 2)
    buffers = np.zeros((params.channels, b * layout.points_per_channel), dtype=np.uint64)
    mib = rows.nbytes / 2**20

    def scatter(view):
        hbm_io.scatter_rows(layout, view, buffers)

    def gather_new():
        return hbm_io.gather_rows(layout, buffers, b, buffer="input")

    out_cols = np.empty_like(cols)
    out_limbs = np.empty_like(limbs)
    col_view = Shape(cols.shape, 0).view(cols)
    limb_shape = Shape(limbs.shape, 1, 2)

    # correctness of the composed paths against the row path, once
    scatter(rows)
    ref = buffers.copy()
    scatter(col_view)
    assert np.array_equal(buffers, ref), "the column scatter differs from the row scatter"
    scatter(limb_shape.view(limbs))
    assert np.array_equal(buffers, ref), "the limb scatter differs from the row scatter"
    hbm_io.gather_rows(layout, buffers, b, buffer="input", out=Shape(cols.shape, 0).view(out_cols))
    assert np.array_equal(out_cols, cols)
    hbm_io.gather_rows(layout, buffers, b, buffer="input", out=limb_shape.view(out_limbs))
    assert np.array_equal(out_limbs, limbs)

    copy_dst = np.empty_like(rows)
    r = args.repeat
    results = [
        ("np.copyto of the points (yardstick)", best(lambda: np.copyto(copy_dst, rows), r),
         best(lambda: np.copyto(copy_dst, rows), r)),
        ("rows (B, N), as before", best(lambda: scatter(rows), r), best(gather_new, r)),
        ("columns (N, B), axis=0: composed into the scatter / gather",
         best(lambda: scatter(Shape(cols.shape, 0).view(cols)), r),
         best(lambda: hbm_io.gather_rows(layout, buffers, b, buffer="input",
                                         out=Shape(cols.shape, 0).view(out_cols)), r)),
        ("columns (N, B): transposed on the host, then the row path",
         best(lambda: scatter(np.ascontiguousarray(cols.T)), r),
         best(lambda: np.ascontiguousarray(gather_new().T), r)),
        ("ext=2 limbs (B/2, N, 2): composed",
         best(lambda: scatter(limb_shape.view(limbs)), r),
         best(lambda: hbm_io.gather_rows(layout, buffers, b, buffer="input", out=limb_shape.view(out_limbs)), r)),
    ]
    lines = [f"Command: `.venv/bin/python scripts/bench_shapes.py --log-n {args.log_n} --repeat {r}` "
             f"({platform.processor() or platform.machine()}, {mib:.0f} MiB of uint64: {b} polynomials of "
             f"2^{args.log_n} points on the {params.tag()} build's layout, one 2^24-point kernel call; host "
             f"buffers, no sync; best of {r}; the layout step's threads as in the driver).",
             "",
             "| layout | to the buffers (scatter) | from the buffers (gather) |",
             "|---|---|---|"]
    for name, up, down in results:
        lines.append(f"| {name} | {up * 1e3:.0f} ms ({mib / 1024 / up:.2f} GiB/s) | "
                     f"{down * 1e3:.0f} ms ({mib / 1024 / down:.2f} GiB/s) |")
    body = "\n".join(lines)
    print(body)
    if args.write:
        update_section("shapes", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
