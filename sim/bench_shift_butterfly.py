"""cocotb bench for hw.shift_butterfly.ShiftButterfly against the golden model (hw.model.field).

Checks o_x0 = x0 + x1, o_x1 = (x0 - x1) * 2^s (mod p) for every shift amount s the build supports
(``shifts`` from the component, all of 0..191 by default), o_w_pass = i_w_pass, all leaving exactly
``latency`` enabled cycles after the inputs, under every input-gap x stall combination. Operands: every
pair of edge values with every supported shift, boundary neighbourhoods and uniform random values. Bits
of i_w above the shift amount are random (the butterfly must ignore them).
"""

import os
import random

import cocotb

from nantucket.hw.model import field as F
from nantucket.sim.benchlib import EDGE_VALUES, PATTERNS, check_butterflies
from nantucket.sim.runner import bench_facts

RANDOM_SETS = int(os.environ.get("SHIFT_BUTTERFLY_RANDOM_SETS", "5000"))


def golden(x0: int, x1: int, shift: int) -> tuple[int, int]:
    """Independent of the design: the twiddle as a field element, multiplied the ordinary way."""
    return F.add(x0, x1), F.mul(F.sub(x0, x1), F.pow_(2, shift))


def _value(rng: random.Random) -> int:
    if rng.random() < 0.6:
        return rng.randrange(F.P)
    v = rng.choice(EDGE_VALUES) + rng.randint(-32, 32)
    return min(max(v, 0), F.P - 1)


def _word(rng: random.Random, shift: int) -> int:
    return (rng.getrandbits(56) << 8) | shift


async def _check(dut, items, idle, stall, seed):
    await check_butterflies(dut, items, idle, stall, seed, bench_facts()["props"]["latency"], golden, twiddle=lambda w: w & 0xFF)


def _shifts() -> list[int]:
    return bench_facts()["props"]["shifts"]


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_every_shift_with_edges(dut, idle, stall):
    """Every supported shift with every edge pair (x0, x1) in one shuffled stream."""
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    shifts = _shifts()
    pairs = [(a, b) for a in EDGE_VALUES for b in EDGE_VALUES]
    if idle != "none" or stall != "none":
        pairs = rng.sample(pairs, 12)      # the crossed patterns need the handshake, not every pair again
    items = [(a, b, _word(rng, s), rng.getrandbits(64)) for s in shifts for a, b in pairs]
    rng.shuffle(items)
    await _check(dut, items, idle, stall, seed)


@cocotb.test()
async def test_random(dut):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    shifts = _shifts()
    items = [(_value(rng), _value(rng), _word(rng, rng.choice(shifts)), rng.getrandbits(64))
             for _ in range(RANDOM_SETS)]
    await _check(dut, items, "random", "random", seed)
