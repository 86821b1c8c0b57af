# amaranth: UnusedElaboratable=no
"""The multiplier seam: what a butterfly multiplies the difference of its points by.

A :class:`Multiplier` describes one kind of modular multiplier, and a block that multiplies by a twiddle
(hw/butterfly.py) takes one as a constructor parameter instead of naming a unit. Each kind publishes
what the block around it needs to know:

- ``unit()``: a new pipeline component with ports ``en``, ``i_valid``, ``i_a`` (the point, canonical),
  ``i_b`` (the twiddle operand, ``operand_bits`` wide), ``o_valid``, ``o_p`` (canonical), as in
  hw/arith.py;
- ``operand_bits``: the bits of the twiddle word the unit reads (a chain need not carry the rest);
- ``latency`` (enabled cycles), ``dsp_tiles`` (DSP48E2 per unit), ``key`` (names the shared hardware,
  hw/shared.py);
- ``model(a, w)``: the bit-exact product, with ``w`` the twiddle word as the unit reads it.

Two kinds exist: :class:`GeneralMultiplier` (any field element, MulReduce: 12 DSP48E2) and
:class:`ShiftMultiplier` (a power of two 2^s given as s, ShiftReduce: no DSP48E2; the twiddles of a
lane's last six stages are such powers, hw.model.lane.shift_stages). A new field brings its own kinds.
"""

from nantucket.hw.arith import MulReduce
from nantucket.hw.model import field
from nantucket.hw.shift_reduce import ALL_SHIFTS, ShiftReduce, check_shifts

# The file's first line: the units a multiplier builds are emitted once and instantiated (hw/shared.py),
# so those the shared modules stand for are never elaborated; the warning would only be noise.

__all__ = ["Multiplier", "GeneralMultiplier", "ShiftMultiplier", "GENERAL"]


class Multiplier:
    """One kind of modular multiplier (see the module docstring). Equal kinds build equal hardware."""

    operand_bits: int = 64

    def unit(self):
        raise NotImplementedError

    @property
    def latency(self) -> int:
        raise NotImplementedError

    @property
    def dsp_tiles(self) -> int:
        raise NotImplementedError

    @property
    def key(self) -> str:
        raise NotImplementedError

    def model(self, a: int, w: int) -> int:
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


class GeneralMultiplier(Multiplier):
    """a * w mod p for any canonical twiddle w: hw.arith.MulReduce."""

    operand_bits = 64

    def unit(self) -> MulReduce:
        return MulReduce()

    @property
    def latency(self) -> int:
        return MulReduce.LATENCY

    @property
    def dsp_tiles(self) -> int:
        return MulReduce.DSP_TILES

    @property
    def key(self) -> str:
        return "general"

    def model(self, a: int, w: int) -> int:
        return field.mul(a, w)

    def __repr__(self) -> str:
        return "GeneralMultiplier()"


class ShiftMultiplier(Multiplier):
    """a * 2^s mod p for a shift amount s in ``shifts`` (default all of 0..191; 2 has order 192 mod p):
    hw.shift_reduce.ShiftReduce, built only for the amounts allowed (none at all for {0})."""

    operand_bits = 8

    def __init__(self, shifts=None):
        self._shifts = check_shifts(shifts)

    @property
    def shifts(self) -> tuple[int, ...]:
        return self._shifts

    def unit(self) -> ShiftReduce:
        return ShiftReduce(self._shifts)

    @property
    def latency(self) -> int:
        return ShiftReduce.latency_for(self._shifts)

    @property
    def dsp_tiles(self) -> int:
        return 0

    @property
    def key(self) -> str:
        """"shift" for every amount, else "shift_<hex mask of the amounts>"."""
        if self._shifts == ALL_SHIFTS:
            return "shift"
        return "shift_" + format(sum(1 << s for s in self._shifts), "x")

    def model(self, a: int, w: int) -> int:
        return field.mul(a, field.pow_(2, w & 0xFF))

    def __repr__(self) -> str:
        return "ShiftMultiplier()" if self._shifts == ALL_SHIFTS else f"ShiftMultiplier({list(self._shifts)})"


#: The default kind: a general multiply/reduce.
GENERAL = GeneralMultiplier()
