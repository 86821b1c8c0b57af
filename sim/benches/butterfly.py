"""cocotb bench for hw.butterfly.Butterfly, with either multiplier and over any field, against Python big-int
arithmetic written here.

Checks o_x0 = x0 + x1, o_x1 = (x0 - x1) * w (mod p) and that o_w_pass is i_w_pass unchanged, all three
leaving together exactly ``latency`` enabled cycles after the inputs, under every input-gap x stall
combination. The field comes from the bench params (default Goldilocks). With the general multiplier w is
any field element: operands are all triples of edge values (729 in Goldilocks), boundary neighbourhoods and
uniform random values; in a 31-bit field the twiddle word is the Montgomery form w * 2^32 mod p (computed
here), and random words (any 31-bit value) stand for w = word * 2^-32 mod p. With the shift multiplier (the
bench facts carry its ``shifts``) w is 2^s for the shift amount s in i_w's low ``twiddle_bits`` bits (8 in
Goldilocks, 1 in a 31-bit field whose only amount is 0; the bits above are random: the butterfly must
ignore them), and every supported s meets every edge pair. ``test_random`` sends BUTTERFLY_RANDOM_SETS
(default 10,000 general, 5,000 shift) random operand sets.
"""

import functools
import os
import random

import cocotb

from nantucket.hw.model import field as F
from nantucket.sim.benches.arith import field_edge_values
from nantucket.sim.benches.lib import PATTERNS, check_butterflies
from nantucket.hw.flow.runner import bench_facts

RANDOM_SETS = int(os.environ.get("BUTTERFLY_RANDOM_SETS", "0")) or None
CROSSED_SETS = int(os.environ.get("BUTTERFLY_CROSSED_SETS", "500"))
R = 2**32


@functools.cache
def _shifts() -> tuple[int, ...] | None:
    """The shift multiplier's amounts, or None for the general multiplier (read once per simulation)."""
    shifts = bench_facts().get("shifts")
    return None if shifts is None else tuple(shifts)


@functools.cache
def _field() -> F.Field:
    return F.get(bench_facts()["params"].get("field", F.DEFAULT_FIELD.name))


def _montgomery() -> bool:
    """A 31-bit field's general multiplier reads its twiddle in Montgomery form."""
    return _shifts() is None and _field().width < 64


def _twiddle_bits() -> int:
    return bench_facts()["props"]["twiddle_bits"]


def twiddle_value(word: int) -> int:
    """The field element the twiddle word stands for, by big-int arithmetic: 2^s for a shift amount s,
    word * R^-1 mod p in Montgomery form, else the word itself."""
    p = _field().p
    if _shifts() is not None:
        return pow(2, word & ((1 << _twiddle_bits()) - 1), p)
    if _montgomery():
        return word * pow(R, -1, p) % p
    return word


def word_of(value: int) -> int:
    """The twiddle word for the field element ``value`` (general multiplier)."""
    return value * R % _field().p if _montgomery() else value


def golden(x0: int, x1: int, w: int) -> tuple[int, int]:
    """Independent of the design: the twiddle as a field element, multiplied plainly."""
    p = _field().p
    return (x0 + x1) % p, (x0 - x1) * w % p


def _value(rng: random.Random) -> int:
    p = _field().p
    if rng.random() < 0.7:
        return rng.randrange(p)
    v = rng.choice(field_edge_values(_field())) + rng.randint(-32, 32)
    return min(max(v, 0), p - 1)


def _shift_word(rng: random.Random, s: int) -> int:
    bits = _twiddle_bits()
    return (rng.getrandbits(_field().width - bits) << bits) | s


def _twiddle(rng: random.Random) -> int:
    shifts = _shifts()
    if shifts is not None:
        return _shift_word(rng, rng.choice(shifts))
    if _montgomery() and rng.random() < 0.3:
        return rng.getrandbits(_field().width)           # any word the port can carry, even >= p
    return word_of(_value(rng))


def _pass(rng: random.Random) -> int:
    return rng.getrandbits(bench_facts()["props"]["pass_width"])


async def _check(dut, items, idle, stall, seed):
    await check_butterflies(dut, items, idle, stall, seed, bench_facts()["props"]["latency"], golden,
                            twiddle=twiddle_value)


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_edges_and_random(dut, idle, stall):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    shifts = _shifts()
    edges = field_edge_values(_field())
    if shifts is None:
        triples = [(x0, x1, w) for x0 in edges for x1 in edges for w in edges]
        if len(triples) > 1000 and (idle != "none" or stall != "none"):
            triples = rng.sample(triples, 1000)  # the crossed patterns need the handshake, not every triple again
        items = [(x0, x1, word_of(w), _pass(rng)) for x0, x1, w in triples]
    else:
        pairs = [(a, b) for a in edges for b in edges]
        if idle != "none" or stall != "none":
            pairs = rng.sample(pairs, 12)      # the crossed patterns need the handshake, not every pair again
        items = [(a, b, _shift_word(rng, s), _pass(rng)) for s in shifts for a, b in pairs]
    items += [(_value(rng), _value(rng), _twiddle(rng), _pass(rng)) for _ in range(CROSSED_SETS)]
    rng.shuffle(items)
    await _check(dut, items, idle, stall, seed)


@cocotb.test()
async def test_random(dut):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    count = RANDOM_SETS or (10_000 if _shifts() is None else 5_000)
    items = [(_value(rng), _value(rng), _twiddle(rng), _pass(rng)) for _ in range(count)]
    await _check(dut, items, "random", "random", seed)
