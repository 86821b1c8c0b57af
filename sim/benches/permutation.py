"""cocotb bench for hw.permutation.PermutationCore: any hash, any rate, against the golden model.

States go in on the ``i`` stream and come out on ``o`` (amaranth.lib.stream: valid/ready, element 0 in the
low bits). Each test sends a batch back to back, with input gaps and output stalls by the idle/stall
patterns (none, random, bursty), and checks every result in order against the golden model's
permutation (hw/model/hash/) and, for the references' own known-answer vectors (``vectors`` in the
bench facts, given by the test from the references' tests), against the reference's answer. States:
the field's edge values (all 0, all 1, all p - 1, mixtures of 0, 1, 2, p - 1, p - 2 and the carry
boundaries), and uniform random ones. With neither gaps nor stalls the first result must come out
``latency`` cycles after its state went in, and the batch take no more than latency + k (N + ring) cycles
(one state every k cycles at rate 1/k). PERMUTATION_STATES (default 48) states a test.
"""

import functools
import os
import random

import cocotb

from nantucket.hw.flow.runner import bench_facts
from nantucket.hw.model import field as F
from nantucket.hw.model.hash import permutation
from nantucket.sim.benches.arith import field_edge_values
from nantucket.sim.benches.lib import PATTERNS, drive_stream, pattern, reset, start_clock

STATES = int(os.environ.get("PERMUTATION_STATES", "48"))


@functools.cache
def _facts():
    f = bench_facts()
    perm = permutation(f["props"]["hash"])
    return f, perm, F.get(perm.field.name)


def _pack(state, bits: int) -> int:
    return sum(int(v) << (i * bits) for i, v in enumerate(state))


def _unpack(word: int, width: int, bits: int) -> list[int]:
    return [(word >> (i * bits)) & ((1 << bits) - 1) for i in range(width)]


def edge_states(field, width: int, rng: random.Random, count: int) -> list[list[int]]:
    p = field.p
    edges = field_edge_values(field)
    fixed = [[0] * width, [1] * width, [p - 1] * width, [p - 2] * width, list(range(width))]
    return fixed + [[rng.choice(edges) for _ in range(width)] for _ in range(max(0, count - len(fixed)))]


async def _run(dut, states, idle_kind: str, stall_kind: str, seed: int):
    facts, perm, field = _facts()
    props = facts["props"]
    width, bits = perm.width, props["element_bits"]
    expected = [[int(v) for v in row] for row in perm.permute(states)] if states else []
    idle, stall = pattern(idle_kind, seed=seed), pattern(stall_kind, seed=seed + 1)
    start_clock(dut.clk)
    dut.i__valid.value = 0
    dut.o__ready.value = 0
    dut.i__payload.value = 0
    await reset(dut.clk, dut.rst)
    got, came_at = [], []
    limit = props["latency"] + props["passes"] * (len(states) + props["ring_latency"]) + 100
    if idle_kind != "none" or stall_kind != "none":
        limit *= 20

    def output(word, cycle):
        got.append(_unpack(word, width, bits))
        came_at.append(cycle)

    taken_at, cycle = await drive_stream(
        dut, [_pack(state, bits) for state in states], idle, stall, done=lambda: len(got) >= len(states),
        on_output=output, limit=limit,
        timeout=lambda: f"seed {seed}: {len(got)} of {len(states)} results after {limit} cycles")
    first_in, first_out = (taken_at or [None])[0], (came_at or [None])[0]
    for n, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"seed {seed}: state {n} {states[n]}: got {g}, expected {e}"
    if idle_kind == "none" and stall_kind == "none":
        assert first_out - first_in == props["latency"], (first_in, first_out, props["latency"])
        assert cycle <= props["latency"] + props["passes"] * (len(states) + props["ring_latency"]) + 2


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_edges_and_random(dut, idle, stall):
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    _, perm, field = _facts()
    states = edge_states(field, perm.width, rng, STATES // 2)
    states += [[rng.randrange(field.p) for _ in range(perm.width)] for _ in range(STATES - len(states))]
    rng.shuffle(states)
    await _run(dut, states, idle, stall, seed)


@cocotb.test()
async def test_known_answers(dut):
    """The references' own vectors (from the test's facts), each sent twice among random states."""
    facts, perm, field = _facts()
    seed = random.getrandbits(32)
    rng = random.Random(seed)
    vectors = facts.get("vectors", [])
    assert vectors, "the test gives the references' vectors"
    for inp, out in vectors:
        assert [int(v) for v in perm.permute([int(v) for v in inp])] == [int(v) for v in out]
    states = [list(map(int, v[0])) for v in vectors] * 2
    states += [[rng.randrange(field.p) for _ in range(perm.width)] for _ in range(4)]
    rng.shuffle(states)
    await _run(dut, states, "random", "random", seed)
