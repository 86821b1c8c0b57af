"""The Gentleman-Sande (decimation-in-frequency) butterfly with the twiddle pass-through of a chain stage.

    o_x0 = (x0 + x1) mod p
    o_x1 = ((x0 - x1) * w) mod p
    o_w_pass = i_w_pass, delayed to stay aligned with the points

The multiplication is one seam (hw/multiplier.py): ``Butterfly(multiplier=GeneralMultiplier())`` (the
default) multiplies by any field element, ``Butterfly(multiplier=ShiftMultiplier(shifts))`` by a power
of two 2^w given as its shift amount w (the low 8 bits of ``i_w``), with no DSP48E2.

The field is the multiplier's (``multiplier.field``): points, the twiddle input and the adder and
subtractor are ``field.width`` bits (64 Goldilocks, 31 BabyBear and KoalaBear). The twiddle word is what
the multiplier reads (``multiplier.encode(w)`` for the field value w: Montgomery form in a 31-bit field).

A chain stage receives two twiddles per cycle (the reference's Wa / Wb RAMs): it consumes ``i_w`` and
hands ``i_w_pass`` on unchanged so later stages get theirs in step with the points.

Handshake: valid-only pipeline with a global clock enable ``en`` (see hw/arith.py). The difference
path is ModSub then the multiplier; the sum (ModAdd) and ``i_w_pass`` ride in reset-less delay lines
(SRLs in synthesis) so all three outputs leave together ``latency`` enabled cycles after the inputs.
"""

from amaranth.hdl import EnableInserter, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import ModAdd, ModSub, pipe
from nantucket.hw.multiplier import GENERAL, Multiplier
from nantucket.hw.shared import share

__all__ = ["Butterfly"]


#: The widest twiddle stream word a butterfly passes on (a lane's stream carries a Goldilocks twiddle).
MAX_PASS_WIDTH = 64


class Butterfly(wiring.Component):
    """Ports: en, i_valid, i_x0, i_x1, i_w (``field.width`` bits each; the multiplier reads the low
    ``twiddle_bits`` of i_w), i_w_pass (``pass_width`` bits), o_valid, o_x0, o_x1, o_w_pass.

    multiplier: a hw.multiplier.Multiplier (default: the Goldilocks general multiply/reduce;
                ``general_multiplier(field)`` for another field); its ``field`` is the butterfly's.
    pass_width: bits of the twiddle stream passed on, 1..64 (default: the field's width)."""

    def __init__(self, *, multiplier: Multiplier = GENERAL, pass_width: int | None = None):
        if not isinstance(multiplier, Multiplier):
            raise TypeError(f"multiplier: expected a hw.multiplier.Multiplier (general_multiplier(field) or "
                            f"ShiftMultiplier(shifts)), got {type(multiplier).__name__}")
        width = multiplier.field.width
        if pass_width is None:
            pass_width = width
        if not isinstance(pass_width, int) or isinstance(pass_width, bool) or \
                not 1 <= pass_width <= MAX_PASS_WIDTH:
            raise ValueError(f"pass_width: must be an int in 1..{MAX_PASS_WIDTH}, got {pass_width!r}")
        self._multiplier = multiplier
        self._pass_width = pass_width
        super().__init__({
            "en": In(1), "i_valid": In(1),
            "i_x0": In(width), "i_x1": In(width), "i_w": In(width), "i_w_pass": In(pass_width),
            "o_valid": Out(1),
            "o_x0": Out(width), "o_x1": Out(width), "o_w_pass": Out(pass_width),
        })

    @property
    def field(self):
        """The field the butterfly works in (its multiplier's)."""
        return self._multiplier.field

    @property
    def multiplier(self) -> Multiplier:
        return self._multiplier

    @property
    def pass_width(self) -> int:
        """Bits of the twiddle stream passed on (a lane narrows the stream once only narrow words are
        still to be used downstream)."""
        return self._pass_width

    @property
    def twiddle_bits(self) -> int:
        """Bits of ``i_w`` read (a shift amount is 8): a chain need not hold the rest."""
        return self._multiplier.operand_bits

    @property
    def latency(self) -> int:
        """Enabled cycles from inputs to outputs: subtract, then multiply."""
        return ModSub.LATENCY + self._multiplier.latency

    @property
    def shared_key(self) -> str:
        """Equal multipliers and pass widths are the same hardware (emitted once, see hw/shared.py); the
        multiplier's key names the field where it is not Goldilocks."""
        key = self._multiplier.key
        if key == "general":
            base = "butterfly"
        elif key.startswith("shift"):
            base = key.replace("shift", "shift_butterfly", 1)
        else:
            base = f"butterfly_{key}"
        return base if self._pass_width == self.field.width else f"{base}_w{self._pass_width}"

    @property
    def dsp_tiles(self) -> int:
        return self._multiplier.dsp_tiles

    def model(self, x0: int, x1: int, w: int) -> tuple[int, int]:
        """Bit-exact reference: (x0 + x1, (x0 - x1) * w) mod p, w as the multiplier reads it."""
        f = self.field
        return f.add(x0, x1), self._multiplier.model(f.sub(x0, x1), w)

    def elaborate(self, platform):
        m = Module()
        m.submodules.add = add = ModAdd(self.field)
        m.submodules.sub = sub = ModSub(self.field)
        mul = self._multiplier.unit()
        m.submodules.mul = share(mul)
        for unit in (add, sub, mul):
            m.d.comb += unit.en.eq(self.en)

        m.d.comb += [
            sub.i_valid.eq(self.i_valid), sub.i_a.eq(self.i_x0), sub.i_b.eq(self.i_x1),
            add.i_valid.eq(self.i_valid), add.i_a.eq(self.i_x0), add.i_b.eq(self.i_x1),
            mul.i_valid.eq(sub.o_valid), mul.i_a.eq(sub.o_diff),
            self.o_valid.eq(mul.o_valid), self.o_x1.eq(mul.o_p),
        ]
        # Everything below is local registers: gate them with the same enable.
        delays = Module()
        # (a shift multiplier decodes its amount straight from i_b: the twiddle's line ends in a flip-flop too)
        delays.d.comb += mul.i_b.eq(pipe(delays, self.i_w[:self.twiddle_bits], sub.latency, "w", last_ff=True))
        # the outputs feed the lane's commutator and replay muxes: their delay lines end in a flip-flop
        delays.d.comb += self.o_x0.eq(pipe(delays, add.o_sum, self.latency - add.latency, "sum", last_ff=True))
        delays.d.comb += self.o_w_pass.eq(pipe(delays, self.i_w_pass, self.latency, "w_pass", last_ff=True))
        m.submodules.delays = EnableInserter(self.en)(delays)
        return m
