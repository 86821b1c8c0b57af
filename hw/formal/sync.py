"""Two-clock formal wrapper of the run crossings: a start pulse through a
:class:`~amaranth.lib.cdc.PulseSynchronizer` and the run value beside it through an
:class:`~amaranth.lib.cdc.FFSynchronizer`, from the ``dma`` clock (the source) to the ``ntt`` clock (the
destination), as the design uses them (the primitives themselves, in the timing their users give them):

- ``kernel``: hw/ntt_operation.py's ``run_sync`` and ``start_sync`` (2 stages each). The run (and the pass bit)
  is latched when the pass's set-up begins and the start pulse is sent ``setup`` = ``PASS_SETUP_CYCLES``
  dma cycles later; the engine takes the start and the run as they come out of the synchronizers.
- ``dma``: hw/dma/engine.py's ``sync_state`` (2 stages) and ``sync_start`` (3 stages, its input a
  register of the start, its output registered once on the ntt side). The pass state changes on the edge
  after the start (the pass bit) and on the next one (the zero mask, registered from it): ``late`` = 2
  edges, and the toggle flips on the second (``setup`` = 1); the assembler and the write path take the
  start and the state from the registered output.

The two clocks are enables of one proof clock (as in hw/formal/crossing.py): each ticks at least every
``max_period`` steps and at most every step, so either runs up to ``max_period`` : 1 faster than the
other, with any jitter. The source (assumed, as the sequencer drives it): idle, the value may change at
any dma edge; a pass begins on a free ``go`` (the value may change on that edge), the pulse is high in
the set-up's cycle ``setup`` (one dma cycle), the value may change on the pass's first ``late`` edges
from the set-up's first, and is held from then to the pass's end; the pass ends (free ``stop``) only after
the destination took the start (the DMA's done needs the engine's output, which crosses back through a
FIFO).

Proved: every start arrives once (never more pulses out than in; never a second start in flight; each
one out within ``latency`` ntt cycles; one ntt cycle wide), and the value the destination takes with the
start is the pass's (its last change made) and stays so until the pass ends.
"""

from amaranth.hdl import Cat, ClockDomain, ClockSignal, DomainRenamer, Elaboratable, EnableInserter, Module, Mux, ResetSignal, Signal
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer

from nantucket.hw.ntt_operation import PASS_SETUP_CYCLES

from .dma_read import _Only
from .props import Props, internals

__all__ = ["RunCrossingHarness", "MUTANTS", "USES", "internals"]

#: the uses of the primitives: value and pulse stages, the set-up's cycles before the pulse, the edges the
#: value may still change on from the set-up's first, the ntt registers after the pulse, its latency bound
USES = {
    "kernel": dict(value_stages=2, pulse_stages=2, setup=PASS_SETUP_CYCLES, late=0, registered=0, latency=3),
    "dma": dict(value_stages=2, pulse_stages=3, setup=1, late=2, registered=1, latency=5),
}

MUTANTS = {
    "start_not_duplicated": "a start seen on a free glitch",
    "start_one_in_flight": "a pass that may end before the destination took its start",
    "start_in_time": "a latency bound one ntt cycle lower",
    "start_one_cycle": "the start seen again at the ntt edge after it on a free glitch",
    "value_at_start": "the destination's value with a bit flipped on a free glitch",
    "value_held_in_pass": "the destination's value with a bit flipped on a free glitch",
}


