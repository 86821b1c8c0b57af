"""The HBM DMA engine's top: wires the blocks of this package and crosses the clock domains.

It feeds the NTT engine 2L points per NTT cycle and sinks 2L per cycle through C AXI4 masters, with every
access placed by :class:`hw.model.layout.HbmLayout` (R = C/2 logical channels per direction; logical read
channel q is HBM channel 2q in pass 1 and 2q + 1 in pass 2, logical write channel q the other one)::

    dma domain                         |  FIFOs (AsyncFifo)        |  ntt domain
    AxiReadMaster x R   --beats-->     |  read FIFO x R   --beats-->  ReadAssembler --> points_out
    AxiWriteMaster x R  <--beats--     |  write FIFO x R  <--beats--  WritePath     <-- points_in
                        <--bursts--    |  burst FIFO x R  <--bursts-- (corner turn, splitters)

Control (``dma`` domain): ``start`` pulse with ``pass_index`` (1/2), ``run`` (the kernel's run,
hw/run.py's struct; the DMA reads its ``log_n``: the DMA moves N = 2^log_n points, min_log_n <= log_n <=
max_log_n, ``batch``: B >= 1 transforms of N points back to back, B x N <= 2^max_log_n, ``input_log_m``
and ``chain_log_n``) and ``base`` (per HBM channel byte address of its buffer) stable while
``busy``; ``done`` pulses once when every write burst of the pass has its response. The start crosses to
the ``ntt`` domain as a pulse (``PulseSynchronizer``, 3 stages, from a register of the start, the edge the
pass's state has settled on); the pass's state (pass bit, size, batch,
chain and zero mask: registers that follow the ports while idle and hold them while busy) crosses as one
value through a 2-stage synchronizer, so it arrives first.

Two run modes (fields of ``run``; 0 = off, and the control only starts pairs that
:func:`hw.model.layout.lde_pair_supported` accepts):

- ``input_log_m`` = m (pass 1, m < log_n): zero-extended input. Only each element's first 2^m points are
  in HBM; the input units past them (:meth:`HbmLayout.zero_units`) are not read: each read master walks
  its channel's units and issues a unit burst (L/P beats) per non-zero one only, and the assembler gives
  the engine zeros for the others. The slot mask of the zeros (``zero_slot_mask``) is computed here for
  the run and crossed like the size.
- ``chain_log_n`` = t (pass 2, t >= log_n): chained output. Every output unit is written, as a burst of
  its own, where the input of a 2^t-point run of the same batch puts it
  (:meth:`HbmLayout.output_as_input`); each write channel still gets B x N/R/P beats (P points a beat).

``fault`` reports, for one cycle, an AXI response other than OKAY (``hw.axi.fault_layout``: lowest
HBM channel of that cycle, R or B, RRESP/BRESP), one dma cycle after the master saw it (a register stage).
"""

from amaranth.hdl import Cat, DomainRenamer, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import Axi4Signature, connect_half, fault_layout
from nantucket.hw.model.layout import BEAT_BITS, HbmLayout, lane_slot
from nantucket.hw.model.params import BuildParams
from nantucket.hw.points import payload_layout
from nantucket.hw.run import run_layout

from .addresses import (batch_shape, beat_bits, beats_per_channel, burst_beats_of, log_n_shape, per_size,
                        slot_bits, zero_unit_at)
from .assembler import ReadAssembler
from .async_fifo import AsyncFifo
from .axi_read import AxiReadMaster, register_skips
from .axi_write import AxiWriteMaster
from .write_path import WritePath

__all__ = ["DmaEngine", "READ_FIFO_BEATS", "WRITE_FIFO_BEATS"]


#: Default depth of each per-channel read AsyncFifo (hw/dma/async_fifo.py), in 256-bit beats (the one definition: the HBM
#: models, benches and pictures read it).
READ_FIFO_BEATS = 128
#: Default depth of each per-channel write AsyncFifo, in beats (why 512: DmaEngine's docstring).
WRITE_FIFO_BEATS = 512


