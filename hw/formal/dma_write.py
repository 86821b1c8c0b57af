"""Formal wrapper of :class:`hw.dma.axi_write.AxiWriteMaster` on its own, its inputs as DmaEngine drives them.

The environment (assumed): ``start`` one cycle, only between passes; ``run`` from the cycle after it to
some cycle after ``done``; ``total`` and ``base`` (aligned to the longest burst, 256 bytes: the host's pointer rule) stable from the cycle after ``start``,
``burst_len`` (a power of two up to 8) from two cycles after it; ``total`` a multiple of it; the burst
and beat streams (the FIFOs' read sides) keep the stream rules (valid held, payload stable), carry only
this pass's work (at most ``total`` / ``burst_len`` burst starts, each a multiple of ``burst_len`` below
``total``, and ``total`` beats) and start once the pass has settled (the write path's first burst comes
many cycles after the start). The slave: any AW/W READY, any B timing, B only for written bursts.

Proved on top of the AXI4 rules: every AW is one of the queued bursts at its own address, with the
pass's length; every W beat is the next queued beat; ``done`` only once every burst of the pass has its
B; a non-OKAY B raises ``fault`` with its code in that cycle (and only then).
"""

from amaranth.hdl import Cat, ClockDomain, Mux, ClockSignal, Elaboratable, Module, ResetSignal, Signal

from nantucket.hw.axi import RESP_OKAY
from nantucket.hw.dma.axi_write import AxiWriteMaster

from .axi4 import write_master_checks
from .dma_read import _Only, _Tap
from .props import Props, internals

__all__ = ["WriteMasterHarness", "MUTANTS"]

#: property -> how its mutant breaks the channels seen by the monitor (``glitch``: a free input)
MUTANTS = {
    "aw_valid_held": lambda s, g: {"awvalid": s.awvalid & ~g},
    "aw_payload_stable": lambda s, g: {"awaddr": s.awaddr ^ (g << 5)},
    "w_valid_held": lambda s, g: {"wvalid": s.wvalid & ~g},
    "w_payload_stable": lambda s, g: {"wdata": s.wdata ^ g},
    "w_last_exact": lambda s, g: {"wlast": s.wlast ^ g},
    "w_after_its_aw": lambda s, g: {"wvalid": s.wvalid | g},
    "aw_inside_4k": lambda s, g: {"awaddr": s.awaddr + g * 4064},
    "aw_len_legal": lambda s, g: {"awlen": s.awlen | Cat(g, g, g, g, g)},
    "aw_outstanding_bursts": "a limit one burst lower",
    "fault_on_error_b": lambda s, g: {"bresp": s.bresp ^ Cat(0, g)},
    "aw_burst_incr": lambda s, g: {"awburst": s.awburst ^ Cat(g, g)},
    "aw_size_full_beat": lambda s, g: {"awsize": s.awsize ^ g},
    "aw_addr_beat_aligned": lambda s, g: {"awaddr": s.awaddr | g},
    "aw_of_the_pass": lambda s, g: {"awaddr": s.awaddr + g * (32 << 6)},
    "w_of_the_pass": lambda s, g: {"wvalid": s.wvalid | g},
    "w_outstanding_bursts": "a limit one burst lower",
    "done_after_all_b": "done seen early (the master's done ORed with the glitch)",
}


