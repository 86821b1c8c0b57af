"""Poseidon2 (Grassi, Khovratovich, Schofnegger 2023) as Plonky3 builds it, bit-exact, vectorized over states.

Six permutations, each one of Plonky3's ``default_<field>_poseidon2_<width>()`` (constants, round counts and
internal diagonals in :mod:`.poseidon2_constants`, generated from Plonky3 at the tag named there):

=========================  ======  ==========================  ======  ====================
name                       S-box   rounds (external/internal)  width   general multiplies
=========================  ======  ==========================  ======  ====================
poseidon2-babybear-16      x^7     4 + 4 / 13                  16      564
poseidon2-babybear-24      x^7     4 + 4 / 21                  24      852
poseidon2-koalabear-16     x^3     4 + 4 / 20                  16      296
poseidon2-koalabear-24     x^3     4 + 4 / 23                  24      430
poseidon2-goldilocks-8     x^7     4 + 4 / 22                  8       344
poseidon2-goldilocks-12    x^7     4 + 4 / 22                  12      472
=========================  ======  ==========================  ======  ====================

One permutation (Plonky3 ``Poseidon2::permute_mut``: ``permute_state_initial``, ``permute_state``,
``permute_state_terminal``):

1. the external linear layer once, before any round;
2. half of the external rounds: add the round's constants to every element, x^d on every element, the
   external linear layer;
3. the internal rounds: add the round's constant to element 0, x^d on element 0 only, the internal layer;
4. the other half of the external rounds, as in 2.

The external linear layer (``mds_light_permutation`` with ``MDSMat4``) multiplies each 4-element chunk by
M4 = [[2 3 1 1] [1 2 3 1] [1 1 2 3] [3 1 1 2]], then adds to every element the sum over all chunks of the
elements in its position (the 4N x 4N matrix [[2M M ..] [M 2M ..] ..]): adds and doublings only.

The internal layer is 1 + diag(V): y_i = sum(x) + V_i x_i. Every V_i of these six permutations is a small
integer or a signed power of two (-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^k, -1/2^k): the gateware does it with
adds, shifts and modular halvings (x/2 = x >> 1, or (x + p) >> 1 when x is odd), so it needs no general
multiplier. The Goldilocks model does the same (:func:`shift_add_form`); the 31-bit model multiplies by V_i
as a field element, the same value, because there one 62-bit product and one reduction for the whole
state is cheaper in numpy than a chain of halvings.

General multiplies (:attr:`Permutation.general_multiplies`) count the S-boxes by their addition chain:
(8 x width + internal rounds) S-boxes, 4 multiplies each for x^7 (x^2, x^3, x^6, x^7) and 2 for x^3
(x^2, x^3); the internal rounds' S-box is on element 0 only. That gives BabyBear-16 (128 + 13) x 4 = 564,
BabyBear-24 (192 + 21) x 4 = 852 and KoalaBear-16 (128 + 20) x 2 = 296 (the usual published figures: no
internal-round S-box beyond element 0, no multiply in either linear layer). A squaring counts as a general
multiply, and adding a round constant is not a multiply. Goldilocks' internal diagonal was a vector of general field elements in Plonky3 before v0.5.0
(HorizenLabs' instance: one general multiply per element per internal round, + 22 x 8 = 176 or 22 x 12 = 264);
from v0.5.0 it is the small/power-of-two vector above, so its internal layer adds none. The count is derived
from the constants (:func:`general_diagonal_entries`), not asserted.

Inside, states travel as a (width, n) uint64 array (element-major, so element 0 of every state is one
contiguous row for the internal rounds). The 31-bit fields add lazily and reduce once per product and once
per linear layer (sums stay far below 2^64), by a - (a // p) p: numpy divides by a scalar with a multiply
and shift, several times faster than its remainder. Goldilocks uses :meth:`Field.vadd` / :meth:`Field.vmul`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..field import BABYBEAR, GOLDILOCKS, KOALABEAR, Field
from .permutation import Permutation, RoundStructure, register
from .poseidon2_constants import PLONKY3_COMMIT, PLONKY3_TAG, POSEIDON2_CONSTANTS

__all__ = ["Poseidon2", "general_diagonal_entries", "shift_add_form", "NAMES", "PLONKY3_TAG", "PLONKY3_COMMIT"]

_FIELDS = {"babybear": BABYBEAR, "koalabear": KOALABEAR, "goldilocks": GOLDILOCKS}
#: every Poseidon2 permutation this module registers, by name -> (field name, width)
NAMES = {f"poseidon2-{field}-{width}": (field, width) for field, width in POSEIDON2_CONSTANTS}


def shift_add_form(field: Field, value: int) -> tuple[int, int, int] | None:
    """(sign, c, e) with value = sign * c * 2^e (mod p), c in (1, 3), |e| <= the field's width, smallest |e|
    first: how the gateware multiplies by ``value`` with adds, shifts and modular halvings (e < 0). None when
    ``value`` is none of these: it needs a general multiplier."""
    p = field.p
    value %= p
    inv2 = pow(2, -1, p)
    for k in range(field.width + 1):
        for e, base in ((k, pow(2, k, p)), (-k, pow(inv2, k, p))):
            for c in (1, 3):
                for sign in (1, -1):
                    if sign * c * base % p == value:
                        return sign, c, e
    return None


def general_diagonal_entries(field: Field, diag) -> int:
    """How many entries of an internal diagonal V need a general multiplier (not +-1 or +-3 times 2^e)."""
    return sum(1 for v in diag if shift_add_form(field, int(v)) is None)


def _reduce31(a: np.ndarray, p: np.uint64) -> np.ndarray:
    """a mod p in place, for a 31-bit p: numpy divides by a scalar with a multiply-shift (libdivide), several
    times faster than its remainder, which divides."""
    q = a // p
    q *= p
    a -= q
    return a


def _halve(x: np.ndarray, half: np.uint64) -> np.ndarray:
    """x / 2 mod p for canonical x: x >> 1, plus (p + 1) / 2 when x is odd ((x + p) / 2 without overflow)."""
    return (x >> np.uint64(1)) + (x & np.uint64(1)) * half


class Poseidon2(Permutation):
    """One of Plonky3's default Poseidon2 permutations (see the module docstring).

    ``diag`` replaces the internal diagonal V (canonical values, ``width`` of them), for instances that
    differ only there, such as Plonky3's Goldilocks before v0.5.0 (HorizenLabs' general V); the registry's
    permutations use Plonky3's own."""

    def __init__(self, field: str, width: int, diag=None):
        if (field, width) not in POSEIDON2_CONSTANTS:
            valid = ", ".join(f"{f}-{w}" for f, w in POSEIDON2_CONSTANTS)
            raise ValueError(f"field, width: no Poseidon2 instance {field}-{width} (valid: {valid})")
        c = POSEIDON2_CONSTANTS[(field, width)]
        self.name = f"poseidon2-{field}-{width}"
        self.field = _FIELDS[field]
        self.width = width
        half = c["half_full_rounds"]
        self.structure = RoundStructure(full_rounds=2 * half, partial_rounds=c["partial_rounds"],
                                        sbox_degree=c["sbox_degree"])
        if len(c["external_initial"]) != half or len(c["external_terminal"]) != half:
            raise ValueError(f"{self.name}: the constants module's external rounds do not split {half} + {half}")
        diag = tuple(c["diag"]) if diag is None else tuple(int(v) for v in diag)
        if len(diag) != width or not all(0 <= v < self.field.p for v in diag):
            raise ValueError(f"diag: expected {width} canonical {self.field.name} elements, got {len(diag)}")
        if diag != tuple(c["diag"]):
            self.name += "-custom-diagonal"        # not the registered permutation of that name
        self.linear_multiplies = c["partial_rounds"] * general_diagonal_entries(self.field, diag)
        col = (slice(None), None)                  # constants as (width, 1) columns against (width, n) states
        self._initial = [np.array(r, dtype=np.uint64)[col] for r in c["external_initial"]]
        self._terminal = [np.array(r, dtype=np.uint64)[col] for r in c["external_terminal"]]
        self._internal = np.array(c["internal"], dtype=np.uint64)
        self._diag = np.array(diag, dtype=np.uint64)[col]
        self._diag_forms = [shift_add_form(self.field, v) for v in diag]
        self._wide = self.field.width == 64
        self._p = np.uint64(self.field.p)
        self._half = np.uint64((self.field.p + 1) // 2)

    # -- layers on (width, n) uint64 arrays of canonical values ----------------------------------

    def _sbox(self, x: np.ndarray) -> np.ndarray:
        """x^d (d = 3 or 7) by the addition chain the multiply count assumes."""
        if self._wide:
            mul = self.field.vmul
        else:
            p = self._p

            def mul(a, b):
                return _reduce31(a * b, p)          # both below 2^32 (2p): the product fits in 64 bits
        x2 = mul(x, x)
        x3 = mul(x2, x)
        if self.structure.sbox_degree == 3:
            return x3
        return mul(mul(x3, x3), x)

    def _add_constants(self, x: np.ndarray, rc: np.ndarray) -> np.ndarray:
        """x + rc; for the 31-bit fields left unreduced (below 2p < 2^32), which the S-box's first product,
        below 2^64, and its reductions absorb."""
        if self._wide:
            return self.field.vadd(x, rc)
        return x + rc

    def _external_linear(self, x: np.ndarray) -> np.ndarray:
        """mds_light_permutation with MDSMat4: M4 on each 4-chunk, then each position's sum over chunks added."""
        n = x.shape[1]
        c = x.reshape(self.width // 4, 4, n)
        add = self.field.vadd if self._wide else np.add
        x0, x1, x2, x3 = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
        t01 = add(x0, x1)
        t23 = add(x2, x3)
        t0123 = add(t01, t23)
        t01123 = add(t0123, x1)
        t01233 = add(t0123, x3)
        y = np.empty_like(c)
        y[:, 3] = add(t01233, add(x0, x0))          # 3 x0 + x1 + x2 + 2 x3
        y[:, 1] = add(t01123, add(x2, x2))          # x0 + 2 x1 + 3 x2 + x3
        y[:, 0] = add(t01123, t01)                  # 2 x0 + 3 x1 + x2 + x3
        y[:, 2] = add(t01233, t23)                  # x0 + x1 + 2 x2 + 3 x3
        sums = y[0]
        for k in range(1, y.shape[0]):
            sums = add(sums, y[k])
        out = add(y, sums[None])
        if not self._wide:
            out = _reduce31(out, self._p)           # lazily summed: below 7 (chunks + 1) p < 2^40
        return out.reshape(self.width, n)

    def _internal_linear(self, x: np.ndarray) -> np.ndarray:
        """(1 + diag(V)) x: y_i = sum(x) + V_i x_i."""
        if self._wide:
            return self._internal_linear_shift_add(x)
        total = x.sum(axis=0, dtype=np.uint64)      # below 24 p < 2^36
        y = x * self._diag                          # V_i x_i < 2^62
        y += total[None]
        return _reduce31(y, self._p)

    def _internal_linear_shift_add(self, x: np.ndarray) -> np.ndarray:
        """The internal layer as the gateware does it for Goldilocks: V_i x_i by doublings, halvings and a
        subtraction where V_i has that form, a general multiply only where it has not (a 64-bit product costs
        the model some 25 array passes, a halving 4)."""
        f = self.field
        total = x[0]
        for i in range(1, self.width):
            total = f.vadd(total, x[i])
        out = np.empty_like(x)
        for i, form in enumerate(self._diag_forms):
            if form is None:
                out[i] = f.vadd(total, f.vmul(x[i], self._diag[i]))
                continue
            sign, c, e = form
            y = x[i]
            if c == 3:
                y = f.vadd(f.vadd(y, y), y)
            for _ in range(e):
                y = f.vadd(y, y)
            for _ in range(-e):
                y = _halve(y, self._half)
            out[i] = f.vadd(total, y) if sign > 0 else f.vsub(total, y)
        return out

    def _external_round(self, x: np.ndarray, rc: np.ndarray) -> np.ndarray:
        return self._external_linear(self._sbox(self._add_constants(x, rc)))

    def _permute(self, states: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(states.T)
        x = self._external_linear(x)
        for rc in self._initial:
            x = self._external_round(x, rc)
        for rc in self._internal:
            x[0] = self._sbox(self._add_constants(x[0], rc))
            x = self._internal_linear(x)
        for rc in self._terminal:
            x = self._external_round(x, rc)
        return np.ascontiguousarray(x.T)


@lru_cache(maxsize=None)
def _factory(name: str):
    field, width = NAMES[name]

    def build() -> Poseidon2:
        return Poseidon2(field, width)
    build.__name__ = build.__qualname__ = f"build_{name.replace('-', '_')}"
    return build


for _name in NAMES:
    register(_name, _factory(_name))
