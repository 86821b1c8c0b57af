"""Formal wrapper of :class:`hw.dma.axi_read.AxiReadMaster` on its own, its inputs as DmaEngine drives them.

The environment (assumed): ``start`` one cycle and only between passes; ``run`` (the engine's
``active``) from the cycle after ``start`` until some cycle after ``done``; ``total`` and ``base``
(aligned to the longest burst, 256 bytes: the host's pointer rule) stable from the cycle after ``start`` and ``burst`` and the
zero-burst map from two cycles after it (the engine registers them so), ``burst`` a power of two up to
``burst_beats``, ``total`` a multiple of it up to ``total_beats``; the skips come through the design's
own :func:`hw.dma.axi_read.register_skips` from a zero map (any, per beat); the FIFO's level counts what
the master wrote, a cycle late, less what a reader (any timing) took. The slave: any AR READY, any R
timing, R only for issued ARs (hw/formal/axi4.py).

Proved on top of the AXI4 rules: the FIFO never overflows (R is never back-pressured: the master
does not look at the FIFO's ready), every R beat reaches the FIFO once, in order, a cycle later, and an
error response raises ``fault`` with it (its code in ``fault_resp``), and only then; every
AR is for a non-zero burst of the pass, in increasing order; ``done`` only once every non-zero burst
was asked for and every beat has arrived.

``mutant`` (a name of :data:`MUTANTS`): break one behaviour between the master and the monitor (never
in the design), to show the property that names it fails; ``only``: keep only that assertion.
"""

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Elaboratable, Module, Mux, ResetSignal, Signal

from nantucket.hw.axi import RESP_OKAY
from nantucket.hw.dma.axi_read import AxiReadMaster, register_skips

from .axi4 import read_master_checks
from .props import Props, internals

__all__ = ["ReadMasterHarness", "MUTANTS"]

#: property -> how its mutant breaks the AR channel seen by the monitor (``glitch``: a free input)
MUTANTS = {
    "ar_valid_held": lambda s, g: {"arvalid": s.arvalid & ~g},
    "ar_payload_stable": lambda s, g: {"araddr": s.araddr ^ Cat(0, g)[:len(s.araddr)] << 5},
    "ar_burst_incr": lambda s, g: {"arburst": s.arburst ^ Cat(g, g)},
    "ar_size_full_beat": lambda s, g: {"arsize": s.arsize ^ g},
    "ar_len_legal": lambda s, g: {"arlen": s.arlen | Cat(g, g, g, g, g)},
    "ar_addr_beat_aligned": lambda s, g: {"araddr": s.araddr | g},
    "ar_inside_4k": lambda s, g: {"araddr": s.araddr + g * 4064},
    "fifo_no_overflow": "a FIFO a quarter the depth the master was built for",
    "fault_on_error_r": lambda s, g: {"rresp": s.rresp ^ Cat(0, g)},
    "r_to_fifo_in_order": lambda s, g: {"rdata": s.rdata ^ g},
    "ar_in_pass": lambda s, g: {"araddr": s.araddr + (g << 5)},
    "ar_outstanding_beats": "a limit of a quarter the FIFO",
    "ar_outstanding_bursts": "a limit of one burst",
    "ar_increasing": lambda s, g: {"araddr": s.araddr - (g << 8)},
    "done_after_all": "done seen early (the master's done ORed with the glitch)",
}


class _Tap:
    """The AR/R members the monitor sees: the master's, or a mutant's version of some."""

    def __init__(self, axi, override):
        for name in axi.signature.members:
            setattr(self, name, override.get(name, getattr(axi, name)))
        self.signature = axi.signature


