"""The `nantucket` Vitis RTL kernel: control slave + HBM DMA engine + NTT engine, and its thin top.

    s_axi_control ─► ControlSlave ─► the pass sequencer ─► DmaEngine ◄─► mNN_axi (HBM[NN])
                                     (NttKernel.elaborate) └──► NttEngine ◄─► (points streams of the DMA)

:class:`NttKernel` is the kernel in Amaranth terms (interfaces, ``dma`` and ``ntt`` clock domains).
:class:`VitisKernel` is the only place that knows Vitis' names: it flattens the interfaces into
``s_axi_control_*`` and ``mNN_axi_*`` ports, makes the two clock domains from ``ap_clk``/``ap_rst_n``
(DMA) and ``ap_clk_2``/``ap_rst_n_2`` (NTT), and exposes ``interrupt``.

A run: the host writes ``log_n`` and the ``hbm_NN`` base addresses and sets ap_start. A ``log_n``
outside the build's native sizes (``params.min_log_n`` .. 2k) finishes at once with STATUS.bad_size and
touches no point memory (it writes only its status record), as does any start
:meth:`hw.model.regmap.RegisterMap.check_start` refuses (the control decodes it: ``refused``).
Otherwise the run the control decoded (hw/run.py: size, inverse, coset,
``batch`` B transforms back to back in each pass, ``input_log_m`` a zero-extended input the DMA reads
without its zeros, ``chain_log_n`` the output written as the input of a larger run) is latched once as
one struct, held for both passes and given whole to the DMA, and the sequencer runs pass 1 (DMA pass 1
with the engine's pass 1), waits until the DMA has every write response, then pass 2, then raises done. An AXI error response on any
master is reported by the DMA and latched by the control slave into STATUS.axi_* (the run still
completes).

Crossing to the engine's ``ntt`` domain: the run and the pass bit as one value through one
``FFSynchronizer`` (held from several DMA cycles before each engine start to the end of its pass, so
stable whenever a start arrives), the engine's start through a ``PulseSynchronizer``.
"""

from types import SimpleNamespace

from amaranth.hdl import C, Cat, ClockDomain, ClockSignal, DomainRenamer, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer
from amaranth.lib.wiring import In, Out, connect, flipped

from .axi import AxiLiteSignature, Axi4Signature
from .control import ControlSlave
from .dma import DmaEngine
from .engine import NttEngine
from .model import regmap
from .model.params import BuildParams
from .model.record import RECORD_WORDS
from .record import RecordWriter
from .run import run_layout

__all__ = ["NttKernel", "VitisKernel"]

#: DMA cycles the engine's pass selection is held before its start toggle (> 2 synchronizer stages
#: of the faster ntt clock, with margin for any clock ratio the link may pick).
_PASS_SETUP_CYCLES = 4
#: DMA cycles from the last pass window's end to the record's write: the NTT-domain cycle counts cross
#: two synchronizers (dma -> ntt window, ntt -> dma counts) and must have settled, for any clock ratio
#: up to 4 : 1 either way.
_SETTLE_CYCLES = 16


def _control_signature() -> AxiLiteSignature:
    """The control port, from the master's side (the kernel's port is its flip)."""
    return AxiLiteSignature(addr_width=regmap.ADDRESS_BITS, data_width=regmap.DATA_BITS)


