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
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as cf_wait
from dataclasses import astuple, replace

import numpy as np

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import BEAT_BYTES, CHANNEL_WINDOW_BYTES, PAGE_BYTES
from nantucket.hw.model.record import CYCLE_WORDS, RECORD_BYTES, StatusRecord
from nantucket.hw.model.run import Run

from .adapter import UNFINISHED
from .errors import (BadPointer, IdentityMismatch, KernelAxiError, KernelFailed, KernelRefused, KernelTimeout,
                     XrtError)

__all__ = ["KernelRuns", "c_int", "kernel_size_text", "kernel_calls_text", "run_calls", "hbm_location",
           "measured_sums", "measured_lines", "MEASURED_LINES", "STRANDED"]

#: The report lines of the kernel's own cycle counts (its status records), when it counts them.
MEASURED_LINES = ("Measured cycles", "Measured time")

#: The longest wait XRT's run.wait takes (a C int of milliseconds); longer ones wait without a limit.
_MAX_WAIT_MS = 2**31 - 1
#: (run, {argument: buffer}) of the runs that timed out, kept alive (never freed) while their kernel may
#: still write them, until the process exits.
STRANDED: list = []


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


def measured_sums(records, params) -> dict | None:
    """The kernel's own cycle counts over ``records`` (status records; those counting nothing left out):
    {word name in lower case: sum, "calls", "seconds"}, or None when none counts (the register-level
    model's)."""
    records = [r for r in records if any(r.cycles().values())]
    if not records:
        return None
    sums = {name.lower(): sum(r[name] for r in records) for name in CYCLE_WORDS}
    return dict(sums, calls=len(records), seconds=sum(r.kernel_seconds(params) for r in records))


def measured_lines(measured: dict, params) -> dict[str, str]:
    """The report's :data:`MEASURED_LINES` of the counts of :func:`measured_sums`."""
    m = measured
    over = f" over {m['calls']} calls" if m["calls"] > 1 else ""
    return {
        "Measured cycles": (
            f"pass 1 {m['pass1_dma_cycles']} DMA / {m['pass1_ntt_cycles']} NTT cycles, pass 2 "
            f"{m['pass2_dma_cycles']} DMA / {m['pass2_ntt_cycles']} NTT cycles, total "
            f"{m['total_dma_cycles']} DMA cycles{over} (measured by the kernel)"),
        "Measured time": (f"{m['seconds'] * 1e3:.4f} ms at the {params.dma_mhz:g} MHz DMA clock "
                          "(measured by the kernel, start to status record)"),
    }


def hbm_location(plan, layout, limit: int, index: int) -> str:
    """Where output point ``index`` (of the flattened result) of a run of ``plan`` on ``layout`` (``limit``
    rows a call) sat in HBM: the kernel output element it came from (TransformPlan.kernel_index), in its
    batch element's region."""
    row, i = divmod(index, plan.n)
    channel, offset = layout.place("output", np.array([plan.kernel_index(i)]))
    offset = int(offset[0]) + (row % limit) * layout.channel_bytes
    return f"HBM channel {int(channel[0])}, byte 0x{offset:x}"


