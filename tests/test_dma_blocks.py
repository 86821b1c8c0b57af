"""The DMA's blocks one at a time (amaranth.sim): address generators against the host layout, the AXI
masters against the HBM channel model with stalls, refresh and injected error responses, the corner turn
against a transposition, the unit collector and splitter against beat-by-beat models, with random stalls
on every stream; in Goldilocks (four 64-bit points a beat) and the 31-bit fields (eight 32-bit words a
beat), random words of the point width with the field's edge words among them."""

import random

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from nantucket.hw.axi import RESP_DECERR, RESP_SLVERR, connect_half
from nantucket.hw.dma.addresses import (ReadAddressGenerator, WriteAddressGenerator, slot_bits, zero_slot_mask_of,
                                        zero_unit_at)
from nantucket.hw.dma.axi_read import AxiReadMaster, register_skips
from nantucket.hw.dma.assembler import UnitCollector
from nantucket.hw.dma.axi_write import AxiWriteMaster
from nantucket.hw.dma.write_path import CornerTurn, UnitSplitter
from nantucket.hw.model import field as F
from nantucket.hw.model.layout import BEAT_BITS, BEAT_BYTES, HbmLayout, lde_pairs, zero_slot_mask
from nantucket.hw.model.params import BuildParams
from nantucket.hw.points import pack_beat, pack_payload, unpack_beat, unpack_payload
from nantucket.sim.benches.dma_loopback import dma_points
from nantucket.sim.hbm import HbmChannelModel

#: the 31-bit fields' builds need 8 lanes (a unit fills whole beats of eight 32-bit words): one beat a
#: unit at 8 lanes, two at 16
BUILDS = [BuildParams(lanes=4, log_core=2, channels=4), BuildParams(lanes=4, log_core=3, channels=4),
          BuildParams(lanes=4, log_core=4, channels=8), BuildParams(lanes=8, log_core=5, channels=2),
          BuildParams(lanes=16, log_core=6, channels=32), BuildParams(lanes=16, log_core=8, channels=4),
          BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
          BuildParams(lanes=16, log_core=5, channels=8, field="koalabear")]
#: (lanes, field) of the blocks built per unit: units of one and two beats in each point width
UNIT_SHAPES = [(4, "goldilocks"), (8, "goldilocks"), (8, "babybear"), (16, "koalabear")]
UNIT_IDS = [f"L{lanes}_{field}" for lanes, field in UNIT_SHAPES]


def _words(x) -> list[int]:
    return [int(v) for v in x]


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


