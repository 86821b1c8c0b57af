# amaranth: UnusedElaboratable=no
"""LeafSponge: Plonky3's PaddingFreeSponge (overwrite mode) over groups of interleaved leaves, one core.

``LeafSponge(scheme, group, *, max_leaf_len=1024, core_rate="1")``: ``scheme`` one of the 31-bit Plonky3
schemes (:data:`SCHEMES`: plonky3-babybear-16/24, plonky3-koalabear-16/24; hw.model.commit.schemes), its
leaf hasher ``PaddingFreeSponge<P, width, rate, 8>``; ``group`` G, the most leaves interleaved; the leaf
permutation is one :class:`hw.permutation.PermutationCore` at ``core_rate`` (1/k permutations per cycle).

Why interleave: a leaf of L elements is ceil(L / rate) permutations, each needing the previous one's
output, and the core is hundreds of cycles deep (``PermutationCore.latency``); G leaves absorbed chunk by
chunk side by side keep it busy when G / ``loop_latency`` >= the core's rate (``full_rate_group``).

Ports (every stream an amaranth.lib.stream, valid/ready; elements 32 bits, canonical, element 0 low):

- ``i``: one rate-chunk of one leaf per transfer, payload :func:`chunk_layout` ``{data: rate x 32 bits,
  last_in_group: 1}``. Order: chunk-major over a group of n <= G leaves, chunk 0 of leaves 0 .. n-1, then
  chunk 1 of leaves 0 .. n-1, ... (what a DMA reading columns in runs of G rows and turning the corner
  gives). ``last_in_group`` marks the group's last leaf in every chunk round (n beats per round, the
  n-th marked), so a group may be shorter than G (a tree of 2 leaves is one group of 2). The final chunk
  of a leaf whose length is not a multiple of rate is partial: only its first ``leaf_len mod rate``
  elements are used (the rest of ``data`` is ignored), the sponge's overwrite mode keeping the rest of
  the state.
- ``leaf_len`` (in, 1 .. ``max_leaf_len``): elements per leaf; stable while ``idle`` is low (0 is no
  leaf: Plonky3 never permutes an empty row, and no chunk round would be the last; the caller refuses it).
- ``o``: one digest per leaf, payload ``ArrayLayout(32, 8)``, in leaf order (groups in order).
- ``idle`` (out): nothing taken is still inside (no chunk round half done, no state in the core or the
  feedback buffer, no digest waiting): ``leaf_len`` may change.

How: the state of a leaf after chunk c leaves the core in input order and waits in a feedback FIFO of G
states (all a group's unfinished leaves fit: the next group's chunk 0 comes after the last chunk of this
one); chunk c + 1 of the same leaf meets it at the FIFO's head, its elements overwrite the state's first
rate (or, in a partial final chunk, first ``leaf_len mod rate``) positions and the core takes it. Chunk 0
starts from the zero state. A 1-bit tag per state in the core (a FIFO beside it: the core has no
sideband) says whether it is the leaf's last permutation; then its first 8 elements go to ``o`` (through
a 2-entry FIFO: the core's clock enable is not the downstream's ready), else to the feedback FIFO. A
group of more than G leaves breaks this (the feedback FIFO fills and the core holds): the caller keeps
to G.

Published: ``latency`` (a leaf's last chunk taken to its digest valid, no stalls), ``loop_latency`` (a
chunk taken to the next chunk of the same leaf takeable), ``permutations_per_cycle`` (sustained, leaves of
>= 2 chunks: min(core rate, G / loop_latency)), ``full_rate_group``, ``core_latency``, ``chunks(leaf_len)``
and ``model(rows)``: the golden model's sponge (hw.model.commit), bit-exact by definition; the bench
holds the hardware to it.
"""

from __future__ import annotations

import numpy as np
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from nantucket.hw.model.commit.schemes import scheme as model_scheme
from nantucket.hw.permutation import PermutationCore

__all__ = ["LeafSponge", "SCHEMES", "ELEMENT_BITS", "chunk_layout", "digest_layout", "plonky3_scheme",
           "core_capacity"]

