"""Montgomery multiply/reduce for the 31-bit fields: BabyBear (p = 2^31 - 2^27 + 1), KoalaBear (2^31 - 2^24 + 1).

The unit computes a * b * R^-1 mod p with R = 2^32, so a twiddle is stored in Montgomery form: for a field
value w the word to give it is w * R mod p (:func:`to_montgomery`, ``hw.multiplier``'s ``encode``), and
then the result is the plain product a * w mod p. Inputs may be any 31-bit values, output is canonical.

Why there is no DSP48E2 in the reduction: p = 1 + x with x = 2^31 - 2^k (k = 27 BabyBear, 24 KoalaBear).
Then p * (1 - x) = 1 - x^2 = 1 (mod 2^32) because x^2 = 2^62 - 2^(32 + k) + 2^(2k) and 2k >= 32, so
p^-1 = 1 - x (mod R). With t = a * b = t_hi * R + t_lo and n = 32 - k (5 or 8, n <= k):

    m  = t_lo * p^-1 mod R = (t_lo + t_lo * 2^k - t_lo * 2^31) mod R
       = W[0:32] xor (t_lo[0] << 31),   W = t_lo + (t_lo[0:n] << k)        (33 bits, an n-bit carry chain)
    u  = (t - m * p) / R                 (exact: t = m * p mod R), in (-p, p) since t < p * R

m * p = m + m * 2^31 - m * 2^k; its high word is (m >> 1) - (m >> n) + c, c the carry out of the low word,
which works out from W alone: c = (t_lo[0] and not W[31]) - W[32]. So

    u  = t_hi + (m >> n) + W[32] - (m >> 1) - (t_lo[0] and not W[31]),   result = u < 0 ? u + p : u.

The product t (< 2^62) takes two DSP48E2 tiles and a small LUT multiplier: a = a_hi * 2^26 + a_lo (5 and
26 bits), b = b_hi * 2^17 + b_lo (14 and 17 bits); a_lo * b_lo (26 x 17) and a_lo * b_hi (26 x 14) are one
DSP48E2 each (27 x 18 signed), a_hi * b (5 x 31) is five ANDed rows of b summed in fabric while the DSPs
run. Two tiles rather than three: a third tile would still leave a 5 x 5 (or 5 x 14) corner in LUTs, so it
would save little fabric for 50% more DSP48E2, the NTT's scarce resource.

MontgomeryMulReduce (latency 9). Each stage is at most one DSP multiply or one carry chain of at most
~40 bits plus a LUT level:
    1. operand registers                               (DSP A/B registers)
    2. p0 = a_lo * b_lo, p1 = a_lo * b_hi              (DSP M register)
       r01 = b * a[26] + b * a[27] << 1, r23 = b * a[28] + b * a[29] << 1     (33-bit chains)
    3. p0, p1 again                                    (DSP P register)
       r03 = r01 + r23 << 2                            (35-bit chain)
    4. q = p0 + p1 << 17                               (40-bit chain: the low 17 bits pass)
       h5 = r03 + (b * a[30]) << 4 = a_hi * b         (35-bit chain)
    5. t = q + h5 << 26 = a * b                        (36-bit chain: the low 26 bits pass)
    6. W = t_lo + (t_lo[0:n] << k)                     (n + 1-bit chain), t_hi delayed
    7. v = t_hi + (m >> n) + W[32]; h = m >> 1; g = t_lo[0] and not W[31]     (31-bit chain)
    8. u = v - h - g                                   (32-bit chain, two's complement: |u| < 2^31)
    9. u < 0 ? u + p : u                               (31-bit chain, canonical)
The one-bit terms in 7 and 8 are carry-ins, written so synthesis makes one chain of them (see _add_ci).
"""

from amaranth.hdl import Cat, Mux, Signal

from nantucket.hw.arith import _pipeline_signature, _Pipeline, as_field, field_tag
from nantucket.hw.model import field as _fields

__all__ = ["MontgomeryMulReduce", "R_LOG", "montgomery_k", "to_montgomery", "from_montgomery"]

#: R = 2^R_LOG.
R_LOG = 32
#: Bits of a's low piece and of b's low piece (one DSP48E2 tile each is 26 x 17 unsigned).
A_LO_BITS = 26
B_LO_BITS = 17


def montgomery_k(f) -> int:
    """k such that p = 2^31 - 2^k + 1 with 16 <= k <= 30 (the unit's shift-and-add reduction needs
    32 - k <= k); a ValueError for any other prime."""
    f = as_field(f)
    x = f.p - 1
    top = 1 << 31
    d = top - x
    if f.width != 31 or d <= 0 or d & (d - 1) or not 16 <= d.bit_length() - 1 <= 30:
        raise ValueError(f"field: the Montgomery unit needs p = 2^31 - 2^k + 1 with 16 <= k <= 30, "
                         f"got {f.name} (p = {f.p})")
    return d.bit_length() - 1


def to_montgomery(f, value: int) -> int:
    """The word a Montgomery unit must be given for the field value ``value``: value * 2^32 mod p."""
    f = as_field(f)
    return (value << R_LOG) % f.p


def from_montgomery(f, word: int) -> int:
    """The field value a Montgomery word stands for: word * 2^-32 mod p."""
    f = as_field(f)
    return word * pow(1 << R_LOG, -1, f.p) % f.p


def _add_ci(a, b, carry_in):
    """a + b + carry_in (one bit) as one adder: the carry enters through an extra low bit that both
    operands set to carry_in (their sum there is 2 * carry_in, a carry into bit 1 and a 0 below)."""
    return (Cat(carry_in, a) + Cat(carry_in, b))[1:]