def run_calls(driver, scratch, rows: np.ndarray, plan, layout, limit: int, sink, row_step: int | None = None,
              n_sets: int = 3) -> tuple[list, np.ndarray]:
    """The kernel calls of a backend's ``run``, ``limit`` rows a call, on the buffer sets of ``scratch``
    (transfers.ScratchSets) through ``driver``'s ``upload``, ``execute_run`` and ``download``: the
    results per call, and the seconds spent moving points to the card, in the kernel and bringing them
    back (summed per phase). With a ``row_step``, each call's run starts at its first row's shift.

    One call: upload, run, download. Several: ``n_sets`` buffer sets (three) in turn, so that while the
    kernel runs call i, one thread moves call i+1's points to the card and another brings call i-1's
    back (the link's two directions and the kernel all busy: a stream of calls goes at the pace of the
    slowest of them, not of their sum). Calls run in order; the host prepares a call's rows on the upload
    thread and finishes them on the download one."""
    times = np.zeros(3)
    starts = range(0, rows.shape[0], limit)

    def upload(bufs, r0):
        t0 = time.perf_counter()
        chunk = plan.prepare(rows[r0:r0 + limit])
        driver.upload(bufs, chunk, reverse=plan.layout_reverse_in, sink=sink)
        times[0] += time.perf_counter() - t0
        return chunk.shape[0]

    def download(bufs, batch):
        t0 = time.perf_counter()
        out = plan.finish(driver.download(bufs, batch, reverse=plan.layout_reverse_out, sink=sink))
        times[2] += time.perf_counter() - t0
        return out

    def execute(bufs, batch, r0):
        t0 = time.perf_counter()
        driver.execute_run(bufs, plan.run(batch, row_step=row_step, first_row=r0))
        times[1] += time.perf_counter() - t0

    if len(starts) == 1 or n_sets == 1:
        bufs, outs = scratch.get(layout, min(rows.shape[0], limit)), []
        for r0 in starts:
            batch = upload(bufs, r0)
            execute(bufs, batch, r0)
            outs.append(download(bufs, batch))
        return outs, times
    sets = [scratch.get(layout, limit, index=i) for i in range(n_sets)]
    ups, downs = [], []
    with ThreadPoolExecutor(1, thread_name_prefix="xrt-up") as to_card, \
            ThreadPoolExecutor(1, thread_name_prefix="xrt-down") as from_card:
        try:
            ups.append(to_card.submit(upload, sets[0], 0))
            for i, _ in enumerate(starts):
                batch = ups[i].result()
                if i + 1 < len(starts):
                    if i + 1 >= n_sets:                 # its set is free once that call's points are back
                        downs[i + 1 - n_sets].result()
                    ups.append(to_card.submit(upload, sets[(i + 1) % n_sets], starts[i + 1]))
                execute(sets[i % n_sets], batch, starts[i])
                downs.append(from_card.submit(download, sets[i % n_sets], batch))
            return [d.result() for d in downs], times
        finally:                                        # on an error: nothing left using the buffers
            cf_wait(ups + downs)


