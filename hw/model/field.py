"""The prime fields nantucket transforms over, and their arithmetic.

A :class:`Field` is one prime p with one chain of roots of unity: the 2^n-th root it uses is
w_n = g^((p-1)/2^n) for its generator g (``root_of_unity``). Four presets, by name (:data:`FIELDS`):

=====================  ================  =====================  ==========  ===========
name                   p                 generator g            2-adicity   point bits
=====================  ================  =====================  ==========  ===========
goldilocks             2^64 - 2^32 + 1   7                      32          64
goldilocks-plonky2     2^64 - 2^32 + 1   14293326489335486720   32          64
babybear               2^31 - 2^27 + 1   31                     27          32
koalabear              2^31 - 2^24 + 1   3                      24          32
=====================  ================  =====================  ==========  ===========

The two Goldilocks presets are one field with two root chains: ``goldilocks`` (ZPrize, Plonky3) and
``goldilocks-plonky2`` (plonky2 from 1.0, Winterfell, ZisK), whose 2^32-th root is 7277203076849721926 and
whose 64th root is 8. BabyBear and KoalaBear are Plonky3's 31-bit fields (RISC Zero, SP1).

Every field offers the same operations in two flavours: scalar methods on Python ints (``add``, ``mul``,
``inv``, ...) and vectorized methods on numpy ``uint64`` arrays (``vadd``, ``vmul``, ...; a 31-bit field's
points also travel as uint64 inside the model, the host converts at its edges). Outputs are canonical
(0 <= x < p); scalar inputs may be any int; vector inputs may be any uint64 (non-canonical values are
reduced), the contract the gateware's reduction stages honour too.

Goldilocks' vector multiply splits 64x64 into 32x32 partial products (numpy has no 128-bit type) and
reduces with 2^64 = 2^32 - 1 and 2^96 = -1 (mod p), the identities its RTL reduction uses; a 31-bit
field's product fits in 62 bits and is reduced with one remainder.

The module-level names (``P``, ``mul``, ``vmul``, ``root_of_unity``, ...) are the default field's
(:data:`GOLDILOCKS`) operations, for code that only ever means that field.
"""

import difflib
from dataclasses import dataclass, field as _dc_field

import numpy as np

__all__ = ["Field", "FIELDS", "FIELD_NAMES", "DEFAULT_FIELD", "GOLDILOCKS", "GOLDILOCKS_PLONKY2", "BABYBEAR",
           "KOALABEAR", "get", "P", "EPSILON", "GENERATOR", "TWO_ADICITY"]

_U64 = np.uint64
_M32 = _U64(0xFFFF_FFFF)
_S32 = _U64(32)


