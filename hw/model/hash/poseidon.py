"""plonky2's Poseidon over Goldilocks, width 12, bit-exact, vectorized over states.

The permutation ``Poseidon::poseidon_naive`` of plonky2 (``plonky2/src/hash/poseidon.rs``,
constants from ``poseidon_goldilocks.rs``, in :mod:`.poseidon_constants` at the tag named there), which
plonky2's ``poseidon`` equals (its ``consistency`` test); registered as ``"poseidon-goldilocks-12"``:

1. 4 full rounds: add the round's 12 constants, x^7 on every element, the MDS layer;
2. 22 partial rounds: add the round's 12 constants, x^7 on element 0 only, the MDS layer;
3. 4 full rounds, as in 1.

Round r (0..29) adds ``ALL_ROUND_CONSTANTS[12 r .. 12 r + 12]``. The MDS layer is C + D: row r of the
product is sum_i CIRC[i] v[(i + r) % 12] + DIAG[r] v[r], with CIRC = [17, 15, 41, 16, 2, 28, 13, 13, 39,
18, 34, 20] and DIAG = [8, 0, ..., 0]: constants below 2^6, so the gateware does it with shifts and adds
(a constant-coefficient adder tree) and it takes no general multiplier.

plonky2's own ``partial_rounds`` is a precomputed rewrite of step 2 (``FAST_PARTIAL_*``: one constant
vector and an 11 x 11 matrix up front, then per round x^7 on element 0, one constant, and a sparse
layer of 11 + 11 general constants, ``mds_partial_layer_fast``). :meth:`PoseidonGoldilocks.permute_fast`
implements it; the tests check it equals the definition. The two forms differ in their cost:

===============  ===================  =================================  =========
form             S-box multiplies     linear-layer general multiplies    total
===============  ===================  =================================  =========
plain (defined)  (8 x 12 + 22) x 4    0 (small MDS constants)            472
fast             (8 x 12 + 22) x 4    11 x 11 + 22 x (11 + 11) = 605     1,077
===============  ===================  =================================  =========

:attr:`Permutation.general_multiplies` is the plain form's (472): the form a gateware core would build,
since its small MDS costs adds where the fast form's constants are full field elements. The fast form's
count is :attr:`PoseidonGoldilocks.fast_general_multiplies` (counted from the constants' shapes, every
one of the 605 taken as general: only the last round's 11 v entries are below 2^8, 22 in all below 2^16).

:func:`small_matrix_apply` is the MDS multiply for any matrix of small non-negative integers (Rescue's
too): each state element is split into 32-bit halves, both halves multiplied by the matrix in uint64
without overflow, and the two sums recombined modulo p with 2^64 = 2^32 - 1.

States travel inside as a (12, n) uint64 array (element-major: element 0 of every state is one
contiguous row for the partial rounds).
"""

from __future__ import annotations

import numpy as np

from ..field import GOLDILOCKS_PLONKY2, Field
from . import poseidon_constants as C
from .permutation import Permutation, RoundStructure, register

__all__ = ["PoseidonGoldilocks", "small_matrix_apply", "mds_matrix", "sbox7", "NAME",
           "PLONKY2_TAG", "PLONKY2_COMMIT"]

NAME = "poseidon-goldilocks-12"
PLONKY2_TAG = C.PLONKY2_TAG
PLONKY2_COMMIT = C.PLONKY2_COMMIT
WIDTH = 12

_M32 = np.uint64(0xFFFF_FFFF)
_S32 = np.uint64(32)


def mds_matrix() -> np.ndarray:
    """plonky2's MDS matrix C + D as a (12, 12) uint64 array: out[r] = sum_j M[r, j] v[j]."""
    m = np.zeros((WIDTH, WIDTH), dtype=np.uint64)
    for r in range(WIDTH):
        for i in range(WIDTH):
            m[r, (i + r) % WIDTH] += C.MDS_MATRIX_CIRC[i]
        m[r, r] += C.MDS_MATRIX_DIAG[r]
    return m


