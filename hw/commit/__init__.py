"""The commitment's stream blocks: the leaf sponge (sponge.py) and the tree builder (tree.py).

``LeafSponge`` hashes interleaved groups of leaves (Plonky3's PaddingFreeSponge, overwrite mode) into one
digest per leaf in leaf order; ``TreeBuilder`` takes those digests and emits every node of the Merkle
tree as (layer, index, digest), root last. Both run one hw.permutation.PermutationCore each, for the
31-bit Plonky3 schemes (``SCHEMES``), and publish latency, throughput and a bit-exact ``model``.
"""

from .sponge import ELEMENT_BITS, SCHEMES, LeafSponge, chunk_layout, digest_layout
from .tree import TreeBuilder, node_layout

__all__ = ["LeafSponge", "TreeBuilder", "SCHEMES", "ELEMENT_BITS", "chunk_layout", "digest_layout", "node_layout"]
