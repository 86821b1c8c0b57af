"""Formal wrapper of :class:`hw.control.ControlSlave` (wrapped from outside, the RTL untouched).

The environment: any AXI4-Lite master that keeps the master's rules (hw/formal/axi4lite.py), any
address, data and strobes; the kernel's side as the kernel drives it: ``done`` (with any ``reject``)
only while a run is in progress (from the ``start`` pulse on), once per run; any ``fault`` at any time.

Proved on top of the AXI4-Lite rules: ``start`` is one cycle and only between runs (no second start
while a run is in progress, whatever the host writes); the arguments the kernel takes (``run``,
``base``, ``record``) and the start checks' verdict (``refused``) are the same from the ``start`` pulse to
``done`` (argument writes during a run are ignored); ``idle`` is low from the start's acceptance to
``done``.
"""

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Elaboratable, Module, ResetSignal, Signal

from nantucket.hw.control import ControlSlave
from nantucket.hw.model.params import BuildParams

from .axi4lite import slave_checks
from .dma_read import _Only
from .props import Props, internals

__all__ = ["ControlHarness", "MUTANTS"]

#: property -> how its mutant breaks what the monitor sees of the slave (``glitch``: a free input)
MUTANTS = {
    "b_valid_held": lambda s, g: {"bvalid": s.bvalid & ~g},
    "r_valid_held": lambda s, g: {"rvalid": s.rvalid & ~g},
    "r_payload_stable": lambda s, g: {"rdata": s.rdata ^ g},
    "b_only_for_writes": lambda s, g: {"bvalid": s.bvalid | g},
    "r_only_for_reads": lambda s, g: {"rvalid": s.rvalid | g},
    "r_okay": lambda s, g: {"rresp": s.rresp | Cat(0, g)},
    "b_okay": lambda s, g: {"bresp": s.bresp | Cat(0, g)},
    "r_answers_read_in_time": "a bound (1 cycle) below the slave's read latency",
    "args_frozen_in_run": "an argument bit flipped while the run is in progress",
    "b_payload_stable": lambda s, g: {"bresp": s.bresp ^ Cat(g, 0)},
    "aw_outstanding_bounded": "a limit of one write",
    "w_outstanding_bounded": "a limit of one write",
    "ar_outstanding_bounded": "a limit of no read",
    "aw_taken_in_time": lambda s, g: {"awready": s.awready & ~g},
    "w_taken_in_time": lambda s, g: {"wready": s.wready & ~g},
    "ar_taken_in_time": lambda s, g: {"arready": s.arready & ~g},
    "b_answers_write_in_time": "a bound (1 cycle) below the slave's write latency",
    "start_between_runs": "a start seen during the run (the design's start ORed with the glitch)",
    "start_one_cycle": "a start seen two cycles (the glitch repeats the cycle after a start)",
    "busy_while_running": "idle seen high in a run (the design's idle ORed with the glitch)",
}


class _SlaveTap:
    def __init__(self, axil, override):
        for name in axil.signature.members:
            setattr(self, name, override.get(name, getattr(axil, name)))


