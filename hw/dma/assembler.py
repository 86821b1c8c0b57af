"""Read side of the DMA in the ``ntt`` domain: beats from the read FIFOs become ``points_out`` payloads.

Per logical channel a :class:`UnitCollector` assembles whole units (L points = L/P beats, P points of the
build's field a beat) into a
two-unit buffer. Every engine cycle :class:`ReadAssembler` takes unit A (the x0 of all lanes) from the
channel of slot 2t and unit B (the x1) from the channel of slot 2t + 1, as the
:class:`~hw.dma.addresses.ReadAddressGenerator` names them; when both slots live on the same channel
(R = 1) it takes the two units at the head of that channel's buffer. A unit the generator marks as zero
(zero-extended input, ``zero_mask``) is not read at all: the assembler gives zeros for it without waiting
on or popping a collector.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model import field as F
from nantucket.hw.points import beat_layout, payload_layout, unit_layout

from .addresses import ReadAddressGenerator, batch_shape, log_n_shape, select, slot_bits

__all__ = ["UnitCollector", "ReadAssembler"]


class UnitCollector(wiring.Component):
    """Two-unit buffer filled beat by beat. ``count`` whole units held (0..2), ``some`` (count != 0) and
    ``full`` (count == 2) flip-flops, ``head`` the oldest, ``second`` the next; ``pop`` (0..2) removes that
    many from the head at the end of the cycle.

    The count is kept as the two flags (as a binary count, its compare with 0 behind the
    channel select made the assembler's valid 2 LUT levels deep, and the handshake, the pops and the
    count's next value behind it were 5 levels over the NTT period by the open-flow estimate); ``count``
    is their sum. 0 cycles."""

    def __init__(self, lanes: int, field=F.GOLDILOCKS):
        self._lanes = lanes
        self._field = F.get(field)
        super().__init__({"beats": In(stream.Signature(beat_layout(field))), "count": Out(range(3)),
                          "some": Out(1), "full": Out(1),
                          "head": Out(unit_layout(lanes, field)), "second": Out(unit_layout(lanes, field)),
                          "pop": In(range(3))})

    def elaborate(self, platform):
        m = Module()
        U = self._lanes // beat_layout(self._field).length      # beats per unit
        slots = [Signal(unit_layout(self._lanes, self._field), name=f"slot{j}") for j in range(2)]
        wsel, rsel = Signal(), Signal()
        wbeat = Signal(range(U)) if U > 1 else Const(0, 1)         # beat of the unit being filled
        fill, unit_done = Signal(), Signal()
        nxt = Signal(range(3))
        m.d.comb += [
            self.count.eq(self.some + self.full),
            self.beats.ready.eq(~self.full),
            fill.eq(self.beats.valid & self.beats.ready),
            unit_done.eq(fill & (wbeat == U - 1)),
        ]
        with m.If(fill):
            for j in range(2):
                with m.If(wsel == j):
                    m.d.sync += slots[j].as_value().word_select(wbeat, beat_layout(self._field).size).eq(self.beats.payload)
            if U > 1:
                m.d.sync += wbeat.eq(Mux(wbeat == U - 1, 0, wbeat + 1))
            with m.If(wbeat == U - 1):
                m.d.sync += wsel.eq(~wsel)
        m.d.comb += nxt.eq(self.count + unit_done - self.pop)
        m.d.sync += [self.some.eq(nxt != 0), self.full.eq(nxt == 2), rsel.eq(rsel ^ self.pop[0])]
        m.d.comb += [self.head.eq(Mux(rsel, slots[1], slots[0])),
                     self.second.eq(Mux(rsel, slots[0], slots[1]))]
        return m


class ReadAssembler(wiring.Component):
    """``beats``: one stream per logical read channel (from the read FIFOs); ``points``: the engine's
    payloads in ``pass_schedule`` read order; ``start`` begins a pass (one pass of payloads follows) of
    ``batch`` transforms of 2^``log_n`` points; ``pass2``, ``log_n``, ``batch`` and ``zero_mask`` (the
    zero-extended input's :func:`hw.model.layout.zero_slot_mask`, 0 = off) are held through the pass."""

    def __init__(self, layout: HbmLayout):
        self._layout = layout
        lanes, field = layout.params.lanes, layout.params.prime_field
        super().__init__({"start": In(1), "pass2": In(1),
                          "log_n": In(log_n_shape(layout.params), init=layout.params.max_log_n),
                          "batch": In(batch_shape(layout.params), init=1),
                          "zero_mask": In(slot_bits(layout.params)),
                          "beats": In(stream.Signature(beat_layout(field))).array(layout.group),
                          "points": Out(stream.Signature(payload_layout(lanes, field)))})

    def elaborate(self, platform):
        m = Module()
        lay = self._layout
        lanes, R, field = lay.params.lanes, lay.group, lay.params.prime_field
        m.submodules.addresses = gen = ReadAddressGenerator(lay)
        cols = []
        for q in range(R):
            m.submodules[f"collector{q}"] = col = UnitCollector(lanes, field)
            wiring.connect(m, wiring.flipped(self.beats[q]), col.beats)
            cols.append(col)
        ch_a, ch_b = gen.chan_a, gen.chan_b
        zero_a, zero_b = gen.zero_a, gen.zero_b
        somes = [c.some for c in cols]
        unit_a, unit_b = Signal(unit_layout(lanes, field)), Signal(unit_layout(lanes, field))
        fire = Signal()
        # Slots 2t and 2t + 1 share a channel only when there is one (R = 1): then both units come from its
        # buffer. With R > 1 they never do, at any size (the slot's bit 0 is the channel's), which the
        # logic below says outright rather than leaving it to synthesis to prove.
        # (the units needed against the collectors' flags, not their counts: see UnitCollector)
        if R == 1:
            m.d.comb += [unit_a.eq(Mux(zero_a, 0, cols[0].head)),
                         unit_b.eq(Mux(zero_b, 0, Mux(zero_a, cols[0].head, cols[0].second))),
                         self.points.valid.eq(gen.active & Mux(zero_a | zero_b, (zero_a & zero_b) | cols[0].some,
                                                               cols[0].full))]
        else:
            m.d.comb += [unit_a.eq(Mux(zero_a, 0, select([c.head for c in cols], ch_a))),
                         unit_b.eq(Mux(zero_b, 0, select([c.head for c in cols], ch_b))),
                         self.points.valid.eq(gen.active & (zero_a | select(somes, ch_a))
                                              & (zero_b | select(somes, ch_b)))]
        m.d.comb += [
            gen.start.eq(self.start), gen.pass2.eq(self.pass2), gen.log_n.eq(self.log_n), gen.batch.eq(self.batch),
            gen.zero_mask.eq(self.zero_mask),
            fire.eq(self.points.valid & self.points.ready),
            gen.advance.eq(fire),
        ]
        for lane in range(lanes):
            m.d.comb += [self.points.payload[lane].x0.eq(unit_a[lane]),
                         self.points.payload[lane].x1.eq(unit_b[lane])]
        for q, col in enumerate(cols):
            m.d.comb += col.pop.eq(Mux(fire, ((ch_a == q) & ~zero_a) + ((ch_b == q) & ~zero_b), 0))
        return m
