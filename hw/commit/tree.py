# amaranth: UnusedElaboratable=no
"""TreeBuilder: every node of a Merkle tree over a stream of leaf digests, with one compression core.

``TreeBuilder(scheme, *, max_log_leaves=24, core_rate="1", depth=None)``: ``scheme`` one of the 31-bit
Plonky3 schemes (hw.commit.sponge.SCHEMES), its node compression ``TruncatedPermutation<P, 2, 8, 16>``
(state ``[left | right | 0 ...]`` permuted, the first 8 elements kept) on one
:class:`hw.permutation.PermutationCore` at ``core_rate``; trees of 2^``log_leaves`` leaves, ``log_leaves``
0 .. ``max_log_leaves`` at run time. Bit-exact with hw.model.commit's ``MerkleTreeMmcs.build`` for
matrices of one (power-of-two) height. Not built: injecting shorter matrices (Plonky3 compresses a
layer's node with the hash of the shorter matrices' rows where their height is reached): the caller
commits matrices of one height, or refuses the rest.

Ports (amaranth.lib.stream, valid/ready; elements 32 bits, canonical):

- ``i``: leaf digests in leaf order, payload ``ArrayLayout(32, 8)`` (hw.commit.sponge.digest_layout):
  the LeafSponge's ``o`` connects here. After the 2^log_leaves-th leaf the input waits until the root
  has been emitted; the next leaf starts the next tree.
- ``log_leaves`` (in): stable while ``idle`` is low.
- ``o``: every node of every layer, the leaves too, as :func:`node_layout` ``{layer, index, digest}``:
  layer 0 the leaves (index = leaf index), layer ``log_leaves`` the root (index 0), each node once, a
  node after its children, the root last; a writer puts node (layer, index) at that layer's base +
  index x 32 bytes. 2N - 1 transfers for N leaves.
- ``idle`` (out): no tree in progress (nothing taken still inside).

How: a node of layer l with an even index waits in layer l's left register (one per layer: nodes of a
layer come out in index order, since the pairs of each layer enter the core in index order and the core
keeps order); its odd sibling makes the pair (l + 1, index / 2). Leaf pairs come from the input, the
other pairs from the core's own output through a feedback FIFO, which the core takes first. The core
holds whole while its output waits, so a pair made at the output must always find room: a leaf pair
enters only while (states in the core + pairs in the feedback FIFO) < ``depth`` D, and the FIFO holds
D (each state leaving makes at most one pair, so the sum never grows past D). D defaults to a bound on
the core's capacity (hw.commit.sponge.core_capacity), so the credit never holds a core that has room.
A tag FIFO beside the core carries each state's (layer, index). Emission goes through a 4-entry FIFO
(a transfer offered stays as offered), the core's nodes before waiting leaves.

Throughput: N - 1 compressions for N leaves, so a rate-1 core keeps up with leaves arriving one per
cycle, a core at 1/k with leaves every k cycles or slower (a 64-column leaf is 8 width-16 or 4 width-24
sponge permutations). Published: ``latency`` (an odd leaf taken to its parent offered on ``o``, no
stalls: the leaf pair register, the core, the output FIFO), ``core_latency``, ``compressions_per_cycle``,
``depth``, ``model(leaves, log_leaves)``.
"""

from __future__ import annotations

import numpy as np
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nantucket.hw.model.commit.layers import compress_pairs
from nantucket.hw.permutation import PermutationCore

from .sponge import ELEMENT_BITS, core_capacity, digest_layout, plonky3_scheme

__all__ = ["TreeBuilder", "node_layout"]

#: Cycles from a write into the output FIFO (a SyncFIFOBuffered) until its read side shows it.
_OUTPUT_FIFO_LATENCY = 2


def node_layout(max_log_leaves: int, digest: int = 8) -> data.StructLayout:
    """The tree's output payload: a node's layer (0 = leaves), its index in the layer and its digest."""
    return data.StructLayout({"layer": range(max_log_leaves + 1), "index": max(1, max_log_leaves),
                              "digest": digest_layout(digest)})


