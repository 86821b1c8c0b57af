"""AXI4 write master (``dma`` domain): one burst per queued beat address, data streamed behind it.

AW takes its beat address from ``bursts`` (at most ``write_bursts`` bursts awaiting B); W streams
``beats`` behind issued AWs with WLAST every ``burst_len`` beats (the length is the same for every burst
of a pass). ``done`` (a register: the cycle after) once B responses cover ``total`` beats (the run's size, held through the pass). A B response other than OKAY raises
``fault`` for that cycle with the response in ``fault_resp``.

``bursts`` and ``beats`` enter through a register slice each (:class:`~hw.dma.skid.SkidBuffer`; without
them AWVALID and WVALID come from the AsyncFIFOs' empty compares and fan out through the handshakes into the
outstanding counts, over a 450 MHz period by the open-flow estimate): their readies and the master's valids
are flip-flops. Cost: each burst address and beat reaches AXI one dma cycle later (no throughput lost).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import BURST_INCR, RESP_OKAY, Axi4WriteSignature
from nantucket.hw.model.layout import BEAT_BITS

from .skid import SkidBuffer

__all__ = ["AxiWriteMaster"]

MAX_BURST = 8


class AxiWriteMaster(wiring.Component):
    """Ports: ``start`` (rewind), ``run`` (may issue), ``base`` (byte address), ``total`` (beats to write,
    a multiple of ``burst_len``; at most ``total_beats``, which it starts at), ``burst_len`` (beats per
    burst, 1..8), ``bursts`` (first beat of each burst, channel-relative), ``beats``, ``axi``, ``done``,
    ``fault`` / ``fault_resp``."""

    def __init__(self, *, total_beats: int, beat_bits: int, write_bursts: int, addr_width: int):
        self._total, self._outstanding = total_beats, write_bursts
        self._axi = Axi4WriteSignature(addr_width=addr_width, data_width=BEAT_BITS)
        super().__init__({
            "start": In(1), "run": In(1), "base": In(addr_width),
            "total": In(range(total_beats + 1), init=total_beats), "burst_len": In(range(MAX_BURST + 1)),
            "bursts": In(stream.Signature(beat_bits)),
            "beats": In(stream.Signature(BEAT_BITS)),
            "axi": Out(self._axi),
            "done": Out(1), "fault": Out(1), "fault_resp": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        axi, T, WB = self.axi, self.total, self._outstanding
        # both inputs through a register slice: their valids come from FIFOs' empty compares (see the
        # module doc)
        m.submodules.burst_slice = burst_slice = SkidBuffer(len(self.bursts.payload))
        m.submodules.beat_slice = beat_slice = SkidBuffer(BEAT_BITS)
        wiring.connect(m, wiring.flipped(self.bursts), burst_slice.i)
        wiring.connect(m, wiring.flipped(self.beats), beat_slice.i)
        bursts, beats = burst_slice.o, beat_slice.o
        # the two outstanding counts as thermometer codes (bit i: the count is more than i; as binary
        # counters Yosys shares the +1 and the -1 into one adder behind the handshakes, and the compares on
        # them sat behind the W handshake, 5 LUT levels into the counts, over a 450 MHz period): each bit's
        # next value is one LUT of the handshakes and its neighbours; 0 cycles
        aw_ahead = Signal(WB, name="aw_ahead")      # bursts whose AW went out before their last W
        b_wait = Signal(WB, name="b_wait")          # bursts awaiting B
        aw_any, b_room = Signal(), Signal()
        m.d.comb += [aw_any.eq(aw_ahead[0]), b_room.eq(~b_wait[-1])]
        b_count = Signal(range(self._total + 1))    # beats acknowledged
        # the burst's last beat number, a register (burst_len - 1 was a carry chain in front of
        # WLAST and the outstanding counts; burst_len settles 2 dma cycles after start, this one 3, and the
        # first write burst comes from the ntt side many cycles later; 0 cycles)
        last_beat = Signal(range(MAX_BURST))
        # W beats left in the burst after this one, counted down (WLAST is a compare of it with 0: an up
        # count compared with last_beat put a 6-input compare behind the W handshake into WLAST's register,
        # 5 LUT levels); ``w_first``: no beat of the burst taken yet, while which it follows last_beat
        w_left = Signal(range(MAX_BURST))
        w_first = Signal(init=1)
        w_last = Signal()
        aw_fire, w_fire, b_fire = Signal(), Signal(), Signal()
        m.d.comb += [
            axi.awvalid.eq(self.run & bursts.valid & b_room),
            axi.awaddr.eq(self.base + bursts.payload * self._axi.beat_bytes),
            axi.awlen.eq(last_beat),
            axi.awsize.eq(self._axi.size_code),
            axi.awburst.eq(BURST_INCR),
            axi.wvalid.eq(self.run & aw_any & beats.valid),
            axi.wdata.eq(beats.payload),
            axi.wstrb.eq(-1),
            axi.wlast.eq(w_last),
            axi.bready.eq(1),
            aw_fire.eq(axi.awvalid & axi.awready),
            w_fire.eq(axi.wvalid & axi.wready),
            b_fire.eq(axi.bvalid & axi.bready),
            bursts.ready.eq(aw_fire),
            beats.ready.eq(w_fire),
            self.fault.eq(b_fire & (axi.bresp != RESP_OKAY)),
            self.fault_resp.eq(axi.bresp),
        ]
        m.d.sync += last_beat.eq(self.burst_len - 1)
        m.d.comb += w_last.eq(w_left == 0)
        with m.If(w_fire):
            m.d.sync += [w_left.eq(Mux(w_last, last_beat, w_left - 1)), w_first.eq(w_last)]
        with m.Elif(w_first):
            m.d.sync += w_left.eq(last_beat)
        w_done = Signal()
        m.d.comb += w_done.eq(w_fire & w_last)
        for count, up, down in ((aw_ahead, aw_fire, w_done), (b_wait, aw_fire, b_fire)):
            # bit i from up, down and bits i - 1, i, i + 1 (up and down together: the count stays)
            below, above = Cat(1, count[:-1]), Cat(count[1:], 0)
            m.d.sync += count.eq(Mux(up, Mux(down, count, below), Mux(down, above, count)))
        with m.If(b_fire):
            m.d.sync += b_count.eq(b_count + self.burst_len)
        # a register (the count's compare fanned into the engine's end of pass; +1 dma cycle)
        m.d.sync += self.done.eq(~self.start & (b_count == T))
        with m.If(self.start):
            m.d.sync += [b_count.eq(0), w_first.eq(1)]
        return m
