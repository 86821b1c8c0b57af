"""Two-clock formal wrapper of :class:`hw.dma.async_fifo.AsyncFifo` under resets, mid-stream.

What the FIFO promises (its module doc): the write domain's reset empties it (the write side directly,
the read side's pointers through its reset synchronizer), held for at least a cycle of each clock; the
read domain's own reset does not touch it (a read-domain reset alone keeps the words).

The clocks as in hw/formal/crossing.py (enables of one proof clock, each ticking at least every
``max_period`` steps). The resets are free inputs: the write domain's (assumed held, once raised, until an edge
of each clock has seen it, in either order, and ``hold`` write edges more: 0 in the suite, the FIFO's promise) and the read domain's (any time). The reset synchronizer's stages are
clocked by the read ticks through Amaranth's documented platform hook ``get_async_ff_sync``
(:class:`_TickedResetSync`: its stages set at a read edge while the reset is high, shifting it out at the
read edges after; its output high at once with the reset), since a synchronizer's own local domain would
not take the read enable. The writer keeps the stream rules outside its resets (the kernel resets it with
the FIFO's write side) and writes the count of its words since the last write reset; the monitor counts
the reader's words since the FIFO's read side last was in reset (its own ``r_rst``).

Found: "a cycle of each clock" was not enough without ``exact_full``: the read side's reset pointer
crosses back through the write side's 2-stage synchronizer, and a write side let out of reset before it
arrived computed its level from the stale read pointer, too low, and took a word with no room (a
counterexample at step 12). Fixed in hw/dma/async_fifo.py: the synchronizer's stages reset with the write
side (tests/test_formal.py; ``exact_full`` held already, its full compare stale for fewer edges than the
FIFO's depth).

Proved (bounded): after a write reset, every word out is the next of those written since (no word from before the
reset, none lost, duplicated or reordered), with the read domain reset at any time; a word is taken only
with room.
"""

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Const, DomainRenamer, Elaboratable, EnableInserter, Fragment,
                          Module, Mux, ResetSignal, Signal)

from nantucket.hw.dma.async_fifo import AsyncFifo

from .dma_read import _Only
from .props import Props, internals

__all__ = ["FifoResetHarness", "MUTANTS"]

MUTANTS = {
    "reset_words_in_order": "the reader's word with its lowest bit flipped on a free glitch",
    "reset_room_on_write": "a FIFO model one word smaller than the FIFO",
}


class _TickedResetSync(Elaboratable):
    """AsyncFFSynchronizer's behaviour (async assertion, deassertion after ``stages`` edges of its
    domain) with its stages in that domain, so that the wrapper's read enable clocks them."""

    def __init__(self, sync):
        self._sync = sync

    def elaborate(self, platform):
        m = Module()
        s = self._sync
        level = s.i if s._edge == "pos" else ~s.i
        stages = Signal(s._stages, init=(1 << s._stages) - 1, name="stages", reset_less=True)
        with m.If(level):
            m.d[s._o_domain] += stages.eq(Const(-1, s._stages))
        with m.Else():
            m.d[s._o_domain] += stages.eq(Cat(0, stages[:-1]))
        m.d.comb += s.o.eq(level | stages[-1])
        return m


class _Platform:
    """Only the reset synchronizer's hook (the FFSynchronizers keep Amaranth's default)."""

    def get_async_ff_sync(self, sync):
        return _TickedResetSync(sync)


