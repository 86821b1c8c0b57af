"""Merkle commitment schemes of the golden model, each bit-exact with its prover's tree (docs/commitments.md).

Composed as Plonky3 composes one: a sponge for the leaves (:mod:`.sponge`), a compression for the nodes
(:mod:`.compression`), a tree (:mod:`.mmcs` for Plonky3's ``MerkleTreeMmcs``, :mod:`.pow2_tree` for plonky2's
and Winterfell's ``MerkleTree``), registered by name with the pinned version (:mod:`.schemes`);
:mod:`.commitment` commits, opens and verifies. Everything is vectorized: one permutation call hashes a
block of every leaf, one more compresses a whole layer.
"""

from .commitment import Commitment, Dimensions, Opening, commit, verify
from .errors import (CapMismatch, CommitmentError, EmptyBatch, IncompatibleHeights, IndexOutOfBounds,
                     UnsupportedShape, WrongBatchSize, WrongHeight, WrongWidth)
from .schemes import SCHEME_NAMES, SCHEMES, Scheme, scheme

__all__ = ["commit", "verify", "Commitment", "Opening", "Dimensions", "SCHEMES", "SCHEME_NAMES", "Scheme", "scheme",
           "CommitmentError", "EmptyBatch", "IncompatibleHeights", "UnsupportedShape", "WrongBatchSize",
           "WrongWidth", "WrongHeight", "IndexOutOfBounds", "CapMismatch"]
