"""The named refusals of the commitment schemes (all :class:`CommitmentError`, a ValueError).

Commit-side errors say which input a prover's library would refuse (its assertion or panic); verify-side
errors say which check of the reference's verifier failed. Each message is one line naming the argument.
"""

__all__ = ["CommitmentError", "EmptyBatch", "IncompatibleHeights", "UnsupportedShape", "WrongBatchSize",
           "WrongWidth", "WrongHeight", "IndexOutOfBounds", "CapMismatch"]


class CommitmentError(ValueError):
    """Base of every refusal by a commitment scheme (bad shapes at commit, failed checks at verify)."""


class EmptyBatch(CommitmentError):
    """No matrix, or every matrix has height 0 (Plonky3 ``MerkleTreeError::EmptyBatch``)."""


class IncompatibleHeights(CommitmentError):
    """A height off the ``ceil(max_height / 2^k)`` ladder (Plonky3 ``MerkleTreeError::IncompatibleHeights``)."""


class UnsupportedShape(CommitmentError):
    """A shape the scheme's tree does not build: plonky2 and Winterfell take one height, a power of two
    (Winterfell: at least 2 rows); plonky2's cap_height at most log2(rows)."""


class WrongBatchSize(CommitmentError):
    """The opening has a different number of rows than ``dimensions`` has matrices."""


class WrongWidth(CommitmentError):
    """An opened row's length differs from its matrix's width in ``dimensions``."""


class WrongHeight(CommitmentError):
    """The sibling path has a different length than the tree's depth below the cap."""


class IndexOutOfBounds(CommitmentError):
    """The leaf index is not below the tallest height."""


class CapMismatch(CommitmentError):
    """The digest recomputed from the opening is not the root (or its cap entry): a row, sibling, index or
    dimension does not belong to this commitment."""
