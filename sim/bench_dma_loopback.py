"""cocotb bench for sim.hbm.DmaLoopback: the DMA engine with the in-design HBM models and a loopback FIFO in
place of the NTT engine, both passes, DMA clock 300 MHz and NTT clock 464 MHz.

Every test preloads the input buffer (random points and the field's edge values); the first also writes sentinels everywhere
else (guard regions around every buffer and the whole state buffer), runs pass 1 and pass 2, reads every
channel back and checks against the layout model and the pass schedule (never against the DUT):

- the state holds state[writes1] = x[reads1] and the output X[writes2] = state[reads2], i.e. every point
  arrived exactly once where :class:`hw.model.layout.HbmLayout` says;
- guard regions are untouched; no protocol error (range, 4 KiB crossing, WLAST, size/burst type);
- the burst-length histograms match the layout's bursts exactly.

Crossed: refresh windows on/off x random stalls on every AXI handshake and both loopback sides on/off.
"""

import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

from hw.model.field import P
from hw.model.layout import POINTS_PER_BEAT, HbmLayout
from hw.model.params import BuildParams
from hw.model.schedule import loopback_passes
from hw.points import pack_beat, unpack_beat
from sim.benchlib import EDGE_VALUES, NONCANONICAL_VALUES, reset_domains
from sim.runner import bench_facts

DMA_PS, NTT_PS = 3334, 2156          # 300 MHz and 464 MHz (even picoseconds)


def sentinel(channel: int, beat: int) -> int:
    return (0xA5A5_0000_0000_0000 | channel << 32 | beat) * 0x0001_0001_0001_0001 & ((1 << 256) - 1) | 1


class LoopbackTB:
    preloaded = False     # guards and state sentinels written (once per simulation)

    def __init__(self, dut):
        facts = bench_facts()
        self.dut = dut
        self.params = BuildParams(**facts["params"])
        self.props = facts["props"]
        self.layout = HbmLayout(self.params)
        self.guard = self.props["guard_beats"]
        self.depth = self.props["depth_beats"]

    async def start(self):
        d = self.dut
        cocotb.start_soon(Clock(d.dma_clk, DMA_PS, unit="ps").start())
        cocotb.start_soon(Clock(d.ntt_clk, NTT_PS, unit="ps").start())
        for s in (d.start, d.pass_index, d.refresh_en, d.stall_en, d.loop_stall_en, d.bd_we, d.bd_chan,
                  d.bd_addr, d.bd_wdata):
            s.value = 0
        await reset_domains(d.dma_clk, (d.dma_rst, d.ntt_rst))

    async def write_channel(self, c: int, beats: list[int], start: int = 0):
        d = self.dut
        await FallingEdge(d.dma_clk)
        d.bd_chan.value = c
        d.bd_we.value = 1
        for i, v in enumerate(beats, start):
            d.bd_addr.value = i
            d.bd_wdata.value = v
            await FallingEdge(d.dma_clk)
        d.bd_we.value = 0

    async def read_channel(self, c: int, beats=None) -> list[int]:
        d = self.dut
        await FallingEdge(d.dma_clk)
        d.bd_chan.value = c
        out = []
        for i in (range(self.depth) if beats is None else beats):
            d.bd_addr.value = i               # the read port registers it at the rising edge between
            await FallingEdge(d.dma_clk)
            out.append(int(d.bd_rdata.value))
        return out

    def beats_of(self, points: np.ndarray) -> list[int]:
        return [pack_beat(beat) for beat in points.reshape(-1, POINTS_PER_BEAT)]

    async def preload(self, x: np.ndarray):
        """Input buffer, and (first test of a simulation only) sentinels in guards and the state buffer.
        Later tests leave the previous test's state in place: it was made from other random points, so
        a point the DMA fails to write still shows, and the guards were never legitimately written."""
        bufs = self.layout.scatter(x, "input")
        inputs = set(self.layout.buffer_channels("input"))
        first = not LoopbackTB.preloaded
        for c in range(self.params.channels):
            if c in inputs:
                body = self.beats_of(bufs[c])
            elif first:
                body = [sentinel(c, self.guard + i) for i in range(self.layout.beats_per_channel)]
            else:
                continue
            if first:
                beats = ([sentinel(c, i) for i in range(self.guard)] + body
                         + [sentinel(c, self.guard + self.layout.beats_per_channel + i) for i in range(self.guard)])
                await self.write_channel(c, beats)
            else:
                await self.write_channel(c, body, start=self.guard)
        LoopbackTB.preloaded = True

    async def run_pass(self, pass_index: int, timeout_cycles: int) -> dict:
        d = self.dut
        await FallingEdge(d.dma_clk)
        d.pass_index.value = pass_index
        d.start.value = 1
        await FallingEdge(d.dma_clk)
        d.start.value = 0
        for _ in range(timeout_cycles):
            await RisingEdge(d.dma_clk)
            if int(d.done.value):
                break
        else:
            raise AssertionError(f"pass {pass_index} did not finish in {timeout_cycles} DMA cycles")
        await ClockCycles(d.ntt_clk, 4)
        return {"dma_cycles": int(d.dma_cycles.value), "ntt_cycles": int(d.ntt_cycles.value),
                "out_xfers": int(d.out_xfers.value), "in_xfers": int(d.in_xfers.value),
                "rd_hist": self.hist(d.rd_hist), "wr_hist": self.hist(d.wr_hist)}

    @staticmethod
    def hist(sig) -> list[int]:
        v = int(sig.value)
        return [(v >> (32 * i)) & 0xFFFF_FFFF for i in range(9)]

    async def dump(self) -> np.ndarray:
        mem = np.zeros((self.params.channels, self.depth * 4), dtype=np.uint64)
        for c in range(self.params.channels):
            for i, v in enumerate(await self.read_channel(c)):
                mem[c, 4 * i:4 * i + 4] = unpack_beat(v)
        return mem


