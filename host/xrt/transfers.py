"""Points between host memory and the kernel's device buffers: :class:`DeviceBuffers` (one buffer per
HBM channel) and :class:`Transfers`, which allocates them and moves rows in and out through the layout
step (host/hbm_io.py: scatter straight into the buffers' host maps, then sync; sync, then gather); the
one :class:`StatusBuffer` the kernel writes its status record into; and the :class:`BufferPool` the
sets of device-resident arrays come from and go back to.

Why a pool: a new buffer costs a device allocation and, on the host, fresh pages of its map that the
first scatter into it faults in one by one (a stream of 2^20-point columns, each array its own set of
32 buffers of 256 KiB, spent about as much system time as user time on them). A set given back (its
array released or garbage-collected) waits in the pool, and the next set of the same bytes per buffer
takes it: no pyxrt call at all."""

from __future__ import annotations

import sys
import threading
import time
import weakref

import numpy as np

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.record import RECORD_BYTES
from nantucket.host.hbm_io import gather_rows, scatter_padded, scatter_rows

from .errors import BufferAllocFailed

__all__ = ["DeviceBuffers", "StatusBuffer", "Progress", "Transfers", "BufferPool", "ScratchSets",
           "PROGRESS_MIN_POINTS", "POOL_BYTES", "progress_sink"]

#: Sizes from which scatter/gather and the transfers show progress on stderr.
PROGRESS_MIN_POINTS = 1 << 20
#: The most bytes of device buffers a backend's pool keeps idle (each also a host map of that size): four
#: sets of the default build's largest call (2^24 points of 8 bytes), 64 of a 2^20-point column's.
POOL_BYTES = 512 << 20


def progress_sink(progress, n_points: int):
    """Where the transfers of ``n_points`` report: the backend's ``progress`` option (None: stderr from
    PROGRESS_MIN_POINTS on; False: nowhere; True: stderr; a callable) as a :class:`Progress` sink."""
    if progress is False:
        return None
    if callable(progress):
        return progress
    return "stderr" if (progress is True or n_points >= PROGRESS_MIN_POINTS) else None


class DeviceBuffers:
    """One buffer per HBM channel, each of ``batch`` regions of ``layout.channel_bytes``: where a batch of
    transforms of the layout's size lives on the card (element e of every buffer in region e).

    A set from the backend's :class:`BufferPool` goes back to it when released, or when the set is
    garbage-collected; any other set's buffers are dropped (pyxrt frees a buffer's device memory with its
    last reference)."""

    def __init__(self, layout: HbmLayout, batch: int):
        self.layout, self.batch = layout, batch
        self.bos: dict[int, object] = {}
        self.views: dict[int, np.ndarray] = {}
        self.groups: dict[int, int] = {}
        self._back = None               # weakref.finalize giving the buffers back to a pool

    @property
    def channel_bytes(self) -> int:
        return self.layout.channel_bytes * self.batch

    def release(self) -> None:
        """Give the buffers back to the pool they came from, or drop them; the set is empty afterwards."""
        if self._back is not None:
            self._back()                # once only: a finalizer runs at most once
        self.views.clear()
        self.bos.clear()

    def pooled(self, pool: "BufferPool", nbytes: int) -> None:
        """From now on, the buffers go back to ``pool`` (as buffers of ``nbytes``) when the set is released
        or garbage-collected."""
        self._back = weakref.finalize(self, pool.give, nbytes, self.bos, self.views, self.groups)
        self._back.atexit = False       # at interpreter exit pyxrt frees everything anyway


