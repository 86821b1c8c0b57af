"""cocotb bench for hw.engine.NttEngine with a behavioural memory standing in for the DMA engine.

The bench feeds payloads in ``pass_schedule`` read order from a numpy memory and stores what comes out
at the ``pass_schedule`` write indices, pass 1 then pass 2, and checks the state after pass 1 against
the golden model's ``fourstep.pass1`` and the result against ``ntt``. With no stalls, ``done`` must come
exactly N / (2L) + ``latency`` cycles after ``start``.
"""

import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, Timer

from hw.model import field as F, fourstep, ntt
from hw.model.params import BuildParams
from hw.model.schedule import pass_schedule
from hw.points import pack_payload, unpack_payload
from sim.benchlib import EDGE_VALUES, pattern, reset, start_clock
from sim.runner import bench_facts



def vectors(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "random":
        return rng.integers(0, F.P, n, dtype=np.uint64)
    if kind == "edges":
        return np.resize(np.array(EDGE_VALUES, dtype=np.uint64), n)[rng.permutation(n)]
    if kind == "zeros":
        return np.zeros(n, dtype=np.uint64)
    if kind == "max":
        return np.full(n, F.P - 1, dtype=np.uint64)
    if kind == "impulse":
        x = np.zeros(n, dtype=np.uint64)
        x[int(rng.integers(n))] = 1
        return x
    raise ValueError(kind)


class EngineTB:
    def __init__(self, dut):
        facts = bench_facts()
        self.dut = dut
        self.params = BuildParams(**facts["params"]["params"])
        self.latency = facts["props"]["latency"]
        self.beats = facts["props"]["beats_per_pass"]
        self.frame_latencies = facts["props"]["frame_latencies"]
        self.sizes = facts["props"]["sizes"]

    async def start(self):
        start_clock(self.dut.clk)
        self.dut.start.value = 0
        self.dut.log_n.value = self.params.max_log_n
        self.dut.points_in__valid.value = 0
        self.dut.points_out__ready.value = 0
        await reset(self.dut.clk, self.dut.rst)

    def payloads(self, memory: np.ndarray, reads: np.ndarray) -> list[int]:
        out = []
        lanes = self.params.lanes
        for g in range(reads.shape[0]):
            for t in range(reads.shape[1]):
                out.append(pack_payload((memory[i0], memory[i1]) for i0, i1 in reads[g, t, :lanes]))
        return out

    async def run_pass(self, memory: np.ndarray, pass_index: int, idle, stall,
                       log_n: int | None = None) -> tuple[np.ndarray, int]:
        """One pass through the engine; returns (the written memory, cycles from start to done).

        Inputs are driven just after a falling edge; the handshakes (combinational) are read once
        they settle, which is what the coming rising edge sees.
        """
        dut, lanes = self.dut, self.params.lanes
        log_n = self.params.max_log_n if log_n is None else log_n
        reads, writes = pass_schedule(self.params, pass_index, log_n)
        beats = self.payloads(memory, reads)
        latency = self.frame_latencies[self.params.pass_log_sizes(log_n)[pass_index - 1] - 2]
        out = np.zeros_like(memory)
        written = np.zeros(memory.shape, dtype=bool)
        await FallingEdge(dut.clk)
        dut.start.value = 1
        dut.pass2.value = int(pass_index == 2)
        dut.log_n.value = log_n
        await FallingEdge(dut.clk)
        dut.start.value = 0
        assert int(dut.busy.value), "start was not taken"
        cycles, fed, got = 0, 0, 0
        offer = False
        while True:
            if not offer and fed < len(beats) and not next(idle):
                dut.points_in__payload.value = beats[fed]
                offer = True
            if not offer:
                dut.points_in__payload.value = random.getrandbits(2 * 64 * lanes)
            dut.points_in__valid.value = int(offer)
            dut.points_out__ready.value = int(not next(stall))
            await Timer(100, unit="ps")
            cycles += 1
            if int(dut.points_in__ready.value) and offer:
                fed += 1
                offer = False
            if int(dut.points_out__valid.value) and int(dut.points_out__ready.value):
                pairs = unpack_payload(int(dut.points_out__payload.value), lanes)
                g, t = divmod(got, reads.shape[1])
                for lane, pair in enumerate(pairs):
                    for j in range(2):
                        idx = writes[g, t, lane, j]
                        assert not written[idx], f"pass {pass_index}: index {idx} written twice"
                        written[idx] = True
                        out[idx] = pair[j]
                got += 1
            done = int(dut.done.value)
            await FallingEdge(dut.clk)
            if done:
                break
            assert cycles < 40 * (len(beats) + latency) + 2000, \
                f"pass {pass_index}: timeout (fed {fed}, got {got} of {len(beats)})"
        assert got == len(beats) and fed == len(beats), f"pass {pass_index}: fed {fed}, got {got}"
        assert not int(dut.busy.value), "still busy after done"
        assert written.all()
        return out, cycles


async def transform(dut, kind: str, idle: str, stall: str, seed: int = 1, log_n: int | None = None,
                    tb: EngineTB | None = None):
    if tb is None:
        tb = EngineTB(dut)
        await tb.start()
    p = tb.params
    n = p.max_log_n if log_n is None else log_n
    f1, f2 = p.pass_log_sizes(n)
    x = vectors(kind, 1 << n, seed)
    idle_it, stall_it = pattern(idle, seed=seed), pattern(stall, seed=seed + 1)
    state, c1 = await tb.run_pass(x, 1, idle_it, stall_it, n)
    assert np.array_equal(state.reshape(1 << f2, 1 << f1), fourstep.pass1(x, 1 << f1)), \
        f"{kind}, 2^{n}: state after pass 1 differs from the golden model"
    result, c2 = await tb.run_pass(state, 2, idle_it, stall_it, n)
    assert np.array_equal(result, ntt.ntt(x)), f"{kind}, 2^{n}: result differs from the golden model's NTT"
    beats = (1 << n) // (2 * p.lanes)
    if idle == "none" and stall == "none":
        for c, f in ((c1, f1), (c2, f2)):
            expect = beats + tb.frame_latencies[f - 2]
            assert c == expect, f"2^{n}: pass took {c} cycles, expected {beats} + {tb.frame_latencies[f - 2]}"
    dut._log.info(f"{kind} 2^{n} idle={idle} stall={stall}: pass cycles {c1}, {c2} (ideal {beats} each)")


KINDS = ("random", "edges", "zeros", "max", "impulse")


@cocotb.test()
@cocotb.parametrize(idle=("none", "random", "bursty"), stall=("none", "random", "bursty"))
async def test_random_points(dut, idle, stall):
    await transform(dut, "random", idle, stall)


@cocotb.test()
@cocotb.parametrize(kind=KINDS[1:])
async def test_edge_vectors(dut, kind):
    await transform(dut, kind, "random", "random", seed=7)


@cocotb.test()
async def test_every_size(dut):
    """Every run-time size of the build, largest first, then switching up and down without reset,
    under random gaps and stalls; then the sizes once more with none, for the exact cycle counts."""
    tb = EngineTB(dut)
    await tb.start()
    sizes = tb.sizes
    order = sizes[::-1] + sizes[::2] + sizes[1::2]
    for i, n in enumerate(order):
        kind = KINDS[i % len(KINDS)]
        await transform(dut, kind, "random", "random", seed=11 + i, log_n=n, tb=tb)
    for n in sizes:
        await transform(dut, "random", "none", "none", seed=40 + n, log_n=n, tb=tb)


@cocotb.test()
async def test_back_to_back(dut):
    """Two transforms with no reset between them, the second under stalls."""
    await transform(dut, "random", "none", "none", seed=3)
    tb = EngineTB(dut)
    p = tb.params
    x = vectors("random", p.n_points, 4)
    it, st = pattern("random", seed=5), pattern("random", seed=6)
    state, _ = await tb.run_pass(x, 1, it, st)
    result, _ = await tb.run_pass(state, 2, it, st)
    assert np.array_equal(result, ntt.ntt(x))
