# amaranth: UnusedElaboratable=no
"""Coset transforms in the engine: the per-lane point scale and the one shared factor generator.

The math (hw/model/coset.py): in each pass every lane multiplies the two points it takes (forward coset,
at the lane input) or emits (inverse coset, at the lane output) on a cycle by the same pair of factors,
b^i0 and b^i1, where (i0, i1) are the positions in the frame and b is the pass's base: forward G = g^N2
(pass 1) and g (pass 2), inverse h = g^-1 (pass 1) and H = h^N1 (pass 2).

``PointScale`` (per lane, two multiply/reduce units, one a port) sits on both sides of the lane: on the
input side (head) between the lane input and its first stage, on the output side (tail) after the
output scale. Its multipliers work on the head (``scale_in``) or the tail (``scale_out``); the other
side, and both in a plain pass, are wires, so only a coset pass pays the multiplier's 12 cycles.

``CosetFactors`` (one per engine, three multiply/reduce units) computes the factor pair of every
enabled cycle from the shift g:

- in the background, whenever the shift differs from the one it last worked on: h = g^(p-2) by
  right-to-left square-and-multiply on one unit, keeping the squares g^(2^i), then h^(2^i), i < 2k
  (the "chains", 4k words); (64 + 2k) rounds of 14 cycles (1,232 at k = 12), once per shift;
- at the start of a coset pass: two tables, LO[j] = b^j (j < 2^s) and HI[i] = b^(i 2^s) (i < 2^(f-s)),
  s = floor(f/2), built level by level by doubling from the chain words b^(2^t) (one unit per table;
  a level starts as soon as the entries it reads are written: 110 cycles at f = 12);
  one set of tables per pass, kept while the shift stays: a pass with the same shift, direction and n
  as the last one in its set reuses them;
- then, one enabled cycle at a time, the factors b^i = HI[i >> s] * LO[i & (2^s - 1)] of the two positions
  the lanes' point scales meet (the lane input order forward, the output order inverse, offset by the
  lanes' latency to their output multipliers), the same two units, latency 13. It reports ``ready``
  once the first factors are at its output; the engine holds its first payload until then.

The stream repeats with every frame, so a batch of transforms needs nothing more.

Fields whose multiplier takes encoded words (Montgomery form in BabyBear and KoalaBear, hw/multiplier.py):
every chain word, table entry and factor is kept as the multiplier's word (a product of two words is the
word of the product), so the point scale's outputs are canonical field values. The shift arrives as a
canonical value: the chain job's first round multiplies it by encode(encode(1)) (2^64 mod p), which gives
its word; tables start from encode(1). The figures above are Goldilocks'; a 31-bit field's exponent has
31 bits and a round is 11 cycles ((1 + 31 + 2k) rounds).
"""

from amaranth.hdl import Cat, Const, EnableInserter, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nantucket.hw.arith import pipe
from nantucket.hw.model import coset as coset_model, field as F
from nantucket.hw.model.params import BuildParams
from nantucket.hw.run import run_layout
from nantucket.hw.shared import share
from nantucket.hw.multiplier import general_multiplier

# The file's first line: the multipliers built here are emitted once and instantiated (hw/shared.py), so
# those the shared modules stand for are never elaborated; the warning would only be noise.

__all__ = ["PointScale", "CosetFactors"]


