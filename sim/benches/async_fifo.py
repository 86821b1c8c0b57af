"""cocotb bench of :class:`hw.dma.async_fifo.AsyncFifo` (built with write domain ``w`` and read domain ``r``)
on two unrelated clocks: every word written comes out once, in order, under random stalls on both sides;
the FIFO holds exactly its depth; with both sides always ready it moves a word every cycle of the slower
clock; ``w_level`` never exceeds the depth and is 0 once drained; the write domain's reset empties it.

Each side drives at its clock's falling edge and reads the other side's registered handshake there (the
FIFO's ``w_stream.ready`` and ``r_stream.valid`` are registers, neither depends on the other's valid or
ready), so a word is taken at the next rising edge exactly when valid and ready are both 1 at the falling
edge before it.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge

from nantucket.hw.flow.runner import bench_facts


class Sides:
    def __init__(self, dut, w_ps: int, r_ps: int):
        facts = bench_facts()
        self.dut = dut
        self.depth = facts["params"]["depth"]
        self.width = facts["params"]["width"]
        self.rng = random.Random(facts.get("seed", 1) * 7919 + w_ps * 31 + r_ps)
        cocotb.start_soon(Clock(dut.w_clk, w_ps, unit="ps").start())
        # started a fraction of a period later: the edges drift against each other
        self.r_ps = r_ps
        self.written, self.read = [], []

    async def start(self):
        d = self.dut
        await ClockCycles(d.w_clk, 1)
        cocotb.start_soon(Clock(d.r_clk, self.r_ps, unit="ps").start())
        d.w_stream__valid.value = 0
        d.r_stream__ready.value = 0
        d.w_rst.value = 1
        d.r_rst.value = 1
        await ClockCycles(d.w_clk, 4)
        await ClockCycles(d.r_clk, 4)
        await FallingEdge(d.w_clk)
        d.w_rst.value = 0
        await FallingEdge(d.r_clk)
        d.r_rst.value = 0

    async def writer(self, words: int, busy: float, levels: list):
        """Offer ``words`` random words, valid with probability ``busy`` each cycle."""
        d = self.dut
        sent = 0
        word = self.rng.getrandbits(self.width)
        while sent < words:
            await FallingEdge(d.w_clk)
            levels.append(int(d.w_level.value))
            valid = self.rng.random() < busy
            d.w_stream__valid.value = int(valid)
            d.w_stream__payload.value = word
            if valid and int(d.w_stream__ready.value):
                self.written.append(word)
                sent += 1
                word = self.rng.getrandbits(self.width)
        await FallingEdge(d.w_clk)
        d.w_stream__valid.value = 0

    async def reader(self, words: int, busy: float):
        """Take words, ready with probability ``busy`` each cycle, until ``words`` came out."""
        d = self.dut
        while len(self.read) < words:
            await FallingEdge(d.r_clk)
            ready = self.rng.random() < busy
            d.r_stream__ready.value = int(ready)
            if ready and int(d.r_stream__valid.value):
                self.read.append(int(d.r_stream__payload.value))
        await FallingEdge(d.r_clk)
        d.r_stream__ready.value = 0


async def _stalls(dut, w_ps, r_ps):
    s = Sides(dut, w_ps, r_ps)
    await s.start()
    levels = []
    words = 3000
    # rates that keep the FIFO near empty, near full and in between
    for w_busy, r_busy in ((0.9, 0.3), (0.3, 0.9), (0.6, 0.6), (1.0, 1.0)):
        cocotb.start_soon(s.writer(words // 4, w_busy, levels))
        await s.reader(len(s.read) + words // 4, r_busy)
    assert s.read == s.written, "words lost, duplicated or reordered"
    assert max(levels) <= s.depth, f"w_level {max(levels)} over the depth {s.depth}"
    await ClockCycles(dut.w_clk, 12)
    await ClockCycles(dut.r_clk, 12)
    await FallingEdge(dut.w_clk)
    assert int(dut.w_level.value) == 0, "w_level after draining"
    assert int(dut.r_stream__valid.value) == 0, "valid after draining"
    return s


@cocotb.test()
async def test_random_stalls_write_faster(dut):
    await _stalls(dut, 2222, 3138)


@cocotb.test()
async def test_random_stalls_read_faster(dut):
    await _stalls(dut, 3542, 2222)


@cocotb.test()
async def test_capacity_and_rate(dut):
    """A stopped reader: the writer puts in exactly ``depth`` words; then both sides always ready: a word
    a cycle of the slower clock once the pipeline is full."""
    s = Sides(dut, 2500, 3300)
    await s.start()
    d = dut
    levels = []
    writer = cocotb.start_soon(s.writer(4 * s.depth + 600, 1.0, levels))
    await ClockCycles(d.w_clk, 4 * s.depth + 20)
    assert len(s.written) == s.depth, f"a stopped reader: {len(s.written)} words went in, depth {s.depth}"
    assert levels[-1] == s.depth, f"w_level {levels[-1]} when full"
    # both always ready: the reader (slower clock) takes a word every cycle after a short start
    n0 = len(s.read)
    reader = cocotb.start_soon(s.reader(4 * s.depth + 600, 1.0))
    await ClockCycles(d.r_clk, 8)
    taken = len(s.read)
    await ClockCycles(d.r_clk, 400)
    assert len(s.read) - taken == 400, f"{len(s.read) - taken} words in 400 read cycles, both sides ready"
    await reader
    await writer
    assert s.read == s.written and n0 == 0


@cocotb.test()
async def test_write_reset_empties(dut):
    """Words in the FIFO when the write domain resets are gone; words written after it come out."""
    s = Sides(dut, 2222, 2918)
    await s.start()
    d = dut
    levels = []
    await s.writer(s.depth // 2 + 1, 1.0, levels)
    await ClockCycles(d.r_clk, 6)
    assert int(d.r_stream__valid.value) == 1
    d.w_rst.value = 1
    await ClockCycles(d.w_clk, 3)
    await ClockCycles(d.r_clk, 2)
    await FallingEdge(d.w_clk)
    d.w_rst.value = 0
    await ClockCycles(d.r_clk, 8)
    assert int(d.r_stream__valid.value) == 0, "the write reset left words in the FIFO"
    s.written = []
    cocotb.start_soon(s.writer(3 * s.depth, 0.8, levels))
    await s.reader(3 * s.depth, 0.7)
    assert s.read == s.written