async def _write_units(ctx, gen, pairs, chans):
    """(physical channel, beat) of both units of ``pairs`` pairs of a started WriteAddressGenerator, taken
    with random gaps between pairs (its places are valid once ``ready``, a few cycles after the start, and
    from then on through the pass)."""
    units = []
    for _ in range(8):
        if ctx.get(gen.ready):
            break
        await ctx.tick()
    for _ in range(pairs):
        for _ in range(random.randrange(2)):
            await ctx.tick()
        assert ctx.get(gen.ready)
        units.append((chans[ctx.get(gen.chan_a)], ctx.get(gen.beat_a)))
        units.append((chans[ctx.get(gen.chan_b)], ctx.get(gen.beat_b)))
        ctx.set(gen.advance, 1)
        await ctx.tick()
        ctx.set(gen.advance, 0)
    return units


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
            got.append(await _write_units(ctx, gen, lay.n_points // params.lanes // 2, chans))

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
        self.master_bursts = 3
        self.master = AxiWriteMaster(total_beats=total, beat_bits=8, write_bursts=self.master_bursts,
                                     addr_width=64)

    def elaborate(self, platform):
        m = Module()
        m.submodules.hbm, m.submodules.master = self.hbm, self.master
        connect_half(m, self.master.axi, self.hbm.axi)
        m.d.comb += [self.hbm.stall_en.eq(1), self.hbm.refresh_en.eq(1)]
        return m


@pytest.mark.parametrize("burst", [4, 8])
def test_write_master_bursts_data_and_faults(burst):
    """Bursts at queued addresses (out of order) with their beats streamed behind, random gaps on both
    streams; memory ends up as written, ``done`` after the last B; an injected DECERR raises ``fault``;
    never more than ``write_bursts`` bursts await their B, never a burst's last W before its AW, and the
    limit is reached (the channel model stalls B)."""
    total = 64
    dut = _WriteBench(total)
    rng = random.Random(burst)
    starts = list(range(0, total, burst))
    rng.shuffle(starts)
    beats = [(s + i, rng.getrandbits(256)) for s in starts for i in range(burst)]
    faults = []
    most = [0]

    async def feeder(ctx):
        ctx.set(dut.master.burst_len, burst)
        ctx.set(dut.master.start, 1)
        await ctx.tick()
        ctx.set(dut.master.start, 0)
        ctx.set(dut.master.run, 1)
        addr_i = beat_i = 0
        aws = lasts = bs = 0
        for cycle in range(5000):
            give_a = addr_i < len(starts) and rng.random() < 0.5
            give_b = beat_i < len(beats) and rng.random() < 0.6
            ctx.set(dut.master.bursts.valid, give_a)
            ctx.set(dut.master.bursts.payload, starts[addr_i] if give_a else 0)
            ctx.set(dut.master.beats.valid, give_b)
            ctx.set(dut.master.beats.payload, beats[beat_i][1] if give_b else 0)
            ctx.set(dut.hbm.inject_bresp, RESP_DECERR if 40 <= cycle < 60 else 0)
            await ctx.delay(1e-9)
            took_a = give_a and ctx.get(dut.master.bursts.ready)
            took_b = give_b and ctx.get(dut.master.beats.ready)
            axi = dut.master.axi
            aws += ctx.get(axi.awvalid) and ctx.get(axi.awready)
            lasts += ctx.get(axi.wvalid) and ctx.get(axi.wready) and ctx.get(axi.wlast)
            bs += ctx.get(axi.bvalid) and ctx.get(axi.bready)
            assert lasts <= aws and bs <= lasts, (aws, lasts, bs)
            assert aws - bs <= dut.master_bursts, (aws, bs)
            most[0] = max(most[0], aws - bs)
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
    assert most[0] == dut.master_bursts


@pytest.mark.parametrize("lanes, field", UNIT_SHAPES[1:], ids=UNIT_IDS[1:])
def test_corner_turn_transposes_blocks(lanes, field):
    """L/2 payloads in (lane l's pairs), rows (2j, 2j+1) out: row i = lane i's points in column order;
    random gaps on the input and random back-pressure on the output."""
    blocks = 5
    f = F.get(field)
    bits = f.point_bits
    turn = CornerTurn(lanes, field)
    rng = random.Random(2)
    words = iter(_words(dma_points(np.random.default_rng(2), blocks * lanes * lanes, f)))
    payloads = [[(next(words), next(words)) for _ in range(lanes)] for _ in range(blocks * lanes // 2)]
    got = []

    def flat(payload):
        return sum((x0 | x1 << bits) << (2 * bits * l) for l, (x0, x1) in enumerate(payload))

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
                rows.append(sum(p << (bits * n) for n, p in enumerate(pts)))
            want.append(rows[0] | rows[1] << (bits * lanes))
    assert got == want


@pytest.mark.parametrize("field", ["goldilocks", "babybear", "koalabear"])
def test_host_packing_is_the_gateware_layout(field):
    """pack_payload / pack_beat give the same integers as Amaranth's constants of the shared layouts of the
    field, and a beat's integer is its HBM bytes read little-endian: point i of the beat at bytes
    [i * point bytes, (i + 1) * point bytes), as numpy lays out the field's words."""
    from nantucket.hw.points import Beat, beat_layout, payload_layout, unit_layout
    f = F.get(field)
    rng = np.random.default_rng(9)
    per = BEAT_BITS // f.point_bits
    assert beat_layout(f).size == BEAT_BITS and beat_layout(f).length == per == (8 if f.point_bits == 32 else 4)
    for lanes in (1, 4, 16):
        pairs = list(zip(*[iter(_words(dma_points(rng, 2 * lanes, f)))] * 2))
        const = payload_layout(lanes, f).const([{"x0": a, "x1": b} for a, b in pairs]).as_value().value
        assert pack_payload(pairs, f) == const and unpack_payload(const, lanes, f) == pairs
        assert unit_layout(lanes, f).size == lanes * f.point_bits
    for _ in range(8):
        pts = dma_points(rng, per, f)
        word = pack_beat(pts, f)
        assert word == beat_layout(f).const(_words(pts)).as_value().value
        assert word == int.from_bytes(pts.astype(f"<u{f.point_bits // 8}").tobytes(), "little")
        assert unpack_beat(word, f) == _words(pts)
    if f.point_bits == 64:
        assert beat_layout(f) == Beat


@pytest.mark.parametrize("lanes, field", UNIT_SHAPES, ids=UNIT_IDS)
def test_unit_collector_assembles_units(lanes, field):
    """Beats in with random gaps (one unit = L/P consecutive beats, P points a beat), units popped at
    random, one or two a cycle: ``count`` is the whole units held, ``head`` / ``second`` the oldest two
    (point l of a unit from point l mod P of its beat l div P), beats refused only with two units held."""
    f = F.get(field)
    per = BEAT_BITS // f.point_bits
    units = 40
    words = dma_points(np.random.default_rng(lanes), units * lanes, f)
    beats = [pack_beat(words[i:i + per], f) for i in range(0, words.size, per)]
    want = [sum(int(v) << (f.point_bits * l) for l, v in enumerate(words[u * lanes:(u + 1) * lanes]))
            for u in range(units)]
    dut = UnitCollector(lanes, f)
    popped = []

    async def bench(ctx):
        rng = random.Random(lanes)
        sent = held = 0                 # beats sent; whole units held (the model's count)
        for _ in range(40 * units):
            give = sent < len(beats) and rng.random() < 0.7
            ctx.set(dut.beats.valid, give)
            ctx.set(dut.beats.payload.as_value(), beats[sent] if give else 0)
            await ctx.delay(1e-9)
            assert ctx.get(dut.count) == held
            assert (ctx.get(dut.some), ctx.get(dut.full)) == (held != 0, held == 2)
            assert ctx.get(dut.beats.ready) == (held < 2)
            front = len(popped)
            if held:
                assert ctx.get(dut.head.as_value()) == want[front]
            if held == 2:
                assert ctx.get(dut.second.as_value()) == want[front + 1]
            pop = rng.randint(0, held) if rng.random() < 0.5 else 0
            ctx.set(dut.pop, pop)
            popped.extend(want[front:front + pop])
            took = give and held < 2
            await ctx.tick()
            sent += took
            held += (took and sent % (lanes // per) == 0) - pop
            if len(popped) == units:
                break

    _run(dut, bench)
    assert popped == want


@pytest.mark.parametrize("unit_bursts", [1, 0], ids=["unit_bursts", "aligned_bursts"])
@pytest.mark.parametrize("lanes, field", UNIT_SHAPES, ids=UNIT_IDS)
def test_unit_splitter_drains_units_as_beats(lanes, field, unit_bursts):
    """Units taken one (A or B) or two (A then B) a cycle while there is room, drained with random
    back-pressure on both outputs: the beats are the units' in order (beat b of a unit holds its points
    bP .. bP + P-1), and a burst address leaves with the first beat of every unit (``unit_bursts``) or of
    every unit whose beat address is aligned to ``burst_mask`` + 1 beats."""
    f = F.get(field)
    per = BEAT_BITS // f.point_bits
    ub = lanes // per                          # beats a unit
    units, mask = 48, 7
    words = dma_points(np.random.default_rng(ub), units * lanes, f)
    unit_words = [_words(words[u * lanes:(u + 1) * lanes]) for u in range(units)]
    unit_value = [sum(v << (f.point_bits * l) for l, v in enumerate(w)) for w in unit_words]
    addrs = random.Random(lanes).sample(range(0, 1 << 8, ub), units)      # unit-aligned, any order
    dut = UnitSplitter(lanes, 8, f)
    beats, bursts = [], []

    async def bench(ctx):
        rng = random.Random(ub + 2 * unit_bursts)
        ctx.set(dut.unit_bursts, unit_bursts)
        ctx.set(dut.burst_mask, mask)
        nxt = held = 0
        for _ in range(60 * units):
            room = 2 - held
            take = min(room, units - nxt, rng.choice([0, 1, 1, 2]))
            use_a = take == 2 or (take == 1 and rng.random() < 0.5)
            use_b = take == 2 or (take == 1 and not use_a)
            ctx.set(dut.take_a, use_a)
            ctx.set(dut.take_b, use_b)
            if use_a:
                ctx.set(dut.unit_a.as_value(), unit_value[nxt])
                ctx.set(dut.beat_a, addrs[nxt])
            if use_b:
                ctx.set(dut.unit_b.as_value(), unit_value[nxt + use_a])
                ctx.set(dut.beat_b, addrs[nxt + use_a])
            ctx.set(dut.beats.ready, rng.random() < 0.7)
            ctx.set(dut.bursts.ready, rng.random() < 0.7)
            await ctx.delay(1e-9)
            assert ctx.get(dut.count) == held
            assert (ctx.get(dut.some), ctx.get(dut.full)) == (held != 0, held == 2)
            if ctx.get(dut.beats.valid) and ctx.get(dut.beats.ready):
                beats.append(ctx.get(dut.beats.payload.as_value()))
                held -= len(beats) % ub == 0
            if ctx.get(dut.bursts.valid):
                assert ctx.get(dut.beats.valid), "a burst address without its beat"
                if ctx.get(dut.bursts.ready):
                    bursts.append(ctx.get(dut.bursts.payload))
            await ctx.tick()
            nxt += take
            held += take
            if len(beats) == units * ub:
                break
        ctx.set(dut.take_a, 0)
        ctx.set(dut.take_b, 0)

    _run(dut, bench)
    per_beat = [[pack_beat(w[b * per:(b + 1) * per], f) for b in range(ub)] for w in unit_words]
    assert beats == [v for unit in per_beat for v in unit]
    assert [unpack_beat(v, f) for v in beats[:ub]] == [unit_words[0][b * per:(b + 1) * per] for b in range(ub)]
    assert bursts == [a for a in addrs if unit_bursts or a & mask == 0]


STREAM_BUILDS = [BuildParams(lanes=4, log_core=3, channels=4), BuildParams(lanes=8, log_core=4, channels=2),
                 BuildParams(lanes=4, log_core=4, channels=8),
                 BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
                 BuildParams(lanes=16, log_core=4, channels=2, field="koalabear")]


@pytest.mark.parametrize("params", STREAM_BUILDS, ids=lambda p: p.tag())
def test_read_assembler_gives_the_schedule(params):
    """Each channel's beats in address order (random gaps per channel, random back-pressure on the
    output) come out as the engine's payloads in ``pass_schedule`` read order, for both passes of every
    size and batches of several transforms back to back."""
    _check_read_assembler(params, [(0, log_n, ps, b) for log_n, ps, b in _runs(params)])


@pytest.mark.parametrize("params", STREAM_BUILDS, ids=lambda p: p.tag())
def test_read_assembler_zero_extended(params):
    """A zero-extended pass 1 (``zero_mask`` of every supported pair with m < n, batches; plain passes in
    between): the channels deliver only the beats of the units ``zero_units`` does not mark, and the
    payloads are the schedule's of the input with zeros past each element's first 2^m points."""
    runs = []
    for lm, ln, b in _ext_runs(params):
        if lm < ln:
            runs += [(lm, ln, 1, b), (0, ln, 2, b)]
    _check_read_assembler(params, runs)


def _check_read_assembler(params, wanted):
    """ReadAssembler over runs (log_m, log_n, pass, batch) back to back (log_m = 0: no zero extension),
    each channel offering its stream of beats with random gaps, the payloads taken with random
    back-pressure, against ``pass_schedule`` of the input (zero-extended: zeros past the first 2^m points
    of each element, whose units the channels do not hold)."""
    from nantucket.hw.dma.assembler import ReadAssembler
    from nantucket.hw.model.schedule import pass_schedule
    rng = np.random.default_rng(1)
    field = params.prime_field
    runs = []
    for log_m, log_n, pass_index, batch in wanted:
        lay = HbmLayout(params, log_n, batch)
        x = dma_points(rng, lay.n_points, field)
        buffer = "input" if pass_index == 1 else "state"
        mem = lay.scatter(x, buffer)
        if log_m:
            x.reshape(batch, -1)[:, 1 << log_m:] = 0
        zero = lay.zero_units(log_m) if log_m else np.zeros(lay.element_points // params.lanes, dtype=bool)
        per = zero.size
        streams = []
        for c in lay.read_channels(pass_index):
            units = mem[c].reshape(-1, params.lanes)
            keep = ~zero[lay.unit_table(buffer)[c] % per]
            streams.append([pack_beat(b, field) for b in units[keep].reshape(-1, lay.points_per_beat)])
        reads, _ = pass_schedule(params, pass_index, log_n, batch)
        want = [[(int(x[a]), int(x[b])) for a, b in cycle] for cycle in reads.reshape(-1, params.lanes, 2)]
        runs.append((log_m, log_n, pass_index, batch, streams, want))
    dut = ReadAssembler(HbmLayout(params))
    got = []

    async def bench(ctx):
        pick = random.Random(params.channels)
        for log_m, log_n, pass_index, batch, streams, want in runs:
            ctx.set(dut.pass2, pass_index == 2)
            ctx.set(dut.log_n, log_n)
            ctx.set(dut.batch, batch)
            ctx.set(dut.zero_mask, zero_slot_mask(log_n, log_m) if log_m else 0)
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
                    out.append(unpack_payload(ctx.get(dut.points.payload.as_value()), params.lanes, field))
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
    for (log_m, log_n, pass_index, batch, _, want), out in zip(runs, got, strict=True):
        assert out == want, (log_m, log_n, pass_index, batch)


@pytest.mark.parametrize("params", STREAM_BUILDS, ids=lambda p: p.tag())
def test_write_path_places_the_schedule(params):
    """Payloads in ``pass_schedule`` write order (random gaps), beats and burst addresses drained with
    random back-pressure, for both passes of every size and batches back to back: replaying the bursts
    gives the host layout's memory for that buffer, size and batch, and each channel gets exactly its
    B x N/R points."""
    _check_write_path(params, [(log_n, 0, ps, b) for log_n, ps, b in _runs(params)])


@pytest.mark.parametrize("params", STREAM_BUILDS, ids=lambda p: p.tag())
def test_write_path_chained(params):
    """A chained pass 2 (``chain_log_n`` = t, every supported (n, t), batches; a plain pass 2 and a pass
    1 with the chain set in between): unit bursts whose replay puts every output point where
    ``output_as_input(t)`` says, B x N/R/P beats per channel (P points a beat)."""
    runs = []
    for n, t, b in _ext_runs(params):
        runs.append((n, t, 2, b))
        if n == t:
            runs += [(n, 0, 2, b), (n, t, 1, b)]
    _check_write_path(params, runs)


def _check_write_path(params, wanted):
    """WritePath over runs (log_n, chain_log_n, pass, batch) back to back, payloads offered with random
    gaps and beats / bursts drained with random back-pressure; the replayed bursts against the layout."""
    from nantucket.hw.dma.write_path import WritePath
    from nantucket.hw.model.schedule import pass_schedule
    rng = np.random.default_rng(10)
    field = params.prime_field
    runs = []
    for log_n, chain, pass_index, batch in wanted:
        y = dma_points(rng, batch << log_n, field)
        _, writes = pass_schedule(params, pass_index, log_n, batch)
        payloads = [pack_payload([(y[a], y[b]) for a, b in cycle], field)
                    for cycle in writes.reshape(-1, params.lanes, 2)]
        runs.append((log_n, chain, pass_index, batch, y, payloads))
    dut = WritePath(HbmLayout(params))
    R = params.channels // 2
    got = []

    async def bench(ctx):
        pick = random.Random(params.channels)
        for log_n, chain, pass_index, batch, _, payloads in runs:
            total = HbmLayout(params, log_n, batch).beats_per_channel * R
            beats = [[] for _ in range(R)]
            bursts = [[] for _ in range(R)]
            ctx.set(dut.pass2, pass_index == 2)
            ctx.set(dut.log_n, log_n)
            ctx.set(dut.batch, batch)
            ctx.set(dut.chain_log_n, chain)
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
    for (log_n, chain, pass_index, batch, y, _), (beats, bursts) in zip(runs, got, strict=True):
        lay = HbmLayout(params, log_n, batch)
        chained = chain and pass_index == 2
        buffer = "state" if pass_index == 1 else "output"
        burst = lay.unit_beats if pass_index == 1 or chained else lay.burst_beats
        size = HbmLayout(params, chain, batch).points_per_channel if chained else lay.points_per_channel
        per = lay.points_per_beat
        mem = [np.zeros(size, dtype=lay.point_dtype) for _ in range(params.channels)]
        written = [np.zeros(size, dtype=int) for _ in range(params.channels)]
        run = (log_n, chain, pass_index, batch)
        for q, phys in enumerate(lay.write_channels(pass_index)):
            assert len(bursts[q]) * burst == len(beats[q]) == lay.beats_per_channel, (*run, q)
            for n, first in enumerate(bursts[q]):
                assert first % burst == 0, (*run, q, first)
                for j in range(burst):
                    mem[phys][per * (first + j):per * (first + j + 1)] = unpack_beat(beats[q][n * burst + j], field)
                    written[phys][per * (first + j):per * (first + j + 1)] += 1
        if chained:
            ch, off = lay.output_as_input(chain)
            got = np.array([mem[c][o // lay.point_bytes] for c, o in zip(ch, off)], dtype=lay.point_dtype)
            assert np.array_equal(got, y), run
            assert sum(int(w.sum()) for w in written) == y.size and max(int(w.max()) for w in written) == 1, run
        else:
            assert np.array_equal(lay.gather(mem, buffer), y), run


# -- zero-extended input and chained output ----------------------------------------------------------------

EXT_BUILDS = [BuildParams(lanes=4, log_core=3, channels=4), BuildParams(lanes=4, log_core=4, channels=8),
              BuildParams(lanes=8, log_core=5, channels=2), BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
              BuildParams(lanes=16, log_core=5, channels=4, field="koalabear"),
              BuildParams(lanes=16, log_core=8, channels=4)]
#: the read master's skip walk beat by beat: the builds but the largest
SKIP_BUILDS = EXT_BUILDS[:-1]


def _ext_runs(params, limit=None):
    """(log_m, log_n, batch) for every supported pair of ``params`` (``lde_pairs``) up to
    log_n = min_log_n + 5 (all of them but for the 16-lane build, whose larger ones only cost time), with
    batches of 1, 3 and 2 in turn (as many as fit); ``limit`` shrinks the batches to that many points."""
    runs = []
    pairs = sorted(p for p in lde_pairs(params) if p[1] <= params.min_log_n + 5)
    for i, (lm, ln) in enumerate(pairs):
        b = (1, 3, 2)[i % 3]
        while b << ln > 1 << params.max_log_n or (limit and b > 1 and b << ln > limit):
            b -= 1
        runs.append((lm, ln, b))
    return runs


def _zero_of_read_units(params, log_m, log_n, batch):
    """For every read unit of pass 1 in engine order (unit A, unit B of each cycle), whether it is a zero
    of the zero-extended input: its (channel, beat) -> the logical unit the channel holds there
    (``unit_table``) -> ``zero_units``."""
    lay = HbmLayout(params, log_n, batch)
    table = lay.unit_table("input")
    zero = lay.zero_units(log_m)
    per = lay.element_points // params.lanes
    return [bool(zero[table[int(ch)][int(beat) // lay.unit_beats] % per])
            for ch, beat in lay.cycle_units(1, "read")]


def test_zero_slot_mask_is_the_models():
    """The gateware's mask formula (constant size, run-time log_m) on ints is the model's, and 0 (off)
    gives no zeros."""
    for n in range(2, 25):
        assert zero_slot_mask_of(n, 0) == 0
        for m in range(n >> 1, n + 1):
            assert int(zero_slot_mask_of(n, m)) == zero_slot_mask(n, m), (n, m)


@pytest.mark.parametrize("params", EXT_BUILDS, ids=lambda p: p.tag())
def test_read_zero_units_are_the_layouts(params):
    """With ``zero_mask`` = the run's zero_slot_mask, ``zero_a`` / ``zero_b`` mark exactly the read units
    that ``HbmLayout.zero_units`` says are zeros, for every supported pair and batches; a pass 2 and a
    mask of 0 (runs in between) mark none, and the channels stay the layout's."""
    gen = ReadAddressGenerator(HbmLayout(params))
    runs = []
    for lm, ln, b in _ext_runs(params):
        runs += [(lm, ln, 1, b), (0, ln, 1, b)] if lm == ln - 1 else [(lm, ln, 1, b)]
    runs.append((0, params.max_log_n, 2, 1))
    got = []

    async def bench(ctx):
        for log_m, log_n, pass_index, batch in runs:
            chans = HbmLayout(params, log_n).read_channels(pass_index)
            ctx.set(gen.pass2, pass_index == 2)
            ctx.set(gen.log_n, log_n)
            ctx.set(gen.batch, batch)
            ctx.set(gen.zero_mask, zero_slot_mask(log_n, log_m) if log_m else 0)
            ctx.set(gen.start, 1)
            await ctx.tick()
            ctx.set(gen.start, 0)
            units = []
            while ctx.get(gen.active):
                units += [(chans[ctx.get(gen.chan_a)], bool(ctx.get(gen.zero_a))),
                          (chans[ctx.get(gen.chan_b)], bool(ctx.get(gen.zero_b)))]
                ctx.set(gen.advance, 1)
                await ctx.tick()
                ctx.set(gen.advance, 0)
            got.append(units)

    _run(gen, bench)
    for (log_m, log_n, pass_index, batch), units in zip(runs, got, strict=True):
        lay = HbmLayout(params, log_n, batch)
        chans = [int(c) for c in lay.cycle_units(pass_index, "read")[:, 0]]
        zeros = (_zero_of_read_units(params, log_m, log_n, batch) if log_m else [False] * len(chans))
        assert units == list(zip(chans, zeros)), (log_m, log_n, pass_index, batch)
        assert any(zeros) == (0 < log_m < log_n)


@pytest.mark.parametrize("params", EXT_BUILDS, ids=lambda p: p.tag())
def test_chained_write_addresses_are_output_as_input(params):
    """With ``chain_log_n`` = t a pass 2 of 2^n-point runs places every output unit where
    ``HbmLayout(params, n, B).output_as_input(t)`` puts its points, in the pass schedule's write order,
    for every supported pair and batches; plain passes in between (chain 0, and a pass 1 with a chain
    set) stay the layout's."""
    from nantucket.hw.model.schedule import pass_schedule
    gen = WriteAddressGenerator(HbmLayout(params))
    runs = []
    for n, t, b in _ext_runs(params):
        runs.append((n, t, 2, b))
        if n == t:
            runs += [(n, 0, 2, b), (n, t, 1, b)]
    got = []

    async def bench(ctx):
        for log_n, chain, pass_index, batch in runs:
            lay = HbmLayout(params, log_n, batch)
            chans = lay.write_channels(pass_index)
            ctx.set(gen.pass2, pass_index == 2)
            ctx.set(gen.log_n, log_n)
            ctx.set(gen.chain_log_n, chain)
            ctx.set(gen.start, 1)
            await ctx.tick()
            ctx.set(gen.start, 0)
            got.append(await _write_units(ctx, gen, lay.n_points // params.lanes // 2, chans))

    _run(gen, bench)
    for (log_n, chain, pass_index, batch), units in zip(runs, got, strict=True):
        lay = HbmLayout(params, log_n, batch)
        if chain and pass_index == 2:
            _, writes = pass_schedule(params, 2, log_n, batch)
            units_idx = writes.reshape(-1, params.lanes, 2).transpose(0, 2, 1).reshape(-1, params.lanes)
            assert np.array_equal(units_idx - units_idx[:, :1], np.broadcast_to(np.arange(params.lanes), units_idx.shape))
            ch, off = lay.output_as_input(chain, units_idx[:, 0])
            want = [(int(c), int(o) // BEAT_BYTES) for c, o in zip(ch, off)]
        else:
            want = [tuple(int(v) for v in row) for row in lay.cycle_units(pass_index, "write")]
        assert units == want, (log_n, chain, pass_index, batch)


class _SkipReadBench(Elaboratable):
    """AxiReadMaster of one logical input channel (``channel``, run-time) with the engine's skip walk,
    against an HBM channel model whose beat i holds i."""

    def __init__(self, layout):
        self.layout = layout
        total = layout.beats_per_channel
        self.hbm = HbmChannelModel(depth_beats=total, latency=5, refresh_period=50, refresh_cycles=10,
                                   stall_rate=96, init=list(range(total)))
        self.master = AxiReadMaster(total_beats=total, burst_beats=layout.burst_beats, fifo_beats=16,
                                    addr_width=64)
        self.fifo = SyncFIFO(width=256, depth=16)
        self.log_n = Signal(range(layout.params.max_log_n + 1))
        self.channel = Signal(range(layout.group))
        self.zero_mask = Signal(slot_bits(layout.params))

    def elaborate(self, platform):
        m = Module()
        m.submodules.hbm, m.submodules.master, m.submodules.fifo = self.hbm, self.master, self.fifo
        connect_half(m, self.master.axi, self.hbm.axi)
        wiring.connect(m, self.master.beats, self.fifo.w_stream)
        m.d.comb += [self.master.fifo_level.eq(self.fifo.level), self.hbm.stall_en.eq(1),
                     self.hbm.refresh_en.eq(1)]
        register_skips(m, "sync", self.master,
                       lambda beat: zero_unit_at(m, self.layout, self.log_n, beat, self.channel, self.zero_mask))
        return m


@pytest.mark.parametrize("params", SKIP_BUILDS, ids=lambda p: p.tag())
def test_read_master_skips_zero_units(params):
    """A read master walking one input channel of a zero-extended run (unit bursts, the skip walk on)
    reads exactly the channel's units that ``zero_units`` does not mark, in address order, one unit burst
    each, for every supported pair with m < n, batches and every channel; the consumer drains at
    random."""
    dut = _SkipReadBench(HbmLayout(params))
    lay_max = HbmLayout(params)
    runs = [(lm, ln, b, q) for lm, ln, b in _ext_runs(params, limit=1 << (params.max_log_n - 1)) if lm < ln
            for q in range(lay_max.group)]
    got = []

    async def bench(ctx):
        rng = random.Random(3)
        for log_m, log_n, batch, q in runs:
            lay = HbmLayout(params, log_n, batch)
            ctx.set(dut.log_n, log_n)
            ctx.set(dut.channel, q)
            ctx.set(dut.zero_mask, zero_slot_mask(log_n, log_m))
            ctx.set(dut.master.total, lay.beats_per_channel)
            ctx.set(dut.master.burst, lay.unit_beats)
            ctx.set(dut.master.start, 1)
            await ctx.tick()
            ctx.set(dut.master.start, 0)
            ctx.set(dut.master.run, 1)
            beats, bursts = [], []
            for _ in range(40 * lay.beats_per_channel + 200):
                if ctx.get(dut.master.axi.arvalid) and ctx.get(dut.master.axi.arready):
                    bursts.append(ctx.get(dut.master.axi.arlen) + 1)
                take = ctx.get(dut.fifo.r_rdy) and rng.random() < 0.5
                ctx.set(dut.fifo.r_en, take)
                if take:
                    beats.append(ctx.get(dut.fifo.r_data))
                await ctx.tick()
                if ctx.get(dut.master.done) and not ctx.get(dut.fifo.r_rdy):
                    break
            else:
                raise AssertionError(f"(m, n, B, q) = {(log_m, log_n, batch, q)}: no done")
            ctx.set(dut.fifo.r_en, 0)
            ctx.set(dut.master.run, 0)
            got.append((beats, bursts))

    _run(dut, bench)
    for (log_m, log_n, batch, q), (beats, bursts) in zip(runs, got, strict=True):
        lay = HbmLayout(params, log_n, batch)
        ch = lay.buffer_channels("input")[q]
        zero = lay.zero_units(log_m)
        per = lay.element_points // params.lanes
        want = [r * lay.unit_beats + j for r, u in enumerate(lay.unit_table("input")[ch]) if not zero[u % per]
                for j in range(lay.unit_beats)]
        assert len(want) == (batch << log_m) // lay.group // lay.points_per_beat, (log_m, log_n, batch, q)
        assert beats == want, (log_m, log_n, batch, q)
        assert bursts == [lay.unit_beats] * (len(want) // lay.unit_beats), (log_m, log_n, batch, q)
