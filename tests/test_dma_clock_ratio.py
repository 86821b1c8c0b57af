"""The DMA at the clock ratios the kernel's comments rely on (the ntt clock up to 4 times the dma clock):
a run of 2^t points on the zero mask 0, then a zero-extended run (input_log_m = m: only each element's
first 2^m points read) and a run on mask 0 again, back to back without reset, every pass within a cycle
budget and each run's state and output against the golden passes (of the input with its points from 2^m
on zeroed, for the zero-extended run).

The assembler takes a pass's zero mask (the units it gives zeros for instead of reading its FIFO) on the
ntt side with the pass's start. Crossed one dma cycle after the start's toggle, the mask arrived after the
start with the ntt clock 3 or more times the dma clock (hw/formal/sync.py's ``pass_crossing_dma`` at 4 : 1,
docs/verification.md "Found"): the zero-extended pass 1 ran on the previous pass's mask 0 and waited for
beats the read masters never read (it hung), and a pass 2 after it took zeros for words it should read."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from nantucket.hw.model.layout import BEAT_BITS, HbmLayout, lde_pair_supported
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.hw.model.schedule import loopback_passes
from nantucket.hw.points import pack_beat, unpack_beat
from nantucket.hw.run import run_bits
from nantucket.sim.benches.dma_loopback import dma_points
from nantucket.sim.hbm import DmaLoopback


def _runs_at(params, log_m, log_t, *, budget=4000, seed=5):
    """Runs of 2^log_t points (input_log_m 0, log_m, 0) on the loopback at ``params``' clocks; returns
    every pass's (dma cycles from start to done, the loopback's dma and ntt cycle counters)."""
    field = params.prime_field
    per = BEAT_BITS // field.point_bits
    dut = DmaLoopback(params, refresh_period=60, refresh_cycles=12, latency=8, seed=seed)
    lay = HbmLayout(params, log_t)
    rng = np.random.default_rng(seed)
    g = dut.guard_beats
    results, cycles = [], []

    async def write(ctx, c, first, words):
        ctx.set(dut.bd_chan, c)
        ctx.set(dut.bd_we, 1)
        for b, beat in enumerate(np.asarray(words).reshape(-1, per), first):
            ctx.set(dut.bd_addr, b)
            ctx.set(dut.bd_wdata, pack_beat(beat, field))
            await ctx.tick("dma")
        ctx.set(dut.bd_we, 0)

    async def read(ctx, c, beats):
        ctx.set(dut.bd_chan, c)
        out = []
        for b in beats:
            ctx.set(dut.bd_addr, b)
            await ctx.tick("dma")
            out.extend(unpack_beat(ctx.get(dut.bd_rdata), field))
        return np.array(out, dtype=field.dtype)

    async def run_pass(ctx, ps, log_m):
        ctx.set(dut.pass_index, ps)
        ctx.set(dut.run.as_value(), run_bits(params, Run.of(log_t, input_log_m=log_m)))
        ctx.set(dut.start, 1)
        await ctx.tick("dma")
        ctx.set(dut.start, 0)
        for k in range(1, budget + 1):
            await ctx.tick("dma")
            if ctx.get(dut.done):
                return k, ctx.get(dut.dma_cycles), ctx.get(dut.ntt_cycles)
        raise AssertionError(f"2^{log_t} (input_log_m = {log_m}): pass {ps} not done within {budget} dma cycles "
                             f"(dma {params.dma_mhz} MHz, ntt {params.ntt_mhz} MHz)")

    async def tb(ctx):
        for s in (dut.refresh_en, dut.stall_en, dut.loop_stall_en):
            ctx.set(s, 1)
        for m in (0, log_m, 0):
            x = dma_points(rng, lay.n_points, field)     # every point in HBM, the zero units' too
            inputs = lay.scatter(x, "input")
            for c in lay.buffer_channels("input"):
                await write(ctx, c, g, inputs[c])
            cycles.append([await run_pass(ctx, 1, m), await run_pass(ctx, 2, m)])
            assert all(ctx.get(dut.err[c]) == 0 for c in range(params.channels)), m
            mem = [await read(ctx, c, range(g, g + lay.beats_per_channel)) for c in range(params.channels)]
            seen = x.copy()
            if m:
                seen[1 << m:] = 0                           # the engine sees zeros from point 2^m on
            results.append((m, seen, mem))

    sim = Simulator(dut)
    sim.add_clock(1e-6 / params.dma_mhz, domain="dma")
    sim.add_clock(1e-6 / params.ntt_mhz, domain="ntt")
    sim.add_testbench(tb)
    sim.run()
    for m, seen, mem in results:
        state, out = loopback_passes(params, seen, log_t, 1)
        assert np.array_equal(lay.gather(mem, "state"), state), f"input_log_m = {m}: state"
        assert np.array_equal(lay.gather(mem, "output"), out), f"input_log_m = {m}: output"
    return cycles


@pytest.mark.parametrize("dma_mhz, ntt_mhz", [(150, 450), (112.5, 450)], ids=["3to1", "4to1"])
def test_zero_extension_at_a_faster_ntt_clock(dma_mhz, ntt_mhz):
    params = BuildParams(lanes=4, log_core=4, channels=4, dma_mhz=dma_mhz, ntt_mhz=ntt_mhz)
    assert lde_pair_supported(params, 4, 7)
    _runs_at(params, 4, 7)
