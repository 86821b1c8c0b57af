"""cocotb bench for hw.butterfly.Butterfly against the golden model (hw.model.field).

Checks o_x0 = x0 + x1, o_x1 = (x0 - x1) * w (mod p) and that o_w_pass is i_w_pass unchanged, all three
leaving together exactly ``latency`` enabled cycles after the inputs, under every input-gap x stall
combination. Operands: all 729 triples of edge values (x0, x1, w), boundary neighbourhoods and uniform
random values; ``test_random_10k`` sends 10,000 random operand sets.
"""

import os
import random

import cocotb

from nantucket.hw.model import field as F
from nantucket.sim.benchlib import EDGE_VALUES, PATTERNS, check_butterflies
from nantucket.sim.runner import bench_facts

RANDOM_SETS = int(os.environ.get("BUTTERFLY_RANDOM_SETS", "10000"))
CROSSED_SETS = int(os.environ.get("BUTTERFLY_CROSSED_SETS", "500"))


def golden(x0: int, x1: int, w: int) -> tuple[int, int]:
    return F.add(x0, x1), F.mul(F.sub(x0, x1), w)


def _value(rng: random.Random) -> int:
    if rng.random() < 0.7:
        return rng.randrange(F.P)
    v = rng.choice(EDGE_VALUES) + rng.randint(-32, 32)
    return min(max(v, 0), F.P - 1)


async def _check(dut, items, idle, stall, seed):
    await check_butterflies(dut, items, idle, stall, seed, bench_facts()["props"]["latency"], golden)


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_edges_and_random(dut, idle, stall):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    items = [(x0, x1, w, rng.getrandbits(64)) for x0 in EDGE_VALUES for x1 in EDGE_VALUES for w in EDGE_VALUES]
    items += [(_value(rng), _value(rng), _value(rng), rng.getrandbits(64)) for _ in range(CROSSED_SETS)]
    rng.shuffle(items)
    await _check(dut, items, idle, stall, seed)


@cocotb.test()
async def test_random_10k(dut):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    items = [(rng.randrange(F.P), rng.randrange(F.P), rng.randrange(F.P), rng.getrandbits(64))
             for _ in range(RANDOM_SETS)]
    await _check(dut, items, "random", "random", seed)