#: The schemes these blocks build: Plonky3's 31-bit ones.
SCHEMES = ("plonky3-babybear-16", "plonky3-babybear-24", "plonky3-koalabear-16", "plonky3-koalabear-24")
#: Bits per element on every stream (HBM's uint32 words; values canonical, below p < 2^31).
ELEMENT_BITS = 32
#: Cycles from a write to a SyncFIFOBuffered until its read side shows it (its memory plus output register).
_BUFFERED_FIFO_LATENCY = 2


def plonky3_scheme(name):
    """The golden model's Scheme for ``name`` if it is one of :data:`SCHEMES`; a ValueError otherwise."""
    if not isinstance(name, str) or name not in SCHEMES:
        raise ValueError(f"scheme: expected one of {', '.join(SCHEMES)}, got {name!r}")
    return model_scheme(name)


def chunk_layout(rate: int) -> data.StructLayout:
    """The sponge's input payload: one rate-chunk and the group's-last-leaf flag."""
    return data.StructLayout({"data": data.ArrayLayout(ELEMENT_BITS, rate), "last_in_group": 1})


def digest_layout(digest: int = 8) -> data.ArrayLayout:
    return data.ArrayLayout(ELEMENT_BITS, digest)


def core_capacity(core: PermutationCore) -> int:
    """An upper bound on the states a PermutationCore holds at once (its input stage, ring and output
    stage): the latency at full rate; folded, latency - (k - 2) ring (the ring plus one pass to its tap)."""
    if core.passes == 1:
        return core.latency
    return core.latency - (core.passes - 2) * core.ring_latency


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    return value


