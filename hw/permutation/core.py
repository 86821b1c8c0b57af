# amaranth: UnusedElaboratable=no
"""PermutationCore: one pipelined permutation core for any hash the golden model describes, with a rate knob.

``PermutationCore(hash, rate=1)``: ``hash`` a name of hw.permutation.spec.HASHES (the golden model's
registry names), ``rate`` the permutations per cycle, 1/k for an integer k >= 1 (1, "1/2", 0.25,
Fraction(1, 7)). The R rounds fold onto U = ceil(R / k) round units (hw/permutation/rounds.py) that a
state goes round k times (hw/permutation/sequencer.py); the k = R core has one unit. A 31-bit field's
state is taken into Montgomery form at the input and out of it at the output (one general multiply per
element each way); Poseidon2's input linear layer is the input stage's too.

Streams (amaranth.lib.stream, valid/ready): ``i`` takes a state (width elements, canonical, element 0 in
the low bits), ``o`` gives the permuted state in the order taken. A state is taken when the slot it will
ride is free: at full rate every cycle, folded one every k cycles on average. ``o.valid`` stays until
``o.ready``; while the output waits, the whole core holds (one clock enable, ``en = ~o.valid | o.ready``).

Published: ``latency`` (cycles from a state taken to its result valid, with ``o.ready`` high),
``permutations_per_cycle``, ``general_multiplies`` (per permutation, counted from the round units and
what they do: the model's count plus the Montgomery conversions), ``multipliers`` (units instantiated),
``dsp_tiles`` (DSP48E2: units x the kind's tiles), ``units``, ``passes`` and ``model(states)``: the golden
model's permutation (bit-exact by definition; the benches hold the hardware to it).
"""

from __future__ import annotations

from fractions import Fraction

from amaranth.hdl import Cat, EnableInserter, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.model.hash import permutation as model_permutation
from nantucket.hw.multiplier import general_multiplier
from nantucket.hw.arith import pipe
from nantucket.hw.permutation.rounds import EdgeUnit, RoundUnit
from nantucket.hw.permutation.sequencer import Sequencer
from nantucket.hw.permutation.spec import spec_of

__all__ = ["PermutationCore", "parse_rate", "core_part"]


def parse_rate(rate) -> int:
    """k for a rate of 1/k (an int, float, Fraction or a string "1/k"); a ValueError otherwise."""
    try:
        r = Fraction(rate) if not isinstance(rate, str) else Fraction(rate.strip())
    except (ValueError, TypeError, ZeroDivisionError):
        raise ValueError(f"rate: expected 1/k permutations per cycle, got {rate!r}") from None
    if r <= 0 or r > 1 or r.numerator != 1:
        raise ValueError(f"rate: expected 1/k for an integer k >= 1, got {rate!r}")
    return r.denominator


