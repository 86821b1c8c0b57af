"""Kernel runs: one :class:`hw.model.run.Run` started on a set of device buffers and waited for.

:class:`KernelRuns` checks the pointers (:class:`BadPointer`), sets every argument in register order
(``log_n``, the point buffers ``hbm_NN``, the words of :data:`hw.model.run.SCALAR_ARGS`, all from
:meth:`Run.words`, and the ``status`` pointer: the backend's status buffer), clears the status buffer,
starts, waits within the timeout, then reads back the kernel's status record (hw.model.record) and
decodes it: no record (a half-finished run), another kernel's identification, a record of another start,
a refusal, an AXI error. XRT's published pyxrt cannot read registers, so the record is how the host
learns how a run went; where this pyxrt reads registers too, STATUS must agree with the record and a
timeout says what it holds.

A run that times out cannot be aborted (pyxrt declares no ``run.abort``): its buffers (the status buffer
too) are kept (never freed while the kernel may still write them; after ``close()`` until the process
exits) and new runs are refused with :class:`KernelTimeout` until it has completed.
"""

from __future__ import annotations

import time
from dataclasses import replace

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import BEAT_BYTES, CHANNEL_WINDOW_BYTES, PAGE_BYTES
from nantucket.hw.model.record import RECORD_BYTES, StatusRecord
from nantucket.hw.model.run import Run

from .adapter import UNFINISHED
from .errors import (BadPointer, IdentityMismatch, KernelAxiError, KernelFailed, KernelRefused, KernelTimeout,
                     XrtError)

__all__ = ["KernelRuns", "c_int", "kernel_size_text", "kernel_calls_text"]

#: The longest wait XRT's run.wait takes (a C int of milliseconds); longer ones wait without a limit.
_MAX_WAIT_MS = 2**31 - 1
#: Buffers of runs that timed out, kept alive (not freed) while their kernel may still write them.
_STRANDED: list = []


def c_int(word: int) -> int:
    """A 32-bit register word as the C int pyxrt's ``run.set_arg`` takes (words >= 2^31 negative)."""
    if not 0 <= word < 1 << 32:
        raise ValueError(f"word: expected a 32-bit value, got {word}")
    return word - (1 << 32) if word >= 1 << 31 else word


def kernel_size_text(log_n: int, n_points: int) -> str:
    """What the report says of a run of n_points on a kernel that ran 2^log_n points: "2^18 points,
    native" or "2^8 points (2^5 zero-padded by the host)"."""
    if n_points == 1 << log_n:
        return f"2^{log_n} points, native"
    return f"2^{log_n} points (2^{n_points.bit_length() - 1} zero-padded by the host)"


def kernel_calls_text(rows: int, limit: int, calls: int, flags: int) -> str:
    """What the report says of the kernel calls of a run: "1 call, batch 4, flags inverse+coset"."""
    names = [name for name, bit in (("inverse", R.FLAG_INVERSE), ("coset", R.FLAG_COSET)) if flags & bit]
    split = f" (split: at most {limit} per call)" if calls > 1 else ""
    return (f"{calls} call{'s' if calls > 1 else ''}, batch {rows}{split}, flags "
            f"{'+'.join(names) or 'none (forward)'}")


