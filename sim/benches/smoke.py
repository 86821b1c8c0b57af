"""cocotb bench for sim.smoke.SmokeDelay: proves the runner, facts passing and the enable contract."""

import random

import cocotb

from nantucket.sim.benches.lib import PATTERNS, PipelineTB, pattern
from nantucket.hw.flow.runner import bench_facts


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_delay(dut, idle, stall):
    props = bench_facts()["props"]
    width = props["width"]
    tb = PipelineTB(dut, ["i_data"], ["o_data"], props["latency"])
    await tb.start()
    items = [(random.getrandbits(width),) for _ in range(200)]
    got = await tb.run(items, pattern(idle), pattern(stall))
    assert got == [((x + 1) % (1 << width),) for (x,) in items]
