"""A register-level Python model of the nantucket kernel and its HBM, for host tests without a card.

:class:`KernelModel` decodes the control space exactly as :mod:`hw.model.regmap` defines it
(ap_ctrl_hs start/done/idle/ready, GIER/IER/ISR, the log_n and hbm_NN arguments, the ID block with
STATUS.bad_size and STATUS.axi_*, set through :meth:`KernelModel.axi_error` as the RTL's DMA reports an
AXI error response) and, when started, runs the transform of N = 2^log_n points (any log_n in the build's
native range ``params.min_log_n .. params.max_log_n``; sizes switch from run to run) with the golden model
on the points it finds at the hbm_NN base addresses, placed as :class:`hw.model.layout.HbmLayout` of that
size says (``HbmLayout(params, log_n)``; it reads and writes only the run's N/R points per channel):

- input x from the channels ``layout.read_channels(1)`` (buffer "input"),
- the pass-1 state to ``layout.write_channels(1)`` (buffer "state"; exact up to 2^16 points, a scratch
  pattern above, where the model computes X with the fast golden NTT instead of pass by pass),
- the output X to ``layout.write_channels(2)`` (buffer "output", over the input).

A batch of B transforms (argument ``batch``) runs B of them back to back, element e of every buffer in
its own region of each channel right after element e-1 (``HbmLayout(params, log_n, batch)``); ``flags`` selects the inverse (1/N inside) and the coset transform with shift
``coset_shift`` (:func:`hw.model.ntt.transform` computes every element; with a ``row_step`` s > 1 element
r with the shift g x s^r). ``input_log_m`` = m takes only
each element's first 2^m input points from memory (the rest are zeros, never read); ``chain_log_n`` = t
writes the output as the zero-extended input of a 2^t-point run (:meth:`HbmLayout.output_as_input`)
instead of in the output placement. A start decodes the scalar arguments as one
:class:`hw.model.run.Run` (:meth:`Run.from_words`); one that :meth:`Run.check` refuses (size, batch,
shift, flags, padded input or chain, or given the hbm_NN bases one that is not a multiple of the DMA's
longest burst: bad_align) finishes at once with those STATUS bits and touches no point memory (only its
status record).

An accepted start runs its operation (the ``op`` argument) through the table of operations
(:func:`hw.model.ops.operation`): the operation's memory side in the model (one entry of
:data:`KernelModel.OPERATION_MEMORY`; the NTT's reads and writes the buffers above) and its ``model`` for
the numbers. :meth:`KernelModel.execute` is the model's card path: one :class:`hw.model.run.Run` and the
buffers' addresses in, the start's status record out (the host's ``execute(run, buffers)``).

Every start (accepted or refused) ends with the kernel's status record (hw.model.record): the ID block
with STATUS as it reads after the start, the start's SEQUENCE number (starts since the model was made),
its RUN and BATCH words and the cycle words, written into the buffer at the ``status`` argument's address
(rounded down to RECORD_BYTES; master m00_axi, so it must lie in an allocated buffer of HBM[0]) before
ap_done. The model has no clock: its cycle words are 0, unless ``record_cycles`` gives them.

Each master may only touch its own HBM pseudo-channel (the link's ``sp=mNN_axi:HBM[NN]``); an address
outside it, or outside any allocated buffer, is a fault: the model then never raises ap_done (and writes
no record), the way a kernel stuck on an AXI error hangs. An AXI error *response* is different: the
transfer completes, the run finishes and STATUS reports it (:meth:`KernelModel.inject` makes a master's
reads or write responses carry one). The sim backend runs the simulated Verilog kernel instead
(sim/cosim.py).
"""

from __future__ import annotations

import numpy as np

from nantucket.hw.model import fourstep, regmap as R
from nantucket.hw.model.layout import CHANNEL_WINDOW_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.ops import operation
from nantucket.hw.model.record import (CYCLE_WORDS, RECORD_BYTES, RECORD_ID_WORDS, RECORD_WORDS, StatusRecord,
                                       record_words)
from nantucket.hw.model.run import Run

__all__ = ["HbmModel", "KernelModel", "ModelCard", "MemoryFault", "KernelHung", "BANK_BYTES"]

