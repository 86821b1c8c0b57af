"""Shared cocotb helpers for the valid-only, globally enabled pipelines (docs/architecture.md, "Pipeline handshake").

Timing convention used by :class:`PipelineTB`: everything is sampled and driven at the falling edge.
At falling edge n the TB picks the ``en`` / ``i_valid`` / inputs that the next rising edge will see;
an output that is visible now is *taken* iff that ``en`` is 1 (the pipeline holds it otherwise), so
each output is recorded exactly once. Enabled rising edges are counted, which lets the TB check that
every result appears exactly ``latency`` enabled cycles after its operands went in.
"""

from __future__ import annotations

import itertools
import random
from typing import Iterator, Sequence

import cocotb

from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from nantucket.hw.model import field as F
from nantucket.hw.model.field import P

__all__ = ["EDGE_VALUES", "edge_values", "NONCANONICAL_VALUES", "PATTERNS", "pattern", "start_clock", "reset",
           "reset_domains", "PipelineTB", "edge_pairs", "drive_stream"]

#: The field's edge values every bench must cover (all canonical).
EDGE_VALUES = (0, 1, 2, P - 1, P - 2, 2**32 - 1, 2**32, 2**63, 2**64 - 2**32)


def edge_values(field=F.GOLDILOCKS) -> tuple[int, ...]:
    """The edge values of ``field`` (a name or Field): :data:`EDGE_VALUES` in Goldilocks; 0, 1, 2, p-1, p-2
    and the powers of two around the half and full word below p in a 31-bit field."""
    field = F.get(field)
    if field.p == P:
        return EDGE_VALUES
    p, half = field.p, field.width // 2
    return tuple(dict.fromkeys(v for v in (0, 1, 2, p - 1, p - 2, (1 << half) - 1, 1 << half, 1 << (half + 1),
                                           (1 << (field.width - 1)) - 1, 1 << (field.width - 1), p - (1 << half))
                               if v < p))


#: Values >= p, for inputs that may be non-canonical (any 64-bit value).
NONCANONICAL_VALUES = (P, P + 1, 2**64 - 2, 2**64 - 1, 2**64 - 2**31)

#: Names of the idle / stall patterns benches cross with their tests.
PATTERNS = ("none", "random", "bursty")


def pattern(kind: str, rate: float = 0.3, seed: int | None = None) -> Iterator[bool]:
    """An endless bool stream: True = idle (no valid input) or stall (en = 0) this cycle.

    none: never; random: independently with probability ``rate``; bursty: runs of 1..16 cycles.
    """
    rng = random.Random(seed)
    if kind == "none":
        return itertools.repeat(False)
    if kind == "random":
        return (rng.random() < rate for _ in itertools.count())
    if kind == "bursty":
        def gen():
            while True:
                on = rng.random() < rate
                for _ in range(rng.randint(1, 16)):
                    yield on
        return gen()
    raise ValueError(f"kind: must be one of {PATTERNS}, got {kind!r}")


def edge_pairs(values: Sequence[int] = EDGE_VALUES) -> list[tuple[int, int]]:
    return [(a, b) for a in values for b in values]


def start_clock(clk, period_ns: float = 2.0):
    """Start a free-running clock on the handle ``clk``; returns the task."""
    return cocotb.start_soon(Clock(clk, period_ns, unit="ns").start())


async def reset(clk, rst, cycles: int = 3):
    """Hold the active-high reset ``rst`` for a few cycles of ``clk``; returns at a falling edge."""
    rst.value = 1
    await ClockCycles(clk, cycles)
    await FallingEdge(clk)
    rst.value = 0


async def reset_domains(clk, resets, cycles: int = 5, settle: int = 5):
    """Hold every active-high reset in ``resets`` together (the platform resets all clock domains at
    once) for ``cycles`` of ``clk``, release them at a falling edge, then wait ``settle`` cycles."""
    for rst in resets:
        rst.value = 1
    await ClockCycles(clk, cycles)
    await FallingEdge(clk)
    for rst in resets:
        rst.value = 0
    await ClockCycles(clk, settle)


async def drive_stream(dut, payloads: Sequence[int], idle: Iterator[bool], stall: Iterator[bool], *,
                       done, on_output, limit: int, timeout) -> tuple[list[int], int]:
    """Drive a component's ``i`` stream (amaranth.lib.stream: ``i__valid``/``i__payload``/``i__ready``)
    with ``payloads`` in order, ``valid`` dropped where ``idle`` says, and take its ``o`` stream with
    ``ready`` dropped where ``stall`` says, one cycle at a time from a falling edge of ``dut.clk`` until
    ``done()``: ``on_output(word, cycle)`` for each output taken. Fails with ``timeout()`` (a message)
    after ``limit`` cycles. Returns the cycle each payload was taken and the cycles run."""
    sent, cycle, taken_at = 0, 0, []
    while not done():
        offer = sent < len(payloads) and not next(idle)
        dut.i__valid.value = int(offer)
        dut.i__payload.value = payloads[sent] if offer else 0
        dut.o__ready.value = int(not next(stall))
        await ReadOnly()
        if offer and dut.i__ready.value:
            taken_at.append(cycle)
            sent += 1
        if dut.o__valid.value and dut.o__ready.value:
            on_output(int(dut.o__payload.value), cycle)
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        cycle += 1
        assert cycle < limit, timeout()
    return taken_at, cycle


