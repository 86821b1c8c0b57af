"""The simulated card: the Vitis kernel top (exactly the Verilog a real build packages) with one
in-design HBM pseudo-channel model (sim/hbm.py) on each ``mNN_axi`` port.

Ports of the harness (the simulator's top):

- ``ap_clk``, ``ap_rst_n``, ``ap_clk_2``, ``ap_rst_n_2``, ``s_axi_control_*``, ``interrupt``: the kernel's own;
- ``refresh_en``, ``stall_en``: HBM refresh windows and random AXI stalls on every channel;
- ``bd_load``, ``bd_dump``: backdoor to the HBM for preload and read-back, all channels at once through
  files (sim/hbm.py ``files=``): a cycle with ``bd_load`` high reads ``<dir>/hbm<c>.load.hex`` into channel
  c's memory, one with ``bd_dump`` high writes channel c's memory to ``<dir>/hbm<c>.dump.hex``, ``<dir>``
  being the simulator's ``+nantucket_hbm_dir=`` plusarg (:data:`sim.hbm.HBM_DIR_PLUSARG`);
- ``inject_channel``, ``inject_rresp``, ``inject_bresp``: error injection into one channel's model (sim/hbm.py):
  while a response code is not 0 (OKAY), every R beat / B response of channel ``inject_channel`` carries it;
- ``err``: every channel model's sticky protocol error bits;
- ``ntt_cycles``: ``ap_clk_2`` cycles the kernel spent busy in its last run (from ap_start accepted to done);
- ``kernel_busy``: a run is in progress (``ap_clk`` domain).

Channel c's window starts at ``c * CHANNEL_SPAN`` (256 MiB, one pseudo-channel), the address XRT gives a
buffer in bank HBM[c]; it holds ``depth_beats`` beats from that address on: by default the layout's buffer and
one 4 KiB page more, for the status record's buffer (hw.model.record) that a host places in HBM[0].
"""

from amaranth.hdl import DomainRenamer, Module, Mux, Signal, ClockDomain, ClockSignal, ResetSignal
from amaranth.lib import data, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from nantucket.hw.kernel import VitisKernel
from nantucket.hw.model import regmap
from nantucket.hw.model.layout import BEAT_BYTES, PAGE_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from .hbm import CHANNEL_SPAN, channel_models

__all__ = ["KernelHarness", "FILE_STEM", "RECORD_PAGE_BEATS"]

#: channel c's file memory is ``<FILE_STEM><c>`` (sim/hbm.py memory_file)
FILE_STEM = "hbm"
#: Beats each channel model holds past the layout's buffer: one 4 KiB page, for the status record's buffer.
RECORD_PAGE_BEATS = PAGE_BYTES // BEAT_BYTES


class KernelHarness(wiring.Component):
    """VitisKernel(params) + C HbmChannelModels. ``depth_beats`` defaults to the layout's buffer size; the
    HBM timing (``latency``, ``refresh_*``) to sim.hbm.hbm_timing at the build's DMA clock."""

    def __init__(self, params: BuildParams, *, depth_beats: int | None = None, latency: int | None = None,
                 refresh_period: int | None = None, refresh_cycles: int | None = None, stall_rate: int = 64,
                 seed: int = 1):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        layout = HbmLayout(params)
        if depth_beats is None:
            depth_beats = layout.beats_per_channel + RECORD_PAGE_BEATS
        if not isinstance(depth_beats, int) or depth_beats < layout.beats_per_channel:
            raise ValueError(f"depth_beats: must be an int >= {layout.beats_per_channel}, got {depth_beats!r}")
        self._params = params
        self._depth = depth_beats
        self._kernel = VitisKernel(params)
        self._models = channel_models(params.channels, depth_beats=depth_beats, latency=latency,
                                      refresh_period=refresh_period, refresh_cycles=refresh_cycles,
                                      stall_rate=stall_rate, seed=seed, files=FILE_STEM, dma_mhz=params.dma_mhz)
        members = {name: member for name, member in self._kernel.signature.members.items()
                   if not name.startswith("m") or not name[1:3].isdigit()}
        chans = params.channels
        members.update({
            "refresh_en": In(1), "stall_en": In(1),
            "inject_channel": In(range(chans)), "inject_rresp": In(2), "inject_bresp": In(2),
            "bd_load": In(1), "bd_dump": In(1),
            "err": Out(data.ArrayLayout(4, chans)),
            "ntt_cycles": Out(40),
            "kernel_busy": Out(1),
        })
        super().__init__(members)

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def depth_beats(self) -> int:
        return self._depth

    @property
    def channel_span(self) -> int:
        return CHANNEL_SPAN

    def elaborate(self, platform):
        m = Module()
        p = self._params
        m.submodules.kernel = kernel = self._kernel
        m.domains.dma = ClockDomain("dma")
        m.domains.ntt = ClockDomain("ntt")
        m.d.comb += [ClockSignal("dma").eq(self.ap_clk), ResetSignal("dma").eq(~self.ap_rst_n),
                     ClockSignal("ntt").eq(self.ap_clk_2), ResetSignal("ntt").eq(~self.ap_rst_n_2)]
        for name in self._kernel.signature.members:
            if name.startswith("m") and name[1:3].isdigit():
                continue
            mine, theirs = getattr(self, name), getattr(kernel, name)
            if self.signature.members[name].flow == In:
                m.d.comb += theirs.eq(mine)
            else:
                m.d.comb += mine.eq(theirs)

        for c, model in enumerate(self._models):
            m.submodules[f"hbm{c}"] = hbm = DomainRenamer("dma")(model)
            prefix = regmap.master_port(c)
            for name, member in kernel.core.dma.axi_signature.members.items():
                port = getattr(kernel, f"{prefix}_{name}")
                sig = getattr(hbm.axi, name)
                m.d.comb += (sig.eq(port) if member.flow == Out else port.eq(sig))
            m.d.comb += [
                hbm.refresh_en.eq(self.refresh_en), hbm.stall_en.eq(self.stall_en),
                hbm.bd_load.eq(self.bd_load), hbm.bd_dump.eq(self.bd_dump),
                hbm.inject_rresp.eq(Mux(self.inject_channel == c, self.inject_rresp, 0)),
                hbm.inject_bresp.eq(Mux(self.inject_channel == c, self.inject_bresp, 0)),
                self.err[c].eq(hbm.err),
            ]

        m.d.comb += self.kernel_busy.eq(kernel.core.busy)
        # kernel busy time in NTT clock cycles
        busy = Signal()
        m.submodules.busy_sync = FFSynchronizer(kernel.core.busy, busy, o_domain="ntt")
        was_busy = Signal()
        m.d.ntt += was_busy.eq(busy)
        with m.If(busy & ~was_busy):
            m.d.ntt += self.ntt_cycles.eq(1)
        with m.Elif(busy):
            m.d.ntt += self.ntt_cycles.eq(self.ntt_cycles + 1)
        return m
