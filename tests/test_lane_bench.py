"""cocotb benches of the real lane (hw.lane.Lane with its real butterflies) on Verilator.

Every k from 2 to 8 streams at least four back-to-back random frames (plain, pass-1 scaled and inverse
in turn), k = 10 and k = 12 three; each crossed with idle/stall patterns, plus edge-value frames. The
default lane (scale "output": shift-only late stages, the four-step scale on the output) at every k; the
folded design (scale "stages") at k = 3 and 6. One build directory per k and design.
"""

import pytest

from hw.lane import Lane
from sim.runner import run_bench

FRAMES = {k: 4 for k in range(2, 9)} | {10: 3, 12: 3}
CASES = [(k, "output") for k in sorted(FRAMES)] + [(3, "stages"), (6, "stages")]


@pytest.mark.parametrize("k, scale", CASES, ids=[f"k{k}_{s}" for k, s in CASES])
def test_lane_bench(k, scale):
    params = {"log_core": k, "scale": scale}
    run_bench(Lane(**params), name="lane", params=params, test_module="sim.bench_lane",
              facts={"frames": FRAMES[k]})


@pytest.mark.parametrize("k", [3, 12])
def test_lint(k):
    from hw import catalog
    from sim.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("lane", log_core=k), "lane")