class BufferPool:
    """Idle buffer sets of one backend for reuse, keyed by their bytes per buffer (every buffer is a
    ``bo.normal`` on the bank of its kernel argument, so the bytes are the key): :meth:`take` one,
    :meth:`give` one back. At most ``limit_bytes`` are kept idle (the oldest sets dropped first, so pyxrt
    frees them); :meth:`clear` drops every idle set, :meth:`close` too and drops every set given back
    later. ``stuck(bos)``: whether a set's buffers may still be in use by a run that timed out (such a
    set is dropped, never handed out again). Thread-safe: sets come back from any thread, also from the
    garbage collector in the middle of a take (then they wait in a list until the next call)."""

    def __init__(self, limit_bytes: int = POOL_BYTES, stuck=None):
        self.limit_bytes = limit_bytes
        self._stuck = stuck
        self._idle: list[tuple[int, dict]] = []     # (bytes per buffer, {channel: (bo, view, group)}), oldest first
        self._lock = threading.Lock()
        self._late: list[tuple[int, dict]] = []     # given back while the lock was held
        self.closed = False
        #: sets handed out from the pool, and sets that had to be allocated
        self.reused = self.allocated = 0

    @property
    def idle_bytes(self) -> int:
        return sum(nbytes * len(entries) for nbytes, entries in self._idle)

    def take(self, nbytes: int) -> dict | None:
        """An idle set of buffers of ``nbytes`` ({channel: (bo, view, group)}, the most recent one), or
        None."""
        with self._lock:
            self._settle()
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i][0] == nbytes:
                    self.reused += 1
                    return self._idle.pop(i)[1]
            self.allocated += 1
            return None

    def give(self, nbytes: int, bos: dict, views: dict, groups: dict) -> None:
        """Take back a set's buffers (its ``bos``, ``views``, ``groups`` by channel)."""
        entries = {ch: (bos[ch], views[ch], groups[ch]) for ch in bos}
        if not entries or self.closed or nbytes * len(entries) > self.limit_bytes:
            return
        if self._stuck is not None and self._stuck(bo for bo, _, _ in entries.values()):
            return
        if not self._lock.acquire(blocking=False):
            self._late.append((nbytes, entries))     # list.append is atomic: settled by the next call
            return
        try:
            self._late.append((nbytes, entries))
            self._settle()
        finally:
            self._lock.release()

    def _settle(self) -> None:
        """Move the sets given back into the idle list (holding the lock), then drop the oldest ones
        past ``limit_bytes``."""
        while self._late:
            item = self._late.pop(0)
            if not self.closed:
                self._idle.append(item)
        total = self.idle_bytes
        while total > self.limit_bytes:
            nbytes, entries = self._idle.pop(0)
            total -= nbytes * len(entries)

    def clear(self) -> int:
        """Drop every idle set (pyxrt frees them with their last reference); returns how many."""
        with self._lock:
            self._settle()
            dropped, self._idle = len(self._idle), []
        return dropped

    def close(self) -> None:
        self.closed = True
        self.clear()


class StatusBuffer:
    """The buffer of the kernel's ``status`` argument (hw.model.record): ``bo``, ``view`` (its host map,
    RECORD_BYTES bytes) and ``group`` (the memory bank kernel.group_id gave it: master m00_axi's)."""

    def __init__(self, bo, view: np.ndarray, group: int):
        self.bo, self.view, self.group = bo, view, group


