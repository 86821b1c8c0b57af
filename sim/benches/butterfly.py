"""cocotb bench for hw.butterfly.Butterfly, with either multiplier, against the golden model (hw.model.field).

Checks o_x0 = x0 + x1, o_x1 = (x0 - x1) * w (mod p) and that o_w_pass is i_w_pass unchanged, all three
leaving together exactly ``latency`` enabled cycles after the inputs, under every input-gap x stall
combination. With the general multiplier w is any field element: operands are all 729 triples of edge
values, boundary neighbourhoods and uniform random values. With the shift multiplier (the bench facts
carry its ``shifts``) w is 2^s for the shift amount s in i_w's low 8 bits (the bits above are random:
the butterfly must ignore them), and every supported s meets every edge pair. ``test_random`` sends
10,000 (general) or 5,000 (shift) random operand sets.
"""

import functools
import os
import random

import cocotb

from nantucket.hw.model import field as F
from nantucket.sim.benches.lib import EDGE_VALUES, PATTERNS, check_butterflies
from nantucket.hw.flow.runner import bench_facts

RANDOM_SETS = int(os.environ.get("BUTTERFLY_RANDOM_SETS", "0")) or None
CROSSED_SETS = int(os.environ.get("BUTTERFLY_CROSSED_SETS", "500"))


@functools.cache
def _shifts() -> tuple[int, ...] | None:
    """The shift multiplier's amounts, or None for the general multiplier (read once per simulation)."""
    shifts = bench_facts().get("shifts")
    return None if shifts is None else tuple(shifts)


def golden(x0: int, x1: int, w: int) -> tuple[int, int]:
    """Independent of the design: the twiddle as a field element (2^s for a shift), multiplied plainly."""
    if _shifts() is not None:
        w = F.pow_(2, w & 0xFF)
    return F.add(x0, x1), F.mul(F.sub(x0, x1), w)


def _value(rng: random.Random) -> int:
    if rng.random() < 0.7:
        return rng.randrange(F.P)
    v = rng.choice(EDGE_VALUES) + rng.randint(-32, 32)
    return min(max(v, 0), F.P - 1)


def _twiddle(rng: random.Random) -> int:
    shifts = _shifts()
    if shifts is None:
        return _value(rng)
    return (rng.getrandbits(56) << 8) | rng.choice(shifts)


async def _check(dut, items, idle, stall, seed):
    await check_butterflies(dut, items, idle, stall, seed, bench_facts()["props"]["latency"], golden)


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_edges_and_random(dut, idle, stall):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    shifts = _shifts()
    if shifts is None:
        items = [(x0, x1, w, rng.getrandbits(64)) for x0 in EDGE_VALUES for x1 in EDGE_VALUES for w in EDGE_VALUES]
    else:
        pairs = [(a, b) for a in EDGE_VALUES for b in EDGE_VALUES]
        if idle != "none" or stall != "none":
            pairs = rng.sample(pairs, 12)      # the crossed patterns need the handshake, not every pair again
        items = [(a, b, (rng.getrandbits(56) << 8) | s, rng.getrandbits(64)) for s in shifts for a, b in pairs]
    items += [(_value(rng), _value(rng), _twiddle(rng), rng.getrandbits(64)) for _ in range(CROSSED_SETS)]
    rng.shuffle(items)
    await _check(dut, items, idle, stall, seed)


@cocotb.test()
async def test_random(dut):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    count = RANDOM_SETS or (10_000 if _shifts() is None else 5_000)
    items = [(_value(rng), _value(rng), _twiddle(rng), rng.getrandbits(64)) for _ in range(count)]
    await _check(dut, items, "random", "random", seed)
