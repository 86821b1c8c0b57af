"""Two-clock formal wrapper of the record's NTT cycle counts crossing back (hw/ntt_operation.py's
``_count_ntt_cycles``): the pass window goes from the dma clock to the ntt clock through an
:class:`~amaranth.lib.cdc.FFSynchronizer` (2 stages, in ``run_sync``), an ntt counter counts while it sees
the window open (restarted when it opens), and the count comes back through another (``cycles_sync``,
2 stages); the record reads it ``settle`` = ``SETTLE_CYCLES`` dma cycles after the window closed.

The clocks as in hw/formal/crossing.py (each ticks at least every ``max_period`` steps). The window
(assumed): any dma register, open and closed at any dma edges; the record reads when the window has been
closed for ``settle`` dma cycles. The counter is the kernel's (restart at 1 on the window's rise, count up
while open, saturating) at ``width`` bits (its width does not change when it settles).

Proved (bounded): when the record reads, the ntt side has seen the window close (its count no longer
changes) and the count the dma side reads is the ntt counter's.
"""

from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, Elaboratable, EnableInserter, Module, Mux, ResetSignal, Signal
from amaranth.lib.cdc import FFSynchronizer

from nantucket.hw.ntt_operation import SETTLE_CYCLES

from .dma_read import _Only
from .props import Props

__all__ = ["CountsCrossingHarness", "MUTANTS"]

MUTANTS = {
    "count_settled_at_read": "a record read one dma cycle after the window closed",
    "count_read_is_final": "the dma side's count with its lowest bit flipped on a free glitch",
}


class CountsCrossingHarness(Elaboratable):
    def __init__(self, *, settle=SETTLE_CYCLES, width=3, max_period=4, mutant=None, only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        self.settle = 1 if mutant == "count_settled_at_read" else settle
        self.width, self.max_period, self.mutant, self.only = width, max_period, mutant, only
        names = ("clk", "rst", "d_tick", "n_tick", "open_", "glitch")
        for n in names:
            setattr(self, n, Signal(name=n.rstrip("_")))
        self._names = names

    @property
    def ports(self):
        return [getattr(self, n) for n in self._names]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        p.assumes("no_reset", ~self.rst)
        for name, tick in (("d", self.d_tick), ("n", self.n_tick)):
            since = Signal(range(self.max_period + 1), name=f"{name}_since_tick")
            m.d.sync += since.eq(Mux(tick, 0, since + 1))
            p.assumes(f"{name}_clock_ratio", tick | (since < self.max_period - 1))
        window_d, window_n = Signal(name="window_d"), Signal(name="window_n")
        count, count_d = Signal(self.width, name="ntt_count"), Signal(self.width, name="count_d")
        closed = Signal(range(self.settle + 1), name="closed_for")      # dma cycles since it closed
        with m.If(self.d_tick):
            m.d.sync += [window_d.eq(self.open_),
                         closed.eq(Mux(window_d, 0, Mux(closed == self.settle, closed, closed + 1)))]
        # the kernel's counter (ntt side)
        was = Signal(name="window_was")
        with m.If(self.n_tick):
            m.d.sync += was.eq(window_n)
            with m.If(window_n & ~was):
                m.d.sync += count.eq(1)
            with m.Elif(window_n & ~count.all()):
                m.d.sync += count.eq(count + 1)
        for name, sync in (("window_sync", FFSynchronizer(window_d, window_n, o_domain="n", stages=2)),
                           ("cycles_sync", FFSynchronizer(count, count_d, o_domain="d", stages=2))):
            m.submodules[name] = DomainRenamer({"n": "sync", "d": "sync"})(
                EnableInserter({"n": self.n_tick, "d": self.d_tick})(sync))
        reading = Signal(name="record_reads")
        m.d.comb += reading.eq(~window_d & (closed == self.settle))
        p.asserts("count_settled_at_read", when=reading, cond=~window_n & ~was)
        seen = count_d ^ (self.glitch if self.mutant == "count_read_is_final" else 0)
        p.asserts("count_read_is_final", when=reading, cond=(seen == count))
        p.covers("cover_read_after_count", reading & (count >= 2))
        self.props_names = p.names
        return m
