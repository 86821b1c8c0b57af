"""DMA engine: parameter checks, a fast amaranth.sim loopback, the cocotb/Verilator loopback bench
(sim/bench_dma_loopback.py) and the AXI-RAM bench, each over every run size of its builds (N = 2^4 ..
2^16, C = 2 .. 32 channels) and batches of B = 1, 2, 3 transforms, sizes and batches switching without
reset."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from nantucket.hw.dma import DmaEngine
from nantucket.hw.model.layout import BEAT_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.schedule import loopback_passes
from nantucket.sim.hbm import DmaLoopback
from nantucket.sim.runner import run_bench


def test_parameter_errors():
    with pytest.raises(TypeError, match="params"):
        DmaEngine({"lanes": 16})
    with pytest.raises(ValueError, match="fifo_beats"):
        DmaEngine(BuildParams(lanes=4, log_core=4, channels=4), fifo_beats=100)
    with pytest.raises(ValueError, match="lanes"):
        DmaEngine(BuildParams(lanes=2, log_core=4, channels=4))
    with pytest.raises(TypeError, match="write_bursts"):
        DmaEngine(BuildParams(lanes=4, log_core=4, channels=4), write_bursts=2.0)
    dma = DmaEngine(BuildParams(lanes=4, log_core=4, channels=4))
    assert dma.fifo_points == 512 and dma.payload_width == 512 and dma.transpose_delay == 2


def _sentinel(channel: int, beat: int) -> int:
    return (0x5EED << 240) | (channel << 32) | beat


def _run_pysim(params, runs_wanted, *, refresh, stalls, seed=1):
    """Runs of B transforms of 2^n points for (n, B) in ``runs_wanted``, back to back without reset: the
    state and output against the golden passes; every AXI burst against the host layout of that size and
    batch (so nothing outside the run's B x N/R points per channel is read or written); and, belt and
    braces, guard words just before and after the run's buffers in every channel untouched."""
    dut = DmaLoopback(params, refresh_period=60, refresh_cycles=12, latency=8, seed=seed)
    rng = np.random.default_rng(seed)
    g = dut.guard_beats
    runs = []                   # (log_n, batch, x, memory after the run, AXI bursts issued)
    issued = {}                 # (channel, "ar" / "aw") -> [(first beat, beats)] in issue order

    async def write(ctx, c, first, words):
        ctx.set(dut.bd_chan, c)
        ctx.set(dut.bd_we, 1)
        for b, word in enumerate(words, first):
            ctx.set(dut.bd_addr, b)
            ctx.set(dut.bd_wdata, word)
            await ctx.tick("dma")
        ctx.set(dut.bd_we, 0)

    async def read(ctx, c, beats):
        ctx.set(dut.bd_chan, c)
        out = []
        for b in beats:
            ctx.set(dut.bd_addr, b)
            await ctx.tick("dma")
            out.append(ctx.get(dut.bd_rdata))
        return out

    def guards(lay):
        return [g - 1, g + lay.beats_per_channel, g + lay.beats_per_channel + 1]

    async def tb(ctx):
        ctx.set(dut.refresh_en, refresh)
        ctx.set(dut.stall_en, stalls)
        ctx.set(dut.loop_stall_en, stalls)
        for log_n, batch in runs_wanted:
            lay = HbmLayout(params, log_n, batch)
            x = rng.integers(0, 2**64, lay.n_points, dtype=np.uint64)
            inputs = lay.scatter(x, "input")
            for c in range(params.channels):
                for b in guards(lay):
                    await write(ctx, c, b, [_sentinel(c, b)])
            for c in lay.buffer_channels("input"):
                await write(ctx, c, g, [sum(int(v) << (64 * j) for j, v in enumerate(beat))
                                        for beat in inputs[c].reshape(-1, 4)])
            issued.clear()
            ctx.set(dut.log_n, log_n)
            ctx.set(dut.batch, batch)
            for ps in (1, 2):
                ctx.set(dut.pass_index, ps)
                ctx.set(dut.start, 1)
                await ctx.tick("dma")
                ctx.set(dut.start, 0)
                for _ in range(100_000):
                    await ctx.tick("dma")
                    if ctx.get(dut.done):
                        break
                else:
                    raise AssertionError(f"log_n = {log_n}, B = {batch}: pass {ps} timed out")
            assert all(ctx.get(dut.err[c]) == 0 for c in range(params.channels)), f"log_n = {log_n}, B = {batch}"
            mem = np.zeros((params.channels, lay.points_per_channel), dtype=np.uint64)
            for c in range(params.channels):
                for b, v in enumerate(await read(ctx, c, range(g, g + lay.beats_per_channel))):
                    mem[c, 4 * b:4 * b + 4] = [(v >> (64 * j)) & (2**64 - 1) for j in range(4)]
                for b, v in zip(guards(lay), await read(ctx, c, guards(lay))):
                    assert v == _sentinel(c, b), f"log_n = {log_n}, B = {batch}: channel {c} guard beat {b} written"
            runs.append((log_n, batch, x, list(mem), dict(issued)))

    async def monitor(ctx):
        ports = [dut.dma.m_axi[c] for c in range(params.channels)]
        sigs = [s for a in ports for s in (a.arvalid, a.arready, a.araddr, a.arlen,
                                            a.awvalid, a.awready, a.awaddr, a.awlen)]
        async for _, _, *vals in ctx.tick("dma").sample(*sigs):
            for c in range(params.channels):
                arv, arr, ara, arl, awv, awr, awa, awl = vals[8 * c:8 * c + 8]
                for kind, fire, addr, length in (("ar", arv and arr, ara, arl), ("aw", awv and awr, awa, awl)):
                    if fire:
                        beat, rest = divmod(addr - dut.buffer_base(c), BEAT_BYTES)
                        assert rest == 0, f"channel {c}: unaligned {kind} address {addr:#x}"
                        issued.setdefault((c, kind), []).append((beat, length + 1))

    sim = Simulator(dut)
    sim.add_clock(1 / 300e6, domain="dma")
    sim.add_clock(1 / 464e6, domain="ntt")
    sim.add_testbench(tb)
    sim.add_process(monitor)
    sim.run()
    assert [r[:2] for r in runs] == list(runs_wanted)
    for log_n, batch, x, mem, got_bursts in runs:
        lay = HbmLayout(params, log_n, batch)
        state, out = loopback_passes(params, x, log_n, batch)
        assert np.array_equal(lay.gather(mem, "state"), state), f"log_n = {log_n}, B = {batch}: state"
        assert np.array_equal(lay.gather(mem, "output"), out), f"log_n = {log_n}, B = {batch}: output"
        want = {}
        for ps in (1, 2):
            for kind, direction in (("ar", "read"), ("aw", "write")):
                for c, bursts in lay.bursts(ps, direction).items():
                    want.setdefault((c, kind), []).extend(bursts)
        assert got_bursts == want, f"log_n = {log_n}, B = {batch}"


def _sizes(params, seed=0):
    """(log_n, B): every size of the build, largest first (B = 1), then the rest shuffled with a repeat
    (so runs switch between sizes up and down and repeat one), with batches of 3, 2 and 1 transforms in
    turn, as many as fit the largest size's buffers."""
    rest = list(range(params.min_log_n, params.max_log_n))
    random.Random(seed).shuffle(rest)
    runs = [(params.max_log_n, 1)]
    for i, n in enumerate(rest + rest[:1]):
        b = (3, 2, 1)[i % 3]
        while b << n > 1 << params.max_log_n:
            b -= 1
        runs.append((n, b))
    return runs


@pytest.mark.parametrize("params", [BuildParams(lanes=16, log_core=4, channels=2),
                                    BuildParams(lanes=4, log_core=2, channels=4),
                                    BuildParams(lanes=4, log_core=3, channels=4),
                                    BuildParams(lanes=4, log_core=4, channels=4),
                                    BuildParams(lanes=4, log_core=4, channels=8),
                                    BuildParams(lanes=8, log_core=5, channels=8)], ids=lambda p: p.tag())
def test_loopback_pysim(params):
    """Both passes of runs of every size and batches through the DMA with refresh and stalls: the data
    against the golden passes, every AXI address and burst length against the host layout
    (``HbmLayout.bursts``) of that size and batch, nothing outside the run's buffers touched."""
    _run_pysim(params, _sizes(params), refresh=True, stalls=True)


# Every size of three builds (one Verilator build each): N = 2^4 .. 2^8 with C = 2 (one channel per
# direction, bursts of 4 beats and fewer), 2^8 .. 2^12 with C = 32, 2^8 .. 2^16 with 16 lanes and C = 4.
# C = 32 uses 4 lanes here: the 16-lane, C = 32 engine takes about 10 minutes to build on 2 cores (it passed
# at N = 2^16, see docs/performance.md), and sim/bench_dma.py builds and runs it at full size.
VERILATOR_CASES = [BuildParams(lanes=4, log_core=4, channels=2),
                   BuildParams(lanes=4, log_core=6, channels=32),
                   BuildParams(lanes=16, log_core=8, channels=4)]


@pytest.mark.parametrize("params", VERILATOR_CASES, ids=lambda p: p.tag())
def test_loopback_verilator(params):
    dut = DmaLoopback(params)
    run_bench(dut, name="dma_loopback", params=params.as_dict(),
              test_module="nantucket.sim.bench_dma_loopback")


@pytest.mark.parametrize("params", [BuildParams(lanes=4, log_core=4, channels=4),
                                    BuildParams(lanes=8, log_core=5, channels=8)], ids=lambda p: p.tag())
def test_dma_against_axiram(params):
    """The same engine against cocotbext-axi's AxiRam (an independent AXI slave model)."""
    from nantucket.sim.dma_axi_top import DmaAxiTop
    run_bench(DmaAxiTop(params), name="dma_axiram", params=params.as_dict(),
              test_module="nantucket.sim.bench_dma_axiram")


@pytest.mark.parametrize("build", [dict(lanes=4, log_core=2, channels=4), dict(lanes=16, log_core=4, channels=2)],
                         ids=["L4_k2_C4", "L16_k4_C2"])
def test_lint(build):
    """The emitted Verilog is lint clean, also at the corners (one beat per unit, one channel per direction)."""
    from nantucket.hw import catalog
    from nantucket.sim.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("dma", **build), "dma")
