"""The DMA's address generators (``ntt`` domain): which channel and beat every unit the engine moves
belongs to, in engine order. Built from :class:`hw.model.layout.HbmLayout`'s formulas applied to
Amaranth Values, so the gateware and the host's scatter/gather share one definition of the layout.

Reads need only channels: each channel's read stream is sequential (the AXI read master walks it), and
the assembler picks, for engine cycle t of block blk, unit A from the channel of slot 2t and unit B from
that of slot 2t + 1. Writes also need each unit's first beat: pass 2 writes output rows 2t, 2t + 1 of
block blk (slot = row); pass 1 writes, per block, the rows of the round two by two as the corner turn
emits them (rows L*g + 2j, L*g + 2j + 1 of column block b, slot = lane-input position of the row).
"""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.model.layout import HbmLayout

__all__ = ["ReadAddressGenerator", "WriteAddressGenerator", "beat_bits", "select"]


def _log2(v: int) -> int:
    return v.bit_length() - 1


def _channel_bits(layout: HbmLayout) -> int:
    return max(1, _log2(layout.group))


def select(items, index):
    """``items[index]`` for a per-channel list: an ``Array`` lookup, or the only item when there is one
    channel per direction (a one-entry Array would leave an incomplete case in the Verilog)."""
    return items[0] if len(items) == 1 else Array(items)[index]


def beat_bits(layout: HbmLayout) -> int:
    """Width of a channel-relative beat address."""
    return max(1, (layout.beats_per_channel - 1).bit_length())


class ReadAddressGenerator(wiring.Component):
    """Logical channels of the two units of the engine's next read cycle.

    ``start`` rewinds to cycle 0 of block 0 and raises ``active``; each ``advance`` (the cycle's payload
    left) moves on; ``active`` falls after the pass's last cycle. ``chan_a`` / ``chan_b``: channel of
    slot 2t / 2t + 1.
    """

    def __init__(self, layout: HbmLayout):
        self._layout = layout
        bits = _channel_bits(layout)
        super().__init__({"start": In(1), "advance": In(1), "active": Out(1),
                          "chan_a": Out(bits), "chan_b": Out(bits)})

    def elaborate(self, platform):
        m = Module()
        lay = self._layout
        half = lay.params.core_points // 2
        t = Signal(range(max(2, half)))
        blk = Signal(range(max(2, lay.blocks("state"))))
        slot_a = Signal(lay.params.log_core)
        # input (pass 1) and state (pass 2) have the same shape at the build's largest size
        m.d.comb += [slot_a.eq(t << 1),
                     self.chan_a.eq(lay.slot_channel("input", slot_a)),
                     self.chan_b.eq(lay.slot_channel("input", slot_a | 1))]
        with m.If(self.advance):
            m.d.sync += t.eq(t + 1)
            with m.If(t == half - 1):
                m.d.sync += [t.eq(0), blk.eq(blk + 1)]
                with m.If(blk == lay.blocks("state") - 1):
                    m.d.sync += [blk.eq(0), self.active.eq(0)]
        with m.If(self.start):
            m.d.sync += [t.eq(0), blk.eq(0), self.active.eq(1)]
        return m


class WriteAddressGenerator(wiring.Component):
    """Channel and first beat of the two units of the next write (a row pair), in the write path's order.

    ``pass2`` selects the order (held through the pass); ``start`` rewinds; ``advance``: the pair was
    taken. ``chan_a`` / ``beat_a`` for the first unit, ``chan_b`` / ``beat_b`` for the second.
    """

    def __init__(self, layout: HbmLayout):
        self._layout = layout
        bits = _channel_bits(layout)
        super().__init__({"start": In(1), "pass2": In(1), "advance": In(1),
                          "chan_a": Out(bits), "chan_b": Out(bits),
                          "beat_a": Out(beat_bits(layout)), "beat_b": Out(beat_bits(layout))})

    def elaborate(self, platform):
        m = Module()
        lay = self._layout
        k, lanes, blocks = lay.params.log_core, lay.params.lanes, lay.blocks("state")
        half, pairs = lay.params.core_points // 2, lanes // 2
        # pass 2: engine cycle t of block blk; pass 1: row pair j of column block b in round g
        t = Signal(range(max(2, half)))
        blk = Signal(range(max(2, blocks)))
        j = Signal(range(max(2, pairs)))
        b = Signal(range(max(2, blocks)))
        g = Signal(range(max(2, blocks)))
        row_a = Signal(k)
        slot_a, slot_b = Signal(k), Signal(k)
        block = Signal(range(max(2, blocks)))
        m.d.comb += row_a.eq((g << _log2(lanes)) | (j << 1))
        with m.If(self.pass2):
            m.d.comb += [slot_a.eq(t << 1), slot_b.eq((t << 1) | 1), block.eq(blk)]
        with m.Else():
            m.d.comb += [slot_a.eq(lay.slot_of_row("state", row_a)),
                         slot_b.eq(lay.slot_of_row("state", row_a | 1)), block.eq(b)]
        m.d.comb += [self.chan_a.eq(lay.slot_channel("state", slot_a)), self.chan_b.eq(lay.slot_channel("state", slot_b)),
                     self.beat_a.eq(lay.unit_beat("state", slot_a, block)),
                     self.beat_b.eq(lay.unit_beat("state", slot_b, block))]

        with m.If(self.advance & self.pass2):
            m.d.sync += t.eq(t + 1)
            with m.If(t == half - 1):
                m.d.sync += [t.eq(0), blk.eq(blk + 1)]
        with m.If(self.advance & ~self.pass2):
            m.d.sync += j.eq(j + 1)
            with m.If(j == pairs - 1):
                m.d.sync += [j.eq(0), b.eq(b + 1)]
                with m.If(b == blocks - 1):
                    m.d.sync += [b.eq(0), g.eq(g + 1)]
        with m.If(self.start):
            m.d.sync += [t.eq(0), blk.eq(0), j.eq(0), b.eq(0), g.eq(0)]
        return m
