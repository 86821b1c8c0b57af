"""cocotb bench for hw.engine.NttEngine with a behavioural memory standing in for the DMA engine.

The bench feeds payloads in ``pass_schedule`` read order from a numpy memory and stores what comes out
at the ``pass_schedule`` write indices, pass 1 then pass 2, and checks the state after pass 1 against
the golden model's ``fourstep.pass1`` and the result against ``ntt``. With no stalls, ``done`` must come
exactly N / (2L) + ``latency`` cycles after ``start``.

Inverse runs and batches (``test_inverse_and_batches``): ``inverse`` and ``batch`` = B set with ``start``
(held while busy); B transforms stored back to back (``pass_schedule(..., batch=B)``), each element of the
state checked against ``fourstep.pass1`` (inverse: w^-1, the scale w_N^(-n2 k1)) and of the result
against ``ntt.transform(x, inverse=True)`` (1/N included) or the forward ``ntt``; with no stalls a pass
takes B N / (2L) + ``latency_at(f)`` cycles, the forward run's count.
"""

import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, Timer

from nantucket.hw.model import field as F, fourstep, ntt
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.schedule import pass_schedule
from nantucket.hw.points import pack_payload, unpack_payload
from nantucket.hw.run import run_layout
from nantucket.sim.benches.lib import edge_values, pattern, reset, start_clock
from nantucket.hw.flow.runner import bench_facts



def vectors(kind: str, n: int, seed: int, field=F.GOLDILOCKS) -> np.ndarray:
    """n points of ``field`` of one kind: random, edges (the field's edge values), zeros, max (p - 1),
    impulse (a single 1)."""
    rng = np.random.default_rng(seed)
    field = F.get(field)
    if kind == "random":
        return rng.integers(0, field.p, n, dtype=np.uint64)
    if kind == "edges":
        return np.resize(np.array(edge_values(field), dtype=np.uint64), n)[rng.permutation(n)]
    if kind == "zeros":
        return np.zeros(n, dtype=np.uint64)
    if kind == "max":
        return np.full(n, field.p - 1, dtype=np.uint64)
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
        #: the build's field: the points, the golden model's transforms and the payload layout
        self.field = self.params.prime_field
        self.latency = facts["props"]["latency"]
        self.beats = facts["props"]["beats_per_pass"]
        self.frame_latencies = facts["props"]["frame_latencies"]
        self.sizes = facts["props"]["sizes"]
        self.max_batch = facts["props"]["max_batch"]
        #: the fields of the engine's ``run`` port (hw.run.run_layout), written by ``set_run``
        self.run = {"log_n": self.params.max_log_n, "batch": 1}

    def set_run(self, **fields):
        """Change some fields of the run on the engine's ``run`` port (the others keep their values)."""
        self.run.update(fields)
        self.dut.run.value = run_layout(self.params).const(self.run).as_value().value

    async def start(self):
        start_clock(self.dut.clk)
        self.dut.start.value = 0
        self.set_run()
        self.dut.points_in__valid.value = 0
        self.dut.points_out__ready.value = 0
        await reset(self.dut.clk, self.dut.rst)

    def payloads(self, memory: np.ndarray, reads: np.ndarray) -> list[int]:
        out = []
        lanes = self.params.lanes
        for g in range(reads.shape[0]):
            for t in range(reads.shape[1]):
                out.append(pack_payload(((memory[i0], memory[i1]) for i0, i1 in reads[g, t, :lanes]), self.field))
        return out

    async def run_pass(self, memory: np.ndarray, pass_index: int, idle, stall,
                       log_n: int | None = None, inverse: bool = False, batch: int = 1) -> tuple[np.ndarray, int]:
        """One pass through the engine (of a batch of ``batch`` transforms, ``memory`` holding them back to
        back); returns (the written memory, cycles from start to done).

        Inputs are driven just after a falling edge; the handshakes (combinational) are read once
        they settle, which is what the coming rising edge sees.
        """
        dut, lanes = self.dut, self.params.lanes
        log_n = self.params.max_log_n if log_n is None else log_n
        reads, writes = pass_schedule(self.params, pass_index, log_n, batch)
        beats = self.payloads(memory, reads)
        latency = self.frame_latencies[self.params.pass_log_sizes(log_n)[pass_index - 1] - 2]
        out = np.zeros_like(memory)
        written = np.zeros(memory.shape, dtype=bool)
        await FallingEdge(dut.clk)
        dut.start.value = 1
        dut.pass2.value = int(pass_index == 2)
        self.set_run(log_n=log_n, inverse=int(inverse), batch=batch)
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
                dut.points_in__payload.value = random.getrandbits(2 * self.field.point_bits * lanes)
            dut.points_in__valid.value = int(offer)
            dut.points_out__ready.value = int(not next(stall))
            await Timer(100, unit="ps")
            cycles += 1
            if int(dut.points_in__ready.value) and offer:
                fed += 1
                offer = False
            if int(dut.points_out__valid.value) and int(dut.points_out__ready.value):
                pairs = unpack_payload(int(dut.points_out__payload.value), lanes, self.field)
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
    x = vectors(kind, 1 << n, seed, tb.field)
    idle_it, stall_it = pattern(idle, seed=seed), pattern(stall, seed=seed + 1)
    state, c1 = await tb.run_pass(x, 1, idle_it, stall_it, n)
    assert np.array_equal(state.reshape(1 << f2, 1 << f1), fourstep.pass1(x, 1 << f1, field=tb.field)), \
        f"{kind}, 2^{n}: state after pass 1 differs from the golden model"
    result, c2 = await tb.run_pass(state, 2, idle_it, stall_it, n)
    assert np.array_equal(result, ntt.ntt(x, field=tb.field)), \
        f"{kind}, 2^{n}: result differs from the golden model's NTT"
    beats = (1 << n) // (2 * p.lanes)
    if idle == "none" and stall == "none":
        for c, f in ((c1, f1), (c2, f2)):
            expect = beats + tb.frame_latencies[f - 2]
            assert c == expect, f"2^{n}: pass took {c} cycles, expected {beats} + {tb.frame_latencies[f - 2]}"
    dut._log.info(f"{kind} 2^{n} idle={idle} stall={stall}: pass cycles {c1}, {c2} (ideal {beats} each)")


