"""cocotb bench for hw.twiddles.TwiddleGenerator against hw.model.twiddles.lane_twiddles.

Both passes, back to back, with random input gaps and enable stalls; every output word is checked, and
every output must appear exactly ``latency`` enabled cycles after its input cycle.
"""

import cocotb
from cocotb.triggers import FallingEdge

from hw.model.params import BuildParams
from hw.model.twiddles import lane_twiddles
from sim.benchlib import PATTERNS, pattern, reset, start_clock
from sim.runner import bench_facts


def _split(value: int, lanes: int) -> list[int]:
    return [(value >> (64 * i)) & ((1 << 64) - 1) for i in range(lanes)]


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_both_passes(dut, idle, stall):
    await _both_passes(dut, idle, stall)


@cocotb.test()
async def test_random_stalls(dut):
    """One crossing only, for the large configurations."""
    await _both_passes(dut, "random", "random")


async def _both_passes(dut, idle, stall):
    facts = bench_facts()
    params = BuildParams(**facts["params"]["params"])
    latency = facts["props"]["latency"]
    lanes, k = params.lanes, params.log_core
    cycles, rounds = 1 << (k - 1), (1 << k) // lanes
    start_clock(dut.clk)
    dut.en.value = 0
    dut.i_valid.value = 0
    dut.start.value = 0
    await reset(dut.clk, dut.rst)
    idle_it, stall_it = pattern(idle, seed=1), pattern(stall, seed=2)
    for pass_index in (1, 2, 1):
        dut.start.value = 1
        dut.pass2.value = int(pass_index == 2)
        await FallingEdge(dut.clk)
        dut.start.value = 0
        total = rounds * cycles
        sent_at, got, edge = [], [], 0
        while len(got) < total:
            en = not next(stall_it)
            if en and int(dut.o_valid.value):
                got.append((int(dut.o_w_first.value), int(dut.o_w_rest.value)))
                assert edge + 1 - sent_at[len(got) - 1] == latency, "output not `latency` enabled cycles after input"
            valid = en and len(sent_at) < total and not next(idle_it)
            dut.en.value = int(en)
            dut.i_valid.value = int(valid)
            if en:
                edge += 1
            if valid:
                sent_at.append(edge)
            await FallingEdge(dut.clk)
            assert edge < 50 * total + 1000, "timeout"
        dut.en.value = 0
        for g in range(rounds):
            for lane in range(lanes):
                want = lane_twiddles(params, pass_index, g, lane, scale=facts["props"]["scale"])
                for t in range(cycles):
                    first, rest = got[g * cycles + t]
                    assert (_split(first, lanes)[lane], _split(rest, lanes)[lane]) == tuple(map(int, want[t])), \
                        f"pass {pass_index} round {g} lane {lane} cycle {t}"
