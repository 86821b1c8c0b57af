"""AXI4 read master (``dma`` domain): streams one buffer sequentially into a FIFO.

One AR per ``burst`` beats over ``total`` beats from ``base`` (both ports, held through the pass: the run's
size), issued only while everything already asked for fits in the FIFO
(``fifo_level + in flight + burst <= fifo_beats``), so R is never
back-pressured and AR/R need no other flow control. ``skip`` (zero-extended input: the burst at
``next_beat`` holds only zeros, which the DMA does not read) steps over the burst without an AR. A beat whose RRESP is not OKAY still goes to the FIFO
(the transform goes on) but raises ``fault`` for that cycle with the response in ``fault_resp``.

R is registered once before anything reads it (``rvalid`` comes from a port mux and would otherwise
reach the FIFO's write pointer and LUTRAM write enable through four LUT levels: over a 450 MHz period by
the open-flow estimate, docs/performance.md). Since R is never back-pressured the register needs no skid
buffer; a beat in it still counts as in flight, so the FIFO space reserved for it stays reserved. Cost: one
dma cycle more from R to the FIFO (each burst's beats arrive one cycle later; no throughput lost).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import BURST_INCR, RESP_OKAY, Axi4ReadSignature
from nantucket.hw.model.layout import BEAT_BITS

__all__ = ["AxiReadMaster"]


class AxiReadMaster(wiring.Component):
    """Ports: ``start`` (rewind, one cycle), ``run`` (may issue), ``base`` (byte address), ``total`` (beats
    to read, a multiple of ``burst``; at most ``total_beats``), ``burst`` (beats per AR, 1..8; at most
    ``burst_beats``), ``axi``, ``beats`` (to the FIFO; its ready is not looked at, see the module doc),
    ``fifo_level`` (the FIFO's fill), ``done`` (every beat arrived), ``fault`` / ``fault_resp``. ``total``
    and ``burst`` start at ``total_beats`` and ``burst_beats``. ``next_beat``: the next burst's first beat
    (channel-relative); ``skip`` (combinational from it): leave that burst out, one per cycle."""

    def __init__(self, *, total_beats: int, burst_beats: int, fifo_beats: int, addr_width: int):
        self._total, self._burst, self._depth = total_beats, burst_beats, fifo_beats
        self._axi = Axi4ReadSignature(addr_width=addr_width, data_width=BEAT_BITS)
        super().__init__({
            "start": In(1), "run": In(1), "base": In(addr_width),
            "total": In(range(total_beats + 1), init=total_beats),
            "burst": In(range(burst_beats + 1), init=burst_beats),
            "axi": Out(self._axi),
            "beats": Out(stream.Signature(BEAT_BITS)),
            "fifo_level": In(range(fifo_beats + 1)),
            "next_beat": Out(range(total_beats + 1)), "skip": In(1),
            "done": Out(1), "fault": Out(1), "fault_resp": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        axi, T, BL, D = self.axi, self.total, self.burst, self._depth
        req = Signal(range(self._total + 1))        # beats asked for
        inflight = Signal(range(D + 1))             # asked for, not arrived
        ar_fire, r_fire, skip = Signal(), Signal(), Signal()
        m.d.comb += [
            self.next_beat.eq(req),
            skip.eq(self.run & (req < T) & self.skip),
            axi.arvalid.eq(self.run & (req < T) & ~self.skip & (self.fifo_level + inflight + BL <= D)),
            axi.araddr.eq(self.base + req * self._axi.beat_bytes),
            axi.arlen.eq(BL - 1),
            axi.arsize.eq(self._axi.size_code),
            axi.arburst.eq(BURST_INCR),
            axi.rready.eq(1),
            ar_fire.eq(axi.arvalid & axi.arready),
            self.done.eq((req == T) & (inflight == 0)),
        ]
        # the registered R beat (see the module doc): r_fire is its arrival at the FIFO
        r_valid = Signal(name="r_valid_q")
        r_data = Signal(len(axi.rdata), name="r_data_q", reset_less=True)
        r_resp = Signal(2, name="r_resp_q", reset_less=True)
        m.d.sync += [r_valid.eq(axi.rvalid & axi.rready), r_data.eq(axi.rdata), r_resp.eq(axi.rresp)]
        m.d.comb += [
            r_fire.eq(r_valid),
            self.beats.valid.eq(r_fire),
            self.beats.payload.eq(r_data),
            self.fault.eq(r_fire & (r_resp != RESP_OKAY)),
            self.fault_resp.eq(r_resp),
        ]
        with m.If(ar_fire | skip):
            m.d.sync += req.eq(req + BL)
        m.d.sync += inflight.eq(inflight + Mux(ar_fire, BL, 0) - r_fire)
        with m.If(self.start):
            m.d.sync += req.eq(0)
        return m
