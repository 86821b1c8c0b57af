"""`make bench`: the DMA throughput bench (nantucket.sim.bench_dma), written to the "DMA engine and HBM"
section of docs/performance.md.

    .venv/bin/python scripts/bench_dma.py                  # default build: L=16, k=12 (2^24 points), C=32
    .venv/bin/python scripts/bench_dma.py --log-core 10 --no-doc

Takes the bench's options; prints the section on stdout and writes it into docs/performance.md unless
--no-doc is given or the run is a batch (--batch > 1: the section holds the single-transform figures).
The measurement lives in sim/, which is installed and must not write the repository's docs (nor import
scripts/); this checkout-only script is the one that does.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perfdoc import update_section  # noqa: E402

from nantucket.sim import bench_dma  # noqa: E402


def main(argv=None) -> int:
    ap = bench_dma.argument_parser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-doc", action="store_true", help="do not update docs/performance.md")
    args = ap.parse_args(argv)
    body = bench_dma.bench(args, ap)
    print(body)
    if not args.no_doc and args.batch == 1:
        update_section("dma", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