class PointScale(wiring.Component):
    """A lane's coset point scale. Ports: en; scale_in, scale_out (at most one set; constant while frames
    flow); i_f0, i_f1 (the factors of the pair at the multipliers on this enabled cycle);
    head side i_head_valid, i_head_x0, i_head_x1 -> o_head_valid, o_head_x0, o_head_x1;
    tail side i_tail_valid, i_tail_x0, i_tail_x1 -> o_tail_valid, o_tail_x0, o_tail_x1.
    The multiplied side (head with scale_in, tail with scale_out) gives x * f (canonical for any x of the
    field's width) ``latency`` enabled cycles later; the other side passes its input straight through (no delay).
    Points and factors are ``field.width`` bits; the factors as the field's general multiplier takes them
    (the generator's words)."""

    def __init__(self, *, field=F.GOLDILOCKS):
        self._field = field = F.get(field)
        self._general = general_multiplier(field)
        width = field.width
        ports = {"en": In(1), "scale_in": In(1), "scale_out": In(1), "i_f0": In(width), "i_f1": In(width)}
        for side in ("head", "tail"):
            ports |= {f"i_{side}_valid": In(1), f"i_{side}_x0": In(width), f"i_{side}_x1": In(width),
                      f"o_{side}_valid": Out(1), f"o_{side}_x0": Out(width), f"o_{side}_x1": Out(width)}
        super().__init__(ports)

    @property
    def field(self) -> F.Field:
        return self._field

    @property
    def latency(self) -> int:
        """Enabled cycles through the multiplied side (the other side is a wire)."""
        return self._general.latency

    @property
    def mul_units(self) -> int:
        return 2

    @property
    def dsp_tiles(self) -> int:
        return self.mul_units * self._general.dsp_tiles

    def model(self, pairs, factors, multiply: bool) -> list[tuple[int, int]]:
        """What one side emits for ``pairs`` (x0, x1) with ``factors`` (f0, f1, field values), multiplied
        or not."""
        if not multiply:
            return [(int(a), int(b)) for a, b in pairs]
        mul = self._field.mul
        return [(mul(a, f0), mul(b, f1)) for (a, b), (f0, f1) in zip(pairs, factors)]

    def elaborate(self, platform):
        m = Module()
        regs = Module()
        scale_out = self.scale_out & ~self.scale_in
        valid_in = Mux(scale_out, self.i_tail_valid, self.i_head_valid)
        valid = pipe(regs, valid_in, self.latency, "valid", reset_less=False)
        m.d.comb += [self.o_head_valid.eq(Mux(self.scale_in, valid, self.i_head_valid)),
                     self.o_tail_valid.eq(Mux(scale_out, valid, self.i_tail_valid))]
        sides = ((self.i_head_x0, self.i_tail_x0, self.o_head_x0, self.o_tail_x0, self.i_f0),
                 (self.i_head_x1, self.i_tail_x1, self.o_head_x1, self.o_tail_x1, self.i_f1))
        for port, (head_in, tail_in, head_out, tail_out, factor) in enumerate(sides):
            mul = self._general.unit()
            m.submodules[f"mul{port}"] = share(mul)
            m.d.comb += [mul.en.eq(self.en), mul.i_valid.eq(0), mul.i_b.eq(factor),
                         mul.i_a.eq(Mux(scale_out, tail_in, head_in)),
                         head_out.eq(Mux(self.scale_in, mul.o_p, head_in)),
                         tail_out.eq(Mux(scale_out, mul.o_p, tail_in))]
        m.submodules.regs = EnableInserter(self.en)(regs)
        return m


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

    def __init__(self, params: BuildParams, output_offsets: dict[int, int]):
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
        super().__init__({
            "start": In(1), "pass2": In(1), "run": In(run_layout(params)), "en": In(1),
            "ready": Out(1), "o_f0": Out(field.width), "o_f1": Out(field.width),
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
        return 3

    @property
    def dsp_tiles(self) -> int:
        return self.mul_units * self._general.dsp_tiles

    @property
    def chain_cycles(self) -> int:
        """Cycles of the background job for a new shift: the exponent rounds (p - 2 has 64 bits in
        Goldilocks), 2k rounds of h's squares (and one round to encode the shift, ``encodes``)."""
        return (self.exponent_rounds + self._params.max_log_n + int(self.encodes)) * self.ROUND + 1

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

    def setup_cycles(self, log_frame: int, cached: bool = False) -> int:
        """With the chains already computed for the shift, ``ready`` is 1 from this many cycles after the
        cycle of a coset pass's ``start`` on: one to latch, one to check the chains, the tables (none when
        ``cached``: this pass's set was built for the same shift, direction and n), priming the stream."""
        return 2 + (0 if cached else self.build_cycles(log_frame)) + self.latency

    def model(self, shift: int, log_n: int, pass_index: int, inverse: bool, cycles: int) -> list[tuple[int, int]]:
        """Bit-exact reference: the factor pairs ``o_f0``, ``o_f1`` on the first ``cycles`` enabled cycles
        from ``ready`` on (hw.model.coset.factor_stream, started where the lanes' multipliers are), as the
        multiplier's words (``encode``: the values themselves in Goldilocks)."""
        pairs = coset_model.factor_stream(shift, log_n, pass_index, inverse, self._field)
        period = pairs.shape[0]
        first = (-self._offsets[coset_model.pass_frame(log_n, pass_index)]) % period if inverse else 0
        word = self._general.encode
        return [(word(int(pairs[(first + t) % period, 0])), word(int(pairs[(first + t) % period, 1])))
                for t in range(cycles)]

    def elaborate(self, platform):
        m = Module()
        k = self._params.log_core
        nmax = self._params.max_log_n
        lat = self._general.latency
        units = [self._general.unit() for _ in range(3)]
        unit_a, unit_b, unit_c = units
        for name, u in zip(("unit_lo", "unit_hi", "unit_chain"), units):
            m.submodules[name] = share(u)

        key, chain_ok, job, chain, new_shift = self._chain_job(m, unit_c)

        # -- the pass: latch, wait for the chains, build the tables, prime the stream, stream
        coset_q, inv_q = Signal(name="coset_q"), Signal(name="inverse_q")
        table_set, log_n_q = Signal(name="table_set"), Signal(range(nmax + 1), name="log_n_q")
        frame = Signal(range(k + 1), name="frame", init=k)
        offset = Signal(range(nmax + 1), name="chain_offset")
        n1, n2 = (self.run.log_n + 1) >> 1, self.run.log_n >> 1
        with m.If(self.start):
            m.d.sync += [coset_q.eq(self.run.coset), inv_q.eq(self.run.inverse), table_set.eq(self.pass2),
                         log_n_q.eq(self.run.log_n),
                         frame.eq(Mux(self.pass2, n2, n1)),
                         offset.eq(Mux(self.run.inverse, Mux(self.pass2, n1, 0), Mux(self.pass2, 0, n2)))]
        # two sets of tables, one per pass, each kept with the (inverse, n) it was built for until the
        # shift changes: a run repeated with the same arguments builds nothing
        lo_depth, hi_depth = 2 << (k // 2), 2 << (k - k // 2)
        tag = Signal(2 + len(log_n_q), name="table_tag")
        m.d.comb += tag.eq(Cat(log_n_q, inv_q, 1))
        tags = [Signal(len(tag), name=f"tags{i}") for i in range(2)]
        cached = Signal(name="cached")
        m.d.comb += cached.eq(Mux(table_set, tags[1], tags[0]) == tag)

        width = self._field.width
        lo = Memory(shape=unsigned(width), depth=lo_depth, init=[])
        hi = Memory(shape=unsigned(width), depth=hi_depth, init=[])
        m.submodules.lo, m.submodules.hi = lo, hi
        lo_w, hi_w = lo.write_port(), hi.write_port()
        lo_r = [lo.read_port(domain="sync") for _ in range(2)]
        hi_r = [hi.read_port(domain="sync") for _ in range(2)]

        level = Signal(range(k + 1), name="level")
        step = Signal(range((1 << k) + lat + 3), name="level_cycle")
        prime = Signal(range(self.latency + 1), name="prime_cycle")
        pos = Signal(max(k - 1, 1), name="position")
        building, stream_en, init = Signal(name="building"), Signal(name="stream_en"), Signal(name="init")
        levels_lo, levels_hi = frame >> 1, frame - (frame >> 1)
        # STREAM is also the idle state: outside a coset pass the factors are not used
        with m.FSM(name="pass_fsm", init="STREAM") as fsm:
            with m.State("WAIT"):
                with m.If(~job & chain_ok & (key == self.run.coset_shift)):
                    m.d.sync += [level.eq(0), step.eq(0), prime.eq(0)]
                    with m.If(cached):
                        m.next = "PRIME"
                    with m.Else():
                        m.next = "BUILD"
            with m.State("BUILD"):
                m.d.comb += [building.eq(1), init.eq((level == 0) & (step == 0))]
                level_end = Signal(range((1 << k) + lat + 3), name="level_end")
                with m.Switch(level):
                    for t in range(k - k // 2):
                        with m.Case(t):
                            m.d.comb += level_end.eq(Mux(level == levels_hi - 1, self.level_cycles(t, True) - 1,
                                                         self.level_cycles(t, False) - 1))
                    with m.Default():                   # no such level
                        m.d.comb += level_end.eq(0)
                with m.If(step == level_end):
                    m.d.sync += [step.eq(0), level.eq(level + 1)]
                    with m.If(level == levels_hi - 1):
                        m.d.sync += prime.eq(0)
                        with m.If(table_set):
                            m.d.sync += tags[1].eq(tag)
                        with m.Else():
                            m.d.sync += tags[0].eq(tag)
                        m.next = "PRIME"
                with m.Else():
                    m.d.sync += step.eq(step + 1)
            with m.State("PRIME"):
                m.d.comb += stream_en.eq(1)
                m.d.sync += prime.eq(prime + 1)
                with m.If(prime == self.latency - 1):
                    m.next = "STREAM"
            with m.State("STREAM"):
                m.d.comb += stream_en.eq(self.en)
                with m.If(self.start & self.run.coset):
                    m.next = "WAIT"
        with m.If(new_shift):                      # tables of another shift: none is valid
            m.d.sync += [t.eq(0) for t in tags]
        m.d.comb += self.ready.eq(~coset_q | fsm.ongoing("STREAM"))
        self._build_datapath(m, units, (lo_w, hi_w, lo_r, hi_r, chain), (building, init, stream_en),
                             (level, step, levels_lo, frame, offset, inv_q, pos, table_set))

        # the stream position: the pair at the multipliers ``latency`` enabled cycles from now
        with m.If(fsm.ongoing("WAIT")):
            with m.Switch(frame):
                for f in range(2, k + 1):
                    with m.Case(f):
                        period = 1 << (f - 1)
                        m.d.sync += pos.eq(Mux(inv_q, (-self._offsets[f]) % period, 0))
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

    def _chain_job(self, m, unit_c):
        """The background job: C[i] = g^(2^i) at i, h^(2^i) at 2k + i (i < 2k), recomputed whenever the
        shift differs from the one it was computed for. Returns (key, chain_ok, busy, memory, new_shift:
        1 in the cycle a job starts)."""
        nmax = self._params.max_log_n
        lat = self._general.latency
        width, rounds = self._field.width, self.exponent_rounds
        chain = Memory(shape=unsigned(width), depth=2 * nmax, init=[])
        m.submodules.chain = chain
        cw = chain.write_port()
        key = Signal(len(self.run.coset_shift), name="chain_key")
        chain_ok = Signal(name="chain_ok")
        job = Signal(name="chain_busy")
        rnd = Signal(range(rounds + nmax + 1), name="chain_round")
        cyc = Signal(range(self.ROUND), name="chain_cycle")
        sq = Signal(width, name="chain_square")
        acc = Signal(width, name="chain_acc")
        exponent = Const(coset_model.inverse_exponent(self._field), rounds)
        one = self._one
        # encoding: the job's first round, sq = shift * encode(one) = the shift's word (Montgomery only;
        # without it the gates below are the plain conditions)
        encoding = Signal(name="chain_encoding") if self.encodes else None
        live = (lambda cond: cond & ~encoding) if self.encodes else (lambda cond: cond)
        in_exp = rnd < rounds
        m.d.comb += [unit_c.en.eq(1), cw.data.eq(sq),
                     cw.addr.eq(Mux(in_exp, rnd, rnd - rounds + nmax)),
                     cw.en.eq(live(job & (cyc == 0) & (~in_exp | (rnd < nmax)) & (rnd < rounds + nmax)))]
        new_shift = Signal(name="new_shift")
        shift = self.run.coset_shift
        with m.If(~job):
            with m.If(~(chain_ok & (key == shift))):
                m.d.comb += new_shift.eq(1)
                m.d.sync += [key.eq(shift), sq.eq(shift), acc.eq(one), rnd.eq(0), cyc.eq(0),
                             job.eq(1), chain_ok.eq(0)]
                if self.encodes:
                    m.d.sync += encoding.eq(1)
        with m.Elif(key != shift):                      # the shift changed under the job: start again
            m.d.sync += job.eq(0)
        with m.Elif(rnd == rounds + nmax):
            m.d.sync += [job.eq(0), chain_ok.eq(1)]
        with m.Else():
            m.d.sync += cyc.eq(Mux(cyc == self.ROUND - 1, 0, cyc + 1))
            with m.If(cyc == self.ROUND - 1):
                if self.encodes:
                    with m.If(encoding):
                        m.d.sync += encoding.eq(0)
                    with m.Else():
                        m.d.sync += rnd.eq(rnd + 1)
                else:
                    m.d.sync += rnd.eq(rnd + 1)
            with m.If(cyc == 0):
                if self.encodes:
                    r2 = self._general.encode(one)
                    m.d.comb += [unit_c.i_a.eq(sq), unit_c.i_b.eq(Mux(encoding, r2, sq)), unit_c.i_valid.eq(1)]
                else:
                    m.d.comb += [unit_c.i_a.eq(sq), unit_c.i_b.eq(sq), unit_c.i_valid.eq(1)]
            with m.If(live((cyc == 1) & in_exp)):
                m.d.comb += [unit_c.i_a.eq(acc),
                             unit_c.i_b.eq(Mux(exponent.bit_select(rnd[:(rounds - 1).bit_length()], 1), sq, one)),
                             unit_c.i_valid.eq(1)]
            with m.If(cyc == lat):
                m.d.sync += sq.eq(unit_c.o_p)
            with m.If(live((cyc == lat + 1) & in_exp)):
                m.d.sync += acc.eq(unit_c.o_p)
                with m.If(rnd == rounds - 1):       # acc is h now: its squares come next
                    m.d.sync += sq.eq(unit_c.o_p)

        return key, chain_ok, job, chain, new_shift

    def _build_datapath(self, m, units, memories, modes, state):
        """Table build (doubling from the chain words) and the stream's addresses and products."""
        lo_w, hi_w, lo_r, hi_r, chain = memories
        building, init, stream_en = modes
        level, step, levels_lo, frame, offset, inv_q, pos, table_set = state
        k = self._params.log_core
        nmax = self._params.max_log_n
        lat = self._general.latency
        unit_a, unit_b, _ = units
        # chain words of this level: b^(2^t) for LO, b^(2^(s + t)) for HI, b = chain[base + offset]
        base = Mux(inv_q, nmax, 0) + offset
        lo_word_r, hi_word_r = chain.read_port(domain="comb"), chain.read_port(domain="comb")
        m.d.comb += [lo_word_r.addr.eq(base + level), hi_word_r.addr.eq(base + (frame >> 1) + level)]
        # level t reads entry j on step j + 1 (j < 2^t); its product is written at 2^t + j
        size = Signal(k + 1, name="level_size")
        m.d.comb += size.eq(Const(1, k + 1) << level)
        issue = building & (step >= 1) & (step <= size)
        j = (step - 1)[:k]
        regs = Module()
        issued = pipe(regs, issue, 1, "issued", reset_less=False)
        dest = pipe(regs, (size + j)[:k], 1 + lat, "dest")
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
                m.d.comb += [rd.addr.eq(Cat(idx[:len(addr)], table_set)), rd.en.eq(building | stream_en)]
        for wp, unit, width in ((lo_w, unit_a, len(lo_a[0])), (hi_w, unit_b, len(hi_a[0]))):
            m.d.comb += [wp.en.eq(init | unit.o_valid), wp.addr.eq(Cat(Mux(init, 0, dest)[:width], table_set)),
                         wp.data.eq(Mux(init, self._one, unit.o_p))]
        m.d.comb += [
            unit_a.en.eq(building | stream_en), unit_b.en.eq(building | stream_en),
            unit_a.i_valid.eq(issued & lo_on), unit_b.i_valid.eq(issued),
            unit_a.i_a.eq(lo_r[0].data),
            unit_a.i_b.eq(Mux(building, lo_word_r.data, hi_r[0].data)),
            unit_b.i_a.eq(Mux(building, hi_r[0].data, lo_r[1].data)),
            unit_b.i_b.eq(Mux(building, hi_word_r.data, hi_r[1].data)),
        ]
