"""The HBM DMA engine: feeds the NTT engine 2L points per NTT cycle and sinks 2L per cycle through C AXI4
masters, with every access placed by :class:`hw.model.layout.HbmLayout`.

Structure (R = C/2 logical channels per direction; logical read channel q is HBM channel 2q in pass 1 and
2q + 1 in pass 2, logical write channel q the other one):

``dma`` domain, per logical channel
    a read master streaming its whole buffer sequentially in ``burst_beats`` INCR bursts, credit-limited
    so that everything it has asked for fits in its read FIFO (R beats are always accepted); a write
    master issuing one burst per address the NTT side queued and streaming the FIFO's beats behind it.
FIFO per logical channel and direction
    ``AsyncFIFO`` of ``fifo_beats`` 256-bit beats (default 128 = 512 points) crossing ``dma`` <-> ``ntt``;
    they ride over refresh and are the clock crossing. Write bursts also cross, as beat addresses.
``ntt`` domain
    read side: per channel a collector assembling whole units (L points, L/4 beats), and an assembler that
    every cycle takes unit A (x0 of all lanes) and unit B (x1 of all lanes) from the channels the layout
    names for slots 2t and 2t+1 -> one ``points_out`` payload.
    write side: pass 2 splits each ``points_in`` payload into units A and B directly; pass 1 first turns
    each L x L block (L/2 payloads: two columns of L rows each) into L row units (the corner turn
    that makes the state readable as sequential rows in pass 2), two per cycle. A splitter per channel
    drains units beat by beat into the write FIFO.

Payload packing (both streams): lane l's x0 at bits [128l, 128l+64), x1 at [128l+64, 128l+128), in
``pass_schedule(params, pass)`` order. Control (``dma`` domain): ``start`` pulse with ``pass_index`` (1/2)
and ``base`` (per HBM channel byte address of its buffer) stable while ``busy``; ``done`` pulses once when
every write burst of the pass has its response.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from hw.axi import BURST_INCR, Axi4Signature
from hw.model.layout import BEAT_BYTES, POINTS_PER_BEAT, HbmLayout
from hw.model.params import BuildParams
from hw.model.schedule import first_half_stages

__all__ = ["DmaEngine"]

BEAT_BITS = BEAT_BYTES * 8


def _log2(v: int) -> int:
    return v.bit_length() - 1


class DmaEngine(wiring.Component):
    """HBM DMA engine for ``params`` (lanes >= 4, see :class:`HbmLayout`).

    fifo_beats:   depth of each per-channel, per-direction AsyncFIFO in 256-bit beats (>= 128, power of 2).
    write_bursts: write bursts a channel may have awaiting their response.
    addr_width:   AXI address width.
    """

    def __init__(self, params: BuildParams, *, fifo_beats: int = 128, write_bursts: int = 16,
                 addr_width: int = 64):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        for name, v in (("fifo_beats", fifo_beats), ("write_bursts", write_bursts), ("addr_width", addr_width)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
        if fifo_beats < 128 or fifo_beats & (fifo_beats - 1):
            raise ValueError(f"fifo_beats: must be a power of two >= 128 (512 points), got {fifo_beats}")
        if not 1 <= write_bursts <= 256:
            raise ValueError(f"write_bursts: must be in 1..256, got {write_bursts}")
        layout = HbmLayout(params)          # checks lanes / channels
        if addr_width < (layout.channel_bytes - 1).bit_length():
            raise ValueError(f"addr_width: {addr_width} bits cannot address {layout.channel_bytes} bytes")
        self._params = params
        self._layout = layout
        self._fifo_beats = fifo_beats
        self._write_bursts = write_bursts
        self._axi = Axi4Signature(addr_width=addr_width, data_width=BEAT_BITS)
        payload = 2 * params.lanes * 64
        super().__init__({
            "start": In(1),
            "pass_index": In(2),
            "base": In(data.ArrayLayout(addr_width, params.channels)),
            "busy": Out(1),
            "done": Out(1),
            "points_out": Out(stream.Signature(payload)),
            "points_in": In(stream.Signature(payload)),
            "m_axi": Out(self._axi).array(params.channels),
        })

    # -- published facts -------------------------------------------------------------------------------
    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def layout(self) -> HbmLayout:
        return self._layout

    @property
    def fifo_beats(self) -> int:
        return self._fifo_beats

    @property
    def fifo_points(self) -> int:
        return self._fifo_beats * POINTS_PER_BEAT

    @property
    def write_bursts(self) -> int:
        return self._write_bursts

    @property
    def axi_signature(self) -> Axi4Signature:
        return self._axi

    @property
    def payload_width(self) -> int:
        return 2 * self._params.lanes * 64

    @property
    def transpose_delay(self) -> int:
        """Pass-1 payloads the corner turn holds before its first unit leaves (L/2)."""
        return self._params.lanes // 2

    # -- helpers ---------------------------------------------------------------------------------------
    def _slot_channel(self, s):
        """Logical channel of a unit in slot s (the layout's (s mod R) ^ ((s >> sigma) mod R))."""
        rho = _log2(self._layout.group)
        if rho == 0:
            return Const(0, 1)
        ext = Cat(s, Const(0, self._layout.sigma + rho))
        return s[:rho] ^ ext[self._layout.sigma:self._layout.sigma + rho]

    def _unit_beat(self, s, blk):
        """First beat of the unit in slot s of block blk: (blk * K/R + s div R) * L/4."""
        rho = _log2(self._layout.group)
        return Cat(Const(0, _log2(self._layout.unit_beats)), s[rho:], blk)

    def _row_slot(self, n2):
        """Lane-input slot of row n2 = r + G*m + 2^(k-1)*h: s = r*2^a + 2m + h (a bit permutation)."""
        k = self._params.log_core
        a = first_half_stages(k)
        return Cat(n2[k - 1], n2[k - a:k - 1], n2[:k - a])

    # -- elaboration -----------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        p, lay = self._params, self._layout
        k, lanes, chans = p.log_core, p.lanes, p.channels
        R = lay.group
        U = lay.unit_beats
        T = lay.beats_per_channel
        BL = lay.burst_beats
        D = self._fifo_beats
        blocks = lay.blocks
        beat_bits = max(1, (T - 1).bit_length())
        unit_bits = U * BEAT_BITS
        half_k = 1 << (k - 1)

        # ---------------- control, dma side ----------------
        pass2_d = Signal()
        active_d = Signal()
        start_toggle = Signal()
        m.d.comb += self.busy.eq(active_d)
        with m.If(self.start & ~active_d):
            m.d.dma += [pass2_d.eq(self.pass_index == 2), active_d.eq(1), start_toggle.eq(~start_toggle)]

        # ---------------- control, ntt side ----------------
        pass2_n = Signal()
        toggle_n = Signal()
        toggle_seen = Signal()
        m.submodules.sync_pass = FFSynchronizer(pass2_d, pass2_n, o_domain="ntt", stages=2)
        m.submodules.sync_start = FFSynchronizer(start_toggle, toggle_n, o_domain="ntt", stages=3)
        start_n = Signal()
        m.d.comb += start_n.eq(toggle_n != toggle_seen)
        m.d.ntt += toggle_seen.eq(toggle_n)

        # ---------------- FIFOs ----------------
        rd_fifo, wr_fifo, wa_fifo = [], [], []
        for q in range(R):
            f = AsyncFIFO(width=BEAT_BITS, depth=D, w_domain="dma", r_domain="ntt")
            m.submodules[f"rd_fifo{q}"] = f
            rd_fifo.append(f)
            f = AsyncFIFO(width=BEAT_BITS, depth=D, w_domain="ntt", r_domain="dma")
            m.submodules[f"wr_fifo{q}"] = f
            wr_fifo.append(f)
            f = AsyncFIFO(width=beat_bits, depth=max(4, D // U), w_domain="ntt", r_domain="dma")
            m.submodules[f"wa_fifo{q}"] = f
            wa_fifo.append(f)

        # ---------------- dma side: masters ----------------
        rd_done, wr_done = [], []
        blen = Signal(range(9))
        m.d.comb += blen.eq(Mux(pass2_d, BL, U))
        for q in range(R):
            # read master q
            req = Signal(range(T + 1), name=f"rd_req{q}")
            inflight = Signal(range(D + 1), name=f"rd_inflight{q}")
            ar_ok = Signal(name=f"ar_ok{q}")
            ar_fire = Signal(name=f"ar_fire{q}")
            r_fire = Signal(name=f"r_fire{q}")
            base_r = Signal(self._axi.addr_width, name=f"rd_base{q}")
            m.d.comb += [
                base_r.eq(Mux(pass2_d, self.base[2 * q + 1], self.base[2 * q])),
                ar_ok.eq(active_d & (req < T) & (rd_fifo[q].w_level + inflight + BL <= D)),
            ]
            wr_base = Signal(self._axi.addr_width, name=f"wr_base{q}")
            m.d.comb += wr_base.eq(Mux(pass2_d, self.base[2 * q], self.base[2 * q + 1]))
            # write master q
            aw_ahead = Signal(range(self._write_bursts + 1), name=f"aw_ahead{q}")
            b_wait = Signal(range(self._write_bursts + 1), name=f"b_wait{q}")
            b_count = Signal(range(T + 1), name=f"b_count{q}")
            w_beat = Signal(range(8), name=f"w_beat{q}")
            aw_ok = Signal(name=f"aw_ok{q}")
            aw_fire = Signal(name=f"aw_fire{q}")
            w_fire = Signal(name=f"w_fire{q}")
            w_last = Signal(name=f"w_last{q}")
            b_fire = Signal(name=f"b_fire{q}")
            m.d.comb += [
                aw_ok.eq(active_d & wa_fifo[q].r_rdy & (b_wait < self._write_bursts)),
                w_last.eq(w_beat == blen - 1),
            ]
            for phys, reader in ((2 * q, ~pass2_d), (2 * q + 1, pass2_d)):
                axi = self.m_axi[phys]
                m.d.comb += [
                    axi.arvalid.eq(reader & ar_ok),
                    axi.araddr.eq(base_r + req * BEAT_BYTES),
                    axi.arlen.eq(BL - 1),
                    axi.arsize.eq(self._axi.size_code),
                    axi.arburst.eq(BURST_INCR),
                    axi.rready.eq(reader),
                    axi.awvalid.eq(~reader & aw_ok),
                    axi.awaddr.eq(wr_base + wa_fifo[q].r_data * BEAT_BYTES),
                    axi.awlen.eq(blen - 1),
                    axi.awsize.eq(self._axi.size_code),
                    axi.awburst.eq(BURST_INCR),
                    axi.wvalid.eq(~reader & active_d & (aw_ahead != 0) & wr_fifo[q].r_rdy),
                    axi.wdata.eq(wr_fifo[q].r_data),
                    axi.wstrb.eq(-1),
                    axi.wlast.eq(w_last),
                    axi.bready.eq(~reader),
                ]
                with m.If(reader):
                    m.d.comb += [
                        ar_fire.eq(axi.arvalid & axi.arready),
                        r_fire.eq(axi.rvalid),
                        rd_fifo[q].w_data.eq(axi.rdata),
                    ]
                with m.Else():
                    m.d.comb += [
                        aw_fire.eq(axi.awvalid & axi.awready),
                        w_fire.eq(axi.wvalid & axi.wready),
                        b_fire.eq(axi.bvalid & axi.bready),
                    ]
            m.d.comb += [
                rd_fifo[q].w_en.eq(r_fire),
                wa_fifo[q].r_en.eq(aw_fire),
                wr_fifo[q].r_en.eq(w_fire),
            ]
            with m.If(ar_fire):
                m.d.dma += req.eq(req + BL)
            m.d.dma += inflight.eq(inflight + Mux(ar_fire, BL, 0) - r_fire)
            with m.If(w_fire):
                m.d.dma += w_beat.eq(Mux(w_last, 0, w_beat + 1))
            m.d.dma += [
                aw_ahead.eq(aw_ahead + aw_fire - (w_fire & w_last)),
                b_wait.eq(b_wait + aw_fire - b_fire),
            ]
            with m.If(b_fire):
                m.d.dma += b_count.eq(b_count + blen)
            rd_done.append((req == T) & (inflight == 0))
            wr_done.append(b_count == T)
            with m.If(self.start & ~active_d):
                m.d.dma += [req.eq(0), b_count.eq(0), w_beat.eq(0)]

        all_done = Signal()
        m.d.comb += all_done.eq(Cat(*rd_done).all() & Cat(*wr_done).all())
        m.d.dma += self.done.eq(0)
        with m.If(active_d & all_done):
            m.d.dma += [active_d.eq(0), self.done.eq(1)]

        # ---------------- ntt side: read assembler ----------------
        col_count = [Signal(range(3), name=f"col_count{q}") for q in range(R)]
        col_slots = [[Signal(unit_bits, name=f"col{q}_slot{j}") for j in range(2)] for q in range(R)]
        col_rsel = [Signal(name=f"col_rsel{q}") for q in range(R)]
        col_pop = [Signal(range(3), name=f"col_pop{q}") for q in range(R)]
        heads, seconds = [], []
        for q in range(R):
            wsel = Signal(name=f"col_wsel{q}")
            wbeat = Signal(range(U), name=f"col_wbeat{q}") if U > 1 else Const(0, 1)
            fill = Signal(name=f"col_fill{q}")
            done_unit = Signal(name=f"col_unit{q}")
            m.d.comb += [
                fill.eq(rd_fifo[q].r_rdy & (col_count[q] < 2)),
                rd_fifo[q].r_en.eq(fill),
                done_unit.eq(fill & (wbeat == U - 1)),
            ]
            with m.If(fill):
                for j in range(2):
                    for b in range(U):
                        with m.If((wsel == j) & (wbeat == b)):
                            m.d.ntt += col_slots[q][j][b * BEAT_BITS:(b + 1) * BEAT_BITS].eq(rd_fifo[q].r_data)
                if U > 1:
                    m.d.ntt += wbeat.eq(Mux(wbeat == U - 1, 0, wbeat + 1))
                with m.If(wbeat == U - 1):
                    m.d.ntt += wsel.eq(~wsel)
            m.d.ntt += [
                col_count[q].eq(col_count[q] + done_unit - col_pop[q]),
                col_rsel[q].eq(col_rsel[q] ^ col_pop[q][0]),
            ]
            heads.append(Mux(col_rsel[q], col_slots[q][1], col_slots[q][0]))
            seconds.append(Mux(col_rsel[q], col_slots[q][0], col_slots[q][1]))

        rd_t = Signal(range(max(2, half_k)))
        rd_blk = Signal(range(max(2, blocks)))
        rd_active = Signal()
        slot_a = Signal(k)
        m.d.comb += slot_a.eq(rd_t << 1)
        ch_a = Signal(max(1, _log2(R)))
        ch_b = Signal(max(1, _log2(R)))
        m.d.comb += [ch_a.eq(self._slot_channel(slot_a)), ch_b.eq(self._slot_channel(slot_a | 1))]
        same = Signal()
        m.d.comb += same.eq(ch_a == ch_b)
        count_arr = Array(col_count)
        head_arr = Array(heads)
        second_arr = Array(seconds)
        unit_a = Signal(unit_bits)
        unit_b = Signal(unit_bits)
        m.d.comb += [
            unit_a.eq(head_arr[ch_a]),
            unit_b.eq(Mux(same, second_arr[ch_a], head_arr[ch_b])),
            self.points_out.valid.eq(rd_active & (count_arr[ch_a] != 0)
                                     & Mux(same, count_arr[ch_a] == 2, count_arr[ch_b] != 0)),
        ]
        for lane in range(lanes):
            m.d.comb += self.points_out.payload[128 * lane:128 * lane + 64].eq(unit_a[64 * lane:64 * lane + 64])
            m.d.comb += self.points_out.payload[128 * lane + 64:128 * lane + 128].eq(unit_b[64 * lane:64 * lane + 64])
        rd_fire = Signal()
        m.d.comb += rd_fire.eq(self.points_out.valid & self.points_out.ready)
        for q in range(R):
            m.d.comb += col_pop[q].eq(Mux(rd_fire, (ch_a == q) + (ch_b == q), 0))
        with m.If(rd_fire):
            m.d.ntt += rd_t.eq(rd_t + 1)
            with m.If(rd_t == half_k - 1):
                m.d.ntt += [rd_t.eq(0), rd_blk.eq(rd_blk + 1)]
                with m.If(rd_blk == blocks - 1):
                    m.d.ntt += [rd_blk.eq(0), rd_active.eq(0)]
        with m.If(start_n):
            m.d.ntt += [rd_t.eq(0), rd_blk.eq(0), rd_active.eq(1)]

        # ---------------- ntt side: write sources ----------------
        # a unit pair (A, B) with their logical channels and first beats, offered to the splitters
        src_valid = Signal()
        src_accept = Signal()
        src_a, src_b = Signal(unit_bits), Signal(unit_bits)
        src_slot_a, src_slot_b = Signal(k), Signal(k)
        src_blk = Signal(max(1, (blocks - 1).bit_length()))

        wr_active = Signal()
        # pass 2: payloads straight into units; slot = output row k2 = 2t + j
        w2_t = Signal(range(max(2, half_k)))
        w2_blk = Signal(range(max(2, blocks)))
        # pass 1: corner turn of L x L blocks
        L2 = lanes // 2
        tp_bank = [[Signal(self.payload_width, name=f"tp{b}_{i}") for i in range(L2)] for b in range(2)]
        tp_full = [Signal(name=f"tp_full{b}") for b in range(2)]
        tp_wsel, tp_rsel = Signal(), Signal()
        tp_wcnt = Signal(range(max(2, L2)))
        tp_rj = Signal(range(max(2, L2)))
        tp_g = Signal(range(max(2, blocks)))        # round of the block leaving the corner turn
        tp_b = Signal(range(max(2, blocks)))        # its column block
        w1_in = Signal(range(p.cycles_per_pass + 1))
        tp_in_ready = Signal()
        m.d.comb += tp_in_ready.eq(~Mux(tp_wsel, tp_full[1], tp_full[0]))

        def unit_of_row(bank, i):
            """Row i of the bank's L x L block: lane i's (x0, x1) over the L/2 payloads, in column order."""
            parts = []
            for t in range(L2):
                word = bank[t]
                parts.append(word[128 * i:128 * i + 128])
            return Cat(*parts)

        pair_a = Array([Mux(tp_rsel, unit_of_row(tp_bank[1], 2 * j), unit_of_row(tp_bank[0], 2 * j))
                        for j in range(L2)])
        pair_b = Array([Mux(tp_rsel, unit_of_row(tp_bank[1], 2 * j + 1), unit_of_row(tp_bank[0], 2 * j + 1))
                        for j in range(L2)])
        row_a = Signal(k)
        if lanes < (1 << k):
            m.d.comb += row_a.eq((tp_g * lanes + 2 * tp_rj)[:k])
        else:
            m.d.comb += row_a.eq(2 * tp_rj)
        p1_out_valid = Signal()
        m.d.comb += p1_out_valid.eq(Mux(tp_rsel, tp_full[1], tp_full[0]))

        with m.If(pass2_n):
            m.d.comb += [
                src_valid.eq(wr_active & self.points_in.valid),
                src_slot_a.eq(w2_t << 1),
                src_slot_b.eq((w2_t << 1) | 1),
                src_blk.eq(w2_blk),
                self.points_in.ready.eq(wr_active & src_accept),
            ]
            for lane in range(lanes):
                m.d.comb += [
                    src_a[64 * lane:64 * lane + 64].eq(self.points_in.payload[128 * lane:128 * lane + 64]),
                    src_b[64 * lane:64 * lane + 64].eq(self.points_in.payload[128 * lane + 64:128 * lane + 128]),
                ]
        with m.Else():
            m.d.comb += [
                src_valid.eq(p1_out_valid),
                src_a.eq(pair_a[tp_rj]),
                src_b.eq(pair_b[tp_rj]),
                src_slot_a.eq(self._row_slot(row_a)),
                src_slot_b.eq(self._row_slot(row_a | 1)),
                src_blk.eq(tp_b),
                self.points_in.ready.eq(wr_active & tp_in_ready),
            ]

        in_fire = Signal()
        m.d.comb += in_fire.eq(self.points_in.valid & self.points_in.ready)
        with m.If(in_fire):
            with m.If(pass2_n):
                m.d.ntt += w2_t.eq(w2_t + 1)
                with m.If(w2_t == half_k - 1):
                    m.d.ntt += [w2_t.eq(0), w2_blk.eq(w2_blk + 1)]
                    with m.If(w2_blk == blocks - 1):
                        m.d.ntt += [w2_blk.eq(0), wr_active.eq(0)]
            with m.Else():
                for b in range(2):
                    for i in range(L2):
                        with m.If((tp_wsel == b) & (tp_wcnt == i)):
                            m.d.ntt += tp_bank[b][i].eq(self.points_in.payload)
                m.d.ntt += tp_wcnt.eq(tp_wcnt + 1)
                with m.If(tp_wcnt == L2 - 1):
                    m.d.ntt += tp_wcnt.eq(0)
                    m.d.ntt += tp_wsel.eq(~tp_wsel)
                m.d.ntt += w1_in.eq(w1_in + 1)
                with m.If(w1_in == p.cycles_per_pass - 1):
                    m.d.ntt += wr_active.eq(0)
        # corner-turn bank bookkeeping (set when filled, cleared when emptied)
        tp_out_fire = Signal()
        m.d.comb += tp_out_fire.eq(~pass2_n & p1_out_valid & src_accept)
        for b in range(2):
            set_b = in_fire & ~pass2_n & (tp_wsel == b) & (tp_wcnt == L2 - 1)
            clr_b = tp_out_fire & (tp_rsel == b) & (tp_rj == L2 - 1)
            with m.If(set_b):
                m.d.ntt += tp_full[b].eq(1)
            with m.Elif(clr_b):
                m.d.ntt += tp_full[b].eq(0)
        with m.If(tp_out_fire):
            m.d.ntt += tp_rj.eq(tp_rj + 1)
            with m.If(tp_rj == L2 - 1):
                m.d.ntt += [tp_rj.eq(0), tp_rsel.eq(~tp_rsel), tp_b.eq(tp_b + 1)]
                with m.If(tp_b == blocks - 1):
                    m.d.ntt += [tp_b.eq(0), tp_g.eq(tp_g + 1)]
        with m.If(start_n):
            m.d.ntt += [wr_active.eq(1), w2_t.eq(0), w2_blk.eq(0), tp_wcnt.eq(0), tp_wsel.eq(0),
                        tp_rsel.eq(0), tp_rj.eq(0), tp_g.eq(0), tp_b.eq(0), w1_in.eq(0),
                        tp_full[0].eq(0), tp_full[1].eq(0)]

        # ---------------- ntt side: splitters ----------------
        wch_a = Signal(max(1, _log2(R)))
        wch_b = Signal(max(1, _log2(R)))
        m.d.comb += [wch_a.eq(self._slot_channel(src_slot_a)), wch_b.eq(self._slot_channel(src_slot_b))]
        wsame = Signal()
        m.d.comb += wsame.eq(wch_a == wch_b)
        beat_a = Signal(beat_bits)
        beat_b = Signal(beat_bits)
        m.d.comb += [beat_a.eq(self._unit_beat(src_slot_a, src_blk)),
                     beat_b.eq(self._unit_beat(src_slot_b, src_blk))]
        sp_count = [Signal(range(3), name=f"sp_count{q}") for q in range(R)]
        sp_count_arr = Array(sp_count)
        # both units need a free slot: two in the same splitter, else one in each
        m.d.comb += src_accept.eq(src_valid & Mux(wsame, sp_count_arr[wch_a] == 0,
                                                  (sp_count_arr[wch_a] != 2) & (sp_count_arr[wch_b] != 2)))
        write_fire = Signal()
        m.d.comb += write_fire.eq(src_valid & src_accept)
        for q in range(R):
            slots = [Signal(unit_bits, name=f"sp{q}_slot{j}") for j in range(2)]
            addrs = [Signal(beat_bits, name=f"sp{q}_addr{j}") for j in range(2)]
            wsel = Signal(name=f"sp_wsel{q}")
            rsel = Signal(name=f"sp_rsel{q}")
            rbeat = Signal(range(U), name=f"sp_rbeat{q}") if U > 1 else Const(0, 1)
            take_a = Signal(name=f"sp_take_a{q}")
            take_b = Signal(name=f"sp_take_b{q}")
            m.d.comb += [take_a.eq(write_fire & (wch_a == q)), take_b.eq(write_fire & (wch_b == q))]
            # first unit offered to this channel goes to wsel; with both, B goes to the other slot
            with m.If(take_a):
                for j in range(2):
                    with m.If(wsel == j):
                        m.d.ntt += [slots[j].eq(src_a), addrs[j].eq(beat_a)]
                with m.If(take_b):
                    for j in range(2):
                        with m.If(wsel != j):
                            m.d.ntt += [slots[j].eq(src_b), addrs[j].eq(beat_b)]
            with m.Elif(take_b):
                for j in range(2):
                    with m.If(wsel == j):
                        m.d.ntt += [slots[j].eq(src_b), addrs[j].eq(beat_b)]
            n_in = Signal(range(3), name=f"sp_in{q}")
            m.d.comb += n_in.eq(take_a + take_b)
            m.d.ntt += wsel.eq(wsel ^ n_in[0])
            # drain: one beat per cycle; the first beat of a burst also queues the burst's address
            cur = Mux(rsel, slots[1], slots[0])
            cur_addr = Mux(rsel, addrs[1], addrs[0])
            burst_start = Signal(name=f"sp_bstart{q}")
            m.d.comb += burst_start.eq((rbeat == 0) & (~pass2_n | ((cur_addr & (BL - 1)) == 0)))
            drain = Signal(name=f"sp_drain{q}")
            m.d.comb += drain.eq((sp_count[q] != 0) & wr_fifo[q].w_rdy & (~burst_start | wa_fifo[q].w_rdy))
            beat_words = Array([cur[b * BEAT_BITS:(b + 1) * BEAT_BITS] for b in range(U)])
            m.d.comb += [
                wr_fifo[q].w_en.eq(drain),
                wr_fifo[q].w_data.eq(beat_words[rbeat]),
                wa_fifo[q].w_en.eq(drain & burst_start),
                wa_fifo[q].w_data.eq(cur_addr),
            ]
            unit_out = Signal(name=f"sp_out{q}")
            m.d.comb += unit_out.eq(drain & (rbeat == U - 1))
            with m.If(drain):
                if U > 1:
                    m.d.ntt += rbeat.eq(Mux(rbeat == U - 1, 0, rbeat + 1))
                with m.If(rbeat == U - 1):
                    m.d.ntt += rsel.eq(~rsel)
            m.d.ntt += sp_count[q].eq(sp_count[q] + n_in - unit_out)

        return m
