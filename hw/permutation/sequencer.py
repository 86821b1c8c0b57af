"""The folding sequencer: which slot of the round-unit ring holds a state, and on which pass.

A core folded k ways (rate 1/k) chains U = ceil(R / k) round units into a ring of T = their summed
latency cycles; a state enters unit 0 on pass 0, goes round k times (pass j: rounds j U .. j U + U - 1)
and leaves on its last pass at the output of unit e = (R - 1) mod U (the units after it do nothing on that
pass). The ring's T slots carry a tag each, (valid, pass), in a shift register beside the data
(``tags[t]``: the tag of the slot t enabled cycles past the ring's entrance; ``tags[0]`` is the entrance,
combinational). At the ring's end a valid slot not on its last pass goes round again (pass + 1);
otherwise the entrance takes the new state from the input stage, whose P cycles are accounted for by
looking at the slot that will reach the entrance when the new state does: ``tags[T - P]``. So a new
state is accepted whenever its slot will be free: one every k cycles on average, as many in flight as T.
At full rate (k = 1) nothing goes round and a state is taken every cycle.
"""

from __future__ import annotations

from amaranth.hdl import Mux, Signal

__all__ = ["Sequencer"]


class Sequencer:
    """Builds the tag ring into Module ``m`` (gated by the caller's EnableInserter).

    passes: k; ring: T; tap: the ring position the result leaves at; lead: P, the input stage's latency;
    ``feed_valid``: the input stage's output valid (a state reaching the entrance now)."""

    def __init__(self, m, passes: int, ring: int, tap: int, lead: int, feed_valid):
        if passes > 1 and lead > ring:
            raise ValueError(f"lead: the input stage ({lead}) is longer than the ring ({ring})")
        self.passes, self.ring, self.tap = passes, ring, tap
        self.pass_bits = max(1, (passes - 1).bit_length())
        self.valid = [Signal(name="slot_v0")]
        self.pass_ = [Signal(self.pass_bits, name="slot_p0")]
        for t in range(1, ring + 1):
            v, p = Signal(name=f"slot_v{t}"), Signal(self.pass_bits, name=f"slot_p{t}")   # no SRL: read at taps
            prev_v = self.valid[t - 1]
            if t == tap + 1:                       # the state leaving at the tap frees its slot
                prev_v = prev_v & ~self.leaving
            m.d.sync += [v.eq(prev_v), p.eq(self.pass_[t - 1])]
            self.valid.append(v)
            self.pass_.append(p)
            if t == tap:
                self.leaving = Signal(name="leaving")
                m.d.comb += self.leaving.eq(v & (p == passes - 1))
        if tap == 0:
            raise ValueError("tap: the result leaves after at least one unit")
        end_v, end_p = self.valid[ring], self.pass_[ring]
        self.again = Signal(name="again")
        m.d.comb += self.again.eq(end_v & (end_p != passes - 1) if passes > 1 else 0)
        m.d.comb += [self.valid[0].eq(self.again | feed_valid),
                     self.pass_[0].eq(Mux(self.again, end_p + 1, 0))]
        look = ring - lead
        self.free = Signal(name="slot_free")
        if passes == 1:
            m.d.comb += self.free.eq(1)
        else:
            m.d.comb += self.free.eq(~(self.valid[look] & (self.pass_[look] != passes - 1)))