def _prime_factors(n: int) -> tuple[int, ...]:
    out, d = [], 2
    while d * d <= n:
        if n % d == 0:
            out.append(d)
            while n % d == 0:
                n //= d
        d += 1 if d == 2 else 2
    if n > 1:
        out.append(n)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Field:
    """One prime field with one chain of roots of unity (see the module docstring).

    name:        the preset's name (``BuildParams(field=...)``, ``field=`` in the API, ``--field``)
    p:           the prime modulus
    generator:   g, a generator of the multiplicative group; the 2^n-th root is g^((p-1)/2^n)
    reduction:   how the gateware reduces a product ("goldilocks": 2^64 = 2^32 - 1 and 2^96 = -1;
                 "montgomery": Montgomery with R = 2^32 and the sparse prime's shift-and-add m*p)
    users:       the prover libraries that use this field with this root chain (docs)
    """

    name: str
    p: int
    generator: int
    reduction: str
    users: str = ""
    _cache: dict = _dc_field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.p < 3 or pow(2, self.p - 1, self.p) != 1:
            raise ValueError(f"p: {self.p} is not an odd prime")
        for q in _prime_factors(self.p - 1):
            if pow(self.generator, (self.p - 1) // q, self.p) == 1:
                raise ValueError(f"generator: {self.generator} does not generate the multiplicative group of "
                                 f"{self.name} (its order divides (p-1)/{q})")

    # -- facts -----------------------------------------------------------------------------------

    @property
    def P(self) -> int:
        return self.p

    @property
    def width(self) -> int:
        """Bits of a canonical value: 64 for Goldilocks, 31 for BabyBear and KoalaBear."""
        return self.p.bit_length()

    @property
    def point_bits(self) -> int:
        """Bits a point occupies in memory, files and HBM beats: the width rounded up to 32 or 64."""
        return 32 if self.width <= 32 else 64

    @property
    def point_bytes(self) -> int:
        return self.point_bits // 8

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of points at the host's edges (uint32 for 31-bit fields)."""
        return np.dtype(np.uint32 if self.point_bits == 32 else np.uint64)

    @property
    def two_adicity(self) -> int:
        """The largest s with 2^s | p - 1: transforms up to 2^s points."""
        return ((self.p - 1) & -(self.p - 1)).bit_length() - 1

    @property
    def hex_digits(self) -> int:
        """Digits a point takes in the text format ("0x" plus this many lowercase hex digits)."""
        return self.point_bits // 4

    @property
    def shift_roots_log(self) -> int:
        """The largest j such that every twiddle of a DIF stage with 2^j-th roots (w^i, i < 2^(j-1)) is a
        power of two 2^s in :attr:`shift_table`: such stages multiply by shifts (hw/shift_reduce.py).
        6 on both Goldilocks chains (every 64th root is a power of two, 2 has order 192); 1 on a 31-bit
        field, whose only such stage is the last one (its one twiddle is 1)."""
        if "shift_roots_log" not in self._cache:
            table, j = self.shift_table, 1
            while j < self.two_adicity:
                w = self.root_of_unity(1 << (j + 1))
                if any(self.pow_(w, i) not in table for i in range(1 << j)):
                    break
                j += 1
            self._cache["shift_roots_log"] = j
        return self._cache["shift_roots_log"]

    @property
    def two_order(self) -> int:
        """The multiplicative order of 2 modulo p (192 for Goldilocks)."""
        if "two_order" not in self._cache:
            order = self.p - 1
            for q in _prime_factors(order):
                while order % q == 0 and pow(2, order // q, self.p) == 1:
                    order //= q
            self._cache["two_order"] = order
        return self._cache["two_order"]

    @property
    def shift_count(self) -> int:
        """How many shift amounts a shift multiplier may be asked for: the order of 2 when it is at most
        4 x the width (192 for Goldilocks), else 1 (only 2^0)."""
        order = self.two_order
        return order if order <= 4 * self.width else 1

    @property
    def shift_bits(self) -> int:
        """Bits of a shift amount in a twiddle word: 8 for Goldilocks (amounts below 192), 1 where only 0 exists."""
        return max(1, (self.shift_count - 1).bit_length())

    @property
    def shift_table(self) -> dict[int, int]:
        """{2^s mod p: s} for s below :attr:`shift_count`."""
        if "shift_table" not in self._cache:
            self._cache["shift_table"] = {pow(2, s, self.p): s for s in range(self.shift_count)}
        return self._cache["shift_table"]

    def is_canonical(self, value) -> bool:
        return 0 <= int(value) < self.p

    def check_canonical(self, values, name: str = "values") -> None:
        """Raise ValueError naming ``name`` and the first index whose value is not below p."""
        a = np.asarray(values)
        bad = np.flatnonzero(a.reshape(-1) >= self.p) if a.size else np.empty(0, dtype=np.intp)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name}: value {int(a.reshape(-1)[i])} at index {i} is not below the {self.name} "
                             f"modulus p = {self.p}")

    def root_of_unity(self, n: int) -> int:
        """The primitive n-th root of unity w_n = g^((p-1)/n) of this chain (n a power of two)."""
        if n < 1 or n & (n - 1) or n > 1 << self.two_adicity:
            raise ValueError(f"n: root of unity order must be a power of two up to 2^{self.two_adicity} in "
                             f"{self.name}, got {n}")
        return pow(self.generator, (self.p - 1) // n, self.p)

    # -- scalars ---------------------------------------------------------------------------------

    def canon(self, a: int) -> int:
        return a % self.p

    def add(self, a: int, b: int) -> int:
        return (a + b) % self.p

    def sub(self, a: int, b: int) -> int:
        return (a - b) % self.p

    def neg(self, a: int) -> int:
        return (-a) % self.p

    def mul(self, a: int, b: int) -> int:
        return (a * b) % self.p

    def inv(self, a: int) -> int:
        a %= self.p
        if a == 0:
            raise ZeroDivisionError(f"0 has no inverse in the {self.name} field")
        return pow(a, self.p - 2, self.p)

    def pow_(self, a: int, e: int) -> int:
        """a^e mod p; negative exponents invert first."""
        if e < 0:
            return pow(self.inv(a), -e, self.p)
        return pow(a % self.p, e, self.p)

    # -- vectors (uint64 arrays) -----------------------------------------------------------------

    @staticmethod
    def as_u64(a) -> np.ndarray:
        """``a`` as a uint64 array: uint64 arrays as they are, uint32 arrays widened, Python ints up to
        2^64 - 1 accepted; other array dtypes are a TypeError."""
        if isinstance(a, np.ndarray):
            if a.dtype == np.uint64:
                return a
            if a.dtype == np.uint32:
                return a.astype(np.uint64)
            raise TypeError(f"a: expected a uint64 or uint32 array, got {a.dtype}")
        return np.asarray(a, dtype=np.uint64)

    def vcanon(self, a) -> np.ndarray:
        a = self.as_u64(a)
        if self.width == 64:        # 2^64 < 2p: at most one subtraction
            return np.where(a >= _U64(self.p), a - _U64(self.p), a)
        return a % _U64(self.p)

    def vadd(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(a + b) mod p for canonical a, b."""
        p = _U64(self.p)
        s = a + b                                   # wraps modulo 2^64 only for 64-bit fields
        if self.width == 64:
            eps = _U64((1 << 64) % self.p)
            s = s + eps * (s < a)                   # 2^64 = eps (mod p); cannot carry again for a, b < p
        return np.where(s >= p, s - p, s)

    def vsub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(a - b) mod p for canonical a, b."""
        d = a - b
        return np.where(a < b, d + _U64(self.p), d)

    def vneg(self, a: np.ndarray) -> np.ndarray:
        return np.where(a == 0, a, _U64(self.p) - a)

    def vmul(self, a, b) -> np.ndarray:
        """(a * b) mod p for any uint64 a, b (canonical output)."""
        a, b = self.as_u64(a), self.as_u64(b)
        if self.width == 64:
            if a.ndim == 0 and b.ndim == 0:
                # numpy scalars warn on wrap-around; arrays wrap silently, which is what we want.
                return _goldilocks_reduce128(*_mul_wide(a.reshape(1), b.reshape(1))).reshape(())
            return _goldilocks_reduce128(*_mul_wide(a, b))
        p = _U64(self.p)
        if (a.size and a.max() >= _U64(1 << 32)) or (b.size and b.max() >= _U64(1 << 32)):
            a, b = a % p, b % p                     # keep the product below 2^64
        return (a * b) % p

    def vpow(self, base: int, exponents) -> np.ndarray:
        """base^e mod p for every e in a non-negative integer array (square and multiply, vectorized)."""
        e = np.asarray(exponents, dtype=np.uint64).copy()
        result = np.ones(e.shape, dtype=np.uint64)
        sq = np.full(e.shape, base % self.p, dtype=np.uint64)
        while e.any():
            odd = (e & _U64(1)).astype(bool)
            if odd.any():
                result[odd] = self.vmul(result[odd], sq[odd])
            e >>= _U64(1)
            if e.any():
                sq = self.vmul(sq, sq)
        return result

    def powers(self, base: int, count: int, start: int = 1) -> np.ndarray:
        """[start, start*base, start*base^2, ...] (count values), by doubling: O(log count) vector ops."""
        out = np.empty(count, dtype=np.uint64)
        if count == 0:
            return out
        out[0] = start % self.p
        filled = 1
        step = base % self.p                        # base^filled
        while filled < count:
            take = min(filled, count - filled)
            out[filled:filled + take] = self.vmul(out[:take], np.uint64(step))
            filled += take
            step = self.mul(step, step)
        return out

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


def _goldilocks_reduce128(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Canonical (hi * 2^64 + lo) mod p for the Goldilocks prime, uint64 halves of a 128-bit value."""
    eps, p = _U64(EPSILON), _U64(P)
    hh = hi >> _S32
    hl = hi & _M32
    # lo - hh: on borrow add p, which modulo 2^64 is subtracting eps.
    t0 = lo - hh
    t0 -= eps * (lo < hh)
    # hl * 2^64 = hl * (2^32 - 1), which fits in 64 bits.
    t1 = (hl << _S32) - hl
    r = t0 + t1
    r += eps * (r < t1)              # carry out of 2^64 is worth eps
    np.subtract(r, p, out=r, where=r >= p)
    return r


def _mul_wide(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The full 128-bit product of two uint64 arrays as (hi, lo)."""
    a0 = a & _M32
    a1 = a >> _S32
    b0 = b & _M32
    b1 = b >> _S32
    ll = a0 * b0
    hh = a1 * b1
    mid = a0 * b1
    t = a1 * b0
    mid += t
    mid_carry = mid < t               # the middle sum can reach 2^65
    lo = ll + (mid << _S32)
    hi = hh + (mid >> _S32)
    hi += (lo < ll)
    hi += mid_carry.astype(np.uint64) << _S32
    return hi, lo


P = 2**64 - 2**32 + 1
#: 2^64 mod p, i.e. 2^32 - 1: adding it is the same as subtracting p modulo 2^64.
EPSILON = 2**32 - 1

GOLDILOCKS = Field("goldilocks", P, 7, "goldilocks", users="Plonky3, ZPrize, plonky2 before 1.0")
GOLDILOCKS_PLONKY2 = Field("goldilocks-plonky2", P, 14293326489335486720, "goldilocks",
                           users="plonky2 1.0 and later, Winterfell, ZisK (with 7 as their coset shift)")
BABYBEAR = Field("babybear", 2**31 - 2**27 + 1, 31, "montgomery", users="Plonky3, RISC Zero")
KOALABEAR = Field("koalabear", 2**31 - 2**24 + 1, 3, "montgomery", users="Plonky3, SP1")

#: Every preset by name, the default first.
FIELDS: dict[str, Field] = {f.name: f for f in (GOLDILOCKS, GOLDILOCKS_PLONKY2, BABYBEAR, KOALABEAR)}
FIELD_NAMES = tuple(FIELDS)
DEFAULT_FIELD = GOLDILOCKS


def get(field, name: str = "field") -> Field:
    """A preset by name (or a Field as it is); an unknown name is a ValueError listing the presets."""
    if isinstance(field, Field):
        return field
    if isinstance(field, str) and field in FIELDS:
        return FIELDS[field]
    if not isinstance(field, str):
        raise TypeError(f"{name}: expected a field name ({', '.join(FIELD_NAMES)}), got {type(field).__name__}")
    close = difflib.get_close_matches(field, FIELD_NAMES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{name}: unknown field {field!r} (valid: {', '.join(FIELD_NAMES)}){hint}")


# -- the default field's operations, as module functions -------------------------------------------

GENERATOR = GOLDILOCKS.generator
TWO_ADICITY = GOLDILOCKS.two_adicity
canon = GOLDILOCKS.canon
add = GOLDILOCKS.add
sub = GOLDILOCKS.sub
neg = GOLDILOCKS.neg
mul = GOLDILOCKS.mul
inv = GOLDILOCKS.inv
pow_ = GOLDILOCKS.pow_
root_of_unity = GOLDILOCKS.root_of_unity
as_u64 = GOLDILOCKS.as_u64
vcanon = GOLDILOCKS.vcanon
vadd = GOLDILOCKS.vadd
vsub = GOLDILOCKS.vsub
vneg = GOLDILOCKS.vneg
vmul = GOLDILOCKS.vmul
vpow = GOLDILOCKS.vpow
powers = GOLDILOCKS.powers
reduce128 = _goldilocks_reduce128
vmul_wide = _mul_wide
