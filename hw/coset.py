# amaranth: UnusedElaboratable=no
"""Coset transforms in the engine: the one shared generator of the coset's factors.

The math (hw/model/coset.py): each lane applies the shift's powers on its output scale's multipliers
(hw/output_scale.py, placed at the lane's head forward, its tail inverse), once per point per pass, as
S * K: S the pass's *stream*, the same pair for every lane on a cycle, b^i0 and b^i1 at the positions
(i0, i1) of the pair (b = G = g^N2 in forward pass 1, H = h^N1 in inverse pass 2), and K each lane's
*frame word*, constant over its frame (g^n2 forward, h^k1 / N inverse); forward pass 2 applies the
four-step factor at its head instead and takes the frame's row as its frame word. No lane holds a
multiplier for the coset.

``CosetFactors`` (one per engine, four multiply/reduce units) computes both from the shift g:

- in the background, whenever the shift differs from the one it last worked on: h = g^(p-2) by
  right-to-left square-and-multiply on one unit, keeping the squares g^(2^i), then h^(2^i), i < 2k
  (the "chains", 4k words); (64 + 2k) rounds of 14 cycles (1,232 at k = 12), once per shift;
- at the start of a streaming pass (forward pass 1, inverse pass 2): two tables, LO[j] = b^j (j < 2^s)
  and HI[i] = b^(i 2^s) (i < 2^(f-s)), s = floor(f/2), built level by level by doubling from the chain words b^(2^t) (one unit per table;
  a level starts as soon as the entries it reads are written: 110 cycles at f = 12);
  one set of tables per direction, kept while the shift stays: a pass with the same shift, direction and
  n as the last one in its set reuses them;
- then, one enabled cycle at a time, the factors b^i = HI[i >> s] * LO[i & (2^s - 1)] of the two positions
  the lanes' output scales meet (the lane input order forward, offset by the input register; the output
  order inverse, offset by the lanes' latency to their output scales), the same two units, latency 13;
- the frame words, on the fourth unit: at the pass start K0_l = c b^l for the L lanes (c = 1 forward,
  1/N inverse; log2 L doubling levels from the chain words b^(2^t), b = g or h), which are round 0's;
  while round g streams, round g + 1's, K_l x b^L, L products (``frame_word_job_cycles``), swapped in at
  the frame edge one enabled cycle ahead of the multipliers (the output scale takes its frame word a
  cycle early); a round shorter than the job (frames of 2^(f-1) < L + 14 cycles) waits for it
  (``frame_word_stall_cycles``). Forward pass 2's rows are counted, nothing computed.
  It reports ``ready`` once the first factors and words are at its outputs; the engine holds its first
  payload until then.

The stream repeats with every frame, so a batch of transforms needs nothing more, unless the run has a
``row_step`` s > 1 (element r of the batch has the shift g s^r, hw/model/coset.py "Row steps"):

- the chain job runs a second time, for s (s^(2^i) and (s^-1)^(2^i), another ``chain_cycles``, in the
  background whenever s changes, like the shift's);
- a stepping pass builds a third set of tables, the step's (LOc, HIc, from s's chain words: another
  ``build_cycles(f)``), after the shift's;
- a stepping pass also doubles the step's lane powers S_l = s'^l with K0 (twice the set-up products); at
  an element start the round's job is K0_l x S_l (the next element's K0, kept) and b^L x s'^L;
- element 0 streams from the shift's tables; while element r streams, the chain unit (idle once the
  chains are there) computes element r + 1's tables into one of two work sets, LO[j] x LOc[j] and HI[i] x
  HIc[i], one product a cycle (``update_cycles(f)``: 2^s + 2^(f-s) products, its reads and the
  multiplier's latency); the stream changes sets where the next element starts (every
  ``element_cycles`` = 2^n / 2L enabled cycles; inverse: offset by the lanes' latency to their output
  multipliers). Where the next set is not ready yet (an element shorter than the update), ``ready``
  falls and the engine waits: ``step_stall_cycles(f, n)`` a boundary, 0 from 2^n >= 2L x
  update_cycles(f). No multiplier is added; the tables hold five sets (two directions, the step, two work
  sets) instead of two.

Fields whose multiplier takes encoded words (Montgomery form in BabyBear and KoalaBear, hw/multiplier.py):
every chain word, table entry, factor and frame word is kept as the multiplier's word (a product of two words is the
word of the product), so the output scale's products are canonical field values. The shift arrives as a
canonical value: the chain job's first round multiplies it by encode(encode(1)) (2^64 mod p), which gives
its word; tables start from encode(1). The figures above are Goldilocks'; a 31-bit field's exponent has
31 bits and a round is 11 cycles ((1 + 31 + 2k) rounds).
"""

import operator
from contextlib import contextmanager
from functools import reduce

import numpy as np
from amaranth.hdl import Array, C, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import pipe
from nantucket.hw.model import coset as coset_model
from nantucket.hw.model.params import BuildParams
from nantucket.hw.run import run_layout
from nantucket.hw.shared import share
from nantucket.hw.multiplier import general_multiplier

# The file's first line: the multipliers built here are emitted once and instantiated (hw/shared.py), so
# those the shared modules stand for are never elaborated; the warning would only be noise.

__all__ = ["CosetFactors"]


class _OneHot:
    """A state machine's states as one flag register each: a state's decode is its flag (the binary state
    of Amaranth's FSM, decoded in front of the counters it steers, was two LUT levels of 5 and 6, issue 28).
    ``states[name]`` is the flag; inside ``with states.during(name):`` (the state's block), ``goto(other)``
    sets the other's flag and clears this one at the next edge (only these two: a flag's next value then
    depends on the transitions into and out of its own state)."""

    def __init__(self, m: Module, prefix: str, names: tuple, init: str):
        self._m, self._current = m, None
        self.flags = {n: Signal(name=f"{prefix}_{n.lower()}", init=int(n == init)) for n in names}

    def __getitem__(self, name: str) -> Signal:
        return self.flags[name]

    @contextmanager
    def during(self, name: str):
        with self._m.If(self.flags[name]):
            self._current = name
            try:
                yield
            finally:
                self._current = None

    def goto(self, name: str) -> None:
        assert self._current is not None and self._current != name, "goto outside a state's block"
        self._m.d.sync += [self.flags[self._current].eq(0), self.flags[name].eq(1)]


