"""The DMA's address generators (``ntt`` domain): which channel and beat every unit the engine moves
belongs to, in engine order, for a transform of any size 2^n the build supports (``log_n``, held through
the run). Built from :mod:`hw.model.layout`'s generic placement formulas, so the gateware and the host's
scatter/gather share one definition of the layout.

Reads need only channels: each channel's read stream is sequential (the AXI read master walks it), and
the assembler picks, for engine cycle t of block blk, unit A from the channel of slot 2t and unit B from
that of slot 2t + 1 (input rows 2^n1 in lane order of frame n1 in pass 1, state rows 2^n2 in lane order of
frame n2 in pass 2). Writes also need each unit's first beat: pass 2 writes output rows 2t, 2t + 1 of
block blk (slot = row); pass 1 writes, per block, the rows of the round two by two as the corner turn
emits them (rows L*g + 2j, L*g + 2j + 1 of column block b, slot = lane-input position of the row).

Batches (``batch`` = B, held through the run like ``log_n``): a pass moves B transforms back to back,
B x N / 2L pairs. Each element's pairs are those of a single transform (the channels depend only on the
pair within the element, which the formulas take modulo the element's pairs); the write beats gain the
element's region, e * N/R/P beats (P points a beat) (:func:`hw.model.layout.element_beat_of`), which falls out of the
block number once it counts on across elements. The DMA moves at most 2^max_log_n points per pass
(B x N <= 2^(2k), the buffers the card allocates); a larger batch is the control's to reject.

Run-time sizes: for each size the formulas are evaluated with constant shifts (pure wiring and a few
XORs) and the results are selected by ``log_n``; the selected values for the *next* pair are registered,
so the outputs come straight from flip-flops. (One set of variable shifters instead measured 2.4 times
larger and twice as deep: docs/architecture.md, "Run-time sizes".)
"""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.model.layout import (MAX_BURST_BEATS, HbmLayout, element_beat_of, lane_slot, points_per_beat,
                                       sigma_of, slot_channel_of, unit_beat_of)
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import max_batch

__all__ = ["ReadAddressGenerator", "WriteAddressGenerator", "beat_bits", "select", "log_n_shape",
           "batch_shape", "slot_bits", "payloads_per_pass", "beats_per_channel", "burst_beats_of",
           "read_pair_channels", "write_pair_units", "zero_slot_mask_of", "read_unit_slot", "chained_index",
           "chained_unit", "per_size", "zero_unit_at"]


def _log2(v: int) -> int:
    return v.bit_length() - 1


def _channel_bits(layout: HbmLayout) -> int:
    return max(1, _log2(layout.group))


def select(items, index):
    """``items[index]`` for a per-channel list: an ``Array`` lookup, or the only item when there is one
    channel per direction (a one-entry Array would leave an incomplete case in the Verilog)."""
    return items[0] if len(items) == 1 else Array(items)[index]


def beat_bits(layout: HbmLayout) -> int:
    """Width of a channel-relative beat address (at the build's largest size)."""
    return max(1, (layout.beats_per_channel - 1).bit_length())


def log_n_shape(params: BuildParams):
    """Shape of a run-size port: unsigned, ``range(2k + 1)``."""
    return range(params.max_log_n + 1)


def slot_bits(params: BuildParams) -> int:
    """Width of an input slot (and of a zero-slot mask): the largest pass-1 frame, ceil(max_log_n / 2)."""
    return (params.max_log_n + 1) >> 1


def batch_shape(params: BuildParams):
    """Shape of a batch-size port: unsigned, ``range(2^(max_log_n - min_log_n) + 1)`` (the most transforms
    of the smallest size that fill the largest size's buffers)."""
    return range(max_batch(params) + 1)


# -- run-time counts, on ints and Amaranth Values alike ------------------------------------------------

def payloads_per_pass(params: BuildParams, log_n, batch=1):
    """Engine cycles (payloads of 2L points) per pass of a batch of B = ``batch`` 2^log_n-point
    transforms: B x N / 2L."""
    return (batch << log_n) >> (_log2(params.lanes) + 1)