class FifoResetHarness(Elaboratable):
    def __init__(self, *, depth=4, width=3, exact_full=True, max_period=3, hold=0, mutant=None, only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        self.depth, self.width, self.max_period, self.mutant, self.only = depth, width, max_period, mutant, only
        self.hold = hold
        self.fifo = AsyncFifo(width=width, depth=depth, w_domain="w", r_domain="r", level=True,
                              exact_full=exact_full)
        names = ("clk", "w_rst", "r_rst", "w_tick", "r_tick", "w_valid", "r_ready", "glitch")
        for n in names:
            setattr(self, n, Signal(name=n))
        self._names = names

    @property
    def ports(self):
        return [getattr(self, n) for n in self._names]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain(reset_less=True)
        m.domains.wd, m.domains.rd = ClockDomain("wd"), ClockDomain("rd")
        m.d.comb += [ClockSignal().eq(self.clk), ClockSignal("wd").eq(self.clk), ClockSignal("rd").eq(self.clk),
                     ResetSignal("wd").eq(self.w_rst), ResetSignal("rd").eq(self.r_rst)]
        fifo = self.fifo
        frag = Fragment.get(DomainRenamer({"w": "wd", "r": "rd"})(
            EnableInserter({"w": self.w_tick, "r": self.r_tick})(fifo)), _Platform())
        m.submodules.dut = frag
        r_rst_int = internals(frag)[1]["rst_cdc.r_rst"]           # the read side's reset, from the synchronizer
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        self._assumptions(m, p)
        wc, rc = Signal(self.width + 2, name="w_count"), Signal(self.width + 2, name="r_count")
        w_fire, r_fire = Signal(name="w_fire"), Signal(name="r_fire")
        m.d.comb += [w_fire.eq(self.w_tick & ~self.w_rst & fifo.w_stream.valid & fifo.w_stream.ready),
                     r_fire.eq(self.r_tick & ~r_rst_int & fifo.r_stream.valid & fifo.r_stream.ready),
                     fifo.w_stream.valid.eq(self.w_valid), fifo.w_stream.payload.eq(wc),
                     fifo.r_stream.ready.eq(self.r_ready)]
        m.d.sync += [wc.eq(Mux(self.w_rst, 0, wc + w_fire)),
                     rc.eq(Mux(self.r_tick & r_rst_int, 0, rc + r_fire))]
        w_wait = Signal(name="w_waiting")
        with m.If(self.w_tick):
            m.d.sync += w_wait.eq(self.w_valid & ~fifo.w_stream.ready & ~self.w_rst)
        p.assumes("writer_holds_valid", ~w_wait | self.w_valid | self.w_rst)
        word = fifo.r_stream.payload ^ (self.glitch if self.mutant == "reset_words_in_order" else 0)
        p.asserts("reset_words_in_order", when=r_fire, cond=(word == rc[:self.width]) & (wc > rc))
        room = self.depth - (1 if self.mutant == "reset_room_on_write" else 0)
        held = Signal(self.width + 2, name="words_held")
        m.d.comb += held.eq(wc - rc)
        p.asserts("reset_room_on_write", held < room, when=w_fire, reach=w_fire & (held == room - 1))
        self._covers(m, p, r_fire, rc)
        p.covers("cover_reset_with_words", self.w_rst & ~p.past(self.w_rst, name="w_rst_before") & (held != 0)
                 & p.past_valid)
        self.props_names = p.names
        return m

    def _assumptions(self, m, p):
        for name, tick in (("w", self.w_tick), ("r", self.r_tick)):
            since = Signal(range(self.max_period + 1), name=f"{name}_since_tick")
            m.d.sync += since.eq(Mux(tick, 0, since + 1))
            p.assumes(f"{name}_clock_ratio", tick | (since < self.max_period - 1))
        # the write reset, once raised, held until a read edge and a write edge have both seen it (the
        # FIFO's promise: a cycle of each clock, in either order) and then ``hold`` write edges more
        h = self.hold
        seen_r, seen_w = Signal(name="w_rst_saw_r"), Signal(name="w_rst_saw_w")
        after = Signal(range(h + 1), name="w_rst_w_after")
        was = Signal(name="w_rst_q")
        both = seen_r & seen_w
        m.d.sync += [was.eq(self.w_rst), seen_r.eq(self.w_rst & (seen_r | self.r_tick)),
                     seen_w.eq(self.w_rst & (seen_w | self.w_tick)),
                     after.eq(Mux(self.w_rst, Mux(self.w_tick & both & (after < h), after + 1, after), 0))]
        p.assumes("w_reset_held", ~was | self.w_rst | (both & (after >= h)))
        self.reset_done = Signal(name="w_reset_done")
        with m.If(was & ~self.w_rst):
            m.d.sync += self.reset_done.eq(1)

    def _covers(self, m, p, r_fire, rc):
        after = Signal(name="reads_after_reset")
        with m.If(self.reset_done & r_fire):
            m.d.sync += after.eq(1)
        p.covers("cover_reset_mid_stream", self.reset_done & after & (rc == 2))
        p.covers("cover_read_reset", self.r_rst & (rc != 0))
