# amaranth: UnusedElaboratable=no
"""The four-step scale on a lane's output: Y[m] = w_N^(n2 * m) * X[m], N = 2^n (n = ``i_log_n``, at most 2k).

In the lane's field (``field``, default Goldilocks; the roots, shift amounts and ROM words are that field's,
the ROMs holding the words its general multiplier takes). The figures below are Goldilocks'.

A lane whose late stages are shift-only (hw/multiplier.py, ShiftMultiplier) cannot take the pass-1 scale folded into
its stage twiddles (that makes every twiddle general), so it applies the scale here instead, to the two
outputs (X[2t], X[2t+1]) of each cycle. n2 is the frame's column (0 in pass 2: factor 1).

The factor is looked up, not run up by a recurrence: with the frame's step u = n2 * 2^(2k - n) (the
column moved to a 2^(2k)-th root's exponent, registered once a cycle from the next pair's column, so the
shift is off the per-cycle path) and e = u * m mod 2^(2k) (kept by an adder, e += 2u per cycle, loaded with 0
for a frame's first pair),
w_N^(n2 m) = w_(2^2k)^e = 2^shift(e_top) * R_hi[e_hi] * R_lo[e_lo], where e_top is the top 6 bits
(a 64th root of unity, a power of two) and e_hi, e_lo split the remaining 2k - 6 bits (512-word ROMs at
k = 12, one RAMB36 each, read by both ports). Per port:

    cycle 0      e (from registers; e1 = e0 + step)      X registered
    1            e registered: ROM addresses, the root's top bits
    2            f = R_hi * R_lo (MulReduce, 2 .. 13)      shift amount looked up, X registered again
    3 .. 13                                                X * 2^shift (ShiftReduce, 7), then delay 4
    14 .. 25     Y = (X * 2^shift) * f (MulReduce)

Latency 26 (the exponents' register, cycle 1: e1's adder in front of the ROM addresses was a path over the
NTT clock's period; one cycle); four multiply/reduce units (48 DSP48E2) per lane, the same in both passes.

Inverse transforms, no new multiplier: ``i_inverse`` negates the exponent, Y[m] =
w_N^(-n2 m) X[m] (the exponent adders take the step one's-complemented, ~u = -u - 1, and a carry in:
e += -u, so the per-cycle path keeps its one adder). ``i_normalize`` (pass 2 of an inverse run,
where the column is 0) makes Y = X / N instead: 1/N = 2^(192 - n) since 2^192 = 1 mod p, so it is a shift
amount for the shifter that already serves the factor's power-of-two part (every level of the 0..191
barrel is built for the 64th roots' amounts), and the exponent is held at 0 (factor 1).

Fields where 2 has a large order (BabyBear, KoalaBear: ``field.shift_count`` is 1, so no root but 1 is
a shift and 1/N is no power of two the shifter could serve) take the general path: no shifter, the
whole exponent split over the two ROMs (e_hi, e_lo of k bits each at 2k bits: 4096-word ROMs at k = 12),
Y = X * (R_hi[e_hi] * R_lo[e_lo]) through the field's general multiplier (Montgomery: the ROM words are
in Montgomery form, so the factor unit's product is the factor in Montgomery form again, as the scale
unit takes it), and ``i_normalize`` puts the word of 1/N (a (2k + 1)-word table by n) in place of
R_hi's, the exponent held at 0 (R_lo[0] = 1). The point waits in a delay line for the factor; latency,
units and DSP48E2 count are as above with the field's multiplier (Montgomery: latency 2 + 2 x its 19, 8 DSP48E2).

Two more modes on the same units (``i_head``, ``i_stream``; both 0: the above, bit-exact):

- head (``i_head``): the pair of cycle t holds the positions of the lane's INPUT order at frame size f
  (``i_log_frame``; hw/model/schedule.py ``lane_input_order(f)[t]``): i0 = r + 2^(f-a) mm, i1 = i0 + 2^(f-1),
  a = ceil(f/2), t = r 2^(a-1) + mm, and Y = w_N^(+-column i) X for each (normalize: X / N as above). Adders
  only: e_r = r u (+u when a new r starts, i.e. the low a-1 bits of t are 0), e0 = e_r there, else
  e0 + (u << (f - a)); e1 = e0 + (u << (f - 1)). Every step (both modes) is the next column shifted by an
  amount registered from the controls (tail 2k - n and 2k - n + 1; head 2k - n + f - 1 and 2k - n +
  floor(f/2); normalize: out of range, steps 0; over two register stages), hence ``CONTROL_LEAD`` = 3: the per-frame path is one
  barrel shift of the column, the per-cycle paths one adder and a mux from flip-flops.
- stream (``i_stream``): Y = X * (S * K), S the multiplier word given with the point (``i_s0``, ``i_s1``, the
  same cycle as ``i_x0``, ``i_x1``), K the frame's word given one enabled cycle ahead (``i_next_k``). S and
  K take the ROM words' places at the factor unit (a mux on its inputs); the shifter shifts by 0 (1/N's
  mux, so no cycle moves); the column, ROMs, ``i_inverse`` and ``i_normalize`` are ignored.
"""

