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

    cycle 0      e, ROM addresses, the root's top bits     X registered
    1            f = R_hi * R_lo (MulReduce, 1 .. 12)      shift amount looked up, X registered again
    2 .. 12                                                X * 2^shift (ShiftReduce, 7), then delay 4
    13 .. 24     Y = (X * 2^shift) * f (MulReduce)

Latency 25; four multiply/reduce units (48 DSP48E2) per lane, the same in both passes.

Inverse transforms, no new multiplier: ``i_inverse`` negates the exponent, Y[m] =
w_N^(-n2 m) X[m] (the step u is kept one's-complemented, ~u = -u - 1, and the exponent adders take a
carry in: e += -u, so the per-cycle path keeps its one adder). ``i_normalize`` (pass 2 of an inverse run,
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
units and DSP48E2 count are as above with the field's multiplier (Montgomery: latency 19, 8 DSP48E2).
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
    i_next_cycle (output cycle t of the pair entering on the next enabled cycle, k-1 bits),
    i_next_column (that pair's frame's column n2, k bits), i_log_n (n: N = 2^n, 0..2k; constant while
    frames flow), i_inverse (Y[m] = w_N^(-n2 m) X[m]), i_normalize (Y[m] = X[m] / N, the column ignored);
    the last two are also constant while frames flow."""

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
            "en": In(1), "i_valid": In(1), "i_next_cycle": In(max(1, log_core - 1)),
            "i_next_column": In(log_core), "i_log_n": In(range(n + 1)),
            "i_inverse": In(1), "i_normalize": In(1),
            "i_x0": In(width), "i_x1": In(width),
            "o_valid": Out(1), "o_x0": Out(width), "o_x1": Out(width),
        })

    @property
    def field(self) -> F.Field:
        return self._field

    @property
    def latency(self) -> int:
        return 1 + 2 * self._general.latency

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
        # this pair's step u = n2 * 2^(2k - n), registered from the "next" inputs;
        # inverse: the step is kept as ~u = -u - 1 and the adders below add the missing 1 as a carry in;
        # normalize: u = 0 (the exponent stays 0, factor 1)
        step = Signal(n, name="step")
        neg = Signal(name="negate")
        column = Mux(self.i_normalize, 0, self.i_next_column)
        with m.If(en):
            m.d.sync += [step.eq(((column << n) >> self.i_log_n) ^ Mux(self.i_inverse, (1 << n) - 1, 0)),
                         neg.eq(self.i_inverse)]
        # exponents of this cycle's two outputs: e0 = 2 t u, e1 = e0 + u (mod 2^(2k)); inverse -u for u.
        # e0 is a register, cleared for the pair that starts a frame as it is loaded (the frame start is
        # known a cycle ahead): a mux on e0 in front of the e1 adder and the ROM addresses was the fourth
        # LUT level of a path over the NTT clock (issue 28; no cycle added)
        e0, e1 = Signal(n, name="e0"), Signal(n, name="e1")
        # a + b + c_in as one adder: the carry in rides below bit 0 of both operands
        add_carry = lambda a, b, c: (Cat(c, a) + Cat(c, b))[1:n + 1]
        m.d.comb += e1.eq(add_carry(e0, step, neg))
        with m.If(en):
            # -2u = 2 (~u) + 2 = (2 (~u) + 1) + 1
            m.d.sync += e0.eq(Mux(self.i_next_cycle == 0, 0, add_carry(e0, Cat(neg, step), neg)))
        if self._shifted:
            # 1/N as a shift amount, order - n (0 for n = 0)
            order = self._field.two_order
            norm = Signal(range(order), name="norm_shift")
            with m.If(en):
                m.d.sync += norm.eq(Mux(self.i_log_n == 0, 0, order - self.i_log_n))
        else:
            # 1/N as the multiplier's word, in place of R_hi's (the exponent is 0: R_lo's word is 1)
            norm = Signal(self._field.width, name="norm_word")
            # padded to every value of i_log_n (n > 2k does not occur: those act as 2k)
            words = self.normalize_words
            words += [words[-1]] * ((1 << len(self.i_log_n)) - len(words))
            with m.If(en):
                m.d.sync += norm.eq(Array(Const(w, self._field.width) for w in words)[self.i_log_n])
        normalize = Signal(name="normalize_q")
        with m.If(en):
            m.d.sync += normalize.eq(self.i_normalize)

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
        valid = pipe(regs, self.i_valid, 1, "valid_in", reset_less=False)
        out_valid = pipe(regs, valid, 2 * general.latency, "valid", reset_less=False)
        m.d.comb += self.o_valid.eq(out_valid)
        rest = n - self._top_bits
        if shifter is None:
            # 1/N's word and the flag, a cycle later: with the ROM words they replace
            norm_word, norm_on = pipe(regs, norm, 1, "norm_word_q"), pipe(regs, normalize, 1, "normalize_d")
        for port, (e, x, out) in enumerate(((e0, self.i_x0, self.o_x0), (e1, self.i_x1, self.o_x1))):
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
                # carry chain from the frame-start register (issue 28). The shifter starts a cycle later and the wait
                # after it is a cycle shorter: no cycle added.
                top = pipe(regs, e[rest:], 1, f"root{port}")
                norm_on, norm_amount = pipe(regs, normalize, 1, f"normalize{port}"), pipe(regs, norm, 1, f"norm{port}")
                amount = pipe(regs, Mux(norm_on, norm_amount, shift_of[top]), 1, f"shift{port}")
                x1 = pipe(regs, x, 2, f"x{port}", last_ff=True)
                m.d.comb += [
                    factor.i_valid.eq(valid), factor.i_a.eq(hi_rd.data), factor.i_b.eq(lo_rd.data),
                    shift.i_valid.eq(pipe(regs, valid, 1, f"shift_valid{port}")), shift.i_a.eq(x1),
                    shift.i_b.eq(amount),
                ]
                shifted = pipe(regs, shift.o_p, general.latency - shifter.latency - 1, f"shifted{port}",
                               last_ff=True)
            else:
                # the point waits for its factor; normalize: 1/N's word for R_hi's (constant while frames flow)
                x1 = pipe(regs, x, 1, f"x{port}")
                m.d.comb += [factor.i_valid.eq(valid), factor.i_a.eq(Mux(norm_on, norm_word, hi_rd.data)),
                             factor.i_b.eq(lo_rd.data)]
                # ends in a flip-flop: the Montgomery unit's first stage is logic on it (from an SRL output
                # that path was over the NTT clock in Yosys' sta, issue 28; no cycle added)
                shifted = pipe(regs, x1, general.latency, f"shifted{port}", last_ff=True)
            m.d.comb += [scale.i_valid.eq(factor.o_valid), scale.i_a.eq(shifted), scale.i_b.eq(factor.o_p),
                         out.eq(scale.o_p)]
        m.submodules.regs = EnableInserter(en)(regs)
        return m
