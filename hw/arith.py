"""Field arithmetic units: modular add and subtract for every field (hw.model.field), the Goldilocks
multiply/reduce (the 31-bit fields' Montgomery multiply/reduce is hw/mont_reduce.py).

Handshake (docs/architecture.md, "Pipeline handshake"): valid-only pipelines with a global clock enable. While
``en`` is 0 every register holds; ``i_valid`` travels with the data and shows up as ``o_valid``
exactly ``latency`` enabled cycles later. Only the valid bits are reset; data registers are
reset-less so synthesis can pack them into DSP48E2 registers and SRL shift registers.

How the pipeline is cut (each register stage holds at most one DSP48E2 multiply or one ~64-bit carry
chain plus a LUT level or two):

ModAdd / ModSub (latency 2), ``field=`` any field (default Goldilocks), ports ``field.width`` bits
    1. s = a + b (width + 1 bits)     / d = a - b with borrow
    2. s >= p ? s - p : s             / borrow ? d + p : d
       Goldilocks: s - p is formed as s + eps with the carry out deciding, eps = 2^32 - 1 = 2^64 mod p,
       and d + p as d - eps modulo 2^64. A 31-bit field: s - p (33 bits) with its borrow deciding, d + p.

MulReduce (latency 12): a = a2:a1:a0 (21, 21, 22 bits), b = b3:b2:b1:b0 (4 x 16 bits), 12 tiles of at
most 22 x 16 unsigned bits, each fitting one DSP48E2 (27 x 18 signed).
    1. operand registers                       (DSP A/B registers)
    2. p_ij = a_i * b_j                        (DSP M register)
    3. p_ij again                              (DSP P register)
    4. q_i0 = p_i0 + p_i1 << 16, q_i1 = p_i2 + p_i3 << 16     (~40-bit carry chains)
    5. r_i = q_i0 + q_i1 << 32 = a_i * b       (~55-bit carry chains)
    6. carry-save 3:2 of r_0, r_1 << 22, r_2 << 43 -> (S, C)  (one LUT level, 128 bits)
    7. lo = S[0:64] + C[0:64], keep the carry  (64-bit chain)
    8. hi = S[64:128] + C[64:128] + carry      (64-bit chain); a*b = hi * 2^64 + lo
    9. d = lo - hi[32:64] (with borrow), t1 = hi[0:32] * (2^32 - 1)  (2^96 = -1, 2^64 = 2^32 - 1)
   10. t0 = borrow ? d - eps : d               (d + p modulo 2^64)
   11. s = t0 + t1 (65 bits)
   12. v = s + eps; result = (s carried or v carried) ? v : s   (canonical)
"""

from amaranth.hdl import EnableInserter, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.model import field

__all__ = ["P", "EPS", "ModAdd", "ModSub", "MulReduce", "pipe", "A_SPLIT", "B_SPLIT", "as_field", "field_tag"]

P = field.P
EPS = field.EPSILON
MASK64 = (1 << 64) - 1

#: Bit widths of the multiplicand / multiplier pieces, least significant first. Every tile is at
#: most 26 x 17 unsigned bits, so each maps onto exactly one DSP48E2.
A_SPLIT = (22, 21, 21)
B_SPLIT = (16, 16, 16, 16)


def as_field(value) -> field.Field:
    """``value`` (a hw.model.field.Field or a preset's name) as a Field; anything else is a clear error."""
    return field.get(value, "field")


def field_tag(f: field.Field) -> str:
    """What names a field's hardware in shared keys: "" for the Goldilocks prime (both presets are one
    piece of hardware; their keys stay as they were before fields existed), else the name of the first
    preset with this prime."""
    if f.p == field.GOLDILOCKS.p:
        return ""
    return next((name for name, g in field.FIELDS.items() if g.p == f.p), f"p{f.p:x}")


def select_tree(index, options: dict, default=0):
    """``options[index]`` (``default`` for an index not in it) as a balanced tree of 2:1 muxes on the
    index's bits: a Switch over run-time sizes came out of ABC as a chain of LUTs as long as its cases in
    front of the registers it feeds, too deep for the NTT clock's period."""
    def node(bit: int, base: int):
        if bit < 0:
            return options.get(base, default)
        low, high = node(bit - 1, base), node(bit - 1, base | (1 << bit))
        if isinstance(low, int) and isinstance(high, int) and low == high:
            return low
        return Mux(index[bit], high, low)
    return node(len(index) - 1, 0)