class LeafSponge(wiring.Component):
    """See the module docstring."""

    def __init__(self, scheme: str, group: int, *, max_leaf_len: int = 1024, core_rate="1"):
        self._scheme = plonky3_scheme(scheme)
        self._group = _check_int("group", group, 1)
        self._max_leaf_len = _check_int("max_leaf_len", max_leaf_len, 1)
        hasher = self._scheme.tree.hasher
        self._width, self._rate, self._digest = hasher.width, hasher.rate, hasher.digest
        self._core = PermutationCore(self._scheme.permutations[0], core_rate)
        super().__init__({
            "i": In(stream.Signature(chunk_layout(self._rate))),
            "leaf_len": In(range(self._max_leaf_len + 1)),
            "o": Out(stream.Signature(digest_layout(self._digest))),
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
    def group(self) -> int:
        return self._group

    @property
    def max_leaf_len(self) -> int:
        return self._max_leaf_len

    @property
    def state_width(self) -> int:
        return self._width

    @property
    def rate(self) -> int:
        """Elements absorbed per permutation (the sponge's rate, not the core's)."""
        return self._rate

    @property
    def digest(self) -> int:
        return self._digest

    @property
    def core_passes(self) -> int:
        return self._core.passes

    @property
    def core_latency(self) -> int:
        return self._core.latency

    @property
    def latency(self) -> int:
        return self._core.latency + _BUFFERED_FIFO_LATENCY

    @property
    def loop_latency(self) -> int:
        return self._core.latency + _BUFFERED_FIFO_LATENCY

    @property
    def full_rate_group(self) -> int:
        """The least G that keeps the core busy on leaves of >= 2 chunks."""
        return -(-self.loop_latency // self._core.passes)

    @property
    def permutations_per_cycle(self) -> float:
        return min(self._core.permutations_per_cycle, self._group / self.loop_latency)

    @property
    def tag_depth(self) -> int:
        return core_capacity(self._core) + 1

    def chunks(self, leaf_len: int) -> int:
        """Permutations per leaf of ``leaf_len`` elements."""
        return -(-leaf_len // self._rate)

    def model(self, rows) -> np.ndarray:
        """The golden model's digests of ``rows`` ((n, leaf_len) canonical values): (n, 8) uint64."""
        return self._scheme.tree.hasher.hash_rows(np.asarray(rows, dtype=np.uint64))

    # -- hardware ---------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        bits = core.element_bits
        state_bits = self._width * bits
        m.submodules.feedback = feedback = SyncFIFOBuffered(width=state_bits, depth=self._group)
        m.submodules.tags = tags = SyncFIFO(width=1, depth=self.tag_depth)
        m.submodules.digests = digests = SyncFIFOBuffered(width=self._digest * ELEMENT_BITS, depth=2)

        chunk, first, final, keep = self._chunk_position(m)
        self._absorb(m, core, feedback, tags, chunk, first, final, keep, bits)
        self._squeeze(m, core, feedback, tags, digests, bits)
        m.d.comb += [self.o.valid.eq(digests.r_rdy), self.o.payload.eq(digests.r_data),
                     digests.r_en.eq(self.o.ready),
                     self.idle.eq((chunk == 0) & ~tags.r_rdy & (feedback.level == 0) & (digests.level == 0))]
        return m

    def _chunk_position(self, m):
        """The chunk round counter and what it says about the beat at the input: the first chunk (start
        from zero), the final one (its result is the digest) and how many of its elements overwrite."""
        log_rate = self._rate.bit_length() - 1
        assert 1 << log_rate == self._rate, "the Plonky3 sponges' rates are powers of two"
        chunks = Signal(range(self.chunks(self._max_leaf_len) + 1), name="chunks")
        keep = Signal(range(self._rate + 1), name="final_elements")
        m.d.comb += [chunks.eq((self.leaf_len + self._rate - 1) >> log_rate),
                     keep.eq(((self.leaf_len - 1) & (self._rate - 1)) + 1)]
        chunk = Signal(range(max(2, self.chunks(self._max_leaf_len))), name="chunk")
        first, final = Signal(name="first_chunk"), Signal(name="final_chunk")
        m.d.comb += [first.eq(chunk == 0), final.eq(chunk == chunks - 1)]
        with m.If(self.i.valid & self.i.ready & self.i.payload.last_in_group):
            m.d.sync += chunk.eq(Mux(final, 0, chunk + 1))
        return chunk, first, final, keep

    def _absorb(self, m, core, feedback, tags, chunk, first, final, keep, bits):
        """The overwrite: chunk elements into the leaf's state (zero for chunk 0, else the feedback
        FIFO's head), the state into the core, the final-permutation tag beside it."""
        prev = Signal(self._width * bits, name="previous_state")
        m.d.comb += prev.eq(Mux(first, 0, feedback.r_data))
        elements = []
        for e in range(self._width):
            old = prev[e * bits:(e + 1) * bits]
            if e < self._rate:
                overwrite = ~final | (e < keep)
                elements.append(Mux(overwrite, self.i.payload.data[e][:bits], old))
            else:
                elements.append(old)
        have_state = first | feedback.r_rdy
        offer = self.i.valid & have_state & tags.w_rdy
        take = Signal(name="chunk_taken")
        m.d.comb += [core.i.valid.eq(offer), core.i.payload.eq(Cat(*elements)),
                     self.i.ready.eq(core.i.ready & have_state & tags.w_rdy),
                     take.eq(offer & core.i.ready),
                     feedback.r_en.eq(take & ~first),
                     tags.w_en.eq(take), tags.w_data.eq(final)]

    def _squeeze(self, m, core, feedback, tags, digests, bits):
        """A state leaving the core: a leaf's last permutation gives its digest, any other goes back."""
        is_final = tags.r_data[0]
        digest = Cat(*(Cat(core.o.payload[e * bits:(e + 1) * bits], Const(0, ELEMENT_BITS - bits))
                       for e in range(self._digest)))
        m.d.comb += [core.o.ready.eq(Mux(is_final, digests.w_rdy, feedback.w_rdy)),
                     tags.r_en.eq(core.o.valid & core.o.ready),
                     digests.w_en.eq(core.o.valid & is_final), digests.w_data.eq(digest),
                     feedback.w_en.eq(core.o.valid & ~is_final), feedback.w_data.eq(core.o.payload)]