class NttKernel(wiring.Component):
    """The kernel with Amaranth interfaces. Domains: ``dma`` (control, AXI) and ``ntt`` (engine).

    Ports: ``s_axi_control`` (AXI4-Lite slave), ``m_axi`` (C AXI4 masters), ``interrupt``.
    Properties: params, register_map, dma, engine, control.
    """

    def __init__(self, params: BuildParams, *, dma_options: dict | None = None):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        self._map = regmap.RegisterMap(params)
        self._control = ControlSlave(params)
        self._dma = DmaEngine(params, **(dma_options or {}))
        self._engine = NttEngine(params)
        self._writer = RecordWriter(self._dma.axi_signature.write_signature)
        super().__init__({
            "s_axi_control": In(_control_signature()),
            "m_axi": Out(self._dma.axi_signature).array(params.channels),
            "interrupt": Out(1),
        })
        #: 1 from an accepted start to done (dma domain); not a port, read by simulation harnesses.
        self.busy = Signal()

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def register_map(self) -> regmap.RegisterMap:
        return self._map

    @property
    def dma(self) -> DmaEngine:
        return self._dma

    @property
    def engine(self) -> NttEngine:
        return self._engine

    @property
    def control(self) -> ControlSlave:
        return self._control

    def elaborate(self, platform):
        m = Module()
        ctrl, dma, engine = self._control, self._dma, self._engine
        m.submodules.control = DomainRenamer("dma")(ctrl)
        m.submodules.dma = dma
        m.submodules.engine = DomainRenamer("ntt")(engine)
        m.submodules.status_record = writer = DomainRenamer("dma")(self._writer)

        connect(m, flipped(self.s_axi_control), ctrl.axil)
        for ch in range(1, self._params.channels):
            connect(m, flipped(self.m_axi[ch]), dma.m_axi[ch])
        connect(m, dma.points_out, engine.points_in)
        connect(m, engine.points_out, dma.points_in)
        m.d.comb += self.interrupt.eq(ctrl.interrupt)

        seq = self._sequencer(m)
        self._lend_master0(m, seq.recording)
        passes_ntt = self._cross_to_ntt(m, seq)
        self._record(m, seq, self._count_ntt_cycles(m, passes_ntt))
        return m

    def _sequencer(self, m):
        """The run's steps (dma domain): latch the run, pass 1, pass 2, settle, write the record, done. A
        refused start goes straight to the record. Returns the sequencer's registers."""
        ctrl, dma, writer = self._control, self._dma, self._writer
        p = self._params
        s = SimpleNamespace(
            run=Signal(run_layout(p), init={"batch": 1}),   # the run, latched at its start, held to done
            pass2=Signal(),                   # the engine's pass selection, held through the pass
            engine_start=Signal(),            # one cycle per engine start, crossed as a pulse
            in_pass=Signal(2),                # registered: pass 1 / pass 2 in progress
            rejected=Signal(),                # the start was refused: the record carries its bits
            recording=Signal(),               # master 0's write channels belong to the record writer
            busy=self.busy)
        setup = Signal(range(_SETTLE_CYCLES + 1))
        m.d.comb += dma.run.eq(s.run)
        for ch in range(p.channels):
            m.d.comb += dma.base[ch].eq(ctrl.base[ch])
        with m.FSM(domain="dma") as fsm:
            with m.State("IDLE"):
                with m.If(ctrl.start):
                    m.d.dma += [s.pass2.eq(0), setup.eq(0), s.run.eq(ctrl.run), s.rejected.eq(ctrl.refused != 0)]
                    # Run.check, decoded once by the control: a refused start only writes its record
                    with m.If(ctrl.refused == 0):
                        m.next = "SETUP1"
                    with m.Else():
                        m.next = "RECORD"
            for index, (setup_state, run_state, nxt) in enumerate(
                    (("SETUP1", "PASS1", "SETUP2"), ("SETUP2", "PASS2", "SETTLE")), start=1):
                with m.State(setup_state):
                    m.d.dma += setup.eq(setup + 1)
                    with m.If(setup == _PASS_SETUP_CYCLES):
                        m.d.comb += [s.engine_start.eq(1), dma.start.eq(1), dma.pass_index.eq(index)]
                        m.next = run_state
                with m.State(run_state):
                    m.d.comb += dma.pass_index.eq(index)
                    with m.If(dma.done):
                        m.d.dma += [setup.eq(0), s.pass2.eq(1)]
                        m.next = nxt
            with m.State("SETTLE"):             # the NTT-domain cycle counts reach the dma domain
                m.d.dma += setup.eq(setup + 1)
                with m.If(setup == _SETTLE_CYCLES):
                    m.next = "RECORD"
            with m.State("RECORD"):
                m.d.comb += [s.recording.eq(1), writer.start.eq(~writer.busy)]
                with m.If(writer.done):
                    m.d.comb += [ctrl.done.eq(1), ctrl.reject.eq(s.rejected)]
                    m.next = "IDLE"
        m.d.dma += s.in_pass.eq(Cat(fsm.ongoing("PASS1"), fsm.ongoing("PASS2")))
        m.d.comb += self.busy.eq(~fsm.ongoing("IDLE"))
        return s

    def _lend_master0(self, m, recording):
        """Master 0: the DMA's, but its write channels are the record writer's while ``recording`` (the
        DMA has every write response of the run by then). An error response either gets is a fault."""
        dma, writer, port = self._dma, self._writer, self.m_axi[0]
        inner = dma.m_axi[0]
        for name, member in inner.signature.members.items():
            outer, mine = getattr(port, name), getattr(inner, name)
            if name not in writer.axi.signature.members:
                m.d.comb += (outer.eq(mine) if member.flow == Out else mine.eq(outer))
            elif member.flow == Out:
                m.d.comb += outer.eq(Mux(recording, getattr(writer.axi, name), mine))
            else:
                gated = name.endswith(("valid", "ready"))
                m.d.comb += [mine.eq(outer & ~recording if gated else outer),
                             getattr(writer.axi, name).eq(outer & recording if gated else outer)]
        fault = self._control.fault
        with m.If(writer.fault):
            m.d.comb += [fault.valid.eq(1), fault.write.eq(1), fault.resp.eq(writer.fault_resp), fault.channel.eq(0)]
        with m.Else():
            m.d.comb += fault.eq(dma.fault)

    def _cross_to_ntt(self, m, s):
        """The run, the pass and the pass windows across to the ntt domain once; the engine's start as a
        pulse. Returns the pass windows as the ntt domain sees them."""
        ctrl, engine = self._control, self._engine
        layout = run_layout(self._params)
        # The run and the pass are held from _PASS_SETUP_CYCLES DMA cycles before the start pulse to the
        # end of the pass, so the struct is stable whenever a start arrives: one synchronizer carries it.
        # The shift and the row step follow the argument registers (which the control freezes from start to
        # done) rather than the latched copy: the coset generator starts its set-up for a new shift or
        # step as soon as the host writes it. The pass windows only time the passes (the record's NTT cycle counts).
        crossing = Signal(layout)
        m.d.comb += [crossing.eq(s.run), crossing.coset_shift.eq(ctrl.run.coset_shift),
                     crossing.row_step.eq(ctrl.run.row_step)]
        run_ntt, pass2_ntt, passes_ntt = Signal(layout), Signal(), Signal(2)
        m.submodules.run_sync = FFSynchronizer(Cat(s.pass2, s.in_pass, crossing.as_value()),
                                               Cat(pass2_ntt, passes_ntt, run_ntt.as_value()), o_domain="ntt",
                                               init=layout.const({"batch": 1}).as_value().value << 3)
        m.submodules.start_sync = start_sync = PulseSynchronizer("dma", "ntt")
        m.d.comb += [start_sync.i.eq(s.engine_start), engine.start.eq(start_sync.o), engine.pass2.eq(pass2_ntt),
                     engine.run.eq(run_ntt)]
        return passes_ntt

    @staticmethod
    def _count_ntt_cycles(m, passes_ntt):
        """NTT cycles of each pass window (ntt domain, each restarted when its window opens), brought back to
        the dma domain; stable there _SETTLE_CYCLES after the last window closed."""
        counts = [Signal(32, name=f"pass{i + 1}_ntt_cycles") for i in range(2)]
        for i, count in enumerate(counts):
            was = Signal(name=f"pass{i + 1}_ntt_window")
            m.d.ntt += was.eq(passes_ntt[i])
            with m.If(passes_ntt[i] & ~was):
                m.d.ntt += count.eq(1)
            with m.Elif(passes_ntt[i] & ~count.all()):
                m.d.ntt += count.eq(count + 1)
        counts_dma = Signal(64)
        m.submodules.cycles_sync = FFSynchronizer(Cat(*counts), counts_dma, o_domain="dma")
        return counts_dma

    def _record(self, m, s, ntt_counts):
        """The status record's words (hw.model.record) from the control, the run's cycle counters and the
        start count; the writer sends them while the sequencer is in RECORD."""
        ctrl, writer = self._control, self._writer
        words = {name: C(value, 32) for name, value in self._map.id_values.items()}
        sequence = Signal(32)
        dma_counts = [Signal(32, name=f"pass{i + 1}_dma_cycles") for i in range(2)]
        total = Signal(32)
        with m.If(ctrl.start):
            m.d.dma += [sequence.eq(sequence + 1), total.eq(0)] + [c.eq(0) for c in dma_counts]
        with m.Elif(s.busy):
            m.d.dma += total.eq(Mux(total.all(), total, total + 1))
            for i, c in enumerate(dma_counts):
                with m.If(s.in_pass[i] & ~c.all()):
                    m.d.dma += c.eq(c + 1)
        def ran(count):                         # a refused start's cycle words are 0
            return Mux(s.rejected, 0, count)
        words.update(STATUS=Mux(s.rejected, ctrl.refused, ctrl.fault_status), SEQUENCE=sequence,
                     RUN=ctrl.record.run, BATCH=ctrl.record.batch,
                     PASS1_DMA_CYCLES=ran(dma_counts[0]), PASS2_DMA_CYCLES=ran(dma_counts[1]),
                     PASS1_NTT_CYCLES=ran(ntt_counts[:32]), PASS2_NTT_CYCLES=ran(ntt_counts[32:]),
                     TOTAL_DMA_CYCLES=ran(total))
        m.d.comb += writer.address.eq(ctrl.record.address)
        m.d.comb += [writer.words[i].eq(words[name]) for i, name in enumerate(RECORD_WORDS)]