def small_matrix_apply(field: Field, matrix: np.ndarray, x: np.ndarray) -> np.ndarray:
    """matrix @ x modulo p for a 64-bit field, ``matrix`` (k, m) of non-negative integers whose every row
    sums below 2^32, ``x`` (m, n) canonical uint64: a new (k, n) array of canonical values.

    With x = h 2^32 + l, the sums L = M l and H = M h stay below 2^64; the result is
    L + H 2^32 = L + (H mod 2^32) 2^32 + (H >> 32) (2^32 - 1) (mod p), three terms each below 2^64."""
    if field.width != 64:
        raise ValueError(f"field: small_matrix_apply splits 64-bit elements, got {field.name}")
    m = np.asarray(matrix, dtype=np.uint64)
    if m.ndim != 2 or m.shape[1] != x.shape[0]:
        raise ValueError(f"matrix: shape {m.shape} does not multiply states of {x.shape[0]} elements")
    if int(m.sum(axis=1, dtype=object).max()) >= 1 << 32:
        raise ValueError("matrix: a row sums to 2^32 or more; the split products would overflow 64 bits")
    low = m @ (x & _M32)
    high = m @ (x >> _S32)
    eps = np.uint64((1 << 64) % field.p)
    out = field.vadd(field.vcanon(low), field.vcanon((high & _M32) << _S32))
    return field.vadd(out, field.vcanon((high >> _S32) * eps))


#: states per block: numpy's temporaries for a block stay in the cache (a 2^14-state batch in one piece runs
#: about 2.5 times slower than in blocks of 1,024; 256 and 4,096 are slower too)
BLOCK = 1024


