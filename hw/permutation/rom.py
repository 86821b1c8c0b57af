"""The round constants of a folded round unit: one value per pass, chosen by the pass tag.

A unit that does rounds u, u + U, u + 2U, ... of a permutation (hw/permutation/core.py) adds, at each
ARK, the constant of the round it is doing on this pass: a small ROM per element, indexed by the pass
number, as a tree of 2:1 muxes on its bits (:func:`hw.arith.select_tree`; a constant at full rate, with
one pass). Values are encoded as the core computes (Montgomery form in a 31-bit field).
"""

from __future__ import annotations

from amaranth.hdl import Const

from nantucket.hw.arith import select_tree

__all__ = ["by_pass", "encode"]


def encode(spec, value: int) -> int:
    """The word the core holds for the field value ``value``: value 2^32 mod p in Montgomery form."""
    p = spec.field.p
    return (value << 32) % p if spec.montgomery else value % p


def by_pass(pass_tag, values: list, width: int):
    """values[pass] for the pass tag (a Const when every pass has the same value); passes beyond the list
    (a last pass that ends before this unit) take pass 0's."""
    if len(set(values)) == 1:
        return Const(values[0], width)
    options = {j: v for j, v in enumerate(values)}
    return select_tree(pass_tag, options, default=values[0])
