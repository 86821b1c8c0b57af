# amaranth: UnusedElaboratable=no
"""The S-boxes as multiply chains on the project's multiplier seam (hw/multiplier.py).

A chain is a list of multiplies ``(dest, a, b)`` over named values, "x" the input: :func:`forward_chain`
gives x^d by a shortest addition chain (x^3: x^2, x^3; x^7: x^2, x^3, x^4, x^7, three multiply latencies
deep), :func:`inverse_chain` compiles Rescue's x^(1/7) from the golden model's own ``INV_SBOX_CHAIN`` (each
squaring a multiply of a value by itself). :func:`build_chain` schedules it: each multiply starts when
both operands are ready (the earlier one delayed to meet the later), on one unit of the field's general
multiplier kind (``general_multiplier(field).unit()``, emitted once through hw/shared.py). The 31-bit
Montgomery unit returns a b / 2^32, so the core keeps its state in Montgomery form, where that is the
product. Operands are canonical (or any 31-bit value for the Montgomery unit), results canonical.
"""

from __future__ import annotations

from amaranth.hdl import Const

from nantucket.hw.model.hash.permutation import addition_chain_length
from nantucket.hw.model.hash.rescue import run_chain
from nantucket.hw.multiplier import general_multiplier
from nantucket.hw.permutation.modular import delay
from nantucket.hw.shared import share

__all__ = ["forward_chain", "inverse_chain", "chain_latency", "build_chain", "multiply"]

_FORWARD = {
    3: (("x2", "x", "x"), ("y", "x2", "x")),
    5: (("x2", "x", "x"), ("x4", "x2", "x2"), ("y", "x4", "x")),
    7: (("x2", "x", "x"), ("x3", "x2", "x"), ("x4", "x2", "x2"), ("y", "x3", "x4")),
}


def forward_chain(d: int) -> tuple:
    """x^d as multiplies; as long as the model's shortest addition chain (its multiply count)."""
    if d not in _FORWARD:
        raise ValueError(f"sbox_degree: the engine builds x^3, x^5 and x^7, got x^{d}")
    chain = _FORWARD[d]
    assert len(chain) == addition_chain_length(d)
    return chain


def inverse_chain(model_chain) -> tuple:
    """The model's (dest, src, squarings, tail) chain as multiplies (each squaring one)."""
    ops = []
    count = [0]

    def square(v):
        count[0] += 1
        dest = f"s{count[0]}"
        ops.append((dest, v, v))
        return dest

    def mul(a, b):
        count[0] += 1
        dest = f"s{count[0]}"
        ops.append((dest, a, b))
        return dest
    out = run_chain(model_chain, "x", square, mul)
    ops = [(("y" if d == out else d), a, b) for d, a, b in ops]
    return tuple(ops)


def chain_latency(chain, latency: int) -> int:
    ready = {"x": 0}
    for dest, a, b in chain:
        ready[dest] = max(ready[a], ready[b]) + latency
    return ready["y"]


def multiply(m, kind, en, a, b, name: str):
    """a * b on a new unit of multiplier ``kind`` (en: the core's clock enable); the product signal."""
    unit = kind.unit()
    m.submodules[name] = share(unit)
    m.d.comb += [unit.en.eq(en), unit.i_valid.eq(0), unit.i_a.eq(a), unit.i_b.eq(b)]
    return unit.o_p


def build_chain(m, field, en, x, chain, name: str):
    """(x's power by ``chain``, latency): every multiply on its own unit, operands aligned by delays."""
    kind = general_multiplier(field)
    lat = kind.latency
    vals = {"x": (x, 0)}
    for i, (dest, a, b) in enumerate(chain):
        (va, ta), (vb, tb) = vals[a], vals[b]
        t = max(ta, tb)
        va = delay(m, va, t - ta, f"{name}_{dest}_a")
        vb = va if a == b else delay(m, vb, t - tb, f"{name}_{dest}_b")
        vals[dest] = (multiply(m, kind, en, va, vb, f"{name}_{dest}"), t + lat)
    return vals["y"]


def constant(value: int, width: int):
    return Const(value, width)
