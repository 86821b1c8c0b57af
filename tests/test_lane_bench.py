"""cocotb benches of the real lane (hw.lane.Lane with hw.butterfly.Butterfly) on Verilator.

Every k from 2 to 8 streams at least four back-to-back random frames (alternately plain and pass-1
scaled), k = 10 and k = 12 three; each crossed with idle/stall patterns, plus edge-value frames.
One build directory per k (build/sim/lane/log_core<k>).
"""

import pytest

from hw.lane import Lane
from sim.runner import run_bench

FRAMES = {k: 4 for k in range(2, 9)} | {10: 3, 12: 3}


@pytest.mark.parametrize("k", sorted(FRAMES))
def test_lane_bench(k):
    params = {"log_core": k}
    run_bench(Lane(**params), name="lane", params=params, test_module="sim.bench_lane",
              facts={"frames": FRAMES[k]})


@pytest.mark.parametrize("k", [3, 12])
def test_lint(k):
    from hw import catalog
    from sim.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("lane", log_core=k), "lane")
