"""cocotb benches of the real lane (hw.lane.Lane with its real butterflies) on Verilator.

Every k from 2 to 8 streams at least four back-to-back random frames (plain, pass-1 scaled and inverse
in turn), k = 10 and k = 12 three; each crossed with idle/stall patterns, plus edge-value frames (the
lane: shift-only late stages, the four-step scale on the output). One build directory per k.
Run-time frame sizes (sim/benches/lane.py test_frame_sizes): every f = 2..k at k <= 8, f = 10, 5 at
k = 10 and f = 9 at k = 12, switched by restarts without a reset, with several log_n; each size also runs the two passes of an inverse transform (the lane's ``inverse`` and ``normalize``).
"""

import pytest

from nantucket.hw.lane import Lane
from nantucket.hw.flow.runner import run_bench

FRAMES = {k: 4 for k in range(2, 9)} | {10: 3, 12: 3}
#: Frame sizes test_frame_sizes runs (None: every f, see sim/benches/lane.py size_order).
SIZES = {10: [10, 5], 12: [9]}


@pytest.mark.parametrize("k", sorted(FRAMES), ids=[f"k{k}" for k in sorted(FRAMES)])
def test_lane_bench(k):
    params = {"log_core": k}
    lane = Lane(**params)
    run_bench(lane, name="lane", params=params, test_module="nantucket.sim.benches.lane",
              facts={"frames": FRAMES[k], "sizes": SIZES.get(k),
                     "latencies": {f: lane.latency_at(f) for f in range(2, k + 1)}})


@pytest.mark.parametrize("k", [3, 12])
def test_lint(k):
    from nantucket.hw.flow import catalog
    from nantucket.hw.flow.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("lane", log_core=k), "lane")
