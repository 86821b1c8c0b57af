# amaranth: UnusedElaboratable=no
"""What every unit of the coset factor generator is built from, and the one-hot state helper they share."""

from contextlib import contextmanager

from amaranth.hdl import Module, Signal

from nantucket.hw.model import coset as coset_model
from nantucket.hw.model.params import BuildParams
from nantucket.hw.multiplier import general_multiplier

__all__ = ["CosetBuild", "OneHot"]


class CosetBuild:
    """The build a generator is made for: its parameters, the field's general multiplier (whose words every
    chain word, table entry, factor and frame word is kept as) and the lanes' offsets to the multipliers
    where the factors apply."""

    def __init__(self, params: BuildParams, output_offsets: dict[int, int], input_offset: int):
        self.params = params
        self.field = params.prime_field
        self.general = general_multiplier(self.field)
        # the multiplier's word of 1 (Montgomery: 2^32 mod p); encode(v) = v * one for such a multiplier,
        # so a * encode(one) (mod p) is a's word: the chain job's first round encodes the shift with it
        self.one = self.general.encode(1)
        self.offsets = {f: int(output_offsets[f]) for f in range(2, params.log_core + 1)}
        self.input_offset = input_offset

    @property
    def k(self) -> int:
        return self.params.log_core

    @property
    def nmax(self) -> int:
        return self.params.max_log_n

    @property
    def lanes(self) -> int:
        return self.params.lanes

    @property
    def width(self) -> int:
        return self.field.width

    @property
    def mul_latency(self) -> int:
        """Cycles of the general multiplier, operands to product."""
        return self.general.latency

    @property
    def encodes(self) -> bool:
        """True when the multiplier's words are not the field values (Montgomery form): tables and chain
        words are then kept as words, the run-time shift encoded first (one more chain round)."""
        return self.one != 1

    def word(self, value: int) -> int:
        """The multiplier's word of a canonical field value (the value itself in Goldilocks)."""
        return self.general.encode(int(value))

    def offset(self, log_frame: int, inverse: bool) -> int:
        """Enabled cycles from a lane's input to the output scale's multipliers where the stream applies
        (frame size f): the head's ``input_offset`` forward, the tail's ``output_offsets[f]`` inverse. The
        stream's position on enabled cycle c of a pass is (c - offset) mod 2^(f-1); the frame words run one
        enabled cycle ahead of it (the output scale takes them a cycle early)."""
        return self.offsets[log_frame] if inverse else self.input_offset

    def element_cycles(self, log_n: int) -> int:
        return coset_model.element_cycles(self.params, log_n)


class OneHot:
    """A state machine's states as one flag register each: a state's decode is its flag (the binary state
    of Amaranth's FSM, decoded in front of the counters it steers, was two LUT levels of 5 and 6).
    ``states[name]`` is the flag (created with the machine, so other units may read it before it is
    elaborated); inside ``with states.during(m, name):`` (the state's block, in the module that owns the
    flags), ``goto(other)`` sets the other's flag and clears this one at the next edge (only these two: a
    flag's next value then depends on the transitions into and out of its own state)."""

    def __init__(self, prefix: str, names: tuple, init: str):
        self._m, self._current = None, None
        self.flags = {n: Signal(name=f"{prefix}_{n.lower()}", init=int(n == init)) for n in names}

    def __getitem__(self, name: str) -> Signal:
        return self.flags[name]

    @contextmanager
    def during(self, m: Module, name: str):
        with m.If(self.flags[name]):
            self._m, self._current = m, name
            try:
                yield
            finally:
                self._m, self._current = None, None

    def goto(self, name: str) -> None:
        assert self._current is not None and self._current != name, "goto outside a state's block"
        self._m.d.sync += [self.flags[self._current].eq(0), self.flags[name].eq(1)]