class RunCrossingHarness(Elaboratable):
    def __init__(self, *, use="kernel", width=3, max_period=4, timing=None, mutant=None, only=None):
        """``timing``: entries of ``USES[use]`` replaced (e.g. ``setup=0`` for the DMA before its start's
        toggle took a register of the start)."""
        if use not in USES:
            raise ValueError(f"use: one of {sorted(USES)}, got {use!r}")
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        unknown = sorted(set(timing or {}) - set(USES[use]))
        if unknown:
            raise TypeError(f"timing: unknown entries {unknown}")
        self.use, self.cfg, self.width, self.max_period = use, {**USES[use], **(timing or {})}, width, max_period
        self.mutant, self.only = mutant, only
        self.clk, self.rst = Signal(), Signal()
        self.s_tick, self.d_tick, self.go, self.stop, self.change, self.glitch = (
            Signal(name=n) for n in ("s_tick", "d_tick", "go", "stop", "change", "glitch"))
        self.v_in = Signal(width, name="v_in")

    @property
    def ports(self):
        return [self.clk, self.rst, self.s_tick, self.d_tick, self.go, self.stop, self.change, self.glitch,
                self.v_in]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        cfg = self.cfg
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        p.assumes("no_reset", ~self.rst)
        self._clocks(m, p)
        value, pulse, phase, t, final = self._source(m, p)
        # the primitives, clocked by the ticks (the dma domain "s", the ntt domain "d")
        dst_value, o = Signal(self.width, name="dst_value"), Signal(name="pulse_out")
        psync = PulseSynchronizer("s", "d", stages=cfg["pulse_stages"])
        pfrag, pin = internals(psync)
        vsync = FFSynchronizer(value, dst_value, o_domain="d", stages=cfg["value_stages"])
        for name, sub in (("start_sync", pfrag), ("value_sync", vsync)):
            m.submodules[name] = DomainRenamer({"s": "sync", "d": "sync"})(
                EnableInserter({"s": self.s_tick, "d": self.d_tick})(sub))
        m.d.comb += [psync.i.eq(pulse), o.eq(psync.o)]
        start, self._start_regs = o, []
        for k in range(cfg["registered"]):          # the ntt registers after the synchronizer
            reg = Signal(name=f"start_r{k}")
            with m.If(self.d_tick):
                m.d.sync += reg.eq(start)
            start = reg
            self._start_regs.append(reg)
        pending = self._destination(m, p, value, phase, t, final, start, dst_value)
        # the invariants that make k-induction close (each proved with the rest): the source's phases;
        # the toggle chain i_toggle -> stages -> r_toggle changes at most once along it (one start in
        # flight), and the starts pending are that change plus the registered start
        chain = [pin["i_toggle"], *(pin[f"ff_sync.stage{k}"] for k in range(cfg["pulse_stages"])), pin["r_toggle"]]
        p.asserts("inv_phases", (phase != 3) & ((phase != 1) | ((t <= cfg["setup"]) & ~self.taken
                                                               & (pending == 0)))
                  & ((phase != 0) | (pending == 0)) & (~self.taken | (pending == 0)) & ((phase != 2) | self.taken | (pending == 1)), reach=None)
        flips = sum((a ^ b).as_unsigned() for a, b in zip(chain, chain[1:]))
        p.asserts("inv_toggle_chain", (flips <= 1) & (pending == (chain[0] ^ chain[-1]) + sum(
            self._start_regs)), reach=None)
        self.props_names = p.names
        return m

    def _clocks(self, m, p):
        for name, tick in (("s", self.s_tick), ("d", self.d_tick)):
            since = Signal(range(self.max_period + 1), name=f"{name}_since_tick")
            m.d.sync += since.eq(Mux(tick, 0, since + 1))
            p.assumes(f"{name}_clock_ratio", tick | (since < self.max_period - 1))

    def _source(self, m, p):
        """The sequencer's side (dma edges are the s_tick steps): returns the value, the pulse, the
        phase (0 idle, 1 set-up, 2 pass), the dma cycles since the set-up began (saturating) and whether
        the value is final (no change left in the pass)."""
        cfg = self.cfg
        value = Signal(self.width, name="run_value")
        phase = Signal(2, name="phase")
        top = cfg["setup"] + cfg["late"] + 2
        t = Signal(range(top + 1), name="since_setup")
        self.taken = Signal(name="start_taken")                 # the destination took this pass's start
        pulse = Signal(name="pulse_in")
        m.d.comb += pulse.eq((phase == 1) & (t == cfg["setup"]))
        final = Signal(name="value_final")
        m.d.comb += final.eq((phase != 0) & (t >= cfg["late"]))
        may_change = Signal()
        m.d.comb += may_change.eq((phase == 0) | ((phase != 0) & (t < cfg["late"])))
        p.assumes("go_when_idle", ~self.go | (phase == 0))
        may_stop = self.taken | (self.mutant == "start_one_in_flight")
        p.assumes("stop_after_start_taken", ~self.stop | ((phase == 2) & final & may_stop))
        with m.If(self.s_tick):
            with m.If(may_change & self.change):
                m.d.sync += value.eq(self.v_in)
            with m.If(self.go):
                m.d.sync += [phase.eq(1), t.eq(0)]
            with m.Elif(phase != 0):
                m.d.sync += t.eq(Mux(t == top, t, t + 1))
                with m.If((phase == 1) & (t == cfg["setup"])):
                    m.d.sync += phase.eq(2)
                with m.If(self.stop):
                    m.d.sync += phase.eq(0)
        return value, pulse, phase, t, final

    def _destination(self, m, p, value, phase, t, final, start, dst_value):
        cfg, g = self.cfg, self.glitch
        mut = self.mutant
        s_fire = Signal(name="start_in")                 # the pulse taken on a dma edge
        d_start = Signal(name="start_out")               # the start taken on an ntt edge
        seen = start | (g if mut == "start_not_duplicated" else 0)
        m.d.comb += [s_fire.eq(self.s_tick & (phase == 1) & (t == cfg["setup"])), d_start.eq(self.d_tick & seen)]
        pending = Signal(range(4), name="starts_pending")
        m.d.sync += pending.eq(pending + s_fire - d_start)
        p.asserts("start_not_duplicated", when=d_start, cond=(pending != 0) | s_fire)
        p.asserts("start_one_in_flight", when=s_fire, cond=(pending == 0), reach=s_fire)
        wait = Signal(range(cfg["latency"] + 3), name="start_wait")
        with m.If(pending == 0):
            m.d.sync += wait.eq(0)
        with m.Elif(self.d_tick & (wait <= cfg["latency"])):
            m.d.sync += wait.eq(wait + 1)
        bound = cfg["latency"] - (1 if mut == "start_in_time" else 0)
        p.asserts("start_in_time", wait <= bound, reach=(wait == bound))
        last = Signal(name="start_out_last_tick")         # the start at the ntt edge before
        with m.If(self.d_tick):
            m.d.sync += last.eq(seen | (g if mut == "start_one_cycle" else 0))
        p.asserts("start_one_cycle", when=d_start, cond=~last)
        seen_value = dst_value ^ (Cat(g, 0) if mut in ("value_at_start", "value_held_in_pass") else 0)
        p.asserts("value_at_start", when=d_start, cond=final & (seen_value == value))
        got = Signal(self.width, name="value_taken")
        with m.If(self.s_tick & self.go):
            m.d.sync += self.taken.eq(0)
        with m.Elif(d_start):
            m.d.sync += [self.taken.eq(1), got.eq(dst_value)]
        p.asserts("value_held_in_pass", when=(phase == 2) & self.taken,
                  cond=(seen_value == got) & (got == value))
        self._pending = pending
        p.covers("cover_start_taken", p.past(d_start, name="d_start_q") & (phase == 2) & self.taken
                 & (value != 0))
        return pending