def beats_per_channel(params: BuildParams, log_n, batch=1):
    """Beats each channel reads (and writes) per pass of a batch of B: B x N / R / P (P points a beat)."""
    return (batch << log_n) >> (_log2(params.channels // 2) + _log2(points_per_beat(params)))


def burst_beats_of(total):
    """Burst length of a sequential stream of ``total`` beats (a power of two): min(8, total)."""
    return ((total - 1) & (MAX_BURST_BEATS - 1)) + 1


# -- the placement of one pair, for one size ------------------------------------------------------------

def read_pair_channels(pair, frame: int, rho: int):
    """Logical channels of the two units of read pair ``pair`` (engine cycle of the pass) of a buffer whose
    rows are read in lane frames of 2^frame: slots 2t and 2t + 1 with t = pair mod 2^(frame-1)."""
    slot = (pair << 1) & ((1 << frame) - 1)
    sigma = sigma_of(frame, rho)
    return slot_channel_of(slot, sigma, rho), slot_channel_of(slot | 1, sigma, rho)


def write_pair_units(pair, pass2, log_n: int, lanes_log: int, rho: int, unit_beats_log: int):
    """((channel, first beat) of unit A, (channel, first beat) of unit B) of write pair ``pair`` of a
    pass of 2^log_n-point transforms: pass 2 (``pass2``) output rows 2t, 2t + 1 of block blk
    (pair = blk * 2^(n2-1) + t); pass 1 state rows L*g + 2j, L*g + 2j + 1 of column block b
    (pair = (g * 2^n1/L + b) * L/2 + j). Both buffers have 2^n2 rows. In a batch the pair counts on
    over the elements: element e = pair div (N/2L) is block e * 2^n1/L + b of one long buffer, which
    is exactly e element regions further (the pass-2 block pos >> n2 does it by itself)."""
    n1, n2 = (log_n + 1) >> 1, log_n >> 1
    pos = pair << 1
    j = pair & ((1 << (lanes_log - 1)) - 1)
    b = (pair & ((1 << (n1 - 1)) - 1)) >> (lanes_log - 1)
    element = pos >> (log_n - lanes_log)
    row_a = ((pos >> n1) << lanes_log) | (j << 1)     # lane_slot uses the row within the element
    slot_a = Mux(pass2, pos & ((1 << n2) - 1), lane_slot(row_a, n2))
    slot_b = Mux(pass2, (pos | 1) & ((1 << n2) - 1), lane_slot(row_a | 1, n2))
    block = Mux(pass2, pos >> n2, b | (element << (n1 - lanes_log)))
    sigma = sigma_of(n2, rho)
    return tuple((slot_channel_of(s, sigma, rho), unit_beat_of(s, block, n2, rho, unit_beats_log))
                 for s in (slot_a, slot_b))


def zero_slot_mask_of(log_n: int, log_m):
    """:func:`hw.model.layout.zero_slot_mask` for a constant ``log_n`` and a run-time ``log_m`` (int or
    Value; 0 = no zero extension gives 0, as does log_m = log_n): input row bit i (i < n1) is in the row
    mask iff log_m <= n2 + i (rows >= 2^(log_m - n2)), and ``lane_slot`` moves the bits to the slot's."""
    n1, n2 = (log_n + 1) >> 1, log_n >> 1
    row_mask = 0
    for i in range(n1):
        row_mask = row_mask | (((log_m != 0) & (log_m <= n2 + i)) << i)
    return lane_slot(row_mask, n1)


def read_unit_slot(unit, channel, frame: int, rho: int):
    """Slot of the ``unit``-th unit (counted from the channel's first beat, over every block and batch
    element) of logical channel ``channel`` of a buffer read in lane frames of 2^frame: units sit at
    consecutive beats in (block, slot) order, one per aligned group of R slots, so the unit's
    block * 2^frame + slot is unit * R + r, and its slot's low rho bits r are the channel XOR the
    slot's bits [sigma, sigma + rho) (which come from the unit number alone, sigma >= rho)."""
    hi = (unit << rho) & ((1 << frame) - 1)
    return hi | (channel ^ ((hi >> sigma_of(frame, rho)) & ((1 << rho) - 1)))


def chained_index(pair, log_n: int, lanes_log: int):
    """(index j within its element of the first point of unit A, element e) of pass-2 write pair ``pair``
    of 2^log_n-point transforms: unit A is output row k2 = 2t of column block kb (pair = block * 2^(n2-1)
    + t, the block counting on over the elements), i.e. points X[e, j .. j + L-1] with
    j = k2 * 2^n1 + kb * L. Unit B is row k2 + 1: index j + 2^n1."""
    n1, n2 = (log_n + 1) >> 1, log_n >> 1
    pos = pair << 1
    block = pos >> n2
    kb = block & ((1 << (n1 - lanes_log)) - 1)
    k2 = pos & ((1 << n2) - 1)
    return (k2 << n1) | (kb << lanes_log), pos >> (log_n - lanes_log)


def chained_unit(index, element, log_t: int, lanes_log: int, rho: int, unit_beats_log: int):
    """(logical channel, first beat) of the unit of L points from ``index`` (L-aligned, < 2^log_t) of
    batch element ``element`` placed as input of a 2^log_t-point run (``HbmLayout.output_as_input``):
    input row index >> t2, column block (index mod 2^t2) / L, slot lane_slot(row, t1)."""
    t1, t2 = (log_t + 1) >> 1, log_t >> 1
    row = index >> t2
    blk = (index & ((1 << t2) - 1)) >> lanes_log
    slot = lane_slot(row, t1)
    # the unit's beat within its element is below the element's region (a power of two): OR, not add
    # (L = 2^lanes_log points in 2^unit_beats_log beats: P = 2^(lanes_log - unit_beats_log) points a beat)
    beat = (unit_beat_of(slot, blk, t1, rho, unit_beats_log)
            | element_beat_of(element, log_t, rho, lanes_log - unit_beats_log))
    return slot_channel_of(slot, sigma_of(t1, rho), rho), beat


def per_size(m, params: BuildParams, log_n, targets, values_of):
    """``targets`` (comb) take ``values_of(n)`` for the run's size n = ``log_n`` (the largest size's for a
    ``log_n`` out of range, which the control never starts: a complete case, as lint wants)."""
    with m.Switch(log_n):
        for n in range(params.min_log_n, params.max_log_n):
            with m.Case(n):
                m.d.comb += [t.eq(v) for t, v in zip(targets, values_of(n))]
        with m.Default():
            m.d.comb += [t.eq(v) for t, v in zip(targets, values_of(params.max_log_n))]


def zero_unit_at(m, layout: HbmLayout, log_n, beat, channel, zero_mask):
    """A signal (comb) that says whether the unit at channel-relative ``beat`` (unit-aligned) of the input
    buffer's logical ``channel`` (int or Value) is a zero of the zero-extended input, for the run's size
    ``log_n``: its slot (:func:`read_unit_slot`) has a bit of ``zero_mask``. A read master's skip walk."""
    rho, ub_log = _log2(layout.group), _log2(layout.unit_beats)
    unit = beat >> ub_log
    zero = Signal()
    per_size(m, layout.params, log_n, (zero,),
             lambda n: ((read_unit_slot(unit, channel, (n + 1) >> 1, rho) & zero_mask) != 0,))
    return zero


class ReadAddressGenerator(wiring.Component):
    """Logical channels of the two units of the engine's next read cycle.

    ``pass2``, ``log_n`` (the run's size) and ``batch`` (transforms per pass) are held from ``start``
    through the pass (and set no later than ``start``). ``start`` rewinds to the pass's first cycle and
    raises ``active``; each ``advance`` (the cycle's payload left) moves on; ``active`` falls after the
    pass's last cycle (B x N / 2L of them). ``chan_a`` (a register) / ``chan_b``: channel of slot
    2t / 2t + 1. The two differ exactly in bit 0 when R > 1 (slot bit 0 is the channel's bit 0, and
    sigma >= 1 keeps it out of the XOR term) and are both 0 when R = 1, so ``chan_b`` is ``chan_a`` with
    bit 0 flipped, which lets synthesis see that the two units never share a channel.

    Zero-extended input: ``zero_mask`` (held like ``log_n``; 0 = off) is the run's
    :func:`hw.model.layout.zero_slot_mask`; ``zero_a`` / ``zero_b`` (registers) say that the unit in slot
    2t / 2t + 1 is one of the zeros, which the DMA does not read.
    """

    def __init__(self, layout: HbmLayout):
        self._layout = layout
        bits = _channel_bits(layout)
        params = layout.params
        super().__init__({"start": In(1), "pass2": In(1),
                          "log_n": In(log_n_shape(params), init=params.max_log_n),
                          "batch": In(batch_shape(params), init=1),
                          "zero_mask": In(slot_bits(params)),
                          "advance": In(1), "active": Out(1),
                          "chan_a": Out(bits), "chan_b": Out(bits), "zero_a": Out(1), "zero_b": Out(1)})

    def elaborate(self, platform):
        m = Module()
        lay = self._layout
        params, rho = lay.params, _log2(lay.group)
        upcoming = Signal(range(params.cycles_per_pass + 1))     # the pair after the one on the outputs
        pair = Signal.like(upcoming)
        chan_a = Signal.like(self.chan_a)
        slot_a = Signal(slot_bits(params))          # the input slot 2t (only pass 1 has zeros)
        zero_a, zero_b = Signal(), Signal()
        m.d.comb += [pair.eq(Mux(self.start, 0, upcoming)),
                     self.chan_b.eq(self.chan_a ^ (1 if rho > 0 else 0))]

        def channels(n):
            # the buffer read: input (rows 2^n1, pass 1) or state (rows 2^n2, pass 2)
            n1, n2 = (n + 1) >> 1, n >> 1
            return (Mux(self.pass2, read_pair_channels(pair, n2, rho)[0], read_pair_channels(pair, n1, rho)[0]),
                    (pair << 1) & ((1 << n1) - 1))
        per_size(m, params, self.log_n, (chan_a, slot_a), channels)
        # the zeros: the slot is (pair << 1) within the run's frame of n1 bits, so a slot of the pair is a
        # zero where it meets the zero mask within the frame, a register of the (held) size and mask (issue
        # 28: the size's switch in front of the mask compare was 5 LUT levels over the NTT period; 0 cycles).
        # It is valid from the cycle after start, the first a pair can leave; at start the pair is 0: slot 0
        # (A) is no zero, slot 1 (B) is one as the mask's bit 0 says.
        frame_mask = Signal(slot_bits(params))
        per_size(m, params, self.log_n, (frame_mask,), lambda n: ((1 << ((n + 1) >> 1)) - 1,))
        zero_in_frame = Signal(slot_bits(params))
        m.d.sync += zero_in_frame.eq(self.zero_mask & frame_mask)
        m.d.comb += [zero_a.eq(((upcoming << 1) & zero_in_frame) != 0),
                     zero_b.eq((((upcoming << 1) | 1) & zero_in_frame) != 0)]
        nxt = [self.chan_a.eq(chan_a), self.zero_a.eq(zero_a), self.zero_b.eq(zero_b)]

        # the pass's pairs, registered (log_n and batch are stable from the start on; the first compare
        # comes a cycle after it)
        pairs = Signal.like(upcoming)
        m.d.sync += pairs.eq(payloads_per_pass(params, self.log_n, self.batch))
        with m.If(self.advance):
            m.d.sync += [upcoming.eq(upcoming + 1), *nxt]
            with m.If(upcoming == pairs):
                m.d.sync += self.active.eq(0)
        with m.If(self.start):
            m.d.sync += [upcoming.eq(1), self.active.eq(1), self.chan_a.eq(chan_a), self.zero_a.eq(0),
                         self.zero_b.eq(self.zero_mask[0])]
        return m


class WriteAddressGenerator(wiring.Component):
    """Channel and first beat of the two units of the next write (a row pair), in the write path's order.

    ``pass2`` selects the order and ``log_n`` the size (both held through the pass); ``start`` rewinds;
    ``advance``: the pair was taken. ``chan_a`` / ``beat_a`` for the first unit, ``chan_b`` / ``beat_b``
    for the second (registers), valid while ``ready``.

    Pipelined (the size and target-size selects in series were 8 LUT levels into the outputs,
    over the NTT period by the open-flow estimate): the places go through two register stages that move on
    together with every ``advance``, so after ``start`` the generator fills them first: ``ready`` rises
    ``FILL`` = 2 ntt cycles after the cycle after ``start`` (the write path's first pair comes far later:
    the engine's latency; 0 cycles of throughput).

    Chained output: with ``chain_log_n`` = t != 0 (held like ``log_n``) pass 2 places each output unit as
    input of a 2^t-point run instead (:meth:`hw.model.layout.HbmLayout.output_as_input`): the unit's
    output index and element come from a switch on ``log_n``, its target place from one on t. The two
    units of a pair may then share a channel.
    """

    #: priming shifts after ``start`` before the outputs hold the pass's first pair
    FILL = 2

    def __init__(self, layout: HbmLayout):
        self._layout = layout
        bits = _channel_bits(layout)
        params = layout.params
        super().__init__({"start": In(1), "pass2": In(1),
                          "log_n": In(log_n_shape(params), init=params.max_log_n),
                          "chain_log_n": In(log_n_shape(params)), "advance": In(1), "ready": Out(1),
                          "chan_a": Out(bits), "chan_b": Out(bits),
                          "beat_a": Out(beat_bits(layout)), "beat_b": Out(beat_bits(layout))})

    def elaborate(self, platform):
        m = Module()
        lay = self._layout
        params = lay.params
        rho, lanes_log, ub_log = _log2(lay.group), _log2(params.lanes), _log2(lay.unit_beats)
        # a two-stage pipeline that shifts on every advance: the pair counter feeds stage 1 (the places
        # for the run's size, and a chained pass's output index and element), stage 1 feeds stage 2 (the
        # chained places for the target size, and the choice), which is the outputs
        pair = Signal(range(params.cycles_per_pass + self.FILL + 1))     # the pair entering stage 1
        fill = Signal(range(self.FILL + 1))
        shift = Signal()
        # ``ready`` (fill == 0) is a register beside ``fill`` (its compare led the write path's
        # handshake into every stage's enable, 5 LUT levels over the NTT period; 0 cycles)
        ready = Signal(init=1)
        m.d.comb += [shift.eq(self.advance | ~ready), self.ready.eq(ready)]
        outs = (self.chan_a, self.beat_a, self.chan_b, self.beat_b)

        # stage 1
        plain = [Signal.like(o, name=f"plain_{o.name}") for o in outs]
        plain_q = [Signal.like(o, name=f"plain_{o.name}_q") for o in outs]

        def units(n):
            (ca, ba), (cb, bb) = write_pair_units(pair, self.pass2, n, lanes_log, rho, ub_log)
            return ca, ba, cb, bb
        per_size(m, params, self.log_n, plain, units)

        # chained pass 2: unit A's output index and element for the run's size, then both units' places in
        # the target's input for the target size (unit B is output row k2 + 1: index + 2^n1)
        index_a = Signal(params.max_log_n, name="chain_index_a")
        index_b = Signal.like(index_a, name="chain_index_b")
        element = Signal(range(batch_shape(params).stop), name="chain_element")
        source = (index_a, index_b, element)
        source_q = [Signal.like(v, name=f"{v.name}_q") for v in source]

        def from_pair(n):
            index, elem = chained_index(pair, n, lanes_log)
            return index, index | (1 << ((n + 1) >> 1)), elem
        per_size(m, params, self.log_n, source, from_pair)
        chain_q = Signal()

        # stage 2
        index_aq, index_bq, element_q = source_q
        chained = [Signal.like(o, name=f"chained_{o.name}") for o in outs]

        def target(t):
            return (*chained_unit(index_aq, element_q, t, lanes_log, rho, ub_log),
                    *chained_unit(index_bq, element_q, t, lanes_log, rho, ub_log))
        per_size(m, params, self.chain_log_n, chained, target)

        with m.If(shift):
            m.d.sync += [*(q.eq(v) for q, v in zip(plain_q, plain)), *(q.eq(v) for q, v in zip(source_q, source)),
                         chain_q.eq(self.pass2 & (self.chain_log_n != 0)),
                         *(o.eq(Mux(chain_q, c, p)) for o, c, p in zip(outs, chained, plain_q)),
                         pair.eq(pair + 1)]
        # (not under ``shift``, which holds whenever ``ready`` is low: the handshake stays off this path)
        with m.If(~ready):
            m.d.sync += [fill.eq(fill - 1), ready.eq(fill == 1)]
        with m.If(self.start):
            m.d.sync += [pair.eq(0), fill.eq(self.FILL), ready.eq(0)]
        return m
