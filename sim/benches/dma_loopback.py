"""cocotb bench for sim.hbm.DmaLoopback: the DMA engine with the in-design HBM models and a loopback FIFO in
place of the NTT engine, both passes, at the build's clocks (BuildParams.dma_mhz and ntt_mhz; their defaults
are hw/model/params.py's).

Every test runs transforms of several sizes back to back without a reset in between: the build's largest,
then half of the smaller ones in a shuffled order and one of them again, as batches of 2, 3 and 1
transforms in turn (up to a quarter of the largest size's points); the two refresh settings take the two
halves, so with stalls and without, every size 2^min_log_n .. 2^max_log_n is run. The
first test of a simulation writes sentinels everywhere (guard regions around every buffer and the whole
state buffer); before each run the input buffer of the run's size is preloaded (random points and the
field's edge words, :func:`dma_points`) and sentinels are put in guard words just before and after the
run's buffer in every channel. The build's field sets the point width: four 64-bit Goldilocks points a
256-bit beat, or eight 32-bit words of a 31-bit field. After pass 1 and pass 2 the run's buffers are read back and checked against the layout
model and the pass schedule of that size (never against the DUT):

- the state holds state[writes1] = x[reads1] and the output X[writes2] = state[reads2], i.e. every point
  arrived exactly once where :class:`hw.model.layout.HbmLayout` says;
- the guard words are untouched (nothing written outside the run's N/R points per channel); no protocol
  error (range, 4 KiB crossing, WLAST, size/burst type);
- the burst-length histograms of each pass match the layout's bursts of that size exactly (reads walk each
  channel from its buffer's base, so exactly the run's N/R points per channel are read); at the end, the
  guards around the largest buffer are intact. (tests/test_dma.py's pysim loopback checks every address.)

Crossed: refresh windows on/off x random stalls on every AXI handshake and both loopback sides on/off.
"""

import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge, Timer

from nantucket.hw.model import field as F
from nantucket.hw.model.layout import HbmLayout, lde_pairs
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.hw.model.schedule import loopback_passes
from nantucket.hw.points import pack_beat, unpack_beat
from nantucket.hw.run import run_bits
from nantucket.sim.benches.arith import field_edge_values, field_noncanonical_values
from nantucket.sim.benches.lib import reset_domains
from nantucket.sim.regression import edge_points
from nantucket.hw.flow.runner import bench_facts


def dma_edge_words(field) -> np.ndarray:
    """The words a DMA bench puts among its random points, as the field's point words: the words at or
    above p first (the DMA moves words without arithmetic, so non-canonical ones, and in a 31-bit field
    the 32-bit word's top bit, travel as they are), then the field's edge values (0, 1, p-1, p-2, around
    2^15, 2^16, 2^30 in a 31-bit field: ``sim.regression.edge_points`` and ``field_edge_values``)."""
    f = F.get(field)
    top = 1 << f.point_bits
    words = dict.fromkeys([*field_noncanonical_values(f), f.p, f.p + 1, top - 2, top - 1, top >> 1, (top >> 1) - 1,
                           *edge_points(f.p).tolist(), *field_edge_values(f)])
    return np.array(sorted(words, key=lambda v: v < f.p), dtype=f.dtype)      # stable: >= p first


