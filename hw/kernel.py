"""The `nantucket` Vitis RTL kernel: control slave + HBM DMA engine + NTT engine, and its thin top.

    s_axi_control ─► ControlSlave ─► the pass sequencer ─► DmaEngine ◄─► mNN_axi (HBM[NN])
                                     (NttKernel.elaborate) └──► NttEngine ◄─► (points streams of the DMA)

:class:`NttKernel` is the kernel in Amaranth terms (interfaces, ``dma`` and ``ntt`` clock domains).
:class:`VitisKernel` is the only place that knows Vitis' names: it flattens the interfaces into
``s_axi_control_*`` and ``mNN_axi_*`` ports, makes the two clock domains from ``ap_clk``/``ap_rst_n``
(DMA) and ``ap_clk_2``/``ap_rst_n_2`` (NTT), and exposes ``interrupt``.

A run: the host writes ``log_n`` and the ``hbm_NN`` base addresses and sets ap_start. A ``log_n``
outside the build's native sizes (``params.min_log_n`` .. 2k) finishes at once with STATUS.bad_size and
touches no memory, as does any start :meth:`hw.model.regmap.RegisterMap.check_start` refuses (the
control decodes it: ``refused``). Otherwise the run the control decoded (hw/run.py: size, inverse, coset,
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

from amaranth.hdl import Cat, ClockDomain, ClockSignal, DomainRenamer, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer
from amaranth.lib.wiring import In, Out, connect, flipped

from .axi import AxiLiteSignature, Axi4Signature
from .control import ControlSlave
from .dma import DmaEngine
from .engine import NttEngine
from .model import regmap
from .model.params import BuildParams
from .run import run_layout

__all__ = ["NttKernel", "VitisKernel"]

#: DMA cycles the engine's pass selection is held before its start toggle (> 2 synchronizer stages
#: of the faster ntt clock, with margin for any clock ratio the link may pick).
_PASS_SETUP_CYCLES = 4


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

        connect(m, flipped(self.s_axi_control), ctrl.axil)
        for ch in range(self._params.channels):
            connect(m, flipped(self.m_axi[ch]), dma.m_axi[ch])
        connect(m, dma.points_out, engine.points_in)
        connect(m, engine.points_out, dma.points_in)
        m.d.comb += [self.interrupt.eq(ctrl.interrupt), ctrl.fault.eq(dma.fault)]

        # -- the sequencer (dma domain) ---------------------------------------------------------
        p = self._params
        layout = run_layout(p)
        pass2 = Signal()                    # the engine's pass selection, held through the pass
        engine_start = Signal()             # one cycle per engine start, crossed as a pulse
        setup = Signal(range(_PASS_SETUP_CYCLES + 1))
        # The run as the control decoded it, latched at its start and held to done (the control only
        # starts runs it accepted).
        run = Signal(layout, init={"batch": 1})
        m.d.comb += dma.run.eq(run)
        for ch in range(p.channels):
            m.d.comb += dma.base[ch].eq(ctrl.base[ch])
        with m.FSM(domain="dma") as fsm:
            with m.State("IDLE"):
                with m.If(ctrl.start):
                    with m.If(ctrl.refused == 0):         # Run.check, decoded once by the control
                        m.d.dma += [pass2.eq(0), setup.eq(0), run.eq(ctrl.run)]
                        m.next = "SETUP1"
                    with m.Else():
                        m.d.comb += [ctrl.done.eq(1), ctrl.reject.eq(1)]
            for index, (setup_state, run_state, nxt) in enumerate(
                    (("SETUP1", "PASS1", "SETUP2"), ("SETUP2", "PASS2", "IDLE")), start=1):
                with m.State(setup_state):
                    m.d.dma += setup.eq(setup + 1)
                    with m.If(setup == _PASS_SETUP_CYCLES):
                        m.d.comb += [engine_start.eq(1), dma.start.eq(1), dma.pass_index.eq(index)]
                        m.next = run_state
                with m.State(run_state):
                    m.d.comb += dma.pass_index.eq(index)
                    with m.If(dma.done):
                        m.d.dma += setup.eq(0)
                        if nxt == "IDLE":
                            m.d.comb += ctrl.done.eq(1)
                        else:
                            m.d.dma += pass2.eq(1)
                        m.next = nxt

        m.d.comb += self.busy.eq(~fsm.ongoing("IDLE"))

        # -- the run and the engine's start, across to the ntt domain once ----------------------
        # The run and the pass are held from _PASS_SETUP_CYCLES DMA cycles before the start pulse to the
        # end of the pass, so the struct is stable whenever a start arrives: one synchronizer carries it.
        # The shift follows the argument register (which the control freezes from start to done) rather
        # than the latched copy: the coset generator starts its set-up for a new shift as soon as the host
        # writes it.
        crossing = Signal(layout)
        m.d.comb += [crossing.eq(run), crossing.coset_shift.eq(ctrl.run.coset_shift)]
        run_ntt, pass2_ntt = Signal(layout), Signal()
        m.submodules.run_sync = FFSynchronizer(Cat(pass2, crossing.as_value()),
                                               Cat(pass2_ntt, run_ntt.as_value()), o_domain="ntt",
                                               init=layout.const({"batch": 1}).as_value().value << 1)
        m.submodules.start_sync = start_sync = PulseSynchronizer("dma", "ntt")
        m.d.comb += [start_sync.i.eq(engine_start), engine.start.eq(start_sync.o), engine.pass2.eq(pass2_ntt),
                     engine.run.eq(run_ntt)]
        return m


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
