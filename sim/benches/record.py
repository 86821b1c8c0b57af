"""cocotb bench of hw.record.RecordWriter: a small AXI4 write slave with random stalls on AW, W and B and
a chosen response, one record after another (random words, addresses, start gaps).

Checks: one burst per record (AWLEN = RECORD_BEATS - 1, full-width INCR, the address rounded down to
RECORD_BYTES), the beats carry the words in hw.model.record order with every strobe set and WLAST on the
last, ``done`` exactly once per record with the B handshake, ``fault`` / ``fault_resp`` with a non-OKAY
response, ``busy`` from the cycle after the start to done.
"""

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from nantucket.hw.model.record import RECORD_BEATS, RECORD_BYTES, RECORD_WORDS
from nantucket.sim.benches.lib import pattern, reset, start_clock

WORDS = len(RECORD_WORDS)
PER_BEAT = WORDS // RECORD_BEATS


class WriteSlave:
    """AW, W and B with idle/stall patterns; records what was written and answers with ``resp``."""

    def __init__(self, dut, kind: str, seed: int):
        self.dut = dut
        self.stall = pattern(kind, 0.4, seed)
        self.bursts = []            # (address, awlen, awsize, awburst, [(data, strb, last), ...])
        self.resp = 0
        self.responses = 0

    async def run(self):
        dut = self.dut
        pending = []                # bursts waiting for their B
        current = None
        b_valid = False
        while True:
            await FallingEdge(dut.clk)
            dut.axi__awready.value = aw_ready = int(not next(self.stall))
            dut.axi__wready.value = w_ready = int(not next(self.stall))
            if not b_valid and pending and not next(self.stall):
                b_valid = True
                dut.axi__bresp.value = self.resp
            dut.axi__bvalid.value = int(b_valid)
            await RisingEdge(dut.clk)
            if aw_ready and dut.axi__awvalid.value:
                current = [int(dut.axi__awaddr.value), int(dut.axi__awlen.value), int(dut.axi__awsize.value),
                           int(dut.axi__awburst.value), []]
                self.bursts.append(current)
            if w_ready and dut.axi__wvalid.value:
                assert current is not None, "a W beat before its AW"
                last = int(dut.axi__wlast.value)
                current[4].append((int(dut.axi__wdata.value), int(dut.axi__wstrb.value), last))
                if last:
                    pending.append(current)
            if b_valid and dut.axi__bready.value:
                b_valid = False
                pending.pop(0)
                self.responses += 1


async def write_records(dut, kind: str, seed: int, count: int = 24):
    rng = random.Random(seed)
    start_clock(dut.clk)
    dut.start.value = 0
    for name in ("awready", "wready", "bvalid", "bresp"):
        getattr(dut, f"axi__{name}").value = 0
    await reset(dut.clk, dut.rst)
    slave = WriteSlave(dut, kind, seed)
    cocotb.start_soon(slave.run())
    for i in range(count):
        words = [rng.choice([0, 1, 0xFFFF_FFFF, 1 << 31, rng.getrandbits(32)]) for _ in range(WORDS)]
        address = rng.getrandbits(40) | rng.choice([0, 4, RECORD_BYTES - 4])
        slave.resp = rng.choice([0, 0, 0, 2, 3])
        for _ in range(rng.randint(0, 3)):
            await FallingEdge(dut.clk)
        await FallingEdge(dut.clk)
        dut.start.value = 1
        dut.address.value = address
        dut.words.value = sum(w << (32 * j) for j, w in enumerate(words))
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        dut.start.value = 0
        dut.words.value = 0                     # the writer latched them
        dones = 0
        while True:
            await FallingEdge(dut.clk)
            await ReadOnly()                # done is combinational with the coming B handshake
            if int(dut.done.value):
                dones += 1
                assert int(dut.fault.value) == (slave.resp != 0), f"record {i}: fault with resp {slave.resp}"
                if slave.resp:
                    assert int(dut.fault_resp.value) == slave.resp
                break
            assert dut.busy.value, f"record {i}: busy fell before done"
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        await ReadOnly()
        assert dones == 1 and not int(dut.busy.value)
        assert len(slave.bursts) == i + 1 and slave.responses == i + 1, (len(slave.bursts), slave.responses)
        addr, awlen, awsize, awburst, beats = slave.bursts[i]
        assert addr == address & ~(RECORD_BYTES - 1), (hex(addr), hex(address))
        assert (awlen, awsize, awburst) == (RECORD_BEATS - 1, 5, 1)
        assert len(beats) == RECORD_BEATS and [b[2] for b in beats] == [0] * (RECORD_BEATS - 1) + [1]
        for b, (data, strb, _) in enumerate(beats):
            assert strb == (1 << 32) - 1
            got = [(data >> (32 * j)) & 0xFFFF_FFFF for j in range(PER_BEAT)]
            assert got == words[b * PER_BEAT:(b + 1) * PER_BEAT], f"record {i} beat {b}"


@cocotb.test()
async def test_records_no_stalls(dut):
    await write_records(dut, "none", 1)


@cocotb.test()
async def test_records_random_stalls(dut):
    await write_records(dut, "random", 2)


@cocotb.test()
async def test_records_bursty_stalls(dut):
    await write_records(dut, "bursty", 3)