class KernelRuns:
    """The runs of one XrtBackend ``owner`` (its adapter ``_xrt``, ``_kernel``, ``rmap``, ``params``,
    ``timeout_s``, ``_windows``, ``_status_buffer``, ``layout_for`` and ``_note``, looked up at each call).
    ``last_record``: the StatusRecord of the last run that completed without an error."""

    def __init__(self, owner):
        self._owner = owner
        self.stuck_run = None           # a run that timed out and may still be running
        self.stuck_bos: dict = {}       # its buffers (kept referenced, so never freed under it)
        self.last_shift = 0             # the coset shift last sent (left in the register between cosets)
        self.last_record: StatusRecord | None = None

    def start_and_wait(self, bufs, run: Run) -> StatusRecord:
        """Check the pointers, start ``run`` on ``bufs``, wait for it within the timeout, check the kernel's
        status record (and STATUS where it can be read); returns the record."""
        be = self._owner
        status_buffer = be._status_buffer
        self.check_pointers(bufs, run.batch, [run.log_n] + ([run.chain_log_n] if run.chain_log_n else []))
        # Without a coset the shift is ignored: keep the last one in the register, so the kernel's set-up
        # for it (g^-1 and its squares, hw/coset.py) is not redone by the next coset run.
        if run.flags & R.FLAG_COSET:
            self.last_shift = run.coset_shift
        words = replace(run, coset_shift=self.last_shift).words()
        # every argument on every run: a register keeps its value between runs
        args = [(a.index, (bufs.bos[a.channel] if a.is_points else status_buffer.bo) if a.is_pointer
                 else c_int(words[a.name])) for a in be.rmap.args]
        # a record left from an earlier start must not pass for this one's
        status_buffer.view[:] = 0
        be._xrt.sync(status_buffer.bo, True, RECORD_BYTES, f"{R.RECORD_ARG}: clearing the status record")
        handle = be._xrt.start(be._kernel, args)
        del args                        # it holds the buffers: only the run (until it is over) may
        be._note(f"xrt: kernel call: 2^{run.log_n} points, batch {run.batch}, flags 0x{run.flags:x}"
                 + (f", input_log_m {run.input_log_m}" if run.input_log_m else "")
                 + (f", chain_log_n {run.chain_log_n}" if run.chain_log_n else "")
                 + (f", row_step {run.row_step}" if run.steps_rows else ""))
        t0 = time.perf_counter()
        try:
            completed, name = be._xrt.wait(handle, self._timeout_ms())
        except BaseException:
            self._strand(handle, bufs, status_buffer)   # it may still be running: keep its buffers
            raise
        waited = time.perf_counter() - t0
        if not completed and name in UNFINISHED:
            self._strand(handle, bufs, status_buffer)
            limit = "no limit" if be.timeout_s is None else f"limit {be.timeout_s:g} s"
            note = self.status_note()
            raise KernelTimeout(f"the kernel did not finish: still {name} after {waited:.1f} s ({limit})"
                                f"{note}; pyxrt cannot abort a run, so its buffers stay allocated and "
                                "this backend refuses new runs until it completes (reset the card with "
                                "`xbutil reset` if it never does)", waited=waited, status=note)
        # The run is over: drop it, as it holds its buffer arguments (a traceback keeps this frame, and
        # the buffers of the next size must not have to go around the old ones).
        del handle
        if not completed:
            raise KernelFailed(f"the kernel run ended in state {name} after {waited:.1f} s{self.status_note()}")
        record = self.read_record(status_buffer)
        self._check_record(record, run)
        self.last_record = record
        be._note(f"xrt: kernel done in {waited:.3f} s (status record: start {record['SEQUENCE']}"
                 + (f", {record['TOTAL_DMA_CYCLES']} DMA cycles" if record["TOTAL_DMA_CYCLES"] else "") + ")")
        return record

    def _strand(self, handle, bufs, status_buffer) -> None:
        """Keep the buffers of a run that may still be running (the status buffer among them)."""
        self.stuck_run, self.stuck_bos = handle, dict(bufs.bos, **{R.RECORD_ARG: status_buffer.bo})

    def read_record(self, status_buffer) -> StatusRecord:
        """The status record the kernel wrote into ``status_buffer``, synced from the device."""
        self._owner._xrt.sync(status_buffer.bo, False, RECORD_BYTES, f"{R.RECORD_ARG}: reading the status record")
        return StatusRecord.from_bytes(status_buffer.view)

    def _check_record(self, record: StatusRecord, run: Run) -> None:
        """The named error of what the record of ``run`` (and STATUS, where it can be read) reports."""
        be = self._owner
        params = be.params
        if not record.written:
            raise KernelFailed(f"the kernel finished without writing its status record (it reads MAGIC "
                               f"0x{record['MAGIC']:08x}, VERSION {record['VERSION']}): a half-finished run, or a "
                               f"kernel from before register map version {R.VERSION}; the output is not valid"
                               f"{self.status_note()}")
        wrong = record.mismatched_ids(params)
        if wrong:
            raise IdentityMismatch(f"the kernel's status record reports "
                                   f"{', '.join(f'{n} {got}' for n, (got, _) in wrong.items())}, but a "
                                   f"{params.tag()} build has "
                                   f"{', '.join(f'{n} {want}' for n, (_, want) in wrong.items())}")
        if not record.describes(run):
            def text(f):
                return (f"log_n {f['log_n']}, batch {f['batch']}, flags 0x{f['flags']:x}, input_log_m "
                        f"{f['input_log_m']}, chain_log_n {f['chain_log_n']}")
            sent = {"log_n": run.log_n & 0xFF, "batch": run.batch, "flags": run.flags & 0xFF,
                    "input_log_m": run.input_log_m & 0xFF, "chain_log_n": run.chain_log_n & 0xFF}
            raise KernelFailed(f"the kernel's status record describes another start "
                               f"({text(record.run_fields())}) than the one sent ({text(sent)}): the arguments "
                               "did not reach the kernel as sent; the output is not valid")
        status = record.status
        register = self.read_status()
        if register is not None and register != status:
            notes = [self.status_note(word) or " clear" for word in (register, status)]
            raise KernelFailed(f"STATUS reads 0x{register:08x} but the kernel's status record says "
                               f"0x{status:08x}: the two disagree, so neither is trusted; register:{notes[0]}; "
                               f"record:{notes[1]}")
        self._check_status(run, status)

    def _timeout_ms(self) -> int:
        # 0 waits without a limit; a longer limit than XRT's C int of milliseconds holds is none either
        timeout_s = self._owner.timeout_s
        timeout_ms = 0 if timeout_s is None else max(1, int(timeout_s * 1000))
        return 0 if timeout_ms > _MAX_WAIT_MS else timeout_ms

    def _check_status(self, run: Run, status: int) -> None:
        """KernelRefused / KernelAxiError / KernelFailed for what STATUS ``status`` reports after ``run``
        completed."""
        if status & R.STATUS_REJECTED:
            raise KernelRefused.from_status(status, run, self._owner.params, by="the kernel")
        if status & R.STATUS_AXI_ERROR:
            raise KernelAxiError.from_status(status, self.status_note(status))
        if status:
            raise KernelFailed(f"the kernel reported a device error:{self.status_note(status)}")

    def read_status(self) -> int | None:
        """The STATUS word, or None when this pyxrt cannot read registers."""
        be = self._owner
        if not be._xrt.reads_registers(be._kernel):
            return None
        return be._xrt.read_registers(be._kernel, [be.rmap.id_offset("STATUS")], KernelFailed, "reading STATUS")[0]

    def status_note(self, status: int | None = None) -> str:
        """`` STATUS 0x...: field=value, ...`` for every non-zero field of STATUS (any field the register
        map defines, e.g. an AXI error and its channel), or "" when it is clear or unreadable."""
        if status is None:
            try:
                status = self.read_status()
            except XrtError:
                return ""
        if not status:
            return ""
        parts, known = [], 0
        for f in self._owner.rmap.register("STATUS").fields:
            known |= f.mask
            if status & f.mask:
                parts.append(f"{f.name}={(status & f.mask) >> f.lsb}")
        if status & ~known:
            parts.append(f"undefined bits 0x{status & ~known:x}")
        return f" STATUS 0x{status:08x}: {', '.join(parts)}"

    def check_not_stuck(self) -> None:
        """Refuse to touch buffers that a timed-out run may still be writing (KernelTimeout), unless it
        has completed since."""
        if self.stuck_run is None:
            return
        name = self._owner._xrt.state_name(self.stuck_run, "checking the run that timed out")
        if name in UNFINISHED:
            raise KernelTimeout(f"a previous run timed out and is still {name}: its buffers may still be "
                                "written, so this backend runs nothing more; reset the card (`xbutil "
                                "reset`) and open it again")
        self.stuck_run = None

    def release(self, card_reset: bool) -> None:
        """Forget a timed-out run: its buffers are kept until the process exits, unless ``card_reset``
        says nothing can write them any more."""
        if self.stuck_run is not None and not card_reset:
            _STRANDED.append((self.stuck_run, self.stuck_bos))
        self.stuck_run, self.stuck_bos = None, {}

    def check_pointers(self, bufs, batch: int = 1, sizes=None) -> None:
        """Every buffer of ``bufs``: aligned to the beat and to the longest burst of the run's layouts
        (``sizes``: log_n of each layout the run reads or writes, default the buffers' own; no burst
        crosses 4 KiB), inside the HBM pseudo-channel its master is wired to, large enough for ``batch``
        transforms of each size, overlapping no other (BadPointer)."""
        be = self._owner
        # a size the kernel refuses (sent past the host's check) is placed nowhere: the buffers' own then
        layouts = [bufs.layout] + [be.layout_for(s) for s in (sizes or ()) if s != bufs.layout.log_n
                                   and be.rmap.log_n_supported(s)]
        layout = max(layouts, key=lambda lay: lay.log_n)
        align = max(max(lay.burst_beats, lay.unit_beats) for lay in layouts) * BEAT_BYTES
        need = int(layout.channel_bytes) * batch
        spans = []
        for a in be.rmap.pointer_args:
            addr, size = be._xrt.span(bufs.bos[a.channel], f"{a.name}: reading the buffer's address")
            where = f"{a.name} (for {a.port}) at 0x{addr:x}"
            if addr % BEAT_BYTES:
                raise BadPointer(f"{where}: not aligned to the {BEAT_BYTES}-byte AXI beat")
            if addr % align:
                raise BadPointer(f"{where}: not aligned to {align} bytes, so a {align}-byte DMA burst would "
                                 f"cross a {PAGE_BYTES}-byte boundary (AXI forbids it)")
            if size < need:
                raise BadPointer(f"{where}: {size} bytes, the layout of a 2^{layout.log_n}-point run "
                                 f"needs {need}" + (f" for a batch of {batch}" if batch > 1 else ""))
            group = bufs.groups.get(a.channel, a.channel)
            base, span = be._windows.get(group, (group * CHANNEL_WINDOW_BYTES, CHANNEL_WINDOW_BYTES))
            if not (base <= addr and addr + need <= base + span):
                raise BadPointer(f"{where}: [0x{addr:x}, 0x{addr + need:x}) leaves memory bank {group} "
                                 f"[0x{base:x}, 0x{base + span:x}), the only one {a.port} is connected to")
            spans.append((addr, addr + need, a.name))
        spans.append(self._check_status_pointer())
        spans.sort()
        for (lo1, hi1, n1), (lo2, hi2, n2) in zip(spans, spans[1:]):
            if lo2 < hi1:
                raise BadPointer(f"{n1} [0x{lo1:x}, 0x{hi1:x}) and {n2} [0x{lo2:x}, 0x{hi2:x}) overlap")

    def _check_status_pointer(self) -> tuple[int, int, str]:
        """The status buffer: aligned to the record (the kernel rounds the address down to RECORD_BYTES),
        large enough, inside the bank of master m00_axi (BadPointer); returns its span."""
        be = self._owner
        a, status_buffer = be.rmap.record_arg, be._status_buffer
        addr, size = be._xrt.span(status_buffer.bo, f"{a.name}: reading the buffer's address")
        where = f"{a.name} (the status record, for {a.port}) at 0x{addr:x}"
        if addr % RECORD_BYTES:
            raise BadPointer(f"{where}: not aligned to the {RECORD_BYTES}-byte record")
        if size < RECORD_BYTES:
            raise BadPointer(f"{where}: {size} bytes, the status record needs {RECORD_BYTES}")
        group = status_buffer.group
        base, span = be._windows.get(group, (group * CHANNEL_WINDOW_BYTES, CHANNEL_WINDOW_BYTES))
        if not (base <= addr and addr + RECORD_BYTES <= base + span):
            raise BadPointer(f"{where}: leaves memory bank {group} [0x{base:x}, 0x{base + span:x}), the only one "
                             f"{a.port} is connected to")
        return addr, addr + RECORD_BYTES, a.name
