# amaranth: UnusedElaboratable=no
"""The commitment's stream blocks (hw/commit/): LeafSponge and TreeBuilder, against the golden model.

Benches (cocotb on Verilator): sim/benches/leaf_sponge.py and sim/benches/tree_builder.py, on cores folded
to one round unit (rate 1/R: the smallest build). ``make test`` runs one case: the sponge on KoalaBear-16
with several leaf lengths under random stalls. The rest (the small tree, both fields, both widths, every
leaf length, all pattern pairs, trees up to 2^7, faster cores) is ``full``. Fast part: argument checks,
published facts, and the models against hw.model.commit's MerkleTreeMmcs.
"""

import numpy as np
import pytest

from nantucket.hw.commit import SCHEMES, LeafSponge, TreeBuilder
from nantucket.hw.flow.runner import run_bench
from nantucket.hw.model.commit.schemes import scheme
from nantucket.hw.permutation.spec import spec_of
from nantucket.sim.benches.lib import PATTERNS

SPONGE_BENCH = "nantucket.sim.benches.leaf_sponge"
TREE_BENCH = "nantucket.sim.benches.tree_builder"
SMALL = "plonky3-koalabear-16"
ALL_PATTERNS = [[i, s] for i in PATTERNS for s in PATTERNS]
QUICK_PATTERNS = [["none", "none"], ["random", "random"], ["bursty", "random"]]


def _slowest(hash_name: str) -> str:
    return f"1/{len(spec_of(hash_name).rounds)}"


def _leaf_lengths(rate: int) -> list[int]:
    """1, rate - 1, rate, rate + 1, an odd length of several chunks, and 64 columns."""
    return sorted({1, rate - 1, rate, rate + 1, 2 * rate + 5, 64})


def _sponge(name: str, group: int, runs, patterns, *, core_rate=None, max_leaf_len: int = 64,
            timing_leaf_len: int = 64, timing_groups: int = 2):
    core_rate = core_rate or _slowest(scheme(name).permutations[0])
    dut = LeafSponge(name, group, max_leaf_len=max_leaf_len, core_rate=core_rate)
    run_bench(dut, name="leaf_sponge",
              params={"scheme": name, "group": group, "max_leaf_len": max_leaf_len, "core_rate": core_rate},
              test_module=SPONGE_BENCH, params_complete=True,
              facts={"runs": runs, "patterns": patterns, "timing_leaf_len": timing_leaf_len,
                     "timing_groups": timing_groups})


def _tree(name: str, max_log: int, trees, patterns, *, core_rate=None):
    core_rate = core_rate or _slowest(scheme(name).permutations[1])
    dut = TreeBuilder(name, max_log_leaves=max_log, core_rate=core_rate)
    run_bench(dut, name="tree_builder", params={"scheme": name, "max_log_leaves": max_log, "core_rate": core_rate},
              test_module=TREE_BENCH, facts={"trees": trees, "patterns": patterns}, params_complete=True)


# -- the benches ------------------------------------------------------------------------------------

def test_sponge_small():
    """KoalaBear-16, one round unit, G = 32 (its full-rate group is 31): lengths 1, 7, 8, 9, 21, 64;
    33 leaves make a group of 32 and one of 1."""
    runs = [[1, 3], [7, 2], [8, 33], [9, 2], [21, 3], [64, 3]]
    _sponge(SMALL, 32, runs, QUICK_PATTERNS, timing_groups=1)


@pytest.mark.full
@pytest.mark.parametrize("name", SCHEMES)
def test_sponge_every_length(name):
    rate = scheme(name).tree.hasher.rate
    runs = [[n, 5] for n in _leaf_lengths(rate)] + [[64, 2], [rate + 1, 41]]
    _sponge(name, 40, runs, ALL_PATTERNS)


@pytest.mark.full
def test_sponge_small_group_and_folded_core():
    """G below the full-rate group (the core waits on the loop), and a core at 1/4."""
    _sponge(SMALL, 3, [[64, 7], [9, 4], [1, 5]], QUICK_PATTERNS, timing_groups=2)
    _sponge(SMALL, 240, [[64, 2], [17, 250]], QUICK_PATTERNS, core_rate="1/4", timing_groups=1)