class CosetFactors(wiring.Component):
    """The engine's coset factor generator (module docstring).

    Ports:
      start      pulse: a pass starts (the engine's restart); ``pass2`` and the run's fields are taken
      run        the run (hw.run.run_layout): ``coset`` 1: a coset pass (else ``ready`` stays 1 and the
                 factors are unused); ``inverse`` 0: factors for the lane inputs, 1: the outputs;
                 ``log_n``: N = 2^n; ``coset_shift``: g, stable while a pass runs (any value while
                 idle: the chains follow it)
      pass2      the pass
      en         the lanes' enable: the factor stream advances with it once ready
      ready      1 when no coset pass is starting, or the first factors of the pass are at the output
      o_f0, o_f1 the factors of the pair at the lanes' multipliers on this enabled cycle
    ``output_offsets[f]``: enabled cycles from a lane's input to its output multipliers at frame size f
    (the lane's published figure), so that inverse factors meet the outputs they belong to.
    Properties: latency, mul_units, dsp_tiles, chain_cycles; methods level_cycles(t, last),
    build_cycles(f), setup_cycles(f, cached), model(shift, log_n, pass_index, inverse, cycles).
    """

    def __init__(self, params: BuildParams, output_offsets: dict[int, int], input_offset: int = 1):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        k = params.log_core
        missing = [f for f in range(2, k + 1) if f not in output_offsets]
        if missing:
            raise ValueError(f"output_offsets: no offset for frame sizes {missing}")
        self._params = params
        self._field = field = params.prime_field
        self._general = general_multiplier(field)
        # the multiplier's word of 1 (Montgomery: 2^32 mod p); encode(v) = v * one for such a multiplier,
        # so a * encode(one) (mod p) is a's word: the chain job's first round encodes the shift with it
        self._one = self._general.encode(1)
        self._offsets = {f: int(output_offsets[f]) for f in range(2, k + 1)}
        if not isinstance(input_offset, int) or input_offset < 1:
            raise ValueError(f"input_offset: must be an int >= 1, got {input_offset!r}")
        self._input_offset = input_offset
        super().__init__({
            "start": In(1), "pass2": In(1), "run": In(run_layout(params)), "en": In(1),
            "ready": Out(1), "o_f0": Out(field.width), "o_f1": Out(field.width),
            "o_k": Out(unsigned(field.width)).array(params.lanes),
        })

    @property
    def ROUND(self) -> int:
        """Cycles of a chain round: issue the square and the product, take both."""
        return self._general.latency + 2

    @property
    def encodes(self) -> bool:
        """True when the multiplier's words are not the field values (Montgomery form): tables and chain
        words are then kept as words, the run-time shift encoded first (one more chain round)."""
        return self._one != 1

    @property
    def exponent_rounds(self) -> int:
        """Rounds of h = g^(p-2): the exponent's bits (64 for Goldilocks)."""
        return coset_model.inverse_exponent(self._field).bit_length()

    @property
    def latency(self) -> int:
        """Enabled cycles from a stream position to its factors: table read, multiply."""
        return 1 + self._general.latency

    @property
    def mul_units(self) -> int:
        return 4

    def offset(self, log_frame: int, inverse: bool) -> int:
        """Enabled cycles from a lane's input to the output scale's multipliers where the stream applies
        (frame size f): the head's ``input_offset`` forward, the tail's ``output_offsets[f]`` inverse. The
        stream's position on enabled cycle c of a pass is (c - offset) mod 2^(f-1); the frame words run one
        enabled cycle ahead of it (the output scale takes them a cycle early)."""
        return self._offsets[log_frame] if inverse else self._input_offset

    #: The frame words' operand register in front of their unit (cycles a product takes more).
    WORD_ISSUE = 1

    def word_lead(self, log_frame: int, inverse: bool) -> int:
        """Frame edges (enabled cycles where the next pair starts a frame) before round 0's frames reach
        the multipliers: the word generator lets this many pass before its first swap."""
        period = 1 << (log_frame - 1)
        return -(-(self.offset(log_frame, inverse) - 1) // period)

    @property
    def word_levels(self) -> int:
        """Doubling levels of the frame words' set-up: log2 L."""
        return (self._params.lanes - 1).bit_length()

    def frame_word_setup_cycles(self, stepping: bool = False, cached: bool = False) -> int:
        """``ready`` waits at least this many cycles after a streaming pass's ``start`` for the frame words
        (chains already there): latch, two to check, the doubling levels (level t: 2^t products, twice with a row
        step, and the multiplier's latency; none when ``cached``: the last streaming pass had the same
        shift, direction and n, and no row step), one cycle to load the words of round 0."""
        if cached and not stepping:
            return 4
        lat = self._general.latency + self.WORD_ISSUE
        return 4 + sum((1 << t) * (1 + int(stepping)) + lat for t in range(self.word_levels))

    def frame_word_job_cycles(self, element_start: bool = False, stepping: bool = False) -> int:
        """Cycles from a round's swap to the next round's words being ready: L products (one more at an
        element start with a row step, b^L x s^L), the multiplier's latency, a cycle to mark them."""
        return self._params.lanes + int(element_start and stepping) + self._general.latency + self.WORD_ISSUE + 1

    @property
    def dsp_tiles(self) -> int:
        return self.mul_units * self._general.dsp_tiles

    @property
    def chain_cycles(self) -> int:
        """Cycles of the background job for a new shift: the exponent rounds (p - 2 has 64 bits in
        Goldilocks), 2k rounds of h's squares (and one round to encode the shift, ``encodes``)."""
        return (self.exponent_rounds + self._params.max_log_n + int(self.encodes)) * self.ROUND + 3

    def level_cycles(self, level: int, last: bool) -> int:
        """Cycles of table level t: it issues 2^t products (reading entry j on its step j + 1; the
        multipliers take the entry and the level's chain word one cycle later, so the level lasts at
        least to step 2^t + 1: ending it on its last issue gave that product the next level's word). The
        next level starts once its reads of this level's entries find them written (lat + 3 cycles
        after they were read), the last level waits for all of them."""
        written = self._general.latency + 3
        if last:
            return (1 << level) - 1 + written
        return max((1 << level) + 2, written - (1 << level))

    def build_cycles(self, log_frame: int) -> int:
        """Cycles to build the two tables of a frame of 2^f points (ceil(f/2) levels)."""
        levels = log_frame - log_frame // 2
        return sum(self.level_cycles(t, t == levels - 1) for t in range(levels))

    def setup_cycles(self, log_frame: int, cached: bool = False, stepping: bool = False,
                     words_cached: bool | None = None) -> int:
        """With the chains already computed for the shift, ``ready`` is 1 from this many cycles after the
        cycle of a streaming pass's ``start`` on: the later of the stream (one cycle to latch, two to check
        the chains, the tables: none when ``cached``, this pass's set built for the same shift, direction
        and n; with a row step also the step's set; priming the stream) and the frame words
        (``frame_word_setup_cycles``; ``words_cached``, default ``cached``: the last streaming pass had the
        same shift, direction and n)."""
        tables = (0 if cached else self.build_cycles(log_frame)) + (self.build_cycles(log_frame) if stepping else 0)
        words_cached = cached if words_cached is None else words_cached
        return max(3 + tables + self.latency, self.frame_word_setup_cycles(stepping, words_cached))

    def update_cycles(self, log_frame: int) -> int:
        """Cycles from an element's start (its first stream read) to the next element's tables being
        readable, in a stepping pass: the update's products (hw.model.coset.update_products), two cycles to
        start, a read, the multiplier's latency and a cycle to mark the set ready."""
        return coset_model.update_products(log_frame) + self._general.latency + 4

    def new_word_cycles(self, log_frame: int) -> int:
        """At most how many cycles a coset call whose shift or row step is new spends beyond the same call
        on a kept shift: the chain job, the shift's two passes' table sets and a stepping call's two step
        sets (element stalls not included: ``step_stall_cycles``)."""
        return self.chain_cycles + 2 * self.build_cycles(log_frame)

    def step_stall_cycles(self, log_frame: int, log_n: int) -> int:
        """Cycles ``ready`` is low at each element boundary of a stepping pass (no other stalls): the
        update's cycles past the element's."""
        return max(0, self.update_cycles(log_frame) - coset_model.element_cycles(self._params, log_n))

    def model(self, shift: int, log_n: int, pass_index: int, inverse: bool, cycles: int, *,
              row_step: int = 0, batch: int = 1) -> list[tuple[int, int]]:
        """Bit-exact reference: the factor pairs ``o_f0``, ``o_f1`` on the first ``cycles`` enabled cycles
        from ``ready`` on (hw.model.coset.factor_stream, started where the lanes' multipliers are), as the
        multiplier's words (``encode``: the values themselves in Goldilocks). With ``row_step`` s > 1 the
        cycles of element r (every ``element_cycles``, inverse: from the lanes' output offset on; the last
        element's stream after it) carry the stream of g s^r."""
        f = coset_model.pass_frame(log_n, pass_index)
        offset = self.offset(f, inverse)
        each = coset_model.element_cycles(self._params, log_n)
        elements = max(batch, 1) if row_step > 1 else 1
        streams = [coset_model.factor_stream(coset_model.element_shift(shift, row_step, e, self._field), log_n,
                                             pass_index, inverse, self._field) for e in range(elements)]
        period = streams[0].shape[0]
        first = (-offset) % period
        word = self._general.encode
        out = []
        for t in range(cycles):
            e = min(elements - 1, max(0, t - offset) // each)
            pair = streams[e][(first + t) % period]
            out.append((word(int(pair[0])), word(int(pair[1]))))
        return out

    def frame_word_model(self, shift: int, log_n: int, pass_index: int, inverse: bool, cycles: int, *,
                         row_step: int = 0, batch: int = 1) -> list[tuple[int, ...]]:
        """Bit-exact reference: ``o_k`` (every lane's word) on the first ``cycles`` enabled cycles of a coset
        pass (hw.model.coset.frame_words: multiplier words of the "coset" kind, indices of the "row" kind;
        None for a pass without words). Round g's words are out from enabled cycle offset - 1 + g 2^(f-1)
        (round 0 from the start) to the pass's last round."""
        words = coset_model.frame_words(self._params, shift, log_n, pass_index, inverse, batch, row_step)
        if words is None:
            return None
        if coset_model.frame_word_kind(pass_index, inverse) == "coset":
            words = np.vectorize(self._general.encode, otypes=[object])(words)
        f = coset_model.pass_frame(log_n, pass_index)
        period, first = 1 << (f - 1), self.offset(f, inverse) - 1
        rounds = words.shape[0]
        return [tuple(int(w) for w in words[min(rounds - 1, max(0, (c - first) // period))]) for c in range(cycles)]

    def frame_word_stall_cycles(self, log_n: int, pass_index: int, inverse: bool, batch: int = 1,
                                cached: bool = False, first: int | None = None) -> int:
        """Cycles ``ready`` is low in a streaming pass without a row step and with no other stalls, after
        it first rose: a swap (the round's first pair at the multipliers, one enabled cycle ahead) waits
        for the job computing its words, which starts at the previous swap (the first one where round 0's
        words are out) and takes ``frame_word_job_cycles``: rounds of 2^(f-1) cycles shorter than a job. ``first``: the pass's
        first enabled cycle, in cycles from start (default: when ``ready`` rises)."""
        if not coset_model.streams(pass_index, inverse):
            return 0
        f = coset_model.pass_frame(log_n, pass_index)
        period = 1 << (f - 1)
        per = (1 << (log_n - f)) // self._params.lanes          # rounds an element
        ready = self.setup_cycles(f, cached) if first is None else first     # cycles from start, as below
        swap = ready + self.offset(f, inverse) - 1 + period - 1  # round 1's, with no stall
        done = self.frame_word_setup_cycles(cached=cached) - 1 + self.frame_word_job_cycles(per == 1)
        total = 0
        for g in range(1, max(batch, 1) * per):
            actual = max(swap, done)
            total += actual - swap
            done = actual + self.frame_word_job_cycles((g + 1) % per == 0)
            swap = actual + period
        return total

    #: Table sets: 0 and 1 the passes' (the shift's, kept while it stays), the step's, two work sets.
    STEP_SET, WORK_SETS = 2, (3, 4)

    def elaborate(self, platform):
        m = Module()
        k = self._params.log_core
        nmax = self._params.max_log_n
        lat = self._general.latency
        units = [self._general.unit() for _ in range(4)]
        unit_a, unit_b, unit_c, unit_w = units
        for name, u in zip(("unit_lo", "unit_hi", "unit_chain", "unit_words"), units):
            m.submodules[name] = share(u)

        self._chain_unit_terms = []         # (select, a, b): the chain unit's users, one at a time
        chains, job, chain, new_shift, chain_same, chain_fresh, step_on = self._chain_job(m, unit_c)

        # -- the pass: latch, wait for the chains, build the tables, prime the stream, stream
        # coset_q: this pass streams (forward pass 1, inverse pass 2); rows_q: forward pass 2 (row words)
        coset_q, inv_q, rows_q = Signal(name="coset_q"), Signal(name="inverse_q"), Signal(name="rows_q")
        # stepping: a coset run with a row step s > 1, from the chain job's registered parts of the step (the
        # step's 63-bit OR latched at the start was 6 LUT levels, issue 28): ``stepping_now`` in the cycle
        # after the start (the set-up's first decisions), ``stepping`` registered from it after that
        stepping, stepping_now, coset_run = Signal(name="stepping"), Signal(name="stepping_now"), Signal(name="coset_run")
        m.d.comb += stepping_now.eq(coset_run & step_on)
        m.d.sync += stepping.eq(stepping_now)
        table_set, log_n_q = Signal(name="table_set"), Signal(range(nmax + 1), name="log_n_q")
        frame = Signal(range(k + 1), name="frame", init=k)
        offset = Signal(range(nmax + 1), name="chain_offset")
        batch_q = Signal(len(self.run.batch), name="batch_q")
        n1, n2 = (self.run.log_n + 1) >> 1, self.run.log_n >> 1
        streams_now = self.run.coset & (self.pass2 == self.run.inverse)
        with m.If(self.start):
            m.d.sync += [coset_q.eq(streams_now), inv_q.eq(self.run.inverse), table_set.eq(self.pass2),
                         rows_q.eq(self.run.coset & ~self.run.inverse & self.pass2),
                         log_n_q.eq(self.run.log_n),
                         coset_run.eq(self.run.coset),
                         batch_q.eq(Mux(self.run.batch == 0, 1, self.run.batch)),
                         frame.eq(Mux(self.pass2, n2, n1)),
                         offset.eq(Mux(self.run.inverse, Mux(self.pass2, n1, 0), Mux(self.pass2, 0, n2)))]
        # two sets of tables, one per pass, each kept with the (inverse, n) it was built for until the
        # shift changes: a run repeated with the same arguments builds nothing
        sets = 5
        set_bits = 3
        lo_bits, hi_bits = max(k // 2, 1), max(k - k // 2, 1)
        tag = Signal(2 + len(log_n_q), name="table_tag")
        m.d.comb += tag.eq(Cat(log_n_q, inv_q, 1))
        tags = [Signal(len(tag), name=f"tags{i}") for i in range(2)]
        # whether this pass's set holds its tables, registered from the latched fields (the tag compare in
        # front of the pass FSM was 7 LUT levels, issue 28): valid from the cycle after the latch, as WAIT
        # decides no earlier (``chains_ok``); a new shift drops it
        # (per set, registered: the select and compare in one were 5 LUT levels, issue 28; valid from the
        # second cycle after the latch, when WAIT may first decide)
        hits = [Signal(name=f"tag{i}_hit") for i in range(2)]
        m.d.sync += [hit.eq(t == tag) for hit, t in zip(hits, tags)]
        cached = Signal(name="cached")
        m.d.comb += cached.eq(Mux(table_set, hits[1], hits[0]))

        width = self._field.width
        lo = Memory(shape=unsigned(width), depth=sets << lo_bits, init=[])
        hi = Memory(shape=unsigned(width), depth=sets << hi_bits, init=[])
        m.submodules.lo, m.submodules.hi = lo, hi
        lo_w, hi_w = lo.write_port(), hi.write_port()
        # ports 0, 1: the stream (port 0 also the build's); 2, 3: the element update (current, step)
        lo_r = [lo.read_port(domain="sync") for _ in range(4)]
        hi_r = [hi.read_port(domain="sync") for _ in range(4)]

        level = Signal(range(k + 1), name="level")
        step = Signal(range((1 << k) + lat + 3), name="level_cycle")
        prime = Signal(range(self.latency + 1), name="prime_cycle")
        pos = Signal(max(k - 1, 1), name="position")
        building, stream_en, init = Signal(name="building"), Signal(name="stream_en"), Signal(name="init")
        build_step = Signal(name="build_step")          # building the step's tables (set STEP_SET)
        levels_lo, levels_hi = frame >> 1, frame - (frame >> 1)

        # -- row steps: the element the stream reads, the next one's set, the update
        cur = Signal(set_bits, name="element_set")
        # the next element's set and the one after it, registers that trade places at each edge (from a
        # compare of cur in front of the update's destination it was 5 LUT levels, issue 28; 0 cycles)
        nxt, nxt_other = Signal(set_bits, name="next_set"), Signal(set_bits, name="next_set_other")
        each_max = (1 << (nmax - 1)) // self._params.lanes + max(max(self._offsets.values()), self._input_offset) + 1
        left = Signal(range(each_max + 1), name="element_left")     # stream reads before the next element
        left_first = Signal(len(left), name="element_left_first")
        remaining = Signal(len(batch_q), name="elements_left")       # elements after the current one
        nxt_ready = Signal(name="next_ready")
        at_edge, stall = Signal(name="at_edge"), Signal(name="step_stall")
        # left == 0, remaining != 0 and remaining > 1 kept as flags beside their counters: compared on the
        # way to the stream's enable and the update's start they were 8 LUT levels (issue 28; 0 cycles)
        left_zero, rem_nz, rem_gt1 = Signal(name="left_zero"), Signal(name="more_elements"), \
            Signal(name="more_elements_2")
        # at_edge = stepping & left_zero & rem_nz, kept as a register beside them (cleared at the start:
        # stepping is registered later; in front of the edge's registers it was 5 LUT levels, issue 28)
        m.d.comb += stall.eq(at_edge & ~nxt_ready)
        upd_start, upd_src, upd_dst = Signal(name="update_start"), Signal(set_bits, name="update_src"), \
            Signal(set_bits, name="update_dst")
        lb = (self._params.lanes - 1).bit_length()
        # an element's reads (2^(n - 1 - log2 L), decoded from n at the start), less one, and whether it is
        # one, as registers (the shift and decrement in front of the element counter were 5 LUT levels,
        # issue 28; valid from the second cycle after the start, when WAIT may first decide)
        each, each_m1, each_one = Signal(len(left), name="element_cycles"), Signal(len(left), name="element_cycles_less1"), \
            Signal(name="element_cycles_one")
        with m.If(self.start):              # (the size decoded at the start: valid with the latched fields)
            m.d.sync += each.eq(Cat(*(self.run.log_n == i + 1 + lb for i in range(len(left)))))
        m.d.sync += [each_m1.eq(each - 1), each_one.eq(each == 1)]

        # STREAM is also the idle state: outside a coset pass the factors are not used
        # from the chain job's registered compares of each key with its operand (the 64-bit compares in front
        # of the pass's set-up were 8 LUT levels, issue 28): the run is stable from the start on, so in WAIT
        # they are of this pass's shift and step (not in the cycle after a job began: ``fresh``)
        # and registered once more, cleared at the start (so WAIT's first decision comes a cycle after the
        # latched fields and compares are this pass's: +1 cycle of set-up, ``setup_cycles``)
        chains_ok = Signal(name="chains_ok")
        with m.If(self.start):
            m.d.sync += chains_ok.eq(0)
        with m.Else():
            m.d.sync += chains_ok.eq(~job & ~chain_fresh & chains[0].ok & chain_same[0]
                                     & (~stepping_now | (chains[1].ok & chain_same[1])))
        # the table build's level bookkeeping in registers: the last level (from the latched frame size),
        # the levels left, whether this is the last, and this level's last cycle (compared with ``level``
        # through the frame size's subtraction it was 5 LUT levels and a carry chain, issue 28; 0 cycles)
        last_level = Signal(range(k + 1), name="last_level")
        first_build = Signal(name="first_build_cycle")      # level 0, step 0: the table's entry 0 is written
        levels_left = Signal(range(k + 1), name="levels_left")
        level_last = Signal(name="level_last")
        # (and the level's end as a flag set the cycle before, from ``level_end`` = its last step less one:
        # compared with ``step`` in front of the level's registers it was 5 LUT levels; 0 cycles)
        level_end = Signal(range((1 << k) + lat + 3), name="level_end")
        at_end = Signal(name="level_at_end")
        in_range = Signal(name="level_issues")        # 1 <= step <= 2^level: the level issues a product
        # (and levels_left == 1, last_level == 0 and last_level == 1 as flags beside them: 0 cycles)
        left_one, last_zero, last_one = Signal(name="levels_left_one"), Signal(name="last_level_zero"), \
            Signal(name="last_level_one")
        to_step = Signal(name="build_step_next")     # level_last & stepping & ~build_step: the step's tables next
        m.d.sync += [last_level.eq(levels_hi - 1), last_zero.eq(levels_hi == 1), last_one.eq(levels_hi == 2)]
        # level_end's values looked up ahead: of level 0 (from the frame size) and of the level after this
        # one (from level and levels_left, a cycle after they change: a level lasts more than one), picked
        # at the level's end (the lookups there were 5 LUT levels in the 31-bit fields, issue 28; 0 cycles)
        end_first, end_next = Signal.like(level_end, name="level_end_first"), Signal.like(level_end, name="level_end_next")
        m.d.sync += end_first.eq(Mux(levels_hi == 1, self.level_cycles(0, True) - 2, self.level_cycles(0, False) - 2))
        with m.Switch(level):
            for t in range(k - k // 2 - 1):
                with m.Case(t):
                    m.d.sync += end_next.eq(Mux(left_one, self.level_cycles(t + 1, True) - 2,
                                                self.level_cycles(t + 1, False) - 2))
        first_level = [levels_left.eq(last_level), level_last.eq(last_zero), left_one.eq(last_one), at_end.eq(0),
                       level_end.eq(end_first)]
        # the build's end (the last level of the last table set: level_last and no step tables to follow)
        # and the prime's last cycle as flags beside their registers (with the state's decode in front of
        # the state flags they were 5 LUT levels, issue 28; 0 cycles)
        build_last, prime_last = Signal(name="build_last_level"), Signal(name="prime_last")
        state = _OneHot(m, "pass", ("WAIT", "BUILD", "PRIME", "STREAM"), init="STREAM")
        with state.during("WAIT"):
            with m.If(chains_ok):
                m.d.sync += first_level
                m.d.sync += [level.eq(0), step.eq(0), in_range.eq(0), prime.eq(0), prime_last.eq(self.latency == 1),
                             build_step.eq(cached), first_build.eq(1),
                             build_last.eq(last_zero & (~stepping | cached)), to_step.eq(last_zero & stepping & ~cached),
                             cur.eq(table_set), nxt.eq(self.WORK_SETS[0]), nxt_other.eq(self.WORK_SETS[1]),
                             remaining.eq(Mux(stepping, batch_q - 1, 0)),
                             rem_nz.eq(stepping & (batch_q > 1)), rem_gt1.eq(stepping & (batch_q > 2)),
                             left_zero.eq(0), at_edge.eq(0), nxt_ready.eq(0)]
                with m.If(cached & ~stepping):
                    state.goto("PRIME")
                with m.Else():
                    state.goto("BUILD")
                m.d.sync += left.eq(left_first)
        with state.during("BUILD"):
            m.d.comb += [building.eq(1), init.eq(first_build)]
            m.d.sync += first_build.eq(0)
            with m.If(at_end):
                m.d.sync += [step.eq(0), in_range.eq(0), level.eq(level + 1), levels_left.eq(levels_left - 1),
                             level_last.eq(left_one), left_one.eq(levels_left == 2), at_end.eq(0),
                             build_last.eq(left_one & (~stepping | build_step)),
                             to_step.eq(left_one & stepping & ~build_step), level_end.eq(end_next)]
                with m.If(level_last):
                    m.d.sync += [prime.eq(0), prime_last.eq(self.latency == 1)]
                    with m.If(~build_step):
                        with m.If(table_set):
                            m.d.sync += tags[1].eq(tag)
                        with m.Else():
                            m.d.sync += tags[0].eq(tag)
                    with m.If(to_step):                   # then the step's tables
                        m.d.sync += [build_step.eq(1), level.eq(0), first_build.eq(1)] + first_level
                        m.d.sync += [build_last.eq(last_zero), to_step.eq(0)]
                with m.If(build_last):
                    m.d.comb += upd_start.eq(stepping & rem_nz)
                    m.d.sync += [upd_src.eq(table_set), upd_dst.eq(self.WORK_SETS[0])]
                    state.goto("PRIME")
            with m.Else():
                m.d.sync += [step.eq(step + 1), at_end.eq(step == level_end),
                             in_range.eq(step < (Const(1, k + 1) << level))]
        with state.during("PRIME"):
            m.d.comb += stream_en.eq(~stall)
            with m.If(~stall):
                m.d.sync += [prime.eq(prime + 1), prime_last.eq(prime == self.latency - 2)]
                with m.If(prime_last):
                    state.goto("STREAM")
        with state.during("STREAM"):
            m.d.comb += stream_en.eq(self.en & ~stall)
            with m.If(self.start & streams_now):
                state.goto("WAIT")
        # the stream's first element boundary, in reads (inverse: from the lanes' outputs), registered from
        # the latched fields (the shift and the sum in front of the counter were 5 LUT levels, issue 28)
        with m.Switch(frame):
            for f in range(2, k + 1):
                with m.Case(f):
                    m.d.sync += left_first.eq(each + Mux(inv_q, self._offsets[f], self._input_offset))
        with m.If(new_shift):                      # tables of another shift: none is valid
            m.d.sync += [t.eq(0) for t in tags] + [h.eq(0) for h in hits]
        words_ok, word_stall = self._frame_words(
            m, unit_w, chain, (self.start & streams_now, chains_ok, coset_q, rows_q, inv_q, (stepping, stepping_now), log_n_q, frame,
                               batch_q, new_shift))
        m.d.comb += self.ready.eq(~coset_q | (state["STREAM"] & ~stall & words_ok & ~word_stall))

        # the element boundary: the read that starts the next element takes its set, the update of the
        # one after starts (its source the set just taken, its destination the other work set)
        # the edge is taken where the stream moves on and the next set is ready (stream_en & at_edge, with
        # stall = at_edge & ~nxt_ready folded out: 6 LUT levels into the set register, issue 28; 0 cycles)
        moving = Signal(name="stream_moving")             # the stream moves on unless stalled
        m.d.comb += moving.eq(state["PRIME"] | (state["STREAM"] & self.en))
        # (at_edge is only ever set in a stepping pass; in the others the count runs unused)
        with m.If(moving & at_edge & nxt_ready):
            m.d.sync += [cur.eq(nxt), nxt.eq(nxt_other), nxt_other.eq(nxt), nxt_ready.eq(0),
                         remaining.eq(remaining - 1), left.eq(each_m1),
                         rem_nz.eq(rem_gt1), rem_gt1.eq(remaining > 2), left_zero.eq(each_one),
                         at_edge.eq(rem_gt1 & each_one), upd_src.eq(nxt), upd_dst.eq(nxt_other)]
            m.d.comb += upd_start.eq(rem_gt1)
        with m.Elif(moving & ~left_zero):
            m.d.sync += [left.eq(left - 1), left_zero.eq(left == 1), at_edge.eq(rem_nz & (left == 1))]
        stream_set = Mux(at_edge, nxt, cur)
        write_set = Mux(build_step, self.STEP_SET, table_set)
        upd_done = self._update(m, unit_c, (lo_w, hi_w, lo_r, hi_r), frame, upd_start, upd_src, upd_dst)
        # the chain unit's operands: an AND-OR of its users' terms, which never overlap (the chain job and
        # the element update: the update runs in a stepping pass, whose chains are there; a priority mux
        # of the three was 5 LUT levels from the job's flags in the 31-bit fields, issue 28)
        terms = self._chain_unit_terms
        m.d.comb += [unit_c.i_valid.eq(reduce(operator.or_, (sel for sel, _, _ in terms))),
                     unit_c.i_a.eq(reduce(operator.or_, (Mux(sel, a, 0) for sel, a, _ in terms))),
                     unit_c.i_b.eq(reduce(operator.or_, (Mux(sel, b, 0) for sel, _, b in terms)))]
        with m.If(upd_done):
            m.d.sync += nxt_ready.eq(1)
        self._build_datapath(m, units, (lo_w, hi_w, lo_r, hi_r, chain), (building, init, stream_en),
                             (level, step, in_range, levels_lo, frame, offset, inv_q, pos, build_step,
                              Mux(building, write_set, stream_set), write_set))

        # the stream position: the pair at the multipliers ``latency`` enabled cycles from now
        with m.If(state["WAIT"]):
            with m.Switch(frame):
                for f in range(2, k + 1):
                    with m.Case(f):
                        period = 1 << (f - 1)
                        m.d.sync += pos.eq(Mux(inv_q, (-self._offsets[f]) % period, (-self._input_offset) % period))
                with m.Default():                       # not a frame size: no stream
                    m.d.sync += pos.eq(0)
        with m.Elif(stream_en):
            with m.Switch(frame):
                for f in range(2, k + 1):
                    with m.Case(f):
                        m.d.sync += pos.eq((pos + 1)[:f - 1])
                with m.Default():
                    m.d.sync += pos.eq(0)
        m.d.comb += [self.o_f0.eq(unit_a.o_p), self.o_f1.eq(unit_b.o_p)]
        return m

    def _frame_words(self, m, unit, chain, ctl):
        """Every lane's frame word (``o_k``), hw.model.coset.frame_words: in a streaming pass K_l of round g
        = c b^(t mod F), t = L g + l (b = g_r forward, h_r inverse; c = 1 or 1/N), kept in registers, the
        next round's computed on ``unit`` while a round streams (K x b^L; at an element start K0 x S_l,
        K0_l = c b^l of the element, S_l = s'^l its row step's, and b^L x s'^L), swapped in at the frame
        edge one enabled cycle ahead of the multipliers; in forward pass 2 the row, from a round counter.
        Returns (words_ok: round 0's words are out, stall: a swap waits for its job)."""
        p = self._params
        lanes, lb, nmax, k = p.lanes, self.word_levels, p.max_log_n, p.log_core
        width, lat, one = self._field.width, self._general.latency, self._one
        go, chains_ok, streaming, rows, inv_q, (stepping, stepping_now), log_n_q, frame, batch_q, new_shift = ctl
        # round 0's words (K0) are kept for the next streaming pass of the same direction and n under the
        # same shift, unless a row step changed them
        tag = Signal(len(log_n_q) + 2, name="words_tag")
        this_tag = Cat(log_n_q, inv_q, ~stepping_now)        # (words_hit reads it the cycle after the start)
        with m.If(new_shift):
            m.d.sync += tag.eq(0)
        k0 = [Signal(width, name=f"k0_{l}") for l in range(lanes)]
        sl = [Signal(width, name=f"step_word_{l}") for l in range(lanes)]
        cur = [Signal(width, name=f"word_{l}") for l in range(lanes)]
        nxt = [Signal(width, name=f"next_word_{l}") for l in range(lanes)]
        bw, bs = Signal(width, name="word_base"), Signal(width, name="word_step_base")    # b^L, s'^L
        words_ok, nxt_ready, busy = Signal(name="words_ok"), Signal(name="next_words_ready"), Signal(name="job_busy")
        element_start = Signal(name="job_element_start")

        # chain words: b^(2^i) at i (g, forward) or nmax + i (h, inverse); s'^(2^i) 2 nmax further
        rp_b, rp_s = chain.read_port(domain="comb"), chain.read_port(domain="comb")
        level = Signal(range(max(lb, 1) + 1), name="word_level")
        finish = Signal(name="word_finish")
        base = Mux(inv_q, nmax, 0)
        m.d.comb += [rp_b.addr.eq(base + Mux(finish, lb, level)), rp_s.addr.eq(2 * nmax + base + Mux(finish, lb, level))]

        # c: 1 forward, 1/N inverse (as the multiplier's words, by n)
        inv_n = [self._general.encode(self._field.inv(1 << n)) for n in range(nmax + 1)]
        inv_n += [inv_n[-1]] * ((1 << len(log_n_q)) - len(inv_n))
        # registered from the latched fields (the table lookup and the tag compare in front of K0[0] were 7
        # LUT levels, issue 28): valid from the cycle after the latch, as WAIT decides no earlier
        c_word = Signal(width, name="word_c")
        words_hit = Signal(name="words_hit")
        m.d.sync += [c_word.eq(Mux(inv_q, Array(Const(w, width) for w in inv_n)[log_n_q], one)),
                     words_hit.eq((tag == this_tag) & ~stepping_now & ~new_shift)]
        with m.If(new_shift):
            m.d.sync += words_hit.eq(0)

        # -- set-up: K0[l + 2^t] = K0[l] b^(2^t), S[l + 2^t] = S[l] s'^(2^t), level by level
        step = Signal(range(2 * lanes + lat + self.WORD_ISSUE + 1), name="word_setup_cycle")
        # the level's size 2^t and its last cycle less one, registers set with the level, and the level's
        # end as a flag set the cycle before (compared with ``step`` in front of the set-up's registers it
        # was 6 LUT levels, issue 28; 0 cycles)
        n_t = Signal(range(lanes + 1), name="word_level_size")
        level_end = Signal(range(2 * lanes + lat + self.WORD_ISSUE + 1), name="word_level_end")
        at_end = Signal(name="word_level_at_end")
        level_wait = lat + self.WORD_ISSUE          # a level's last product is written this long after its issue
        # the issue's index, table (K0 or S) and whether the level still issues (only in SETUP), as
        # registers (computed from ``step`` they were LUT levels in front of the operand select), and
        # whether the index is the level's last (the same)
        idx = Signal(range(lanes), name="word_setup_index")
        idx_last = Signal(name="word_setup_index_last")
        on_step, issuing = Signal(name="word_setup_on_step"), Signal(name="word_setup_issuing")

        def level_regs(t):
            """The registers of level t (a constant, or the level register + 1: then looked up per level,
            the shift and sum in front of level_end were a carry chain and 4 LUT levels, issue 28)."""
            if isinstance(t, int):
                size = 1 << t
                return [n_t.eq(size), level_end.eq(Mux(stepping, 2 * size, size) + level_wait - 2), at_end.eq(0),
                        idx.eq(0), idx_last.eq(size == 1), on_step.eq(0)]
            sizes = [1 << (u + 1) for u in range(max(lb, 1))]
            return [n_t.eq(Array(Const(z, len(n_t)) for z in sizes)[t]),
                    level_end.eq(Mux(stepping, Array(Const(2 * z + level_wait - 2, len(level_end)) for z in sizes)[t],
                                     Array(Const(z + level_wait - 2, len(level_end)) for z in sizes)[t])),
                    at_end.eq(0), idx.eq(0), idx_last.eq(0), on_step.eq(0)]
        # -- jobs: j < L: the lane's next word, j = L: b^L x s'^L (an element start with a row step); the
        # job's state as flags kept beside j (j == L, j the last, the element start with a step; compared
        # and combined in front of the operand selects they were 5 LUT levels, issue 28; 0 cycles)
        j = Signal(range(lanes + 2), name="job_index")
        j_word, j_last = Signal(name="job_at_base"), Signal(name="job_last")
        el_step = Signal(name="job_element_step")            # element_start & stepping
        issue_job = busy                                     # busy: the job still issues
        jl = j[:max(lb, 1)] if lanes > 1 else C(0, 1)
        job_a = Mux(j_word, bw, Mux(element_start, Array(k0)[jl], Array(cur)[jl]))
        job_b = Mux(j_word, bs, Mux(el_step, Array(sl)[jl], Mux(element_start, one, bw)))
        # the operands registered before the unit (the selects among 16 words behind the set-up's index
        # arithmetic were 7 LUT levels, issue 28): a product is written ``WORD_ISSUE + lat`` cycles after
        # its issue
        m.d.comb += unit.en.eq(1)
        m.d.sync += [unit.i_valid.eq(issuing | issue_job),
                     unit.i_a.eq(Mux(issuing, Mux(on_step, Array(sl)[idx], Array(k0)[idx]), job_a)),
                     unit.i_b.eq(Mux(issuing, Mux(on_step, rp_s.data, rp_b.data), job_b))]
        lat = lat + self.WORD_ISSUE
        regs = Module()
        w_setup = pipe(regs, issuing, lat, "word_setup_write", reset_less=False)
        # delay lines read by logic end in a flip-flop (an SRL output starting the path was over the NTT
        # clock's period in the timing estimate, issue 28; 0 cycles), as hw.arith.pipe's last_ff says
        w_step = pipe(regs, on_step, lat, "word_setup_write_step", last_ff=True)
        w_dest = pipe(regs, (idx + n_t)[:max(lb, 1)], lat, "word_setup_write_index", last_ff=True)
        w_job = pipe(regs, issue_job, lat, "job_write", reset_less=False)
        w_j = pipe(regs, j, lat, "job_write_index", last_ff=True)
        w_last = pipe(regs, issue_job & j_last, lat, "job_write_last", reset_less=False)
        m.submodules.word_regs = regs
        for l in range(lanes):
            with m.If(w_setup & (w_dest == l)):
                with m.If(w_step):
                    m.d.sync += sl[l].eq(unit.o_p)
                with m.Else():
                    m.d.sync += k0[l].eq(unit.o_p)
            with m.If(w_job & (w_j == l)):
                m.d.sync += nxt[l].eq(unit.o_p)
                with m.If(el_step):
                    m.d.sync += k0[l].eq(unit.o_p)
        with m.If(w_job & (w_j == lanes)):
            m.d.sync += bw.eq(unit.o_p)
        with m.If(w_last):
            m.d.sync += nxt_ready.eq(1)
        with m.If(issue_job):
            m.d.sync += [j.eq(j + 1), j_word.eq(j + 1 == lanes), j_last.eq(j + 2 == lanes + el_step),
                         busy.eq(~j_last)]

        # -- rounds: the frame edge (the next enabled cycle's pair starts a frame), the swaps left
        period_mask = Signal(max(k - 1, 1), name="word_period_mask")
        kpos = Signal(max(k - 1, 1), name="word_position")
        lead = Signal(range(max(self.word_lead(f, inv) for f in range(2, k + 1) for inv in (0, 1)) + 1),
                      name="word_lead")
        swaps = Signal(len(batch_q) + nmax + 1, name="word_swaps_left")
        in_el = Signal(nmax + 1, name="job_round_in_element")       # the next job's round, mod rounds an element
        el_mask = Signal(nmax + 1, name="rounds_an_element_mask")
        row_hi = Signal(max(nmax - lb, 1), name="row_round")
        # set up two cycles after start (no enabled cycle comes before the third, PREFILL): the pass's
        # round count latched at the start from the run (log2 rounds an element, per_log = the other
        # pass's frame size less log2 L; and B - 1), the counters' first values from them, then the
        # counters (the subtraction, shifts and compares in one or two cycles were 7 LUT levels, issue 28)
        init0, init = Signal(name="word_init0"), Signal(name="word_init")
        per_log = Signal(range(nmax + 1), name="rounds_an_element_log")
        batch_m1 = Signal(len(batch_q), name="batch_less1")
        # (and per_log != 0, per_log > 1, B > 1 and B > 2 as flags: the round count's flags from them)
        per_log_nz, per_log_gt1 = Signal(name="rounds_an_element_log_nz"), Signal(name="rounds_an_element_log_gt1")
        batch_gt1, batch_gt2 = Signal(name="batch_gt1"), Signal(name="batch_gt2")
        with m.If(self.start):
            other = Mux(self.pass2, (self.run.log_n + 1) >> 1, self.run.log_n >> 1)
            m.d.sync += [per_log.eq((other - lb).as_unsigned()),
                         batch_m1.eq(Mux(self.run.batch == 0, 0, self.run.batch - 1)),
                         per_log_nz.eq(other != lb), per_log_gt1.eq(other > lb + 1),
                         batch_gt1.eq(self.run.batch > 1), batch_gt2.eq(self.run.batch > 2)]
        mask_first = Signal(len(el_mask), name="rounds_an_element_mask_first")
        # one round an element (el_mask == 0), at most two (2 & el_mask == 0) and in_el == 0 as flags (the
        # compares in front of the job's element start were 5 LUT levels, issue 28; 0 cycles)
        one_round, two_rounds, in_el_zero = Signal(name="element_one_round"), Signal(name="element_two_rounds"), \
            Signal(name="job_round_zero")
        swaps_first = Signal(len(swaps), name="word_swaps_first")
        # (and whether it is not 0 and more than 1, from B - 1 and per_log: compared after the shift they were 5
        # LUT levels into the swap flags; swaps_first = (B << per_log) - 1)
        swaps_first_nz, swaps_first_gt1 = Signal(name="word_swaps_first_nz"), Signal(name="word_swaps_first_gt1")
        m.d.sync += [swaps_first_nz.eq(batch_gt1 | per_log_nz),
                     swaps_first_gt1.eq(batch_gt2 | per_log_gt1 | (batch_gt1 & per_log_nz))]
        below = Cat(*(per_log > i for i in range(len(el_mask))))      # 2^per_log - 1, without a subtraction
        m.d.sync += [init0.eq(go | (self.start & self.run.coset & ~self.run.inverse & self.pass2)), init.eq(init0),
                     mask_first.eq(below), swaps_first.eq((batch_m1 << per_log) | below)]
        # kpos == period_mask, lead == 0, swaps != 0 and swaps > 1 kept as flags beside their counters
        # (compared on the way to the swap's enable they were LUT levels in front of the words' fan-out; 0
        # cycles)
        kpos_last, lead_zero, swaps_nz = Signal(name="word_position_last"), Signal(name="word_lead_zero"), \
            Signal(name="word_swaps_nz")
        swaps_gt1 = Signal(name="word_swaps_gt1")
        # and lead == 0 & swaps != 0 as one more (a swap's condition in one LUT: with the FSM's state decode
        # in front of the counters and the job's start it was 6 LUT levels, issue 28; 0 cycles); run_stream:
        # the FSM is in RUN in a streaming pass
        armed, run_stream = Signal(name="word_swap_armed"), Signal(name="word_run_streaming")
        # the frame size's first values, looked up from the latched frame size a cycle ahead of init (in
        # front of the counters with init's other work they were 4 LUT levels and a carry chain, issue 28;
        # 0 cycles)
        firsts = [Signal.like(sig, name=f"{sig.name}_first") for sig in (period_mask, kpos, kpos_last, lead, lead_zero)]
        with m.Switch(frame):
            for f in range(2, k + 1):
                with m.Case(f):
                    period = 1 << (f - 1)
                    first = {inv: (1 - self.offset(f, inv)) % period for inv in (False, True)}
                    m.d.sync += [sig.eq(v) for sig, v in zip(firsts, (
                        period - 1, Mux(inv_q, first[True], first[False]),
                        Mux(inv_q, first[True] == period - 1, first[False] == period - 1),
                        Mux(inv_q, self.word_lead(f, True), self.word_lead(f, False)),
                        Mux(inv_q, self.word_lead(f, True) == 0, self.word_lead(f, False) == 0)))]
        with m.If(init):                    # the second cycle after start (no enabled cycle yet)
            with m.If((frame >= 2) & (frame <= k)):
                m.d.sync += [sig.eq(v) for sig, v in zip((period_mask, kpos, kpos_last, lead, lead_zero), firsts)]
                m.d.sync += armed.eq(firsts[4] & swaps_first_nz)
            m.d.sync += [el_mask.eq(mask_first), one_round.eq(per_log == 0), two_rounds.eq(per_log <= 1),
                         swaps.eq(swaps_first),
                         swaps_nz.eq(swaps_first_nz), swaps_gt1.eq(swaps_first_gt1), row_hi.eq(0)]
        edge = self.en & kpos_last
        at_swap = Signal(name="word_at_swap")
        m.d.comb += at_swap.eq(kpos_last & armed)
        stall = Signal(name="word_stall")
        m.d.comb += stall.eq(streaming & at_swap & ~nxt_ready)
        with m.If(self.en & ~init):
            m.d.sync += [kpos.eq((kpos + 1) & period_mask), kpos_last.eq(((kpos + 1) & period_mask) == period_mask)]
            with m.If(edge & ~lead_zero):
                m.d.sync += [lead.eq(lead - 1), lead_zero.eq(lead == 1), armed.eq((lead == 1) & swaps_nz)]

        # in_el == 0, registered from in_el (in_el changes at swaps, at least two cycles apart; FINISH sets
        # both)
        m.d.sync += in_el_zero.eq(in_el == 0)

        def begin_job(starts_element):
            m.d.sync += [busy.eq(1), j.eq(0), j_word.eq(0), element_start.eq(starts_element),
                         el_step.eq(starts_element & stepping),
                         j_last.eq(lanes + (starts_element & stepping) == 1)]

        # the pass's start registered on the way to the FSM (+0 cycles: WAIT decides from the second cycle
        # after the start on, chains_ok)
        go_q = Signal(name="word_go")
        m.d.sync += go_q.eq(go)
        word_state = _OneHot(m, "words", ("IDLE", "WAIT", "SETUP", "FINISH", "RUN"), init="IDLE")
        with word_state.during("IDLE"):
            with m.If(go_q):
                m.d.sync += [words_ok.eq(0), nxt_ready.eq(0), busy.eq(0)]
                word_state.goto("WAIT")
        with word_state.during("WAIT"):
            with m.If(chains_ok & words_hit):
                word_state.goto("FINISH")
            with m.Elif(chains_ok):
                m.d.sync += [k0[0].eq(c_word), sl[0].eq(one), level.eq(0), step.eq(0), tag.eq(this_tag),
                             issuing.eq(1 if lb else 0)] + level_regs(0)
                word_state.goto("SETUP" if lb else "FINISH")
        if lb:
            with word_state.during("SETUP"):
                with m.If(issuing):
                    with m.If(idx_last):
                        m.d.sync += [idx.eq(0), idx_last.eq(n_t == 1), on_step.eq(1),
                                     issuing.eq(stepping & ~on_step)]
                    with m.Else():
                        m.d.sync += [idx.eq(idx + 1), idx_last.eq(idx + 2 == n_t)]
                with m.If(at_end):
                    m.d.sync += [step.eq(0), level.eq(level + 1), issuing.eq(1)] + level_regs(level)
                    with m.If(level == lb - 1):
                        m.d.sync += issuing.eq(0)
                        word_state.goto("FINISH")
                with m.Else():
                    m.d.sync += [step.eq(step + 1), at_end.eq(step == level_end)]
        with word_state.during("FINISH"):
            m.d.comb += finish.eq(1)
            m.d.sync += [c.eq(w) for c, w in zip(cur, k0)]
            # round 1's job (round 1 starts an element when an element has one round)
            m.d.sync += [bw.eq(rp_b.data), bs.eq(Mux(stepping, rp_s.data, one)), words_ok.eq(1),
                         in_el.eq(2 & el_mask), in_el_zero.eq(two_rounds)]
            with m.If(swaps_nz):
                begin_job(one_round)
            m.d.sync += run_stream.eq(streaming)
            word_state.goto("RUN")
        with word_state.during("RUN"):
            with m.If(go_q):
                m.d.sync += [words_ok.eq(0), nxt_ready.eq(0), busy.eq(0), run_stream.eq(0)]
                word_state.goto("WAIT")
        with m.If(self.start):              # (a pass that does not stream leaves the FSM in RUN)
            m.d.sync += run_stream.eq(0)
        # a swap (never in the cycles go_q is seen: no enabled cycle comes within two of the start)
        with m.If(self.en & at_swap & nxt_ready & run_stream):
            m.d.sync += [c.eq(w) for c, w in zip(cur, nxt)]
            m.d.sync += [nxt_ready.eq(0), swaps.eq(swaps - 1), swaps_nz.eq(swaps_gt1), swaps_gt1.eq(swaps > 2),
                         armed.eq(swaps_gt1)]
            with m.If(swaps_gt1):
                begin_job(in_el_zero)
                m.d.sync += in_el.eq((in_el + 1) & el_mask)
        with m.If(self.en & ~init & at_swap & rows):
            m.d.sync += [swaps.eq(swaps - 1), swaps_nz.eq(swaps_gt1), swaps_gt1.eq(swaps > 2), armed.eq(swaps_gt1),
                         row_hi.eq((row_hi + 1) & el_mask)]
        for l, port in enumerate(self.o_k):
            row = Cat(Const(l, lb), row_hi) if lb else row_hi
            m.d.comb += port.eq(Mux(rows, row, cur[l]))
        return words_ok, stall

    def _update(self, m, unit_c, memories, frame, start, src, dst):
        """The next element's tables: LO[j] x LOc[j] (j < 2^s), then HI[i] x HIc[i] (i < 2^(f-s)),
        read from set ``src`` and the step's, written to ``dst``, one product a cycle on the chain unit
        (idle in a stepping pass: its chains are there). Returns a pulse in the cycle the last product is
        written (the set is readable from the next cycle on)."""
        lo_w, hi_w, lo_r, hi_r = memories
        k = self._params.log_core
        lat = self._general.latency
        # the frame's table sizes, registered (frame is constant through a pass, and an update starts long
        # after it is latched): from frame through the shifts and the sum to the compare they were 5 LUT
        # levels and two carry chains (issue 28; 0 cycles)
        n_lo = Signal(k + 1, name="update_lo")
        total = Signal(k + 2, name="update_products_less1")
        # (looked up per frame size: through a subtraction, shifts and a sum they were a carry chain and 4
        # LUT levels)
        with m.Switch(frame):
            for f in range(k + 1):
                with m.Case(f):
                    m.d.sync += [n_lo.eq(1 << (f >> 1)), total.eq((1 << (f >> 1)) + (1 << (f - (f >> 1))) - 1)]
        busy = Signal(name="update_busy")
        u = Signal(k + 2, name="update_index")
        # the start registered (it comes from the table build's last-level compare or an element edge: 6
        # LUT levels into the index, issue 28; +1 cycle, ``update_cycles``)
        start_q = Signal(name="update_start_q")
        m.d.sync += start_q.eq(start)
        start = start_q
        with m.If(start):
            m.d.sync += [busy.eq(1), u.eq(0)]
        with m.Elif(busy):
            m.d.sync += u.eq(u + 1)
            with m.If(u == total):
                m.d.sync += busy.eq(0)
        is_lo = u < n_lo
        entry = Signal(max(k - k // 2, 1), name="update_entry")
        m.d.comb += entry.eq(Mux(is_lo, u, u - n_lo))
        for rd_cur, rd_step, bits in ((lo_r[2], lo_r[3], max(k // 2, 1)), (hi_r[2], hi_r[3], max(k - k // 2, 1))):
            m.d.comb += [rd_cur.addr.eq(Cat(entry[:bits], src)), rd_step.addr.eq(Cat(entry[:bits], C(self.STEP_SET, 3))),
                         rd_cur.en.eq(1), rd_step.en.eq(1)]
        regs = Module()
        issued = pipe(regs, busy, 1, "update_issued", reset_less=False)
        lo1 = pipe(regs, is_lo, 1, "update_is_lo")
        wvalid = pipe(regs, issued, lat, "update_write", reset_less=False)
        wlo = pipe(regs, lo1, lat, "update_write_lo", last_ff=True)
        wentry = pipe(regs, entry, 1 + lat, "update_write_entry", last_ff=True)
        last = pipe(regs, busy & (u == total), 1 + lat, "update_last", reset_less=False)
        m.submodules.update_regs = regs
        self._chain_unit_terms.append((issued, Mux(lo1, lo_r[2].data, hi_r[2].data), Mux(lo1, lo_r[3].data, hi_r[3].data)))
        with m.If(wvalid):
            for wp, sel, bits in ((lo_w, wlo, max(k // 2, 1)), (hi_w, ~wlo, max(k - k // 2, 1))):
                m.d.comb += [wp.en.eq(sel), wp.addr.eq(Cat(wentry[:bits], dst)), wp.data.eq(unit_c.o_p)]
        return last

    def _chain_job(self, m, unit_c):
        """The background jobs: for the shift g (chain 0) C[i] = g^(2^i) at i, h^(2^i) at 2k + i (i < 2k),
        for a row step s > 1 (chain 1) s^(2^i) and (s^-1)^(2^i) at 4k + i and 6k + i, each recomputed
        whenever its value differs from the one it was computed for (the shift's first). Returns (chains:
        per chain ``key``, ``ok``; busy, memory, new_shift: 1 in the cycle a job for the shift starts; per
        chain key == its operand, registered; fresh: the cycle after a job began, whose compares are stale)."""
        from types import SimpleNamespace
        nmax = self._params.max_log_n
        lat = self._general.latency
        width, rounds = self._field.width, self.exponent_rounds
        chain = Memory(shape=unsigned(width), depth=4 * nmax, init=[])
        m.submodules.chain = chain
        cw = chain.write_port()
        chains = [SimpleNamespace(key=Signal(64, name=f"chain{i}_key"), ok=Signal(name=f"chain{i}_ok"))
                  for i in range(2)]
        operands = (self.run.coset_shift, self.run.row_step)
        phase = Signal(name="chain_phase")             # the job's chain
        job = Signal(name="chain_busy")
        rnd = Signal(range(rounds + nmax + 1), name="chain_round")
        cyc = Signal(range(self.ROUND), name="chain_cycle")
        sq = Signal(width, name="chain_square")
        # the square's second operand: sq, or R^2 in the encoding round (a register beside sq: the pick in
        # front of the unit's operand select was a LUT level of 5, issue 28; 0 cycles)
        sq_b = Signal(width, name="chain_square_b")
        acc = Signal(width, name="chain_acc")
        exponent = Const(coset_model.inverse_exponent(self._field), rounds)
        one = self._one
        # encoding: the job's first round, sq = operand * encode(one) = the operand's word (Montgomery only;
        # without it the gates below are the plain conditions)
        encoding = Signal(name="chain_encoding") if self.encodes else None
        live = (lambda cond: cond & ~encoding) if self.encodes else (lambda cond: cond)
        in_exp = rnd < rounds
        final = Signal(name="chain_final")          # rnd == rounds + nmax, set with the increment (0 cycles)
        # the exponent's bit of this round, registered (the constant's 64:1 select in front of the unit's
        # operand mux was 7 LUT levels, issue 28): rnd changes at a round's last cycle, the bit is read at
        # its second
        ebit = Signal(name="chain_exponent_bit")
        m.d.sync += ebit.eq(exponent.bit_select(rnd[:(rounds - 1).bit_length()], 1))
        # likewise whether the round is an exponent round, for the operand selects of its second and later
        # cycles (0 cycles)
        in_exp_q = Signal(name="chain_in_exponent")
        m.d.sync += in_exp_q.eq(in_exp)
        m.d.comb += [unit_c.en.eq(1), cw.data.eq(sq),
                     cw.addr.eq(Mux(in_exp, rnd, rnd - rounds + nmax) + Mux(phase, 2 * nmax, 0)),
                     cw.en.eq(live(job & (cyc == 0) & (~in_exp | (rnd < nmax)) & (rnd < rounds + nmax)))]
        new_shift = Signal(name="new_shift")

        def begin(i):
            m.d.sync += [chains[i].key.eq(operands[i]), sq.eq(operands[i]), acc.eq(one),
                         sq_b.eq(self._general.encode(one) if self.encodes else operands[i]),
                         job.eq(1), chains[i].ok.eq(0), phase.eq(i), fresh.eq(1)]
            if self.encodes:
                m.d.sync += encoding.eq(1)

        # the 64-bit compares of each key with its operand, registered (in front of the job's start they
        # were 7 LUT levels, issue 28): a changed value is noticed a cycle later; ``fresh`` marks the cycle
        # after a job began, whose compare is of the key before it
        # (in eight registered parts: one 64-bit compare was 6 LUT levels, 16-bit parts 5)
        same = [Signal(name=f"chain{i}_same") for i in range(2)]
        # whether the row step is not 0 or 1, in four registered parts (the 63-bit OR in front of a
        # register was 5 LUT levels, issue 28); valid the cycle after the step is
        step_parts = [Signal(name=f"chain_step_on{j}") for j in range(4)]
        step_on = Signal(name="chain_step_on")
        m.d.comb += step_on.eq(Cat(*step_parts).any())
        fresh = Signal(name="chain_fresh")
        for i in range(2):
            parts = [Signal(name=f"chain{i}_same{j}") for j in range(8)]
            m.d.sync += [part.eq(chains[i].key[8 * j:8 * j + 8] == operands[i][8 * j:8 * j + 8])
                         for j, part in enumerate(parts)]
            m.d.comb += same[i].eq(Cat(*parts).all())
        m.d.sync += [part.eq(operands[1][max(16 * j, 1):16 * j + 16].any()) for j, part in enumerate(step_parts)]
        m.d.sync += fresh.eq(0)
        # the round counters: cleared while no job runs (a job begins in such a cycle), else counting until
        # the final round (apart from the job's start and stop conditions: those in front of them were 6 LUT
        # levels, issue 28; 0 cycles)
        # (and the cycle's compares the round's work reads, and rnd == rounds - 1, as flags kept beside them:
        # decoded in front of the multiplier's operand selects and the square register they were 5 LUT
        # levels in the 31-bit fields, issue 28; 0 cycles)
        at = {v: Signal(name=f"chain_cycle_is{v}", init=int(v == 0)) for v in sorted({0, 1, lat, lat + 1, self.ROUND - 1})}
        exp_last = Signal(name="chain_exponent_last")
        with m.If(~job):
            m.d.sync += [rnd.eq(0), cyc.eq(0), final.eq(0), exp_last.eq(rounds == 1)]
            m.d.sync += [flag.eq(v == 0) for v, flag in at.items()]
        with m.Elif(~final):
            m.d.sync += cyc.eq(Mux(at[self.ROUND - 1], 0, cyc + 1))
            m.d.sync += [flag.eq(at[self.ROUND - 1] if v == 0 else (cyc == v - 1)) for v, flag in at.items()]

            def next_round():
                m.d.sync += [rnd.eq(rnd + 1), final.eq(rnd == rounds + nmax - 1), exp_last.eq(rnd == rounds - 2)]
            with m.If(at[self.ROUND - 1]):
                if self.encodes:
                    with m.If(encoding):
                        m.d.sync += encoding.eq(0)
                    with m.Else():
                        next_round()
                else:
                    next_round()
        # a job's start decided a cycle ahead, registered (decided in the cycle it loads the square register,
        # from the compares' parts and the chain flags, it was 6 LUT levels, issue 28; +1 cycle a job,
        # ``chain_cycles``); no decision in the cycle a start is registered for
        # (and the chains' need of a job registered before that, from the compares' parts and the flags: in
        # one cycle with the idle condition they were 5 LUT levels in the 31-bit fields, issue 28; +1 cycle,
        # ``chain_cycles``; not in the cycle after a job ran, whose need is of the flags before its end)
        starts = [Signal(name=f"chain{i}_start") for i in range(2)]
        needs = [Signal(name=f"chain{i}_needed") for i in range(2)]
        job_q = Signal(name="chain_busy_q")
        m.d.sync += [job_q.eq(job), needs[0].eq(~(chains[0].ok & same[0])),
                     needs[1].eq(chains[0].ok & same[0] & step_on & ~(chains[1].ok & same[1]))]
        idle = ~job & ~job_q & ~fresh & ~starts[0] & ~starts[1]
        m.d.sync += [starts[0].eq(idle & needs[0]), starts[1].eq(idle & needs[1])]
        m.d.comb += new_shift.eq(starts[0])
        for i in range(2):
            with m.If(starts[i]):
                begin(i)
        with m.If(job & ~fresh & ~Mux(phase, same[1], same[0])):   # the value changed under the job: again
            m.d.sync += job.eq(0)
        with m.Elif(final):
            m.d.sync += job.eq(0)
            with m.If(phase):
                m.d.sync += chains[1].ok.eq(1)
            with m.Else():
                m.d.sync += chains[0].ok.eq(1)
        # the round's work, while a job runs (not gated by its start and stop conditions, as the counters
        # above: a stopped job's last products are never used)
        with m.If(job & ~final):
            with m.If(at[lat]):
                m.d.sync += [sq.eq(unit_c.o_p), sq_b.eq(unit_c.o_p)]
            with m.If(live(at[lat + 1] & in_exp_q)):
                m.d.sync += acc.eq(unit_c.o_p)
                with m.If(exp_last):                # acc is h now: its squares come next
                    m.d.sync += [sq.eq(unit_c.o_p), sq_b.eq(unit_c.o_p)]
        # the square's and the product's operands, as terms of the chain unit's AND-OR select (_chain_unit)
        running = job & ~final
        self._chain_unit_terms += [(running & at[0], sq, sq_b),
                                   (running & live(at[1] & in_exp_q), acc, Mux(ebit, sq, one))]

        return chains, job, chain, new_shift, same, fresh, step_on

    def _build_datapath(self, m, units, memories, modes, state):
        """Table build (doubling from the chain words) and the stream's addresses and products."""
        lo_w, hi_w, lo_r, hi_r, chain = memories
        building, init, stream_en = modes
        level, step, in_range, levels_lo, frame, offset, inv_q, pos, build_step, read_set, write_set = state
        k = self._params.log_core
        nmax = self._params.max_log_n
        lat = self._general.latency
        unit_a, unit_b = units[:2]
        # chain words of this level: b^(2^t) for LO, b^(2^(s + t)) for HI, b = chain[base + offset]
        # (the step's chain from 4k on)
        base = Mux(inv_q, nmax, 0) + offset + Mux(build_step, 2 * nmax, 0)
        lo_word_r, hi_word_r = chain.read_port(domain="comb"), chain.read_port(domain="comb")
        m.d.comb += [lo_word_r.addr.eq(base + level), hi_word_r.addr.eq(base + (frame >> 1) + level)]
        # level t reads entry j on step j + 1 (j < 2^t); its product is written at 2^t + j
        size = Signal(k + 1, name="level_size")
        m.d.comb += size.eq(Const(1, k + 1) << level)
        # (the range as a flag kept beside step: compared here it was 5 LUT levels, issue 28; 0 cycles)
        issue = building & in_range
        j = (step - 1)[:k]
        regs = Module()
        issued = pipe(regs, issue, 1, "issued", reset_less=False)
        dest = pipe(regs, (size + j)[:k], 1 + lat, "dest", last_ff=True)
        lo_on = pipe(regs, level < levels_lo, 1, "lo_on", reset_less=False)
        m.submodules.build_regs = regs

        # stream addresses of the two positions (see hw.model.coset.factor_positions)
        lo_a, hi_a = [Signal(max(k // 2, 1), name=f"lo_addr{i}") for i in range(2)], \
                     [Signal(max(k - k // 2, 1), name=f"hi_addr{i}") for i in range(2)]
        with m.Switch(frame):
            for f in range(2, k + 1):
                s, a = f // 2, f - f // 2
                with m.Case(f):
                    with m.If(inv_q):                       # (2t, 2t + 1)
                        twice = pos << 1
                        m.d.comb += [lo_a[0].eq(twice[:s]), lo_a[1].eq(twice[:s] | 1),
                                     hi_a[0].eq(twice[s:f]), hi_a[1].eq(twice[s:f])]
                    with m.Else():                          # (r + 2^s m, r + 2^s m + 2^(f-1))
                        r, mm = pos[a - 1:f - 1], pos[:a - 1]
                        m.d.comb += [lo_a[0].eq(r), lo_a[1].eq(r), hi_a[0].eq(mm), hi_a[1].eq(mm | (1 << (a - 1)))]
            with m.Default():                               # not a frame size: no stream
                m.d.comb += [addr.eq(0) for addr in lo_a + hi_a]
        for i in range(2):
            for rd, addr in ((lo_r[i], lo_a[i]), (hi_r[i], hi_a[i])):
                idx = Mux(building & (i == 0), j, addr)
                m.d.comb += [rd.addr.eq(Cat(idx[:len(addr)], read_set)), rd.en.eq(building | stream_en)]
        for wp, unit, width in ((lo_w, unit_a, len(lo_a[0])), (hi_w, unit_b, len(hi_a[0]))):
            with m.If(building | unit.o_valid):         # else the element update's (_update)
                m.d.comb += [wp.en.eq(init | unit.o_valid),
                             wp.addr.eq(Cat(Mux(init, 0, dest)[:width], write_set)),
                             wp.data.eq(Mux(init, self._one, unit.o_p))]
        m.d.comb += [
            unit_a.en.eq(building | stream_en), unit_b.en.eq(building | stream_en),
            unit_a.i_valid.eq(issued & lo_on), unit_b.i_valid.eq(issued),
            unit_a.i_a.eq(lo_r[0].data),
            unit_a.i_b.eq(Mux(building, lo_word_r.data, hi_r[0].data)),
            unit_b.i_a.eq(Mux(building, hi_r[0].data, lo_r[1].data)),
            unit_b.i_b.eq(Mux(building, hi_word_r.data, hi_r[1].data)),
        ]
