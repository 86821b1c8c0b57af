"""Formal wrapper of the kernel (hw/kernel.py's :class:`~nantucket.hw.kernel.NttKernel`: the control slave, the
sequencer, the status record's writer and :func:`hw.operation.share_port`) at a small build, with the NTT
engine replaced by a stub of :func:`hw.operation.engine_signature` (BMC through the NTT's multipliers would not
finish). The kernel takes the stub through its ``engines`` argument; the stub lives here only.

The stub (:class:`StubEngine`): on ``start``, one AR of ``beats`` beats on master 1 and, once its R beats are
in, one AW with its W beats on master 0, each at ``offset`` bytes into the channel's ``hbm_NN`` buffer (the
run's ``batch`` picks the offset, so the run's arguments place its accesses), then ``done`` with the write's
B (a non-OKAY B is its ``fault``). Its buffer is :data:`BUFFER_BYTES` from each base.

The environment (assumed): any AXI4-Lite host that keeps the master's rules (VALID held, address, data and
strobes stable), so any argument set, accepted or refused by the start checks; a start's bases and
record address below 2^40 and the record's place (the address rounded down to RECORD_BYTES, RECORD_BYTES long)
apart from master 0's buffer (the host's allocations); every HBM slave keeps the AXI4 slave's rules
(hw/formal/axi4.py: responses only for requests, in order, held) and answers within ``F`` cycles: AWREADY,
WREADY and ARREADY at most ``F`` - 1 cycles after their VALID, a B within ``F`` cycles of its last W, an R beat
within ``F`` of being due.

Proved (bounded): ``done`` within ``D`` cycles of every start (``done_in_time``; the least bound that holds,
a bound one lower fails); one status record per start (``one_record_per_run``: an AW at the record's place
exactly once between a start and its done); no HBM write outside the run's buffers and the record's place
(``writes_in_place``: every AW on every master, whole burst, while a run is in progress; none outside a
run); master 0, which the stub and the record writer share, keeps the AXI4 master's rules across the hand-over
(hw/formal/axi4.py on its write channels: VALID held until READY with the payload stable, WLAST exact, legal
bursts, W after its AW).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Elaboratable, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring

from nantucket.hw.axi import BURST_INCR, RESP_OKAY, Axi4Signature
from nantucket.hw.kernel import NttKernel
from nantucket.hw.model.layout import BEAT_BITS
from nantucket.hw.model.ops import OPERATIONS
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_BYTES
from nantucket.hw.operation import engine_signature

from .axi4 import read_master_checks, write_master_checks
from .dma_read import _Only, _Tap
from .dma_write import MUTANTS as WRITE_MUTANTS
from .props import Props

__all__ = ["KernelHarness", "StubEngine", "MUTANTS", "GROUPS", "BUFFER_BYTES", "DONE_CYCLES"]

#: each channel's buffer of the stub, from its base (the kernel refuses a base off 256 bytes)
BUFFER_BYTES = 256
#: the least ``done_in_time`` bound that holds at F = 2 (measured: one lower fails)
DONE_CYCLES = 22

_AXI_RULES = ("aw_valid_held", "aw_payload_stable", "w_valid_held", "w_payload_stable", "w_last_exact",
              "w_after_its_aw", "aw_inside_4k", "aw_len_legal", "aw_burst_incr", "aw_size_full_beat",
              "aw_addr_beat_aligned", "aw_outstanding_bursts")

#: property -> how its mutant breaks what the monitor sees (``glitch``: a free input)
MUTANTS = {
    "done_in_time": "a bound one cycle lower",
    "one_record_per_run": "an AW at the record's place counted twice on a free glitch",
    "writes_in_place": lambda s, g: {"awaddr": s.awaddr + g * BUFFER_BYTES},
    **{name: WRITE_MUTANTS[name] for name in _AXI_RULES},
}
#: the two groups of assertions, each its own proof (one solver run over all of them was 10 times slower
#: at the depth a whole run needs): the runs, and master 0's AXI4 master rules
GROUPS = {"runs": ("done_in_time", "one_record_per_run", "writes_in_place"), "master0": _AXI_RULES}


class StubEngine(wiring.Component):
    """An engine of :func:`hw.operation.engine_signature` (``dma`` domain): one read on master 1, then one
    write on master 0, ``beats`` beats each, at ``batch % 4`` x ``beats`` beats into the buffers; ``done`` with
    the write's B. ``dma`` carries the AXI signature as NttKernel reads it of its first engine."""

    def __init__(self, params: BuildParams, axi: Axi4Signature, *, beats: int = 1):
        super().__init__(engine_signature(params, axi))
        self.dma = SimpleNamespace(axi_signature=axi)
        self._beats, self._axi = beats, axi

    def elaborate(self, platform):
        m = Module()
        rd, wr = self.m_axi[1], self.m_axi[0]
        beat_bytes = self._axi.beat_bytes
        offset = Signal(64, name="stub_offset")
        m.d.comb += offset.eq(self.run.batch[:2] * (self._beats * beat_bytes))
        last = self._beats - 1
        count = Signal(range(self._beats + 1), name="stub_beat")
        for axi, prefix in ((rd, "ar"), (wr, "aw")):
            m.d.comb += [getattr(axi, f"{prefix}len").eq(last), getattr(axi, f"{prefix}size").eq(self._axi.size_code),
                         getattr(axi, f"{prefix}burst").eq(BURST_INCR)]
        m.d.comb += [rd.araddr.eq(self.base[1] + offset), wr.awaddr.eq(self.base[0] + offset),
                     wr.wdata.eq(Cat(count, self.run.as_value())), wr.wstrb.eq(-1), wr.wlast.eq(count == last)]
        with m.FSM(domain="dma"):
            with m.State("IDLE"):
                with m.If(self.start):
                    m.next = "AR"
            with m.State("AR"):
                m.d.comb += rd.arvalid.eq(1)
                with m.If(rd.arready):
                    m.next = "R"
            with m.State("R"):
                m.d.comb += rd.rready.eq(1)
                with m.If(rd.rvalid & rd.rlast):
                    m.next = "AW"
            with m.State("AW"):
                m.d.comb += wr.awvalid.eq(1)
                with m.If(wr.awready):
                    m.d.dma += count.eq(0)
                    m.next = "W"
            with m.State("W"):
                m.d.comb += wr.wvalid.eq(1)
                with m.If(wr.wready):
                    m.d.dma += count.eq(count + 1)
                    with m.If(count == last):
                        m.next = "B"
            with m.State("B"):
                m.d.comb += wr.bready.eq(1)
                with m.If(wr.bvalid):
                    m.d.comb += [self.done.eq(1), self.fault.valid.eq(wr.bresp != RESP_OKAY),
                                 self.fault.write.eq(1), self.fault.resp.eq(wr.bresp)]
                    m.next = "IDLE"
        return m


