"""cocotb bench for the two-operand field units of hw.arith: ModAdd, ModSub, MulReduce.

Which unit is under test comes from ``bench_facts()["name"]``; results are compared with the golden
model (hw.model.field), never with the RTL's own formulas. Every test crosses an input-gap pattern
(``i_valid`` low, garbage on the operands) with a stall pattern (``en`` low); PipelineTB checks that
each result leaves exactly ``latency`` enabled cycles (the component's property) after its operands.

Operands: every pair of the field's edge values (plus non-canonical values >= p for MulReduce, whose
inputs may be any 64-bit value), values near the carry and reduction boundaries, and uniform random
values; ``test_random_10k`` alone sends 10,000 random operand sets.
"""

import os
import random

import cocotb

from nantucket.hw.model import field as F
from nantucket.sim.benches.lib import EDGE_VALUES, NONCANONICAL_VALUES, PATTERNS, PipelineTB, edge_pairs, pattern
from nantucket.hw.flow.runner import bench_facts

#: name -> (result port, golden model, inputs may be non-canonical)
UNITS = {
    "modadd": ("o_sum", F.add, False),
    "modsub": ("o_diff", F.sub, False),
    "mulreduce": ("o_p", F.mul, True),
}

RANDOM_SETS = int(os.environ.get("ARITH_RANDOM_SETS", "10000"))
CROSSED_SETS = int(os.environ.get("ARITH_CROSSED_SETS", "1000"))


def _unit():
    facts = bench_facts()
    name = facts["name"]
    if name not in UNITS:
        raise ValueError(f"bench_arith does not know unit {name!r}")
    port, model, any64 = UNITS[name]
    return facts, port, model, any64


def _operand(rng: random.Random, any64: bool) -> int:
    """Uniform values most of the time, boundary neighbourhoods otherwise (carries, p, 2^32, 2^64)."""
    top = 1 << 64 if any64 else F.P
    r = rng.random()
    if r < 0.6:
        return rng.randrange(top)
    base = rng.choice((0, F.P, 2**32, 2**63, 2**64 - 2**32, 2**64 if any64 else F.P, 2**96 % F.P))
    v = base + rng.randint(-64, 64)
    return min(max(v, 0), top - 1)


def _edge_operands(any64: bool):
    values = EDGE_VALUES + (NONCANONICAL_VALUES if any64 else ())
    return edge_pairs(values)


async def _check(dut, items, idle, stall, seed):
    facts, port, model, _ = _unit()
    tb = PipelineTB(dut, ["i_a", "i_b"], [port], facts["props"]["latency"])
    await tb.start()
    got = await tb.run(items, pattern(idle, seed=seed), pattern(stall, seed=seed + 1))
    expected = [model(a, b) for a, b in items]
    bad = [(i, items[i], g[0], e) for i, (g, e) in enumerate(zip(got, expected)) if g[0] != e]
    assert not bad, (f"{len(bad)} of {len(items)} wrong; first: operands {bad[0][1]} -> "
                     f"{bad[0][2]:#x}, golden model {bad[0][3]:#x}")
    assert len(got) == len(items)
    dut._log.info("%d operand sets (idle=%s, stall=%s) in %d cycles, %d enabled", len(items), idle, stall,
                  tb.cycles, tb.enabled_cycles)


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_edges_and_random(dut, idle, stall):
    """Every edge pair plus random operands, under each input-gap x stall combination."""
    _, _, _, any64 = _unit()
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    items = _edge_operands(any64) + [(_operand(rng, any64), _operand(rng, any64)) for _ in range(CROSSED_SETS)]
    rng.shuffle(items)
    await _check(dut, items, idle, stall, seed)


@cocotb.test()
async def test_random_10k(dut):
    """10,000 uniform random operand sets with random gaps and stalls."""
    _, _, _, any64 = _unit()
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    top = 1 << 64 if any64 else F.P
    items = [(rng.randrange(top), rng.randrange(top)) for _ in range(RANDOM_SETS)]
    await _check(dut, items, "random", "random", seed)


@cocotb.test()
async def test_back_to_back(dut):
    """Edge pairs with neither gaps nor stalls: one result per cycle."""
    _, _, _, any64 = _unit()
    await _check(dut, _edge_operands(any64), "none", "none", 1)
