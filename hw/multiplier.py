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

Every kind also carries its ``field`` and ``encode(value)``: the twiddle word the unit must be given for
the field value ``value`` (identity for Goldilocks; value * 2^32 mod p for a Montgomery unit; the shift
amount s for value 2^s in a shift unit).

Kinds: :class:`GeneralMultiplier` (any Goldilocks element, MulReduce: 12 DSP48E2),
:class:`MontgomeryMultiplier` (any element of a 31-bit field, hw.mont_reduce: 2 DSP48E2, the twiddle in
Montgomery form) and :class:`ShiftMultiplier` (a power of two 2^s given as s, ShiftReduce: no DSP48E2; the
twiddles of a Goldilocks lane's last six stages are such powers, hw.model.lane.shift_stages; in a 31-bit
field only the last stage's twiddle 1 is). :func:`general_multiplier` picks the general kind of a field.
"""

from nantucket.hw.arith import MulReduce, as_field, field_tag
from nantucket.hw.model import field as _fields
from nantucket.hw.mont_reduce import MontgomeryMulReduce, montgomery_k, to_montgomery
from nantucket.hw.shift_reduce import ShiftReduce, all_shifts, check_shifts, shift_operand_bits

# The file's first line: the units a multiplier builds are emitted once and instantiated (hw/shared.py),
# so those the shared modules stand for are never elaborated; the warning would only be noise.

__all__ = ["Multiplier", "GeneralMultiplier", "MontgomeryMultiplier", "ShiftMultiplier", "GENERAL",
           "general_multiplier"]


class Multiplier:
    """One kind of modular multiplier (see the module docstring). Equal kinds build equal hardware."""

    operand_bits: int = 64
    field: _fields.Field = _fields.GOLDILOCKS

    def unit(self):
        raise NotImplementedError

    def encode(self, value: int) -> int:
        """The twiddle word for the field value ``value`` (what ``model`` and the unit read)."""
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


def _goldilocks(value, what: str) -> _fields.Field:
    f = as_field(value)
    if f.p != _fields.GOLDILOCKS.p:
        raise ValueError(f"field: {what} multiplies in the Goldilocks field, not {f.name} "
                         f"(general_multiplier({f.name!r}) picks the kind for it)")
    return f


class GeneralMultiplier(Multiplier):
    """a * w mod p for any canonical twiddle w: hw.arith.MulReduce. ``field``: a Goldilocks preset."""

    operand_bits = 64

    def __init__(self, *, field=_fields.GOLDILOCKS):
        self.field = _goldilocks(field, "GeneralMultiplier")

    def unit(self) -> MulReduce:
        return MulReduce(self.field)

    def encode(self, value: int) -> int:
        return value % self.field.p

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
        return self.field.mul(a, w)

    def __repr__(self) -> str:
        return "GeneralMultiplier()" if self.field is _fields.GOLDILOCKS else \
            f"GeneralMultiplier(field={self.field.name!r})"


class MontgomeryMultiplier(Multiplier):
    """a * w mod p for any element w of a 31-bit field (BabyBear, KoalaBear), the twiddle word being w in
    Montgomery form (``encode``: w * 2^32 mod p): hw.mont_reduce.MontgomeryMulReduce."""

    def __init__(self, field):
        self.field = as_field(field)
        montgomery_k(self.field)          # a clear error for a field the unit cannot reduce in
        self.operand_bits = self.field.width

    def unit(self) -> MontgomeryMulReduce:
        return MontgomeryMulReduce(self.field)

    def encode(self, value: int) -> int:
        return to_montgomery(self.field, value)

    @property
    def latency(self) -> int:
        return MontgomeryMulReduce.LATENCY

    @property
    def dsp_tiles(self) -> int:
        return MontgomeryMulReduce.DSP_TILES

    @property
    def key(self) -> str:
        return f"montgomery_{field_tag(self.field)}"

    def model(self, a: int, w: int) -> int:
        """a * w * 2^-32 mod p: with w = encode(value), the product a * value mod p."""
        p = self.field.p
        return a * w * pow(1 << 32, -1, p) % p

    def __repr__(self) -> str:
        return f"MontgomeryMultiplier({self.field.name!r})"


def general_multiplier(field=_fields.GOLDILOCKS) -> Multiplier:
    """The kind that multiplies by any element of ``field`` (a Field or a preset's name): GeneralMultiplier
    in Goldilocks (both presets), MontgomeryMultiplier in BabyBear and KoalaBear. The one place a field's
    general multiplier is chosen: the lanes, the coset generator and the catalog's ``mulreduce`` block
    (its ``unit()``) all take it from here."""
    f = as_field(field)
    if f.reduction == "goldilocks":
        return GeneralMultiplier(field=f)
    if f.reduction == "montgomery":
        return MontgomeryMultiplier(f)
    raise ValueError(f"field: no multiplier for reduction {f.reduction!r} of {f.name}")


class ShiftMultiplier(Multiplier):
    """a * 2^s mod p for a shift amount s in ``shifts``: hw.shift_reduce.ShiftReduce, built only for the
    amounts allowed (none at all for {0}). Goldilocks: default all of 0..191 (2 has order 192 mod p),
    the twiddle word is s (8 bits). A 31-bit field: amount 0 only, a pass-through of the point with a
    one-bit twiddle word (the lane's last stage, whose twiddle is 1)."""

    def __init__(self, shifts=None, *, field=_fields.GOLDILOCKS):
        self.field = as_field(field)
        self._shifts = check_shifts(shifts, self.field)
        self.operand_bits = shift_operand_bits(self.field)

    @property
    def shifts(self) -> tuple[int, ...]:
        return self._shifts

    def unit(self) -> ShiftReduce:
        return ShiftReduce(self._shifts, field=self.field)

    def encode(self, value: int) -> int:
        """The shift amount s with 2^s = value (mod p), s one of ``shifts``; a ValueError otherwise."""
        s = self.field.shift_table.get(value % self.field.p)
        if s is None or s not in self._shifts:
            raise ValueError(f"value: {value} is not 2^s mod p for a shift amount s this unit takes "
                             f"({self.field.name}, amounts {self._describe()})")
        return s

    @property
    def latency(self) -> int:
        return ShiftReduce.latency_for(self._shifts, self.field)

    @property
    def dsp_tiles(self) -> int:
        return 0

    @property
    def key(self) -> str:
        """Goldilocks: "shift" for every amount, else "shift_<hex mask of the amounts>"; other fields
        "shift_<field>_<hex mask>"."""
        tag = field_tag(self.field)
        if not tag and self._shifts == all_shifts(self.field):
            return "shift"
        return ("shift_" + (f"{tag}_" if tag else "")) + format(sum(1 << s for s in self._shifts), "x")

    def model(self, a: int, w: int) -> int:
        """a * 2^s mod p for the amount s in w's low ``operand_bits``; a ValueError for an amount the unit
        does not take (its hardware result is unspecified)."""
        s = w & ((1 << self.operand_bits) - 1)
        if s not in self._shifts:
            raise ValueError(f"w: shift amount {s} is not one this unit takes ({self.field.name}, amounts "
                             f"{self._describe()})")
        return self.field.mul(a, self.field.pow_(2, s))

    def _describe(self) -> str:
        return "all" if self._shifts == all_shifts(self.field) else ",".join(map(str, self._shifts))

    def __repr__(self) -> str:
        args = [] if self._shifts == all_shifts(self.field) else [repr(list(self._shifts))]
        if self.field is not _fields.GOLDILOCKS:
            args.append(f"field={self.field.name!r}")
        return f"ShiftMultiplier({', '.join(args)})"


#: The default kind: a general multiply/reduce (Goldilocks).
GENERAL = GeneralMultiplier()
