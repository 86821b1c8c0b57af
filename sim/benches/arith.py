"""cocotb bench for the two-operand field units: ModAdd, ModSub (hw.arith, any field) and the field's
multiply/reduce (MulReduce for Goldilocks, hw.mont_reduce.MontgomeryMulReduce for BabyBear and KoalaBear).

Which unit is under test comes from ``bench_facts()["name"]``, the field from its ``params`` (default
Goldilocks). Results are compared with Python big-int arithmetic written here, never with the RTL's own
formulas or the units' models: (a + b) mod p, (a - b) mod p, a * b mod p for Goldilocks and the Montgomery
product a * b * 2^-32 mod p for a 31-bit field. Every test crosses an input-gap pattern (``i_valid`` low,
garbage on the operands) with a stall pattern (``en`` low); PipelineTB checks that each result leaves
exactly ``latency`` enabled cycles (the component's property) after its operands.

Operands: every pair of the field's edge values (:func:`field_edge_values`, plus non-canonical values
for a multiply/reduce, whose inputs may be any value of the port's width), values near the carry and
reduction boundaries, and uniform random values; ``test_random_10k`` sends ARITH_RANDOM_SETS (10,000)
random operand sets.
"""

import os
import random

import cocotb

from nantucket.hw.model import field as F
from nantucket.sim.benches.lib import EDGE_VALUES, NONCANONICAL_VALUES, PATTERNS, PipelineTB, edge_pairs, pattern
from nantucket.hw.flow.runner import bench_facts

#: name -> (result port, inputs may be non-canonical)
UNITS = {
    "modadd": ("o_sum", False),
    "modsub": ("o_diff", False),
    "mulreduce": ("o_p", True),
}

RANDOM_SETS = int(os.environ.get("ARITH_RANDOM_SETS", "10000"))
CROSSED_SETS = int(os.environ.get("ARITH_CROSSED_SETS", "1000"))


def field_edge_values(f: F.Field) -> tuple[int, ...]:
    """The canonical values every bench over ``f`` must cover: 0, 1, 2, p - 1, p - 2 and the carry and
    DSP-tile boundaries (Goldilocks: 2^32, 2^63, 2^64 - 2^32; a 31-bit field: around 2^15, 2^16, 2^17,
    2^26 (the multiplier's operand splits), 2^30 and p / 2)."""
    if f.width == 64:
        return EDGE_VALUES
    p = f.p
    around = [v + d for v in (2**15, 2**16, 2**17, 2**26, 2**30) for d in (-1, 0, 1)]
    return tuple(dict.fromkeys([0, 1, 2, p - 1, p - 2, *around, (p - 1) // 2, (p + 1) // 2]))


def field_noncanonical_values(f: F.Field) -> tuple[int, ...]:
    """Values >= p that fit the field's ports (a multiply/reduce takes any such value)."""
    if f.width == 64:
        return NONCANONICAL_VALUES
    top = 1 << f.width
    return (f.p, f.p + 1, f.p + 2**15, top - 2, top - 1)


def golden(name: str, f: F.Field, a: int, b: int) -> int:
    """Independent of the design: plain big-int arithmetic."""
    p = f.p
    if name == "modadd":
        return (a + b) % p
    if name == "modsub":
        return (a - b) % p
    if f.width == 64:
        return a * b % p
    return a * b * pow(2**32, -1, p) % p          # the Montgomery product, R = 2^32


def _unit():
    facts = bench_facts()
    name = facts["name"]
    if name not in UNITS:
        raise ValueError(f"bench_arith does not know unit {name!r}")
    port, any_value = UNITS[name]
    f = F.get(facts["params"].get("field", F.DEFAULT_FIELD.name))
    return facts, port, any_value, f


def _operand(rng: random.Random, f: F.Field, any_value: bool) -> int:
    """Uniform values most of the time, boundary neighbourhoods otherwise (carries, p, 2^32, 2^64 for
    Goldilocks; p, 2^15, 2^16, 2^30, 2^31 for a 31-bit field)."""
    top = 1 << f.width if any_value else f.p
    r = rng.random()
    if r < 0.6:
        return rng.randrange(top)
    if f.width == 64:
        bases = (0, f.p, 2**32, 2**63, 2**64 - 2**32, 2**64 if any_value else f.p, 2**96 % f.p)
    else:
        bases = (0, f.p, 2**15, 2**16, 2**17, 2**26, 2**30, 2**31)
    v = rng.choice(bases) + rng.randint(-64, 64)
    return min(max(v, 0), top - 1)


def _edge_operands(f: F.Field, any_value: bool):
    values = field_edge_values(f) + (field_noncanonical_values(f) if any_value else ())
    return edge_pairs(values)


async def _check(dut, items, idle, stall, seed):
    facts, port, _, f = _unit()
    tb = PipelineTB(dut, ["i_a", "i_b"], [port], facts["props"]["latency"])
    await tb.start()
    got = await tb.run(items, pattern(idle, seed=seed), pattern(stall, seed=seed + 1))
    expected = [golden(facts["name"], f, a, b) for a, b in items]
    bad = [(i, items[i], g[0], e) for i, (g, e) in enumerate(zip(got, expected)) if g[0] != e]
    assert not bad, (f"{len(bad)} of {len(items)} wrong ({f.name}); first: operands {bad[0][1]} -> "
                     f"{bad[0][2]:#x}, big-int reference {bad[0][3]:#x}")
    assert len(got) == len(items)
    dut._log.info("%s: %d operand sets (idle=%s, stall=%s) in %d cycles, %d enabled", f.name, len(items), idle,
                  stall, tb.cycles, tb.enabled_cycles)


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_edges_and_random(dut, idle, stall):
    """Every edge pair plus random operands, under each input-gap x stall combination."""
    _, _, any_value, f = _unit()
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    items = _edge_operands(f, any_value) + [(_operand(rng, f, any_value), _operand(rng, f, any_value))
                                            for _ in range(CROSSED_SETS)]
    rng.shuffle(items)
    await _check(dut, items, idle, stall, seed)


@cocotb.test()
async def test_random_10k(dut):
    """ARITH_RANDOM_SETS (10,000) uniform random operand sets with random gaps and stalls."""
    _, _, any_value, f = _unit()
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    top = 1 << f.width if any_value else f.p
    items = [(rng.randrange(top), rng.randrange(top)) for _ in range(RANDOM_SETS)]
    await _check(dut, items, "random", "random", seed)


@cocotb.test()
async def test_back_to_back(dut):
    """Edge pairs with neither gaps nor stalls: one result per cycle."""
    _, _, any_value, f = _unit()
    await _check(dut, _edge_operands(f, any_value), "none", "none", 1)
