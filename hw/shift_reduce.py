"""Multiplication by a power of two without a multiplier (hw/multiplier.py's shift-only multiplier).

In the Goldilocks field 2^96 = -1 (mod p), so 2 has order 192 and every 64th root of unity is a power
of two (w_64 = 2^39 with the model's root chain, hw.model.field.root_of_unity). A butterfly whose
twiddles are 64th roots (the last six stages of a 2^k DIF lane, hw.model.lane.shift_stages) needs
x * 2^s mod p for s < 192: a shift, adds and the usual reduction, no DSP48E2.

ShiftReduce (latency 7): with s = 96 q + r (q in {0, 1}, r < 96), x * 2^s = (-1)^q * x * 2^r, and
x * 2^r < 2^160 is split as lo (64 bits) + mid * 2^64 (32 bits) + hi * 2^96 (64 bits, hi < 2^63) =
lo + mid * (2^32 - 1) - hi (mod p):
    1. decode (q, r) from s; shift x by the low bits of r (0..15)
    2. shift by the high bits of r (16 * 0..5): t = x * 2^r (160 bits)
    3. d = lo - hi (with borrow), t1 = mid * 2^32 - mid
    4. t0 = borrow ? d + p : d          (d + p is d - eps modulo 2^64; hi < 2^63 keeps it in range)
    5. s = t0 + t1 (65 bits)
    6. canonical: the carry out of 2^64 is worth eps, else subtract p once (the MulReduce stage 12)
    7. negate ? p - y : y, canonical (negate: q and a != 0, taken in stage 1: y = 0 iff a = 0)
Each stage is at most one ~64-bit carry chain or a few 2:1 mux levels (stages 1 and 2 split the barrel
shifter). Only the shift levels that the allowed set of amounts (``shifts``) can use are built: a stage
of a lane whose twiddles are the 2^q-th roots of unity needs at most q of them, the last stage none.

Other fields (``field=``): in BabyBear and KoalaBear 2 has a large order and only their last DIF stage has
power-of-two twiddles (its one twiddle, 1; ``Field.shift_count`` is 1), so the only amount is 0 and the unit
is a wire of ``field.width`` bits with a one-bit ``i_b``, latency 0.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from nantucket.hw.arith import EPS, P, _pipeline_signature, _Pipeline, as_field, field_tag
from nantucket.hw.model import field

__all__ = ["ShiftReduce", "ALL_SHIFTS", "all_shifts", "check_shifts", "shift_operand_bits"]

#: Every shift amount in the Goldilocks field: 2 has order 192 modulo p.
ALL_SHIFTS = tuple(range(192))


def all_shifts(f=field.GOLDILOCKS) -> tuple[int, ...]:
    """Every shift amount a shift unit over ``f`` can take: 0 .. shift_count - 1 (0..191 Goldilocks,
    only 0 in the 31-bit fields)."""
    return tuple(range(as_field(f).shift_count))


def shift_operand_bits(f=field.GOLDILOCKS) -> int:
    """Bits of the shift amount operand ``i_b``: 8 for Goldilocks, 1 where only amount 0 exists."""
    return as_field(f).shift_bits


def check_shifts(shifts, f=field.GOLDILOCKS) -> tuple[int, ...]:
    """``shifts`` as a sorted tuple of distinct amounts of field ``f`` (None: all of them)."""
    top = as_field(f).shift_count - 1
    if shifts is None:
        return all_shifts(f)
    try:
        out = tuple(sorted(set(int(s) for s in shifts)))
    except TypeError:
        raise TypeError(f"shifts: expected an iterable of ints, got {type(shifts).__name__}") from None
    if not out or out[0] < 0 or out[-1] > top:
        raise ValueError(f"shifts: need one or more amounts in 0..{top} ({as_field(f).name}), got {list(shifts)!r}")
    return out


class ShiftReduce(_Pipeline):
    """o_p = (i_a * 2^i_b) mod p for canonical i_a and a shift amount i_b in ``shifts``; canonical output.
    Latency 7. (``i_b`` is named as MulReduce's twiddle operand: the two are one seam, hw/multiplier.py.)

    ``shifts`` (default: all of 0..191) is the set of amounts the unit must support; other amounts give
    unspecified results. Shift levels and the negation that no allowed amount needs are not built.
    ``field`` (a Field or a preset's name, default Goldilocks): a 31-bit field has amount 0 only, a wire.
    """

    LATENCY = 7

    def __init__(self, shifts=None, *, field=field.GOLDILOCKS):
        self._field = as_field(field)
        if self._field.shift_count > 1 and self._field.p != P:
            raise ValueError(f"field: ShiftReduce multiplies by 2^s modulo the Goldilocks prime only, not "
                             f"{self._field.name}")
        self._shifts = check_shifts(shifts, self._field)
        w = self._field.width
        super().__init__(_pipeline_signature({"i_a": w, "i_b": shift_operand_bits(self._field)}, {"o_p": w}))

    @classmethod
    def latency_for(cls, shifts, field=field.GOLDILOCKS) -> int:
        """7, or 0 when the only allowed shift is 0 (the unit is then a wire: the input is canonical)."""
        return 0 if check_shifts(shifts, field) == (0,) else cls.LATENCY

    @property
    def field(self) -> field.Field:
        return self._field

    @property
    def latency(self) -> int:
        return self.latency_for(self._shifts, self._field)

    @property
    def shifts(self) -> tuple[int, ...]:
        return self._shifts

    @property
    def shared_key(self) -> str:
        """Hardware is a function of the allowed set (emitted once per set, hw/shared.py)."""
        tag = field_tag(self._field)
        base = f"shiftreduce_{tag}" if tag else "shiftreduce"
        if self._shifts == all_shifts(self._field) and not tag:
            return base
        return f"{base}_" + format(sum(1 << s for s in self._shifts), "x")

    @property
    def dsp_tiles(self) -> int:
        return 0

    def model(self, a: int, shift: int) -> int:
        return self._field.mul(a, pow(2, shift, self._field.p))

    def _rest(self) -> tuple[set, set]:
        """(residues r, signs q) of s = 96 q + r over the allowed set."""
        return {s % 96 for s in self._shifts}, {s // 96 for s in self._shifts}

    def _shift_by(self, value, r, bits: range, width: int, name: str, m: Module):
        """``value`` shifted left by (r restricted to ``bits``), building only the levels some allowed
        residue needs; bits constant over the allowed residues are fixed shifts."""
        residues, _ = self._rest()
        out = value
        for j in bits:
            used = {(x >> j) & 1 for x in residues}
            if used == {1}:
                out = out << (1 << j)
            elif used == {0, 1}:
                out = Mux(r[j], out << (1 << j), out)
        reg = Signal(width, name=name, reset_less=True)
        m.d.sync += reg.eq(out)
        return reg

    def _datapath(self, m):
        def reg(width, value, name):
            r = Signal(width, name=name, reset_less=True)
            m.d.sync += r.eq(value)
            return r

        if self._shifts == (0,):
            m.d.comb += self.o_p.eq(self.i_a)
            return
        residues, signs = self._rest()
        # 1: decode s = 96 q + r, shift by r[0:4]
        q_in = Signal(name="q_in")
        r_in = Signal(7, name="r_in")
        m.d.comb += q_in.eq(self.i_b >= 96)
        m.d.comb += r_in.eq(Mux(q_in, self.i_b - 96, self.i_b))
        low = self._shift_by(self.i_a, r_in, range(4), 64 + 15, "shift_low", m)
        q1 = reg(1, q_in if signs == {0, 1} else Const(signs == {1}, 1), "q1")
        # the result is 0 exactly when the (canonical) operand is: tested here, on the input, not on y
        nonzero = reg(1, self.i_a != 0, "nonzero") if 1 in signs else Const(0, 1)
        r_hi = Signal(3, name="r_hi")       # with a reset: a flip-flop, not the end of an SRL from the twiddle line
        m.d.sync += r_hi.eq(r_in[4:])
        # 2: shift by r[4:7] (16, 32, 64): t = a * 2^r < 2^160
        t = self._shift_by(low, Cat(Const(0, 4), r_hi), range(4, 7), 160, "t", m)
        q2 = reg(1, q1 & nonzero, "q2")     # from here on: negate
        # 3: lo - hi and mid * (2^32 - 1)
        lo, mid, hi = t[:64], t[64:96], t[96:160]
        d = reg(65, lo - hi, "lo_minus_hi")
        t1 = reg(64, Cat(Const(0, 32), mid) - mid, "mid_eps")
        q3 = reg(1, q2, "q3")
        # 4: fold the borrow: + p is - eps modulo 2^64 (hi < 2^63, so lo - hi + p >= 0)
        t0 = reg(64, Mux(d[64], d[:64] - EPS, d[:64]), "t0")
        t1b = reg(64, t1, "mid_eps_d")
        q4 = reg(1, q3, "q4")
        # 5
        s = reg(65, t0 + t1b, "t0_plus_t1")
        q5 = reg(1, q4, "q5")
        # 6: canonical (t1 <= (2^32 - 1)^2, so a carry out of 2^64 leaves a value below p after + eps)
        v = Signal(65, name="s_plus_eps")
        m.d.comb += v.eq(s[:64] + EPS)
        y = reg(64, Mux(s[64] | v[64], v[:64], s[:64]), "canon")
        # 7: the sign of 2^(96 q) = (-1)^q
        if 1 in signs:
            # Whether to negate (q and a nonzero operand) rides from stage 2 with the sign; tested on y in
            # stage 7 (the OR of its 64 bits, then the mux) the zero test and the sign were 6 LUT levels from
            # q6 to the result, over the NTT clock's period. Stage 7 is the subtraction and the mux. No cycle
            # added.
            negate = Signal(name="negate")      # with a reset: a flip-flop after the q2..q5 SRL (arith.pipe's last_ff)
            m.d.sync += negate.eq(q5)
            neg = Signal(64, name="negated")
            m.d.comb += neg.eq(P - y)
            out = reg(64, Mux(negate, neg, y), "result")
        else:
            out = reg(64, y, "result")
        m.d.comb += self.o_p.eq(out)
