"""The DMA's blocks one at a time (amaranth.sim): address generators against the host layout, the AXI
masters against the HBM channel model with stalls, refresh and injected error responses, the corner turn
against a transposition, with random stalls on every stream."""

import random

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from nantucket.hw.axi import RESP_DECERR, RESP_SLVERR, connect_half
from nantucket.hw.dma.addresses import ReadAddressGenerator, WriteAddressGenerator
from nantucket.hw.dma.axi_read import AxiReadMaster
from nantucket.hw.dma.axi_write import AxiWriteMaster
from nantucket.hw.dma.write_path import CornerTurn
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.sim.hbm import HbmChannelModel

BUILDS = [BuildParams(lanes=4, log_core=2, channels=4), BuildParams(lanes=4, log_core=3, channels=4),
          BuildParams(lanes=4, log_core=4, channels=8), BuildParams(lanes=8, log_core=5, channels=2),
          BuildParams(lanes=16, log_core=6, channels=32), BuildParams(lanes=16, log_core=8, channels=4)]


def _run(dut, bench, *, processes=()):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    for p in processes:
        sim.add_process(p)
    sim.run()


def _runs(params):
    """(log_n, pass, batch) of runs of every size, back to back: largest first, then sizes going down and
    up, with batches of 1, 3 and 2 transforms in turn (as many as fit the largest size's buffers)."""
    sizes = list(range(params.min_log_n, params.max_log_n + 1))
    order = sizes[::-1] + sizes[1:] if len(sizes) > 1 else sizes
    runs = []
    for i, n in enumerate(order):
        b = (1, 3, 2)[i % 3]
        while b << n > 1 << params.max_log_n:
            b -= 1
        runs += [(n, ps, b) for ps in (1, 2)]
    return runs


