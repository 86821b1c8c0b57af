"""Winterfell's Rescue Prime Rp64_256 permutation over Goldilocks, bit-exact, vectorized over states.

``Rp64_256::apply_permutation`` of Winterfell (``crypto/src/hash/rescue/rp64_256/mod.rs``, constants in
:mod:`.rescue_constants` at the tag named there); registered as ``"rp64-256"``. The state is 12
elements (capacity 0-3, rate 4-11, digest 4-7: the sponge's business, not the permutation's). Each of
the 7 rounds (``apply_round``):

1. x^7 on every element, the MDS layer, add ``ARK1[round]``;
2. x^(1/7) on every element, the MDS layer, add ``ARK2[round]``.

x^(1/7) is x^10540996611094048183 (7 x 10540996611094048183 = 1 mod p - 1). The MDS matrix is the
circulant with first row [7, 23, 8, 26, 13, 10, 9, 7, 6, 22, 21, 8] (Winterfell multiplies by it in the
frequency domain; the model multiplies by the matrix, which its own test shows equal): constants below
2^5, so the gateware does it with shifts and adds and it takes no general multiplier.

General multiplies: 7 rounds x 12 elements x (4 for x^7 + 72 for x^(1/7)) = 6,384. The inverse S-box's
72 are the length of :data:`INV_SBOX_CHAIN`, Winterfell's ``apply_inv_sbox`` chain (squarings and
``exp_acc`` steps), which the model runs and the count is taken from (:func:`chain_multiplies`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..field import GOLDILOCKS_PLONKY2
from . import rescue_constants as C
from .permutation import Permutation, RoundStructure, register
from .poseidon import by_blocks, sbox7, small_matrix_apply

__all__ = ["RescuePrime64", "INV_SBOX_CHAIN", "run_chain", "chain_multiplies", "NAME",
           "WINTERFELL_TAG", "WINTERFELL_COMMIT"]

NAME = "rp64-256"
WINTERFELL_TAG = C.WINTERFELL_TAG
WINTERFELL_COMMIT = C.WINTERFELL_COMMIT
WIDTH = 12

#: x^(1/7) as Winterfell's ``apply_inv_sbox`` computes it; each step (dest, src, squarings, tail) sets
#: dest = src^(2^squarings) * tail (tail None: no multiply). Registers start with "x" = the input;
#: the last step's dest is the result. 10540996611094048183 =
#: 0b1001001001001001001001001001000110110110110110110110110110110111.
INV_SBOX_CHAIN: tuple[tuple[str, str, int, str | None], ...] = (
    ("t1", "x", 1, None),        # x^10
    ("t2", "t1", 1, None),       # x^100
    ("t3", "t2", 3, "t2"),       # x^100100                    exp_acc::<3>(t2, t2)
    ("t4", "t3", 6, "t3"),       # x^100100100100              exp_acc::<6>(t3, t3)
    ("t5", "t4", 12, "t4"),      # x^(100 x 8)                 exp_acc::<12>(t4, t4)
    ("t6", "t5", 6, "t3"),       # x^(100 x 10)                exp_acc::<6>(t5, t3)
    ("t7", "t6", 31, "t6"),      #                             exp_acc::<31>(t6, t6)
    ("a", "t7", 1, "t6"),        # a = (t7^2 * t6)^2^2
    ("a", "a", 2, None),
    ("b", "t1", 0, "t2"),        # b = t1 * t2 * x
    ("b", "b", 0, "x"),
    ("y", "a", 0, "b"),          # a * b
)


def run_chain(chain, x, square: Callable, mul: Callable):
    """Evaluate ``chain`` on ``x`` with the given square and multiply (field elements, or exponents with
    square = doubling and mul = addition, which gives the exponent the chain computes)."""
    reg = {"x": x}
    dest = "x"
    for dest, src, squarings, tail in chain:
        v = reg[src]
        for _ in range(squarings):
            v = square(v)
        reg[dest] = v if tail is None else mul(v, reg[tail])
    return reg[dest]


def chain_multiplies(chain) -> int:
    """General multiplies of ``chain``: every squaring and every multiply by a tail."""
    return sum(squarings + (tail is not None) for _, _, squarings, tail in chain)


class RescuePrime64(Permutation):
    """Winterfell's Rp64_256 permutation (see the module docstring)."""

    name = NAME
    field = GOLDILOCKS_PLONKY2
    width = WIDTH
    structure = RoundStructure(rounds=C.NUM_ROUNDS, sbox_degree=C.ALPHA, inverse_sbox=True,
                               inverse_sbox_multiplies=chain_multiplies(INV_SBOX_CHAIN))
    linear_multiplies = 0

    def __init__(self):
        if run_chain(INV_SBOX_CHAIN, 1, lambda e: 2 * e, lambda a, b: a + b) != C.INV_ALPHA:
            raise ValueError(f"{NAME}: INV_SBOX_CHAIN does not compute x^{C.INV_ALPHA}")
        self._mds = np.array(C.MDS, dtype=np.uint64)
        self._ark1 = np.array(C.ARK1, dtype=np.uint64)[:, :, None]
        self._ark2 = np.array(C.ARK2, dtype=np.uint64)[:, :, None]

    def inverse_sbox(self, x: np.ndarray) -> np.ndarray:
        """x^(1/7) on canonical uint64 values of any shape, by :data:`INV_SBOX_CHAIN`."""
        f = self.field
        x = f.as_u64(x)
        return run_chain(INV_SBOX_CHAIN, x, lambda v: f.vmul(v, v), f.vmul)

    def _round(self, x: np.ndarray, r: int) -> np.ndarray:
        f = self.field
        x = small_matrix_apply(f, self._mds, sbox7(f, x))
        x = f.vadd(x, self._ark1[r])
        x = small_matrix_apply(f, self._mds, self.inverse_sbox(x))
        return f.vadd(x, self._ark2[r])

    def _permute_block(self, x: np.ndarray) -> np.ndarray:
        for r in range(C.NUM_ROUNDS):
            x = self._round(x, r)
        return x

    def _permute(self, states: np.ndarray) -> np.ndarray:
        return by_blocks(self._permute_block, states)


register(NAME, RescuePrime64)
