"""The status record's writer: one AXI4 write burst of :data:`hw.model.record.RECORD_BEATS` beats.

The kernel (hw/kernel.py) hands it the record's words and address at the end of every start and lends it
master 0's write channels while the DMA is idle; it raises ``done`` once the burst's write response is in.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .axi import BURST_INCR, RESP_OKAY, Axi4WriteSignature
from .model.record import RECORD_BEATS, RECORD_BYTES, RECORD_WORDS

__all__ = ["RecordWriter"]

_WORDS_PER_BEAT = len(RECORD_WORDS) // RECORD_BEATS


class RecordWriter(wiring.Component):
    """Writes ``words`` (hw.model.record order) at ``address`` rounded down to RECORD_BYTES.

    Ports: ``start`` (In 1, while idle: latch words and address, begin), ``address`` (In 64), ``words`` (In
    ArrayLayout(32, len(RECORD_WORDS))), ``axi`` (Out: the write half of an AXI4 master, 256-bit), ``busy`` (Out 1), ``done``
    (Out 1: one cycle, with the write response), ``fault`` (Out 1: with ``done``, the response was not OKAY)
    and ``fault_resp`` (Out 2: that response). The address goes first, then the beats, then the response
    is awaited (any AXI slave takes this order).
    """

    def __init__(self, axi: Axi4WriteSignature):
        if not isinstance(axi, Axi4WriteSignature):
            raise TypeError(f"axi: expected Axi4WriteSignature, got {type(axi).__name__}")
        if axi.data_width != 32 * _WORDS_PER_BEAT:
            raise ValueError(f"axi: a record beat is {32 * _WORDS_PER_BEAT} bits, the port is {axi.data_width}")
        super().__init__({
            "start": In(1), "address": In(64), "words": In(data.ArrayLayout(32, len(RECORD_WORDS))),
            "axi": Out(axi), "busy": Out(1), "done": Out(1), "fault": Out(1), "fault_resp": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        axi = self.axi
        held = Signal(data.ArrayLayout(32, len(RECORD_WORDS)))
        beat = Signal(range(RECORD_BEATS))
        m.d.comb += [axi.awlen.eq(RECORD_BEATS - 1), axi.awsize.eq(axi.signature.size_code),
                     axi.awburst.eq(BURST_INCR), axi.wstrb.eq(-1), axi.wlast.eq(beat == RECORD_BEATS - 1),
                     axi.wdata.eq(Cat(*(held[beat * _WORDS_PER_BEAT + i] for i in range(_WORDS_PER_BEAT)))),
                     self.fault_resp.eq(axi.bresp)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [held.eq(self.words), beat.eq(0),
                                 axi.awaddr.eq(self.address & ~(RECORD_BYTES - 1))]
                    m.next = "ADDRESS"
            with m.State("ADDRESS"):
                m.d.comb += [axi.awvalid.eq(1), self.busy.eq(1)]
                with m.If(axi.awready):
                    m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += [axi.wvalid.eq(1), self.busy.eq(1)]
                with m.If(axi.wready):
                    m.d.sync += beat.eq(beat + 1)
                    with m.If(axi.wlast):
                        m.next = "RESPONSE"
            with m.State("RESPONSE"):
                m.d.comb += [axi.bready.eq(1), self.busy.eq(1)]
                with m.If(axi.bvalid):
                    m.d.comb += [self.done.eq(1), self.fault.eq(axi.bresp != RESP_OKAY)]
                    m.next = "IDLE"
        return m
