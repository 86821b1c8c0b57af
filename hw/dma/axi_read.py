"""AXI4 read master (``dma`` domain): streams one buffer sequentially into a FIFO.

One AR per ``burst`` beats over ``total`` beats from ``base`` (both ports, held through the pass: the run's
size), issued only while everything already asked for fits in the FIFO (FIFO level + in flight + burst
<= ``fifo_beats``), so R is never back-pressured and AR/R need no other flow control. ``skip``
(zero-extended input: the burst at ``next_beat`` holds only zeros, which the DMA does not read) steps over
the burst without an AR; ``skip_after`` says the same of the burst after it (``after_beat``). A beat whose
RRESP is not OKAY still goes to the FIFO (the transform goes on) but raises ``fault`` for that cycle with
the response in ``fault_resp``.

Every decision to issue is a register, computed a cycle ahead from registers (the credit sum,
the end compare and the skip walk in front of ARVALID were 7 LUT levels and 3 carry chains into the
in-flight count, over a 450 MHz period by the open-flow estimate, docs/performance.md): ``more`` (beats
left), ``skip`` (for ``next_beat``, or ``skip_after`` when the walk moves on) and ``room``. ``room`` is
checked against the level two cycles old (the sum level + in flight is a register too), so it keeps a
burst more in reserve for each AR in those two cycles, and one beat for the FIFO's level, which counts a
beat written in a cycle only a cycle later: level + in flight < ``fifo_beats`` - BL (- BL again for each
AR since). The next address ``next_beat`` + BL is
kept in a register too, and the one after it (``after2_beat``); the skips come in as registers of a cycle
before (:func:`register_skips`), which the walk picks between by whether it moved on then. These settle on
a new pass's size and burst length in ``ISSUE_DELAY`` = 5 dma cycles, so the first AR of a pass goes out
5 cycles after ``start`` at the earliest (it was 1: +4 dma cycles per pass start, the last two for the
registered skips and the DmaEngine's zero mask, which settles a cycle after start); ``done`` is a register as well (+1 dma cycle at the pass's end). Throughput is the
same: one AR or skip a cycle.

R is registered once before anything reads it (``rvalid`` comes from a port mux and would otherwise
reach the FIFO's write pointer and LUTRAM write enable through four LUT levels: over a 450 MHz period by
the open-flow estimate, docs/performance.md). Since R is never back-pressured the register needs no skid
buffer; a beat in it still counts as in flight, so the FIFO space reserved for it stays reserved. Cost: one
dma cycle more from R to the FIFO (each burst's beats arrive one cycle later; no throughput lost).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import BURST_INCR, RESP_OKAY, Axi4ReadSignature
from nantucket.hw.model.layout import BEAT_BITS

__all__ = ["AxiReadMaster", "register_skips"]


class AxiReadMaster(wiring.Component):
    #: dma cycles from the ``start`` cycle to the first cycle an AR (or a skip) may go out: its registered
    #: decisions settle on the pass's size and burst length first (see the module doc)
    ISSUE_DELAY = 5

    """Ports: ``start`` (rewind, one cycle), ``run`` (may issue), ``base`` (byte address), ``total`` (beats
    to read, a multiple of ``burst``; at most ``total_beats``), ``burst`` (beats per AR, 1..8; at most
    ``burst_beats``), ``axi``, ``beats`` (to the FIFO; its ready is not looked at, see the module doc),
    ``fifo_level`` (the FIFO's fill), ``done`` (every beat arrived), ``fault`` / ``fault_resp``. ``total``
    and ``burst`` start at ``total_beats`` and ``burst_beats``. ``next_beat``: the next burst's first beat
    (channel-relative); ``skip``: leave that burst out, one per cycle; ``after_beat`` / ``skip_after`` the
    same for the burst after it, ``after2_beat`` / ``skip_after2`` for the one after that. The three
    skips are registers outside (:func:`register_skips`): each says whether the beat on its port a cycle
    ago starts a zero burst (the zero's size switch and mask compare went straight into the
    walk's register, 5 LUT levels over a 450 MHz period by the open-flow estimate; +1 dma cycle before
    the first AR, ``ISSUE_DELAY``). ``burst`` and the skips' inputs may settle up to 2 cycles after
    ``start``. ``fifo_beats`` >= the longest burst."""

    def __init__(self, *, total_beats: int, burst_beats: int, fifo_beats: int, addr_width: int):
        if not 1 <= burst_beats <= fifo_beats:
            raise ValueError(f"burst_beats: must be in 1..fifo_beats ({fifo_beats}), got {burst_beats}")
        self._total, self._burst, self._depth = total_beats, burst_beats, fifo_beats
        self._axi = Axi4ReadSignature(addr_width=addr_width, data_width=BEAT_BITS)
        super().__init__({
            "start": In(1), "run": In(1), "base": In(addr_width),
            "total": In(range(total_beats + 1), init=total_beats),
            "burst": In(range(burst_beats + 1), init=burst_beats),
            "axi": Out(self._axi),
            "beats": Out(stream.Signature(BEAT_BITS)),
            "fifo_level": In(range(fifo_beats + 1)),
            "next_beat": Out(range(total_beats + 1)), "skip": In(1),
            "after_beat": Out(range(total_beats + burst_beats + 1)), "skip_after": In(1),
            "after2_beat": Out(range(total_beats + 2 * burst_beats + 1)), "skip_after2": In(1),
            "done": Out(1), "fault": Out(1), "fault_resp": Out(2),
        })

    def elaborate(self, platform):
        m = Module()
        axi, T, BL, D = self.axi, self.total, self.burst, self._depth
        MB = self._burst
        req = Signal(range(self._total + 1))        # beats asked for (or skipped)
        req_next = Signal(range(self._total + MB + 1))  # req + BL, kept one step ahead
        req_next2 = Signal(range(self._total + 2 * MB + 1))  # req + 2 BL, two
        adv_q = Signal()                            # the walk moved on in the cycle before
        inflight = Signal(range(D + 1))             # asked for, not arrived
        ar_fire, r_fire, skip, advance, ok = Signal(), Signal(), Signal(), Signal(), Signal()
        # registered decisions (see the module doc): each from registers, a cycle ahead of its use
        skip_q, more_q, room_q = Signal(), Signal(), Signal()
        settle = Signal(range(self.ISSUE_DELAY), init=self.ISSUE_DELAY - 1)
        settled = Signal()                          # settle == 0, a register beside it
        level = Signal(range(2 * D + 1))
        lim_one, lim_two, lim_three = Signal(range(D + 1)), Signal(range(D + 1)), Signal(range(D + 1))
        level_q, ar_q = Signal.like(level), Signal()
        m.d.comb += [
            self.next_beat.eq(req),
            self.after_beat.eq(req_next),
            self.after2_beat.eq(req_next2),
            ok.eq(self.run & settled & more_q),
            skip.eq(ok & skip_q),
            axi.arvalid.eq(ok & ~skip_q & room_q),
            axi.araddr.eq(self.base + req * self._axi.beat_bytes),
            axi.arlen.eq(BL - 1),
            axi.arsize.eq(self._axi.size_code),
            axi.arburst.eq(BURST_INCR),
            axi.rready.eq(1),
            ar_fire.eq(axi.arvalid & axi.arready),
            advance.eq(ar_fire | skip),
            level.eq(self.fifo_level + inflight),
        ]
        # the registered R beat (see the module doc): r_fire is its arrival at the FIFO
        r_valid = Signal(name="r_valid_q")
        r_data = Signal(len(axi.rdata), name="r_data_q", reset_less=True)
        r_resp = Signal(2, name="r_resp_q", reset_less=True)
        m.d.sync += [r_valid.eq(axi.rvalid & axi.rready), r_data.eq(axi.rdata), r_resp.eq(axi.rresp)]
        m.d.comb += [
            r_fire.eq(r_valid),
            self.beats.valid.eq(r_fire),
            self.beats.payload.eq(r_data),
            self.fault.eq(r_fire & (r_resp != RESP_OKAY)),
            self.fault_resp.eq(r_resp),
        ]
        # room for one more burst next cycle: level + BL + 1 <= D, with this cycle's AR counted (+BL);
        # the +1 covers the FIFO's level, which counts a beat written this cycle only a cycle later. The
        # level is a register (its sum and the compare behind it were two carry chains into
        # room_q, over a 450 MHz period), a cycle old, so the AR of the cycle before counts too (+BL)
        m.d.sync += [level_q.eq(level), ar_q.eq(ar_fire),
                     lim_one.eq(Mux(D > BL, D - BL, 0)), lim_two.eq(Mux(D > 2 * BL, D - 2 * BL, 0)),
                     lim_three.eq(Mux(D > 3 * BL, D - 3 * BL, 0)),
                     room_q.eq(Mux(ar_fire & ar_q, level_q < lim_three,
                                   Mux(ar_fire | ar_q, level_q < lim_two, level_q < lim_one)))]
        # the zeros of req and req_next now, from the registered ones of a cycle ago (see the class doc):
        # after a step, req is the old req_next and req_next the old req_next2
        zero_req, zero_next = Signal(), Signal()
        m.d.comb += [zero_req.eq(Mux(adv_q, self.skip_after, self.skip)),
                     zero_next.eq(Mux(adv_q, self.skip_after2, self.skip_after))]
        m.d.sync += adv_q.eq(advance)
        with m.If(advance):
            m.d.sync += [req.eq(req_next), req_next.eq(req_next2), req_next2.eq(req_next2 + BL),
                         skip_q.eq(zero_next), more_q.eq(req_next < T)]
        with m.Else():
            m.d.sync += [req_next.eq(req + BL), req_next2.eq(req + (BL << 1)), skip_q.eq(zero_req),
                         more_q.eq(req < T)]
        # both next counts from registers (r_fire is one), the AR handshake only picks one
        inflight_up, inflight_same = Signal.like(inflight), Signal.like(inflight)
        m.d.comb += [inflight_up.eq(inflight + BL - r_fire), inflight_same.eq(inflight - r_fire)]
        m.d.sync += inflight.eq(Mux(ar_fire, inflight_up, inflight_same))
        with m.If(settle != 0):
            m.d.sync += [settle.eq(settle - 1), settled.eq(settle == 1)]
        m.d.sync += self.done.eq(~self.start & (req == T) & (inflight == 0))
        with m.If(self.start):
            m.d.sync += [req.eq(0), settle.eq(self.ISSUE_DELAY - 1), settled.eq(0)]
        return m


def register_skips(m, domain: str, master: AxiReadMaster, zero_at) -> None:
    """Drive ``master``'s three skip inputs from ``zero_at(beat)`` (comb: the burst at a channel-relative
    beat holds only zeros) of its three beat outputs, each through a register of ``domain``."""
    for beat, skip in ((master.next_beat, master.skip), (master.after_beat, master.skip_after),
                       (master.after2_beat, master.skip_after2)):
        zero = Signal(name=f"{skip.name}_r")
        m.d[domain] += zero.eq(zero_at(beat))
        m.d.comb += skip.eq(zero)
