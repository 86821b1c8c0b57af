"""The NTT as an on-card operation: the HBM DMA engine and the NTT engine, two passes a run.

    start ─► the pass sequencer ─► DmaEngine ◄─► m_axi (HBM[NN], lent by the kernel)
             (NttOperation)        └──► NttEngine ◄─► (the DMA's points streams)

An engine of :func:`hw.operation.engine_signature` (the kernel's registry: hw/engines.py; the operation:
``ntt`` of hw.model.ops). A run (hw/run.py: size, inverse, coset, ``batch`` B transforms back to back in
each pass, ``input_log_m`` a zero-extended input the DMA reads without its zeros, ``chain_log_n`` the
output written as the input of a larger run) is held by the kernel for both passes and given whole to the
DMA; the sequencer runs pass 1 (DMA pass 1 with the engine's pass 1), waits until the DMA has every write
response, then pass 2, lets the NTT-domain cycle counts settle and raises ``done``.

Crossing to the engine's ``ntt`` domain: the run and the pass bit as one value through one
``FFSynchronizer`` (held from several DMA cycles before each engine start to the end of its pass, so
stable whenever a start arrives), the engine's start through a ``PulseSynchronizer``.

Its status words (hw.model.ops): PASS1_DMA_CYCLES, PASS1_NTT_CYCLES, PASS2_DMA_CYCLES, PASS2_NTT_CYCLES,
the ap_clk and ap_clk_2 cycles of each pass window. It has no ``result``: its results are its buffers
(hw.model.layout.HbmLayout places them). ``model`` is :func:`hw.model.ops.ntt_run`.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, DomainRenamer, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer
from amaranth.lib.wiring import connect

from .dma import DmaEngine
from .engine import NttEngine
from .model.ops import OP_NTT, ntt_run, operation
from .model.params import BuildParams
from .operation import engine_signature
from .run import run_layout

__all__ = ["NttOperation", "PASS_SETUP_CYCLES", "SETTLE_CYCLES"]

#: DMA cycles the engine's pass selection is held before its start toggle (> 2 synchronizer stages
#: of the faster ntt clock, with margin for any clock ratio the link may pick).
PASS_SETUP_CYCLES = 4
#: DMA cycles from the last pass window's end to ``done``: the NTT-domain cycle counts cross two
#: synchronizers (dma -> ntt window, ntt -> dma counts) and must have settled, for any clock ratio up to
#: 4 : 1 either way.
SETTLE_CYCLES = 16


class NttOperation(wiring.Component):
    """The NTT operation's engine (see the module docstring). Domains: ``dma`` (its ports, the DMA's
    AXI side) and ``ntt`` (the engine). Properties: params, dma, engine, operation; :meth:`model`."""

    def __init__(self, params: BuildParams, *, dma_options: dict | None = None):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        self._dma = DmaEngine(params, **(dma_options or {}))
        self._engine = NttEngine(params)
        super().__init__(engine_signature(params, self._dma.axi_signature))

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def dma(self) -> DmaEngine:
        return self._dma

    @property
    def engine(self) -> NttEngine:
        return self._engine

    @property
    def operation(self):
        return operation(OP_NTT)

    def model(self, run, x):
        """The run's bit-exact result on its logical input (:func:`hw.model.ops.ntt_run`)."""
        return ntt_run(self._params, run, x)

    def elaborate(self, platform):
        m = Module()
        dma, engine = self._dma, self._engine
        m.submodules.dma = dma
        m.submodules.engine = DomainRenamer("ntt")(engine)
        for ch in range(self._params.channels):
            connect(m, wiring.flipped(self.m_axi[ch]), dma.m_axi[ch])
        connect(m, dma.points_out, engine.points_in)
        connect(m, engine.points_out, dma.points_in)
        m.d.comb += self.fault.eq(dma.fault)
        seq = self._sequencer(m)
        passes_ntt = self._cross_to_ntt(m, seq)
        self._words(m, seq, self._count_ntt_cycles(m, passes_ntt))
        return m

    def _sequencer(self, m):
        """The run's steps (dma domain): pass 1, pass 2, settle, done. Returns the sequencer's registers."""
        dma, p = self._dma, self._params
        s = SimpleNamespace(
            pass2=Signal(),                   # the engine's pass selection, held through the pass
            engine_start=Signal(),            # one cycle per engine start, crossed as a pulse
            in_pass=Signal(2))                # registered: pass 1 / pass 2 in progress
        setup = Signal(range(SETTLE_CYCLES + 1))
        m.d.comb += dma.run.eq(self.run)
        for ch in range(p.channels):
            m.d.comb += dma.base[ch].eq(self.base[ch])
        with m.FSM(domain="dma") as fsm:
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.dma += [s.pass2.eq(0), setup.eq(0)]
                    m.next = "SETUP1"
            for index, (setup_state, run_state, nxt) in enumerate(
                    (("SETUP1", "PASS1", "SETUP2"), ("SETUP2", "PASS2", "SETTLE")), start=1):
                with m.State(setup_state):
                    m.d.dma += setup.eq(setup + 1)
                    with m.If(setup == PASS_SETUP_CYCLES):
                        m.d.comb += [s.engine_start.eq(1), dma.start.eq(1), dma.pass_index.eq(index)]
                        m.next = run_state
                with m.State(run_state):
                    m.d.comb += dma.pass_index.eq(index)
                    with m.If(dma.done):
                        m.d.dma += [setup.eq(0), s.pass2.eq(1)]
                        m.next = nxt
            with m.State("SETTLE"):             # the NTT-domain cycle counts reach the dma domain
                m.d.dma += setup.eq(setup + 1)
                with m.If(setup == SETTLE_CYCLES):
                    m.d.comb += self.done.eq(1)
                    m.next = "IDLE"
        m.d.dma += s.in_pass.eq(Cat(fsm.ongoing("PASS1"), fsm.ongoing("PASS2")))
        return s

    def _cross_to_ntt(self, m, s):
        """The run, the pass and the pass windows across to the ntt domain once; the engine's start as a
        pulse. Returns the pass windows as the ntt domain sees them."""
        engine = self._engine
        layout = run_layout(self._params)
        # The run and the pass are held from PASS_SETUP_CYCLES DMA cycles before the start pulse to the
        # end of the pass, so the struct is stable whenever a start arrives: one synchronizer carries it.
        # The shift and the row step follow the argument registers (which the control freezes from start to
        # done) rather than the latched copy: the coset generator starts its set-up for a new shift or
        # step as soon as the host writes it. The pass windows only time the passes (the NTT cycle counts).
        crossing = Signal(layout)
        m.d.comb += [crossing.eq(self.run), crossing.coset_shift.eq(self.args.coset_shift),
                     crossing.row_step.eq(self.args.row_step)]
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
        the dma domain; stable there SETTLE_CYCLES after the last window closed."""
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

    def _words(self, m, s, ntt_counts):
        """The status words (hw.model.ops: the DMA and NTT cycles of each pass), in the operation's order."""
        dma_counts = [Signal(32, name=f"pass{i + 1}_dma_cycles") for i in range(2)]
        with m.If(self.start):
            m.d.dma += [c.eq(0) for c in dma_counts]
        for i, c in enumerate(dma_counts):
            with m.If(s.in_pass[i] & ~c.all()):
                m.d.dma += c.eq(c + 1)
        values = {"PASS1_DMA_CYCLES": dma_counts[0], "PASS2_DMA_CYCLES": dma_counts[1],
                  "PASS1_NTT_CYCLES": ntt_counts[:32], "PASS2_NTT_CYCLES": ntt_counts[32:]}
        names = self.operation.status_words
        assert set(names) == set(values)
        m.d.comb += [self.words[i].eq(values[name]) for i, name in enumerate(names)]
        m.d.comb += self.result.eq(0)