class TreeBuilder(wiring.Component):
    """See the module docstring."""

    def __init__(self, scheme: str, *, max_log_leaves: int = 24, core_rate="1", depth: int | None = None):
        self._scheme = plonky3_scheme(scheme)
        if isinstance(max_log_leaves, bool) or not isinstance(max_log_leaves, int) or not 1 <= max_log_leaves <= 32:
            raise ValueError(f"max_log_leaves: expected an integer 1 .. 32, got {max_log_leaves!r}")
        self._max_log = max_log_leaves
        compressor = self._scheme.tree.compressor
        self._digest, self._width = compressor.digest, compressor.width
        self._core = PermutationCore(self._scheme.permutations[1], core_rate)
        bound = core_capacity(self._core)
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 2):
            raise ValueError(f"depth: expected an integer >= 2, got {depth!r}")
        self._depth = bound if depth is None else depth
        super().__init__({
            "i": In(stream.Signature(digest_layout(self._digest))),
            "log_leaves": In(range(max_log_leaves + 1)),
            "o": Out(stream.Signature(node_layout(max_log_leaves, self._digest))),
            "idle": Out(1),
        })

    # -- published facts --------------------------------------------------------------------------
    @property
    def scheme(self) -> str:
        return self._scheme.name

    @property
    def hash(self) -> str:
        return self._core.hash

    @property
    def max_log_leaves(self) -> int:
        return self._max_log

    @property
    def digest(self) -> int:
        return self._digest

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def core_passes(self) -> int:
        return self._core.passes

    @property
    def core_latency(self) -> int:
        return self._core.latency

    @property
    def latency(self) -> int:
        return 1 + self._core.latency + _OUTPUT_FIFO_LATENCY

    @property
    def compressions_per_cycle(self) -> float:
        return self._core.permutations_per_cycle

    def model(self, leaves, log_leaves: int) -> list:
        """The golden model's layers over ``leaves`` ((2^log_leaves, 8) digests): the leaves first, the
        root's (one digest) last, as MerkleTreeMmcs.build gives them for matrices of that height."""
        layer = np.asarray(leaves, dtype=np.uint64)
        if layer.shape != (1 << log_leaves, self._digest):
            raise ValueError(f"leaves: expected ({1 << log_leaves}, {self._digest}) digests, got {layer.shape}")
        layers = [layer]
        while layers[-1].shape[0] > 1:
            layers.append(compress_pairs(self._scheme.tree.compressor, layers[-1]))
        return layers

    # -- hardware ---------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        bits = core.element_bits
        half = self._digest * bits
        layer_bits, index_bits = self._max_log.bit_length(), max(1, self._max_log)
        pair_layout = data.StructLayout({"left": half, "right": half, "layer": layer_bits, "index": index_bits})
        tag_layout = data.StructLayout({"layer": layer_bits, "index": index_bits})
        m.submodules.feedback = feedback = SyncFIFOBuffered(width=pair_layout.size, depth=self._depth)
        m.submodules.tags = tags = SyncFIFO(width=tag_layout.size, depth=self._depth)
        m.submodules.nodes = nodes = SyncFIFOBuffered(width=self.o.payload.shape().size, depth=4)
        leaf_pair = Signal(pair_layout, name="leaf_pair")
        leaf_pair_valid = Signal(name="leaf_pair_valid")
        in_flight = Signal(range(self._depth + 1), name="in_flight")
        taken = Signal(self._max_log + 1, name="leaves_taken")

        fb_head = pair_layout(feedback.r_data)
        core_in = self._feed(m, core, feedback, fb_head, tags, tag_layout, leaf_pair, leaf_pair_valid, in_flight)
        out = self._leave(m, core, feedback, pair_layout, tags, tag_layout, nodes, bits)
        leaf = self._intake(m, nodes, leaf_pair, leaf_pair_valid, taken, out, bits)
        m.d.sync += in_flight.eq(in_flight + core_in - out.taken)
        m.d.comb += [self.o.valid.eq(nodes.r_rdy), self.o.payload.eq(nodes.r_data), nodes.r_en.eq(self.o.ready),
                     self.idle.eq((taken == 0) & (in_flight == 0) & ~feedback.r_rdy & ~leaf_pair_valid
                                  & (nodes.level == 0))]
        with m.If(leaf.root | out.root):
            m.d.sync += taken.eq(0)
        return m

    def _feed(self, m, core, feedback, fb_head, tags, tag_layout, leaf_pair, leaf_pair_valid, in_flight):
        """The core's input: the feedback FIFO's pair first, else the leaf pair while the credit allows.
        Returns the signal that is 1 when the core takes a state."""
        credit = Signal(name="credit")
        m.d.comb += credit.eq(in_flight + feedback.level < self._depth)
        use_feedback = feedback.r_rdy
        use_leaf = ~feedback.r_rdy & leaf_pair_valid & credit
        pair = Signal.like(leaf_pair, name="core_pair")
        m.d.comb += pair.eq(Mux(use_feedback, fb_head.as_value(), leaf_pair.as_value()))
        zeros = Const(0, (self._width - 2 * self._digest) * core.element_bits)
        tag = Signal(tag_layout, name="core_in_tag")
        m.d.comb += [tag.layer.eq(Mux(use_feedback, fb_head.layer, 1)), tag.index.eq(pair.index)]
        take = Signal(name="core_takes")
        m.d.comb += [core.i.valid.eq((use_feedback | use_leaf) & tags.w_rdy),
                     core.i.payload.eq(Cat(pair.left, pair.right, zeros)),
                     take.eq(core.i.valid & core.i.ready),
                     feedback.r_en.eq(take & use_feedback),
                     tags.w_en.eq(take), tags.w_data.eq(tag)]
        with m.If(take & ~use_feedback):
            m.d.sync += leaf_pair_valid.eq(0)
        return take

    def _leave(self, m, core, feedback, pair_layout, tags, tag_layout, nodes, bits):
        """A node leaving the core: emitted; an even one waits in its layer's left register, an odd one
        makes its parent's pair in the feedback FIFO; the root ends the tree."""
        tag = tag_layout(tags.r_data)
        node = core.o.payload[:self._digest * bits]
        is_root = Signal(name="out_is_root")
        is_right = Signal(name="out_is_right")
        m.d.comb += [is_root.eq(tag.layer == self.log_leaves), is_right.eq(tag.index[0] & ~is_root)]
        m.submodules.lefts = lefts = Memory(shape=self._digest * bits, depth=self._max_log + 1, init=[])
        write, read = lefts.write_port(), lefts.read_port(domain="comb")
        room = feedback.w_rdy | ~is_right
        taken = Signal(name="node_taken")
        m.d.comb += [core.o.ready.eq(nodes.w_rdy & room), taken.eq(core.o.valid & core.o.ready),
                     tags.r_en.eq(taken)]
        m.d.comb += [read.addr.eq(tag.layer), write.addr.eq(tag.layer), write.data.eq(node),
                     write.en.eq(taken & ~is_right & ~is_root)]
        parent = Signal(pair_layout, name="parent_pair")
        m.d.comb += [parent.left.eq(read.data), parent.right.eq(node), parent.layer.eq(tag.layer + 1),
                     parent.index.eq(tag.index >> 1),
                     feedback.w_en.eq(taken & is_right), feedback.w_data.eq(parent)]
        emitted = Signal(self.o.payload.shape(), name="node_out")
        m.d.comb += [emitted.layer.eq(tag.layer), emitted.index.eq(tag.index), emitted.digest.eq(self._widen(node, bits))]
        m.d.comb += [nodes.w_en.eq(core.o.valid & room), nodes.w_data.eq(emitted)]
        root = Signal(name="root_out")
        m.d.comb += root.eq(taken & is_root)
        return _Leaving(taken, root)

    def _intake(self, m, nodes, leaf_pair, leaf_pair_valid, taken, out, bits):
        """A leaf taken: emitted as layer 0; an even one waits as the left leaf, an odd one makes the
        leaf pair. The 2^log_leaves-th leaf closes the tree's intake until the root is out."""
        left_leaf = Signal(self._digest * bits, name="left_leaf")
        leaf = Cat(*(self.i.payload[e][:bits] for e in range(self._digest)))
        count = Signal(self._max_log + 1, name="tree_leaves")
        m.d.comb += count.eq(1 << self.log_leaves)
        single = self.log_leaves == 0
        is_right = taken[0] & ~single
        open_ = taken < count
        m.d.comb += self.i.ready.eq(open_ & ~self._core.o.valid & nodes.w_rdy & ~(is_right & leaf_pair_valid))
        take = self.i.valid & self.i.ready
        emitted = Signal(self.o.payload.shape(), name="leaf_out")
        m.d.comb += [emitted.layer.eq(0), emitted.index.eq(taken), emitted.digest.eq(self._widen(leaf, bits))]
        with m.If(~self._core.o.valid):
            m.d.comb += [nodes.w_en.eq(self.i.valid & self.i.ready), nodes.w_data.eq(emitted)]
        with m.If(take):
            m.d.sync += taken.eq(taken + 1)
            with m.If(is_right):
                m.d.sync += [leaf_pair.left.eq(left_leaf), leaf_pair.right.eq(leaf),
                             leaf_pair.layer.eq(0), leaf_pair.index.eq(taken >> 1), leaf_pair_valid.eq(1)]
            with m.Else():
                m.d.sync += left_leaf.eq(leaf)
        root = Signal(name="root_leaf")
        m.d.comb += root.eq(take & single)
        return _Leaving(take, root)

    def _widen(self, packed, bits):
        return Cat(*(Cat(packed[e * bits:(e + 1) * bits], Const(0, ELEMENT_BITS - bits)) for e in range(self._digest)))


class _Leaving:
    """What a stage tells the rest: a transfer this cycle and whether it was the tree's root."""

    def __init__(self, taken, root):
        self.taken, self.root = taken, root
