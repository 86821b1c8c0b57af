"""Two-clock formal wrapper of :class:`hw.dma.async_fifo.AsyncFifo`.

The two clocks are enables of one fast clock (the wrapper's ``clk``, a port): the FIFO's write domain
steps when ``w_tick`` is 1, its read domain when ``r_tick`` is 1 (``EnableInserter``, both then renamed to
the proof's one domain), so every interleaving of the two clocks' edges, coinciding ones too, is a
sequence of ticks. The clocks (assumed): each ticks at least every ``max_period`` steps and at most
every step, so either may run up to ``max_period`` : 1 faster than the other and jitter (any period in
that range, changing from cycle to cycle): the kernel's comments rely on a ratio up to 4 : 1 either way.
Resets stay low (the state starts at the reset values; the FIFO's own read-side reset synchronizer starts
asserted and lets go). The writer keeps the stream rules and writes the count of the words it has written
so far (the FIFO never looks at its words, so a count stands for any data); the reader takes words at any
time.

Proved: every word comes out once, in order (the reader's word is the count of those read before it: a
word lost, duplicated or reordered breaks it); the FIFO takes a word only when it has room (the words in
it, by the two counts, below ``depth``); the writer's level never exceeds ``depth``. (That a word comes out
in bounded time needs a depth past the crossing's latency at the slowest ratio, beyond what the solver
reaches here: not stated.)
"""

from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, Elaboratable, EnableInserter, Module, Mux, ResetSignal, Signal

from nantucket.hw.dma.async_fifo import AsyncFifo

from .dma_read import _Only
from .props import Props

__all__ = ["FifoCrossingHarness", "MUTANTS"]

MUTANTS = {
    "fifo_words_in_order": "the reader's word with its lowest bit flipped on a free glitch",
    "fifo_room_on_write": "a FIFO model one word smaller than the FIFO",
    "fifo_level_bounded": "a level bound one word lower",
}


class FifoCrossingHarness(Elaboratable):
    def __init__(self, *, depth=4, width=6, exact_full=True, max_period=4, mutant=None, only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        self.depth, self.width, self.max_period = depth, width, max_period
        self.mutant, self.only = mutant, only
        self.fifo = AsyncFifo(width=width, depth=depth, w_domain="w", r_domain="r", level=True,
                              exact_full=exact_full)
        self.clk, self.rst = Signal(), Signal()
        self.w_tick, self.r_tick, self.w_valid, self.r_ready, self.glitch = (Signal(name=n) for n in
                                                                             ("w_tick", "r_tick", "w_valid", "r_ready", "glitch"))

    @property
    def ports(self):
        return [self.clk, self.rst, self.w_tick, self.r_tick, self.w_valid, self.r_ready, self.glitch]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        fifo = self.fifo
        m.submodules.dut = DomainRenamer({"w": "sync", "r": "sync"})(
            EnableInserter({"w": self.w_tick, "r": self.r_tick})(fifo))
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        p.assumes("no_reset", ~self.rst)
        self._clocks(m, p)
        w_count, r_count = Signal(self.width + 2, name="w_count"), Signal(self.width + 2, name="r_count")
        w_fire, r_fire = Signal(), Signal()       # handshakes on their clock's edge
        m.d.comb += [w_fire.eq(self.w_tick & fifo.w_stream.valid & fifo.w_stream.ready),
                     r_fire.eq(self.r_tick & fifo.r_stream.valid & fifo.r_stream.ready),
                     fifo.w_stream.valid.eq(self.w_valid), fifo.w_stream.payload.eq(w_count),
                     fifo.r_stream.ready.eq(self.r_ready)]
        m.d.sync += [w_count.eq(w_count + w_fire), r_count.eq(r_count + r_fire)]
        # the writer keeps its valid until the word is taken (from one write edge to the next)
        w_wait = Signal(name="w_waiting")
        with m.If(self.w_tick):
            m.d.sync += w_wait.eq(self.w_valid & ~fifo.w_stream.ready)
        p.assumes("writer_holds_valid", ~w_wait | self.w_valid)
        word = fifo.r_stream.payload ^ (self.glitch if self.mutant == "fifo_words_in_order" else 0)
        p.asserts("fifo_words_in_order", word == r_count[:self.width], when=r_fire)
        held = Signal(self.width + 2, name="words_held")
        m.d.comb += held.eq(w_count - r_count)
        room = self.depth - (1 if self.mutant == "fifo_room_on_write" else 0)
        p.asserts("fifo_room_on_write", held < room, when=w_fire, reach=w_fire & (held == room - 1))
        bound = self.depth - (1 if self.mutant == "fifo_level_bounded" else 0)
        p.asserts("fifo_level_bounded", fifo.w_level <= bound, reach=fifo.w_level == self.depth)
        p.covers("cover_three_through", r_count == 3)
        self.props_names = p.names
        return m

    def _clocks(self, m, p):
        """Each clock ticks at least every ``max_period`` steps."""
        for name, tick in (("w", self.w_tick), ("r", self.r_tick)):
            since = Signal(range(self.max_period + 1), name=f"{name}_since_tick")
            m.d.sync += since.eq(Mux(tick, 0, since + 1))
            p.assumes(f"{name}_clock_ratio", tick | (since < self.max_period - 1))