@pytest.mark.parametrize("params", BUILDS, ids=lambda p: p.tag())
def test_write_addresses_are_the_host_layout(params):
    """Every (channel, first beat) the write address generator emits, in order, is the host layout's, for
    both passes of every size and batches of several transforms (sizes and batches switching without
    reset)."""
    gen = WriteAddressGenerator(HbmLayout(params))
    runs = _runs(params)
    got = []

    async def bench(ctx):
        for log_n, pass_index, batch in runs:
            lay = HbmLayout(params, log_n, batch)
            chans = lay.write_channels(pass_index)
            ctx.set(gen.pass2, pass_index == 2)
            ctx.set(gen.log_n, log_n)
            ctx.set(gen.start, 1)
            await ctx.tick()
            ctx.set(gen.start, 0)
            units = []
            for _ in range(lay.n_points // params.lanes // 2):
                for _ in range(random.randrange(2)):            # gaps between pairs
                    await ctx.tick()
                units.append((chans[ctx.get(gen.chan_a)], ctx.get(gen.beat_a)))
                units.append((chans[ctx.get(gen.chan_b)], ctx.get(gen.beat_b)))
                ctx.set(gen.advance, 1)
                await ctx.tick()
                ctx.set(gen.advance, 0)
            got.append(units)

    _run(gen, bench)
    for (log_n, pass_index, batch), units in zip(runs, got, strict=True):
        want = HbmLayout(params, log_n, batch).cycle_units(pass_index, "write")
        assert units == [tuple(int(v) for v in row) for row in want], (log_n, pass_index, batch)


@pytest.mark.parametrize("params", BUILDS, ids=lambda p: p.tag())
def test_read_channels_are_the_host_layout(params):
    """The read address generator's channel pairs are the layout's for both passes of every size and
    batches; ``active`` falls after exactly the pass's B x N / 2L cycles."""
    gen = ReadAddressGenerator(HbmLayout(params))
    runs = _runs(params)
    got = []

    async def bench(ctx):
        for log_n, pass_index, batch in runs:
            chans = HbmLayout(params, log_n).read_channels(pass_index)
            ctx.set(gen.pass2, pass_index == 2)
            ctx.set(gen.log_n, log_n)
            ctx.set(gen.batch, batch)
            ctx.set(gen.start, 1)
            await ctx.tick()
            ctx.set(gen.start, 0)
            units = []
            while ctx.get(gen.active):
                units.extend([chans[ctx.get(gen.chan_a)], chans[ctx.get(gen.chan_b)]])
                ctx.set(gen.advance, 1)
                await ctx.tick()
                ctx.set(gen.advance, 0)
            got.append(units)

    _run(gen, bench)
    for (log_n, pass_index, batch), units in zip(runs, got, strict=True):
        want = [int(c) for c in HbmLayout(params, log_n, batch).cycle_units(pass_index, "read")[:, 0]]
        assert units == want, (log_n, pass_index, batch)


class _ReadBench(Elaboratable):
    """AxiReadMaster -> FIFO, against one HBM channel model."""

    def __init__(self, total, depth):
        self.hbm = HbmChannelModel(depth_beats=total, latency=5, refresh_period=50, refresh_cycles=10,
                                   stall_rate=96, init=[i * 0x1_0000_0001 + 7 for i in range(total)])
        self.master = AxiReadMaster(total_beats=total, burst_beats=8, fifo_beats=depth, addr_width=64)
        self.fifo = SyncFIFO(width=256, depth=depth)

    def elaborate(self, platform):
        m = Module()
        m.submodules.hbm, m.submodules.master, m.submodules.fifo = self.hbm, self.master, self.fifo
        connect_half(m, self.master.axi, self.hbm.axi)
        wiring.connect(m, self.master.beats, self.fifo.w_stream)
        m.d.comb += [self.master.fifo_level.eq(self.fifo.level), self.hbm.stall_en.eq(1),
                     self.hbm.refresh_en.eq(1)]
        return m


def test_read_master_credit_order_and_faults():
    """Beats arrive in address order while the consumer drains at random; the FIFO never overflows
    (R is never back-pressured); an injected SLVERR raises ``fault`` with the code."""
    total, depth = 64, 16
    dut = _ReadBench(total, depth)
    got, faults = [], []

    async def bench(ctx):
        rng = random.Random(5)
        ctx.set(dut.master.start, 1)
        await ctx.tick()
        ctx.set(dut.master.start, 0)
        ctx.set(dut.master.run, 1)
        for cycle in range(5000):
            if ctx.get(dut.master.beats.valid):
                assert ctx.get(dut.fifo.w_rdy), "a beat arrived with the FIFO full"
                if ctx.get(dut.master.fault):
                    faults.append((len(got) + ctx.get(dut.fifo.level), ctx.get(dut.master.fault_resp)))
            take = ctx.get(dut.fifo.r_rdy) and rng.random() < 0.3
            ctx.set(dut.fifo.r_en, take)
            if take:
                got.append(ctx.get(dut.fifo.r_data))
            ctx.set(dut.hbm.inject_rresp, RESP_SLVERR if 60 <= cycle < 120 else 0)
            await ctx.tick()
            if ctx.get(dut.master.done) and len(got) == total:
                break

    _run(dut, bench)
    assert got == [i * 0x1_0000_0001 + 7 for i in range(total)]
    assert faults and all(resp == RESP_SLVERR for _, resp in faults)


class _WriteBench(Elaboratable):
    def __init__(self, total):
        self.hbm = HbmChannelModel(depth_beats=total, latency=5, refresh_period=50, refresh_cycles=10,
                                   stall_rate=96)
        self.master = AxiWriteMaster(total_beats=total, beat_bits=8, write_bursts=3, addr_width=64)

    def elaborate(self, platform):
        m = Module()
        m.submodules.hbm, m.submodules.master = self.hbm, self.master
        connect_half(m, self.master.axi, self.hbm.axi)
        m.d.comb += [self.hbm.stall_en.eq(1), self.hbm.refresh_en.eq(1)]
        return m


@pytest.mark.parametrize("burst", [4, 8])
def test_write_master_bursts_data_and_faults(burst):
    """Bursts at queued addresses (out of order) with their beats streamed behind, random gaps on both
    streams; memory ends up as written, ``done`` after the last B; an injected DECERR raises ``fault``."""
    total = 64
    dut = _WriteBench(total)
    rng = random.Random(burst)
    starts = list(range(0, total, burst))
    rng.shuffle(starts)
    beats = [(s + i, rng.getrandbits(256)) for s in starts for i in range(burst)]
    faults = []

    async def feeder(ctx):
        ctx.set(dut.master.burst_len, burst)
        ctx.set(dut.master.start, 1)
        await ctx.tick()
        ctx.set(dut.master.start, 0)
        ctx.set(dut.master.run, 1)
        addr_i = beat_i = 0
        for cycle in range(5000):
            give_a = addr_i < len(starts) and rng.random() < 0.5
            give_b = beat_i < len(beats) and rng.random() < 0.6
            ctx.set(dut.master.bursts.valid, give_a)
            ctx.set(dut.master.bursts.payload, starts[addr_i] if give_a else 0)
            ctx.set(dut.master.beats.valid, give_b)
            ctx.set(dut.master.beats.payload.as_value(), beats[beat_i][1] if give_b else 0)
            ctx.set(dut.hbm.inject_bresp, RESP_DECERR if 40 <= cycle < 60 else 0)
            await ctx.delay(1e-9)
            took_a = give_a and ctx.get(dut.master.bursts.ready)
            took_b = give_b and ctx.get(dut.master.beats.ready)
            if ctx.get(dut.master.fault):
                faults.append(ctx.get(dut.master.fault_resp))
            await ctx.tick()
            addr_i += took_a
            beat_i += took_b
            if ctx.get(dut.master.done):
                break
        else:
            raise AssertionError("no done")
        ctx.set(dut.master.run, 0)
        mem = []
        for b in range(total):
            ctx.set(dut.hbm.bd_addr, b)
            await ctx.tick()
            mem.append(ctx.get(dut.hbm.bd_rdata))
        assert mem == [v for _, v in sorted(beats)]
        assert ctx.get(dut.hbm.err) == 0

    _run(dut, feeder)
    assert faults and all(f == RESP_DECERR for f in faults)


def test_corner_turn_transposes_blocks():
    """L/2 payloads in (lane l's pairs), rows (2j, 2j+1) out: row i = lane i's points in column order;
    random gaps on the input and random back-pressure on the output."""
    lanes, blocks = 8, 5
    turn = CornerTurn(lanes)
    rng = random.Random(2)
    payloads = [[(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(lanes)]
                for _ in range(blocks * lanes // 2)]
    got = []

    def flat(payload):
        return sum((x0 | x1 << 64) << (128 * l) for l, (x0, x1) in enumerate(payload))

    async def bench(ctx):
        ctx.set(turn.start, 1)
        await ctx.tick()
        ctx.set(turn.start, 0)
        i = 0
        for _ in range(2000):
            give = i < len(payloads) and rng.random() < 0.7
            ctx.set(turn.points.valid, give)
            ctx.set(turn.points.payload.as_value(), flat(payloads[i]) if give else 0)
            ctx.set(turn.rows.ready, rng.random() < 0.6)
            await ctx.delay(1e-9)
            took = give and ctx.get(turn.points.ready)
            if ctx.get(turn.rows.valid) and ctx.get(turn.rows.ready):
                v = ctx.get(turn.rows.payload.as_value())
                got.append(v)
            await ctx.tick()
            i += took
            if len(got) == blocks * lanes // 2:
                break

    _run(turn, bench)
    want = []
    for blk in range(blocks):
        bank = payloads[blk * lanes // 2:(blk + 1) * lanes // 2]
        for j in range(lanes // 2):
            rows = []
            for lane in (2 * j, 2 * j + 1):
                pts = [x for t in range(lanes // 2) for x in bank[t][lane]]
                rows.append(sum(p << (64 * n) for n, p in enumerate(pts)))
            want.append(rows[0] | rows[1] << (64 * lanes))
    assert got == want


def test_host_packing_is_the_gateware_layout():
    """pack_payload / pack_beat give the same integers as Amaranth's constants of the shared layouts."""
    from nantucket.hw.points import Beat, pack_beat, pack_payload, payload_layout, unpack_beat, unpack_payload
    rng = random.Random(9)
    for lanes in (1, 4, 16):
        pairs = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(lanes)]
        const = payload_layout(lanes).const([{"x0": a, "x1": b} for a, b in pairs]).as_value().value
        assert pack_payload(pairs) == const and unpack_payload(const, lanes) == pairs
    pts = [rng.getrandbits(64) for _ in range(4)]
    assert pack_beat(pts) == Beat.const(pts).as_value().value and unpack_beat(pack_beat(pts)) == pts


STREAM_BUILDS = [BuildParams(lanes=4, log_core=3, channels=4), BuildParams(lanes=8, log_core=4, channels=2),
                 BuildParams(lanes=4, log_core=4, channels=8)]


@pytest.mark.parametrize("params", STREAM_BUILDS, ids=lambda p: p.tag())
def test_read_assembler_gives_the_schedule(params):
    """Each channel's beats in address order (random gaps per channel, random back-pressure on the
    output) come out as the engine's payloads in ``pass_schedule`` read order, for both passes of every
    size and batches of several transforms back to back."""
    from nantucket.hw.dma.assembler import ReadAssembler
    from nantucket.hw.model.schedule import pass_schedule
    from nantucket.hw.points import pack_beat, unpack_payload
    rng = np.random.default_rng(1)
    runs = []
    for log_n, pass_index, batch in _runs(params):
        lay = HbmLayout(params, log_n, batch)
        x = rng.integers(0, 2**64, lay.n_points, dtype=np.uint64)
        mem = lay.scatter(x, "input" if pass_index == 1 else "state")
        streams = [[pack_beat(b) for b in mem[c].reshape(-1, 4)] for c in lay.read_channels(pass_index)]
        reads, _ = pass_schedule(params, pass_index, log_n, batch)
        want = [[(int(x[a]), int(x[b])) for a, b in cycle] for cycle in reads.reshape(-1, params.lanes, 2)]
        runs.append((log_n, pass_index, batch, streams, want))
    dut = ReadAssembler(HbmLayout(params))
    got = []

    async def bench(ctx):
        pick = random.Random(params.channels)
        for log_n, pass_index, batch, streams, want in runs:
            ctx.set(dut.pass2, pass_index == 2)
            ctx.set(dut.log_n, log_n)
            ctx.set(dut.batch, batch)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            out = []
            pos = [0] * len(streams)
            for _ in range(20 * len(want) + 100):
                offer = [pos[q] < len(st) and pick.random() < 0.8 for q, st in enumerate(streams)]
                for q, st in enumerate(streams):
                    ctx.set(dut.beats[q].valid, offer[q])
                    ctx.set(dut.beats[q].payload.as_value(), st[pos[q]] if offer[q] else 0)
                ctx.set(dut.points.ready, pick.random() < 0.7)
                await ctx.delay(1e-9)
                if ctx.get(dut.points.valid) and ctx.get(dut.points.ready):
                    out.append(unpack_payload(ctx.get(dut.points.payload.as_value()), params.lanes))
                for q in range(len(streams)):
                    pos[q] += offer[q] and ctx.get(dut.beats[q].ready)
                await ctx.tick()
                if len(out) == len(want) and all(p == len(st) for p, st in zip(pos, streams)):
                    break
            for q in range(len(streams)):
                ctx.set(dut.beats[q].valid, 0)
            ctx.set(dut.points.ready, 1)
            for _ in range(4):                                  # nothing more comes out of this pass
                await ctx.tick()
                assert not ctx.get(dut.points.valid), (log_n, pass_index)
            got.append(out)

    _run(dut, bench)
    for (log_n, pass_index, batch, _, want), out in zip(runs, got, strict=True):
        assert out == want, (log_n, pass_index, batch)


@pytest.mark.parametrize("params", STREAM_BUILDS, ids=lambda p: p.tag())
def test_write_path_places_the_schedule(params):
    """Payloads in ``pass_schedule`` write order (random gaps), beats and burst addresses drained with
    random back-pressure, for both passes of every size and batches back to back: replaying the bursts
    gives the host layout's memory for that buffer, size and batch, and each channel gets exactly its
    B x N/R points."""
    from nantucket.hw.dma.write_path import WritePath
    from nantucket.hw.model.schedule import pass_schedule
    from nantucket.hw.points import pack_payload, unpack_beat
    rng = np.random.default_rng(10)
    runs = []
    for log_n, pass_index, batch in _runs(params):
        y = rng.integers(0, 2**64, batch << log_n, dtype=np.uint64)
        _, writes = pass_schedule(params, pass_index, log_n, batch)
        payloads = [pack_payload([(y[a], y[b]) for a, b in cycle])
                    for cycle in writes.reshape(-1, params.lanes, 2)]
        runs.append((log_n, pass_index, batch, y, payloads))
    dut = WritePath(HbmLayout(params))
    R = params.channels // 2
    got = []

    async def bench(ctx):
        pick = random.Random(params.channels)
        for log_n, pass_index, batch, _, payloads in runs:
            total = HbmLayout(params, log_n, batch).beats_per_channel * R
            beats = [[] for _ in range(R)]
            bursts = [[] for _ in range(R)]
            ctx.set(dut.pass2, pass_index == 2)
            ctx.set(dut.log_n, log_n)
            ctx.set(dut.batch, batch)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            i = 0
            for _ in range(30 * len(payloads) + 200):
                give = i < len(payloads) and pick.random() < 0.8
                ctx.set(dut.points.valid, give)
                ctx.set(dut.points.payload.as_value(), payloads[i] if give else 0)
                for q in range(R):
                    ctx.set(dut.beats[q].ready, pick.random() < 0.7)
                    ctx.set(dut.bursts[q].ready, pick.random() < 0.7)
                await ctx.delay(1e-9)
                for q in range(R):
                    if ctx.get(dut.beats[q].valid) and ctx.get(dut.beats[q].ready):
                        beats[q].append(ctx.get(dut.beats[q].payload.as_value()))
                    if ctx.get(dut.bursts[q].valid) and ctx.get(dut.bursts[q].ready):
                        bursts[q].append(ctx.get(dut.bursts[q].payload))
                i += give and ctx.get(dut.points.ready)
                await ctx.tick()
                if sum(map(len, beats)) == total:
                    break
            ctx.set(dut.points.valid, 1)                        # a payload too many is refused
            await ctx.delay(1e-9)
            assert not ctx.get(dut.points.ready), (log_n, pass_index)
            ctx.set(dut.points.valid, 0)
            got.append((beats, bursts))

    _run(dut, bench)
    for (log_n, pass_index, batch, y, _), (beats, bursts) in zip(runs, got, strict=True):
        lay = HbmLayout(params, log_n, batch)
        buffer = "state" if pass_index == 1 else "output"
        burst = lay.unit_beats if pass_index == 1 else lay.burst_beats
        mem = [np.zeros(lay.points_per_channel, dtype=np.uint64) for _ in range(params.channels)]
        for q, phys in enumerate(lay.write_channels(pass_index)):
            assert len(bursts[q]) * burst == len(beats[q]) == lay.beats_per_channel, (log_n, pass_index, batch, q)
            for n, first in enumerate(bursts[q]):
                assert first % burst == 0, (log_n, pass_index, batch, q, first)
                for j in range(burst):
                    mem[phys][4 * (first + j):4 * (first + j + 1)] = unpack_beat(beats[q][n * burst + j])
        assert np.array_equal(lay.gather(mem, buffer), y), (log_n, pass_index, batch)