class Progress:
    """Progress with elapsed time for long transfers: ``to-device: 12/16 channels, 96.0 MiB, 0.31 s``.

    sink: None (silent), a callable taking each line, or "stderr" (one updating line on a terminal).
    """

    def __init__(self, label: str, total: int, sink):
        self.label, self.total, self.sink = label, total, sink
        self.t0 = time.perf_counter()
        self.nbytes = 0

    def note(self, text: str) -> None:
        self._emit(f"{self.label}: {text}", final=True)

    def step(self, done: int, nbytes: int) -> None:
        self.nbytes += nbytes
        line = (f"{self.label}: {done}/{self.total} channels, {self.nbytes / 2**20:.1f} MiB, "
                f"{time.perf_counter() - self.t0:.2f} s")
        self._emit(line, final=done == self.total, quiet=done % max(1, self.total // 4) != 0)

    def _emit(self, line: str, final: bool, quiet: bool = False) -> None:
        if self.sink is None:
            return
        if self.sink != "stderr":
            self.sink(line)
        elif sys.stderr.isatty():
            print("\r\x1b[K" + line, end="\n" if final else "", file=sys.stderr, flush=True)
        elif final or not quiet:
            print(line, file=sys.stderr, flush=True)


class Transfers:
    """Buffers and transfers on one open :class:`~host.xrt.card.Card` ``card`` (its attributes looked up at
    each call); ``runs``: the card's :class:`~host.xrt.runs.KernelRuns`, whose run that timed out may
    still be using buffers (``stuck_bos``: the pool keeps those)."""

    def __init__(self, card, runs):
        self._card = card
        self._runs = runs
        #: the idle sets of device-resident arrays (:meth:`allocate` with ``pooled``)
        self.pool = BufferPool(stuck=self._stuck)

    def _stuck(self, bos) -> bool:
        stuck = {id(bo) for bo in self._runs.stuck_bos.values()}
        return any(id(bo) in stuck for bo in bos)

    def allocate(self, layout: HbmLayout, batch: int = 1, *, pooled: bool = False) -> DeviceBuffers:
        """Buffers, one per HBM channel on its master's bank, each of ``batch`` regions of
        ``layout.channel_bytes``: new ones, or with ``pooled`` an idle set of that size from the pool
        (their contents whatever the last user left), going back to the pool when released. When the
        card is out of memory, the pool's idle sets are freed and the allocation tried once more."""
        bufs = DeviceBuffers(layout, batch)
        nbytes = bufs.channel_bytes
        entries = self.pool.take(nbytes) if pooled else None
        if entries is None:
            try:
                entries = self._new(nbytes)
            except BufferAllocFailed:
                if not self.pool.clear():
                    raise
                entries = self._new(nbytes)
        for ch, (bo, view, group) in entries.items():
            bufs.bos[ch], bufs.views[ch], bufs.groups[ch] = bo, view, group
        if pooled:
            bufs.pooled(self.pool, nbytes)
        return bufs

    def _new(self, nbytes: int) -> dict:
        """{channel: (bo, view, group)}: a new buffer of ``nbytes`` per HBM channel."""
        card = self._card
        entries = {}
        for a in card.rmap.pointer_args:
            entries[a.channel] = card.xrt.allocate(card.device, card.kernel, a.index, nbytes,
                                                   f"{a.name}: allocating {nbytes} bytes on {a.port}'s bank")
        return entries

    def allocate_status(self) -> StatusBuffer:
        """The status buffer: RECORD_BYTES in the memory group of the kernel's ``status`` argument."""
        card = self._card
        a = card.rmap.record_arg
        bo, view, group = card.xrt.allocate(card.device, card.kernel, a.index, RECORD_BYTES,
                                             f"{a.name}: allocating the {RECORD_BYTES}-byte status record on "
                                             f"{a.port}'s bank")
        return StatusBuffer(bo, view.view(np.uint8)[:RECORD_BYTES], group)

    def rows_layout(self, bufs: DeviceBuffers, log_n: int | None, batch: int) -> HbmLayout:
        """The layout of 2^log_n-point rows (default: the size ``bufs`` are sized for) in ``bufs``, whose
        regions must hold ``batch`` of them."""
        layout = bufs.layout if log_n is None or log_n == bufs.layout.log_n else self._card.layout_for(log_n)
        if layout.channel_bytes * batch > bufs.channel_bytes:
            raise ValueError(f"rows: {batch} rows of 2^{layout.log_n} points need {layout.channel_bytes * batch} "
                             f"bytes per channel, the buffers hold {bufs.channel_bytes}")
        return layout

    def sync(self, bufs: DeviceBuffers, chans, nbytes: int, to_device: bool, prog: Progress) -> int:
        """Sync the first ``nbytes`` of each channel in ``chans``; returns the bytes synced."""
        for i, ch in enumerate(chans):
            self._card.xrt.sync(bufs.bos[ch], to_device, nbytes,
                                f"{R.pointer_arg(ch)}: sync {'to' if to_device else 'from'} device")
            prog.step(i + 1, nbytes)
        return nbytes * len(chans)

    def upload(self, bufs: DeviceBuffers, rows: np.ndarray, reverse: bool, buffer: str, sink) -> int:
        """Place the (B, N) rows as ``buffer`` of a 2^log2(N)-point run in ``bufs`` and sync them to the
        device; returns the bytes synced. ``rows`` may be a strided view, and have more leading axes
        (counting the regions in C order: hbm_io.scatter_rows)."""
        n = rows.shape[-1]
        batch = rows.size // n
        layout = self.rows_layout(bufs, n.bit_length() - 1, batch)
        t0 = time.perf_counter()
        scatter_rows(layout, rows, bufs.views, buffer=buffer, reverse=reverse)  # straight into the maps
        chans = list(layout.buffer_channels(buffer))
        prog = Progress("to-device", len(chans), sink)
        prog.note(f"scattered {rows.size} points over {len(chans)} channels in {time.perf_counter() - t0:.2f} s")
        return self.sync(bufs, chans, layout.channel_bytes * batch, True, prog)

    def upload_padded(self, bufs: DeviceBuffers, rows: np.ndarray, sink) -> int:
        """Place the (B, M) rows as the zero-extended input of a run of ``bufs``' size (only the units of
        the M points written) and sync the B regions; returns the bytes synced."""
        card = self._card
        layout = bufs.layout
        batch, m = rows.shape
        log_m = m.bit_length() - 1
        if not card.rmap.lde_pair_ok(log_m, layout.log_n):
            raise ValueError(f"rows: the {card.params.tag()} build cannot read a zero-extended input of 2^{log_m} "
                             f"points in a 2^{layout.log_n}-point run (input_log_m, lde_pair_supported)")
        self.rows_layout(bufs, None, batch)
        t0 = time.perf_counter()
        scatter_padded(layout, rows, bufs.views)
        chans = list(layout.buffer_channels("input"))
        prog = Progress("to-device", len(chans), sink)
        prog.note(f"scattered {rows.size} points (zero-extended to {batch * layout.n_points}) over {len(chans)} "
                  f"channels in {time.perf_counter() - t0:.2f} s")
        return self.sync(bufs, chans, layout.channel_bytes * batch, True, prog)

    def download(self, bufs: DeviceBuffers, batch: int, reverse: bool, buffer: str, sink,
                 log_n: int | None, out: np.ndarray | None = None) -> np.ndarray:
        """Sync the first ``batch`` regions of ``buffer``'s channels from the device and gather their
        points: a new (batch, N) uint64 array, or written into ``out`` (hbm_io.gather_rows) and ``out``
        returned."""
        layout = self.rows_layout(bufs, log_n, batch)
        chans = list(layout.buffer_channels(buffer))
        prog = Progress("from-device", len(chans), sink)
        self.sync(bufs, chans, layout.channel_bytes * batch, False, prog)
        t0 = time.perf_counter()
        rows = gather_rows(layout, bufs.views, batch, buffer=buffer, reverse=reverse, out=out)
        prog.note(f"gathered {rows.size} points in {time.perf_counter() - t0:.2f} s")
        if out is not None:
            return out
        return rows.astype(np.uint64, copy=False)       # a backend's rows are uint64 in every field

    def copy_rows(self, dst: DeviceBuffers, pieces, log_n: int, buffer: str = "input") -> int:
        """Copy rows of 2^log_n points, as placed (``buffer`` of a 2^log_n-point run, either order: the
        bytes are copied, not the points), from other sets into ``dst``, card memory to card memory.
        ``pieces``: (src set, first source row, first row in ``dst``, rows). A row r of 2^log_n points sits
        at bytes [r * cb, (r + 1) * cb) of each of the layout's ``buffer`` channels (cb its
        ``channel_bytes``) whatever size the set is allocated for, which is where :meth:`upload` of
        2^log_n-point rows puts them in a set sized for more (the input of a chained LDE's first run):
        so each piece is one ``bo.copy`` per channel, of rows x cb bytes. Returns the bytes moved over the
        link each way: 0, or where this pyxrt has no ``bo.copy`` (the published one) the bytes synced
        from the sources and then to ``dst`` through their host maps (no gather or scatter)."""
        card = self._card
        layout = card.layout_for(log_n)
        chans = list(layout.buffer_channels(buffer))
        cb, moved = layout.channel_bytes, 0
        for src, s0, d0, rows in pieces:
            self.rows_layout(src, log_n, s0 + rows)         # both ranges inside their sets
            self.rows_layout(dst, log_n, d0 + rows)
            nbytes, so, do = rows * cb, s0 * cb, d0 * cb
            for ch in chans:
                what = f"{R.pointer_arg(ch)}: copying {nbytes} bytes between buffers on the card"
                if card.xrt.copies_on_card(dst.bos[ch]):
                    card.xrt.copy(dst.bos[ch], src.bos[ch], nbytes, so, do, what)
                    continue
                card.xrt.sync(src.bos[ch], False, nbytes, what + " (from device)", offset=so)
                host = lambda v, a: np.asarray(v).reshape(-1).view(np.uint8)[a:a + nbytes]
                host(dst.views[ch], do)[:] = host(src.views[ch], so)
                card.xrt.sync(dst.bos[ch], True, nbytes, what + " (to device)", offset=do)
                moved += nbytes
        return moved

    def download_regions(self, bufs: DeviceBuffers, regions, reverse: bool, buffer: str) -> np.ndarray:
        """Sync only ``regions`` (region numbers in any order, repeats allowed: the batch elements wanted) of
        ``buffer``'s channels from the device (one sync per channel and run of consecutive regions) and gather
        their points: a new (len(regions), N) uint64 array, in the order given."""
        layout = self.rows_layout(bufs, None, bufs.batch)
        card, cb = self._card, layout.channel_bytes
        chans = list(layout.buffer_channels(buffer))
        wanted = sorted(set(int(r) for r in regions))
        for first, count in region_runs(wanted):
            for ch in chans:
                card.xrt.sync(bufs.bos[ch], False, cb * count, f"{R.pointer_arg(ch)}: sync from device "
                              f"(regions {first}..{first + count - 1})", offset=first * cb)
        out = np.empty((len(wanted), layout.n_points), dtype=np.uint64)
        for i, r in enumerate(wanted):
            views = {ch: np.asarray(v).reshape(-1).view(np.uint8)[r * cb:(r + 1) * cb] for ch, v in bufs.views.items()}
            gather_rows(layout, views, 1, buffer=buffer, reverse=reverse, out=out[i:i + 1])
        where = {r: i for i, r in enumerate(wanted)}
        return out[[where[int(r)] for r in regions]]


def region_runs(regions) -> list[tuple[int, int]]:
    """(first, count) of each run of consecutive region numbers in the sorted, distinct ``regions``."""
    runs: list[list[int]] = []
    for r in regions:
        if runs and r == runs[-1][0] + runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([r, 1])
    return [(a, b) for a, b in runs]


class ScratchSets:
    """The buffer sets of a backend's own runs (``run``; not from the pool: each kept while it fits): set 0,
    and for a run of several kernel calls the further sets it turns through. ``allocate_new(layout,
    batch)`` makes a new set."""

    def __init__(self, allocate_new):
        self._allocate_new = allocate_new
        self._sets: dict[int, DeviceBuffers] = {}

    def get(self, layout: HbmLayout, batch: int = 1, index: int = 0) -> DeviceBuffers:
        """Set ``index`` for ``batch`` transforms of ``layout``'s size: the current one while it fits, else
        the old one is freed first (never while a run may still use it: the backend refuses to go on past
        a run that timed out)."""
        cur = self._sets.get(index)
        if cur is not None and cur.layout is layout and batch <= cur.batch and cur.bos:
            return cur
        if cur is not None:
            cur.release()
        bufs = self._allocate_new(layout, batch)
        self._sets[index] = bufs
        return bufs

    @property
    def first(self) -> DeviceBuffers | None:
        """Set 0 (None: none allocated)."""
        return self._sets.get(0)

    def release(self) -> None:
        """Free every set."""
        for index in sorted(self._sets):
            self._sets[index].release()
        self._sets = {}
