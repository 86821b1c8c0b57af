"""AXI error responses are reported, not absorbed: the whole kernel (amaranth.sim) against HBM channel
models that inject SLVERR / DECERR, read through STATUS over s_axi_control as a host would."""

import pytest
from amaranth.hdl import DomainRenamer, Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from nantucket.hw.axi import RESP_DECERR, RESP_SLVERR
from nantucket.hw.kernel import NttKernel
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import BEAT_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.sim.hbm import CHANNEL_SPAN, channel_models

from axil_master import axil_read, axil_write

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

#: beats before each buffer: a whole longest burst (8 beats), so the base is one the kernel accepts
#: (STATUS.bad_align refuses a base off the DMA's longest burst)
GUARD = 8


class _Card(Elaboratable):
    def __init__(self, params):
        self.kernel = NttKernel(params)
        depth = HbmLayout(params).beats_per_channel + GUARD
        self.hbm = channel_models(params.channels, depth_beats=depth, latency=6, stall_rate=32,
                                  refresh_period=40, refresh_cycles=4)

    def elaborate(self, platform):
        m = Module()
        m.submodules.kernel = self.kernel
        for c, model in enumerate(self.hbm):
            m.submodules[f"hbm{c}"] = DomainRenamer("dma")(model)
            wiring.connect(m, self.kernel.m_axi[c], model.axi)
            m.d.comb += [model.stall_en.eq(1), model.refresh_en.eq(1)]
        return m


def _runs(params, injections):
    """Run the kernel once per entry of ``injections`` ({channel: (rresp, bresp)}); STATUS after each."""
    card = _Card(params)
    rmap = R.RegisterMap(params)
    bus = card.kernel.s_axi_control
    status = []

    async def bench(ctx):
        await axil_write(ctx, bus, rmap.arg("log_n").offset, params.log_n, domain="dma")
        for pa in rmap.pointer_args:
            lo, hi = rmap.split_pointer(pa.channel * CHANNEL_SPAN + GUARD * BEAT_BYTES)
            await axil_write(ctx, bus, pa.word_offsets[0], lo, domain="dma")
            await axil_write(ctx, bus, pa.word_offsets[1], hi, domain="dma")
        for inject in injections:
            for c, model in enumerate(card.hbm):
                rresp, bresp = inject.get(c, (0, 0))
                ctx.set(model.inject_rresp, rresp)
                ctx.set(model.inject_bresp, bresp)
            await axil_write(ctx, bus, R.CTRL, R.CTRL_AP_START, domain="dma")
            for _ in range(200):
                if await axil_read(ctx, bus, R.CTRL, domain="dma") & R.CTRL_AP_DONE:
                    break
            else:
                raise AssertionError("the run did not finish")
            status.append(await axil_read(ctx, bus, rmap.id_offset("STATUS"), domain="dma"))

    sim = Simulator(card)
    sim.add_clock(1e-6 / params.dma_mhz, domain="dma")
    sim.add_clock(1e-6 / params.ntt_mhz, domain="ntt")
    sim.add_testbench(bench)
    sim.run()
    return status


def _fields(word):
    return R.decode_status(word)


@pytest.mark.parametrize("params", [BuildParams(lanes=4, log_core=2, channels=4),
                                    BuildParams(lanes=4, log_core=3, channels=8)], ids=lambda p: p.tag())
def test_error_responses_reach_status(params):
    lay = HbmLayout(params)
    state_read = lay.read_channels(2)[-1]          # odd: read in pass 2 only
    output_write = lay.write_channels(2)[-1]       # even: written in pass 2 only
    input_read = lay.read_channels(1)[0]           # even: read in pass 1 (before any write)
    state_write = lay.write_channels(1)[-1]
    got = _runs(params, [
        {},                                                         # clean run
        {state_read: (RESP_SLVERR, 0)},                             # a read error in pass 2
        {output_write: (0, RESP_DECERR)},                           # a write error, previous one cleared
        {input_read: (RESP_DECERR, 0), state_write: (0, RESP_SLVERR)},   # the first error is kept
        {},                                                         # cleared by the next start
    ])
    assert got[0] == 0 and got[4] == 0, [hex(w) for w in got]
    assert _fields(got[1]) == dict(bad_size=False, axi_error=True, axi_resp=RESP_SLVERR, axi_resp_name="SLVERR",
                                   axi_write=False, axi_channel=state_read)
    assert _fields(got[2]) == dict(bad_size=False, axi_error=True, axi_resp=RESP_DECERR, axi_resp_name="DECERR",
                                   axi_write=True, axi_channel=output_write)
    assert _fields(got[3]) == dict(bad_size=False, axi_error=True, axi_resp=RESP_DECERR, axi_resp_name="DECERR",
                                   axi_write=False, axi_channel=input_read)