class PermutationCore(wiring.Component):
    """See the module docstring."""

    def __init__(self, hash: str = "poseidon2-koalabear-16", rate=1):
        self._spec = spec = spec_of(hash)
        k = parse_rate(rate)
        rounds = len(spec.rounds)
        if k > rounds:
            raise ValueError(f"rate: {hash} has {rounds} rounds; the slowest core is rate 1/{rounds}")
        self._k, self._u = k, -(-rounds // k)
        pass_bits = max(1, (k - 1).bit_length())
        self._units = [RoundUnit(spec, [spec.rounds[j * self._u + u] for j in range(k) if j * self._u + u < rounds],
                                 pass_bits) for u in range(self._u)]
        head = (["to_montgomery"] if spec.montgomery else []) + ([spec.input_linear] if spec.input_linear else [])
        self._head = EdgeUnit(spec, head) if head else None
        self._tail = EdgeUnit(spec, ["from_montgomery"]) if spec.montgomery else None
        bits = spec.width * spec.field.width
        super().__init__({"i": In(stream.Signature(bits)), "o": Out(stream.Signature(bits))})

    # -- published facts --------------------------------------------------------------------------
    @property
    def hash(self) -> str:
        return self._spec.name

    @property
    def width(self) -> int:
        return self._spec.width

    @property
    def element_bits(self) -> int:
        return self._spec.field.width

    @property
    def passes(self) -> int:
        return self._k

    @property
    def units(self) -> int:
        return self._u

    @property
    def permutations_per_cycle(self) -> float:
        return 1 / self._k

    @property
    def ring_latency(self) -> int:
        return sum(u.latency for u in self._units)

    @property
    def _tap(self) -> int:
        last = (len(self._spec.rounds) - 1) % self._u
        return sum(u.latency for u in self._units[:last + 1])

    @property
    def latency(self) -> int:
        head = self._head.latency if self._head else 0
        tail = self._tail.latency if self._tail else 0
        return head + (self._k - 1) * self.ring_latency + self._tap + tail

    @property
    def multipliers(self) -> int:
        return sum(u.multipliers for u in self._units) + sum(e.multipliers for e in (self._head, self._tail) if e)

    @property
    def general_multiplies(self) -> int:
        """Per permutation: the model's S-box multiplies (by this core's chains) plus the conversions."""
        convert = 2 * self._spec.width if self._spec.montgomery else 0
        return model_permutation(self._spec.name).general_multiplies + convert

    @property
    def dsp_tiles(self) -> int:
        return self.multipliers * general_multiplier(self._spec.field).dsp_tiles

    @property
    def round_kinds(self) -> list:
        return ["+".join(u.kinds) for u in self._units]

    def model(self, states):
        """The golden model's permutation of ``states`` (shape (..., width))."""
        return model_permutation(self._spec.name).permute(states)

    def round_unit(self, index: int) -> RoundUnit:
        """Round unit ``index`` (for per-unit synthesis)."""
        return self._units[index]

    def part(self, which):
        """A part of the core on its own: a round unit by index (an int or its digits), "head" (the input
        stage) or "tail" (the output stage); a ValueError for one this core does not have."""
        if which in ("head", "tail"):
            unit = self._head if which == "head" else self._tail
        else:
            try:
                unit = self._units[int(which)] if 0 <= int(which) < self._u else None
            except (TypeError, ValueError):
                unit = None
        if unit is None:
            raise ValueError(f"unit: {self.hash} at rate 1/{self._k} has round units 0 .. {self._u - 1}"
                             f"{', head' if self._head else ''}{', tail' if self._tail else ''}; got {which!r}")
        return unit

    def unit_groups(self) -> list:
        """(first unit index, count) per kind mix of the round units, in order (units of one mix differ only
        in their constants: per-unit synthesis measures the first and counts the rest alike)."""
        groups: dict = {}
        for n, unit in enumerate(self._units):
            key = (unit.kinds, unit.rounds_done)
            first, count = groups.get(key, (n, 0))
            groups[key] = (first, count + 1)
        return list(groups.values())

    # -- hardware ---------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        gated = Module()
        en = Signal(name="en")
        m.d.comb += en.eq(~self.o.valid | self.o.ready)
        lead = self._head.latency if self._head else 0
        feed_state, feed_valid = self.i.payload, self.i.valid & self.i.ready
        if self._head:
            m.submodules.head = self._head
            m.d.comb += [self._head.en.eq(en), self._head.i_state.eq(self.i.payload)]
            feed_state = self._head.o_state
            feed_valid = pipe(gated, feed_valid, lead, "head_valid", reset_less=False)
        seq = Sequencer(gated, self._k, self.ring_latency, self._tap, lead, feed_valid)
        m.d.comb += self.i.ready.eq(en & seq.free)
        state = Mux(seq.again, self._units[-1].o_state, feed_state)
        t = 0
        tapped = None
        for n, unit in enumerate(self._units):
            m.submodules[f"round{n}"] = unit
            m.d.comb += [unit.en.eq(en), unit.i_state.eq(state), unit.i_pass.eq(seq.pass_[t])]
            state, t = unit.o_state, t + unit.latency
            if t == self._tap:
                tapped = state
        out_valid, out_state = seq.leaving, tapped
        if self._tail:
            m.submodules.tail = self._tail
            m.d.comb += [self._tail.en.eq(en), self._tail.i_state.eq(tapped)]
            out_valid = pipe(gated, out_valid, self._tail.latency, "tail_valid", reset_less=False)
            out_state = self._tail.o_state
        m.d.comb += [self.o.valid.eq(out_valid), self.o.payload.eq(out_state)]
        m.submodules.sequencer = EnableInserter(en)(gated)
        return m


def core_part(hash: str, rate, which):
    """One part of the core for ``hash`` at ``rate`` on its own (PermutationCore.part); the core around it
    is built here and never elaborated (this file's first line keeps Amaranth quiet about it)."""
    return PermutationCore(hash, rate).part(which)
