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
``coset_shift`` (:func:`hw.model.ntt.transform` computes every element). ``input_log_m`` = m takes only
each element's first 2^m input points from memory (the rest are zeros, never read); ``chain_log_n`` = t
writes the output as the zero-extended input of a 2^t-point run (:meth:`HbmLayout.output_as_input`)
instead of in the output placement. A start decodes the scalar arguments as one
:class:`hw.model.run.Run` (:meth:`Run.from_words`); one that :meth:`Run.check` refuses (size, batch,
shift, flags, padded input or chain) finishes at once with those STATUS bits and touches no memory.

Each master may only touch its own HBM pseudo-channel (the link's ``sp=mNN_axi:HBM[NN]``); an address
outside it, or outside any allocated buffer, is a fault: the model then never raises ap_done, the way a
kernel stuck on an AXI error hangs. The sim backend runs the simulated Verilog kernel instead (sim/cosim.py).
"""

from __future__ import annotations

import numpy as np

from nantucket.hw.model import fourstep, ntt as ntt_model, regmap as R
from nantucket.hw.model.layout import CHANNEL_WINDOW_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run

__all__ = ["HbmModel", "KernelModel", "ModelCard", "MemoryFault", "BANK_BYTES"]

#: Size of one HBM pseudo-channel on the U55N / C1100 (8 GiB over 32 channels).
BANK_BYTES = CHANNEL_WINDOW_BYTES      # one pseudo-channel's window
#: Buffers are placed on this alignment, like XRT's allocator (page aligned).
_ALIGN = 4096
#: Above this size the model writes a scratch pattern instead of the exact pass-1 state (speed).
_EXACT_STATE_MAX_POINTS = 1 << 16


class MemoryFault(RuntimeError):
    """An access outside an allocated buffer or outside the master's own HBM channel."""


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

    Test knobs: ``hang`` (accept starts, never finish), ``id_overrides`` ({ID register name: value}),
    ``fault`` (the MemoryFault of the last run, if it hung on one), ``runs`` (completed runs).
    """

    def __init__(self, params: BuildParams, hbm: HbmModel, layout, *, hang: bool = False,
                 id_overrides: dict[str, int] | None = None):
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

    def axi_error(self, channel: int, resp: int, write: bool) -> None:
        """An AXI error response on master ``channel`` during a run: the first of the run is kept in
        STATUS.axi_* (the RTL's control slave does the same); ignored while idle."""
        if self._idle or self._status & R.STATUS_AXI_ERROR:
            return
        self._status |= (R.STATUS_AXI_ERROR | (resp << R.STATUS_AXI_RESP_SHIFT)
                         | (R.STATUS_AXI_WRITE if write else 0) | (channel << R.STATUS_AXI_CHANNEL_SHIFT))

    def _start(self) -> None:
        self._idle, self._ready = False, True
        self.fault = None
        self._status &= R.STATUS_REJECTED           # every accepted start clears STATUS.axi_*
        if self.hang:
            return
        run = self.run_args()
        refused = run.check(self.params)
        self._status = (self._status & ~R.STATUS_REJECTED) | refused     # refused: done at once, memory untouched
        if not refused:
            try:
                self._transform(run)
            except MemoryFault as e:
                self.fault = e                     # an AXI error: the kernel never finishes
                return
            self.last_run = run
        self.runs += 1
        self._idle, self._done = True, True
        if self._ier & R.IER_DONE:
            self._isr |= R.ISR_DONE

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
        return self.hbm.view(base, lay.channel_bytes, bank=ch).view(np.uint64)

    def _transform(self, run: Run) -> None:
        batch, inverse, coset = run.batch, run.inverse, run.coset
        lay = self.layout_for(run.log_n, batch)
        n = lay.element_points
        zeros = np.zeros(lay.channel_bytes // 8, dtype=np.uint64)
        reads = set(lay.read_channels(1))       # the pass-1 masters only ever read these
        x = lay.gather([self._channel_words(ch, lay) if ch in reads else zeros
                        for ch in range(self.params.channels)], buffer="input").reshape(batch, n)
        log_m, chain = run.input_log_m, run.chain_log_n
        if log_m:
            x[:, 1 << log_m:] = 0               # zero-extended: the kernel reads none of these
        plain_output = chain == 0
        # the exact pass-1 state for a small plain single transform; scratch otherwise (not modelled)
        exact = not inverse and coset is None and batch == 1 and n <= _EXACT_STATE_MAX_POINTS
        if exact:
            state = fourstep.pass1(x[0], 1 << lay.rows_log("input"))                       # state[n2, k1]
            out = fourstep.pass2(state)
            state = state.reshape(n)
        else:
            out = ntt_model.transform(x, inverse=inverse, coset=coset).reshape(-1)
            state = np.full(batch * n, 0xDEAD_BEEF_DEAD_BEEF, dtype=np.uint64)
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
                self._channel_words(ch, target)[offset[mine] // 8] = out[mine]


class ModelCard:
    """:class:`sim.cosim.SimulatedKernel`'s interface over :class:`KernelModel`: the simulated card with the
    register-level model in place of the Verilator simulation, for checking the sim backend's own logic
    (reports, build choice, errors) in milliseconds. Takes SimulatedKernel's options; ``progress`` gets
    one line when the card starts. ``last_ntt_cycles`` after a run: ``ntt_cycles(log_n, batch)`` of it
    (given by the caller, since the model has no clock; default 1)."""

    def __init__(self, params: BuildParams, hbm, layout, *, refresh: bool = True, stalls: bool = False,
                 progress=None, cycle_budget: int | None = None, ntt_cycles=None):
        self.params = params
        self.model = KernelModel(params, hbm, layout)
        self._ntt_cycles = ntt_cycles or (lambda log_n, batch: 1)
        self.last_ntt_cycles = None
        self.run_budget = cycle_budget or 1 << 16
        if progress is not None:
            progress(f"[cosim] model kernel for {params.tag()}")

    def read(self, offset: int) -> int:
        value = self.model.read(offset)
        last = self.model.last_run
        if last is not None:
            self.last_ntt_cycles = self._ntt_cycles(last.log_n, last.batch)
        return value

    def write(self, offset: int, value: int) -> None:
        self.model.write(offset, value)

    @property
    def interrupt(self) -> bool:
        return self.model.interrupt

    def close(self) -> None:
        pass
