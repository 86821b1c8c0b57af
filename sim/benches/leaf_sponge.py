"""cocotb bench for hw.commit.LeafSponge: interleaved leaves through the sponge, against the golden model.

The test's facts give ``runs``: [leaf_len, leaves] pairs, each hashed in groups of the build's G (the last
group shorter when G does not divide the leaves), chunk-major inside a group, with ``leaf_len`` set while
the sponge is idle; and ``patterns``: [idle, stall] pattern pairs (sim/benches/lib.py) the runs are crossed
with (input valid gaps, output ready drops). Rows mix the field's edge values with uniform random ones; the
unused elements of a partial final chunk carry random garbage (the sponge must ignore them). Every digest,
in leaf order, is checked against hw.model.commit's PaddingFreeSponge of the scheme. ``test_timing``: no
gaps, no stalls: the first digest comes ``latency`` cycles after its leaf's last chunk went in, and a run
of leaves of several chunks takes no more than its permutations at the published sustained rate plus the
latency and one group's worth of start-up.
"""

import functools
import math
import random

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge

from nantucket.hw.flow.runner import bench_facts
from nantucket.hw.model import field as F
from nantucket.hw.model.commit.schemes import scheme
from nantucket.sim.benches.arith import field_edge_values
from nantucket.sim.benches.lib import drive_stream, pattern, reset, start_clock

WORD = 32


@functools.cache
def _facts():
    f = bench_facts()
    s = scheme(f["props"]["scheme"])
    return f, s, F.get(s.field)


def random_rows(field, leaves: int, leaf_len: int, rng: random.Random) -> np.ndarray:
    """Rows of edge values and uniform random ones, a few rows all one edge value."""
    edges = field_edge_values(field)
    rows = [[rng.choice(edges) if rng.random() < 0.4 else rng.randrange(field.p) for _ in range(leaf_len)]
            for _ in range(leaves)]
    for n, value in enumerate((0, 1, field.p - 1)):
        if n < leaves and rng.random() < 0.5:
            rows[n] = [value] * leaf_len
    return np.array(rows, dtype=np.uint64).reshape(leaves, leaf_len)


def beats(rows: np.ndarray, rate: int, group: int, rng: random.Random) -> list[tuple[int, int]]:
    """(payload, leaf) per transfer: groups of ``group`` leaves, chunk-major, the group's last leaf marked."""
    leaves, leaf_len = rows.shape
    chunks = -(-leaf_len // rate)
    out = []
    for start in range(0, leaves, group):
        members = range(start, min(start + group, leaves))
        for c in range(chunks):
            for leaf in members:
                chunk = [int(v) for v in rows[leaf, c * rate:(c + 1) * rate]]
                chunk += [rng.getrandbits(WORD) for _ in range(rate - len(chunk))]     # ignored by the sponge
                word = sum(v << (e * WORD) for e, v in enumerate(chunk))
                out.append((word | (int(leaf == members[-1]) << (rate * WORD)), leaf))
    return out


async def _setup(dut):
    start_clock(dut.clk)
    dut.i__valid.value = 0
    dut.i__payload.value = 0
    dut.o__ready.value = 0
    dut.leaf_len.value = 1
    await reset(dut.clk, dut.rst)
    await FallingEdge(dut.clk)


async def _run(dut, rows, idle_kind, stall_kind, seed):
    """One run: returns (digests, cycle each beat was taken, cycle each digest came, cycles)."""
    facts, s, _ = _facts()
    props = facts["props"]
    rng = random.Random(seed)
    stream = beats(rows, props["rate"], props["group"], rng)
    idle, stall = pattern(idle_kind, seed=seed), pattern(stall_kind, seed=seed + 1)
    assert dut.idle.value == 1, "the sponge is idle between runs"
    dut.leaf_len.value = rows.shape[1]
    got, came_at = [], []
    chunks = -(-rows.shape[1] // props["rate"])
    limit = 200 + (props["latency"] + props["core_passes"] * (len(stream) + chunks * props["group"])) * 25

    def output(word, cycle):
        got.append([(word >> (e * WORD)) & (2**WORD - 1) for e in range(props["digest"])])
        came_at.append(cycle)

    taken_at, cycle = await drive_stream(
        dut, [word for word, _ in stream], idle, stall, done=lambda: len(got) >= rows.shape[0],
        on_output=output, limit=limit,
        timeout=lambda: f"seed {seed}: {len(got)} of {rows.shape[0]} digests after {limit} cycles")
    dut.i__valid.value = 0
    for _ in range(4):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    assert dut.idle.value == 1, f"seed {seed}: the sponge is not idle after its last digest"
    expected = s.tree.hasher.hash_rows(rows)
    for n, (g, e) in enumerate(zip(got, expected.tolist())):
        assert g == e, f"seed {seed}: leaf_len {rows.shape[1]}, leaf {n} {rows[n].tolist()}: got {g}, expected {e}"
    return stream, taken_at, came_at, cycle


@cocotb.test()
async def test_runs(dut):
    """Every run of the facts crossed with every pattern pair, back to back on one sponge."""
    facts, _, field = _facts()
    await _setup(dut)
    for idle_kind, stall_kind in facts["patterns"]:
        for leaf_len, leaves in facts["runs"]:
            seed = random.getrandbits(32)
            rows = random_rows(field, leaves, leaf_len, random.Random(seed))
            dut._log.info(f"leaf_len {leaf_len}, {leaves} leaves, idle {idle_kind}, stall {stall_kind}, seed {seed}")
            await _run(dut, rows, idle_kind, stall_kind, seed)


@cocotb.test()
async def test_timing(dut):
    """No gaps, no stalls: the first digest's latency, and the sustained permutation rate."""
    facts, _, field = _facts()
    props = facts["props"]
    await _setup(dut)
    leaf_len = facts["timing_leaf_len"]
    chunks = math.ceil(leaf_len / props["rate"])
    leaves = facts["timing_groups"] * props["group"]
    seed = random.getrandbits(32)
    stream, taken_at, came_at, cycles = await _run(dut, random_rows(field, leaves, leaf_len, random.Random(seed)),
                                                   "none", "none", seed)
    last_of_leaf0 = max(n for n, (_, leaf) in enumerate(stream) if leaf == 0)
    assert came_at[0] - taken_at[last_of_leaf0] == props["latency"], (taken_at[last_of_leaf0], came_at[0])
    perms = leaves * chunks
    bound = perms / props["permutations_per_cycle"] + props["latency"] + props["group"] * props["core_passes"] + 8
    dut._log.info(f"{perms} permutations in {came_at[-1] - taken_at[0]} cycles (bound {bound:.0f}), "
                  f"published {props['permutations_per_cycle']:.4f} per cycle")
    assert came_at[-1] - taken_at[0] <= bound