class ControlHarness(Elaboratable):
    def __init__(self, params: BuildParams | None = None, *, max_wait=12, mutant=None, only=None):
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"mutant: one of {sorted(MUTANTS)}, got {mutant!r}")
        self.params = params or BuildParams(lanes=4, log_core=4, channels=4)
        if mutant in ("r_answers_read_in_time", "b_answers_write_in_time"):
            max_wait = 1                # a bound below the slave's latencies (3)
        elif mutant in ("aw_taken_in_time", "w_taken_in_time", "ar_taken_in_time"):
            max_wait = 2                # and a READY held low 3 cycles by the mutant
        self.max_wait, self.mutant, self.only = max_wait, mutant, only
        self.dut = ControlSlave(self.params)
        a = self.dut.axil
        self.clk, self.rst, self.glitch = Signal(), Signal(), Signal()
        self.inputs = {name: Signal(len(getattr(a, name)), name=f"m_{name}")
                       for name in ("awvalid", "awaddr", "wvalid", "wdata", "wstrb", "bready", "arvalid",
                                    "araddr", "rready")}
        self.done, self.reject = Signal(), Signal()
        self.fault = Signal(len(self.dut.fault.as_value()))

    @property
    def ports(self):
        return [self.clk, self.rst, self.glitch, self.done, self.reject, self.fault, *self.inputs.values()]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk), ResetSignal().eq(self.rst)]
        ctrl = self.dut
        frag, self._inner = internals(ctrl)                # its read steps, for the invariants
        m.submodules.dut = frag
        p = Props(m)
        if self.only is not None:
            p = _Only(p, self.only)
        p.assumes("no_reset", ~self.rst)
        for name, sig in self.inputs.items():
            m.d.comb += getattr(ctrl.axil, name).eq(sig)
        m.d.comb += [ctrl.reject.eq(self.reject), ctrl.fault.as_value().eq(self.fault)]
        mutant = MUTANTS.get(self.mutant)
        tap = _SlaveTap(ctrl.axil, mutant(ctrl.axil, self.glitch) if callable(mutant) else {})
        tap.signature = ctrl.axil.signature
        # the slave's own limits (hw/control.py): two writes (one held, one awaiting B), one read at a time
        writes = 1 if self.mutant in ("aw_outstanding_bounded", "w_outstanding_bounded") else 2
        reads = 0 if self.mutant == "ar_outstanding_bounded" else 1
        mon = slave_checks(p, m, tap, max_writes=writes, max_reads=reads, max_wait=self.max_wait)
        self._run_rules(m, p, ctrl, mon)
        if self.mutant is None:
            self._invariants(m, p, ctrl, mon)
        self.props_names = p.names
        return m

    def _invariants(self, m, p, ctrl, mon):
        """What k-induction needs besides the properties (each proved with them): the monitor's counts
        as the slave's holding registers (seen on its ports: AWREADY, WREADY and ARREADY low while one is
        held) and its read steps."""
        a = ctrl.axil
        p.asserts("inv_writes_held", (mon.writes_aw == (~a.awready).as_unsigned() + a.bvalid)
                  & (mon.writes_w == (~a.wready).as_unsigned() + a.bvalid))
        p.asserts("inv_reads_held", (mon.reads == (~a.arready).as_unsigned()) & (~a.rvalid | ~a.arready))
        commit, w_aged, b_ok, aw_decoded = (self._inner[n] for n in ("commit", "w_aged", "b_ok", "aw_decoded"))
        p.asserts("inv_write_steps", (~commit | (~a.awready & ~a.wready & ~a.bvalid)) & (~w_aged | ~a.wready)
                  & (~b_ok | ~a.bvalid) & (~aw_decoded | ~a.awready))
        # the write's address decode: each 2-bit digit one-hot (or none yet), at most one register hit
        def at_most_one(bits):
            bits = Cat(*bits)
            return (bits & (bits - 1)) == 0
        fields = [sig for name, sig in self._inner.items() if name.startswith("aw_field")]
        hits = [sig for name, sig in self._inner.items() if name.startswith("aw_hit_")]
        assert fields and hits, "the control slave's address decode registers (aw_field*, aw_hit_*)"
        p.asserts("inv_aw_decode", Cat(*(at_most_one(f) for f in fields)).all() & at_most_one(hits))
        steps, wait = self._inner["read_step"], mon.waited["r_answers_read"]
        reading = ~a.arready & ~a.rvalid
        p.asserts("inv_read_steps", ~(steps[0] & steps[1]) & ((steps != 0) == reading)
                  & (~steps[0] | (wait == 0)) & (~steps[1] | (wait == 1))
                  & (~a.rvalid | (wait == 0) | (wait == 2)) & (~a.arready | (wait == 0)))

    def _run_rules(self, m, p, ctrl, mon):
        running = Signal(name="running")          # from the start pulse to done, as the kernel sees it
        with m.If(ctrl.start):
            m.d.sync += running.eq(1)
        with m.Elif(self.done):
            m.d.sync += running.eq(0)
        p.assumes("done_only_in_run", ~self.done | running)
        m.d.comb += ctrl.done.eq(self.done)
        # what the assertions see of start and idle (a mutant's, or the slave's; the run is the slave's)
        start_q = p.past(ctrl.start, name="start_q")
        start, idle = ctrl.start, ctrl.idle
        if self.mutant == "start_between_runs":
            start = ctrl.start | self.glitch
        elif self.mutant == "start_one_cycle":
            start = ctrl.start | (self.glitch & start_q)
        elif self.mutant == "busy_while_running":
            idle = ctrl.idle | self.glitch
        p.asserts("start_between_runs", when=start, cond=~running)
        p.asserts("start_one_cycle", when=start, cond=~p.past(start, name="start_seen_q"))
        args = Cat(ctrl.run.as_value(), ctrl.base.as_value(), ctrl.record.as_value(), ctrl.refused)
        if self.mutant == "args_frozen_in_run":
            args = args ^ self.glitch           # an argument bit that changes during the run
        snap = Signal(len(args), name="args_at_start")
        with m.If(ctrl.start):
            m.d.sync += snap.eq(args)
        p.asserts("args_frozen_in_run", when=running, cond=(args == snap))
        p.asserts("busy_while_running", when=running, cond=~idle)
        p.covers("cover_run_done", running & self.done & p.past(mon.b_fire, name="b_q"))
        p.covers("cover_write_in_run", running & mon.b_fire)
        p.covers("cover_read_back", mon.r_fire & (ctrl.axil.rdata != 0))
