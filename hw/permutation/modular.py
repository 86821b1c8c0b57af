"""Pipelined modular arithmetic the permutation engine builds inline (no multiplier): a bounded reduction,
modular halving, negation, delays.

Each helper adds registers to a Module (the caller's EnableInserter gates them) and returns the result
and the register stages it took:

- :func:`reduce_bounded`: v mod p for an integer v known to be at most ``vmax``, by folding the bits above
  the field's width w with 2^w = 2^a - 1 (mod p) (31-bit fields: a = 27 BabyBear, 24 KoalaBear; Goldilocks
  a = 32), one fold a stage, until the bound is below 2p, then one conditional subtraction.
- :func:`halve`: x / 2^k mod p for p = 1 (mod 2^k): (x + m p) / 2^k with m = -x mod 2^k (exact, and below p
  for canonical x). Two stages.
- :func:`negate`: p - x (p for x = 0: a term of a lazy sum, not a canonical value). One stage.
"""

from __future__ import annotations

from amaranth.hdl import Mux, Signal

from nantucket.hw.arith import pipe

__all__ = ["fold_constant", "fold_bound", "reduce_bounded", "halve", "negate", "reg", "delay"]


def reg(m, value, width: int, name: str):
    """``value`` in a new reset-less register of ``width`` bits."""
    r = Signal(width, name=name, reset_less=True)
    m.d.sync += r.eq(value)
    return r


def delay(m, value, stages: int, name: str):
    """``value`` ``stages`` cycles later; the last stage a flip-flop (pipe's last_ff), not the end of an SRL
    whose clock-to-out would start the path of the logic reading it."""
    return pipe(m, value, stages, name, last_ff=True) if stages > 0 else value


def fold_constant(p: int, w: int) -> int:
    """a with 2^w = 2^a - 1 (mod p); a ValueError if p has no such form."""
    c = (1 << w) % p
    a = (c + 1).bit_length() - 1
    if c + 1 != 1 << a:
        raise ValueError(f"p: 2^{w} mod p = {c} is not 2^a - 1")
    return a


def fold_bound(vmax: int, w: int, c: int) -> int:
    """The largest l + h c over v = h 2^w + l <= vmax."""
    mask = (1 << w) - 1
    h = vmax >> w
    best = (vmax & mask) + h * c
    if h:
        best = max(best, mask + (h - 1) * c)
    return best


def reduce_bounded(m, v, vmax: int, p: int, name: str):
    """(canonical v mod p, stages) for v <= vmax (see the module docstring)."""
    w = p.bit_length()
    a = fold_constant(p, w)
    c = (1 << a) - 1
    stages = 0
    while vmax >= 2 * p:
        nmax = fold_bound(vmax, w, c)
        if nmax >= vmax:
            raise ValueError(f"vmax: folding does not shrink {vmax}")
        high = v[w:]
        v = reg(m, v[:w] + (high << a) - high, nmax.bit_length(), f"{name}_f{stages}")
        vmax, stages = nmax, stages + 1
    if vmax < p:
        return v, stages
    t = Signal(w + 2, name=f"{name}_t")
    m.d.comb += t.eq(v - p)
    r = reg(m, Mux(t[w + 1], v[:w], t[:w]), w, f"{name}_r")
    return r, stages + 1


def halve(m, x, k: int, p: int, name: str):
    """(x / 2^k mod p, 2) for canonical x (see the module docstring)."""
    if k == 0:
        return x, 0
    if p % (1 << k) != 1:
        raise ValueError(f"k: p is not 1 mod 2^{k}")
    w = p.bit_length()
    a = fold_constant(p, w)                 # p = 2^w - 2^a + 1: m p by shifts and adds, not a multiplier
    mm = reg(m, (-x)[:k], k, f"{name}_m")
    xd = reg(m, x, w, f"{name}_x")
    r = reg(m, (xd + (mm << w) + mm - (mm << a)) >> k, w, f"{name}_h")
    return r, 2


def negate(m, x, p: int, name: str):
    """(p - x, 1) for canonical x (an integer in 1 .. p)."""
    return reg(m, p - x, p.bit_length() + 1, f"{name}_n"), 1