@pytest.mark.full
def test_tree_small():
    """KoalaBear-16, one round unit: trees of 2, 4, 8, 32 leaves (and a lone leaf)."""
    _tree(SMALL, 5, [1, 2, 3, 5, 0], QUICK_PATTERNS)


@pytest.mark.full
@pytest.mark.parametrize("name", SCHEMES)
def test_tree_every_size(name):
    _tree(name, 7, [1, 2, 3, 4, 5, 6, 7, 0], ALL_PATTERNS)


@pytest.mark.full
def test_tree_folded_core():
    _tree("plonky3-babybear-16", 8, [8, 1, 4], QUICK_PATTERNS, core_rate="1/4")


# -- facts, arguments, models -------------------------------------------------------------------------

def test_bad_arguments():
    for bad in ("plonky3-goldilocks", "plonky2", "sha", 3):
        with pytest.raises(ValueError, match="^scheme"):
            LeafSponge(bad, 8)
        with pytest.raises(ValueError, match="^scheme"):
            TreeBuilder(bad)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="^group"):
            LeafSponge(SMALL, bad)
        with pytest.raises(ValueError, match="^max_leaf_len"):
            LeafSponge(SMALL, 8, max_leaf_len=bad)
    for bad in (0, 33, "4"):
        with pytest.raises(ValueError, match="^max_log_leaves"):
            TreeBuilder(SMALL, max_log_leaves=bad)
    with pytest.raises(ValueError, match="^depth"):
        TreeBuilder(SMALL, depth=1)
    with pytest.raises(ValueError, match="^rate"):
        LeafSponge(SMALL, 8, core_rate="2")
    with pytest.raises(TypeError):
        LeafSponge(SMALL, 8, colour=1)
    with pytest.raises(TypeError):
        TreeBuilder(SMALL, colour=1)


@pytest.mark.parametrize("name", SCHEMES)
def test_facts(name):
    s = scheme(name)
    hasher = s.tree.hasher
    sponge = LeafSponge(name, 64, core_rate="1/4")
    assert (sponge.state_width, sponge.rate, sponge.digest) == (hasher.width, hasher.rate, 8)
    assert sponge.chunks(64) == -(-64 // hasher.rate)
    assert sponge.latency >= sponge.core_latency
    assert sponge.permutations_per_cycle == min(0.25, 64 / sponge.loop_latency)
    assert sponge.full_rate_group * 4 >= sponge.loop_latency
    big = LeafSponge(name, sponge.full_rate_group, core_rate="1/4")
    assert big.permutations_per_cycle == 0.25
    tree = TreeBuilder(name, max_log_leaves=10, core_rate="1/2")
    assert tree.compressions_per_cycle == 0.5 and tree.hash == s.permutations[1]


@pytest.mark.parametrize("name", SCHEMES)
def test_models_match_the_mmcs(name):
    """Sponge model then tree model == MerkleTreeMmcs.build on one matrix (independent of the blocks)."""
    rng = np.random.default_rng(7)
    p = int(scheme(name).tree.hasher.perm.field.p)
    for log_n, cols in ((1, 64), (3, 9), (4, 1)):
        rows = rng.integers(0, p, size=(1 << log_n, cols), dtype=np.uint64)
        expected = scheme(name).tree.build([rows])
        leaves = LeafSponge(name, 4).model(rows)
        got = TreeBuilder(name, max_log_leaves=4).model(leaves, log_n)
        assert len(got) == len(expected) == log_n + 1
        for g, e in zip(got, expected):
            assert np.array_equal(g, e)


def test_catalog_entries():
    """`make rtl/synth COMPONENT=leaf_sponge|tree_builder` reach these blocks; unknown parameters refused."""
    from nantucket.hw.flow import catalog
    sponge = catalog.build("leaf_sponge", scheme="plonky3-babybear-24", group=8)
    assert isinstance(sponge, LeafSponge) and sponge.state_width == 24 and sponge.group == 8
    tree = catalog.build("tree_builder", max_log_leaves=6, core_rate="1/2")
    assert isinstance(tree, TreeBuilder) and tree.max_log_leaves == 6 and tree.core_passes == 2
    for name in ("leaf_sponge", "tree_builder"):
        with pytest.raises(TypeError):
            catalog.build(name, colour=1)
