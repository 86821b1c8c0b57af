"""A stream register slice (skid buffer): ``o.valid`` and ``i.ready`` both come from flip-flops, so
neither side's handshake logic reaches the other's (the write master's AXI handshakes behind
the AsyncFIFOs' empty compares were over a 450 MHz period by the open-flow estimate). Full rate (a
payload a cycle through it), one cycle of latency, two payloads of storage."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SkidBuffer"]


class SkidBuffer(wiring.Component):
    """``i`` -> ``o``, in order, for payloads of ``shape``."""

    def __init__(self, shape):
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        skid = Signal.like(self.o.payload, name="skid")
        skid_valid = Signal()
        i_fire, o_fire = Signal(), Signal()
        m.d.comb += [self.i.ready.eq(~skid_valid),
                     i_fire.eq(self.i.valid & self.i.ready), o_fire.eq(self.o.valid & self.o.ready)]
        # the output register takes the skid's payload (then the input is not ready), else the input's,
        # whenever it is empty or its payload leaves; the input goes to the skid when it stays full
        with m.If(o_fire | ~self.o.valid):
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid), self.o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(i_fire)]
        with m.Elif(i_fire):
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m
