"""Write side of the DMA in the ``ntt`` domain: ``points_in`` payloads become beats and burst addresses
for the write FIFOs.

Pass 2 splits each payload into its two units (all lanes' x0, all lanes' x1: output rows 2t, 2t + 1).
Pass 1 payloads are two columns of the state per lane, so they first go through the :class:`CornerTurn`,
which turns each L x L block (L/2 payloads) into L row units, two per cycle. The
:class:`~hw.dma.addresses.WriteAddressGenerator` places each unit pair; a :class:`UnitSplitter` per
channel takes the units placed on it and drains them beat by beat into the write FIFO, queueing a burst
address at the first beat of each burst (every unit in pass 1, every burst-aligned beat in pass 2).
A chained pass 2 (``chain_log_n`` != 0) writes every unit as a burst of its own, like pass 1, at the
places the generator gives (the input of the next run).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.model.layout import MAX_BURST_BEATS, HbmLayout
from nantucket.hw.model import field as F
from nantucket.hw.points import beat_layout, payload_layout, unit_layout

from .addresses import (WriteAddressGenerator, batch_shape, beat_bits, beats_per_channel, burst_beats_of,
                        log_n_shape, payloads_per_pass, select)
from .skid import SkidBuffer

__all__ = ["row_pair_layout", "CornerTurn", "UnitSplitter", "WritePath"]


def row_pair_layout(lanes: int, field=F.GOLDILOCKS) -> data.StructLayout:
    """Two units of ``field`` points written together: ``a`` then ``b``."""
    return data.StructLayout({"a": unit_layout(lanes, field), "b": unit_layout(lanes, field)})


class CornerTurn(wiring.Component):
    """Pass-1 corner turn: two banks of L/2 payloads; a full bank leaves as rows (2j, 2j + 1), j = 0..L/2-1
    (row i of a block is lane i's pairs over the bank's payloads). ``start`` empties both banks."""

    def __init__(self, lanes: int, field=F.GOLDILOCKS):
        self._lanes = lanes
        self._field = F.get(field)
        super().__init__({"start": In(1),
                          "points": In(stream.Signature(payload_layout(lanes, field))),
                          "rows": Out(stream.Signature(row_pair_layout(lanes, field)))})

    def elaborate(self, platform):
        m = Module()
        L2 = self._lanes // 2
        banks = [[Signal(payload_layout(self._lanes, self._field), name=f"bank{b}_{i}") for i in range(L2)]
                 for b in range(2)]
        full = [Signal(name=f"full{b}") for b in range(2)]
        wsel, rsel = Signal(), Signal()
        wcnt = Signal(range(max(2, L2)))
        rj = Signal(range(max(2, L2)))

        def row(bank, i):
            return Cat(*[bank[t][i].as_value() for t in range(L2)])

        pair_a = Array([Mux(rsel, row(banks[1], 2 * j), row(banks[0], 2 * j)) for j in range(L2)])
        pair_b = Array([Mux(rsel, row(banks[1], 2 * j + 1), row(banks[0], 2 * j + 1)) for j in range(L2)])
        in_fire, out_fire = Signal(), Signal()
        m.d.comb += [
            self.points.ready.eq(~Mux(wsel, full[1], full[0])),
            in_fire.eq(self.points.valid & self.points.ready),
            self.rows.valid.eq(Mux(rsel, full[1], full[0])),
            self.rows.payload.a.eq(pair_a[rj]),
            self.rows.payload.b.eq(pair_b[rj]),
            out_fire.eq(self.rows.valid & self.rows.ready),
        ]
        with m.If(in_fire):
            for b in range(2):
                for i in range(L2):
                    with m.If((wsel == b) & (wcnt == i)):
                        m.d.sync += banks[b][i].eq(self.points.payload)
            m.d.sync += wcnt.eq(wcnt + 1)
            with m.If(wcnt == L2 - 1):
                m.d.sync += [wcnt.eq(0), wsel.eq(~wsel)]
        for b in range(2):
            with m.If(in_fire & (wsel == b) & (wcnt == L2 - 1)):
                m.d.sync += full[b].eq(1)
            with m.Elif(out_fire & (rsel == b) & (rj == L2 - 1)):
                m.d.sync += full[b].eq(0)
        with m.If(out_fire):
            m.d.sync += rj.eq(rj + 1)
            with m.If(rj == L2 - 1):
                m.d.sync += [rj.eq(0), rsel.eq(~rsel)]
        with m.If(self.start):
            m.d.sync += [wcnt.eq(0), wsel.eq(0), rsel.eq(0), rj.eq(0), full[0].eq(0), full[1].eq(0)]
        return m


class UnitSplitter(wiring.Component):
    """One channel's two-unit buffer. ``take_a`` / ``take_b`` store ``unit_a`` at ``beat_a`` / ``unit_b`` at
    ``beat_b`` (both in one cycle: A first); ``count`` units held. Drains one beat per cycle into ``beats``
    and, at the first beat of a burst, the beat address into ``bursts`` (``unit_bursts``: every unit is a
    burst; else bursts are the aligned runs of ``burst_mask`` + 1 beats: 8, or one batch element's whole
    stream when it holds fewer, a power of two, so that each element's region starts a burst; both are read
    as a unit is stored, and held until then). ``some`` (count != 0) and ``full`` (count == 2) are
    flip-flops, the count's state (as a binary count, its compares behind the channel selects
    made the write path's room 2 LUT levels deep, and the handshake and the takes behind it reached the
    slots' registers in 5, over the NTT period by the open-flow estimate); ``count`` is their sum."""

    def __init__(self, lanes: int, address_bits: int, field=F.GOLDILOCKS):
        self._lanes = lanes
        self._beat = beat_layout(field)
        unit = unit_layout(lanes, field)
        super().__init__({
            "take_a": In(1), "unit_a": In(unit), "beat_a": In(address_bits),
            "take_b": In(1), "unit_b": In(unit), "beat_b": In(address_bits),
            "unit_bursts": In(1), "burst_mask": In(range(MAX_BURST_BEATS), init=MAX_BURST_BEATS - 1),
            "count": Out(range(3)), "some": Out(1), "full": Out(1),
            "beats": Out(stream.Signature(self._beat)), "bursts": Out(stream.Signature(address_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        U = self._lanes // self._beat.length               # beats per unit
        abits = len(self.beat_a)
        units = [Signal(self.unit_a.shape(), name=f"unit{j}") for j in range(2)]
        addrs = [Signal(abits, name=f"addr{j}") for j in range(2)]
        # whether the unit in a slot starts a burst, worked out as it is stored (from the stored
        # address, the check sat in front of the FIFOs' write pointers, over the NTT period; 0 cycles)
        firsts = [Signal(name=f"first{j}") for j in range(2)]
        first_a, first_b = Signal(), Signal()
        m.d.comb += [first_a.eq(self.unit_bursts | ((self.beat_a & self.burst_mask) == 0)),
                     first_b.eq(self.unit_bursts | ((self.beat_b & self.burst_mask) == 0))]
        wsel, rsel = Signal(), Signal()
        rbeat = Signal(range(U)) if U > 1 else Const(0, 1)         # beat of the unit being drained
        # the first unit offered goes to wsel; with both, B goes to the other slot
        with m.If(self.take_a):
            for j in range(2):
                with m.If(wsel == j):
                    m.d.sync += [units[j].eq(self.unit_a), addrs[j].eq(self.beat_a), firsts[j].eq(first_a)]
            with m.If(self.take_b):
                for j in range(2):
                    with m.If(wsel != j):
                        m.d.sync += [units[j].eq(self.unit_b), addrs[j].eq(self.beat_b), firsts[j].eq(first_b)]
        with m.Elif(self.take_b):
            for j in range(2):
                with m.If(wsel == j):
                    m.d.sync += [units[j].eq(self.unit_b), addrs[j].eq(self.beat_b), firsts[j].eq(first_b)]
        n_in = Signal(range(3))
        m.d.comb += n_in.eq(self.take_a + self.take_b)
        m.d.sync += wsel.eq(wsel ^ n_in[0])

        cur = Mux(rsel, units[1], units[0])
        cur_addr = Mux(rsel, addrs[1], addrs[0])
        burst_start, drain, unit_out = Signal(), Signal(), Signal()
        m.d.comb += [
            self.count.eq(self.some + self.full),
            burst_start.eq((rbeat == 0) & Mux(rsel, firsts[1], firsts[0])),
            drain.eq(self.some & self.beats.ready & (~burst_start | self.bursts.ready)),
            self.beats.valid.eq(drain),
            self.beats.payload.eq(Array(cur[b * self._beat.size:(b + 1) * self._beat.size] for b in range(U))[rbeat]),
            self.bursts.valid.eq(drain & burst_start),
            self.bursts.payload.eq(cur_addr),
            unit_out.eq(drain & (rbeat == U - 1)),
        ]
        with m.If(drain):
            if U > 1:
                m.d.sync += rbeat.eq(Mux(rbeat == U - 1, 0, rbeat + 1))
            with m.If(rbeat == U - 1):
                m.d.sync += rsel.eq(~rsel)
        nxt = Signal(range(3))
        m.d.comb += nxt.eq(self.count + n_in - unit_out)
        m.d.sync += [self.some.eq(nxt != 0), self.full.eq(nxt == 2)]
        return m


class WritePath(wiring.Component):
    """``points`` (the engine's output, ``pass_schedule`` write order) -> per logical write channel
    ``beats`` and ``bursts``. ``pass2`` picks the order and ``log_n`` the transform size (both held through
    the pass); ``start`` begins a pass, which takes exactly one pass of payloads (N / 2L). ``chain_log_n``
    (held too; 0 = off): pass 2 writes its output as the input of a 2^chain_log_n-point run, a unit per
    burst."""

    def __init__(self, layout: HbmLayout):
        self._layout = layout
        lanes, R, field = layout.params.lanes, layout.group, layout.params.prime_field
        super().__init__({
            "start": In(1), "pass2": In(1),
            "log_n": In(log_n_shape(layout.params), init=layout.params.max_log_n),
            "batch": In(batch_shape(layout.params), init=1),
            "chain_log_n": In(log_n_shape(layout.params)),
            "points": In(stream.Signature(payload_layout(lanes, field))),
            "beats": Out(stream.Signature(beat_layout(field))).array(R),
            "bursts": Out(stream.Signature(beat_bits(layout))).array(R),
        })

    def elaborate(self, platform):
        m = Module()
        lay = self._layout
        params, lanes, R, field = lay.params, lay.params.lanes, lay.group, lay.params.prime_field
        m.submodules.corner_turn = turn = CornerTurn(lanes, field)
        m.submodules.addresses = gen = WriteAddressGenerator(lay)
        # pass-2 bursts: 8 beats, or one element's stream when shorter (registered: log_n is stable from
        # the start on and the first burst leaves cycles later)
        burst_mask = Signal(range(MAX_BURST_BEATS), init=MAX_BURST_BEATS - 1)
        m.d.sync += burst_mask.eq(burst_beats_of(beats_per_channel(params, self.log_n)) - 1)
        splitters = []
        # every unit a burst (pass 1, a chained pass 2), registered like burst_mask (the compare of
        # chain_log_n sat in front of the splitters' burst flags, one more LUT level; 0 cycles)
        unit_bursts = Signal()
        m.d.sync += unit_bursts.eq(~self.pass2 | (self.chain_log_n != 0))
        for q in range(R):
            m.submodules[f"splitter{q}"] = sp = UnitSplitter(lanes, beat_bits(lay), field)
            wiring.connect(m, sp.beats, wiring.flipped(self.beats[q]))
            wiring.connect(m, sp.bursts, wiring.flipped(self.bursts[q]))
            m.d.comb += [sp.unit_bursts.eq(unit_bursts), sp.burst_mask.eq(burst_mask)]
            splitters.append(sp)

        # a pass takes exactly `cycles` payloads (registered like burst_mask)
        active = Signal()
        taken = Signal(range(params.cycles_per_pass + 1))
        cycles = Signal.like(taken)
        m.d.sync += cycles.eq(payloads_per_pass(params, self.log_n, self.batch))
        in_fire = Signal()
        m.d.comb += in_fire.eq(self.points.valid & self.points.ready)
        # ``last``: the next payload is the pass's last, kept a step ahead (the count's compare
        # behind the handshake was over the NTT period; 0 cycles)
        last = Signal()
        with m.If(in_fire):
            m.d.sync += [taken.eq(taken + 1), last.eq(taken == cycles - 2)]
            with m.If(last):
                m.d.sync += active.eq(0)
        with m.If(self.start):
            m.d.sync += [active.eq(1), taken.eq(0), last.eq(cycles == 1)]

        # the unit pair offered to the splitters: straight from the payload (pass 2) or the corner turn.
        # Neither ready is computed from a valid (``room`` only): a valid that reached a ready was a path
        # from the engine's output through the corner turn's row handshake into its bank select, 5 LUT
        # levels over the NTT clock's period by the timing estimate; the handshakes are the same.
        # (A ready without a valid takes nothing.)
        # The pair goes through a register slice (SkidBuffer) on its way to the splitters (the
        # offer's valid, from the corner turn's full flags or the engine's output, and the splitters' room
        # met in the handshake that enables every register of the address generator, 5 LUT levels over the
        # NTT period by the timing estimate): the handshake behind it is a register's valid against the
        # room. Cost: +1 ntt cycle from a payload to its beats (no throughput lost).
        m.submodules.pair_slice = pair_slice = SkidBuffer(row_pair_layout(lanes, field))
        offer = pair_slice.o.payload
        offer_valid, accept, room = Signal(), Signal(), Signal()
        m.d.comb += [turn.start.eq(self.start), gen.start.eq(self.start), gen.pass2.eq(self.pass2),
                     gen.log_n.eq(self.log_n), gen.chain_log_n.eq(self.chain_log_n),
                     turn.points.payload.eq(self.points.payload),
                     offer_valid.eq(pair_slice.o.valid), pair_slice.o.ready.eq(room)]
        with m.If(self.pass2):
            m.d.comb += [pair_slice.i.valid.eq(active & self.points.valid),
                         self.points.ready.eq(active & pair_slice.i.ready)]
            for lane in range(lanes):
                m.d.comb += [pair_slice.i.payload.a[lane].eq(self.points.payload[lane].x0),
                             pair_slice.i.payload.b[lane].eq(self.points.payload[lane].x1)]
        with m.Else():
            m.d.comb += [turn.points.valid.eq(active & self.points.valid),
                         self.points.ready.eq(active & turn.points.ready),
                         pair_slice.i.valid.eq(turn.rows.valid), pair_slice.i.payload.eq(turn.rows.payload),
                         turn.rows.ready.eq(pair_slice.i.ready)]

        # both units need room: two in one splitter if they share it (R = 1, or a chained pass 2: with
        # R > 1 the two rows of a plain pair are on different channels at every size), else one in each
        # (the splitters' flags, not their counts: see UnitSplitter)
        somes, fulls = [sp.some for sp in splitters], [sp.full for sp in splitters]
        fire = Signal()
        # (and the address generator's places: ready a few cycles after the start, far before the first
        # payload can come)
        if R == 1:
            m.d.comb += room.eq(gen.ready & ~somes[0])
        else:
            m.d.comb += room.eq(gen.ready & Mux(gen.chan_a == gen.chan_b, ~select(somes, gen.chan_a),
                                                ~select(fulls, gen.chan_a) & ~select(fulls, gen.chan_b)))
        m.d.comb += accept.eq(offer_valid & room)
        m.d.comb += [fire.eq(offer_valid & accept), gen.advance.eq(fire)]
        for q, sp in enumerate(splitters):
            m.d.comb += [sp.take_a.eq(fire & (gen.chan_a == q)), sp.take_b.eq(fire & (gen.chan_b == q)),
                         sp.unit_a.eq(offer.a), sp.unit_b.eq(offer.b),
                         sp.beat_a.eq(gen.beat_a), sp.beat_b.eq(gen.beat_b)]
        return m
