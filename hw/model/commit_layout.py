"""Where the commitment operation's rows, every tree layer and the root live in HBM: :class:`CommitLayout`.

The commitment hashes the rows of the LDE the NTT wrote. The NTT writes *columns*: column c of a
2^n-row matrix is one transform of the batch, its 2^n points contiguous in natural order. Plonky3 commits
the rows in bit-reversed order: leaf L is natural row rev_n(L). Reading leaves in leaf order straight from
columns would use one point of every beat (1/8 of the bandwidth in a 31-bit field), so the reader blocks
the bit reversal (docs/commit-engine.md): one burst of :data:`BURST_BEATS` beats of a column is
:data:`RUN_ROWS` = 64 consecutive natural rows, and with L = (x, y, z) (x its top 6 bits, z its low 6,
y the n - 12 between)

    rev_n(L) = rev_6(z) * 2^(n-6) + rev_(n-12)(y) * 64 + rev_6(x),

so the 64 x 64 leaves of one ``y`` (a *block*) are 64 runs of 64 consecutive natural rows, each a full
burst of every column, and they hold 64 whole subtrees of 64 leaves (x fixed, z = 0..63). The engine
hashes a block, completes its 64 subtrees through layer 6 on the card, and writes every node; a second,
small pass reads layer 6 (2^(n-6) digests, sequential) and builds the top layers. Trees of at most
2^12 leaves are one block (every row read in natural order, the whole tree on the card).

Placement (byte offsets; the kernel adds them to the channel buffers' bases):

- the rows: column-major as the NTT writes them, column c at ``rows + c * column_bytes``;
- the tree: every layer in node order (node j of layer k at ``layer_offset(k) + j * DIGEST_BYTES``),
  the leaf digests' layer first, the root (one digest) last, the layers back to back from ``tree``;
  a 31-bit scheme's digest of 8 elements is one 32-byte beat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import BEAT_BYTES, MAX_BURST_BEATS
from .params import BuildParams

__all__ = ["CommitLayout", "DIGEST_BYTES", "BURST_BEATS", "RUN_ROWS", "BLOCK_LOG", "bit_reverse"]

#: One digest of a 31-bit Plonky3 scheme: 8 elements of 4 bytes, one beat.
DIGEST_BYTES = BEAT_BYTES
#: The reader's burst: the DMA's longest (a full burst keeps HBM at its best efficiency).
BURST_BEATS = MAX_BURST_BEATS
#: Rows of one column a burst carries (8 points a beat in a 31-bit field).
RUN_ROWS = BURST_BEATS * BEAT_BYTES // 4
_RUN_LOG = RUN_ROWS.bit_length() - 1
#: log2 of the leaves of one block: RUN_ROWS runs of RUN_ROWS rows.
BLOCK_LOG = 2 * _RUN_LOG


def bit_reverse(value: int, bits: int) -> int:
    """``value``'s low ``bits`` bits in reverse order."""
    return int(format(value, f"0{bits}b")[::-1], 2) if bits else 0


