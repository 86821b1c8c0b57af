"""The commitment operation's model side: its ops row, its run arguments and checks, its HBM placement."""

import numpy as np
import pytest

from nantucket.hw.model import field as F
from nantucket.hw.model import ops
from nantucket.hw.model import run as R
from nantucket.hw.model.commit import commit as model_commit
from nantucket.hw.model.commit.schemes import scheme
from nantucket.hw.model.commit.sponge import PaddingFreeSponge
from nantucket.hw.model.commit_layout import BLOCK_LOG, RUN_ROWS, CommitLayout, bit_reverse
from nantucket.hw.model.hash import permutation
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run

SCHEMES = {"plonky3-koalabear-16": ("koalabear", "poseidon2-koalabear-16", 16, 8),
           "plonky3-babybear-24": ("babybear", "poseidon2-babybear-24", 24, 16)}


def _build(name, log_core=3):
    return BuildParams(lanes=8, log_core=log_core, channels=2, field=SCHEMES[name][0], commit=name)


def _tree_by_hand(name, matrix):
    """Every layer written out from the permutations: leaf L absorbs natural row rev(L) rate elements at a
    time (overwrite mode, no padding), squeezes 8; a node is the first 8 of perm(left || right || 0)."""
    field, leaf_perm, width, rate = SCHEMES[name]
    leaf, node = permutation(leaf_perm), permutation(f"poseidon2-{field}-16")
    n = matrix.shape[0].bit_length() - 1
    digests = []
    for L in range(matrix.shape[0]):
        row, state = matrix[bit_reverse(L, n)], np.zeros(width, dtype=np.uint64)
        for i in range(0, len(row), rate):
            chunk = row[i:i + rate]
            state[:len(chunk)] = chunk
            state = np.asarray(leaf.permute(state[None])[0], dtype=np.uint64)
        digests.append(state[:8].copy())
    layers = [np.array(digests)]
    while len(layers[-1]) > 1:
        prev = layers[-1]
        pairs = np.concatenate([prev[0::2], prev[1::2], np.zeros((len(prev) // 2, 0), dtype=np.uint64)], axis=1)
        layers.append(np.asarray(node.permute(pairs), dtype=np.uint64)[:, :8])
    return layers


@pytest.mark.parametrize("name", sorted(SCHEMES))
@pytest.mark.parametrize("log_rows,columns", [(1, 1), (2, 8), (3, 9), (4, 17), (5, 3)])
def test_the_ops_model_is_the_tree_over_the_bit_reversed_rows(name, log_rows, columns):
    """ops.commit_run against the permutations written out by hand and hw.model.commit's MerkleTreeMmcs
    (commit over the rows bit-reversed): random values with the edges 0 and p - 1."""
    params, p = _build(name), F.get(SCHEMES[name][0]).p
    rng = np.random.default_rng(log_rows * 100 + columns)
    matrix = rng.integers(0, p, size=(1 << log_rows, columns), dtype=np.uint64)
    matrix[0, 0], matrix[-1, -1] = 0, p - 1
    run = Run.commit(log_rows, columns, name)
    layers = ops.operation(ops.OP_COMMIT).model(params, run, matrix)
    by_hand = _tree_by_hand(name, matrix)
    assert len(layers) == log_rows + 1 and all(np.array_equal(a, b) for a, b in zip(layers, by_hand))
    reversed_rows = matrix[[bit_reverse(r, log_rows) for r in range(1 << log_rows)]]
    assert np.array_equal(layers[-1][0], model_commit([reversed_rows], name).root.reshape(-1))
    assert isinstance(scheme(name).tree.hasher, PaddingFreeSponge)


def test_the_commit_op_is_carried_by_31_bit_plonky3_builds_only():
    assert ops.carried_codes(_build("plonky3-koalabear-16")) == (ops.OP_NTT, ops.OP_COMMIT)
    assert ops.ops_mask(_build("plonky3-koalabear-16")) == 0b11
    assert ops.carried_codes(BuildParams(lanes=4, log_core=3, channels=2)) == (ops.OP_NTT,)
    assert ops.carried_codes(BuildParams(lanes=4, log_core=3, channels=2, commit="plonky3-goldilocks")) == (0,)


def test_run_commit_checks():
    """Run.commit's refusals, each its STATUS bit; NTT arguments on a commit run and commit arguments on an
    NTT run are foreign (bad_op); a build without the scheme refuses the op."""
    params = _build("plonky3-koalabear-16")
    assert Run.commit(3, 4, "plonky3-koalabear-16").check(params) == 0
    assert Run.commit(params.max_log_n, 1, "plonky3-koalabear-16").check(params) == 0
    assert Run.commit(0, 4, "plonky3-koalabear-16").check(params) == R.STATUS_BAD_SIZE
    assert Run.commit(params.max_log_n + 1, 1, "plonky3-koalabear-16").check(params) & R.STATUS_BAD_SIZE
    assert Run.commit(3, 0, "plonky3-koalabear-16").check(params) == R.STATUS_BAD_BATCH
    too_wide = (1 << (params.max_log_n - 3)) + 1
    assert Run.commit(3, too_wide, "plonky3-koalabear-16").check(params) == R.STATUS_BAD_BATCH
    assert Run.commit(3, too_wide - 1, "plonky3-koalabear-16").check(params) == 0
    assert Run.commit(3, 4, "plonky3-koalabear-24").check(params) == R.STATUS_BAD_OP
    # a build without the engine checks the start as an NTT's (as its control slave does): log_n 0 too
    assert (Run.commit(3, 4, "plonky3-koalabear-16").check(BuildParams(lanes=4, log_core=3, channels=2))
            == R.STATUS_BAD_OP | R.STATUS_BAD_SIZE)
    from dataclasses import replace
    assert replace(Run.commit(3, 4, "plonky3-koalabear-16"), flags=1).check(params) == R.STATUS_BAD_OP
    assert replace(Run.ntt(params.min_log_n), commit_columns=2).check(params) == R.STATUS_BAD_OP
    assert Run.ntt(params.min_log_n).check(params) == 0
    with pytest.raises(ValueError, match="^scheme: no scheme 'plonky9'"):
        Run.commit(3, 4, "plonky9")
    with pytest.raises(TypeError):
        Run.commit(3, 4, "plonky3-koalabear-16", cap=1)


def test_run_bits_of_a_commit_run_hold_its_fields():
    from nantucket.hw.run import run_bits, run_fields, run_layout
    params = _build("plonky3-koalabear-16", log_core=6)
    run = Run.commit(5, 7, "plonky3-koalabear-16")
    got = run_fields(params, run_bits(params, run))
    assert (got["commit_log_rows"], got["commit_columns"], got["op"]) == (5, 7, 1)
    ntt_only = {name for name, _ in run_layout(BuildParams(lanes=4, log_core=3, channels=2))}
    assert not any(name.startswith("commit") for name in ntt_only)


@pytest.mark.parametrize("log_rows", [1, 3, 6, 7, 12, 13, 14])
def test_the_read_plan_covers_every_row_once_in_whole_subtrees(log_rows):
    """Every block's runs: each natural row read exactly once over all blocks; a block's leaves are whole
    aligned subtrees of min(2^n, 64) leaves (so its layers up to 6 complete on the card); from 2^6 rows on
    every burst is a full one and the rows are read at full efficiency."""
    lay = CommitLayout(_build("plonky3-koalabear-16", log_core=8), log_rows, 5)
    seen = []
    for y in range(lay.blocks()):
        runs = lay.block_runs(y)
        seen += [r + i for r, count in runs for i in range(count)]
        leaves = lay.block_leaves(y)
        sub = min(lay.rows, RUN_ROWS)
        assert all(set(range(s, s + sub)) <= set(leaves.tolist()) for s in leaves[::sub])
        assert len(leaves) == min(lay.rows, 1 << BLOCK_LOG)
    assert sorted(seen) == list(range(lay.rows))
    cost = lay.read_cost()
    if log_rows >= 6:
        assert cost["row_beats"] == cost["useful_beats"] == 5 * lay.rows * 4 // 32 and cost["row_burst_beats"] == 8


def test_the_tree_placement_round_trips_and_packs_every_layer():
    params = _build("plonky3-babybear-24")
    lay = CommitLayout(params, 4, 3)
    matrix = np.arange(48, dtype=np.uint64).reshape(16, 3)
    layers = ops.commit_run(params, Run.commit(4, 3, "plonky3-babybear-24"), matrix)
    image = lay.tree_image(layers)
    assert image.nbytes == lay.tree_bytes == 31 * 32 and lay.root_offset == 30 * 32
    assert all(np.array_equal(a, b) for a, b in zip(lay.layers_of_image(image), layers))
    assert lay.node_offset(1, 3) == (16 + 3) * 32
    rows = lay.rows_image(matrix)
    assert rows.reshape(3, 16)[2, 5] == matrix[5, 2] and rows.nbytes == lay.rows_bytes
    with pytest.raises(ValueError, match="^params: the commitment engine serves 31-bit"):
        CommitLayout(BuildParams(lanes=4, log_core=3, channels=2), 4, 3)
    with pytest.raises(ValueError, match="^log_rows"):
        CommitLayout(params, 0, 3)