def pipe(m: Module, value, stages: int, name: str, *, reset_less: bool = True, last_ff: bool = False):
    """``value`` delayed by ``stages`` register stages (clock-enable gating is added by the caller's
    EnableInserter). Reset-less chains become SRL shift registers in synthesis.

    ``last_ff``: the last stage keeps a reset, so synthesis leaves it a flip-flop after the SRL (a flop with a
    reset is never packed into one, by Yosys or Vivado): for a delay line read by logic, whose SRL output
    (about 1 ns clock-to-out on UltraScale+, 1.47 ns in Yosys' library) would otherwise start the path. No
    cycle is added."""
    for i in range(stages):
        keep = last_ff and i == stages - 1
        r = Signal(len(value), name=f"{name}_d{i + 1}", reset_less=reset_less and not keep)
        m.d.sync += r.eq(value)
        value = r
    return value


def _pipeline_signature(inputs: dict, outputs: dict) -> dict:
    sig = {"en": In(1), "i_valid": In(1)}
    sig.update({n: In(w) for n, w in inputs.items()})
    sig["o_valid"] = Out(1)
    sig.update({n: Out(w) for n, w in outputs.items()})
    return sig


class _Pipeline(wiring.Component):
    """Common shape of the arithmetic units: enable-gated stages and a valid shift register."""

    LATENCY: int = 0

    @property
    def latency(self) -> int:
        """Enabled cycles from i_valid/operands to o_valid/result."""
        return self.LATENCY

    def _valid_chain(self, m: Module):
        m.d.comb += self.o_valid.eq(pipe(m, self.i_valid, self.latency, "valid", reset_less=False))

    def _datapath(self, m: Module):
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        self._valid_chain(m)
        self._datapath(m)
        return EnableInserter(self.en)(m)


class _FieldUnit(_Pipeline):
    """A two-operand unit over one field: ports i_a, i_b and the result, ``field.width`` bits each."""

    LATENCY = 2
    RESULT = ""

    def __init__(self, field=field.GOLDILOCKS):
        self._field = as_field(field)
        w = self._field.width
        super().__init__(_pipeline_signature({"i_a": w, "i_b": w}, {self.RESULT: w}))

    @property
    def field(self) -> field.Field:
        return self._field

    @property
    def shared_key(self) -> str:
        """The hardware is a function of the prime only."""
        tag = field_tag(self._field)
        return type(self).__name__.lower() + (f"_{tag}" if tag else "")


class ModAdd(_FieldUnit):
    """o_sum = (i_a + i_b) mod p for canonical i_a, i_b; canonical output. Latency 2.

    field: a hw.model.field.Field or a preset's name (default Goldilocks); ports are ``field.width`` bits."""

    RESULT = "o_sum"

    def model(self, a: int, b: int) -> int:
        return self._field.add(a, b)

    def _datapath(self, m):
        w, p = self._field.width, self._field.p
        s = Signal(w + 1, reset_less=True)
        m.d.sync += s.eq(self.i_a + self.i_b)
        r = Signal(w, reset_less=True)
        if w == 64:
            eps = (1 << 64) - p
            v = Signal(65)
            m.d.comb += v.eq(s[:64] + eps)        # carries iff s - p >= 0 (given s < 2^64)
            m.d.sync += r.eq(Mux(s[64] | v[64], v[:64], s[:64]))
        else:
            v = Signal(w + 2)
            m.d.comb += v.eq(s - p)               # v[w + 1] is the borrow: s < p
            m.d.sync += r.eq(Mux(v[w + 1], s[:w], v[:w]))
        m.d.comb += self.o_sum.eq(r)


class ModSub(_FieldUnit):
    """o_diff = (i_a - i_b) mod p for canonical i_a, i_b; canonical output. Latency 2.

    field: a hw.model.field.Field or a preset's name (default Goldilocks); ports are ``field.width`` bits."""

    RESULT = "o_diff"

    def model(self, a: int, b: int) -> int:
        return self._field.sub(a, b)

    def _datapath(self, m):
        w, p = self._field.width, self._field.p
        d = Signal(w + 1, reset_less=True)
        m.d.sync += d.eq(self.i_a - self.i_b)     # d[w] is the borrow
        r = Signal(w, reset_less=True)
        if w == 64:
            # + p is - eps modulo 2^64
            m.d.sync += r.eq(Mux(d[64], d[:64] - ((1 << 64) - p), d[:64]))
        else:
            m.d.sync += r.eq(Mux(d[w], d[:w] + p, d[:w]))
        m.d.comb += self.o_diff.eq(r)