#: Size of one HBM pseudo-channel on the U55N / C1100 (8 GiB over 32 channels).
BANK_BYTES = CHANNEL_WINDOW_BYTES      # one pseudo-channel's window
#: Buffers are placed on this alignment, like XRT's allocator (page aligned).
_ALIGN = 4096
#: Above this size the model writes a scratch pattern instead of the exact pass-1 state (speed).
_EXACT_STATE_MAX_POINTS = 1 << 16


class MemoryFault(RuntimeError):
    """An access outside an allocated buffer or outside the master's own HBM channel."""


class KernelHung(RuntimeError):
    """:meth:`KernelModel.execute` of a start that never finished (``hang``, a MemoryFault)."""


class HbmModel:
    """Device memory: ``banks`` pseudo-channels, bank b at addresses [b * BANK_BYTES, (b+1) * BANK_BYTES).
    Only allocated buffers are backed by storage; :meth:`free` gives a buffer's range back (first fit, on
    page boundaries, like XRT's allocator)."""

    def __init__(self, banks: int, bank_bytes: int = BANK_BYTES):
        if not isinstance(banks, int) or banks < 1:
            raise ValueError(f"banks: expected a positive int, got {banks!r}")
        self.banks = banks
        self.bank_bytes = bank_bytes
        self._buffers: dict[int, np.ndarray] = {}          # base address -> uint8 storage

    def allocate(self, bank: int, nbytes: int) -> int:
        if not 0 <= bank < self.banks:
            raise MemoryFault(f"bank: no memory bank {bank} (the device has {self.banks})")
        if nbytes < 1:
            raise MemoryFault(f"nbytes: cannot allocate {nbytes} bytes")
        lo = bank * self.bank_bytes
        taken = sorted((a, -(-(a + b.size) // _ALIGN) * _ALIGN) for a, b in self._buffers.items()
                       if lo <= a < lo + self.bank_bytes)
        start, free = lo, 0
        for a, end in taken + [(lo + self.bank_bytes, None)]:
            free = max(free, a - start)
            if a - start >= nbytes:
                break
            start = end if end is not None else start
        else:
            raise MemoryFault(f"bank {bank}: out of memory ({nbytes} bytes requested, at most {free} free "
                              f"in one piece)")
        self._buffers[start] = np.zeros(nbytes, dtype=np.uint8)
        return start

    def free(self, address: int) -> None:
        """Release the buffer allocated at ``address``."""
        if self._buffers.pop(address, None) is None:
            raise MemoryFault(f"address 0x{address:x}: no buffer allocated there")

    def allocated_bytes(self, bank: int | None = None) -> int:
        """Bytes held by live buffers (in ``bank``, or in all banks)."""
        return sum(b.size for a, b in self._buffers.items() if bank is None or self.bank_of(a) == bank)

    def buffers(self) -> dict[int, np.ndarray]:
        """Every allocated buffer: base address -> its bytes (a live uint8 array)."""
        return dict(self._buffers)

    def bank_of(self, address: int) -> int:
        return address // self.bank_bytes

    def view(self, address: int, nbytes: int, bank: int | None = None) -> np.ndarray:
        """The bytes [address, address + nbytes) as a writable uint8 view; they must lie in one
        allocated buffer (and in ``bank`` when given)."""
        if bank is not None and not (bank * self.bank_bytes <= address
                                     and address + nbytes <= (bank + 1) * self.bank_bytes):
            raise MemoryFault(f"address 0x{address:x}+{nbytes}: outside HBM[{bank}], the only channel "
                              f"m{bank:02d}_axi is connected to")
        for base, buf in self._buffers.items():
            if base <= address and address + nbytes <= base + buf.size:
                return buf[address - base:address - base + nbytes]
        raise MemoryFault(f"address 0x{address:x}+{nbytes}: not inside an allocated buffer")


class KernelModel:
    """The kernel's control slave and behaviour. ``read(offset)`` / ``write(offset, value)`` are the
    32-bit AXI4-Lite accesses; ``interrupt`` is the interrupt output.

    Test knobs: ``hang`` (accept starts, never finish), ``id_overrides`` ({ID register name: value}, in
    the ID block and the status record), :meth:`inject` (AXI error responses of a master),
    ``record_cycles`` (run -> {cycle word name: value} for the status record; default all 0).
    State: ``fault`` (the MemoryFault of the last run, if it hung on one), ``runs`` (completed runs),
    ``starts`` (accepted starts: the record's SEQUENCE), ``last_record`` (the words of the last record
    written, None before the first).
    """

    def __init__(self, params: BuildParams, hbm: HbmModel, layout, *, hang: bool = False,
                 id_overrides: dict[str, int] | None = None, record_cycles=None):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self.params = params
        self.rmap = R.RegisterMap(params)
        self.hbm = hbm
        self.layout = layout            # the largest size's placement (None: HbmLayout(params))
        #: HbmLayout per (log_n, batch), built when a run of that size first starts
        self._layouts = {} if layout is None else {(layout.log_n, 1): layout}
        #: the last completed run (None before the first)
        self.last_run: Run | None = None
        self.hang = hang
        self.fault: MemoryFault | None = None
        self.runs = 0
        self.starts = 0
        self.last_record: list[int] | None = None
        self.record_cycles = record_cycles
        #: {channel: (rresp, bresp)} of the masters whose responses carry an error (inject)
        self._injected: dict[int, tuple[int, int]] = {}
        self._id = dict(self.rmap.id_values, **(id_overrides or {}))
        self._words = {o: (a.reset >> (32 * i)) & 0xFFFF_FFFF for a in self.rmap.args
                       for i, o in enumerate(a.word_offsets)}
        self._gier = self._ier = self._isr = 0
        self._idle, self._done, self._ready = True, False, False
        self._status = 0
        self._maps = None

    # -- AXI4-Lite ---------------------------------------------------------------------------------

    def read(self, offset: int) -> int:
        self._check_offset(offset)
        if offset == R.CTRL:
            value = ((R.CTRL_AP_DONE if self._done else 0) | (R.CTRL_AP_IDLE if self._idle else 0)
                     | (R.CTRL_AP_READY if self._ready else 0))
            self._done = False                      # clear on read
            self._ready = False
            return value
        if offset == R.GIER:
            return self._gier
        if offset == R.IP_IER:
            return self._ier
        if offset == R.IP_ISR:
            return self._isr
        if offset in self._words:
            return self._words[offset]
        if offset >= R.ID_BASE:
            reg = self.rmap.register_at(offset)
            if reg is None:
                return 0
            return self._status if reg.name == "STATUS" else self._id[reg.name]
        return 0

    def write(self, offset: int, value: int) -> None:
        self._check_offset(offset)
        value &= 0xFFFF_FFFF
        if offset == R.CTRL:
            if value & R.CTRL_AP_START and self._idle:
                self._start()
        elif offset == R.GIER:
            self._gier = value & R.GIER_ENABLE
        elif offset == R.IP_IER:
            self._ier = value & R.IER_DONE
        elif offset == R.IP_ISR:
            self._isr ^= value & R.ISR_DONE                 # toggle on write
        elif offset in self._words and self._idle:
            self._words[offset] = value
        # ID block and unmapped words: writes are ignored

    @property
    def interrupt(self) -> bool:
        return bool(self._gier and self._ier & self._isr)

    @staticmethod
    def _check_offset(offset: int) -> None:
        if not isinstance(offset, int) or offset % 4 or not 0 <= offset < R.ADDRESS_RANGE:
            raise ValueError(f"offset: expected a word-aligned offset below 0x{R.ADDRESS_RANGE:x}, "
                             f"got {offset!r}")

    # -- behaviour ---------------------------------------------------------------------------------

    def arg_value(self, name: str) -> int:
        a = self.rmap.arg(name)
        return sum(self._words[o] << (32 * i) for i, o in enumerate(a.word_offsets))

    @property
    def coset_shift(self) -> int:
        """The 64-bit shift g from the coset_shift_lo / coset_shift_hi arguments."""
        return self.run_args().coset_shift

    @property
    def last_log_n(self) -> int | None:
        """log_n of the last completed run (None before the first)."""
        return None if self.last_run is None else self.last_run.log_n

    def run_args(self) -> Run:
        """The run the scalar argument registers hold now."""
        return Run.from_words({a.name: self.arg_value(a.name) for a in self.rmap.scalar_args})

    def bases(self) -> list[int]:
        """The ``hbm_NN`` base addresses the argument registers hold now, by channel."""
        return [self.arg_value(a.name) for a in self.rmap.pointer_args]

    def refusal(self) -> int:
        """The STATUS bits a start with the argument registers as they are now is refused with
        (:meth:`Run.check` of the scalars and the bases; 0: it runs)."""
        return self.run_args().check(self.params, self.bases())

    def axi_error(self, channel: int, resp: int, write: bool) -> None:
        """An AXI error response on master ``channel`` during a run: the first of the run is kept in
        STATUS.axi_* (the RTL's control slave does the same); ignored while idle."""
        if self._idle or self._status & R.STATUS_AXI_ERROR:
            return
        self._status |= (R.STATUS_AXI_ERROR | (resp << R.STATUS_AXI_RESP_SHIFT)
                         | (R.STATUS_AXI_WRITE if write else 0) | (channel << R.STATUS_AXI_CHANNEL_SHIFT))

    def inject(self, channel: int, rresp: int = 0, bresp: int = 0) -> None:
        """From the next start on, every read of master ``channel`` answers ``rresp`` and every write
        response ``bresp`` (0 OKAY, 1 EXOKAY, 2 SLVERR, 3 DECERR), until ``inject(channel, 0, 0)``. A run
        then completes, and STATUS (register and record) holds its first error as the control slave
        latches it (:meth:`axi_error`). The same signature as sim.cosim.SimulatedKernel's."""
        if not isinstance(channel, int) or isinstance(channel, bool) or not 0 <= channel < self.params.channels:
            raise ValueError(f"channel: expected an HBM channel 0..{self.params.channels - 1} of the "
                             f"{self.params.tag()} build, got {channel!r}")
        for name, resp in (("rresp", rresp), ("bresp", bresp)):
            if not isinstance(resp, int) or isinstance(resp, bool) or resp not in R.AXI_RESP_NAMES:
                raise ValueError(f"{name}: expected an AXI response code 0..3 (2 SLVERR, 3 DECERR), got {resp!r}")
        if rresp or bresp:
            self._injected[channel] = (rresp, bresp)
        else:
            self._injected.pop(channel, None)

    def _start(self) -> None:
        self._idle, self._ready = False, True
        self.fault = None
        self.starts += 1
        self._status &= R.STATUS_REJECTED           # every accepted start clears STATUS.axi_*
        if self.hang:
            return
        run = self.run_args()
        refused = self.refusal()
        self._status = (self._status & ~R.STATUS_REJECTED) | refused     # refused: done at once, points untouched
        try:
            if not refused:       # the run's operation: its memory side, its model (hw.model.ops)
                self._operate(run)
                for channel, resp, write in self._responses(run)[:1]:     # the first error is latched
                    self.axi_error(channel, resp, write)
            self._write_record(run, refused)
        except MemoryFault as e:
            self.fault = e                     # an access nobody answers: the kernel never finishes
            return
        if not refused:
            self.last_run = run
        self.runs += 1
        self._idle, self._done = True, True
        if self._ier & R.IER_DONE:
            self._isr |= R.ISR_DONE

    #: The memory side of each operation the model runs, by its name in hw.model.ops: the method that
    #: reads the run's input from HBM, computes the result with the operation's ``model`` and writes it
    #: where the operation's placement says (one entry per operation; the NTT's: :meth:`_transform`).
    OPERATION_MEMORY = {"ntt": "_transform"}

    def _operate(self, run: Run) -> None:
        """An accepted ``run``, dispatched by its ``op`` through the table of operations
        (hw.model.ops.operation(code)) to its memory side (:data:`OPERATION_MEMORY`), which computes with
        that operation's ``model``."""
        op = operation(run.op)
        method = self.OPERATION_MEMORY.get(op.name)
        if method is None:
            raise NotImplementedError(f"op: the kernel model has no memory side for operation {op.name!r} "
                                      f"(code {op.code}): add its entry to KernelModel.OPERATION_MEMORY")
        getattr(self, method)(run)

    def execute(self, run: Run, buffers: dict) -> StatusRecord:
        """The card path of the model: the arguments of ``run`` (a :class:`hw.model.run.Run` of any
        operation) and the addresses ``buffers`` ({pointer argument name: address}: every ``hbm_NN`` of the
        build and ``status``, buffers of :attr:`hbm`) written into the argument registers, ap_start, and
        the status record the start wrote (:class:`hw.model.record.StatusRecord`; a refused start's
        carries its STATUS bits, bad_op for an op the build does not carry). The model finishes within
        the start; a start that never finishes (``hang``, or a MemoryFault: ``fault``) is a
        :class:`KernelHung`."""
        missing = [a.name for a in self.rmap.pointer_args + (self.rmap.record_arg,) if a.name not in buffers]
        unknown = [name for name in buffers if name not in {a.name for a in self.rmap.args if a.is_pointer}]
        if missing or unknown:
            raise ValueError(f"buffers: expected an address for every pointer argument ("
                             f"{', '.join(a.name for a in self.rmap.args if a.is_pointer)}); "
                             + (f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(unknown)}"))
        if not self._idle:
            raise KernelHung("the kernel is still busy with an earlier start")
        words = run.words()
        for a in self.rmap.args:
            value = int(buffers[a.name]) if a.is_pointer else words[a.name]
            for i, offset in enumerate(a.word_offsets):
                self.write(offset, (value >> 32 * i) & 0xFFFF_FFFF)
        self.write(R.CTRL, R.CTRL_AP_START)
        if not self.read(R.CTRL) & R.CTRL_AP_DONE:
            raise KernelHung("the kernel did not finish" + (f": {self.fault}" if self.fault is not None else
                                                            " (hang)"))
        return StatusRecord.from_bytes(self.hbm.view(self.record_address(), RECORD_BYTES, bank=0))

    def _responses(self, run: Run) -> list[tuple[int, int, bool]]:
        """(channel, response, write) of every injected error response the accepted ``run`` gets, in the
        order they come: pass 1's reads, then its writes (pass 1 reads first), then pass 2's reads and
        writes; within one step by channel. Every run touches every channel of each step (the layout
        gives each channel a unit of every group of slots, also of a zero-extended input or a chained
        output); a refused start touches none (its status record aside)."""
        if not self._injected:
            return []
        lay = self.layout_for(run.log_n, run.batch)
        steps = ((lay.read_channels(1), False), (lay.write_channels(1), True), (lay.read_channels(2), False),
                 (lay.write_channels(2), True))
        out = []
        for channels, write in steps:
            for ch in sorted(channels):
                resp = self._injected.get(ch, (0, 0))[1 if write else 0]
                if resp:
                    out.append((ch, resp, write))
        return out

    def record_address(self) -> int:
        """Where the next status record goes: the ``status`` argument rounded down to RECORD_BYTES."""
        return self.arg_value(R.RECORD_ARG) // RECORD_BYTES * RECORD_BYTES

    def _write_record(self, run: Run, refused: int) -> None:
        """The status record of this start, through master m00_axi (a MemoryFault outside HBM[0]'s
        buffers)."""
        cycles = {} if refused or self.record_cycles is None else dict(self.record_cycles(run))
        unknown = set(cycles) - set(CYCLE_WORDS)
        if unknown:
            raise ValueError(f"record_cycles: no cycle word {', '.join(sorted(unknown))}")
        words = record_words(self.params, status=self._status, sequence=self.starts, run=run, cycles=cycles)
        for name in RECORD_ID_WORDS:                    # the ID block as this kernel reports it
            if name != "STATUS":
                words[RECORD_WORDS.index(name)] = self._id[name] & 0xFFFF_FFFF
        view = self.hbm.view(self.record_address(), RECORD_BYTES, bank=0)
        view[:] = np.array(words, dtype="<u4").view(np.uint8)
        self.last_record = words

    def native(self, log_n: int) -> bool:
        """Whether the kernel transforms 2^log_n points natively (else: STATUS.bad_size)."""
        return self.params.min_log_n <= log_n <= self.params.max_log_n

    def layout_for(self, log_n: int, batch: int = 1) -> HbmLayout:
        """The placement of a run of ``batch`` transforms of 2^log_n points (kept per size and batch)."""
        key = (log_n, batch)
        if key not in self._layouts:
            self._layouts[key] = HbmLayout(self.params, log_n, batch)
        return self._layouts[key]

    def _channel_words(self, ch: int, lay: HbmLayout) -> np.ndarray:
        """The run's part of channel ``ch``: the layout's bytes (every element of a batch) from the hbm_NN
        base address (a MemoryFault when they leave the master's channel or the buffer there)."""
        base = self.arg_value(R.pointer_arg(ch))
        return self.hbm.view(base, lay.channel_bytes, bank=ch).view(lay.point_dtype)

    def _transform(self, run: Run) -> None:
        """The NTT's memory side: the input gathered from the run's read channels (a zero-extended input's
        tail is never read), the result from the operation's model (hw.model.ops ``ntt_run``), the pass-1
        state and the output (or the chained input of a 2^chain_log_n run) scattered."""
        batch = run.batch
        lay = self.layout_for(run.log_n, batch)
        n = lay.element_points
        zeros = np.zeros(lay.points_per_channel, dtype=lay.point_dtype)
        reads = set(lay.read_channels(1))       # the pass-1 masters only ever read these
        x = lay.gather([self._channel_words(ch, lay) if ch in reads else zeros
                        for ch in range(self.params.channels)], buffer="input").reshape(batch, n)
        if run.input_log_m:
            x[:, 1 << run.input_log_m:] = 0     # zero-extended: the kernel reads none of these
        out = operation(run.op).model(self.params, run, x).reshape(-1)
        chain = run.chain_log_n
        plain_output = chain == 0
        # the exact pass-1 state for a small plain single transform; scratch otherwise (not modelled)
        if not run.inverse and run.coset is None and batch == 1 and n <= _EXACT_STATE_MAX_POINTS:
            state = fourstep.pass1(x[0], 1 << lay.rows_log("input"), field=self.params.prime_field).reshape(n)
        else:
            state = np.full(batch * n, 0xDEAD_BEEF_DEAD_BEEF & ((1 << 8 * lay.point_bytes) - 1),
                            dtype=lay.point_dtype)
        outputs = (("state", state, lay.write_channels(1)),) + ((("output", out, lay.write_channels(2)),)
                                                                if plain_output else ())
        for buffer, values, written in outputs:
            placed = lay.scatter(values, buffer=buffer)
            for ch in written:
                self._channel_words(ch, lay)[:] = placed[ch]
        if not plain_output:                      # the output as the input of a 2^chain run
            target = self.layout_for(chain, batch)
            channel, offset = lay.output_as_input(chain)
            for ch in lay.write_channels(2):
                mine = channel == ch
                self._channel_words(ch, target)[offset[mine] // lay.point_bytes] = out[mine]


class ModelCard:
    """:class:`sim.cosim.SimulatedKernel`'s interface over :class:`KernelModel`: the simulated card with the
    register-level model in place of the Verilator simulation, for checking the sim backend's own logic
    (reports, build choice, errors) in milliseconds. Takes SimulatedKernel's options; ``progress`` gets
    one line when the card starts. ``last_ntt_cycles`` after a run: ``ntt_cycles(log_n, batch)`` of it
    (given by the caller, since the model has no clock; default 1). Given ``ntt_cycles``, the status
    record carries those cycles too: half in each pass, and the DMA cycles of the same time at the
    build's DMA clock (as a kernel whose passes take that long would count them)."""

    def __init__(self, params: BuildParams, hbm, layout, *, refresh: bool = True, stalls: bool = False,
                 progress=None, cycle_budget: int | None = None, ntt_cycles=None):
        self.params = params
        self.model = KernelModel(params, hbm, layout,
                                 record_cycles=None if ntt_cycles is None else self._record_cycles)
        self._ntt_cycles = ntt_cycles or (lambda log_n, batch: 1)
        self.last_ntt_cycles = None
        self.run_budget = cycle_budget or 1 << 16
        if progress is not None:
            progress(f"[cosim] model kernel for {params.tag()}")

    def _record_cycles(self, run: Run) -> dict[str, int]:
        ntt = int(self._ntt_cycles(run.log_n, run.batch))
        ntt1 = ntt // 2
        dma1, dma2 = (round(c * self.params.dma_mhz / self.params.ntt_mhz) for c in (ntt1, ntt - ntt1))
        return {"PASS1_NTT_CYCLES": ntt1, "PASS2_NTT_CYCLES": ntt - ntt1, "PASS1_DMA_CYCLES": dma1,
                "PASS2_DMA_CYCLES": dma2, "TOTAL_DMA_CYCLES": dma1 + dma2}

    def read(self, offset: int) -> int:
        value = self.model.read(offset)
        last = self.model.last_run
        if last is not None:
            self.last_ntt_cycles = self._ntt_cycles(last.log_n, last.batch)
        return value

    def write(self, offset: int, value: int) -> None:
        self.model.write(offset, value)

    def inject(self, channel: int, rresp: int = 0, bresp: int = 0) -> None:
        """:meth:`KernelModel.inject`."""
        self.model.inject(channel, rresp, bresp)

    @property
    def interrupt(self) -> bool:
        return self.model.interrupt

    def close(self) -> None:
        pass