class MontgomeryMulReduce(_Pipeline):
    """o_p = i_a * i_b * 2^-32 mod p for any 31-bit i_a, i_b; canonical output. Two DSP48E2. Latency 9.

    field: BabyBear or KoalaBear (a Field or a preset's name): any p = 2^31 - 2^k + 1, 16 <= k <= 30.
    Give i_b in Montgomery form (``to_montgomery``) for the plain product a * w mod p.
    """

    LATENCY = 9
    DSP_TILES = 2

    def __init__(self, field):
        self._field = as_field(field)
        self._k = montgomery_k(self._field)
        w = self._field.width
        super().__init__(_pipeline_signature({"i_a": w, "i_b": w}, {"o_p": w}))

    @property
    def field(self) -> _fields.Field:
        return self._field

    @property
    def shared_key(self) -> str:
        """The hardware is a function of the prime (emitted once per field, hw/shared.py)."""
        return f"montmul_{field_tag(self._field)}"

    @property
    def dsp_tiles(self) -> int:
        """Partial products on DSP48E2 (one each)."""
        return self.DSP_TILES

    def model(self, a: int, b: int) -> int:
        """Bit-exact: a * b * 2^-32 mod p (canonical) for any 31-bit a, b."""
        return a * b * pow(1 << R_LOG, -1, self._field.p) % self._field.p

    def encode(self, value: int) -> int:
        """The i_b word for the field value ``value`` (its Montgomery form)."""
        return to_montgomery(self._field, value)

    def _datapath(self, m):
        def reg(width, value, name, *, packable=False):
            # A register read by logic keeps a reset, so no tool packs it (with the copies before it) into
            # an SRL, whose slow clock-to-out would start that logic's path (hw.arith.pipe last_ff); only
            # the DSP tiles' M and P registers and the middle of a delay line stay reset-less.
            r = Signal(width, name=name, reset_less=packable)
            m.d.sync += r.eq(value)
            return r

        w, p, k = self._field.width, self._field.p, self._k
        n = R_LOG - k
        # 1: operand registers
        a = reg(w, self.i_a, "a")
        b = reg(w, self.i_b, "b")
        a_lo, a_hi = a[:A_LO_BITS], a[A_LO_BITS:]
        b_lo, b_hi = b[:B_LO_BITS], b[B_LO_BITS:]
        hi_bits = len(a_hi)

        def row(bit):               # b * (one bit of a_hi): a LUT level folded into the adder that takes it
            return Mux(bit, b, 0)

        # 2: DSP M registers; a_hi * b's rows in pairs
        m0 = reg(len(a_lo) + len(b_lo), a_lo * b_lo, "m0", packable=True)
        m1 = reg(len(a_lo) + len(b_hi), a_lo * b_hi, "m1", packable=True)
        r01 = reg(w + 2, row(a_hi[0]) + (row(a_hi[1]) << 1), "r01")
        r23 = reg(w + 2, row(a_hi[2]) + (row(a_hi[3]) << 1), "r23")
        b2 = reg(w, b, "b2", packable=True)
        a4_2 = reg(1, a_hi[4], "a_hi4_2", packable=True)
        # 3: DSP P registers
        p0 = reg(len(m0), m0, "p0", packable=True)
        p1 = reg(len(m1), m1, "p1", packable=True)
        r03 = reg(w + hi_bits - 1, r01 + (r23 << 2), "r03")
        b3 = reg(w, b2, "b3")
        a4_3 = reg(1, a4_2, "a_hi4_3")
        # 4: the DSP tiles' row, and a_hi * b
        # (sums with a shifted operand add only above the shift: the low bits pass, no chain there)
        q = reg(A_LO_BITS + w, Cat(p0[:B_LO_BITS], p0[B_LO_BITS:] + p1), "q")
        h5 = reg(w + hi_bits, r03 + (Mux(a4_3, b3, 0) << 4), "a_hi_b")
        # 5: t = a * b < 2^62
        t = reg(2 * w, Cat(q[:A_LO_BITS], q[A_LO_BITS:] + h5), "t")
        # 6: W = t_lo + (t_lo[0:n] << k); m = W[0:32] xor (t_lo[0] << 31) = t_lo * p^-1 mod 2^32
        t_lo = t[:R_LOG]
        big_w = reg(R_LOG + 1, Cat(t_lo[:k], t_lo[k:] + t_lo[:n]), "w_sum")
        t_hi = reg(2 * w - R_LOG, t[R_LOG:], "t_hi")
        mont_m = Signal(R_LOG, name="mont_m")
        m.d.comb += mont_m.eq(big_w[:R_LOG] ^ (big_w[0] << (R_LOG - 1)))    # W[0] = t_lo[0] (k >= 1)
        # 7: v = t_hi + (m >> n) + W[32]; the rest of m * p's high word waits one stage
        v = reg(w, _add_ci(t_hi, mont_m[n:], big_w[R_LOG]), "v")
        h = reg(R_LOG - 1, mont_m[1:], "m_half")
        g = reg(1, big_w[0] & ~big_w[R_LOG - 1], "low_carry")
        # 8: u = v - h - g = v + ~h + (1 - g), two's complement in 32 bits
        u = reg(R_LOG, _add_ci(v, ~Cat(h, 0), ~g), "u")
        # 9: canonical
        r = reg(w, Mux(u[R_LOG - 1], (u[:w] + p)[:w], u[:w]), "result")
        m.d.comb += self.o_p.eq(r)