class KernelRuns:
    """The runs on one open :class:`~host.xrt.card.Card` ``card`` (its attributes looked up at each call).
    ``last_record``: the StatusRecord of the last run that completed without an error; ``records``: those
    of the runs of :meth:`execute` since :meth:`take_measured` last summed them."""

    def __init__(self, card):
        self._card = card
        self.stuck_run = None           # a run that timed out and may still be running
        self.stuck_bos: dict = {}       # its buffers (kept referenced, so never freed under it)
        self.last_shift = 0             # the coset shift last sent (left in the register between cosets)
        self.last_record: StatusRecord | None = None
        self.records: list[StatusRecord] = []

    def take_measured(self) -> dict | None:
        """The kernel's own cycle counts over ``records`` (:func:`measured_sums`, None when none counts),
        which are forgotten."""
        measured = measured_sums(self.records, self._card.params)
        self.records.clear()
        return measured

    def execute(self, bufs, run: Run) -> StatusRecord:
        """:meth:`start_and_wait` after the host's own checks: no run that timed out still going
        (KernelTimeout), the batch fits ``bufs`` and the start is one the kernel takes (KernelRefused before
        anything is sent); returns the status record, also kept in ``records``."""
        card = self._card
        self.check_not_stuck()
        if run.batch > bufs.batch and run.log_n == bufs.layout.log_n and not run.chain_log_n:
            raise KernelRefused(f"a batch of {run.batch} does not fit buffers of {bufs.batch}", ("bad_batch",))
        refused = card.rmap.check_start(*astuple(run))     # check_start takes Run's fields, in order
        if refused:
            raise KernelRefused.from_status(refused, run, card.params, by="the host")
        record = self.start_and_wait(bufs, run)
        self.records.append(record)
        return record

    def start_and_wait(self, bufs, run: Run) -> StatusRecord:
        """Check the pointers, start ``run`` on ``bufs``, wait for it within the timeout, check the kernel's
        status record (and STATUS where it can be read); returns the record."""
        card = self._card
        status_buffer = card.status_buffer
        self.check_pointers(bufs, run.batch, [run.log_n] + ([run.chain_log_n] if run.chain_log_n else []))
        # Without a coset the shift is ignored: keep the last one in the register, so the kernel's set-up
        # for it (g^-1 and its squares, hw/coset/) is not redone by the next coset run.
        if run.flags & R.FLAG_COSET:
            self.last_shift = run.coset_shift
        words = replace(run, coset_shift=self.last_shift).words()
        # every argument on every run: a register keeps its value between runs
        args = [(a.index, (bufs.bos[a.channel] if a.is_points else status_buffer.bo) if a.is_pointer
                 else c_int(words[a.name])) for a in card.rmap.args]
        # a record left from an earlier start must not pass for this one's
        status_buffer.view[:] = 0
        card.xrt.sync(status_buffer.bo, True, RECORD_BYTES, f"{R.RECORD_ARG}: clearing the status record")
        handle = card.xrt.start(card.kernel, args)
        del args                        # it holds the buffers: only the run (until it is over) may
        card.note(f"xrt: kernel call: 2^{run.log_n} points, batch {run.batch}, flags 0x{run.flags:x}"
                 + (f", input_log_m {run.input_log_m}" if run.input_log_m else "")
                 + (f", chain_log_n {run.chain_log_n}" if run.chain_log_n else "")
                 + (f", row_step {run.row_step}" if run.steps_rows else ""))
        t0 = time.perf_counter()
        try:
            completed, name = card.xrt.wait(handle, self._timeout_ms())
        except BaseException:
            self._strand(handle, bufs, status_buffer)   # it may still be running: keep its buffers
            raise
        waited = time.perf_counter() - t0
        if not completed and name in UNFINISHED:
            self._strand(handle, bufs, status_buffer)
            limit = "no limit" if card.timeout_s is None else f"limit {card.timeout_s:g} s"
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
        self._check_record(record, run, bufs)
        self.last_record = record
        card.note(f"xrt: kernel done in {waited:.3f} s (status record: start {record['SEQUENCE']}"
                 + (f", {record['TOTAL_DMA_CYCLES']} DMA cycles" if record["TOTAL_DMA_CYCLES"] else "") + ")")
        return record

    def _strand(self, handle, bufs, status_buffer) -> None:
        """Keep the buffers of a run that may still be running (the status buffer among them)."""
        self.stuck_run, self.stuck_bos = handle, dict(bufs.bos, **{R.RECORD_ARG: status_buffer.bo})

    def read_record(self, status_buffer) -> StatusRecord:
        """The status record the kernel wrote into ``status_buffer``, synced from the device."""
        self._card.xrt.sync(status_buffer.bo, False, RECORD_BYTES, f"{R.RECORD_ARG}: reading the status record")
        return StatusRecord.from_bytes(status_buffer.view)

    def _check_record(self, record: StatusRecord, run: Run, bufs=None) -> None:
        """The named error of what the record of ``run`` (and STATUS, where it can be read) reports."""
        card = self._card
        params = card.params
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
        self._check_status(run, status, bufs)

    def _timeout_ms(self) -> int:
        # 0 waits without a limit; a longer limit than XRT's C int of milliseconds holds is none either
        timeout_s = self._card.timeout_s
        timeout_ms = 0 if timeout_s is None else max(1, int(timeout_s * 1000))
        return 0 if timeout_ms > _MAX_WAIT_MS else timeout_ms

    def _check_status(self, run: Run, status: int, bufs=None) -> None:
        """KernelRefused / KernelAxiError / KernelFailed for what STATUS ``status`` reports after ``run``
        completed (on ``bufs``, whose addresses a bad_align names)."""
        if status & R.STATUS_REJECTED:
            card = self._card
            bases = None
            if status & R.STATUS_BAD_ALIGN and bufs is not None:
                bases = [card.xrt.span(bufs.bos[a.channel], f"{a.name}: reading the buffer's address")[0]
                         for a in card.rmap.pointer_args]
            raise KernelRefused.from_status(status, run, card.params, by="the kernel", bases=bases)
        if status & R.STATUS_AXI_ERROR:
            raise KernelAxiError.from_status(status, self.status_note(status))
        if status:
            raise KernelFailed(f"the kernel reported a device error:{self.status_note(status)}")

    def read_status(self) -> int | None:
        """The STATUS word, or None when this pyxrt cannot read registers."""
        card = self._card
        if not card.xrt.reads_registers(card.kernel):
            return None
        return card.xrt.read_registers(card.kernel, [card.rmap.id_offset("STATUS")], KernelFailed, "reading STATUS")[0]

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
        for f in self._card.rmap.register("STATUS").fields:
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
        name = self._card.xrt.state_name(self.stuck_run, "checking the run that timed out")
        if name in UNFINISHED:
            raise KernelTimeout(f"a previous run timed out and is still {name}: its buffers may still be "
                                "written, so this backend runs nothing more; reset the card (`xbutil "
                                "reset`) and open it again")
        self.stuck_run = None

    def release(self, card_reset: bool) -> None:
        """Forget a timed-out run: its buffers are kept until the process exits, unless ``card_reset``
        says nothing can write them any more."""
        if self.stuck_run is not None and not card_reset:
            STRANDED.append((self.stuck_run, self.stuck_bos))
        self.stuck_run, self.stuck_bos = None, {}

    def check_pointers(self, bufs, batch: int = 1, sizes=None) -> None:
        """Every buffer of ``bufs``: aligned to the beat and to the longest burst of the run's layouts
        (``sizes``: log_n of each layout the run reads or writes, default the buffers' own; no burst
        crosses 4 KiB) and of the build (the kernel's own rule, else STATUS.bad_align), inside the HBM pseudo-channel its master is wired to, large enough for ``batch``
        transforms of each size, overlapping no other (BadPointer)."""
        card = self._card
        # a size the kernel refuses (sent past the host's check) is placed nowhere: the buffers' own then
        layouts = [bufs.layout] + [card.layout_for(s) for s in (sizes or ()) if s != bufs.layout.log_n
                                   and card.rmap.log_n_supported(s)]
        layout = max(layouts, key=lambda lay: lay.log_n)
        align = max(max(lay.burst_beats, lay.unit_beats) for lay in layouts) * BEAT_BYTES
        need = int(layout.channel_bytes) * batch
        spans = []
        for a in card.rmap.pointer_args:
            addr, size = card.xrt.span(bufs.bos[a.channel], f"{a.name}: reading the buffer's address")
            where = f"{a.name} (for {a.port}) at 0x{addr:x}"
            if addr % BEAT_BYTES:
                raise BadPointer(f"{where}: not aligned to the {BEAT_BYTES}-byte AXI beat")
            if addr % align:
                raise BadPointer(f"{where}: not aligned to {align} bytes, so a {align}-byte DMA burst would "
                                 f"cross a {PAGE_BYTES}-byte boundary (AXI forbids it)")
            if addr % card.rmap.base_align:         # the kernel's rule: the build's longest burst, any size
                raise BadPointer(f"{where}: not aligned to {card.rmap.base_align} bytes, the DMA's longest burst "
                                 "of this build, which the kernel refuses whatever the run (STATUS.bad_align)")
            if size < need:
                raise BadPointer(f"{where}: {size} bytes, the layout of a 2^{layout.log_n}-point run "
                                 f"needs {need}" + (f" for a batch of {batch}" if batch > 1 else ""))
            group = bufs.groups.get(a.channel, a.channel)
            base, span = card.windows.get(group, (group * CHANNEL_WINDOW_BYTES, CHANNEL_WINDOW_BYTES))
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
        card = self._card
        a, status_buffer = card.rmap.record_arg, card.status_buffer
        addr, size = card.xrt.span(status_buffer.bo, f"{a.name}: reading the buffer's address")
        where = f"{a.name} (the status record, for {a.port}) at 0x{addr:x}"
        if addr % RECORD_BYTES:
            raise BadPointer(f"{where}: not aligned to the {RECORD_BYTES}-byte record")
        if size < RECORD_BYTES:
            raise BadPointer(f"{where}: {size} bytes, the status record needs {RECORD_BYTES}")
        group = status_buffer.group
        base, span = card.windows.get(group, (group * CHANNEL_WINDOW_BYTES, CHANNEL_WINDOW_BYTES))
        if not (base <= addr and addr + RECORD_BYTES <= base + span):
            raise BadPointer(f"{where}: leaves memory bank {group} [0x{base:x}, 0x{base + span:x}), the only one "
                             f"{a.port} is connected to")
        return addr, addr + RECORD_BYTES, a.name