from amaranth.hdl import Array, Cat, Const, EnableInserter, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import pipe
from nantucket.hw.model import field as F
from nantucket.hw.model.lane import twiddle_shift
from nantucket.hw.shared import share
from nantucket.hw.multiplier import ShiftMultiplier, general_multiplier

# The file's first line: the multipliers built here are emitted once and instantiated (hw/shared.py), so those
# the shared modules stand for are never elaborated; the warning would only be noise.

__all__ = ["OutputScale"]


class OutputScale(wiring.Component):
    """Ports: en, i_valid, i_x0, i_x1 (X[2t], X[2t+1] of output cycle t), o_valid, o_x0, o_x1 (scaled,
    ``latency`` cycles later), and, one enabled cycle AHEAD of the pair they describe (registered here):
    i_next_first (the pair entering on the next enabled cycle starts a frame: its output cycle t is 0),
    i_next_new_r (head mode: that pair starts a new residue r, the low a - 1 bits of its t are 0; ignored in the
    other modes), i_next_column (that pair's frame's column n2, k bits), i_log_n (n: N = 2^n, 0..2k; constant while
    frames flow), i_inverse (Y[m] = w_N^(-n2 m) X[m]), i_normalize (Y[m] = X[m] / N, the column ignored);
    the last two are also constant while frames flow.

    Modes (module docstring): i_head (positions of the lane input order at frame size i_log_frame, f in
    2..k, instead of (2t, 2t+1)), i_stream (Y = X * S * K: i_s0, i_s1 the words of the pair's points, the
    same cycle as i_x0, i_x1; i_next_k the frame's word, one enabled cycle ahead like i_next_column).

    Timing, for a pair entering on enabled cycle c (i_valid with i_x0, i_x1, i_s0, i_s1 on c):
    i_next_first, i_next_new_r, i_next_column, i_next_k on c - 1 (exactly one enabled cycle ahead, per pair; the
    column and K change only between frames). i_head, i_stream, i_log_frame, i_log_n, i_inverse, i_normalize on c - 3 ..
    c - 1, the ``CONTROL_LEAD`` (3) enabled cycles before it (the head shift amounts and the mode flags are
    registered from them; the pair does not look at them on any other cycle, c included). So a run of frames
    takes its controls from CONTROL_LEAD enabled cycles before its first pair to the cycle before its last,
    and runs with other controls need CONTROL_LEAD - 1 = 2 enabled cycles between them without a pair (more
    are harmless: the lane enables the block for CONTROL_LEAD cycles after it latches a new mode while no
    data flows). Tail mode (i_head = i_stream = 0) ignores i_log_frame."""

    #: enabled cycles the mode controls must be stable before the first pair (class docstring)
    CONTROL_LEAD = 3

    def __init__(self, log_core: int, *, field=F.GOLDILOCKS):
        if not isinstance(log_core, int) or not 2 <= log_core <= 12:
            raise ValueError(f"log_core: must be an int in 2..12, got {log_core!r}")
        self._k = log_core
        self._field = field = F.get(field)
        # the shifter serves the top roots and 1/N only when 2 has a small order modulo p (Goldilocks)
        self._shifted = field.shift_count == field.two_order
        self._general = general_multiplier(field)
        n = 2 * log_core
        self._top_bits = min(field.shift_roots_log, n) if self._shifted else 0
        rest = n - self._top_bits
        self._lo_bits = rest // 2
        self._hi_bits = rest - self._lo_bits
        width = field.width
        super().__init__({
            "en": In(1), "i_valid": In(1), "i_next_first": In(1), "i_next_new_r": In(1),
            "i_next_column": In(log_core), "i_log_n": In(range(n + 1)),
            "i_inverse": In(1), "i_normalize": In(1),
            "i_log_frame": In(range(log_core + 1)), "i_head": In(1), "i_stream": In(1),
            "i_next_k": In(width), "i_s0": In(width), "i_s1": In(width),
            "i_x0": In(width), "i_x1": In(width),
            "o_valid": Out(1), "o_x0": Out(width), "o_x1": Out(width),
        })

    @property
    def field(self) -> F.Field:
        return self._field

    @property
    def latency(self) -> int:
        return 2 + 2 * self._general.latency

    @property
    def mul_units(self) -> int:
        return 4

    @property
    def dsp_tiles(self) -> int:
        return 2 * 2 * self._general.dsp_tiles          # the shifters (Goldilocks) have none

    @property
    def rom_words(self) -> int:
        """Words in the two factor ROMs (each read by both ports)."""
        return (1 << self._hi_bits) + (1 << self._lo_bits)

    @property
    def shifted(self) -> bool:
        """True when the factor's top roots and 1/N are shifts (Goldilocks), False on the general path
        (module docstring)."""
        return self._shifted

    @property
    def normalize_shifts(self) -> list[int]:
        """Shift amounts of 1/N = 2^(order - n), n = 1..2k (n = 0: 0), order the order of 2 (192); empty
        on the general path (1/N is a multiplier word there, ``normalize_words``)."""
        if not self._shifted:
            return []
        return [0] + [self._field.two_order - n for n in range(1, 2 * self._k + 1)]

    @property
    def normalize_words(self) -> list[int]:
        """General path: the multiplier's word for 1/N = 1/2^n, n = 0..2k (what replaces R_hi's word)."""
        field = self._field
        return [self._general.encode(field.inv(1 << n)) for n in range(2 * self._k + 1)]

    def model(self, pairs, *, log_frame=None, log_n=0, column=0, inverse=False, normalize=False,
              head=False, stream=False, s=None, k=None) -> list[tuple[int, int]]:
        """Bit-exact outputs of one frame's pairs (x0, x1) of cycles t = 0, 1, .. (canonical points).

        Tail (head False): positions (2t, 2t+1); head: ``lane_input_order(log_frame)[t]``; Y = X w_N^(+-column
        i), or X / N (normalize). stream: Y = X * S * K with ``s`` the (S0, S1) values of each pair and ``k``
        the frame's K (values, not multiplier words)."""
        field = self._field
        if stream:
            return [(field.mul(field.mul(x0, s0), k), field.mul(field.mul(x1, s1), k))
                    for (x0, x1), (s0, s1) in zip(pairs, s)]
        if normalize:
            f = field.inv(1 << log_n)
            return [(field.mul(x0, f), field.mul(x1, f)) for x0, x1 in pairs]
        if head:
            from nantucket.hw.model.schedule import lane_input_order
            order = [tuple(int(v) for v in row) for row in lane_input_order(log_frame)]
        else:
            order = [(2 * t, 2 * t + 1) for t in range(len(pairs))]
        w = field.root_of_unity(1 << log_n)
        if inverse:
            w = field.inv(w)
        out = []
        for (x0, x1), (i0, i1) in zip(pairs, order):
            out.append((field.mul(x0, field.pow_(w, column * i0 % (1 << log_n))),
                        field.mul(x1, field.pow_(w, column * i1 % (1 << log_n)))))
        return out

    def _tables(self):
        """(shift amount of each top-bits root, HI words, LO words): the ROMs hold the words the general
        multiplier takes (``encode``)."""
        field, n = self._field, 2 * self._k
        w = field.root_of_unity(1 << n)
        rest = n - self._top_bits
        shifts = [twiddle_shift(field.pow_(w, v << rest), field) for v in range(1 << self._top_bits)] \
            if self._shifted else []
        hi = [field.pow_(w, i << self._lo_bits) for i in range(1 << max(1, self._hi_bits))]
        lo = [field.pow_(w, j) for j in range(1 << max(1, self._lo_bits))]
        encode = self._general.encode
        return shifts, [encode(v) for v in hi], [encode(v) for v in lo]

    def elaborate(self, platform):
        m = Module()
        n, en = 2 * self._k, self.en
        shifts, hi_words, lo_words = self._tables()
        k = self._k
        # per-frame values registered from the controls (CONTROL_LEAD = 3): the flags, and the shift amounts
        # that make the column's steps: u = column * 2^(2k - n) (e_r's step), e1's step (tail u; head
        # u << (f - 1)) and e0's step within a run (tail 2u; head u << (f - a), a = ceil(f/2)); normalize:
        # n, every step shifted out (factor 1). f outside 2..k (tail mode does not use it) gives some value. Every step is then one
        # barrel shift of the column by a registered amount: the head/tail choice is on the amounts, not
        # on the per-frame data path (a mux there made the column-to-step path 6 LUT levels). The
        # frame and residue starts come as flags the caller registers beside its cycle counters: compared
        # here, the cycle's zero test was two LUT levels in front of e0 after the adder's carry chain).
        head = Signal(name="head_q")
        stream = Signal(name="stream_q")
        sh_bits = (3 * k + 1).bit_length()
        amt_r, amt_1, amt_a = (Signal(sh_bits, name=f"shift_{x}") for x in ("r", "1", "a"))
        frames = 1 << len(self.i_log_frame)
        half = Array(Const(f >> 1, sh_bits) for f in range(frames))
        less1 = Array(Const(max(f - 1, 0), sh_bits) for f in range(frames))
        # two register stages (CONTROL_LEAD = 3): 2k - n and the frame's table values, then the amounts (the
        # subtraction, the lookups and the addition in one cycle were 5 LUT levels)
        base, less1_q, half_q = (Signal(sh_bits, name=x) for x in ("shift_base", "frame_less1", "frame_half"))
        off = lambda a: Mux(self.i_normalize, n, a)
        with m.If(en):
            m.d.sync += [base.eq(Const(n, sh_bits + 1) - self.i_log_n), less1_q.eq(less1[self.i_log_frame]),
                         half_q.eq(half[self.i_log_frame])]
            m.d.sync += [head.eq(self.i_head), stream.eq(self.i_stream),
                         amt_r.eq(off(base)),
                         amt_1.eq(off(base + Mux(self.i_head, less1_q, 0))),
                         amt_a.eq(off(base + Mux(self.i_head, half_q, 1)))]
        # this pair's steps, registered from the "next" inputs; inverse: the adders below take ~step =
        # -step - 1 and the missing 1 as a carry in (the complement is in the adders' own LUTs, beside the
        # carry chain: on the column's path it was a LUT level)
        step = Signal(n, name="step")
        step_1, step_a = Signal(n, name="step_1"), Signal(n, name="step_a")
        neg = Signal(name="negate")
        column = self.i_next_column
        shifted = lambda amount: (column << amount)[:n]
        with m.If(en):
            m.d.sync += [step.eq(shifted(amt_r)), neg.eq(self.i_inverse),
                         step_1.eq(shifted(amt_1)), step_a.eq(shifted(amt_a))]
        # exponents of this cycle's two outputs: e0 = 2 t u, e1 = e0 + u (mod 2^(2k)); inverse -u for u.
        # e0 is a register, cleared for the pair that starts a frame as it is loaded (the frame start is
        # known a cycle ahead): a mux on e0 in front of the e1 adder and the ROM addresses was the fourth
        # LUT level of a path over the NTT clock's period (no cycle added). Head mode: e0 = e_r (its own
        # register, + u) when a new r starts, else e0 + (u << (f - a)); e1 = e0 + (u << (f - 1)).
        e0, e1 = Signal(n, name="e0"), Signal(n, name="e1")
        e_r = Signal(n, name="e_r")
        # a + b (c_in = 0) or a + ~b + 1 = a - b (c_in = 1, inverse) as one adder: the carry in rides below
        # bit 0 of both operands, the complement in the adder's LUTs
        add_carry = lambda a, b, c: (Cat(c, a) + Cat(c, b ^ Mux(c, (1 << n) - 1, 0)))[1:n + 1]
        m.d.comb += e1.eq(add_carry(e0, step_1, neg))
        next_r = add_carry(e_r, step, neg)
        with m.If(en):
            with m.If(self.i_next_first):
                m.d.sync += [e0.eq(0), e_r.eq(0)]
            with m.Elif(head & self.i_next_new_r):
                m.d.sync += [e0.eq(next_r), e_r.eq(next_r)]
            with m.Else():
                # tail: -2u = 2 (~u) + 2 = (2 (~u) + 1) + 1
                m.d.sync += e0.eq(add_carry(e0, step_a, neg))
        # stream: the frame's word K (one cycle ahead, like the column), a cycle later with the ROM words
        k_word = Signal(self._field.width, name="k_word")
        with m.If(en):
            m.d.sync += k_word.eq(self.i_next_k)
        if self._shifted:
            # 1/N as a shift amount, order - n (0 for n = 0)
            order = self._field.two_order
            norm = Signal(range(order), name="norm_shift")
            with m.If(en):
                m.d.sync += norm.eq(Mux(self.i_stream | (self.i_log_n == 0), 0, order - self.i_log_n))
        else:
            # 1/N as the multiplier's word, in place of R_hi's (the exponent is 0: R_lo's word is 1)
            norm = Signal(self._field.width, name="norm_word")
            # padded to every value of i_log_n (n > 2k does not occur: those act as 2k)
            words = self.normalize_words
            words += [words[-1]] * ((1 << len(self.i_log_n)) - len(words))
            with m.If(en):
                m.d.sync += norm.eq(Array(Const(w, self._field.width) for w in words)[self.i_log_n])
        # stream: the normalize mux puts the shift 0 in (Goldilocks), S in place of R_hi (general path)
        normalize = Signal(name="normalize_q")
        with m.If(en):
            m.d.sync += normalize.eq(self.i_normalize | self.i_stream)

        # 512 x 64 at k = 12: one RAMB36 (512 x 72) each, both ports reading; Yosys would otherwise
        # build them from LUTs (about 1,400 LUTs per ROM and port)
        big = {"ram_style": "block", "rom_style": "block"}
        width = self._field.width
        rom_hi = Memory(shape=unsigned(width), depth=len(hi_words), init=hi_words,
                        attrs=big if len(hi_words) >= 256 else None)
        rom_lo = Memory(shape=unsigned(width), depth=len(lo_words), init=lo_words,
                        attrs=big if len(lo_words) >= 256 else None)
        m.submodules.rom_hi, m.submodules.rom_lo = rom_hi, rom_lo
        shift_of = Array(Const(s, 8) for s in shifts)
        general = self._general
        shifter = None
        if self._shifted:
            shifter = ShiftMultiplier(sorted(set(shifts) | set(self.normalize_shifts)), field=self._field)
        regs = Module()                                     # local registers, gated by en
        # what the pair's cycle (c) holds, met by the ROM words two cycles later: the exponents registered
        # (c + 1), then the ROMs read (c + 2)
        rom_wait = 2
        valid = pipe(regs, self.i_valid, rom_wait, "valid_in", reset_less=False)
        out_valid = pipe(regs, valid, 2 * general.latency, "valid", reset_less=False)
        m.d.comb += self.o_valid.eq(out_valid)
        rest = n - self._top_bits
        stream_d, k_d = pipe(regs, stream, rom_wait, "stream_d"), pipe(regs, k_word, rom_wait, "k_word_d")
        if shifter is None:
            # the flag (normalize or stream), with the ROM words they replace
            norm_on = pipe(regs, normalize, rom_wait, "normalize_d")
        for port, (e_comb, x, s_in, out) in enumerate(((e0, self.i_x0, self.i_s0, self.o_x0),
                                                       (e1, self.i_x1, self.i_s1, self.o_x1))):
            e = pipe(regs, e_comb, 1, f"exponent{port}")
            factor = general.unit()
            scale = general.unit()
            shift = shifter.unit() if shifter else None
            m.submodules[f"factor{port}"] = share(factor)
            m.submodules[f"scale{port}"] = share(scale)
            if shift is not None:
                m.submodules[f"shift{port}"] = share(shift)
            for unit in (factor, scale, shift):
                if unit is not None:
                    m.d.comb += unit.en.eq(en)
            hi_rd = rom_hi.read_port(domain="sync")
            lo_rd = rom_lo.read_port(domain="sync")
            m.d.comb += [hi_rd.en.eq(en), lo_rd.en.eq(en)]
            if self._hi_bits:
                m.d.comb += hi_rd.addr.eq(e[self._lo_bits:rest])
            if self._lo_bits:
                m.d.comb += lo_rd.addr.eq(e[:self._lo_bits])
            if shift is not None:
                # the root's bits registered first, looked up (and 1/N's amount put in) a cycle later: the
                # exponent's adder, the lookup and the normalize mux in one cycle were 4 LUT levels and a
                # carry chain from the frame-start register. The shifter starts a cycle later and the wait
                # after it is a cycle shorter: no cycle added.
                top = pipe(regs, e[rest:], 1, f"root{port}")
                norm_on = pipe(regs, normalize, rom_wait, f"normalize{port}")
                norm_amount = pipe(regs, norm, rom_wait, f"norm{port}")
                amount = pipe(regs, Mux(norm_on, norm_amount, shift_of[top]), 1, f"shift{port}")
                x1 = pipe(regs, x, rom_wait + 1, f"x{port}", last_ff=True)
                s_d = pipe(regs, s_in, rom_wait, f"s_word{port}")
                m.d.comb += [
                    factor.i_valid.eq(valid), factor.i_a.eq(Mux(stream_d, s_d, hi_rd.data)),
                    factor.i_b.eq(Mux(stream_d, k_d, lo_rd.data)),
                    shift.i_valid.eq(pipe(regs, valid, 1, f"shift_valid{port}")), shift.i_a.eq(x1),
                    shift.i_b.eq(amount),
                ]
                shifted = pipe(regs, shift.o_p, general.latency - shifter.latency - 1, f"shifted{port}",
                               last_ff=True)
            else:
                # the point waits for its factor; normalize: 1/N's word for R_hi's (constant while frames flow);
                # stream: S for R_hi's, K for R_lo's
                x1 = pipe(regs, x, rom_wait, f"x{port}")
                norm_word = pipe(regs, Mux(stream, s_in, norm), rom_wait, f"norm_word{port}")
                m.d.comb += [factor.i_valid.eq(valid), factor.i_a.eq(Mux(norm_on, norm_word, hi_rd.data)),
                             factor.i_b.eq(Mux(stream_d, k_d, lo_rd.data))]
                # ends in a flip-flop: the Montgomery unit's first stage is logic on it (from an SRL output
                # that path was over the NTT clock in Yosys' sta; no cycle added)
                shifted = pipe(regs, x1, general.latency, f"shifted{port}", last_ff=True)
            m.d.comb += [scale.i_valid.eq(factor.o_valid), scale.i_a.eq(shifted), scale.i_b.eq(factor.o_p),
                         out.eq(scale.o_p)]
        m.submodules.regs = EnableInserter(en)(regs)
        return m
