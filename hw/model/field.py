"""Goldilocks field arithmetic, p = 2^64 - 2^32 + 1.

Two flavours of every operation: scalar functions on Python ints (``add``, ``mul``, ...) and
vectorized functions on numpy ``uint64`` arrays (``vadd``, ``vmul``, ...). All outputs are canonical
(0 <= x < p). Scalar inputs may be any int; vector inputs may be any uint64 (non-canonical values up
to 2^64 - 1 are reduced), which is the contract the gateware's reduction stages also honour.

The vector multiply splits 64x64 into 32x32 partial products (numpy has no 128-bit type) and reduces
with 2^64 = 2^32 - 1 and 2^96 = -1 (mod p), the same identities the RTL reduction uses.
"""

import numpy as np

P = 2**64 - 2**32 + 1
#: 2^64 mod p, i.e. 2^32 - 1: adding it is the same as subtracting p modulo 2^64.
EPSILON = 2**32 - 1
#: Multiplicative generator of the field (7 generates the whole group of order p - 1).
GENERATOR = 7
#: p - 1 = 2^32 * (2^32 - 1): the largest power-of-two transform size is 2^32.
TWO_ADICITY = 32

_U64 = np.uint64
_M32 = _U64(0xFFFF_FFFF)
_EPS = _U64(EPSILON)
_P = _U64(P)
_S32 = _U64(32)


# -- scalars ---------------------------------------------------------------------------------------

def canon(a: int) -> int:
    return a % P


def add(a: int, b: int) -> int:
    return (a + b) % P


def sub(a: int, b: int) -> int:
    return (a - b) % P


def neg(a: int) -> int:
    return (-a) % P


def mul(a: int, b: int) -> int:
    return (a * b) % P


def pow_(a: int, e: int) -> int:
    """a^e mod p; negative exponents invert first."""
    if e < 0:
        return pow(inv(a), -e, P)
    return pow(a % P, e, P)


def inv(a: int) -> int:
    a %= P
    if a == 0:
        raise ZeroDivisionError("0 has no inverse in the Goldilocks field")
    return pow(a, P - 2, P)


def root_of_unity(n: int) -> int:
    """The primitive n-th root of unity w_n = 7^((p-1)/n) used by every transform here."""
    if n < 1 or n & (n - 1) or n > 2**TWO_ADICITY:
        raise ValueError(f"n: root of unity order must be a power of two up to 2^32, got {n}")
    return pow(GENERATOR, (P - 1) // n, P)


# -- vectors ---------------------------------------------------------------------------------------

def as_u64(a) -> np.ndarray:
    """View ``a`` as a uint64 array; Python ints are accepted up to 2^64 - 1."""
    if isinstance(a, np.ndarray):
        if a.dtype != np.uint64:
            raise TypeError(f"a: expected a uint64 array, got {a.dtype}")
        return a
    return np.asarray(a, dtype=np.uint64)


def vcanon(a: np.ndarray) -> np.ndarray:
    """Reduce any uint64 to [0, p): at most one subtraction is needed since 2^64 < 2p."""
    a = as_u64(a)
    return np.where(a >= _P, a - _P, a)


def vadd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a + b) mod p for canonical a, b."""
    s = a + b                       # wraps modulo 2^64
    carry = s < a
    s = s + _EPS * carry            # 2^64 = eps (mod p); s + eps cannot carry again since a, b < p
    return np.where(s >= _P, s - _P, s)


def vsub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a - b) mod p for canonical a, b."""
    d = a - b
    return np.where(a < b, d + _P, d)


def vneg(a: np.ndarray) -> np.ndarray:
    return np.where(a == 0, a, _P - a)


def reduce128(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Canonical (hi * 2^64 + lo) mod p for uint64 halves of a 128-bit value."""
    hh = hi >> _S32
    hl = hi & _M32
    # lo - hh: on borrow add p, which modulo 2^64 is subtracting eps.
    t0 = lo - hh
    t0 -= _EPS * (lo < hh)
    # hl * 2^64 = hl * (2^32 - 1), which fits in 64 bits.
    t1 = (hl << _S32) - hl
    r = t0 + t1
    r += _EPS * (r < t1)             # carry out of 2^64 is worth eps
    np.subtract(r, _P, out=r, where=r >= _P)
    return r


def vmul_wide(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def vmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a * b) mod p for any uint64 a, b (canonical output)."""
    a, b = as_u64(a), as_u64(b)
    if a.ndim == 0 and b.ndim == 0:
        # numpy scalars warn on wrap-around; arrays wrap silently, which is what we want.
        return reduce128(*vmul_wide(a.reshape(1), b.reshape(1))).reshape(())
    return reduce128(*vmul_wide(a, b))


def vpow(base: int, exponents: np.ndarray) -> np.ndarray:
    """base^e mod p for every e in a non-negative integer array (square and multiply, vectorized)."""
    e = np.asarray(exponents, dtype=np.uint64).copy()
    result = np.ones(e.shape, dtype=np.uint64)
    sq = np.full(e.shape, base % P, dtype=np.uint64)
    while e.any():
        odd = (e & _U64(1)).astype(bool)
        if odd.any():
            result[odd] = vmul(result[odd], sq[odd])
        e >>= _U64(1)
        if e.any():
            sq = vmul(sq, sq)
    return result


def powers(base: int, count: int, start: int = 1) -> np.ndarray:
    """[start, start*base, start*base^2, ...] (count values), by doubling: O(log count) vector ops."""
    out = np.empty(count, dtype=np.uint64)
    if count == 0:
        return out
    out[0] = start % P
    filled = 1
    step = base % P                    # base^filled
    while filled < count:
        take = min(filled, count - filled)
        out[filled:filled + take] = vmul(out[:take], np.uint64(step))
        filled += take
        step = mul(step, step)
    return out
