"""cocotb module behind scripts/bench_dma.py: runs pass 1 and pass 2 of a DmaLoopback (normally the timing-only
HBM model, no stalls on the loopback) and writes the counters as JSON to ``facts["out"]``.

No Python runs per clock cycle: the test waits on ``done``; a progress line every 2^16 NTT cycles.

With ``facts["runs"]`` (scripts/bench_dma_modes.py) it runs those single passes instead, one after the
other: each a dict of ``pass``, ``log_n``, ``batch``, ``input_log_m`` and ``chain_log_n``; the results
are a list in the same order.
"""

import json
import time
from dataclasses import fields

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge

from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.hw.run import run_bits
from nantucket.sim.benches.lib import reset_domains
from nantucket.hw.flow.runner import bench_facts


def _hist(sig):
    v = int(sig.value)
    return [(v >> (32 * i)) & 0xFFFF_FFFF for i in range(9)]


async def _progress(dut, t0, label):
    while True:
        await ClockCycles(dut.ntt_clk, 1 << 16)
        dut._log.info(f"{label}: {int(dut.out_xfers.value)} payloads out, {int(dut.in_xfers.value)} in, "
                      f"{time.monotonic() - t0:.0f} s elapsed")


async def _one_pass(dut, t0, ps, label):
    task = cocotb.start_soon(_progress(dut, t0, label))
    await FallingEdge(dut.dma_clk)
    dut.pass_index.value = ps
    dut.start.value = 1
    await FallingEdge(dut.dma_clk)
    dut.start.value = 0
    await RisingEdge(dut.done)
    task.cancel()
    await ClockCycles(dut.ntt_clk, 4)
    return {"ntt_cycles": int(dut.ntt_cycles.value), "dma_cycles": int(dut.dma_cycles.value),
            "out_xfers": int(dut.out_xfers.value), "in_xfers": int(dut.in_xfers.value),
            "rd_hist": _hist(dut.rd_hist), "wr_hist": _hist(dut.wr_hist),
            "errors": int(dut.err.value), "wall_s": time.monotonic() - t0}


@cocotb.test()
async def test_throughput(dut):
    facts = bench_facts()
    params = BuildParams(**{f.name: facts["params"][f.name] for f in fields(BuildParams)})
    cocotb.start_soon(Clock(dut.dma_clk, params.sim_period_ps("dma"), unit="ps").start())
    cocotb.start_soon(Clock(dut.ntt_clk, params.sim_period_ps("ntt"), unit="ps").start())
    for s in (dut.start, dut.pass_index, dut.stall_en, dut.loop_stall_en, dut.bd_we, dut.bd_chan, dut.bd_addr,
              dut.bd_wdata):
        s.value = 0
    dut.run.value = run_bits(params, Run.of(facts["log_n"], batch=facts.get("batch", 1)))
    dut.refresh_en.value = int(facts["refresh"])
    await reset_domains(dut.dma_clk, (dut.dma_rst, dut.ntt_rst))
    t0 = time.monotonic()
    if "runs" in facts:
        results = []
        for run in facts["runs"]:
            dut.run.value = run_bits(params, Run.of(run["log_n"], batch=run.get("batch", 1),
                                                    input_log_m=run.get("input_log_m", 0),
                                                    chain_log_n=run.get("chain_log_n", 0)))
            results.append(dict(run, **await _one_pass(dut, t0, run["pass"], str(run))))
            dut._log.info(f"{results[-1]}")
    else:
        results = {}
        for ps in (1, 2):
            results[f"pass{ps}"] = await _one_pass(dut, t0, ps, f"pass {ps}")
            dut._log.info(f"pass {ps}: {results[f'pass{ps}']}")
    with open(facts["out"], "w") as f:
        json.dump(results, f, indent=1)
