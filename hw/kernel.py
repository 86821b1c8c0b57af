"""The `nantucket` Vitis RTL kernel: control slave + a sequencer + one engine per operation, and its thin top.

    s_axi_control ─► ControlSlave ─► the sequencer ─► the engine of the run's op ─► mNN_axi (HBM[NN])
                                     (NttKernel)     (hw/engines.py: NttOperation,  (shared by the engines
                                                      ...)                            and the record writer)

:class:`NttKernel` is the kernel in Amaranth terms (interfaces, ``dma`` and ``ntt`` clock domains).
:class:`VitisKernel` is the only place that knows Vitis' names: it flattens the interfaces into
``s_axi_control_*`` and ``mNN_axi_*`` ports, makes the two clock domains from ``ap_clk``/``ap_rst_n``
(DMA) and ``ap_clk_2``/``ap_rst_n_2`` (NTT), and exposes ``interrupt``.

A run: the host writes the arguments (hw.model.run.RUN_ARGS: ``op``, ``log_n``, ...) and the ``hbm_NN``
base addresses and sets ap_start. A start :meth:`hw.model.regmap.RegisterMap.check_start` refuses (the
control decodes it: ``refused``; an ``op`` the build does not carry among its reasons) finishes at once
and touches no point memory: it writes only its status record. Otherwise the run the control decoded is
latched once as one struct and held to done, the engine that owns its ``op`` gets a start and every HBM
port (hw.operation.share_port: engines never run at once), and when it is done the record writer takes
master 0's write channels, writes the status record (hw.model.record: the identification words, the run,
the engine's words) and the kernel raises done. An AXI error response on any master is reported by the
engine (or the writer) and latched by the control slave into STATUS.axi_* (the run still completes).
"""

from types import SimpleNamespace

from amaranth.hdl import C, ClockDomain, ClockSignal, DomainRenamer, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from .axi import AxiLiteSignature
from .control import ControlSlave
from .engines import engines_for
from .model import regmap
from .model.params import BuildParams
from .model.record import ENGINE_RECORD_WORDS, RECORD_WORDS
from .operation import share_port
from .record import RecordWriter
from .run import run_layout

__all__ = ["NttKernel", "VitisKernel"]


def _control_signature() -> AxiLiteSignature:
    """The control port, from the master's side (the kernel's port is its flip)."""
    return AxiLiteSignature(addr_width=regmap.ADDRESS_BITS, data_width=regmap.DATA_BITS)