class WriteMasterHarness(Elaboratable):
    def __init__(self, *, total_beats=32, write_bursts=4, addr_width=64, mutant=None, only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        self.T, self.WB, self.mutant, self.only = total_beats, write_bursts, mutant, only
        self.beat_bits = max(1, total_beats.bit_length())
        self.dut = AxiWriteMaster(total_beats=total_beats, beat_bits=self.beat_bits, write_bursts=write_bursts,
                                  addr_width=addr_width)
        self.clk, self.rst = Signal(), Signal()
        self.start, self.stop, self.glitch = Signal(), Signal(), Signal()
        self.base, self.total, self.burst = Signal(addr_width), Signal(range(total_beats + 1)), Signal(range(9))
        self.b_valid, self.b_payload = Signal(), Signal(self.beat_bits)
        self.d_valid, self.d_payload = Signal(), Signal(len(self.dut.beats.payload))
        self.awready, self.wready, self.bvalid, self.bresp = Signal(), Signal(), Signal(), Signal(2)

    @property
    def ports(self):
        return [self.clk, self.rst, self.start, self.stop, self.glitch, self.base, self.total, self.burst,
                self.b_valid, self.b_payload, self.d_valid, self.d_payload, self.awready, self.wready,
                self.bvalid, self.bresp]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        wr = self.dut
        frag, self._inner = internals(wr)                 # its counts and slices, for the invariants
        m.submodules.dut = frag
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        p.assumes("no_reset", ~self.rst)
        self._environment(m, p, wr)
        axi = wr.axi
        m.d.comb += [axi.awready.eq(self.awready), axi.wready.eq(self.wready), axi.bvalid.eq(self.bvalid),
                     axi.bresp.eq(self.bresp)]
        mutant = MUTANTS.get(self.mutant)
        tap = _Tap(axi, mutant(axi, self.glitch) if callable(mutant) else {})
        limit = self.WB - (1 if self.mutant in ("aw_outstanding_bursts", "w_outstanding_bursts") else 0)
        mon = write_master_checks(p, m, tap, max_burst=16, max_bursts=limit)
        self._design_rules(m, p, wr, mon, tap)
        if self.mutant is None:
            self._invariants(m, p, wr, mon)
        self.props_names = p.names
        return m

    def _environment(self, m, p, wr):
        active, a1, a2 = Signal(), Signal(), Signal()
        m.d.sync += [a1.eq(active), a2.eq(active & a1)]
        with m.If(self.start):
            m.d.sync += active.eq(1)
        with m.Elif(wr.done & self.stop):
            m.d.sync += active.eq(0)
        settled = Signal()
        m.d.comb += settled.eq(active & a1 & a2)
        self.active, self.settled = active, settled
        p.assumes("start_between_passes", ~self.start | ~active)
        for name, sig, steady in (("total", self.total, active & a1), ("base", self.base, active & a1),
                                  ("burst", self.burst, settled)):
            p.assumes(f"{name}_stable_in_pass", ~steady | (sig == p.past(sig, name=f"{name}_q")))
        p.assumes("burst_pow2", Cat(*(self.burst == (1 << i) for i in range(4))).any())
        p.assumes("total_whole_bursts", (self.total != 0) & (self.total <= self.T) &
                  (~settled | ((self.total & (self.burst - 1)) == 0)))
        # the host's pointer rule (docs/build.md, "Pointer checks"): each base aligned to the longest
        # burst (8 beats, 256 bytes); a 4 KB boundary is then never inside a burst the master aligns itself
        p.assumes("base_burst_aligned", self.base[:8] == 0)
        # the buffer inside the address space (the host checks it is inside its HBM channel)
        p.assumes("buffer_in_space", self.base <= (1 << len(self.base)) - 32 * (self.T + 1))
        m.d.comb += [wr.start.eq(self.start), wr.run.eq(active), wr.base.eq(self.base), wr.total.eq(self.total),
                     wr.burst_len.eq(self.burst)]
        # the two streams: stream rules, this pass's work only, from the settled pass on
        for name, valid, payload, port in (("bursts", self.b_valid, self.b_payload, wr.bursts),
                                           ("beats", self.d_valid, self.d_payload, wr.beats)):
            held, stable, stalled = p.hold_rules(valid, port.ready, payload, f"in_{name}")
            p.assumes(f"{name}_valid_held", held)
            p.assumes(f"{name}_payload_stable", stable)
            p.assumes(f"{name}_in_pass", ~valid | settled)
            m.d.comb += [port.valid.eq(valid), port.payload.eq(payload)]
        # fed_span: the beats the bursts fed so far cover (a sum, not a product: cheaper for the solver)
        self.fed_bursts = Signal(range(self.T + 2), name="fed_bursts")
        self.fed_beats = Signal(range(self.T + 2), name="fed_beats")
        fed_span = Signal(range(self.T + 9), name="fed_span")
        with m.If(self.start):
            m.d.sync += [self.fed_bursts.eq(0), self.fed_beats.eq(0), fed_span.eq(0)]
        with m.Else():
            m.d.sync += [self.fed_bursts.eq(self.fed_bursts + (self.b_valid & wr.bursts.ready)),
                         fed_span.eq(fed_span + Mux(self.b_valid & wr.bursts.ready, self.burst, 0)),
                         self.fed_beats.eq(self.fed_beats + (self.d_valid & wr.beats.ready))]
        self.fed_span = fed_span
        p.assumes("bursts_of_the_pass", ~self.b_valid | ((fed_span + self.burst <= self.total)
                                                          & (self.b_payload < self.total)
                                                          & ((self.b_payload & (self.burst - 1)) == 0)))
        p.assumes("beats_of_the_pass", ~self.d_valid | (self.fed_beats < self.total))

    def _design_rules(self, m, p, wr, mon, axi):
        # axi: the channels as the monitor sees them (a mutant's, or the master's)
        # bursts and beats reach AXI in order, each once: a queue of each's fed values would be wide, so
        # the counts and the in-order payload of a 2-entry slice: the AW is the oldest fed burst not sent
        sent_b, sent_d = Signal(range(self.T + 2), name="sent_bursts"), Signal(range(self.T + 2), name="sent_beats")
        with m.If(self.start):
            m.d.sync += [sent_b.eq(0), sent_d.eq(0)]
        with m.Else():
            m.d.sync += [sent_b.eq(sent_b + mon.aw_fire), sent_d.eq(sent_d + mon.w_fire)]
        self.sent_b, self.sent_d = sent_b, sent_d
        p.asserts("aw_of_the_pass", when=axi.awvalid, cond=(self.active & (sent_b < self.fed_bursts) &
                                                   (axi.awlen == self.burst - 1) &
                                                   (((axi.awaddr - self.base) >> 5) < self.total)))
        p.asserts("w_of_the_pass", when=axi.wvalid, cond=(self.active & (sent_d < self.fed_beats)))
        done = wr.done | self.glitch if self.mutant == "done_after_all_b" else wr.done
        p.asserts("done_after_all_b", when=(done & self.settled), cond=((mon.b_out == 0) &
                                                                  (sent_d == self.total)))
        p.asserts("fault_on_error_b", (wr.fault == (mon.b_fire & (axi.bresp != RESP_OKAY)))
                  & (~wr.fault | (wr.fault_resp == axi.bresp)), reach=wr.fault)
        p.covers("cover_pass_done", wr.done & self.settled & (sent_b >= 2) & (self.burst >= 2))
        p.covers("cover_outstanding_full", mon.b_out == self.WB)
        p.covers("cover_w_stalled", axi.wvalid & ~axi.wready & p.past(axi.wvalid & ~axi.wready, name="w_st2"))

    def _invariants(self, m, p, wr, mon):
        """What k-induction needs besides the properties (each proved with them): the master's
        thermometer counts as the monitor's, the monitor's AW queue holding the pass's length, the
        slices' contents as what was fed less what went out."""
        d = self._inner
        ahead, wait = d["aw_ahead"], d["b_wait"]

        def popcount(v):
            return sum(v[i].as_unsigned() for i in range(len(v)))
        p.asserts("inv_thermometers", ((ahead & (ahead + 1)) == 0) & ((wait & (wait + 1)) == 0)
                  & (popcount(ahead) == mon.w_bursts_ahead) & (popcount(wait) == mon.b_out)
                  & (mon.b_answerable + mon.w_bursts_ahead == mon.b_out))
        depth = len(mon.aw_lens)
        used = Signal(range(depth), name="inv_queue_used")
        m.d.comb += used.eq(Mux(mon.aw_tail >= mon.aw_head, mon.aw_tail - mon.aw_head,
                                mon.aw_tail + depth - mon.aw_head))
        in_queue = [Signal(name=f"inv_in_queue{i}") for i in range(depth)]
        for i, q in enumerate(in_queue):
            off = Signal(range(depth), name=f"inv_queue_off{i}")
            m.d.comb += [off.eq(Mux(i >= mon.aw_head, i - mon.aw_head, i + depth - mon.aw_head)), q.eq(off < used)]
        held = {n: d[f"{n}_slice.o__valid"].as_unsigned() + d[f"{n}_slice.skid_valid"] for n in ("burst", "beat")}
        p.asserts("inv_slices", (self.fed_bursts == self.sent_b + held["burst"])
                  & (self.fed_beats == self.sent_d + held["beat"]) & (self.active | ((held["burst"] == 0)
                                                                                     & (held["beat"] == 0))))
        fed_zero = (self.fed_bursts == 0) & (self.fed_beats == 0) & (self.fed_span == 0)
        p.asserts("inv_fed", (~self.active | self.settled | fed_zero)
                  & (~self.settled | ((self.fed_span == self.fed_bursts * self.burst)
                                      & (self.fed_span <= self.total) & (self.fed_beats <= self.total))))
        wide = len(self.sent_d) + 4
        done_b, done_w = Signal(wide, name="inv_bursts_answered"), Signal(wide, name="inv_bursts_written")
        m.d.comb += [done_b.eq(self.sent_b - mon.b_out), done_w.eq(self.sent_b - mon.w_bursts_ahead)]
        p.asserts("inv_counts", (~self.active | ((d["b_count"] == done_b * self.burst)
                                                  & (self.sent_d == done_w * self.burst + mon.w_beat)))
                  & ((self.settled & p.past(self.settled, name="inv_settled_q"))
                     | ((mon.b_out == 0) & (mon.w_bursts_ahead == 0) & (mon.w_beat == 0))))
        p.asserts("inv_done", ~wr.done | ~self.settled | (d["b_count"] == self.total))
        last = d["last_beat"]
        p.asserts("inv_w_beat", (~self.settled | (last == self.burst - 1))
                  & (d["w_first"] | ((mon.w_bursts_ahead != 0) & (mon.w_beat + d["w_left"] == last)))
                  & (~d["w_first"] | (mon.w_beat == 0))
                  & (~d["w_first"] | (mon.w_bursts_ahead == 0) | (d["w_left"] == last)))
        ok = lambda v: (v < self.total) & ((v & (self.burst - 1)) == 0)
        bs = "burst_slice."
        p.asserts("inv_slice_bursts", (~d[bs + "o__valid"] | ok(d[bs + "o__payload"]))
                  & (~d[bs + "skid_valid"] | ok(d[bs + "skid"])))
        p.asserts("inv_aw_queue", (used == mon.w_bursts_ahead) & (mon.aw_head < depth) & (mon.aw_tail < depth)
                  & Cat(*(~q | (mon.aw_lens[i] == d["last_beat"]) for i, q in enumerate(in_queue))).all())