class PipelineTB:
    """Drive a valid-only pipeline with random input gaps and enable stalls; collect its outputs.

    inputs:  data input port names (driven with the tuple items of each operand set)
    outputs: data output port names (read into tuples)
    latency: the component's ``latency`` (from ``bench_facts()["props"]``)
    """

    def __init__(self, dut, inputs: Sequence[str], outputs: Sequence[str], latency: int, *,
                 clk: str = "clk", rst: str = "rst", en: str = "en", i_valid: str = "i_valid", o_valid: str = "o_valid"):
        self.dut = dut
        self.inputs = [getattr(dut, n) for n in inputs]
        self.outputs = [getattr(dut, n) for n in outputs]
        self.latency = latency
        self.clk = getattr(dut, clk)
        self.rst = getattr(dut, rst)
        self.en = getattr(dut, en)
        self.i_valid = getattr(dut, i_valid)
        self.o_valid = getattr(dut, o_valid)
        self.cycles = 0
        self.enabled_cycles = 0

    async def start(self, period_ns: float = 2.0):
        start_clock(self.clk, period_ns)
        for sig in self.inputs:
            sig.value = 0
        self.en.value = 0
        self.i_valid.value = 0
        await reset(self.clk, self.rst)

    async def run(self, items: Sequence[tuple[int, ...]], idle: Iterator[bool], stall: Iterator[bool],
                  max_cycles: int | None = None) -> list[tuple[int, ...]]:
        """Send every operand tuple in ``items`` and return the output tuples in arrival order.

        Fails if an output arrives at any distance other than ``latency`` enabled cycles, or if more
        outputs arrive than operands were sent.
        """
        L = self.latency
        sent_edges: list[int] = []          # enabled-edge index that captured operand i
        got: list[tuple[int, ...]] = []
        n = len(items)
        limit = max_cycles if max_cycles is not None else 20 * (n + L) + 1000
        it = iter(items)
        sent = 0
        tail = 0                            # enabled edges since the last operand went in
        edge = 0                            # index of enabled edges so far
        while True:
            await FallingEdge(self.clk)
            en = not next(stall)
            # The output visible now is taken at the coming edge iff en.
            if en and int(self.o_valid.value):
                if len(got) >= n:
                    raise AssertionError(f"extra output {len(got)} (only {n} operand sets sent)")
                got.append(tuple(int(s.value) for s in self.outputs))
                idx = len(got) - 1
                distance = (edge + 1) - sent_edges[idx]
                if distance != L:
                    raise AssertionError(f"output {idx} arrived {distance} enabled cycles after its "
                                         f"operands, latency says {L}")
            valid = False
            if en and sent < n and not next(idle):
                vals = next(it)
                for sig, v in zip(self.inputs, vals):
                    sig.value = v
                valid = True
                sent += 1
                sent_edges.append(edge + 1)
            elif en and sent < n:
                # an idle cycle: scribble on the data inputs, they must be ignored
                for sig in self.inputs:
                    sig.value = random.getrandbits(len(sig))
            self.en.value = int(en)
            self.i_valid.value = int(valid) if en else random.getrandbits(1)
            if en:
                edge += 1
                if sent == n:
                    tail += 1
            self.cycles += 1
            if sent == n and len(got) == n and tail > L + 2:
                break
            if self.cycles > limit:
                raise AssertionError(f"timeout after {self.cycles} cycles: sent {sent}, got {len(got)} of {n}")
        self.enabled_cycles = edge
        self.en.value = 0
        self.i_valid.value = 0
        return got


def pysim_pipeline(dut, items, inputs: Sequence[str], outputs: Sequence[str], seed: int,
                   enable_rate: float = 0.7, send_rate: float = 0.8, cycles_per_item: int = 20) -> list[tuple]:
    """Drive a pipeline block (ports ``en``, ``i_valid``, ``o_valid`` and the named data ports) in
    amaranth.sim with random enable stalls and input gaps: ``items`` are tuples of input values, the
    result is the tuples of output values in the order the block gave them (taken while enabled)."""
    from amaranth.sim import Simulator
    rng = random.Random(seed)
    got = []

    async def bench(ctx):
        i = 0
        for _ in range(cycles_per_item * len(items) + 100):
            if len(got) == len(items):
                break
            en = rng.random() < enable_rate
            ctx.set(dut.en, en)
            if en and ctx.get(dut.o_valid):       # taken at this edge
                got.append(tuple(ctx.get(getattr(dut, name)) for name in outputs))
            send = en and i < len(items) and rng.random() < send_rate
            if send:
                for name, value in zip(inputs, items[i]):
                    ctx.set(getattr(dut, name), value)
                i += 1
            ctx.set(dut.i_valid, send)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    return got


async def check_butterflies(dut, items, idle: str, stall: str, seed: int, latency: int, golden,
                            twiddle=lambda w: w) -> None:
    """Run butterfly sets ``(x0, x1, w, w_pass)`` through a butterfly block under the idle/stall
    patterns and compare every output with ``golden(x0, x1, twiddle(w)) + (w_pass,)``."""
    tb = PipelineTB(dut, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], latency)
    await tb.start()
    got = await tb.run(items, pattern(idle, seed=seed), pattern(stall, seed=seed + 1))
    assert len(got) == len(items)
    for i, ((x0, x1, w, wp), out) in enumerate(zip(items, got)):
        exp = golden(x0, x1, twiddle(w)) + (wp,)
        assert out == exp, (f"set {i}: x0={x0:#x} x1={x1:#x} twiddle={twiddle(w):#x} w_pass={wp:#x}: got "
                            f"({', '.join(hex(v) for v in out)}), golden ({', '.join(hex(v) for v in exp)})")
    dut._log.info("%d butterflies (idle=%s, stall=%s) in %d cycles", len(items), idle, stall, tb.cycles)
