# amaranth: UnusedElaboratable=no
"""The chain job: the squares of the shift, of its inverse and of the row step, in the background."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal, unsigned
from amaranth.lib.memory import Memory

from nantucket.hw.model import coset as coset_model

from .common import CosetBuild

__all__ = ["ChainJob"]


class ChainJob(Elaboratable):
    """The background jobs on the chain unit: for the shift g (chain 0) C[i] = g^(2^i) at i, h^(2^i) at
    nmax + i (h = g^(p-2), by right-to-left square-and-multiply, i < nmax = 2k), for a row step s > 1
    (chain 1) s^(2^i) and (s^-1)^(2^i) at 2 nmax + i and 3 nmax + i, each recomputed whenever its value
    differs from the one it was computed for (the shift's first): (exponent bits + nmax) rounds of
    ``round_cycles``, one more to encode the operand where the multiplier's words are Montgomery's.

    Reads ``run.coset_shift``, ``run.row_step`` and the chain unit's product; publishes the chain words
    (``memory``, read through ports the other units take at construction), per chain ``key`` and ``ok``,
    ``busy``, ``new_shift`` (1 in the cycle a job for the shift starts), per chain ``same`` (key == its
    operand, registered), ``fresh`` (the cycle after a job began, whose compares are stale), ``step_on``
    (the row step is not 0 or 1) and its operands for the chain unit (``op_valid``, ``op_a``, ``op_b``:
    an AND-OR term of the unit's select). ``cycles``: a job's length, ``model()``: the words it writes.
    """

    def __init__(self, build: CosetBuild, run, unit):
        self._b, self._run, self._unit = build, run, unit
        nmax, width = build.nmax, build.width
        self.memory = Memory(shape=unsigned(width), depth=4 * nmax, init=[])
        self._write = self.memory.write_port()
        self.chains = [SimpleNamespace(key=Signal(64, name=f"chain{i}_key"), ok=Signal(name=f"chain{i}_ok"))
                       for i in range(2)]
        self.busy = Signal(name="chain_busy")
        self.new_shift = Signal(name="new_shift")
        self.same = [Signal(name=f"chain{i}_same") for i in range(2)]
        self.fresh = Signal(name="chain_fresh")
        self.step_on = Signal(name="chain_step_on")
        self.op_valid = Signal(name="chain_op_valid")
        self.op_a, self.op_b = Signal(width, name="chain_op_a"), Signal(width, name="chain_op_b")

    # -- figures -------------------------------------------------------------------------------------

    @property
    def round_cycles(self) -> int:
        """Cycles of a chain round: issue the square and the product, take both."""
        return self._b.mul_latency + 2

    @property
    def exponent_rounds(self) -> int:
        """Rounds of h = g^(p-2): the exponent's bits (64 for Goldilocks)."""
        return coset_model.inverse_exponent(self._b.field).bit_length()

    #: Cycles from a change of an operand to the decision to start its job: the registered compare and
    #: the registered need. The chain's ``ok`` (with ``same``) follows ``cycles`` later.
    NOTICE = 2

    @property
    def cycles(self) -> int:
        """Cycles of a job, from the decision to start it to its chain's ``ok`` seen with the compare of
        its operand: the exponent rounds, nmax rounds of h's squares (and one round to encode the operand,
        ``CosetBuild.encodes``), the start registered, the final round's flag and ``ok``."""
        return (self.exponent_rounds + self._b.nmax + int(self._b.encodes)) * self.round_cycles + 3

    def model(self, shift: int, row_step: int = 0) -> list[int]:
        """Bit-exact reference: the chain memory once both jobs are done, as the multiplier's words
        (chain 1's half None without a row step): (g, h, s, s^-1) = the pass bases of
        hw.model.coset.pass_base at chain offset 0, squared i < nmax times."""
        field, nmax = self._b.field, self._b.nmax
        roots = [coset_model.pass_base(shift, 0, 2, False, field), coset_model.pass_base(shift, 0, 1, True, field)]
        roots += ([coset_model.pass_base(row_step, 0, 2, False, field),
                   coset_model.pass_base(row_step, 0, 1, True, field)] if row_step > 1 else [None, None])
        return [None if r is None else self._b.word(field.pow_(r, 1 << i)) for r in roots for i in range(nmax)]

    # -- the hardware --------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        m.submodules.chain = self.memory
        b, rounds = self._b, self.exponent_rounds
        width = b.width
        s = SimpleNamespace(
            phase=Signal(name="chain_phase"),                   # the job's chain
            rnd=Signal(range(rounds + b.nmax + 1), name="chain_round"),
            cyc=Signal(range(self.round_cycles), name="chain_cycle"),
            sq=Signal(width, name="chain_square"),
            # the square's second operand: sq, or R^2 in the encoding round (a register beside sq: the pick
            # in front of the unit's operand select was a LUT level of 5; 0 cycles)
            sq_b=Signal(width, name="chain_square_b"),
            acc=Signal(width, name="chain_acc"),
            # encoding: the job's first round, sq = operand * encode(one) = the operand's word (Montgomery
            # only; without it the gates below are the plain conditions)
            encoding=Signal(name="chain_encoding") if b.encodes else None,
            final=Signal(name="chain_final"),       # rnd == rounds + nmax, set with the increment (0 cycles)
            # the exponent's bit of this round, registered (the constant's 64:1 select in front of the
            # unit's operand mux was 7 LUT levels): rnd changes at a round's last cycle, the bit is read at
            # its second
            ebit=Signal(name="chain_exponent_bit"),
            # likewise whether the round is an exponent round, for the operand selects of its second and
            # later cycles (0 cycles)
            in_exp_q=Signal(name="chain_in_exponent"),
            exp_last=Signal(name="chain_exponent_last"),
        )
        s.live = (lambda cond: cond & ~s.encoding) if b.encodes else (lambda cond: cond)
        s.in_exp = s.rnd < rounds
        lat = b.mul_latency
        # (the cycle's compares the round's work reads, as flags kept beside the counters: decoded in front
        # of the multiplier's operand selects and the square register they were 5 LUT levels in the 31-bit
        # fields; 0 cycles)
        s.at = {v: Signal(name=f"chain_cycle_is{v}", init=int(v == 0))
                for v in sorted({0, 1, lat, lat + 1, self.round_cycles - 1})}
        exponent = Const(coset_model.inverse_exponent(b.field), rounds)
        m.d.sync += [s.ebit.eq(exponent.bit_select(s.rnd[:(rounds - 1).bit_length()], 1)), s.in_exp_q.eq(s.in_exp)]
        cw = self._write
        m.d.comb += [self._unit.en.eq(1), cw.data.eq(s.sq),
                     cw.addr.eq(Mux(s.in_exp, s.rnd, s.rnd - rounds + b.nmax) + Mux(s.phase, 2 * b.nmax, 0)),
                     cw.en.eq(s.live(self.busy & (s.cyc == 0) & (~s.in_exp | (s.rnd < b.nmax))
                                     & (s.rnd < rounds + b.nmax)))]
        self._compares(m)
        self._round_counters(m, s)
        self._starts(m, s)
        self._work(m, s)
        return m

    def _compares(self, m):
        """The 64-bit compares of each key with its operand, registered (in front of the job's start they
        were 7 LUT levels): a changed value is noticed a cycle later; ``fresh`` marks the cycle after a job
        began, whose compare is of the key before it (in eight registered parts: one 64-bit compare was 6
        LUT levels, 16-bit parts 5). Whether the row step is not 0 or 1, in four registered parts (the
        63-bit OR in front of a register was 5 LUT levels); valid the cycle after the step is."""
        operands = (self._run.coset_shift, self._run.row_step)
        step_parts = [Signal(name=f"chain_step_on{j}") for j in range(4)]
        m.d.comb += self.step_on.eq(Cat(*step_parts).any())
        for i in range(2):
            parts = [Signal(name=f"chain{i}_same{j}") for j in range(8)]
            m.d.sync += [part.eq(self.chains[i].key[8 * j:8 * j + 8] == operands[i][8 * j:8 * j + 8])
                         for j, part in enumerate(parts)]
            m.d.comb += self.same[i].eq(Cat(*parts).all())
        m.d.sync += [part.eq(operands[1][max(16 * j, 1):16 * j + 16].any()) for j, part in enumerate(step_parts)]
        m.d.sync += self.fresh.eq(0)

    def _round_counters(self, m, s):
        """The round counters: cleared while no job runs (a job begins in such a cycle), else counting until
        the final round (apart from the job's start and stop conditions: those in front of them were 6 LUT
        levels; 0 cycles), with the cycle flags and rnd == rounds - 1 beside them."""
        rounds, nmax, last = self.exponent_rounds, self._b.nmax, self.round_cycles - 1
        with m.If(~self.busy):
            m.d.sync += [s.rnd.eq(0), s.cyc.eq(0), s.final.eq(0), s.exp_last.eq(rounds == 1)]
            m.d.sync += [flag.eq(v == 0) for v, flag in s.at.items()]
        with m.Elif(~s.final):
            m.d.sync += s.cyc.eq(Mux(s.at[last], 0, s.cyc + 1))
            m.d.sync += [flag.eq(s.at[last] if v == 0 else (s.cyc == v - 1)) for v, flag in s.at.items()]

            def next_round():
                m.d.sync += [s.rnd.eq(s.rnd + 1), s.final.eq(s.rnd == rounds + nmax - 1),
                             s.exp_last.eq(s.rnd == rounds - 2)]
            with m.If(s.at[last]):
                if self._b.encodes:
                    with m.If(s.encoding):
                        m.d.sync += s.encoding.eq(0)
                    with m.Else():
                        next_round()
                else:
                    next_round()

    def _starts(self, m, s):
        """A job's start decided a cycle ahead, registered (decided in the cycle it loads the square
        register, from the compares' parts and the chain flags, it was 6 LUT levels; +1 cycle a job,
        ``cycles``); no decision in the cycle a start is registered for (and the chains' need of a job
        registered before that, from the compares' parts and the flags: in one cycle with the idle
        condition they were 5 LUT levels in the 31-bit fields; +1 cycle, ``cycles``; not in the cycle after
        a job ran, whose need is of the flags before its end). A job stops when its value changes under
        it (then it starts again) or at its final round."""
        b, chains, same = self._b, self.chains, self.same
        operands = (self._run.coset_shift, self._run.row_step)
        starts = [Signal(name=f"chain{i}_start") for i in range(2)]
        needs = [Signal(name=f"chain{i}_needed") for i in range(2)]
        job_q = Signal(name="chain_busy_q")
        m.d.sync += [job_q.eq(self.busy), needs[0].eq(~(chains[0].ok & same[0])),
                     needs[1].eq(chains[0].ok & same[0] & self.step_on & ~(chains[1].ok & same[1]))]
        idle = ~self.busy & ~job_q & ~self.fresh & ~starts[0] & ~starts[1]
        m.d.sync += [starts[0].eq(idle & needs[0]), starts[1].eq(idle & needs[1])]
        m.d.comb += self.new_shift.eq(starts[0])
        for i in range(2):
            with m.If(starts[i]):
                m.d.sync += [chains[i].key.eq(operands[i]), s.sq.eq(operands[i]), s.acc.eq(b.one),
                             s.sq_b.eq(b.general.encode(b.one) if b.encodes else operands[i]),
                             self.busy.eq(1), chains[i].ok.eq(0), s.phase.eq(i), self.fresh.eq(1)]
                if b.encodes:
                    m.d.sync += s.encoding.eq(1)
        with m.If(self.busy & ~self.fresh & ~Mux(s.phase, same[1], same[0])):   # changed under the job: again
            m.d.sync += self.busy.eq(0)
        with m.Elif(s.final):
            m.d.sync += self.busy.eq(0)
            with m.If(s.phase):
                m.d.sync += chains[1].ok.eq(1)
            with m.Else():
                m.d.sync += chains[0].ok.eq(1)

    def _work(self, m, s):
        """The round's work, while a job runs (not gated by its start and stop conditions, as the counters:
        a stopped job's last products are never used), and the square's and the product's operands as this
        job's term of the chain unit's AND-OR select."""
        lat, unit = self._b.mul_latency, self._unit
        with m.If(self.busy & ~s.final):
            with m.If(s.at[lat]):
                m.d.sync += [s.sq.eq(unit.o_p), s.sq_b.eq(unit.o_p)]
            with m.If(s.live(s.at[lat + 1] & s.in_exp_q)):
                m.d.sync += s.acc.eq(unit.o_p)
                with m.If(s.exp_last):                # acc is h now: its squares come next
                    m.d.sync += [s.sq.eq(unit.o_p), s.sq_b.eq(unit.o_p)]
        running = self.busy & ~s.final
        square, product = running & s.at[0], running & s.live(s.at[1] & s.in_exp_q)
        m.d.comb += [self.op_valid.eq(square | product),
                     self.op_a.eq(Mux(square, s.sq, 0) | Mux(product, s.acc, 0)),
                     self.op_b.eq(Mux(square, s.sq_b, 0) | Mux(product, Mux(s.ebit, s.sq, self._b.one), 0))]