def by_blocks(permute_block, states: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """Apply ``permute_block`` (a (width, m) uint64 array -> the same shape) to the (n, width) ``states``
    ``block`` states at a time (a loop over blocks, each vectorized): the (n, width) result."""
    out = np.empty_like(states)
    for start in range(0, states.shape[0], block):
        x = np.ascontiguousarray(states[start:start + block].T)
        out[start:start + block] = permute_block(x).T
    return out


def sbox7(field: Field, x: np.ndarray) -> np.ndarray:
    """x^7 by the chain x^2, x^3, x^4, x^7: the 4 general multiplies the count assumes."""
    x2 = field.vmul(x, x)
    x3 = field.vmul(x2, x)
    x4 = field.vmul(x2, x2)
    return field.vmul(x3, x4)


class PoseidonGoldilocks(Permutation):
    """plonky2's Poseidon over Goldilocks, width 12 (see the module docstring)."""

    name = NAME
    field = GOLDILOCKS_PLONKY2
    width = WIDTH
    structure = RoundStructure(full_rounds=2 * C.HALF_N_FULL_ROUNDS, partial_rounds=C.N_PARTIAL_ROUNDS,
                               sbox_degree=7)
    linear_multiplies = 0

    def __init__(self):
        rounds = self.structure.full_rounds + self.structure.partial_rounds
        if len(C.ALL_ROUND_CONSTANTS) != rounds * WIDTH:
            raise ValueError(f"{NAME}: {len(C.ALL_ROUND_CONSTANTS)} round constants, expected {rounds * WIDTH}")
        self._mds = mds_matrix()
        self._rc = np.array(C.ALL_ROUND_CONSTANTS, dtype=np.uint64).reshape(rounds, WIDTH, 1)
        self._fast_first = np.array(C.FAST_PARTIAL_FIRST_ROUND_CONSTANT, dtype=np.uint64)[:, None]
        self._fast_rc = np.array(C.FAST_PARTIAL_ROUND_CONSTANTS, dtype=np.uint64)
        self._fast_vs = np.array(C.FAST_PARTIAL_ROUND_VS, dtype=np.uint64)
        self._fast_w_hats = np.array(C.FAST_PARTIAL_ROUND_W_HATS, dtype=np.uint64)
        self._fast_initial = np.array(C.FAST_PARTIAL_ROUND_INITIAL_MATRIX, dtype=np.uint64)
        self._mds00 = np.uint64(C.MDS_MATRIX_CIRC[0] + C.MDS_MATRIX_DIAG[0])

    @property
    def fast_general_multiplies(self) -> int:
        """General multiplies of plonky2's fast partial-round form: the same S-boxes, plus the initial
        (width-1)^2 matrix and each partial round's w_hat and v vectors (width-1 each)."""
        inner = self.width - 1
        return (self.structure.sbox_general_multiplies(self.width) + inner * inner
                + self.structure.partial_rounds * 2 * inner)

    # -- the plain form (the definition) on (12, n) arrays -----------------------------------------

    def _full_round(self, x: np.ndarray, r: int) -> np.ndarray:
        x = sbox7(self.field, self.field.vadd(x, self._rc[r]))
        return small_matrix_apply(self.field, self._mds, x)

    def _partial_round(self, x: np.ndarray, r: int) -> np.ndarray:
        x = self.field.vadd(x, self._rc[r])
        x[0] = sbox7(self.field, x[0])
        return small_matrix_apply(self.field, self._mds, x)

    def _permute(self, states: np.ndarray) -> np.ndarray:
        return by_blocks(self._permute_block, states)

    def _permute_block(self, x: np.ndarray) -> np.ndarray:
        half, partial = C.HALF_N_FULL_ROUNDS, C.N_PARTIAL_ROUNDS
        for r in range(half):
            x = self._full_round(x, r)
        for r in range(half, half + partial):
            x = self._partial_round(x, r)
        for r in range(half + partial, 2 * half + partial):
            x = self._full_round(x, r)
        return x

    # -- plonky2's fast partial rounds ------------------------------------------------------------

    def _fast_partial_rounds(self, x: np.ndarray) -> np.ndarray:
        f = self.field
        x = f.vadd(x, self._fast_first)                  # partial_first_constant_layer
        y = np.empty_like(x)                             # mds_partial_layer_init: row vector times matrix
        y[0] = x[0]
        for c in range(1, WIDTH):
            acc = f.vmul(x[1], self._fast_initial[0, c - 1])
            for r in range(2, WIDTH):
                acc = f.vadd(acc, f.vmul(x[r], self._fast_initial[r - 1, c - 1]))
            y[c] = acc
        x = y
        for i in range(C.N_PARTIAL_ROUNDS):
            s0 = f.vadd(sbox7(f, x[0]), self._fast_rc[i])
            d = f.vmul(s0, self._mds00)                  # mds_partial_layer_fast
            for j in range(1, WIDTH):
                d = f.vadd(d, f.vmul(x[j], self._fast_w_hats[i, j - 1]))
            y = np.empty_like(x)
            y[0] = d
            for j in range(1, WIDTH):
                y[j] = f.vadd(x[j], f.vmul(s0, self._fast_vs[i, j - 1]))
            x = y
        return x

    def _permute_fast_block(self, x: np.ndarray) -> np.ndarray:
        half, partial = C.HALF_N_FULL_ROUNDS, C.N_PARTIAL_ROUNDS
        for r in range(half):
            x = self._full_round(x, r)
        x = self._fast_partial_rounds(x)
        for r in range(half + partial, 2 * half + partial):
            x = self._full_round(x, r)
        return x

    def permute_fast(self, states) -> np.ndarray:
        """The same permutation by plonky2's ``poseidon`` (fast partial rounds): equal to :meth:`permute`."""
        a = self._as_states(states)
        flat = np.ascontiguousarray(a.reshape(-1, WIDTH), dtype=np.uint64)
        return by_blocks(self._permute_fast_block, flat).reshape(a.shape).astype(self.field.dtype)


register(NAME, PoseidonGoldilocks)