class _Without:
    """A Props without one assertion (and its cover)."""

    def __init__(self, props, name):
        self._p, self._name = props, name

    def __getattr__(self, attr):
        return getattr(self._p, attr)

    def asserts(self, name, cond, when=None, reach=None):
        if name != self._name:
            self._p.asserts(name, cond, when=when, reach=reach)


class _Group:
    """A Props that keeps the assertions named in ``names`` (and their covers), every assumption and cover."""

    def __init__(self, props, names):
        self._p, self._names = props, names

    def __getattr__(self, attr):
        return getattr(self._p, attr)

    def asserts(self, name, cond, when=None, reach=None):
        if name in self._names:
            self._p.asserts(name, cond, when=when, reach=reach)


class _AssumeOnly:
    """A Props whose assertions and covers are dropped and whose assumptions are named with ``prefix``
    (the AXI4 slave's rules on the masters whose master rules are not this proof's)."""

    def __init__(self, props, prefix):
        self._p, self._prefix = props, prefix

    def __getattr__(self, attr):
        return getattr(self._p, attr)

    def asserts(self, name, cond, when=None, reach=None):
        pass

    def covers(self, name, cond):
        pass

    def assumes(self, name, cond):
        self._p.assumes(self._prefix + name, cond)


class KernelHarness(Elaboratable):
    def __init__(self, params: BuildParams | None = None, *, group=None, max_wait=2, done_cycles=DONE_CYCLES,
                 beats=1, mutant=None, only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        if group is not None and group not in GROUPS:
            raise ValueError(f"group: one of {sorted(GROUPS)}, got {group!r}")
        self.group = group
        self.params = params or BuildParams(lanes=4, log_core=4, channels=2)
        self.F, self.D, self.mutant, self.only = max_wait, done_cycles, mutant, only
        self.axi = Axi4Signature(addr_width=64, data_width=BEAT_BITS)
        self.stub = StubEngine(self.params, self.axi, beats=beats)
        self.kernel = NttKernel(self.params, engines=[(OPERATIONS[0], self.stub)])
        self.clk, self.rst, self.glitch = Signal(), Signal(), Signal()
        host = self.kernel.s_axi_control
        self.host = {name: Signal(len(getattr(host, name)), name=f"host_{name}")
                     for name in ("awvalid", "awaddr", "wvalid", "wdata", "wstrb", "bready", "arvalid", "araddr",
                                  "rready")}
        self.slave = [{name: Signal(len(getattr(self.kernel.m_axi[ch], name)), name=f"s{ch}_{name}")
                       for name in ("awready", "wready", "bvalid", "bresp", "arready", "rvalid", "rresp", "rlast")}
                      for ch in range(self.params.channels)]

    @property
    def ports(self):
        return [self.clk, self.rst, self.glitch, *self.host.values(), *(s for sl in self.slave for s in sl.values())]

    def elaborate(self, platform):
        m = Module()
        m.domains.dma = ClockDomain("dma")
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal("dma").eq(self.clk), ResetSignal("dma").eq(self.rst),
                     ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        k = self.kernel
        m.submodules.kernel = k
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        if self.group is not None:
            p = _Group(p, GROUPS[self.group])
        p.assumes("no_reset", ~self.rst)
        self._host(m, p)
        ctrl = k.control
        snap = self._arguments(m, p, ctrl)
        taps, mons = self._slaves(m, p)
        self._run_rules(m, p, ctrl, snap, taps, mons)
        self.props_names = p.names
        return m

    def _host(self, m, p):
        """Any AXI4-Lite master keeping the master's rules."""
        host = self.kernel.s_axi_control
        for name, sig in self.host.items():
            m.d.comb += getattr(host, name).eq(sig)
        for ch, v, r, payload in (("aw", host.awvalid, host.awready, host.awaddr),
                                  ("w", host.wvalid, host.wready, Cat(host.wdata, host.wstrb)),
                                  ("ar", host.arvalid, host.arready, host.araddr)):
            held, stable, _ = p.hold_rules(v, r, payload, f"host_{ch}")
            p.assumes(f"host_{ch}_valid_held", held)
            p.assumes(f"host_{ch}_payload_stable", stable)
        # register reads, and writes from a start to its done, do not move a run (control_slave proves
        # writes in a run ignored and reads side-effect free but for ap_done): the host writes only, between
        # runs, so that the solver's depth goes into the run
        p.assumes("host_writes_only", ~host.arvalid)
        p.assumes("host_quiet_in_run", ~self.kernel.busy | ~(host.awvalid | host.wvalid))

    def _arguments(self, m, p, ctrl):
        """The start's bases and record address, latched at the start, and the host's allocations assumed."""
        C = self.params.channels
        base = [Signal(64, name=f"run_base{ch}") for ch in range(C)]
        record = Signal(64, name="run_record")
        with m.If(ctrl.start):
            m.d.sync += [record.eq(ctrl.record.address & ~(RECORD_BYTES - 1))]
            m.d.sync += [base[ch].eq(ctrl.base[ch]) for ch in range(C)]
        rec_now = ctrl.record.address & ~(RECORD_BYTES - 1)
        apart = (rec_now + RECORD_BYTES <= ctrl.base[0]) | (ctrl.base[0] + BUFFER_BYTES <= rec_now)
        small = Cat(*(ctrl.base[ch][40:] == 0 for ch in range(C)), ctrl.record.address[40:] == 0).all()
        p.assumes("arguments_allocated", ~ctrl.start | (small & apart))
        return SimpleNamespace(base=base, record=record)

    def _slaves(self, m, p):
        """Every master's slave: the AXI4 slave's rules, answers within F cycles. Master 0's write channels
        carry this proof's master rules (the hand-over); the rest only the slave's."""
        taps, mons = [], []
        for ch in range(self.params.channels):
            axi = self.kernel.m_axi[ch]
            for name, sig in self.slave[ch].items():
                m.d.comb += getattr(axi, name).eq(sig)
            mutant = MUTANTS.get(self.mutant)
            over = mutant(axi, self.glitch) if ch == 0 and callable(mutant) else {}
            tap = _Tap(axi, over)
            # master 0 has one burst at a time (the stub's, then the record's): its limit 1 is proved, and
            # W's "bursts ahead" (at most the bursts awaiting B) is not stated again (its case, two ahead, is
            # never reached)
            wp = _Without(p, "w_outstanding_bursts") if ch == 0 else _AssumeOnly(p, f"m{ch}_")
            bursts = 0 if (ch == 0 and self.mutant == "aw_outstanding_bursts") else 1
            wmon = write_master_checks(wp, m, tap, max_bursts=bursts if ch == 0 else 2)
            rmon = read_master_checks(_AssumeOnly(p, f"m{ch}_"), m, axi, max_bursts=2, max_beats=16)
            F = self.F
            for name, cond in (("awready", axi.awvalid & ~axi.awready), ("wready", axi.wvalid & ~axi.wready),
                               ("arready", axi.arvalid & ~axi.arready),
                               ("bvalid", (wmon.b_answerable != 0) & ~axi.bvalid),
                               ("rvalid", (rmon.beats_out != 0) & ~axi.rvalid)):
                waited = Signal(range(F + 1), name=f"s{ch}_{name}_waited")
                m.d.sync += waited.eq(Mux(cond, Mux(waited == F, waited, waited + 1), 0))
                p.assumes(f"m{ch}_{name}_within_F", ~cond | (waited < F - 1))
            taps.append(tap)
            mons.append(wmon)
        return taps, mons

    def _run_rules(self, m, p, ctrl, snap, taps, mons):
        running = Signal(name="running")              # from the control's start to its done
        with m.If(ctrl.start):
            m.d.sync += running.eq(1)
        with m.Elif(ctrl.done):
            m.d.sync += running.eq(0)
        accepted = Signal(name="run_accepted")
        with m.If(ctrl.start):
            m.d.sync += accepted.eq(ctrl.refused == 0)
        # done within D cycles of the start
        wait = Signal(range(self.D + 2), name="run_cycles")
        with m.If(ctrl.start):
            m.d.sync += wait.eq(0)
        with m.Elif(running & (wait <= self.D)):
            m.d.sync += wait.eq(wait + 1)
        bound = self.D - (1 if self.mutant == "done_in_time" else 0)
        p.asserts("done_in_time", when=running, cond=(wait < bound) | ctrl.done,
                  reach=running & ctrl.done & accepted & (wait == bound))
        # every AW: while a run is in progress, inside its channel's buffer or (master 0) at the record's place
        records = Signal(3, name="records_in_run")
        at_record = Signal(name="aw_at_record")
        m.d.comb += at_record.eq(mons[0].aw_fire & (taps[0].awaddr == snap.record))
        counted = at_record + (self.glitch & at_record if self.mutant == "one_record_per_run" else 0)
        with m.If(ctrl.start):
            m.d.sync += records.eq(0)
        with m.Elif(counted != 0):
            m.d.sync += records.eq(Mux(records == 7, records, records + counted))
        p.asserts("one_record_per_run", when=ctrl.done, cond=(records + counted == 1),
                  reach=ctrl.done & accepted)
        # inside [base, base + BUFFER_BYTES): the base on BUFFER_BYTES (the start checks refuse one off 256
        # bytes), the address in its block and the burst's end within it (compares of the block's bits:
        # the solver took 6 times longer on the 64-bit sums)
        places, k = [], BUFFER_BYTES.bit_length() - 1
        for ch, (tap, mon) in enumerate(zip(taps, mons)):
            end = tap.awaddr[:k] + (tap.awlen + 1) * self.axi.beat_bytes
            inside = (accepted & (snap.base[ch][:k] == 0) & (tap.awaddr[k:] == snap.base[ch][k:])
                      & (end <= BUFFER_BYTES))
            if ch == 0:
                inside = inside | ((tap.awaddr == snap.record) & (tap.awlen == RECORD_BYTES // self.axi.beat_bytes - 1))
            places.append(~mon.aw_fire | (running & inside))
        p.asserts("writes_in_place", Cat(*places).all(), reach=running & accepted & mons[0].aw_fire
                  & (taps[0].awaddr != snap.record))
        p.covers("cover_refused_run_done", running & ctrl.done & ~accepted)
