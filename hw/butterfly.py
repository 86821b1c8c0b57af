"""The Gentleman-Sande (decimation-in-frequency) butterfly with the twiddle pass-through of a chain stage.

    o_x0 = (x0 + x1) mod p
    o_x1 = ((x0 - x1) * w) mod p
    o_w_pass = i_w_pass, delayed to stay aligned with the points

A chain stage receives two twiddles per cycle (the reference's Wa / Wb RAMs): it consumes ``i_w`` and
hands ``i_w_pass`` on unchanged so later stages get theirs in step with the points.

Handshake: valid-only pipeline with a global clock enable ``en`` (see hw/arith.py). The difference
path is ModSub then MulReduce; the sum (ModAdd) and ``i_w_pass`` ride in reset-less delay lines
(SRLs in synthesis) so all three outputs leave together ``latency`` enabled cycles after the inputs.
"""

from amaranth.hdl import EnableInserter, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import ModAdd, ModSub, MulReduce, pipe
from nantucket.hw.model import field
from nantucket.hw.shared import share

__all__ = ["Butterfly"]


class Butterfly(wiring.Component):
    """Ports: en, i_valid, i_x0, i_x1, i_w (64 bits, canonical), i_w_pass (``pass_width`` bits, default 64),
    o_valid, o_x0, o_x1, o_w_pass."""

    def __init__(self, *, pass_width: int = 64):
        if not isinstance(pass_width, int) or isinstance(pass_width, bool) or not 1 <= pass_width <= 64:
            raise ValueError(f"pass_width: must be an int in 1..64, got {pass_width!r}")
        self._pass_width = pass_width
        super().__init__({
            "en": In(1), "i_valid": In(1),
            "i_x0": In(64), "i_x1": In(64), "i_w": In(64), "i_w_pass": In(pass_width),
            "o_valid": Out(1),
            "o_x0": Out(64), "o_x1": Out(64), "o_w_pass": Out(pass_width),
        })

    @property
    def pass_width(self) -> int:
        """Bits of the twiddle stream passed on (a lane's last first-half stage passes on only the
        second half's narrow words)."""
        return self._pass_width

    @property
    def twiddle_bits(self) -> int:
        """Bits of ``i_w`` read: all of them."""
        return 64

    @property
    def latency(self) -> int:
        """Enabled cycles from inputs to outputs: subtract, then multiply/reduce."""
        return ModSub.LATENCY + MulReduce.LATENCY

    @property
    def shared_key(self) -> str:
        """Every instance of a pass width is the same hardware (emitted once, see hw/shared.py)."""
        return "butterfly" if self._pass_width == 64 else f"butterfly_w{self._pass_width}"

    @property
    def dsp_tiles(self) -> int:
        return MulReduce.DSP_TILES

    @staticmethod
    def model(x0: int, x1: int, w: int) -> tuple[int, int]:
        """Bit-exact reference: (x0 + x1, (x0 - x1) * w) mod p."""
        return field.add(x0, x1), field.mul(field.sub(x0, x1), w)

    def elaborate(self, platform):
        m = Module()
        m.submodules.add = add = ModAdd()
        m.submodules.sub = sub = ModSub()
        mul = MulReduce()
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
        delays.d.comb += mul.i_b.eq(pipe(delays, self.i_w, sub.latency, "w"))
        delays.d.comb += self.o_x0.eq(pipe(delays, add.o_sum, self.latency - add.latency, "sum"))
        delays.d.comb += self.o_w_pass.eq(pipe(delays, self.i_w_pass, self.latency, "w_pass"))
        m.submodules.delays = EnableInserter(self.en)(delays)
        return m
