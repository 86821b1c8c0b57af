"""A thin bench top around :class:`hw.dma.DmaEngine` for third-party AXI slaves (cocotbext-axi AxiRam):
the same ports, plus the ID signals such models require (tied to 0 / ignored; the DMA uses one ID)."""

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.dma import DmaEngine
from nantucket.hw.model.params import BuildParams
from nantucket.hw.points import payload_layout
from nantucket.hw.run import run_layout


class DmaAxiTop(wiring.Component):
    def __init__(self, params: BuildParams, **dma_options):
        self._dma = DmaEngine(params, **dma_options)
        axi = self._dma.axi_signature
        members = {
            "start": In(1), "pass_index": In(2),
            "run": In(run_layout(params), init={"log_n": params.max_log_n, "batch": 1}),
            "busy": Out(1), "done": Out(1),
            "base": In(data.ArrayLayout(axi.addr_width, params.channels)),
            "points_out": Out(stream.Signature(payload_layout(params.lanes, params.prime_field))),
            "points_in": In(stream.Signature(payload_layout(params.lanes, params.prime_field))),
        }
        for c in range(params.channels):
            members[f"m{c:02d}_axi"] = Out(wiring.Signature({
                **axi.members, "awid": Out(1), "arid": Out(1), "bid": In(1), "rid": In(1)}))
        super().__init__(members)

    @property
    def dma(self) -> DmaEngine:
        return self._dma

    def elaborate(self, platform):
        m = Module()
        m.submodules.dma = dma = self._dma
        m.d.comb += [dma.start.eq(self.start), dma.pass_index.eq(self.pass_index), dma.run.eq(self.run),
                     dma.base.eq(self.base),
                     self.busy.eq(dma.busy), self.done.eq(dma.done)]
        wiring.connect(m, dma.points_out, wiring.flipped(self.points_out))
        wiring.connect(m, wiring.flipped(self.points_in), dma.points_in)
        for c in range(self._dma.params.channels):
            port, inner = getattr(self, f"m{c:02d}_axi"), dma.m_axi[c]
            for name, member in inner.signature.members.items():
                if member.flow == wiring.Out:
                    m.d.comb += getattr(port, name).eq(getattr(inner, name))
                else:
                    m.d.comb += getattr(inner, name).eq(getattr(port, name))
            m.d.comb += [port.awid.eq(0), port.arid.eq(0)]
        return m