class ReadMasterHarness(Elaboratable):
    def __init__(self, *, total_beats=32, burst_beats=8, fifo_beats=16, addr_width=64, mutant=None,
                 only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        self.T, self.MB, self.D, self.mutant, self.only = total_beats, burst_beats, fifo_beats, mutant, only
        self.dut = AxiReadMaster(total_beats=total_beats, burst_beats=burst_beats, fifo_beats=fifo_beats,
                                 addr_width=addr_width)
        aw = addr_width
        self.clk, self.rst = Signal(), Signal()
        self.start, self.stop, self.pop, self.glitch = Signal(), Signal(), Signal(), Signal()
        self.base, self.total, self.burst = Signal(aw), Signal(range(total_beats + 1)), Signal(range(burst_beats + 1))
        self.zeros = Signal(total_beats + 2 * burst_beats + 1)
        self.arready, self.rvalid, self.rlast = Signal(), Signal(), Signal()
        self.rdata, self.rresp = Signal(len(self.dut.axi.rdata)), Signal(2)

    @property
    def ports(self):
        return [self.clk, self.rst, self.start, self.stop, self.pop, self.glitch, self.base, self.total,
                self.burst, self.zeros, self.arready, self.rvalid, self.rlast, self.rdata, self.rresp]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        rd = self.dut
        frag, self._inner = internals(rd)                 # its counts, for the invariants
        m.submodules.dut = frag
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        p.assumes("no_reset", ~self.rst)
        self._environment(m, p, rd)
        axi = rd.axi
        m.d.comb += [axi.arready.eq(self.arready), axi.rvalid.eq(self.rvalid), axi.rdata.eq(self.rdata),
                     axi.rresp.eq(self.rresp), axi.rlast.eq(self.rlast)]
        mutant = MUTANTS.get(self.mutant)
        tap = _Tap(axi, mutant(axi, self.glitch) if callable(mutant) else {})
        max_beats = self.D // 4 if self.mutant == "ar_outstanding_beats" else self.D
        max_bursts = 1 if self.mutant == "ar_outstanding_bursts" else self.D
        mon = read_master_checks(p, m, tap, max_burst=16, max_bursts=max_bursts, max_beats=max_beats)
        self._design_rules(m, p, rd, mon, tap)
        if self.mutant is None:
            self._invariants(m, p, rd, mon)
        self.props_names = p.names
        return m

    def _environment(self, m, p, rd):
        active, a1, a2 = Signal(), Signal(), Signal()
        m.d.sync += [a1.eq(active), a2.eq(active & a1)]
        with m.If(self.start):
            m.d.sync += active.eq(1)
        with m.Elif(rd.done & self.stop):
            m.d.sync += active.eq(0)
        self.active, self.settled = active, Signal()
        m.d.comb += self.settled.eq(active & a1 & a2)
        p.assumes("start_between_passes", ~self.start | ~active)
        for name, sig, steady in (("total", self.total, active & a1), ("base", self.base, active & a1),
                                  ("burst", self.burst, self.settled), ("zeros", self.zeros, self.settled)):
            p.assumes(f"{name}_stable_in_pass", ~steady | (sig == p.past(sig, name=f"{name}_q")))
        p.assumes("burst_pow2", Cat(*(self.burst == (1 << i) for i in range(self.MB.bit_length()))).any()
                  & (self.burst <= self.MB))
        p.assumes("total_whole_bursts", (self.total <= self.T) & (~self.settled | ((self.total & (self.burst - 1)) == 0)))
        p.assumes("total_nonzero", self.total != 0)
        # the host's pointer rule (docs/build.md, "Pointer checks"): each base aligned to the longest
        # burst (8 beats, 256 bytes); a 4 KB boundary is then never inside a burst the master aligns itself
        p.assumes("base_burst_aligned", self.base[:8] == 0)
        # the buffer inside the address space (the host checks it is inside its HBM channel)
        p.assumes("buffer_in_space", self.base <= (1 << len(self.base)) - 32 * (self.T + 1))
        m.d.comb += [rd.start.eq(self.start), rd.run.eq(active), rd.base.eq(self.base), rd.total.eq(self.total),
                     rd.burst.eq(self.burst)]
        register_skips(m, "sync", rd, lambda beat: self.zeros.bit_select(beat, 1))
        # the FIFO: its level a register (a write counts a cycle later), a reader that takes any time
        # (the mutant: a FIFO a quarter the depth the master was built for)
        depth = self.D // 4 if self.mutant == "fifo_no_overflow" else self.D
        level = Signal(range(2 * self.D + 2), name="fifo_level_model")
        m.d.sync += level.eq(level + rd.beats.valid - (self.pop & (level != 0)))
        m.d.comb += [rd.fifo_level.eq(level), rd.beats.ready.eq(1)]
        self.level = level
        self.depth = depth

    def _design_rules(self, m, p, rd, mon, axi):
        # axi: the channels as the monitor sees them (a mutant's, or the master's)
        p.asserts("fifo_no_overflow", when=rd.beats.valid, cond=(self.level < self.depth))
        p.asserts("r_to_fifo_in_order", (rd.beats.valid == p.past(mon.r_fire, name="r_fire_q")) &
                  (~rd.beats.valid | (rd.beats.payload == p.past(axi.rdata, name="rdata_q"))),
                  reach=rd.beats.valid)
        # an error response reaches ``fault`` (with its code) with its beat, a cycle after R, and only then
        bad_r = p.past(mon.r_fire & (axi.rresp != RESP_OKAY), name="r_error_q")
        resp_q = p.past(axi.rresp, name="rresp_q")
        p.asserts("fault_on_error_r", (rd.fault == bad_r) & (~rd.fault | (rd.fault_resp == resp_q)), reach=rd.fault)
        # ARs: for a non-zero burst of the pass, increasing, each once; done after the last
        beat = Signal(len(axi.araddr), name="ar_beat")
        m.d.comb += beat.eq((axi.araddr - self.base) >> 5)
        last_beat, any_ar = Signal.like(beat, name="ar_prev_beat"), Signal(name="ar_any_in_pass")
        self.last_ar_beat, self.any_ar = last_beat, any_ar
        with m.If(self.start):
            m.d.sync += any_ar.eq(0)
        with m.Elif(mon.ar_fire):
            m.d.sync += [last_beat.eq(beat), any_ar.eq(1)]
        p.asserts("ar_in_pass", when=axi.arvalid, cond=(self.active & (beat < self.total) &
                                                 ((beat & (self.burst - 1)) == 0) &
                                                 ~self.zeros.bit_select(beat[:len(self.total)], 1) &
                                                 (axi.arlen == self.burst - 1)))
        p.asserts("ar_increasing", when=axi.arvalid, cond=~any_ar | (beat > last_beat))
        asked = Signal(range(self.T + 1), name="ar_count_in_pass")
        with m.If(self.start):
            m.d.sync += asked.eq(0)
        with m.Elif(mon.ar_fire):
            m.d.sync += asked.eq(asked + 1)
        self.asked = asked
        wanted = sum((((k & (self.burst - 1)) == 0) & (k < self.total) & ~self.zeros[k]).as_unsigned()
                     for k in range(self.T))
        done = rd.done | self.glitch if self.mutant == "done_after_all" else rd.done
        p.asserts("done_after_all", when=(done & self.settled), cond=((asked == wanted) & (mon.beats_out == 0)
                                                               & ~rd.beats.valid))
        p.covers("cover_pass_done", rd.done & self.settled & (asked >= 2) & (self.burst >= 2))
        p.covers("cover_fifo_full", self.level == self.D - 1)
        p.covers("cover_ar_stalled", axi.arvalid & ~axi.arready & p.past(axi.arvalid & ~axi.arready, name="ar_st2"))

    def _invariants(self, m, p, rd, mon):
        """What k-induction needs besides the properties (each proved with them): the master's in-flight
        count as the monitor's, the level it works from within the FIFO, the monitor's AR queue holding the
        pass's length."""
        d, D = self._inner, self.D
        inflight = d["inflight"]
        p.asserts("inv_inflight", inflight == mon.beats_out + d["r_valid_q"])
        p.asserts("inv_level", self.level + inflight <= D)
        req = d["req"]
        below = sum((((k & (self.burst - 1)) == 0) & (k < req) & ~self.zeros[k]).as_unsigned() for k in range(self.T))
        p.asserts("inv_asked", ~self.settled | ((self.asked == below) & (req <= self.total)
                                                & ((req & (self.burst - 1)) == 0)))
        settle = d["settle"]
        p.asserts("inv_ar_walk", (settle < rd.ISSUE_DELAY) & ((settle == 0) | (~self.any_ar & ~d["settled"]))
                  & (~self.active | ~d["settled"] | self.settled)
                  & (~self.active | ~self.settled | (d["settle"] != 0) | ~self.any_ar | (self.last_ar_beat < req)))
        depth = len(mon.ar_lens)
        used = Signal(range(depth), name="inv_queue_used")
        m.d.comb += used.eq(Mux(mon.ar_tail >= mon.ar_head, mon.ar_tail - mon.ar_head, mon.ar_tail + depth - mon.ar_head))
        in_queue = []
        for i in range(depth):
            off = Signal(range(depth), name=f"inv_queue_off{i}")
            m.d.comb += off.eq(Mux(i >= mon.ar_head, i - mon.ar_head, i + depth - mon.ar_head))
            in_queue.append(off < used)
        steady = self.settled & p.past(self.settled, name="inv_settled_q")
        p.asserts("inv_ar_queue", (mon.ar_head < depth) & (mon.ar_tail < depth) & (used == mon.bursts_out)
                  & Cat(*(~q | (mon.ar_lens[i] == self.burst - 1) for i, q in enumerate(in_queue))).all()
                  & (~steady | (mon.bursts_out == 0) | ((mon.beats_out + mon.r_beat == mon.bursts_out * self.burst)
                                                       & (mon.r_beat < self.burst)))
                  & (steady | ((mon.bursts_out == 0) & (mon.r_beat == 0) & (inflight == 0)))
                  & ((mon.bursts_out != 0) | ((mon.r_beat == 0) & (mon.beats_out == 0))))


class _Only:
    """A Props that keeps one assertion (the mutant's) and every assumption and cover."""

    def __init__(self, props, name):
        self._p, self._name = props, name

    def __getattr__(self, attr):
        return getattr(self._p, attr)

    def asserts(self, name, cond, when=None, reach=None):
        if name == self._name:
            self._p.asserts(name, cond, when=when)