KINDS = ("random", "edges", "zeros", "max", "impulse")


async def batch_run(tb: EngineTB, log_n: int, inverse: bool, kinds: list[str], idle: str, stall: str, seed: int):
    """A batch of len(kinds) transforms of 2^log_n points (element e of kind kinds[e]), both passes;
    checks every element's pass-1 state and result, and with no gaps or stalls the exact cycle counts."""
    dut, p = tb.dut, tb.params
    batch = len(kinds)
    f1, f2 = p.pass_log_sizes(log_n)
    size = 1 << log_n
    x = np.concatenate([vectors(kind, size, seed + e, tb.field) for e, kind in enumerate(kinds)])
    idle_it, stall_it = pattern(idle, seed=seed), pattern(stall, seed=seed + 1)
    state, c1 = await tb.run_pass(x, 1, idle_it, stall_it, log_n, inverse, batch)
    what = f"{'inverse' if inverse else 'forward'} 2^{log_n} x {batch} ({', '.join(kinds)})"
    for e in range(batch):
        part = slice(e * size, (e + 1) * size)
        assert np.array_equal(state[part].reshape(1 << f2, 1 << f1), fourstep.pass1(x[part], 1 << f1, inverse, field=tb.field)), \
            f"{what}: element {e}'s state after pass 1 differs from the golden model"
    result, c2 = await tb.run_pass(state, 2, idle_it, stall_it, log_n, inverse, batch)
    for e in range(batch):
        part = slice(e * size, (e + 1) * size)
        assert np.array_equal(result[part], ntt.transform(x[part], inverse=inverse, field=tb.field)), \
            f"{what}: element {e}'s result differs from the golden model"
    beats = batch * size // (2 * p.lanes)
    if idle == "none" and stall == "none":
        for c, f in ((c1, f1), (c2, f2)):
            expect = beats + tb.frame_latencies[f - 2]
            assert c == expect, f"{what}: pass took {c} cycles, expected {beats} + {tb.frame_latencies[f - 2]}"
    dut._log.info(f"{what} idle={idle} stall={stall}: pass cycles {c1}, {c2} (ideal {beats} each)")


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
    x = vectors("random", p.n_points, 4, tb.field)
    it, st = pattern("random", seed=5), pattern("random", seed=6)
    state, _ = await tb.run_pass(x, 1, it, st)
    result, _ = await tb.run_pass(state, 2, it, st)
    assert np.array_equal(result, ntt.ntt(x, field=tb.field))


@cocotb.test()
async def test_inverse_and_batches(dut):
    """Inverse at every size of the build, batches of 1..3 mixing input kinds, switching inverse/forward,
    sizes and batch sizes from pass to pass without reset under random gaps and stalls; then with none,
    inverse and batched runs for the exact cycle counts (those of a forward run of as many points)."""
    tb = EngineTB(dut)
    await tb.start()
    assert tb.max_batch >= 3
    rng = random.Random(14)
    for i, n in enumerate(tb.sizes[::-1]):
        batch = 1 + i % 3
        kinds = [KINDS[(i + e) % len(KINDS)] for e in range(batch)]
        await batch_run(tb, n, True, kinds, "random", "random", seed=100 + i)
        if i % 2:                                  # forward in between: the flags switch back
            await batch_run(tb, rng.choice(tb.sizes), False, ["random", "edges"], "random", "bursty", seed=200 + i)
    for n in (tb.sizes[0], tb.sizes[-1]):
        await batch_run(tb, n, True, ["random"], "none", "none", seed=300 + n)
        await batch_run(tb, n, False, ["random", "max", "edges"], "none", "none", seed=310 + n)
        await batch_run(tb, n, True, ["impulse", "random"], "none", "none", seed=320 + n)