def _flat_members(prefix: str, signature: wiring.Signature, flip: bool):
    """(port name, member) pairs for every signal of a flat interface signature, Vitis-style names."""
    for name, member in signature.members.items():
        if not member.is_port:
            raise TypeError(f"signature: member {name} of {prefix} is not a plain port")
        yield f"{prefix}_{name}", (member.flip() if flip else member)


class VitisKernel(wiring.Component):
    """The kernel as Vitis sees it: ap_clk/ap_rst_n (DMA), ap_clk_2/ap_rst_n_2 (NTT), s_axi_control_*,
    m00_axi_* .. m(C-1)_axi_*, interrupt. Emit it with top module name ``regmap.KERNEL_NAME``.

    ``CLOCKS``: top-level clock port -> clock domain; ``CLOCK_NETS``: the clock net each domain has inside
    the design (``<domain>_clk``, as Amaranth names it) -> its top-level port; :meth:`port_domain`: the
    domain every other port belongs to (the crossing check and the constraints use these).
    """

    CLOCKS = {"ap_clk": "dma", "ap_clk_2": "ntt"}
    CLOCK_NETS = {"kernel_dma_clk": "ap_clk", "kernel_ntt_clk": "ap_clk_2"}

    @staticmethod
    def port_domain(port: str) -> str:
        """ap_rst_n_2 is the NTT clock's reset; every other port (control, AXI masters, interrupt) is on
        ap_clk."""
        return "ntt" if port == "ap_rst_n_2" else "dma"

    def __init__(self, params: BuildParams | None = None, *, lanes: int | None = None,
                 log_core: int | None = None, channels: int | None = None, dma_options: dict | None = None):
        if params is None:
            given = {k: v for k, v in (("lanes", lanes), ("log_core", log_core), ("channels", channels))
                     if v is not None}
            params = BuildParams(**given)
        elif not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._core = NttKernel(params, dma_options=dma_options)
        members = {"ap_clk": In(1), "ap_rst_n": In(1), "ap_clk_2": In(1), "ap_rst_n_2": In(1)}
        members.update(_flat_members(regmap.CONTROL_PORT, _control_signature(), flip=True))
        axi = self._core.dma.axi_signature
        for ch in range(params.channels):
            members.update(_flat_members(regmap.master_port(ch), axi, flip=False))
        members["interrupt"] = Out(1)
        super().__init__(members)

    @property
    def params(self) -> BuildParams:
        return self._core.params

    @property
    def core(self) -> NttKernel:
        return self._core

    def elaborate(self, platform):
        m = Module()
        core = self._core
        # Private domain names, so a harness around the kernel (sim/) can have its own dma/ntt.
        m.submodules.core = DomainRenamer({"dma": "kernel_dma", "ntt": "kernel_ntt"})(core)
        m.domains.kernel_dma = ClockDomain("kernel_dma")
        m.domains.kernel_ntt = ClockDomain("kernel_ntt")
        m.d.comb += [
            ClockSignal("kernel_dma").eq(self.ap_clk), ResetSignal("kernel_dma").eq(~self.ap_rst_n),
            ClockSignal("kernel_ntt").eq(self.ap_clk_2), ResetSignal("kernel_ntt").eq(~self.ap_rst_n_2),
            self.interrupt.eq(core.interrupt),
        ]

        def wire(prefix, inner, signature, flip):
            for name, member in signature.members.items():
                outer = getattr(self, f"{prefix}_{name}")
                to_core = (member.flow == In) != flip       # core input <- top input
                sig = getattr(inner, name)
                m.d.comb += (sig.eq(outer) if to_core else outer.eq(sig))

        wire(regmap.CONTROL_PORT, core.s_axi_control, _control_signature(), True)
        for ch in range(self.params.channels):
            wire(regmap.master_port(ch), core.m_axi[ch], core.dma.axi_signature, False)
        return m