def expected_hist(layout: HbmLayout, directions) -> list[int]:
    h = [0] * 9
    for p, d in directions:
        for bursts in layout.bursts(p, d).values():
            for _, n in bursts:
                h[min(n, 9) - 1] += 1
    return h


@cocotb.test()
@cocotb.parametrize(refresh=[False, True], stalls=[False, True])
async def test_two_passes(dut, refresh, stalls):
    tb = LoopbackTB(dut)
    await tb.start()
    p, lay = tb.params, tb.layout
    n = p.n_points
    rng = np.random.default_rng(random.getrandbits(32))
    x = rng.integers(0, 2**64, n, dtype=np.uint64)
    edges = np.array(list(EDGE_VALUES) + list(NONCANONICAL_VALUES), dtype=np.uint64)
    x[rng.choice(n, size=min(n // 4, 4 * edges.size), replace=False)] = np.resize(edges, min(n // 4, 4 * edges.size))
    await tb.preload(x)
    dut.refresh_en.value = int(refresh)
    dut.stall_en.value = int(stalls)
    dut.loop_stall_en.value = int(stalls)

    state, out = loopback_passes(p, x)

    budget = 40 * p.cycles_per_pass + 20000
    s1 = await tb.run_pass(1, budget)
    assert s1["out_xfers"] == s1["in_xfers"] == p.cycles_per_pass
    assert s1["rd_hist"] == expected_hist(lay, [(1, "read")]), s1["rd_hist"]
    assert s1["wr_hist"] == expected_hist(lay, [(1, "write")]), s1["wr_hist"]
    s2 = await tb.run_pass(2, budget)
    assert s2["out_xfers"] == s2["in_xfers"] == p.cycles_per_pass
    assert s2["rd_hist"] == expected_hist(lay, [(1, "read"), (2, "read")])
    assert s2["wr_hist"] == expected_hist(lay, [(1, "write"), (2, "write")])
    errs = int(dut.err.value)
    assert errs == 0, [(c, (errs >> (4 * c)) & 15) for c in range(p.channels) if (errs >> (4 * c)) & 15]

    mem = await tb.dump()
    g = tb.guard * 4
    inner = [mem[c, g:g + lay.points_per_channel] for c in range(p.channels)]
    got_state = lay.gather(inner, "state")
    got_out = lay.gather(inner, "output")
    bad = np.flatnonzero(got_state != state)
    assert bad.size == 0, f"{bad.size} state points wrong, first at {bad[:8]}"
    bad = np.flatnonzero(got_out != out)
    assert bad.size == 0, f"{bad.size} output points wrong, first at {bad[:8]}"
    for c in range(p.channels):
        for i in list(range(tb.guard)) + list(range(tb.guard + lay.beats_per_channel, tb.depth)):
            word = pack_beat(mem[c, 4 * i:4 * i + 4])
            assert word == sentinel(c, i), f"guard beat {i} of channel {c} overwritten"
    # points are opaque to the DMA: canonical or not, they travel bit-exactly
    assert np.any(x >= np.uint64(P))
    dut._log.info(f"pass 1 {s1['ntt_cycles']} / pass 2 {s2['ntt_cycles']} NTT cycles for "
                  f"{p.cycles_per_pass} ideal (refresh={refresh}, stalls={stalls})")


@cocotb.test()
async def test_backdoor(dut):
    """The preload/read-back path the other test relies on: what goes in comes back, per channel."""
    tb = LoopbackTB(dut)
    await tb.start()
    rng = random.Random(5)
    n = min(tb.depth, 64)          # both ends of every channel are enough to catch an offset or a mix-up
    words = {c: [rng.getrandbits(256) for _ in range(n)] for c in range(tb.params.channels)}
    for c, w in words.items():
        await tb.write_channel(c, w[: n // 2])
        await tb.write_channel(c, w[n // 2:], start=tb.depth - (n - n // 2))
    for c, w in words.items():
        got = await tb.read_channel(c, list(range(n // 2)) + list(range(tb.depth - (n - n // 2), tb.depth)))
        assert got == w, f"channel {c}: first mismatch at {next(i for i in range(len(w)) if got[i] != w[i])}"
    LoopbackTB.preloaded = False   # the sentinels are gone
