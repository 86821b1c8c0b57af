# amaranth: UnusedElaboratable=no
"""The table builder: LO and HI of a frame, level by level by doubling from the chain words."""

from amaranth.hdl import Const, Elaboratable, Module, Mux, Signal

from nantucket.hw.arith import pipe
from nantucket.hw.model import coset as coset_model

from .common import CosetBuild

__all__ = ["TableBuilder"]


class TableBuilder(Elaboratable):
    """Builds a pass's tables LO[j] = b^j (j < 2^s) and HI[i] = b^(i 2^s) (i < 2^(f-s)), s = floor(f/2),
    in the pass's BUILD state: ceil(f/2) levels, level t doubling 2^t entries of each table with the chain
    words b^(2^t) (LO) and b^(2^(s + t)) (HI), one unit per table (``FactorStream``'s two, which it drives
    through its outputs); then, in a stepping pass, the step's set (STEP_SET) from the step's chain words.
    A level starts as soon as the entries it reads are written.

    Publishes the read index of the entry a level doubles (``read_index``), the issue (``issued``,
    ``lo_on``: LO has a level more to go), the written entry (``dest``), ``init`` (entry 0 is written, 1),
    the chain words (``lo_word``, ``hi_word``), ``build_step`` (the step's set is being built), ``set_done``
    (a set's last level ends) and ``done`` (the build ends). ``build_cycles(f)``: its length,
    ``model()``: the tables it writes."""

    def __init__(self, build: CosetBuild, ctl, chain):
        self._b, self._ctl = build, ctl
        k, lat = build.k, build.mul_latency
        self._lo_word_r, self._hi_word_r = chain.memory.read_port(domain="comb"), chain.memory.read_port(domain="comb")
        self.lo_word, self.hi_word = self._lo_word_r.data, self._hi_word_r.data
        self.level = Signal(range(k + 1), name="level")
        self.step = Signal(range((1 << k) + lat + 3), name="level_cycle")
        self.read_index, self.dest = Signal(k, name="build_read_index"), Signal(k, name="build_dest")
        self.issued, self.lo_on = Signal(name="build_issued"), Signal(name="build_lo_on")
        self.init = Signal(name="init")
        self.build_step = Signal(name="build_step")          # building the step's tables (set STEP_SET)
        self.set_done, self.done = Signal(name="build_set_done"), Signal(name="build_done")

    # -- figures -------------------------------------------------------------------------------------

    def level_cycles(self, level: int, last: bool) -> int:
        """Cycles of table level t: it starts 2^t products (reading entry j on its step j + 1; the
        multipliers take the entry and the level's chain word one cycle later, so the level lasts at
        least to step 2^t + 1: ending it on its last issue gave that product the next level's word). The
        next level starts once its reads of this level's entries find them written (lat + 3 cycles
        after they were read), the last level waits for all of them."""
        written = self._b.mul_latency + 3
        if last:
            return (1 << level) - 1 + written
        return max((1 << level) + 2, written - (1 << level))

    def build_cycles(self, log_frame: int) -> int:
        """Cycles to build the two tables of a frame of 2^f points (ceil(f/2) levels)."""
        levels = log_frame - log_frame // 2
        return sum(self.level_cycles(t, t == levels - 1) for t in range(levels))

    def model(self, base_word: int, log_frame: int) -> tuple[list[int], list[int]]:
        """Bit-exact reference: (LO, HI) as the multiplier's words, from the pass base's word (the chain
        word b, ``ChainJob.model``): hw.model.coset.factor_tables of b's value."""
        b = self._b
        value = b.general.model(1, base_word)            # a word times the word of 1 is its value
        return tuple([b.word(v) for v in table] for table in coset_model.factor_tables(value, log_frame, b.field))

    # -- the hardware --------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        self._levels(m)
        self._issue(m)
        return m

    def _levels(self, m):
        """The build's level bookkeeping in registers: the last level (from the latched frame size), the
        levels left, whether this is the last, and this level's last cycle (compared with ``level`` through
        the frame size's subtraction it was 5 LUT levels and a carry chain; 0 cycles); the level's end as a
        flag set the cycle before, from ``level_end`` = its last step less one (compared with ``step`` in
        front of the level's registers it was 5 LUT levels; 0 cycles); levels_left == 1, last_level == 0
        and == 1 as flags beside them (0 cycles); the build's end (the last level of the last table set:
        level_last and no step tables to follow) as a flag (with the state's decode in front of the state
        flags it was 5 LUT levels; 0 cycles)."""
        b, ctl, k, lat = self._b, self._ctl, self._b.k, self._b.mul_latency
        level, step = self.level, self.step
        last_level = Signal(range(k + 1), name="last_level")
        first_build = Signal(name="first_build_cycle")      # level 0, step 0: the table's entry 0 is written
        levels_left = Signal(range(k + 1), name="levels_left")
        level_last = Signal(name="level_last")
        level_end = Signal(range((1 << k) + lat + 3), name="level_end")
        at_end = Signal(name="level_at_end")
        in_range = self._in_range = Signal(name="level_issues")   # 1 <= step <= 2^level: the level issues
        left_one, last_zero, last_one = Signal(name="levels_left_one"), Signal(name="last_level_zero"), \
            Signal(name="last_level_one")
        to_step = Signal(name="build_step_next")     # level_last & stepping & ~build_step: the step's tables next
        build_last = Signal(name="build_last_level")
        levels_hi = ctl.frame - (ctl.frame >> 1)
        m.d.sync += [last_level.eq(levels_hi - 1), last_zero.eq(levels_hi == 1), last_one.eq(levels_hi == 2)]
        # level_end's values looked up ahead: of level 0 (from the frame size) and of the level after this
        # one (from level and levels_left, a cycle after they change: a level lasts more than one), picked
        # at the level's end (the lookups there were 5 LUT levels in the 31-bit fields; 0 cycles)
        end_first, end_next = Signal.like(level_end, name="level_end_first"), Signal.like(level_end, name="level_end_next")
        m.d.sync += end_first.eq(Mux(levels_hi == 1, self.level_cycles(0, True) - 2, self.level_cycles(0, False) - 2))
        with m.Switch(level):
            for t in range(k - k // 2 - 1):
                with m.Case(t):
                    m.d.sync += end_next.eq(Mux(left_one, self.level_cycles(t + 1, True) - 2,
                                                self.level_cycles(t + 1, False) - 2))
        first_level = [levels_left.eq(last_level), level_last.eq(last_zero), left_one.eq(last_one), at_end.eq(0),
                       level_end.eq(end_first)]
        stepping, cached = ctl.stepping, ctl.cached
        with m.If(ctl.begin):
            m.d.sync += first_level
            m.d.sync += [level.eq(0), step.eq(0), in_range.eq(0), self.build_step.eq(cached), first_build.eq(1),
                         build_last.eq(last_zero & (~stepping | cached)), to_step.eq(last_zero & stepping & ~cached)]
        building = ctl.states["BUILD"]
        m.d.comb += self.init.eq(building & first_build)
        with m.If(building):
            m.d.sync += first_build.eq(0)
            with m.If(at_end):
                m.d.sync += [step.eq(0), in_range.eq(0), level.eq(level + 1), levels_left.eq(levels_left - 1),
                             level_last.eq(left_one), left_one.eq(levels_left == 2), at_end.eq(0),
                             build_last.eq(left_one & (~stepping | self.build_step)),
                             to_step.eq(left_one & stepping & ~self.build_step), level_end.eq(end_next)]
                with m.If(level_last & to_step):                # then the step's tables
                    m.d.sync += [self.build_step.eq(1), level.eq(0), first_build.eq(1)] + first_level
                    m.d.sync += [build_last.eq(last_zero), to_step.eq(0)]
            with m.Else():
                m.d.sync += [step.eq(step + 1), at_end.eq(step == level_end),
                             in_range.eq(step < (Const(1, k + 1) << level))]
        m.d.comb += [self.set_done.eq(building & at_end & level_last), self.done.eq(building & at_end & build_last)]

    def _issue(self, m):
        """Level t reads entry j on step j + 1 (j < 2^t); its product is written at 2^t + j. The chain words
        of the level: b^(2^t) for LO, b^(2^(s + t)) for HI, b = chain[base + offset] (the step's chain from
        2 nmax on); the range as a flag kept beside step (compared here it was 5 LUT levels; 0 cycles)."""
        b, ctl, k = self._b, self._ctl, self._b.k
        base = Mux(ctl.inv_q, b.nmax, 0) + ctl.offset + Mux(self.build_step, 2 * b.nmax, 0)
        m.d.comb += [self._lo_word_r.addr.eq(base + self.level),
                     self._hi_word_r.addr.eq(base + (ctl.frame >> 1) + self.level)]
        size = Signal(k + 1, name="level_size")
        m.d.comb += size.eq(Const(1, k + 1) << self.level)
        issue = ctl.building & self._in_range
        j = (self.step - 1)[:k]
        regs = Module()
        m.d.comb += [self.read_index.eq(j),
                     self.issued.eq(pipe(regs, issue, 1, "issued", reset_less=False)),
                     self.dest.eq(pipe(regs, (size + j)[:k], 1 + b.mul_latency, "dest", last_ff=True)),
                     self.lo_on.eq(pipe(regs, self.level < (ctl.frame >> 1), 1, "lo_on", reset_less=False))]
        m.submodules.build_regs = regs
