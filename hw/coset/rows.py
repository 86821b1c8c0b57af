# amaranth: UnusedElaboratable=no
"""The row-step updater: element boundaries of a stepping pass and the next element's tables."""

from amaranth.hdl import C, Cat, Elaboratable, Module, Mux, Signal

from nantucket.hw.arith import pipe
from nantucket.hw.model import coset as coset_model

from .common import CosetBuild
from .stream import TableMemories

__all__ = ["RowStepUpdater"]


class RowStepUpdater(Elaboratable):
    """Row steps s > 1 (element r of the batch has the shift g s^r): element 0 streams from the shift's
    tables; while element r streams, the chain unit (idle once the chains are there) computes element
    r + 1's tables into one of two work sets, LO[j] x LOc[j] then HI[i] x HIc[i] (the step's set), one
    product a cycle; the stream changes sets where the next element starts (every element_cycles =
    2^n / 2L enabled cycles; inverse: offset by the lanes' latency to their output multipliers). Where the
    next set is not ready yet (an element shorter than the update), ``stall`` holds the stream.

    Publishes ``stall``, the sets the stream reads (``cur``; ``nxt`` where ``at_edge``), the update's writes
    (``w_valid``, ``w_lo``: to LO, ``w_entry``, ``w_set``, ``w_data``) and its operands for the chain unit
    (``op_valid``, ``op_a``, ``op_b``). ``update_cycles(f)``: an update's length, ``model()``: its tables."""

    def __init__(self, build: CosetBuild, ports, ctl, builder, memories: TableMemories, unit):
        self._b, self._ports, self._ctl, self._builder, self._mem, self._unit = build, ports, ctl, builder, memories, unit
        p, bits = build.params, memories.SET_BITS
        self.cur = Signal(bits, name="element_set")
        # the next element's set and the one after it, registers that trade places at each edge (from a
        # compare of cur in front of the update's destination it was 5 LUT levels; 0 cycles)
        self.nxt, self._nxt_other = Signal(bits, name="next_set"), Signal(bits, name="next_set_other")
        self.at_edge, self.stall = Signal(name="at_edge"), Signal(name="step_stall")
        self.nxt_ready = Signal(name="next_ready")
        each_max = (1 << (build.nmax - 1)) // p.lanes + max(max(build.offsets.values()), build.input_offset) + 1
        self._left = Signal(range(each_max + 1), name="element_left")     # stream reads before the next element
        self.update_start = Signal(name="update_start")
        self._upd_src, self.w_set = Signal(bits, name="update_src"), Signal(bits, name="update_dst")
        self.w_valid, self.w_lo = Signal(name="update_w_valid"), Signal(name="update_w_lo")
        self.w_entry = Signal(max(build.k - build.k // 2, 1), name="update_w_entry")
        self.w_data = unit.o_p
        self.op_valid = Signal(name="update_op_valid")
        self.op_a, self.op_b = Signal(build.width, name="update_op_a"), Signal(build.width, name="update_op_b")

    # -- figures -------------------------------------------------------------------------------------

    def update_cycles(self, log_frame: int) -> int:
        """Cycles from an element's start (its first stream read, where the update starts) to the next
        element's tables being readable, both counted: the update's products (hw.model.coset.update_products), two cycles to start, a read, the
        multiplier's latency and a cycle to mark the set ready."""
        return coset_model.update_products(log_frame) + self._b.mul_latency + 4

    def step_stall_cycles(self, log_frame: int, log_n: int) -> int:
        """Cycles ``stall`` holds the stream at each element boundary (no other stalls): the update's
        cycles past the element's."""
        return max(0, self.update_cycles(log_frame) - self._b.element_cycles(log_n))

    def model(self, tables: tuple[list[int], list[int]], step: tuple[list[int], list[int]]):
        """Bit-exact reference: the next element's (LO, HI) as the multiplier's words, from the current
        one's and the step's (``TableBuilder.model``): entry by entry through the multiplier's model (the
        word of the product, hw.model.coset.step_tables)."""
        mul = self._b.general.model
        return tuple([mul(a, c) for a, c in zip(cur, s)] for cur, s in zip(tables, step))

    # -- the hardware --------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.stall.eq(self.at_edge & ~self.nxt_ready)
        self._elements(m)
        with m.If(self._update(m)):
            m.d.sync += self.nxt_ready.eq(1)
        return m

    def _elements(self, m):
        """An element's reads (2^(n - 1 - log2 L), decoded from n at the start), less one, and whether it is
        one, as registers (the shift and decrement in front of the element counter were 5 LUT levels; valid
        from the second cycle after the start, when WAIT may first decide); left == 0, remaining != 0 and
        remaining > 1 as flags beside their counters (compared on the way to the stream's enable and the
        update's start they were 8 LUT levels; 0 cycles); at_edge = stepping & left_zero & rem_nz, kept as a
        register beside them (cleared at the start: stepping is registered later; in front of the edge's
        registers it was 5 LUT levels)."""
        b, ctl, ports, mem = self._b, self._ctl, self._ports, self._mem
        left, at_edge, nxt, nxt_other = self._left, self.at_edge, self.nxt, self._nxt_other
        left_first = Signal(len(left), name="element_left_first")
        remaining = Signal(len(ctl.batch_q), name="elements_left")       # elements after the current one
        left_zero, rem_nz, rem_gt1 = Signal(name="left_zero"), Signal(name="more_elements"), \
            Signal(name="more_elements_2")
        lb = (b.lanes - 1).bit_length()
        each, each_m1, each_one = Signal(len(left), name="element_cycles"), \
            Signal(len(left), name="element_cycles_less1"), Signal(name="element_cycles_one")
        with m.If(ports.start):              # (the size decoded at the start: valid with the latched fields)
            m.d.sync += each.eq(Cat(*(ports.run.log_n == i + 1 + lb for i in range(len(left)))))
        m.d.sync += [each_m1.eq(each - 1), each_one.eq(each == 1)]
        stepping, batch_q = ctl.stepping, ctl.batch_q
        with m.If(ctl.begin):
            m.d.sync += [self.cur.eq(ctl.table_set), nxt.eq(mem.WORK_SETS[0]), nxt_other.eq(mem.WORK_SETS[1]),
                         remaining.eq(Mux(stepping, batch_q - 1, 0)),
                         rem_nz.eq(stepping & (batch_q > 1)), rem_gt1.eq(stepping & (batch_q > 2)),
                         left_zero.eq(0), at_edge.eq(0), self.nxt_ready.eq(0)]
            m.d.sync += left.eq(left_first)
        with m.If(self._builder.done):
            m.d.comb += self.update_start.eq(stepping & rem_nz)
            m.d.sync += [self._upd_src.eq(ctl.table_set), self.w_set.eq(mem.WORK_SETS[0])]
        # the stream's first element boundary, in reads (inverse: from the lanes' outputs), registered from
        # the latched fields (the shift and the sum in front of the counter were 5 LUT levels)
        with m.Switch(ctl.frame):
            for f in range(2, b.k + 1):
                with m.Case(f):
                    m.d.sync += left_first.eq(each + Mux(ctl.inv_q, b.offsets[f], b.input_offset))
        # the element boundary: the read that starts the next element takes its set, the update of the one
        # after starts (its source the set just taken, its destination the other work set); taken where the
        # stream moves on and the next set is ready (stream_en & at_edge, with stall = at_edge & ~nxt_ready
        # folded out: 6 LUT levels into the set register; 0 cycles). (at_edge is only ever set in a stepping
        # pass; in the others the count runs unused)
        moving = ctl.moving
        with m.If(moving & at_edge & self.nxt_ready):
            m.d.sync += [self.cur.eq(nxt), nxt.eq(nxt_other), nxt_other.eq(nxt), self.nxt_ready.eq(0),
                         remaining.eq(remaining - 1), left.eq(each_m1),
                         rem_nz.eq(rem_gt1), rem_gt1.eq(remaining > 2), left_zero.eq(each_one),
                         at_edge.eq(rem_gt1 & each_one), self._upd_src.eq(nxt), self.w_set.eq(nxt_other)]
            m.d.comb += self.update_start.eq(rem_gt1)
        with m.Elif(moving & ~left_zero):
            m.d.sync += [left.eq(left - 1), left_zero.eq(left == 1), at_edge.eq(rem_nz & (left == 1))]

    def _update(self, m):
        """The next element's tables: LO[j] x LOc[j] (j < 2^s), then HI[i] x HIc[i] (i < 2^(f-s)), read
        from set ``update_src`` and the step's, written to ``w_set``, one product a cycle on the chain unit.
        Returns a pulse in the cycle the last product is written (the set is readable from the next cycle
        on). The frame's table sizes are registered (frame is constant through a pass, and an update starts
        long after it is latched): from frame through the shifts and the sum to the compare they were 5 LUT
        levels and two carry chains; looked up per frame size (through a subtraction, shifts and a sum they
        were a carry chain and 4 LUT levels; 0 cycles)."""
        b, mem, k, lat = self._b, self._mem, self._b.k, self._b.mul_latency
        n_lo = Signal(k + 1, name="update_lo")
        total = Signal(k + 2, name="update_products_less1")
        with m.Switch(self._ctl.frame):
            for f in range(k + 1):
                with m.Case(f):
                    m.d.sync += [n_lo.eq(1 << (f >> 1)), total.eq((1 << (f >> 1)) + (1 << (f - (f >> 1))) - 1)]
        busy = Signal(name="update_busy")
        u = Signal(k + 2, name="update_index")
        # the start registered (it comes from the table build's last-level compare or an element edge: 6
        # LUT levels into the index; +1 cycle, ``update_cycles``)
        start = Signal(name="update_start_q")
        m.d.sync += start.eq(self.update_start)
        with m.If(start):
            m.d.sync += [busy.eq(1), u.eq(0)]
        with m.Elif(busy):
            m.d.sync += u.eq(u + 1)
            with m.If(u == total):
                m.d.sync += busy.eq(0)
        is_lo = u < n_lo
        entry = Signal(max(k - k // 2, 1), name="update_entry")
        m.d.comb += entry.eq(Mux(is_lo, u, u - n_lo))
        lo_r, hi_r = mem.lo_r, mem.hi_r
        for rd_cur, rd_step, bits in ((lo_r[2], lo_r[3], mem.lo_bits), (hi_r[2], hi_r[3], mem.hi_bits)):
            m.d.comb += [rd_cur.addr.eq(Cat(entry[:bits], self._upd_src)),
                         rd_step.addr.eq(Cat(entry[:bits], C(mem.STEP_SET, 3))), rd_cur.en.eq(1), rd_step.en.eq(1)]
        regs = Module()
        issued = pipe(regs, busy, 1, "update_issued", reset_less=False)
        lo1 = pipe(regs, is_lo, 1, "update_is_lo")
        m.d.comb += [self.w_valid.eq(pipe(regs, issued, lat, "update_write", reset_less=False)),
                     self.w_lo.eq(pipe(regs, lo1, lat, "update_write_lo", last_ff=True)),
                     self.w_entry.eq(pipe(regs, entry, 1 + lat, "update_write_entry", last_ff=True))]
        last = pipe(regs, busy & (u == total), 1 + lat, "update_last", reset_less=False)
        m.submodules.update_regs = regs
        # this unit's term of the chain unit's AND-OR select (the chain job's is never on at the same time:
        # the update runs in a stepping pass, whose chains are there)
        m.d.comb += [self.op_valid.eq(issued), self.op_a.eq(Mux(issued, Mux(lo1, lo_r[2].data, hi_r[2].data), 0)),
                     self.op_b.eq(Mux(issued, Mux(lo1, lo_r[3].data, hi_r[3].data), 0))]
        return last