class NttKernel(wiring.Component):
    """The kernel with Amaranth interfaces. Domains: ``dma`` (control, AXI) and ``ntt`` (the NTT engine).

    Ports: ``s_axi_control`` (AXI4-Lite slave), ``m_axi`` (C AXI4 masters), ``interrupt``.
    Properties: params, register_map, control, engines ({op name: engine}, hw/engines.py), and the NTT
    operation's dma and engine.
    """

    def __init__(self, params: BuildParams, *, dma_options: dict | None = None, engines: list | None = None):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        self._map = regmap.RegisterMap(params)
        self._control = ControlSlave(params)
        # ``engines``: [(Operation, engine)] in place of hw/engines.py's (the formal wrapper's stub engine)
        self._engines = engines_for(params, dma_options) if engines is None else list(engines)
        self._ntt = self._engines[0][1]
        self._writer = RecordWriter(self.axi_signature.write_signature)
        super().__init__({
            "s_axi_control": In(_control_signature()),
            "m_axi": Out(self.axi_signature).array(params.channels),
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
    def axi_signature(self):
        """The signature of every ``m_axi`` master (every engine's masters have it)."""
        return self._ntt.dma.axi_signature

    @property
    def engines(self) -> dict:
        return {op.name: engine for op, engine in self._engines}

    @property
    def dma(self):
        return self._ntt.dma

    @property
    def engine(self):
        return self._ntt.engine

    @property
    def control(self) -> ControlSlave:
        return self._control

    def elaborate(self, platform):
        m = Module()
        ctrl = self._control
        m.submodules.control = DomainRenamer("dma")(ctrl)
        for op, engine in self._engines:
            m.submodules[op.name] = engine
        m.submodules.status_record = DomainRenamer("dma")(self._writer)
        connect(m, flipped(self.s_axi_control), ctrl.axil)
        m.d.comb += self.interrupt.eq(ctrl.interrupt)
        seq = self._sequencer(m)
        self._share_ports(m, seq)
        self._record(m, seq)
        return m

    def _active(self, seq, op):
        """1 while ``op``'s engine owns the run (its op latched), for every engine but the first."""
        return seq.run.op == op.code

    def _sequencer(self, m):
        """The run's steps (dma domain): latch the run, start the engine of its op, wait for its done, write
        the record, done. A refused start goes straight to the record. Returns the sequencer's registers."""
        ctrl, writer = self._control, self._writer
        p = self._params
        s = SimpleNamespace(
            run=Signal(run_layout(p), init={"batch": 1}),   # the run, latched at its start, held to done
            rejected=Signal(),                # the start was refused: the record carries its bits
            recording=Signal(),               # master 0's write channels belong to the record writer
            engine_done=Signal(),             # the running engine's done
            busy=self.busy)
        for op, engine in self._engines:
            m.d.comb += [engine.run.eq(s.run), engine.args.eq(ctrl.run),
                         engine.start.eq(ctrl.start & (ctrl.refused == 0) & (ctrl.run.op == op.code))]
            m.d.comb += [engine.base[ch].eq(ctrl.base[ch]) for ch in range(p.channels)]
        m.d.comb += s.engine_done.eq(self._pick(s, lambda e: e.done))
        with m.FSM(domain="dma") as fsm:
            with m.State("IDLE"):
                with m.If(ctrl.start):
                    m.d.dma += [s.run.eq(ctrl.run), s.rejected.eq(ctrl.refused != 0)]
                    # Run.check, decoded once by the control: a refused start only writes its record
                    with m.If(ctrl.refused == 0):
                        m.next = "RUN"
                    with m.Else():
                        m.next = "RECORD"
            with m.State("RUN"):
                with m.If(s.engine_done):
                    m.next = "RECORD"
            with m.State("RECORD"):
                m.d.comb += [s.recording.eq(1), writer.start.eq(~writer.busy)]
                with m.If(writer.done):
                    m.d.comb += [ctrl.done.eq(1), ctrl.reject.eq(s.rejected)]
                    m.next = "IDLE"
        m.d.comb += self.busy.eq(~fsm.ongoing("IDLE"))
        return s

    def _pick(self, s, member):
        """``member(engine)`` of the engine whose op is latched (the first engine's when no other's is)."""
        value = member(self._engines[0][1])
        for op, engine in self._engines[1:]:
            value = Mux(self._active(s, op), member(engine), value)
        return value

    def _share_ports(self, m, s):
        """Every master: the first engine's, lent to another engine while its op is latched, and master 0's
        write channels to the record writer while ``recording`` (every engine has its write responses by
        then). An error response any of them gets is a fault."""
        writer = self._writer
        for ch in range(self._params.channels):
            lenders = [(engine.m_axi[ch], self._active(s, op)) for op, engine in self._engines[1:]]
            if ch == 0:
                lenders.append((writer.axi, s.recording))
            share_port(m, self.m_axi[ch], self._engines[0][1].m_axi[ch], lenders)
        fault = self._control.fault
        with m.If(writer.fault):
            m.d.comb += [fault.valid.eq(1), fault.write.eq(1), fault.resp.eq(writer.fault_resp), fault.channel.eq(0)]
        with m.Else():
            m.d.comb += fault.eq(self._pick(s, lambda e: e.fault))

    def _record(self, m, s):
        """The status record's words (hw.model.record) from the control, the start count, the run's DMA
        cycles and the engine's words; the writer sends them while the sequencer is in RECORD."""
        ctrl, writer = self._control, self._writer
        words = {name: C(value, 32) for name, value in self._map.id_values.items()}
        sequence = Signal(32)
        total = Signal(32)
        with m.If(ctrl.start):
            m.d.dma += [sequence.eq(sequence + 1), total.eq(0)]
        with m.Elif(s.busy):
            m.d.dma += total.eq(Mux(total.all(), total, total + 1))

        def ran(value):                         # a refused start's cycle and engine words are 0
            return Mux(s.rejected, 0, value)
        result = self._pick(s, lambda e: e.result.as_value())
        engine_words = self._pick(s, lambda e: e.words.as_value())
        words.update(STATUS=Mux(s.rejected, ctrl.refused, ctrl.fault_status), SEQUENCE=sequence,
                     OP=ctrl.record.op, RUN=ctrl.record.run, BATCH=ctrl.record.batch, TOTAL_DMA_CYCLES=ran(total),
                     RESULT_LO=ran(result[:32]), RESULT_HI=ran(result[32:64]), RESULT_BYTES=ran(result[64:96]),
                     **{name: ran(engine_words[32 * i:32 * i + 32]) for i, name in enumerate(ENGINE_RECORD_WORDS)})
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
        axi = self._core.axi_signature
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
            wire(regmap.master_port(ch), core.m_axi[ch], core.axi_signature, False)
        return m