def dma_points(rng, n: int, field) -> np.ndarray:
    """``n`` random point words of ``field`` (any word of its point width) with :func:`dma_edge_words`, in
    turn from the first, at random places (a quarter of the points at most)."""
    f = F.get(field)
    x = rng.integers(0, 1 << f.point_bits, n, dtype=f.dtype)
    edges = dma_edge_words(f)
    count = min(n // 4, 4 * edges.size)
    x[rng.choice(n, size=count, replace=False)] = np.resize(edges, count)
    return x



def sentinel(channel: int, beat: int) -> int:
    return (0xA5A5_0000_0000_0000 | channel << 32 | beat) * 0x0001_0001_0001_0001 & ((1 << 256) - 1) | 1


class LoopbackTB:
    preloaded = False     # guards and state sentinels written (once per simulation)

    def __init__(self, dut):
        facts = bench_facts()
        self.dut = dut
        self.params = BuildParams(**facts["params"])
        self.field = self.params.prime_field
        self.props = facts["props"]
        self.layout = HbmLayout(self.params)       # the largest size: what the channel models hold
        self.guard = self.props["guard_beats"]
        self.depth = self.props["depth_beats"]

    async def start(self):
        d = self.dut
        cocotb.start_soon(Clock(d.dma_clk, self.params.sim_period_ps("dma"), unit="ps").start())
        cocotb.start_soon(Clock(d.ntt_clk, self.params.sim_period_ps("ntt"), unit="ps").start())
        for s in (d.start, d.pass_index, d.refresh_en, d.stall_en, d.loop_stall_en, d.bd_we, d.bd_chan,
                  d.bd_addr, d.bd_wdata):
            s.value = 0
        d.run.value = run_bits(self.params, Run(self.params.max_log_n))
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
        """Point words (the field's, lowest address first) as 256-bit beats."""
        return [pack_beat(beat, self.field) for beat in points.reshape(-1, self.layout.points_per_beat)]

    async def preload(self, lay: HbmLayout, x: np.ndarray):
        """The input buffer of ``lay``'s size and sentinels in the guard words around it in every channel;
        (first test of a simulation only) sentinels everywhere else first. Later runs leave the previous
        run's state in place: it was made from other random points, so a point the DMA fails to write
        still shows, and the guards were never legitimately written."""
        if not LoopbackTB.preloaded:
            for c in range(self.params.channels):
                await self.write_channel(c, [sentinel(c, i) for i in range(self.depth)])
            LoopbackTB.preloaded = True
        bufs = lay.scatter(x, "input")
        for c in lay.buffer_channels("input"):
            await self.write_channel(c, self.beats_of(bufs[c]), start=self.guard)
        for c in range(self.params.channels):
            for i in self.guard_words(lay):
                await self.write_channel(c, [sentinel(c, i)], start=i)

    def guard_words(self, lay: HbmLayout) -> list[int]:
        """Beats just outside a run's buffer (within the channel models' guards at the largest size)."""
        end = self.guard + lay.beats_per_channel
        return [self.guard - 1] + list(range(end, min(end + 2, self.depth)))

    async def run_pass(self, pass_index: int, log_n: int, timeout_cycles: int, batch: int = 1, *,
                       input_log_m: int = 0, chain_log_n: int = 0) -> dict:
        d = self.dut
        await FallingEdge(d.dma_clk)
        d.pass_index.value = pass_index
        d.run.value = run_bits(self.params, Run.of(log_n, batch=batch, input_log_m=input_log_m,
                                                   chain_log_n=chain_log_n))
        d.start.value = 1
        await FallingEdge(d.dma_clk)
        d.start.value = 0
        # wait for done without Python on every cycle
        timeout = Timer(timeout_cycles * self.params.sim_period_ps("dma"), unit="ps")
        if await First(RisingEdge(d.done), timeout) is timeout:
            raise AssertionError(f"{batch} x 2^{log_n}: pass {pass_index} did not finish in {timeout_cycles} "
                                 "DMA cycles")
        await ClockCycles(d.ntt_clk, 4)
        return {"dma_cycles": int(d.dma_cycles.value), "ntt_cycles": int(d.ntt_cycles.value),
                "out_xfers": int(d.out_xfers.value), "in_xfers": int(d.in_xfers.value),
                "rd_hist": self.hist(d.rd_hist), "wr_hist": self.hist(d.wr_hist)}

    @staticmethod
    def hist(sig) -> list[int]:
        v = int(sig.value)
        return [(v >> (32 * i)) & 0xFFFF_FFFF for i in range(9)]

    async def dump(self, beats) -> np.ndarray:
        """Beats ``beats`` of every channel as point words, one row per channel."""
        per = self.layout.points_per_beat
        mem = np.zeros((self.params.channels, len(beats) * per), dtype=self.layout.point_dtype)
        for c in range(self.params.channels):
            for i, v in enumerate(await self.read_channel(c, beats)):
                mem[c, per * i:per * (i + 1)] = unpack_beat(v, self.field)
        return mem


def expected_hist(layout: HbmLayout, directions) -> list[int]:
    h = [0] * 9
    for p, d in directions:
        for bursts in layout.bursts(p, d).values():
            for _, n in bursts:
                h[min(n, 9) - 1] += 1
    return h


def run_sizes(params: BuildParams, share: int) -> list[tuple[int, int]]:
    """(log_n, B): the largest size (one transform), then half of the others (``share`` 0 or 1 of a fixed
    shuffle, so the two halves cover every size), then the first of them again, as batches of 2, 3 and 1
    transforms in turn (fewer where B x N would pass a quarter of the largest size: the preload and
    read-back run in Python, beat by beat, so the batches stay on the cheap sizes)."""
    rest = list(range(params.min_log_n, params.max_log_n))
    random.Random(params.max_log_n).shuffle(rest)
    mine = rest[share::2]
    runs = [(params.max_log_n, 1)]
    for i, n in enumerate(mine + mine[:1]):
        b = (2, 3, 1)[i % 3]
        while b > 1 and b << n > 1 << (params.max_log_n - 2):
            b -= 1
        runs.append((n, b))
    return runs


async def one_run(tb: LoopbackTB, log_n: int, batch: int, rng) -> str:
    """Preload, both passes, read-back and checks of a batch of ``batch`` transforms of 2^log_n points."""
    dut, p = tb.dut, tb.params
    lay = HbmLayout(p, log_n, batch)
    n = lay.n_points
    x = dma_points(rng, n, tb.field)
    await tb.preload(lay, x)
    state, out = loopback_passes(p, x, log_n, batch)

    cycles = n // p.points_per_cycle
    budget = 40 * cycles + 20000
    before = (tb.hist(dut.rd_hist), tb.hist(dut.wr_hist))
    stats = []
    for ps in (1, 2):
        s = await tb.run_pass(ps, log_n, budget, batch)
        assert s["out_xfers"] == s["in_xfers"] == cycles, (log_n, batch, ps, s)
        rd = [a - b for a, b in zip(s["rd_hist"], before[0])]
        wr = [a - b for a, b in zip(s["wr_hist"], before[1])]
        assert rd == expected_hist(lay, [(ps, "read")]), (log_n, batch, ps, rd)
        assert wr == expected_hist(lay, [(ps, "write")]), (log_n, batch, ps, wr)
        before = (s["rd_hist"], s["wr_hist"])
        stats.append(s)
    errs = int(dut.err.value)
    assert errs == 0, [(c, (errs >> (4 * c)) & 15) for c in range(p.channels) if (errs >> (4 * c)) & 15]

    mem = await tb.dump(list(range(tb.guard, tb.guard + lay.beats_per_channel)))
    bad = np.flatnonzero(lay.gather(list(mem), "state") != state)
    assert bad.size == 0, f"log_n = {log_n}, B = {batch}: {bad.size} state points wrong, first at {bad[:8]}"
    bad = np.flatnonzero(lay.gather(list(mem), "output") != out)
    assert bad.size == 0, f"log_n = {log_n}, B = {batch}: {bad.size} output points wrong, first at {bad[:8]}"
    for c in range(p.channels):
        words = await tb.read_channel(c, tb.guard_words(lay))
        for i, word in zip(tb.guard_words(lay), words):
            assert word == sentinel(c, i), f"log_n = {log_n}, B = {batch}: guard beat {i} of channel {c} overwritten"
    # points are opaque to the DMA: canonical or not, they travel bit-exactly
    assert np.any(x >= tb.field.p)
    return (f"{batch} x 2^{log_n}: pass 1 {stats[0]['ntt_cycles']} / pass 2 {stats[1]['ntt_cycles']} NTT cycles "
            f"for {cycles} ideal")


@cocotb.test()
@cocotb.parametrize(refresh=[False, True], stalls=[False, True])
async def test_two_passes(dut, refresh, stalls):
    tb = LoopbackTB(dut)
    await tb.start()
    p = tb.params
    rng = np.random.default_rng(random.getrandbits(32))
    dut.refresh_en.value = int(refresh)
    dut.stall_en.value = int(stalls)
    dut.loop_stall_en.value = int(stalls)
    # with and without stalls each, the two refresh settings share the smaller sizes between them
    for log_n, batch in run_sizes(p, int(refresh)):
        dut._log.info(f"{await one_run(tb, log_n, batch, rng)} (refresh={refresh}, stalls={stalls})")
    # the guards around the largest buffer: never written by any run
    for c in range(p.channels):
        beats = list(range(tb.guard)) + list(range(tb.guard + tb.layout.beats_per_channel, tb.depth))
        for i, word in zip(beats, await tb.read_channel(c, beats)):
            assert word == sentinel(c, i), f"guard beat {i} of channel {c} overwritten"


def chain_runs(params: BuildParams) -> list[tuple[int, int, int]]:
    """(n, t, B) for the chained test: the supported pairs with n < t and n = t whose 2^t-point run fits a
    quarter of the largest size's points (the preload and read-back are Python, beat by beat), the
    largest such of each kind and the smallest, the same size as a batch of 2."""
    pairs = sorted(p for p in lde_pairs(params) if p[1] <= params.max_log_n - 2)
    grow = [p for p in pairs if p[0] < p[1]]
    same = [p for p in pairs if p[0] == p[1]]
    runs = [(*grow[-1], 1), (*same[-2], 2), (*grow[0], 1)] if grow else [(*same[-1], 1)]
    return [r for r in runs if r[2] << r[1] <= 1 << (params.max_log_n - 2)]


@cocotb.test()
async def test_chain_zero_extension(dut):
    """Both passes of B 2^n-point runs with the output chained into the input of 2^t-point runs, then both
    passes of those reading it zero-extended (m = n), refresh and random stalls on: the output points
    where ``output_as_input`` says and every other word of the output channels as it was (random data, so
    the zero units are not zeros in HBM), the guards untouched; the 2^t run's state and output are the
    golden passes of the output padded with zeros, and its reads are the non-zero units only (one unit
    burst each, by the burst histogram)."""
    tb = LoopbackTB(dut)
    await tb.start()
    p = tb.params
    rng = np.random.default_rng(random.getrandbits(32))
    dut.refresh_en.value = 1
    dut.stall_en.value = 1
    dut.loop_stall_en.value = 1
    unit = [0] * 9
    for n, t, batch in chain_runs(p):
        lay_n, lay_t = HbmLayout(p, n, batch), HbmLayout(p, t, batch)
        x = dma_points(rng, lay_n.n_points, tb.field)
        bt, per, size = lay_t.beats_per_channel, lay_t.points_per_beat, lay_t.point_bytes
        before = {}
        for c, buf in zip(lay_t.buffer_channels("input"), np.asarray(lay_n.scatter(x, "input"))[0::2]):
            words = rng.integers(1, 1 << tb.field.point_bits, per * bt, dtype=lay_t.point_dtype)
            words[:buf.size] = buf
            before[c] = words
            await tb.write_channel(c, tb.beats_of(words), start=tb.guard)
        for c in range(p.channels):
            for i in tb.guard_words(lay_t):
                await tb.write_channel(c, [sentinel(c, i)], start=i)
        cycles = lay_n.n_points // p.points_per_cycle
        stats = [await tb.run_pass(ps, n, 40 * cycles + 20000, batch, chain_log_n=t) for ps in (1, 2)]
        _, out = loopback_passes(p, x, n, batch)
        mem = await tb.dump(list(range(tb.guard, tb.guard + bt)))
        ch, off = lay_n.output_as_input(t)
        assert np.array_equal(mem[ch, off // size], out), f"{batch} x 2^{n} -> 2^{t}: output points misplaced"
        for c, words in before.items():
            words = words.copy()
            mine = ch == c
            words[off[mine] // size] = out[mine]
            assert np.array_equal(mem[c], words), f"{batch} x 2^{n} -> 2^{t}: channel {c}: a word not in the output written"
        cycles = lay_t.n_points // p.points_per_cycle
        stats += [await tb.run_pass(ps, t, 40 * cycles + 20000, batch, input_log_m=n) for ps in (1, 2)]
        x_t = np.zeros((batch, 1 << t), dtype=lay_t.point_dtype)
        x_t[:, :1 << n] = out.reshape(batch, -1)
        state, out_t = loopback_passes(p, x_t.reshape(-1), t, batch)
        mem = list(await tb.dump(list(range(tb.guard, tb.guard + bt))))
        assert np.array_equal(lay_t.gather(mem, "state"), state), f"{batch} x 2^{n} -> 2^{t}: state of the 2^{t} run"
        assert np.array_equal(lay_t.gather(mem, "output"), out_t), f"{batch} x 2^{n} -> 2^{t}: output of the 2^{t} run"
        for c in range(p.channels):
            for i, word in zip(tb.guard_words(lay_t), await tb.read_channel(c, tb.guard_words(lay_t))):
                assert word == sentinel(c, i), f"{batch} x 2^{n} -> 2^{t}: guard beat {i} of channel {c} written"
        # the bursts: pass 2 writes one per output unit; the zero-extended pass 1 reads one per non-zero unit
        unit[lay_t.unit_beats - 1] = lay_n.n_points // p.lanes
        hist = [s["rd_hist"] for s in stats], [s["wr_hist"] for s in stats]
        delta = [[[a - b for a, b in zip(h[i], h[i - 1])] for i in range(1, 4)] for h in hist]
        assert delta[1][0] == unit, f"{batch} x 2^{n} -> 2^{t}: chained write bursts {delta[1][0]}"
        assert delta[0][1] == (unit if n < t else expected_hist(lay_t, [(1, "read")])), \
            f"{batch} x 2^{n} -> 2^{t}: zero-extended read bursts {delta[0][1]}"
        assert int(dut.err.value) == 0
        dut._log.info(f"{batch} x 2^{n} chained into 2^{t} and read back zero-extended: pass NTT cycles "
                      f"{[s['ntt_cycles'] for s in stats]}")


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