@dataclass(frozen=True)
class CommitLayout:
    """The placement of one commitment of a 2^log_rows x columns matrix (see the module docstring)."""
    params: BuildParams
    log_rows: int
    columns: int

    def __post_init__(self):
        if self.params.prime_field.point_bits != 32:
            raise ValueError(f"params: the commitment engine serves 31-bit fields, not {self.params.prime_field.name}")
        if not 1 <= self.log_rows <= self.params.max_log_n:
            raise ValueError(f"log_rows: expected 1..{self.params.max_log_n}, got {self.log_rows}")
        if self.columns < 1:
            raise ValueError(f"columns: expected at least 1, got {self.columns}")

    @property
    def rows(self) -> int:
        return 1 << self.log_rows

    @property
    def column_bytes(self) -> int:
        """One column's bytes, rounded up to a beat (a column of fewer than 8 rows still starts a beat)."""
        return max(self.rows * 4, BEAT_BYTES)

    @property
    def rows_bytes(self) -> int:
        return self.columns * self.column_bytes

    @property
    def layers(self) -> int:
        """The tree's layers, the leaf digests' and the root's included."""
        return self.log_rows + 1

    def layer_offset(self, k: int) -> int:
        """Byte offset of layer k (0: the leaf digests; log_rows: the root) from the tree's base."""
        if not 0 <= k < self.layers:
            raise ValueError(f"k: expected a layer 0..{self.log_rows}, got {k}")
        return sum(self.rows >> i for i in range(k)) * DIGEST_BYTES

    def node_offset(self, k: int, j: int) -> int:
        if not 0 <= j < self.rows >> k:
            raise ValueError(f"j: layer {k} has {self.rows >> k} nodes, got {j}")
        return self.layer_offset(k) + j * DIGEST_BYTES

    @property
    def root_offset(self) -> int:
        return self.layer_offset(self.log_rows)

    @property
    def tree_bytes(self) -> int:
        """Every layer's digests: 2^(n+1) - 1 of them."""
        return (2 * self.rows - 1) * DIGEST_BYTES

    def rows_image(self, matrix: np.ndarray) -> np.ndarray:
        """The rows region as uint32 words, the way the NTT leaves them (column-major, zero padding)."""
        m = np.asarray(matrix, dtype=np.uint64)
        if m.shape != (self.rows, self.columns):
            raise ValueError(f"matrix: expected shape {(self.rows, self.columns)}, got {m.shape}")
        out = np.zeros((self.columns, self.column_bytes // 4), dtype=np.uint32)
        out[:, :self.rows] = m.T
        return out.reshape(-1)

    def tree_image(self, layers) -> np.ndarray:
        """The tree region as uint32 words (every layer in node order, the root last)."""
        return np.concatenate([np.asarray(l, dtype=np.uint32).reshape(-1) for l in layers])

    def layers_of_image(self, image: np.ndarray) -> list[np.ndarray]:
        """The layers a tree region holds (the inverse of :meth:`tree_image`)."""
        words = DIGEST_BYTES // 4
        return [np.asarray(image[self.layer_offset(k) // 4:][:(self.rows >> k) * words], dtype=np.uint64)
                .reshape(-1, words) for k in range(self.layers)]

    def blocks(self) -> int:
        """Blocks of the reader's first pass (one for a tree of at most 2^BLOCK_LOG leaves)."""
        return 1 << max(self.log_rows - BLOCK_LOG, 0)

    def block_runs(self, y: int) -> list[tuple[int, int]]:
        """Block y's runs: (first natural row, rows) of each, in reading order (every column read as one
        burst per run: rows / 8 beats, at most BURST_BEATS)."""
        n = self.log_rows
        if n <= BLOCK_LOG:
            step = min(self.rows, RUN_ROWS)
            return [(r, step) for r in range(0, self.rows, step)]
        mid = bit_reverse(y, n - BLOCK_LOG) * RUN_ROWS
        return [(z * (1 << (n - _RUN_LOG)) + mid, RUN_ROWS) for z in range(RUN_ROWS)]

    def block_leaves(self, y: int) -> np.ndarray:
        """The leaves block y's rows are (sorted): whole subtrees of min(2^n, RUN_ROWS) leaves."""
        rows = [r + i for r, count in self.block_runs(y) for i in range(count)]
        return np.sort([bit_reverse(r, self.log_rows) for r in rows])

    def read_cost(self) -> dict:
        """Beats and bursts of the rows' read (first pass) and of layer 6's re-read (second pass)."""
        beats_per_run = [max(count * 4 // BEAT_BYTES, 1) for _, count in self.block_runs(0)]
        row_beats = self.blocks() * self.columns * sum(beats_per_run)
        reread = (self.rows >> _RUN_LOG) if self.log_rows > BLOCK_LOG else 0
        return {"row_beats": row_beats, "row_burst_beats": max(beats_per_run), "reread_beats": reread,
                "useful_beats": self.columns * self.rows * 4 // BEAT_BYTES or 1}
