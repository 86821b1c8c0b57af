"""cocotb bench for hw.commit.TreeBuilder: every node of a tree over streamed leaf digests, against the model.

The test's facts give ``trees`` (log2 of each tree's leaves, built back to back on one builder, with
``log_leaves`` set while it is idle) and ``patterns``: [idle, stall] pattern pairs (sim/benches/lib.py)
crossed with them (input valid gaps, output ready drops). Leaves: for half the trees the scheme's sponge
over random rows (edge values mixed in) and the expected layers hw.model.commit's ``MerkleTreeMmcs.build``
of that matrix; for the others digests made of the field's edge values and random ones, the expected
layers the scheme's compression applied pair by pair (hw.model.commit.layers.compress_pairs). Checks:
2N - 1 transfers, each (layer, index) once with the model's digest, every node after its two children,
the root last. ``test_timing``: no gaps, no stalls: the first node of layer 1 comes ``latency`` cycles
after its right leaf went in, and the whole tree in no more than its compressions at the core's rate
plus one latency per layer.
"""

import functools
import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge

from nantucket.hw.flow.runner import bench_facts
from nantucket.hw.model import field as F
from nantucket.hw.model.commit.layers import compress_pairs
from nantucket.hw.model.commit.schemes import scheme
from nantucket.sim.benches.arith import field_edge_values
from nantucket.sim.benches.leaf_sponge import random_rows
from nantucket.sim.benches.lib import drive_stream, pattern, reset, start_clock

WORD = 32


@functools.cache
def _facts():
    f = bench_facts()
    s = scheme(f["props"]["scheme"])
    return f, s, F.get(s.field)


def expected_layers(log_leaves: int, from_rows: bool, rng: random.Random) -> list[np.ndarray]:
    _, s, field = _facts()
    if from_rows:
        return s.tree.build([random_rows(field, 1 << log_leaves, rng.choice([1, 8, 13, 64]), rng)])
    edges = field_edge_values(field)
    leaves = np.array([[rng.choice(edges) if rng.random() < 0.5 else rng.randrange(field.p) for _ in range(8)]
                       for _ in range(1 << log_leaves)], dtype=np.uint64)
    layers = [leaves]
    while layers[-1].shape[0] > 1:
        layers.append(compress_pairs(s.tree.compressor, layers[-1]))
    return layers


def _pack(digest) -> int:
    return sum(int(v) << (e * WORD) for e, v in enumerate(digest))


def _unpack_node(word: int, max_log: int) -> tuple[int, int, list[int]]:
    layer_bits = max_log.bit_length()
    index_bits = max(1, max_log)
    layer = word & ((1 << layer_bits) - 1)
    index = (word >> layer_bits) & ((1 << index_bits) - 1)
    digest = word >> (layer_bits + index_bits)
    return layer, index, [(digest >> (e * WORD)) & (2**WORD - 1) for e in range(8)]


async def _setup(dut):
    start_clock(dut.clk)
    dut.i__valid.value = 0
    dut.i__payload.value = 0
    dut.o__ready.value = 0
    dut.log_leaves.value = 0
    await reset(dut.clk, dut.rst)
    await FallingEdge(dut.clk)


async def _run(dut, layers, idle_kind, stall_kind, seed):
    """One tree: returns (cycle each leaf was taken, [(cycle, layer, index)] of the nodes out, cycles)."""
    facts, _, _ = _facts()
    props = facts["props"]
    log_leaves = len(layers) - 1
    leaves = layers[0].tolist()
    idle, stall = pattern(idle_kind, seed=seed), pattern(stall_kind, seed=seed + 1)
    assert dut.idle.value == 1, "the builder is idle between trees"
    dut.log_leaves.value = log_leaves
    got, out = {}, []
    total = 2 * len(leaves) - 1
    limit = 200 + 25 * (props["latency"] * (log_leaves + 1) + props["core_passes"] * total)

    def output(word, cycle):
        layer, index, digest = _unpack_node(word, props["max_log_leaves"])
        assert (layer, index) not in got, f"seed {seed}: node ({layer}, {index}) emitted twice"
        if layer > 0:
            for child in (2 * index, 2 * index + 1):
                assert (layer - 1, child) in got, f"seed {seed}: node ({layer}, {index}) before its child {child}"
        got[(layer, index)] = digest
        out.append((cycle, layer, index))

    taken_at, cycle = await drive_stream(
        dut, [_pack(leaf) for leaf in leaves], idle, stall, done=lambda: len(out) >= total, on_output=output,
        limit=limit, timeout=lambda: f"seed {seed}: {len(out)} of {total} nodes after {limit} cycles")
    dut.i__valid.value = 0
    for _ in range(4):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    assert dut.idle.value == 1 and not dut.o__valid.value, f"seed {seed}: not idle after the root"
    assert out[-1][1:] == (log_leaves, 0), f"seed {seed}: the last node out is {out[-1][1:]}, not the root"
    for layer, nodes in enumerate(layers):
        for index, digest in enumerate(nodes.tolist()):
            assert got.get((layer, index)) == digest, \
                f"seed {seed}: 2^{log_leaves} leaves, node ({layer}, {index}): got {got.get((layer, index))}, expected {digest}"
    return taken_at, out, cycle


@cocotb.test()
async def test_trees(dut):
    """Every tree of the facts crossed with every pattern pair, back to back on one builder."""
    facts, _, _ = _facts()
    await _setup(dut)
    for n, (idle_kind, stall_kind) in enumerate(facts["patterns"]):
        for m, log_leaves in enumerate(facts["trees"]):
            seed = random.getrandbits(32)
            layers = expected_layers(log_leaves, (n + m) % 2 == 0, random.Random(seed))
            dut._log.info(f"2^{log_leaves} leaves, idle {idle_kind}, stall {stall_kind}, seed {seed}")
            await _run(dut, layers, idle_kind, stall_kind, seed)


@cocotb.test()
async def test_timing(dut):
    """No gaps, no stalls: layer 1's first node latency, and the whole tree within its bound."""
    facts, _, _ = _facts()
    props = facts["props"]
    await _setup(dut)
    log_leaves = max(facts["trees"])
    seed = random.getrandbits(32)
    taken_at, out, _ = await _run(dut, expected_layers(log_leaves, False, random.Random(seed)), "none", "none", seed)
    first = next(c for c, layer, index in out if (layer, index) == (1, 0))
    assert first - taken_at[1] == props["latency"], (taken_at[1], first)
    n = 1 << log_leaves
    bound = props["core_passes"] * (n - 1) + props["latency"] * log_leaves + 2 * n + 8
    dut._log.info(f"2^{log_leaves} leaves: {out[-1][0] - taken_at[0]} cycles (bound {bound})")
    assert out[-1][0] - taken_at[0] <= bound
