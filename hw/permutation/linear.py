"""The permutation engine's linear layers: small integer matrices over terms, by shifts and adds.

A :class:`LinearSpec` says y_i = sum_t rows[i][t] * term_t (mod p) with small non-negative integer
coefficients, where term t is the state element ``src`` halved ``halvings`` times (x / 2^h mod p) and,
with ``negate``, taken as p - x. Poseidon2's external layer (2 M4 / M4 blocks), its internal layer
1 + diag(V) (V_i = +-c 2^e: a term x_i / 2^-e, negated for a negative V_i, coefficient c 2^max(e, 0)),
plonky2's and Rescue's MDS matrices (constants below 2^6) are all of this form: no general multiplier.

:func:`build_linear` makes it: the terms (halvings, negations: up to 3 stages), every coefficient as its
bits (one shifted copy of the term a bit), a registered adder tree per output, the integer sum reduced
by :func:`hw.permutation.modular.reduce_bounded`; every output delayed to the slowest so that they all
leave together ``latency`` cycles later. :func:`linear_latency` gives that latency without building.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Signal

from nantucket.hw.permutation.modular import delay, fold_bound, fold_constant, halve, negate, reduce_bounded, reg

__all__ = ["LinearSpec", "build_linear", "linear_latency"]


@dataclass(frozen=True)
class LinearSpec:
    field: object
    width: int
    terms: tuple        # (src element, halvings, negate)
    rows: tuple         # per output: {term index: coefficient}

    def apply(self, x) -> list[int]:
        """The layer on canonical ints (plain Python, for checks)."""
        p = self.field.p
        vals = []
        for src, h, neg in self.terms:
            v = x[src] * pow(pow(2, h, p), -1, p) % p
            vals.append((p - v) if neg else v)
        return [sum(c * vals[t] for t, c in row.items()) % p for row in self.rows]

    def row_bound(self, i: int) -> int:
        return sum(self.rows[i].values()) * self.field.p


def _tree_depth(n: int) -> int:
    d = 0
    while n > 1:
        n, d = (n + 1) // 2, d + 1
    return d


def _reduce_stages(vmax: int, p: int) -> int:
    """The stages reduce_bounded takes for this bound (counted the same way, without a Module)."""
    w = p.bit_length()
    c = (1 << fold_constant(p, w)) - 1
    n = 0
    while vmax >= 2 * p:
        vmax, n = fold_bound(vmax, w, c), n + 1
    return n + (vmax >= p)


def _term_stages(spec: LinearSpec) -> int:
    return max((2 if h else 0) + (1 if neg else 0) for _, h, neg in spec.terms)


def linear_latency(spec: LinearSpec) -> int:
    """Cycles from the state in to the layer's output."""
    p = spec.field.p
    return _term_stages(spec) + max(_tree_depth(sum(bin(c).count("1") for c in row.values()))
                                    + _reduce_stages(spec.row_bound(i), p) for i, row in enumerate(spec.rows))


def _terms(m, spec: LinearSpec, xs: list, name: str) -> list:
    p = spec.field.p
    depth = _term_stages(spec)
    out = []
    for t, (src, h, neg) in enumerate(spec.terms):
        v, s = halve(m, xs[src], h, p, f"{name}_t{t}")
        if neg:
            v, s2 = negate(m, v, p, f"{name}_t{t}")
            s += s2
        out.append(delay(m, v, depth - s, f"{name}_t{t}_al"))
    return out


def _adder_tree(m, parts: list, name: str):
    """(sum of (value, max) parts, stages): one registered level of pairwise adds a stage."""
    level = 0
    while len(parts) > 1:
        nxt = []
        for i in range(0, len(parts) - 1, 2):
            (a, am), (b, bm) = parts[i], parts[i + 1]
            nxt.append((reg(m, a + b, (am + bm).bit_length(), f"{name}_l{level}_{i // 2}"), am + bm))
        if len(parts) % 2:                  # carried to the next level: a flip-flop (with a reset), no SRL
            v, vm = parts[-1]
            r = Signal(vm.bit_length(), name=f"{name}_l{level}_{len(parts) // 2}")
            m.d.sync += r.eq(v)
            nxt.append((r, vm))
        parts, level = nxt, level + 1
    return parts[0], level


def build_linear(m, spec: LinearSpec, xs: list, name: str) -> list:
    """The layer on the canonical element signals ``xs``: canonical outputs, all ``linear_latency`` later."""
    p = spec.field.p
    terms = _terms(m, spec, xs, name)
    total = linear_latency(spec)
    outs = []
    for i, row in enumerate(spec.rows):
        parts = []
        for t, c in sorted(row.items()):
            for b in range(c.bit_length()):
                if c >> b & 1:
                    parts.append((terms[t] << b, p << b))
        (v, vmax), stages = _adder_tree(m, parts, f"{name}_y{i}")
        r, rs = reduce_bounded(m, v, vmax, p, f"{name}_y{i}")
        outs.append(delay(m, r, total - _term_stages(spec) - stages - rs, f"{name}_y{i}_al"))
    return outs