def _packed_init(signals) -> int:
    """The initial value of ``Cat(*signals)``: each signal's own init in its place."""
    value, offset = 0, 0
    for s in signals:
        value |= (s.init & ((1 << len(s)) - 1)) << offset
        offset += len(s)
    return value


class DmaEngine(wiring.Component):
    """HBM DMA engine for ``params`` (lanes >= P, the points a beat holds: see :class:`HbmLayout`).

    fifo_beats:   depth of each per-channel read AsyncFifo in 256-bit beats (>= 128, power of 2).
    write_fifo_beats: depth of each per-channel write AsyncFifo (>= 128, power of 2; the burst-address
                  FIFO beside it holds as many units). 512 by default: a chained same-size write at odd n
                  sends the output to half the write channels for stretches of 1,024 units (n = 23), a
                  backlog of about 370 beats per channel that 128 beats cannot absorb (the pass then took
                  1.45 x); a 256-bit FIFO of 512 beats is still one row of four 512 x 72 BRAM36.
    write_bursts: write bursts a channel may have awaiting their response.
    addr_width:   AXI address width.
    """

    def __init__(self, params: BuildParams, *, fifo_beats: int = READ_FIFO_BEATS,
                 write_fifo_beats: int = WRITE_FIFO_BEATS, write_bursts: int = 16, addr_width: int = 64):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        for name, v in (("fifo_beats", fifo_beats), ("write_fifo_beats", write_fifo_beats),
                        ("write_bursts", write_bursts), ("addr_width", addr_width)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
        if fifo_beats < 128 or fifo_beats & (fifo_beats - 1):
            raise ValueError(f"fifo_beats: must be a power of two >= 128, got {fifo_beats}")
        if write_fifo_beats < 128 or write_fifo_beats & (write_fifo_beats - 1):
            raise ValueError(f"write_fifo_beats: must be a power of two >= 128, got {write_fifo_beats}")
        if not 1 <= write_bursts <= 256:
            raise ValueError(f"write_bursts: must be in 1..256, got {write_bursts}")
        layout = HbmLayout(params)          # checks lanes / channels
        if addr_width < (layout.channel_bytes - 1).bit_length():
            raise ValueError(f"addr_width: {addr_width} bits cannot address {layout.channel_bytes} bytes")
        self._params = params
        self._layout = layout
        self._fifo_beats = fifo_beats
        self._write_fifo_beats = write_fifo_beats
        self._write_bursts = write_bursts
        self._axi = Axi4Signature(addr_width=addr_width, data_width=BEAT_BITS)
        super().__init__({
            "start": In(1),
            "pass_index": In(2),
            "run": In(run_layout(params), init={"log_n": params.max_log_n, "batch": 1}),
            "base": In(data.ArrayLayout(addr_width, params.channels)),
            "busy": Out(1),
            "done": Out(1),
            "fault": Out(fault_layout(params.channels)),
            "points_out": Out(stream.Signature(payload_layout(params.lanes, params.prime_field))),
            "points_in": In(stream.Signature(payload_layout(params.lanes, params.prime_field))),
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
    def write_fifo_beats(self) -> int:
        return self._write_fifo_beats

    @property
    def fifo_points(self) -> int:
        return self._fifo_beats * self._layout.points_per_beat

    @property
    def write_bursts(self) -> int:
        return self._write_bursts

    @property
    def axi_signature(self) -> Axi4Signature:
        return self._axi

    @property
    def payload_width(self) -> int:
        return 2 * self._params.lanes * self._params.prime_field.point_bits

    @property
    def transpose_delay(self) -> int:
        """Pass-1 payloads the corner turn holds before its first unit leaves (L/2)."""
        return self._params.lanes // 2

    # -- elaboration -----------------------------------------------------------------------------------
    def _control(self, m):
        """Pass state in the dma domain and its crossing: (pass2, active, start, log_n, zero mask, chain)
        on the dma side, (pass2, start, log_n, batch, zero mask, chain) on the ntt side."""
        params = self._params
        pass2_d, active_d = Signal(), Signal()
        start_d = Signal()
        log_n_d = Signal(log_n_shape(params), init=params.max_log_n)
        batch_d = Signal(batch_shape(params), init=1)
        chain_d = Signal(log_n_shape(params))
        # the zero-extended input's slot mask for the run (pass 1 only), from the registered size and input
        # size (from the ports, the size switch and the compares were 5 LUT levels into the mask
        # register, over a 450 MHz period by the open-flow estimate). It settles a cycle after the others,
        # the cycle after start (the read masters wait for it: AxiReadMaster.ISSUE_DELAY), and crosses
        # with them, on the edge the start's toggle flips (the toggle takes a register of the start, see
        # below).
        # The input size comes in as a thermometer register, m_le[j] = (0 < input_log_m <= j) (the compares
        # of zero_slot_mask_of, one per bit; as a number, its compares and the size switch were still 5 LUT
        # levels), so that the mask is the size switch's pick of m_le's bits.
        zero_mask, zero_mask_d = Signal(slot_bits(params)), Signal(slot_bits(params))
        log_m_d = Signal.like(self.run.input_log_m, name="log_m_d")
        m_le = Signal(params.max_log_n + 1, name="log_m_le_d")
        run = self.run

        def mask_of(n):
            n1, n2 = (n + 1) >> 1, n >> 1
            return (lane_slot(Cat(*(m_le[n2 + i] for i in range(n1))), n1),)
        per_size(m, params, log_n_d, (zero_mask,), mask_of)
        m.d.comb += [self.busy.eq(active_d), start_d.eq(self.start & ~active_d)]
        with m.If(~active_d):
            m.d.dma += [log_n_d.eq(run.log_n), batch_d.eq(run.batch), chain_d.eq(run.chain_log_n),
                        log_m_d.eq(run.input_log_m),
                        m_le.eq(Cat(*((run.input_log_m != 0) & (run.input_log_m <= j)
                                      for j in range(params.max_log_n + 1))))]
        m.d.dma += zero_mask_d.eq(Mux(pass2_d, 0, zero_mask))
        with m.If(start_d):
            m.d.dma += [pass2_d.eq(self.pass_index == 2), active_d.eq(1)]
        # One crossing for the pass's state, one for its start: the state registers change on the edge
        # after start (pass2, the size, the batch, the chain) and on the next (the zero mask, see above);
        # the start's toggle flips on that next edge (its input is a register of the start), and the start
        # takes one synchronizer stage and a register more than the state, so the state is settled on the
        # ntt side before the start arrives there at any clock ratio. (With the toggle on the start itself
        # the zero mask changed one dma edge after it, and with the ntt clock 3 or more times the dma
        # clock the start reached the assembler before the mask: hw/formal/sync.py, pass_crossing_dma.)
        state_d = (pass2_d, log_n_d, batch_d, chain_d, zero_mask_d)
        state_n = tuple(Signal.like(s, name=f"{s.name[:-2]}_n") for s in state_d)   # same shapes and inits
        m.submodules.sync_state = FFSynchronizer(Cat(*state_d), Cat(*state_n), o_domain="ntt", stages=2,
                                                 init=_packed_init(state_d))
        pass2_n, log_n_n, batch_n, chain_n, zero_mask_n = state_n
        m.submodules.sync_start = start_sync = PulseSynchronizer("dma", "ntt", stages=3)
        # The synchronizer's output is a LUT (the XOR of its last two stages) that fanned out through 8 LUT
        # levels to the assembler and the write path: registered once here (one ntt cycle later to start a
        # pass; the state crossing is settled even earlier then).
        start_n, start_q = Signal(), Signal()
        m.d.dma += start_q.eq(start_d)
        m.d.comb += start_sync.i.eq(start_q)
        m.d.ntt += start_n.eq(start_sync.o)
        dma_side = dict(pass2=pass2_d, active=active_d, start=start_d, log_n=log_n_d, zero_mask=zero_mask_d,
                        chain=chain_d, log_m=log_m_d)
        ntt_side = dict(pass2=pass2_n, start=start_n, log_n=log_n_n, batch=batch_n, zero_mask=zero_mask_n,
                        chain=chain_n)
        return dma_side, ntt_side


    def elaborate(self, platform):
        m = Module()
        lay, D, DW = self._layout, self._fifo_beats, self._write_fifo_beats
        R, T = lay.group, lay.beats_per_channel
        dma_side, ntt_side = self._control(m)
        pass2_d, active_d, start_d = dma_side["pass2"], dma_side["active"], dma_side["start"]
        # the run's beats per channel (whole batch) and sequential burst length (one element's stream
        # is whole bursts), registered like the size in _control; a zero-extended read and a chained
        # write move a unit per burst
        total_d = Signal(range(T + 1), init=T)
        burst_d = Signal(range(lay.burst_beats + 1), init=lay.burst_beats)
        with m.If(~active_d):
            m.d.dma += [total_d.eq(beats_per_channel(self._params, self.run.log_n, self.run.batch)),
                        burst_d.eq(burst_beats_of(beats_per_channel(self._params, self.run.log_n)))]
        # the write masters' burst length is a register (chain_d's compare reached WLAST through
        # the beat compare, over a 450 MHz period); it settles 2 dma cycles after start, and the first write
        # burst comes from the ntt side many cycles later. The read masters settle on theirs themselves
        # (AxiReadMaster.ISSUE_DELAY).
        rd_burst_d, wr_burst_d = Signal.like(burst_d), Signal.like(burst_d)
        # a zero-extended read (a zero mask, i.e. pass 1 of a run with 0 < input_log_m < log_n) moves a unit a
        # burst: a register too (the mask's OR into the in-flight count's carry was over a 450 MHz
        # period), from the registers the mask comes from, so it settles with the mask
        rd_zeros = ~pass2_d & (dma_side["log_m"] != 0) & (dma_side["log_m"] < dma_side["log_n"])
        m.d.dma += rd_burst_d.eq(Mux(rd_zeros, lay.unit_beats, burst_d))
        m.d.dma += wr_burst_d.eq(Mux(pass2_d & (dma_side["chain"] == 0), burst_d, lay.unit_beats))

        asm, wpath = ReadAssembler(lay), WritePath(lay)
        m.submodules.assembler = DomainRenamer("ntt")(asm)
        m.submodules.write_path = DomainRenamer("ntt")(wpath)
        wiring.connect(m, asm.points, wiring.flipped(self.points_out))
        wiring.connect(m, wiring.flipped(self.points_in), wpath.points)
        n = ntt_side
        m.d.comb += [asm.start.eq(n["start"]), asm.pass2.eq(n["pass2"]), asm.log_n.eq(n["log_n"]),
                     asm.batch.eq(n["batch"]), asm.zero_mask.eq(n["zero_mask"]),
                     wpath.start.eq(n["start"]), wpath.pass2.eq(n["pass2"]), wpath.log_n.eq(n["log_n"]),
                     wpath.batch.eq(n["batch"]), wpath.chain_log_n.eq(n["chain"])]

        done_all, masters = [], []
        for q in range(R):
            rd_fifo = AsyncFifo(width=BEAT_BITS, depth=D, w_domain="dma", r_domain="ntt", level=True,
                                exact_full=True)     # filled by the read master's credits, to the top
            wr_fifo = AsyncFifo(width=BEAT_BITS, depth=DW, w_domain="ntt", r_domain="dma")
            wa_fifo = AsyncFifo(width=beat_bits(lay), depth=max(4, DW // lay.unit_beats),
                                w_domain="ntt", r_domain="dma")
            rd = AxiReadMaster(total_beats=T, burst_beats=lay.burst_beats, fifo_beats=D,
                               addr_width=self._axi.addr_width)
            wr = AxiWriteMaster(total_beats=T, beat_bits=beat_bits(lay), write_bursts=self._write_bursts,
                                addr_width=self._axi.addr_width)
            m.submodules[f"rd_fifo{q}"], m.submodules[f"wr_fifo{q}"] = rd_fifo, wr_fifo
            m.submodules[f"wa_fifo{q}"] = wa_fifo
            m.submodules[f"rd_master{q}"] = DomainRenamer("dma")(rd)
            m.submodules[f"wr_master{q}"] = DomainRenamer("dma")(wr)
            # ntt side
            wiring.connect(m, rd_fifo.r_stream, asm.beats[q])
            wiring.connect(m, wpath.beats[q], wr_fifo.w_stream)
            wiring.connect(m, wpath.bursts[q], wa_fifo.w_stream)
            # dma side
            wiring.connect(m, rd.beats, rd_fifo.w_stream)
            m.d.comb += rd.fifo_level.eq(rd_fifo.w_level)
            wiring.connect(m, wr_fifo.r_stream, wr.beats)
            wiring.connect(m, wa_fifo.r_stream, wr.bursts)
            even, odd = self.base[2 * q], self.base[2 * q + 1]
            m.d.comb += [rd.start.eq(start_d), rd.run.eq(active_d), rd.base.eq(Mux(pass2_d, odd, even)),
                         rd.total.eq(total_d), rd.burst.eq(rd_burst_d),
                         wr.start.eq(start_d), wr.run.eq(active_d), wr.base.eq(Mux(pass2_d, even, odd)),
                         wr.total.eq(total_d), wr.burst_len.eq(wr_burst_d)]
            register_skips(m, "dma", rd, lambda beat, q=q: zero_unit_at(m, lay, dma_side["log_n"], beat, q,
                                                                        dma_side["zero_mask"]))
            connect_half(m, rd.axi, self.m_axi[2 * q], ~pass2_d)
            connect_half(m, rd.axi, self.m_axi[2 * q + 1], pass2_d)
            connect_half(m, wr.axi, self.m_axi[2 * q], pass2_d)
            connect_half(m, wr.axi, self.m_axi[2 * q + 1], ~pass2_d)
            done_all += [rd.done, wr.done]
            masters.append((rd, wr))

        # an error response: report the lowest logical channel of the cycle, R before B. Each master's fault
        # and response are registered first (a write master's is its B port behind the pass's
        # channel select, and the pick of the lowest of 2R of them behind that was 5 LUT levels into the
        # port, over a 450 MHz period by the open-flow estimate): ``fault`` reports it one dma cycle
        # after the response, still ahead of ``done`` (a B response reaches ``done`` in 3 cycles).
        for q, (rd, wr) in reversed(list(enumerate(masters))):
            for master, write in ((wr, 1), (rd, 0)):
                hit = Signal(name=f"fault_{'wr' if write else 'rd'}{q}")
                resp = Signal(2, name=f"fault_{'wr' if write else 'rd'}{q}_resp")
                m.d.dma += [hit.eq(master.fault), resp.eq(master.fault_resp)]
                with m.If(hit):
                    m.d.comb += [self.fault.valid.eq(1), self.fault.write.eq(write), self.fault.resp.eq(resp),
                                 self.fault.channel.eq(2 * q + (pass2_d ^ write))]
        all_done = Signal()
        m.d.comb += all_done.eq(Cat(*done_all).all())
        m.d.dma += self.done.eq(0)
        with m.If(active_d & all_done):
            m.d.dma += [active_d.eq(0), self.done.eq(1)]
        return m
