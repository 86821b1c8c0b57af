# amaranth: UnusedElaboratable=no
"""Round units: one physical round of a permutation, of one kind or of several (folded), and the core's
edge stages.

:class:`RoundUnit` takes the :class:`~hw.permutation.spec.Round` it does on each pass (pass j of a core
folded k ways does round j U + u on unit u) and builds, per sub-round step: the ARK (a per-pass constant
ROM, hw/permutation/rom.py; elements whose constant is 0 on every pass only delayed), the S-boxes on the
elements any of its rounds applies one to (a forward x^d or Rescue's inverse chain, hw/permutation/sbox.py;
an element with an S-box on some passes only takes the S-box's output or its delayed input by the pass
tag), and the linear layers its rounds use (hw/permutation/linear.py; two of them, as Poseidon2's
external and internal on one folded unit, both built and the pass tag choosing). At full rate (one pass)
each unit is exactly one kind: external/internal (Poseidon2), full/partial (plonky2's Poseidon), a Rescue
round (forward then inverse S-box half-rounds).

:class:`EdgeUnit` is the once-per-permutation work at the core's ends: into and out of Montgomery form
(one general multiply per element, by 2^64 mod p into it, by 1 out of it) and Poseidon2's input linear layer.

Ports (both): ``en`` (the core's clock enable), ``i_state``/``o_state`` (width elements, element 0 in the
low bits), RoundUnit also ``i_pass`` (the pass the state entering now is on). ``latency``: enabled cycles
from a state in to its result out.
"""

from __future__ import annotations

from amaranth.hdl import Cat, EnableInserter, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import select_tree
from nantucket.hw.multiplier import general_multiplier
from nantucket.hw.permutation.linear import build_linear, linear_latency
from nantucket.hw.permutation.modular import delay, reduce_bounded, reg
from nantucket.hw.permutation.rom import by_pass, encode
from nantucket.hw.permutation.sbox import build_chain, chain_latency, forward_chain, inverse_chain, multiply

__all__ = ["RoundUnit", "EdgeUnit", "ARK_LATENCY"]

ARK_LATENCY = 2


def _split(state, width: int, w: int) -> list:
    return [state[i * w:(i + 1) * w] for i in range(width)]


class _Passes:
    """The pass tag delayed by t cycles, for any t asked in increasing order (flip-flops with a reset)."""

    def __init__(self, m, tag):
        self._m, self._line = m, [tag]

    def at(self, t: int):
        while len(self._line) <= t:
            # with a reset: never packed into an SRL, whose clock-to-out would start the select's path
            r = Signal(len(self._line[0]), name=f"pass_d{len(self._line)}")
            self._m.d.sync += r.eq(self._line[-1])
            self._line.append(r)
        return self._line[t]


