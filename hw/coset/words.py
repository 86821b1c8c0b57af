# amaranth: UnusedElaboratable=no
"""The frame words: every lane's word, constant over its frame, computed round by round."""

from types import SimpleNamespace

import numpy as np
from amaranth.hdl import Array, C, Cat, Const, Elaboratable, Module, Mux, Signal

from nantucket.hw.arith import pipe
from nantucket.hw.model import coset as coset_model

from .common import CosetBuild, OneHot

__all__ = ["FrameWords"]


class FrameWords(Elaboratable):
    """Every lane's frame word (``o_k``), hw.model.coset.frame_words, on its own unit: in a streaming pass
    K_l of round g = c b^(t mod F), t = L g + l (b = g_r forward, h_r inverse; c = 1 or 1/N), kept in
    registers. At the pass start K0_l = c b^l (log2 L doubling levels from the chain words b^(2^t)), which
    are round 0's; while round g streams, round g + 1's, K_l x b^L (at an element start K0 x S_l, K0_l of
    the element, S_l = s'^l its row step's, and b^L x s'^L), L products (``job_cycles``), swapped in at the
    frame edge one enabled cycle ahead of the multipliers (the output scale takes its frame word a cycle
    early); a round shorter than the job waits for it (``stall``). Round 0's words are kept for the next
    streaming pass of the same direction and n under the same shift, unless a row step changed them. In
    forward pass 2 the words are the rows, from a round counter.

    Publishes ``ok`` (round 0's words are out) and ``stall`` (a swap waits for its job); drives ``o_k``.
    ``setup_cycles``, ``job_cycles``: its latencies; ``model()``: ``o_k`` cycle by cycle."""

    #: The frame words' operand register in front of their unit (cycles a product takes more).
    WORD_ISSUE = 1

    def __init__(self, build: CosetBuild, ports, ctl, chain, unit):
        self._b, self._ports, self._ctl, self._chain, self._unit = build, ports, ctl, chain, unit
        # chain words: b^(2^i) at i (g, forward) or nmax + i (h, inverse); s'^(2^i) 2 nmax further
        self._rp_b, self._rp_s = chain.memory.read_port(domain="comb"), chain.memory.read_port(domain="comb")
        self.ok, self.stall = Signal(name="words_ok"), Signal(name="word_stall")

    # -- figures -------------------------------------------------------------------------------------

    @property
    def levels(self) -> int:
        """Doubling levels of the set-up: log2 L."""
        return (self._b.lanes - 1).bit_length()

    def lead(self, log_frame: int, inverse: bool) -> int:
        """Frame edges (enabled cycles where the next pair starts a frame) before round 0's frames reach
        the multipliers: the word generator lets this many pass before its first swap."""
        period = 1 << (log_frame - 1)
        return -(-(self._b.offset(log_frame, inverse) - 1) // period)

    def setup_cycles(self, stepping: bool = False, cached: bool = False) -> int:
        """``ready`` waits at least this many cycles after a streaming pass's ``start`` for the frame words
        (chains already there): latch, two to check, the doubling levels (level t: 2^t products, twice with a row
        step, and the multiplier's latency; none when ``cached``: the last streaming pass had the same
        shift, direction and n, and no row step), one cycle to load the words of round 0."""
        if cached and not stepping:
            return 4
        lat = self._b.mul_latency + self.WORD_ISSUE
        return 4 + sum((1 << t) * (1 + int(stepping)) + lat for t in range(self.levels))

    def job_cycles(self, element_start: bool = False, stepping: bool = False) -> int:
        """Cycles from a round's swap to the next round's words being ready: L products (one more at an
        element start with a row step, b^L x s^L), the multiplier's latency, a cycle to mark them."""
        return self._b.lanes + int(element_start and stepping) + self._b.mul_latency + self.WORD_ISSUE + 1

    def model(self, shift: int, log_n: int, pass_index: int, inverse: bool, cycles: int, *,
              row_step: int = 0, batch: int = 1) -> list[tuple[int, ...]]:
        """Bit-exact reference: ``o_k`` (every lane's word) on the first ``cycles`` enabled cycles of a coset
        pass (hw.model.coset.frame_words: multiplier words of the "coset" kind, indices of the "row" kind;
        None for a pass without words). Round g's words are out from enabled cycle offset - 1 + g 2^(f-1)
        (round 0 from the start) to the pass's last round."""
        b = self._b
        words = coset_model.frame_words(b.params, shift, log_n, pass_index, inverse, batch, row_step)
        if words is None:
            return None
        if coset_model.frame_word_kind(pass_index, inverse) == "coset":
            words = np.vectorize(b.word, otypes=[object])(words)
        f = coset_model.pass_frame(log_n, pass_index)
        period, first = 1 << (f - 1), b.offset(f, inverse) - 1
        rounds = words.shape[0]
        return [tuple(int(w) for w in words[min(rounds - 1, max(0, (c - first) // period))]) for c in range(cycles)]

    # -- the hardware --------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        b, lanes, lb = self._b, self._b.lanes, self.levels
        width, lat = b.width, b.mul_latency
        s = SimpleNamespace(
            k0=[Signal(width, name=f"k0_{l}") for l in range(lanes)],
            sl=[Signal(width, name=f"step_word_{l}") for l in range(lanes)],
            cur=[Signal(width, name=f"word_{l}") for l in range(lanes)],
            nxt=[Signal(width, name=f"next_word_{l}") for l in range(lanes)],
            bw=Signal(width, name="word_base"), bs=Signal(width, name="word_step_base"),    # b^L, s'^L
            nxt_ready=Signal(name="next_words_ready"), busy=Signal(name="job_busy"),
            element_start=Signal(name="job_element_start"),
            level=Signal(range(max(lb, 1) + 1), name="word_level"), finish=Signal(name="word_finish"),
            step=Signal(range(2 * lanes + lat + self.WORD_ISSUE + 1), name="word_setup_cycle"),
            # the level's size 2^t and its last cycle less one, registers set with the level, and the
            # level's end as a flag set the cycle before (compared with ``step`` in front of the set-up's
            # registers it was 6 LUT levels; 0 cycles)
            n_t=Signal(range(lanes + 1), name="word_level_size"),
            level_end=Signal(range(2 * lanes + lat + self.WORD_ISSUE + 1), name="word_level_end"),
            at_end=Signal(name="word_level_at_end"),
            # the issue's index, table (K0 or S) and whether the level still issues (only in SETUP), as
            # registers (computed from ``step`` they were LUT levels in front of the operand select), and
            # whether the index is the level's last (the same)
            idx=Signal(range(lanes), name="word_setup_index"), idx_last=Signal(name="word_setup_index_last"),
            on_step=Signal(name="word_setup_on_step"), issuing=Signal(name="word_setup_issuing"),
            # the job: j < L the lane's next word, j = L b^L x s'^L (an element start with a row step); its
            # state as flags kept beside j (j == L, j the last, the element start with a step; compared and
            # combined in front of the operand selects they were 5 LUT levels; 0 cycles)
            j=Signal(range(lanes + 2), name="job_index"),
            j_word=Signal(name="job_at_base"), j_last=Signal(name="job_last"),
            el_step=Signal(name="job_element_step"),            # element_start & stepping
        )
        base = Mux(self._ctl.inv_q, b.nmax, 0)
        m.d.comb += [self._rp_b.addr.eq(base + Mux(s.finish, lb, s.level)),
                     self._rp_s.addr.eq(2 * b.nmax + base + Mux(s.finish, lb, s.level))]
        self._cache(m, s)
        self._products(m, s)
        self._rounds(m, s)
        self._states(m, s)
        self._swaps(m, s)
        return m

    def _cache(self, m, s):
        """Round 0's words' tag (direction, n, no row step), and c (1 forward, 1/N inverse, as the
        multiplier's words, by n) and the tag's hit registered from the latched fields (the table lookup and
        the tag compare in front of K0[0] were 7 LUT levels): valid from the cycle after the latch, as WAIT
        decides no earlier."""
        b, ctl, new_shift = self._b, self._ctl, self._chain.new_shift
        s.tag = Signal(len(ctl.log_n_q) + 2, name="words_tag")
        s.this_tag = Cat(ctl.log_n_q, ctl.inv_q, ~ctl.stepping_now)     # (words_hit reads it the cycle after the start)
        with m.If(new_shift):
            m.d.sync += s.tag.eq(0)
        inv_n = [b.word(b.field.inv(1 << n)) for n in range(b.nmax + 1)]
        inv_n += [inv_n[-1]] * ((1 << len(ctl.log_n_q)) - len(inv_n))
        s.c_word, s.words_hit = Signal(b.width, name="word_c"), Signal(name="words_hit")
        m.d.sync += [s.c_word.eq(Mux(ctl.inv_q, Array(Const(w, b.width) for w in inv_n)[ctl.log_n_q], b.one)),
                     s.words_hit.eq((s.tag == s.this_tag) & ~ctl.stepping_now & ~new_shift)]
        with m.If(new_shift):
            m.d.sync += s.words_hit.eq(0)

    def level_regs(self, s, t):
        """The set-up registers of level t (a constant, or the level register + 1: then looked up per level,
        the shift and sum in front of level_end were a carry chain and 4 LUT levels)."""
        lb, stepping = self.levels, self._ctl.stepping
        level_wait = self._b.mul_latency + self.WORD_ISSUE    # a level's last product is written this long after its issue
        if isinstance(t, int):
            size = 1 << t
            return [s.n_t.eq(size), s.level_end.eq(Mux(stepping, 2 * size, size) + level_wait - 2), s.at_end.eq(0),
                    s.idx.eq(0), s.idx_last.eq(size == 1), s.on_step.eq(0)]
        sizes = [1 << (u + 1) for u in range(max(lb, 1))]
        return [s.n_t.eq(Array(Const(z, len(s.n_t)) for z in sizes)[t]),
                s.level_end.eq(Mux(stepping, Array(Const(2 * z + level_wait - 2, len(s.level_end)) for z in sizes)[t],
                                   Array(Const(z + level_wait - 2, len(s.level_end)) for z in sizes)[t])),
                s.at_end.eq(0), s.idx.eq(0), s.idx_last.eq(0), s.on_step.eq(0)]

    def _products(self, m, s):
        """The unit's products: the set-up's K0[l + 2^t] = K0[l] b^(2^t), S[l + 2^t] = S[l] s'^(2^t), and the
        job's. The operands are registered before the unit (the selects among 16 words behind the set-up's
        index arithmetic were 7 LUT levels): a product is written ``WORD_ISSUE + lat`` cycles after its
        issue; delay lines read by logic end in a flip-flop (an SRL output starting the path was over the
        NTT clock's period in the timing estimate; 0 cycles), as hw.arith.pipe's last_ff says."""
        b, unit, lanes, lb = self._b, self._unit, self._b.lanes, self.levels
        one = b.one
        jl = s.j[:max(lb, 1)] if lanes > 1 else C(0, 1)
        job_a = Mux(s.j_word, s.bw, Mux(s.element_start, Array(s.k0)[jl], Array(s.cur)[jl]))
        job_b = Mux(s.j_word, s.bs, Mux(s.el_step, Array(s.sl)[jl], Mux(s.element_start, one, s.bw)))
        issue_job = s.busy                                   # busy: the job still issues
        m.d.comb += unit.en.eq(1)
        m.d.sync += [unit.i_valid.eq(s.issuing | issue_job),
                     unit.i_a.eq(Mux(s.issuing, Mux(s.on_step, Array(s.sl)[s.idx], Array(s.k0)[s.idx]), job_a)),
                     unit.i_b.eq(Mux(s.issuing, Mux(s.on_step, self._rp_s.data, self._rp_b.data), job_b))]
        lat = b.mul_latency + self.WORD_ISSUE
        regs = Module()
        w_setup = pipe(regs, s.issuing, lat, "word_setup_write", reset_less=False)
        w_step = pipe(regs, s.on_step, lat, "word_setup_write_step", last_ff=True)
        w_dest = pipe(regs, (s.idx + s.n_t)[:max(lb, 1)], lat, "word_setup_write_index", last_ff=True)
        w_job = pipe(regs, issue_job, lat, "job_write", reset_less=False)
        w_j = pipe(regs, s.j, lat, "job_write_index", last_ff=True)
        w_last = pipe(regs, issue_job & s.j_last, lat, "job_write_last", reset_less=False)
        m.submodules.word_regs = regs
        for l in range(lanes):
            with m.If(w_setup & (w_dest == l)):
                with m.If(w_step):
                    m.d.sync += s.sl[l].eq(unit.o_p)
                with m.Else():
                    m.d.sync += s.k0[l].eq(unit.o_p)
            with m.If(w_job & (w_j == l)):
                m.d.sync += s.nxt[l].eq(unit.o_p)
                with m.If(s.el_step):
                    m.d.sync += s.k0[l].eq(unit.o_p)
        with m.If(w_job & (w_j == lanes)):
            m.d.sync += s.bw.eq(unit.o_p)
        with m.If(w_last):
            m.d.sync += s.nxt_ready.eq(1)
        with m.If(issue_job):
            m.d.sync += [s.j.eq(s.j + 1), s.j_word.eq(s.j + 1 == lanes), s.j_last.eq(s.j + 2 == lanes + s.el_step),
                         s.busy.eq(~s.j_last)]

    def _rounds(self, m, s):
        """The rounds: the pass's round count (``swaps``: the swaps left, ``in_el``: the next job's round,
        mod rounds an element), set up two cycles after start (no enabled cycle comes before the third,
        PREFILL): the round count latched at the start from the run (log2 rounds an element, per_log = the
        other pass's frame size less log2 L; and B - 1), the counters' first values from them, then the
        counters (the subtraction, shifts and compares in one or two cycles were 7 LUT levels); per_log != 0,
        per_log > 1, B > 1 and B > 2 as flags, and the first swap count's != 0 and > 1 from them (compared
        after the shift they were 5 LUT levels into the swap flags; swaps_first = (B << per_log) - 1)."""
        b, ctl, ports, lb, nmax = self._b, self._ctl, self._ports, self.levels, self._b.nmax
        run = ports.run
        s.swaps = Signal(len(ctl.batch_q) + nmax + 1, name="word_swaps_left")
        s.in_el = Signal(nmax + 1, name="job_round_in_element")
        s.el_mask = Signal(nmax + 1, name="rounds_an_element_mask")
        s.row_hi = Signal(max(nmax - lb, 1), name="row_round")
        s.init0, s.init = Signal(name="word_init0"), Signal(name="word_init")
        per_log = Signal(range(nmax + 1), name="rounds_an_element_log")
        batch_m1 = Signal(len(ctl.batch_q), name="batch_less1")
        per_log_nz, per_log_gt1 = Signal(name="rounds_an_element_log_nz"), Signal(name="rounds_an_element_log_gt1")
        batch_gt1, batch_gt2 = Signal(name="batch_gt1"), Signal(name="batch_gt2")
        with m.If(ports.start):
            other = Mux(ports.pass2, (run.log_n + 1) >> 1, run.log_n >> 1)
            m.d.sync += [per_log.eq((other - lb).as_unsigned()),
                         batch_m1.eq(Mux(run.batch == 0, 0, run.batch - 1)),
                         per_log_nz.eq(other != lb), per_log_gt1.eq(other > lb + 1),
                         batch_gt1.eq(run.batch > 1), batch_gt2.eq(run.batch > 2)]
        mask_first = Signal(len(s.el_mask), name="rounds_an_element_mask_first")
        # one round an element (el_mask == 0), at most two (2 & el_mask == 0) and in_el == 0 as flags (the
        # compares in front of the job's element start were 5 LUT levels; 0 cycles)
        s.one_round, s.two_rounds = Signal(name="element_one_round"), Signal(name="element_two_rounds")
        s.in_el_zero = Signal(name="job_round_zero")
        swaps_first = Signal(len(s.swaps), name="word_swaps_first")
        s.swaps_first_nz, swaps_first_gt1 = Signal(name="word_swaps_first_nz"), Signal(name="word_swaps_first_gt1")
        m.d.sync += [s.swaps_first_nz.eq(batch_gt1 | per_log_nz),
                     swaps_first_gt1.eq(batch_gt2 | per_log_gt1 | (batch_gt1 & per_log_nz))]
        below = Cat(*(per_log > i for i in range(len(s.el_mask))))      # 2^per_log - 1, without a subtraction
        go = ports.start & ctl.streams_now
        m.d.sync += [s.init0.eq(go | (ports.start & run.coset & ~run.inverse & ports.pass2)), s.init.eq(s.init0),
                     mask_first.eq(below), swaps_first.eq((batch_m1 << per_log) | below)]
        # swaps != 0 and swaps > 1 kept as flags beside their counter (compared on the way to the swap's
        # enable they were LUT levels in front of the words' fan-out; 0 cycles)
        s.swaps_nz, s.swaps_gt1 = Signal(name="word_swaps_nz"), Signal(name="word_swaps_gt1")
        self._frame_edges(m, s)
        with m.If(s.init):
            m.d.sync += [s.el_mask.eq(mask_first), s.one_round.eq(per_log == 0), s.two_rounds.eq(per_log <= 1),
                         s.swaps.eq(swaps_first),
                         s.swaps_nz.eq(s.swaps_first_nz), s.swaps_gt1.eq(swaps_first_gt1), s.row_hi.eq(0)]
        # in_el == 0, registered from in_el (in_el changes at swaps, at least two cycles apart; FINISH sets
        # both)
        m.d.sync += s.in_el_zero.eq(s.in_el == 0)

    def _frame_edges(self, m, s):
        """The frame edge (the next enabled cycle's pair starts a frame) and the edges to let pass first
        (``lead``); kpos == period_mask and lead == 0 kept as flags beside their counters, and lead == 0 &
        swaps != 0 as one more (``armed``: a swap's condition in one LUT; with the state decode in front of
        the counters and the job's start it was 6 LUT levels; 0 cycles). The frame size's first values are
        looked up from the latched frame size a cycle ahead of init (in front of the counters with init's
        other work they were 4 LUT levels and a carry chain; 0 cycles)."""
        b, ctl, k = self._b, self._ctl, self._b.k
        period_mask = Signal(max(k - 1, 1), name="word_period_mask")
        kpos = Signal(max(k - 1, 1), name="word_position")
        lead = Signal(range(max(self.lead(f, inv) for f in range(2, k + 1) for inv in (0, 1)) + 1), name="word_lead")
        kpos_last, lead_zero = Signal(name="word_position_last"), Signal(name="word_lead_zero")
        s.armed = Signal(name="word_swap_armed")
        firsts = [Signal.like(sig, name=f"{sig.name}_first") for sig in (period_mask, kpos, kpos_last, lead, lead_zero)]
        # (and whether the frame size is one, 2 <= f <= k, with them: decoded in front of ``armed`` with its
        # other terms it made a chain of 5 LUTs in the timing estimate; 0 cycles)
        frame_ok = Signal(name="word_frame_ok_first")
        m.d.sync += frame_ok.eq(0)
        with m.Switch(ctl.frame):
            for f in range(2, k + 1):
                with m.Case(f):
                    m.d.sync += frame_ok.eq(1)
                    period = 1 << (f - 1)
                    first = {inv: (1 - b.offset(f, inv)) % period for inv in (False, True)}
                    m.d.sync += [sig.eq(v) for sig, v in zip(firsts, (
                        period - 1, Mux(ctl.inv_q, first[True], first[False]),
                        Mux(ctl.inv_q, first[True] == period - 1, first[False] == period - 1),
                        Mux(ctl.inv_q, self.lead(f, True), self.lead(f, False)),
                        Mux(ctl.inv_q, self.lead(f, True) == 0, self.lead(f, False) == 0)))]
        with m.If(s.init):                  # the second cycle after start (no enabled cycle yet)
            with m.If(frame_ok):
                m.d.sync += [sig.eq(v) for sig, v in zip((period_mask, kpos, kpos_last, lead, lead_zero), firsts)]
                m.d.sync += s.armed.eq(firsts[4] & s.swaps_first_nz)
        en = self._ports.en
        s.at_swap = Signal(name="word_at_swap")
        m.d.comb += s.at_swap.eq(kpos_last & s.armed)
        m.d.comb += self.stall.eq(ctl.coset_q & s.at_swap & ~s.nxt_ready)
        with m.If(en & ~s.init):
            m.d.sync += [kpos.eq((kpos + 1) & period_mask), kpos_last.eq(((kpos + 1) & period_mask) == period_mask)]
            with m.If(en & kpos_last & ~lead_zero):
                m.d.sync += [lead.eq(lead - 1), lead_zero.eq(lead == 1), s.armed.eq((lead == 1) & s.swaps_nz)]

    def _begin_job(self, m, s, starts_element):
        m.d.sync += [s.busy.eq(1), s.j.eq(0), s.j_word.eq(0), s.element_start.eq(starts_element),
                     s.el_step.eq(starts_element & self._ctl.stepping),
                     s.j_last.eq(self._b.lanes + (starts_element & self._ctl.stepping) == 1)]

    def _states(self, m, s):
        """IDLE until a streaming pass starts; WAIT for the chains (round 0's words kept: to FINISH); SETUP
        the doubling levels; FINISH: round 0's words out, round 1's job; RUN until the next streaming pass.
        The pass's start is registered on the way (+0 cycles: WAIT decides from the second cycle after the
        start on, ``chains_ok``); run_stream: the machine is in RUN in a streaming pass."""
        b, ctl, lb, one = self._b, self._ctl, self.levels, self._b.one
        go_q = Signal(name="word_go")
        m.d.sync += go_q.eq(self._ports.start & ctl.streams_now)
        s.run_stream = Signal(name="word_run_streaming")
        st = OneHot("words", ("IDLE", "WAIT", "SETUP", "FINISH", "RUN"), init="IDLE")
        with st.during(m, "IDLE"):
            with m.If(go_q):
                m.d.sync += [self.ok.eq(0), s.nxt_ready.eq(0), s.busy.eq(0)]
                st.goto("WAIT")
        with st.during(m, "WAIT"):
            with m.If(ctl.chains_ok & s.words_hit):
                st.goto("FINISH")
            with m.Elif(ctl.chains_ok):
                m.d.sync += [s.k0[0].eq(s.c_word), s.sl[0].eq(one), s.level.eq(0), s.step.eq(0), s.tag.eq(s.this_tag),
                             s.issuing.eq(1 if lb else 0)] + self.level_regs(s, 0)
                st.goto("SETUP" if lb else "FINISH")
        if lb:
            with st.during(m, "SETUP"):
                with m.If(s.issuing):
                    with m.If(s.idx_last):
                        m.d.sync += [s.idx.eq(0), s.idx_last.eq(s.n_t == 1), s.on_step.eq(1),
                                     s.issuing.eq(ctl.stepping & ~s.on_step)]
                    with m.Else():
                        m.d.sync += [s.idx.eq(s.idx + 1), s.idx_last.eq(s.idx + 2 == s.n_t)]
                with m.If(s.at_end):
                    m.d.sync += [s.step.eq(0), s.level.eq(s.level + 1), s.issuing.eq(1)] + self.level_regs(s, s.level)
                    with m.If(s.level == lb - 1):
                        m.d.sync += s.issuing.eq(0)
                        st.goto("FINISH")
                with m.Else():
                    m.d.sync += [s.step.eq(s.step + 1), s.at_end.eq(s.step == s.level_end)]
        with st.during(m, "FINISH"):
            m.d.comb += s.finish.eq(1)
            m.d.sync += [c.eq(w) for c, w in zip(s.cur, s.k0)]
            # round 1's job (round 1 starts an element when an element has one round)
            m.d.sync += [s.bw.eq(self._rp_b.data), s.bs.eq(Mux(ctl.stepping, self._rp_s.data, one)), self.ok.eq(1),
                         s.in_el.eq(2 & s.el_mask), s.in_el_zero.eq(s.two_rounds)]
            with m.If(s.swaps_nz):
                self._begin_job(m, s, s.one_round)
            m.d.sync += s.run_stream.eq(ctl.coset_q)
            st.goto("RUN")
        with st.during(m, "RUN"):
            with m.If(go_q):
                m.d.sync += [self.ok.eq(0), s.nxt_ready.eq(0), s.busy.eq(0), s.run_stream.eq(0)]
                st.goto("WAIT")
        with m.If(self._ports.start):       # (a pass that does not stream leaves the machine in RUN)
            m.d.sync += s.run_stream.eq(0)

    def _swaps(self, m, s):
        """A swap (never in the cycles go_q is seen: no enabled cycle comes within two of the start): the
        next round's words in, the job after it begins; in forward pass 2 the round counter moves on. The
        words out: the rows in forward pass 2, else the round's."""
        ctl, lb, en = self._ctl, self.levels, self._ports.en
        with m.If(en & s.at_swap & s.nxt_ready & s.run_stream):
            m.d.sync += [c.eq(w) for c, w in zip(s.cur, s.nxt)]
            m.d.sync += [s.nxt_ready.eq(0), s.swaps.eq(s.swaps - 1), s.swaps_nz.eq(s.swaps_gt1),
                         s.swaps_gt1.eq(s.swaps > 2), s.armed.eq(s.swaps_gt1)]
            with m.If(s.swaps_gt1):
                self._begin_job(m, s, s.in_el_zero)
                m.d.sync += s.in_el.eq((s.in_el + 1) & s.el_mask)
        with m.If(en & ~s.init & s.at_swap & ctl.rows_q):
            m.d.sync += [s.swaps.eq(s.swaps - 1), s.swaps_nz.eq(s.swaps_gt1), s.swaps_gt1.eq(s.swaps > 2),
                         s.armed.eq(s.swaps_gt1), s.row_hi.eq((s.row_hi + 1) & s.el_mask)]
        for l, port in enumerate(self._ports.o_k):
            row = Cat(Const(l, lb), s.row_hi) if lb else s.row_hi
            m.d.comb += port.eq(Mux(ctl.rows_q, row, s.cur[l]))