class MulReduce(_Pipeline):
    """o_p = (i_a * i_b) mod p for any 64-bit i_a, i_b; canonical output. 12 DSP48E2. Latency 12.

    field: a Goldilocks preset (or its name); the 31-bit fields multiply with
    hw.mont_reduce.MontgomeryMulReduce."""

    LATENCY = 12
    DSP_TILES = len(A_SPLIT) * len(B_SPLIT)

    def __init__(self, field=field.GOLDILOCKS):
        self._field = as_field(field)
        if self._field.p != P:
            raise ValueError(f"field: MulReduce reduces modulo the Goldilocks prime, not {self._field.name} "
                             f"(use hw.mont_reduce.MontgomeryMulReduce)")
        super().__init__(_pipeline_signature({"i_a": 64, "i_b": 64}, {"o_p": 64}))

    @property
    def field(self) -> field.Field:
        return self._field

    @property
    def shared_key(self) -> str:
        """No parameters: every instance is the same hardware (emitted once, see hw/shared.py)."""
        return "mulreduce"

    @property
    def dsp_tiles(self) -> int:
        """Partial products (one DSP48E2 each)."""
        return self.DSP_TILES

    def model(self, a: int, b: int) -> int:
        return self._field.mul(a, b)

    def _datapath(self, m):
        def reg(width, value, name):
            r = Signal(width, name=name, reset_less=True)
            m.d.sync += r.eq(value)
            return r

        # 1: operand registers
        a = reg(64, self.i_a, "a")
        b = reg(64, self.i_b, "b")
        a_offs = [sum(A_SPLIT[:i]) for i in range(len(A_SPLIT))]
        b_offs = [sum(B_SPLIT[:j]) for j in range(len(B_SPLIT))]
        a_parts = [a[o:o + w] for o, w in zip(a_offs, A_SPLIT)]
        b_parts = [b[o:o + w] for o, w in zip(b_offs, B_SPLIT)]
        # 2, 3: tiles with the DSP's M and P registers
        tiles = [[reg(len(ai) + len(bj), reg(len(ai) + len(bj), ai * bj, f"m{i}{j}"), f"p{i}{j}")
                  for j, bj in enumerate(b_parts)] for i, ai in enumerate(a_parts)]
        # 4: pairs within a row (b pieces 16 bits apart)
        # (q and the rows keep a reset: their low bits are the tiles' passed down unchanged, a delay line
        # the next adders read, which synthesis would otherwise pack into SRLs; see pipe's last_ff)
        q = []
        for i, row in enumerate(tiles):
            pair = [Signal(len(row[0]) + 17, name=f"q{i}0"), Signal(len(row[2]) + 17, name=f"q{i}1")]
            m.d.sync += [pair[0].eq(row[0] + (row[1] << 16)), pair[1].eq(row[2] + (row[3] << 16))]
            q.append(pair)
        # 5: rows r_i = a_i * b
        rows = []
        for i, (ai, qi) in enumerate(zip(a_parts, q)):
            row = Signal(len(ai) + 64, name=f"r{i}")
            m.d.sync += row.eq(qi[0] + (qi[1] << 32))
            rows.append(row)
        # 6: carry-save the three shifted rows into two 128-bit words
        x, y, z = [Signal(128, name=f"row{i}_aligned") for i in range(3)]
        m.d.comb += [x.eq(rows[0] << a_offs[0]), y.eq(rows[1] << a_offs[1]), z.eq(rows[2] << a_offs[2])]
        cs_s = reg(128, x ^ y ^ z, "cs_sum")
        cs_c = reg(128, ((x & y) | (x & z) | (y & z)) << 1, "cs_carry")
        # 7: low half
        lo_sum = reg(65, cs_s[:64] + cs_c[:64], "lo_sum")
        s_hi = reg(64, cs_s[64:], "cs_sum_hi")
        c_hi = reg(64, cs_c[64:], "cs_carry_hi")
        # 8: high half with the carry out of the low half (the product is < 2^128: drop bit 128)
        hi = reg(64, s_hi + c_hi + lo_sum[64], "hi")
        lo = Signal(64, name="lo")             # with a reset: its low 22 bits end a delay line (r0's) read by logic
        m.d.sync += lo.eq(lo_sum[:64])
        # 9: lo - hh and hl * (2^32 - 1)
        hh, hl = hi[32:], hi[:32]
        d = reg(65, lo - hh, "lo_minus_hh")
        t1 = reg(64, (hl << 32) - hl, "hl_eps")
        # 10: fold the borrow (+ p is - eps modulo 2^64; cannot underflow since d >= 2^64 - 2^32 then)
        t0 = reg(64, Mux(d[64], d[:64] - EPS, d[:64]), "t0")
        t1b = reg(64, t1, "hl_eps_d")
        # 11
        s = reg(65, t0 + t1b, "t0_plus_t1")
        # 12: a carry out of 2^64 is worth eps (and then the value is already < p); otherwise subtract
        # p once if needed, which modulo 2^64 is adding eps, and its carry says whether s >= p.
        v = Signal(65, name="s_plus_eps")
        m.d.comb += v.eq(s[:64] + EPS)
        r = reg(64, Mux(s[64] | v[64], v[:64], s[:64]), "result")
        m.d.comb += self.o_p.eq(r)