class RoundUnit(wiring.Component):
    """The rounds ``rounds[j]`` on pass j of ``spec`` (a PermutationSpec); see the module docstring."""

    def __init__(self, spec, rounds, pass_bits: int = 1):
        self._spec, self._rounds = spec, tuple(rounds)
        steps = {len(r.steps) for r in self._rounds}
        if len(steps) != 1 or len({tuple(s.sbox for s in r.steps) for r in self._rounds}) != 1:
            raise ValueError("rounds: a folded unit's rounds must have the same steps")
        self._pass_bits = max(1, pass_bits)
        bits = spec.width * spec.field.width
        super().__init__({"en": In(1), "i_pass": In(self._pass_bits), "i_state": In(bits), "o_state": Out(bits)})

    @property
    def rounds_done(self) -> int:
        """Rounds this unit does per permutation (one a pass, fewer on a last pass that ends before it)."""
        return len(self._rounds)

    @property
    def kinds(self) -> tuple:
        return tuple(dict.fromkeys(r.kind for r in self._rounds))

    def _chain(self, sbox: str):
        return forward_chain(self._spec.sbox_degree) if sbox == "forward" else inverse_chain(self._spec.inverse_chain)

    def _sbox_elements(self, s: int) -> list:
        return [i for i in range(self._spec.width) if any(i in r.steps[s].sbox_mask for r in self._rounds)]

    def _linears(self, s: int) -> list:
        return list(dict.fromkeys(r.steps[s].linear for r in self._rounds))

    @property
    def latency(self) -> int:
        lat = general_multiplier(self._spec.field).latency
        t = 0
        for s, step in enumerate(self._rounds[0].steps):
            t += ARK_LATENCY * (step.ark_before + step.ark_after)
            t += chain_latency(self._chain(step.sbox), lat)
            t += max(linear_latency(self._spec.linear[n]) for n in self._linears(s))
        return t

    @property
    def multipliers(self) -> int:
        """General multiplier units in this round unit."""
        return sum(len(self._sbox_elements(s)) * len(self._chain(step.sbox))
                   for s, step in enumerate(self._rounds[0].steps))

    def _ark(self, m, xs, s, passes, t, name):
        spec, w, p = self._spec, self._spec.field.width, self._spec.field.p
        out = []
        for i, x in enumerate(xs):
            values = [encode(spec, r.constants[s][i]) for r in self._rounds]
            if not any(values):
                out.append(delay(m, x, ARK_LATENCY, f"{name}_e{i}"))
                continue
            total = reg(m, x + by_pass(passes.at(t), values, w), w + 1, f"{name}_s{i}")
            r, stages = reduce_bounded(m, total, 2 * p - 2, p, f"{name}_e{i}")
            assert stages == ARK_LATENCY - 1
            out.append(r)
        return out

    def _sboxes(self, m, xs, s, passes, t, name):
        step = self._rounds[0].steps[s]
        chain = self._chain(step.sbox)
        lat = chain_latency(chain, general_multiplier(self._spec.field).latency)
        out = []
        for i, x in enumerate(xs):
            masks = [i in r.steps[s].sbox_mask for r in self._rounds]
            if not any(masks):
                out.append(delay(m, x, lat, f"{name}_p{i}"))
                continue
            y = build_chain(m, self._spec.field, self.en, x, chain, f"{name}_x{i}")[0]
            if not all(masks):
                keep = delay(m, x, lat, f"{name}_p{i}")
                y = Mux(by_pass(passes.at(t + lat), [int(v) for v in masks], 1), y, keep)
            out.append(y)
        return out, lat

    def _linear(self, m, xs, s, passes, t, name):
        names = self._linears(s)
        lat = max(linear_latency(self._spec.linear[n]) for n in names)
        outs = []
        for n in names:
            ys = build_linear(m, self._spec.linear[n], xs, f"{name}_{n}")
            outs.append([delay(m, y, lat - linear_latency(self._spec.linear[n]), f"{name}_{n}_al{i}")
                         for i, y in enumerate(ys)])
        if len(outs) == 1:
            return outs[0], lat
        which = [names.index(r.steps[s].linear) for r in self._rounds]
        sel = passes.at(t + lat)
        return [select_tree(sel, {j: outs[which[j]][i] for j in range(len(which))}, outs[which[0]][i])
                for i in range(len(xs))], lat

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        xs = _split(self.i_state, spec.width, spec.field.width)
        passes = _Passes(m, self.i_pass)
        t = 0
        for s, step in enumerate(self._rounds[0].steps):
            if step.ark_before:
                xs, t = self._ark(m, xs, s, passes, t, f"s{s}_ark"), t + ARK_LATENCY
            xs, lat = self._sboxes(m, xs, s, passes, t, f"s{s}_sbox")
            t += lat
            xs, lat = self._linear(m, xs, s, passes, t, f"s{s}_lin")
            t += lat
            if step.ark_after:
                xs, t = self._ark(m, xs, s, passes, t, f"s{s}_ark2"), t + ARK_LATENCY
        assert t == self.latency
        m.d.comb += self.o_state.eq(Cat(*xs))
        return EnableInserter(self.en)(m)


class EdgeUnit(wiring.Component):
    """``ops`` in order on every state: "to_montgomery", "from_montgomery", or a linear layer's name."""

    def __init__(self, spec, ops):
        self._spec, self._ops = spec, tuple(ops)
        bits = spec.width * spec.field.width
        super().__init__({"en": In(1), "i_state": In(bits), "o_state": Out(bits)})

    @property
    def latency(self) -> int:
        lat = general_multiplier(self._spec.field).latency
        return sum(lat if op.endswith("montgomery") else linear_latency(self._spec.linear[op]) for op in self._ops)

    @property
    def multipliers(self) -> int:
        return sum(self._spec.width for op in self._ops if op.endswith("montgomery"))

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        p = spec.field.p
        xs = _split(self.i_state, spec.width, spec.field.width)
        kind = general_multiplier(spec.field)
        for k, op in enumerate(self._ops):
            if op.endswith("montgomery"):
                # the Montgomery unit gives a b / 2^32: b = 2^64 mod p puts a into the form, b = 1 takes it out
                b = (1 << 64) % p if op == "to_montgomery" else 1
                xs = [multiply(m, kind, self.en, x, b, f"e{k}_m{i}") for i, x in enumerate(xs)]
            else:
                xs = build_linear(m, spec.linear[op], xs, f"e{k}_{op}")
        m.d.comb += self.o_state.eq(Cat(*xs))
        return EnableInserter(self.en)(m)
