"""Where every point lives in HBM: the one definition used by the DMA address generators, the HBM model's
preload and read-back, and the host's scatter/gather.

Vocabulary (K = 2^k = N1 = N2, L lanes, C channels, R = C/2 channels per direction, P points per 256-bit
beat: P = 4 64-bit Goldilocks points, P = 8 32-bit words of a 31-bit field, :func:`points_per_beat`):

- Each of the three logical buffers is viewed as a K x K matrix ``M[row, col]``:

  ========  =====================  =============================  =========================
  buffer    element                row                            col
  ========  =====================  =============================  =========================
  input     x[K*n1 + n2]           n1                             n2
  state     state[n2, k1]          n2                             k1
  output    X[k1 + K*k2]           k2                             k1
  ========  =====================  =============================  =========================

- A *unit* is L consecutive points of one row, ``M[row, L*blk .. L*blk + L-1]``: L/P beats at consecutive
  addresses of one channel. It is exactly what the engine's L lanes take (or emit) as their x0 (or x1) in
  one cycle: point l of the unit belongs to lane l. Every engine cycle therefore moves two units in and two
  units out, and each unit is one short, contiguous, aligned piece of one channel.
- A unit's *slot* is when, within its round (block ``blk``), the engine touches its row:
  input and state rows are read in :func:`hw.model.schedule.lane_input_order` (slot s = 2t + j for row
  ``order[t][j]``), output rows are written in natural order (slot = k2).
- Placement of unit (slot s, block blk), with rho = log2 R and sigma = max(ceil(k/2), rho)::

      channel index q = (s mod R) XOR ((s >> sigma) mod R)
      beat            = (blk * K/R + s div R) * L/P

  Within every aligned group of R consecutive slots the channel index is a bijection, so each channel owns
  exactly one unit per group, and its units in slot order sit at consecutive beats: every channel's reads
  (pass 1 input, pass 2 state) and pass-2 writes (output) are one sequential stream, cut into 8-beat
  bursts. The XOR with the slot's high bits (the residue r of the lane input order) spreads the L rows that
  one pass-1 round emits (consecutive residues) over distinct channels, so pass-1 writes of whole units
  (L/P-beat bursts, the only non-sequential access) are balanced too.
- Physical channels: logical index q of the input/output buffers is HBM channel 2q, of the state 2q + 1.
  Pass 1 reads the even channels and writes the odd ones; pass 2 the other way round; the output
  overwrites the input in place (same offsets).
- Batches: B transforms of N points stored back to back (element e at logical indices e*N .. e*N + N-1
  of every buffer). Element e occupies its own region of every channel right after element e-1: it is
  placed exactly like a single transform, then moved by e * N/R/P beats (``element_beats``). So every
  channel's read stream stays one sequential walk over the B elements.
- Zero-extended input and chained transforms: a 2^n-point input may hold only its first M = 2^m points
  per element (m <= n, the rest zeros). They are the input matrix's first 2^(m - n2) rows, so a unit is
  zero exactly when its row has a bit in :func:`zero_row_mask`, i.e. when its slot has a bit in
  :func:`zero_slot_mask` (``lane_slot`` only moves bits). The kernel reads only the other units. A run of
  2^m points may write its output straight into that place, as the input of a 2^n-point run
  (:meth:`HbmLayout.output_as_input`), so a low-degree extension or a second transform never leaves the
  card. Both need the M points to fill every channel equally (:func:`lde_pair_supported`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .params import BuildParams

__all__ = ["each_channel", "unit_dtype", "BUFFERS", "lane_row", "zero_row_mask", "zero_slot_mask",
           "lde_pair_supported", "lde_pairs", "BEAT_BITS", "BEAT_BYTES", "point_bytes", "points_per_beat",
           "MAX_BURST_BEATS", "CHANNEL_WINDOW_BYTES", "PAGE_BYTES",
           "HbmLayout", "HbmPlacement",
           "lane_slot", "slot_channel_of", "unit_beat_of", "sigma_of", "element_beat_of"]

BUFFERS = ("input", "state", "output")
#: One HBM beat: the 256-bit AXI data of a pseudo-channel port.
BEAT_BITS = 256
BEAT_BYTES = BEAT_BITS // 8
#: One HBM pseudo-channel's address window on the card (256 MiB): channel c's buffers lie in
#: [c * CHANNEL_WINDOW_BYTES, (c + 1) * CHANNEL_WINDOW_BYTES).
CHANNEL_WINDOW_BYTES = 256 << 20
MAX_BURST_BEATS = 8
PAGE_BYTES = 4096                               # AXI bursts never cross this


#: unit tables (see HbmLayout.unit_table) by build, built once per build and buffer in a process
_UNIT_TABLES: dict[BuildParams, dict[str, dict[int, np.ndarray]]] = {}


_POOL: ThreadPoolExecutor | None = None


def point_bytes(params: BuildParams) -> int:
    """Bytes of one point in HBM: the build's field's ``point_bits`` / 8 (8 in Goldilocks, 4 in a 31-bit
    field: a 31-bit point is one 32-bit word)."""
    return params.prime_field.point_bits // 8


def points_per_beat(params: BuildParams) -> int:
    """P: points of the build's field in one 256-bit beat (4 Goldilocks points, 8 in a 31-bit field)."""
    return BEAT_BITS // params.prime_field.point_bits


def unit_dtype(lanes: int, point_size: int = 8) -> np.dtype:
    """A unit of ``lanes`` points of ``point_size`` bytes as one opaque item: numpy moves such items with a
    fixed-size copy, where a (..., units, lanes) fancy assignment goes element by element (1.7 x slower at
    2^24)."""
    return np.dtype((np.void, point_size * lanes))


def each_channel(fn, items, n_points: int) -> None:
    """fn(item) for every channel's item; large moves on a few threads (numpy's row gathers release the
    GIL, and one core cannot keep up with memory on scattered 128-byte rows)."""
    global _POOL
    if n_points < 1 << 18:
        for item in items:
            fn(item)
        return
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="layout")
    for _ in _POOL.map(fn, items):      # re-raises the first exception
        pass


def _log2(v: int) -> int:
    return v.bit_length() - 1


# -- the placement formulas, generic ---------------------------------------------------------------
# Written with shifts, masks, +, * and ^ only (no data-dependent branching), so they work on Python
# ints, numpy integer arrays and Amaranth Values alike, and the size arguments may be run-time Values
# too: the DMA's address generators (hw/dma/addresses.py) are built from these very functions.

def lane_slot(row, frame):
    """Slot (lane-input position) of ``row`` of a buffer that a lane reads in frames of 2^f points
    (``frame`` = f): row = r + G*m + 2^(f-1)*h (r < G = 2^b, m < 2^(a-1), h < 2, a = ceil(f/2),
    b = f - a) enters on cycle t = r*2^(a-1) + m as point h of the pair (``lane_input_order(f)``), so
    its slot is 2t + h."""
    # no shift by a difference: a run-time ``frame`` Value minus anything is signed, and Amaranth only
    # shifts by unsigned amounts
    a = (frame + 1) >> 1
    b = frame >> 1
    r = row & ((1 << b) - 1)
    m = (row >> b) & (((1 << a) >> 1) - 1)
    h = ((row << 1) >> frame) & 1
    return (r << a) | (m << 1) | h


def lane_row(slot, frame):
    """The row read in lane-input position ``slot`` of frames of 2^f points (``frame`` = f): the inverse of
    :func:`lane_slot`, row = r + G*m + 2^(f-1)*h for slot = (r << a) | (m << 1) | h."""
    a = (frame + 1) >> 1
    b = frame >> 1
    r = slot >> a
    m = (slot >> 1) & (((1 << a) >> 1) - 1)
    h = slot & 1
    return r | (m << b) | ((h << frame) >> 1)


def zero_row_mask(log_n: int, log_m: int) -> int:
    """Input rows of a 2^log_n-point transform that hold no point of a 2^log_m-point zero-extended input
    are those with a bit in this mask (rows >= 2^(log_m - n2), of 2^n1)."""
    n1, n2 = (log_n + 1) >> 1, log_n >> 1
    if not n2 <= log_m <= log_n:
        raise ValueError(f"log_m: a 2^{log_n}-point input holds 2^{n2} .. 2^{log_n} points per element "
                         f"(whole rows), got 2^{log_m}")
    return ((1 << n1) - 1) & ~((1 << (log_m - n2)) - 1)


def zero_slot_mask(log_n: int, log_m: int) -> int:
    """The same as slot bits: the input unit in slot s is zero iff s & mask != 0 (lane_slot permutes
    bits, so it maps the row mask to the slot mask)."""
    return lane_slot(zero_row_mask(log_n, log_m), (log_n + 1) >> 1)


def lde_pair_supported(params: BuildParams, log_m: int, log_n: int) -> bool:
    """Whether a 2^log_n-point input may hold only 2^log_m points per element (zero-extended), read by
    the kernel without the zeros or written by a 2^log_m-point run as its output: both sizes native,
    whole rows (log_m >= n2) and every channel holding the same number of the 2^log_m points' units (so
    each channel's stream is the same length and the bandwidth is the whole card's). Decided by counting,
    once per build."""
    return (log_m, log_n) in lde_pairs(params)


_LDE_PAIRS: dict[BuildParams, frozenset] = {}


def lde_pairs(params: BuildParams) -> frozenset:
    """Every (log_m, log_n) that :func:`lde_pair_supported` accepts for ``params``."""
    if params not in _LDE_PAIRS:
        pairs = set()
        if params.lanes < points_per_beat(params) or params.core_points < params.channels // 2:
            _LDE_PAIRS[params] = frozenset()      # no HBM layout: the kernel takes no padded input and writes no chained output
            return _LDE_PAIRS[params]
        rho = _log2(params.channels // 2)
        for n in range(params.min_log_n, params.max_log_n + 1):
            n1, n2 = (n + 1) >> 1, n >> 1
            slots = np.arange(1 << n1)
            chans = slot_channel_of(slots, sigma_of(n1, rho), rho)
            rows = lane_row(slots, n1)
            for m in range(max(n2, params.min_log_n), n + 1):
                mine = chans[rows < (1 << (m - n2))]
                counts = np.bincount(mine, minlength=1 << rho)
                if counts.min() == counts.max():
                    pairs.add((m, n))
        _LDE_PAIRS[params] = frozenset(pairs)
    return _LDE_PAIRS[params]


def slot_channel_of(slot, sigma, rho):
    """Logical channel q = (s mod R) XOR ((s >> sigma) mod R), R = 2^rho."""
    mask = (1 << rho) - 1
    return (slot & mask) ^ ((slot >> sigma) & mask)


def unit_beat_of(slot, blk, rows_log, rho, unit_beats_log):
    """First beat (channel-relative) of the unit in ``slot`` of column block ``blk`` of a buffer with
    2^rows_log rows: (blk * 2^rows_log / R + s div R) * L/4, computed as (blk * 2^rows_log + s) div R
    (s < 2^rows_log and R <= 2^rows_log), so that ``rows_log`` may be a run-time Value too."""
    return (((blk << rows_log) | slot) >> rho) << unit_beats_log


def element_beat_of(element, log_n, rho, beat_points_log):
    """First beat (channel-relative) of batch element ``element`` of 2^log_n-point transforms: element
    times the N/R/P beats one element takes in each channel (N/R points, P = 2^beat_points_log a beat)."""
    return (element << log_n) >> (rho + beat_points_log)


def sigma_of(rows_log, rho):
    """The XOR shift of a buffer with 2^rows_log rows: max(ceil(rows_log / 2), rho)."""
    return max((rows_log + 1) >> 1, rho)


class HbmPlacement:
    """Where the points of one build's input, state and output buffers live in HBM: the geometry, the channel
    sets and the placement formulas (the generic functions above with one layout's sizes). Its subclass
    :class:`HbmLayout` adds what moves the points: the host's scatter and gather and the DMA's access
    streams. Arguments and requirements as :class:`HbmLayout`.
    """

    def __init__(self, params: BuildParams, log_n: int | None = None, batch: int = 1):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        if params.lanes < points_per_beat(params):
            raise ValueError(f"params.lanes: the HBM layout of {params.field} needs at least "
                             f"{points_per_beat(params)} lanes (a unit of L points must fill whole 256-bit "
                             f"beats of {points_per_beat(params)} points), got {params.lanes}")
        if params.core_points < params.channels // 2:
            raise ValueError(f"params.channels: {params.channels} channels need 2^k >= {params.channels // 2} "
                             f"rows per round, got k = {params.log_core}")
        self._p = params
        self._n = params.max_log_n if log_n is None else params.check_log_n(log_n)
        self._f1, self._f2 = params.pass_log_sizes(self._n)
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise ValueError(f"batch: must be an int >= 1, got {batch!r}")
        self._b = int(batch)

    # -- geometry ------------------------------------------------------------------------------------
    @property
    def params(self) -> BuildParams:
        return self._p

    @property
    def log_n(self) -> int:
        """log2 of the transform size this layout places (default: the build's largest, 2k)."""
        return self._n

    @property
    def batch(self) -> int:
        """B: transforms placed back to back."""
        return self._b

    @property
    def element_points(self) -> int:
        """N = 2^log_n: the points of one transform of the batch."""
        return 1 << self._n

    @property
    def n_points(self) -> int:
        """B*N: the points of every buffer (all elements of the batch)."""
        return self._b << self._n

    @property
    def pass_sizes(self) -> tuple[int, int]:
        """(n1, n2): log2 of the pass-1 and pass-2 transform sizes (``BuildParams.pass_log_sizes``)."""
        return self._f1, self._f2

    def rows_log(self, buffer: str) -> int:
        """log2 of the rows of ``buffer``'s matrix: input 2^n1 rows (n1 index), state and output 2^n2."""
        self._check_buffer(buffer)
        return self._f1 if buffer == "input" else self._f2

    def cols_log(self, buffer: str) -> int:
        """log2 of the columns: input 2^n2 (n2 index), state and output 2^n1 (k1 index)."""
        self._check_buffer(buffer)
        return self._f2 if buffer == "input" else self._f1

    def blocks(self, buffer: str) -> int:
        """Column blocks of L columns (= rounds of the pass that reads or writes the buffer's rows)."""
        return (1 << self.cols_log(buffer)) // self._p.lanes

    @property
    def channels(self) -> int:
        return self._p.channels

    @property
    def group(self) -> int:
        """R = C/2: channels per direction, and slots per group."""
        return self._p.channels // 2

    @property
    def unit_points(self) -> int:
        return self._p.lanes

    @property
    def point_bytes(self) -> int:
        """Bytes of a point in HBM (8, or 4 in a 31-bit field)."""
        return point_bytes(self._p)

    @property
    def points_per_beat(self) -> int:
        """P: points a 256-bit beat holds (4, or 8 in a 31-bit field)."""
        return points_per_beat(self._p)

    @property
    def point_dtype(self) -> np.dtype:
        """The numpy type of a point as HBM holds it (uint64, or uint32 in a 31-bit field)."""
        return np.dtype(self._p.prime_field.dtype)

    @property
    def unit_beats(self) -> int:
        return self._p.lanes // self.points_per_beat

    def sigma(self, buffer: str) -> int:
        return sigma_of(self.rows_log(buffer), _log2(self.group))

    @property
    def points_per_channel(self) -> int:
        """Points of a buffer in each channel, whole batch: B*N/R."""
        return self.n_points // self.group

    @property
    def element_beats(self) -> int:
        """Beats one element of the batch takes in each channel (N/R/P): element e starts at beat
        e * element_beats of every channel."""
        return self.element_points // self.group // self.points_per_beat

    @property
    def beats_per_channel(self) -> int:
        """Beats of a buffer in each channel, whole batch (B x ``element_beats``)."""
        return self.points_per_channel // self.points_per_beat

    @property
    def channel_bytes(self) -> int:
        """Bytes the host allocates in each channel (each channel holds exactly one buffer at a time),
        whole batch."""
        return self.points_per_channel * self.point_bytes

    @property
    def burst_beats(self) -> int:
        """Burst length of the sequential streams (all reads, pass-2 writes): min(8, element beats), so
        that every element's stream is whole bursts (both powers of two)."""
        return min(MAX_BURST_BEATS, self.element_beats)

    # -- channel sets --------------------------------------------------------------------------------
    @staticmethod
    def _check_pass(pass_index: int) -> None:
        if pass_index not in (1, 2):
            raise ValueError(f"pass_index: must be 1 or 2, got {pass_index}")

    def buffer_channels(self, buffer: str) -> list[int]:
        """Physical channels holding ``buffer``, in logical order q = 0..R-1."""
        self._check_buffer(buffer)
        odd = 1 if buffer == "state" else 0
        return [2 * q + odd for q in range(self.group)]

    def read_channels(self, pass_index: int) -> list[int]:
        self._check_pass(pass_index)
        return self.buffer_channels("input" if pass_index == 1 else "state")

    def write_channels(self, pass_index: int) -> list[int]:
        self._check_pass(pass_index)
        return self.buffer_channels("state" if pass_index == 1 else "output")

    @staticmethod
    def _check_buffer(buffer: str) -> None:
        if buffer not in BUFFERS:
            raise ValueError(f"buffer: must be one of {BUFFERS}, got {buffer!r}")

    # -- the placement formulas ----------------------------------------------------------------------
    # The generic functions above with this layout's sizes: they work on ints, numpy arrays and
    # Amaranth Values.

    def slot_of_row(self, buffer: str, row):
        """Slot of a row: its lane-input position for input/state (:func:`lane_slot` with the frame
        size of the pass that reads the buffer), the row itself for output."""
        self._check_buffer(buffer)
        if buffer == "output":
            return row
        return lane_slot(row, self.rows_log(buffer))

    def slot_channel(self, buffer: str, slot):
        """Logical channel q = (s mod R) XOR ((s >> sigma) mod R) of the unit in ``slot``."""
        return slot_channel_of(slot, self.sigma(buffer), _log2(self.group))

    def unit_beat(self, buffer: str, slot, blk):
        """First beat (channel-relative) of the unit in ``slot`` of block ``blk``:
        (blk * rows/R + s div R) * L/P."""
        return unit_beat_of(slot, blk, self.rows_log(buffer), _log2(self.group), _log2(self.unit_beats))

    def physical_channel(self, buffer: str, q):
        """HBM channel of logical channel ``q`` of ``buffer``: 2q (input, output) or 2q + 1 (state)."""
        self._check_buffer(buffer)
        return (q << 1) | (1 if buffer == "state" else 0)

    def point_place(self, buffer: str, index):
        """(physical channel, beat, lane within the beat) of point ``index`` (0 .. B*N-1) of ``buffer``:
        the one definition of where a point lives (same arithmetic-only rules as above)."""
        cl, log_lanes = self.cols_log(buffer), _log2(self._p.lanes)
        # element e = index div N, placed like a single transform and moved by e element regions
        element, index = index >> self._n, index & ((1 << self._n) - 1)
        # input x[N2*n1 + n2] -> (n1, n2); state[n2, k1] at n2*N1 + k1 -> (n2, k1); X[k1 + N1*k2] -> (k2, k1)
        row, col = index >> cl, index & ((1 << cl) - 1)
        slot = self.slot_of_row(buffer, row)
        lane = col & (self._p.lanes - 1)
        per_beat = self.points_per_beat
        beat = (self.unit_beat(buffer, slot, col >> log_lanes) + (lane >> _log2(per_beat))
                + element_beat_of(element, self._n, _log2(self.group), _log2(per_beat)))
        return (self.physical_channel(buffer, self.slot_channel(buffer, slot)), beat,
                lane & (per_beat - 1))

    def unit_place(self, buffer: str, row: int, blk: int, element: int = 0) -> tuple[int, int]:
        """(physical channel, first beat) of unit ``M[row, L*blk ..]`` of ``buffer`` in batch element
        ``element``."""
        s = int(self.slot_of_row(buffer, row))
        return (int(self.physical_channel(buffer, self.slot_channel(buffer, s))),
                int(self.unit_beat(buffer, s, blk)) + element * self.element_beats)

    def output_as_input(self, log_n: int, index=None):
        """(physical channel, byte offset) of every output point X[e, i] of this layout's run when it is
        written as the zero-extended input of a 2^log_n-point run of the same batch (i < 2^self.log_n of
        the 2^log_n, :func:`lde_pair_supported`): where ``HbmLayout(params, log_n, batch)`` places input
        point e*2^log_n + i. ``index`` defaults to all B*M output indices in order."""
        if not lde_pair_supported(self._p, self._n, log_n):
            raise ValueError(f"log_n: the output of a 2^{self._n}-point run of the {self._p.tag()} build "
                             f"cannot be written as the input of a 2^{log_n}-point run")
        if index is None:
            index = np.arange(self.n_points, dtype=np.int64)
        index = np.asarray(index, dtype=np.int64)
        target = HbmPlacement(self._p, log_n, self._b)
        element, i = index >> self._n, index & ((1 << self._n) - 1)
        return target.place("input", (element << log_n) | i)

    def zero_units(self, log_m: int) -> np.ndarray:
        """For each input unit of one element (logical unit u = points [L*u, L*u + L)), whether it lies
        past the first 2^log_m points: the units a zero-extended run does not read."""
        first = np.arange(0, self.element_points, self._p.lanes, dtype=np.int64)
        return first >= (1 << log_m)

    # -- point placement -----------------------------------------------------------------------------
    def place(self, buffer: str, index=None) -> tuple[np.ndarray, np.ndarray]:
        """(physical channel, byte offset within the channel) of every point of ``buffer``.

        ``index`` defaults to all N logical indices in order.
        """
        self._check_buffer(buffer)
        if index is None:
            index = np.arange(self.n_points, dtype=np.int64)
        index = np.asarray(index, dtype=np.int64)
        channel, beat, lane = self.point_place(buffer, index)
        return channel, (beat * self.points_per_beat + lane) * self.point_bytes

class HbmLayout(HbmPlacement):
    """The HBM placement of the input, state and output buffers for one build (:class:`HbmPlacement`),
    and how points move there: the host's scatter / gather and the DMA's access streams.

    Requires at least 4 lanes (a unit must fill whole beats) and 2^k >= C/2 (every channel owns a unit of
    every group of slots).

    ``batch`` = B places B transforms of 2^log_n points stored back to back (see the module doc): every
    method that takes or lists logical indices covers the B*N points, and the per-channel sizes
    (``points_per_channel``, ``beats_per_channel``, ``channel_bytes``) are the whole batch's.
    """

    def __init__(self, params: BuildParams, log_n: int | None = None, batch: int = 1):
        super().__init__(params, log_n, batch)
        # shared by every layout of a build and size
        self._unit_tables = _UNIT_TABLES.setdefault((params, self._n), {})

    # -- host-facing ---------------------------------------------------------------------------------
    def _element_unit_table(self, buffer: str) -> dict[int, np.ndarray]:
        """``unit_table`` of one element (element 0), built once per build, size and buffer."""
        if buffer not in self._unit_tables:
            self._check_buffer(buffer)
            lanes = self._p.lanes
            first = np.arange(0, self.element_points, lanes, dtype=np.int64)
            channel, offset = self.place(buffer, first)
            row, rem = np.divmod(offset, lanes * self.point_bytes)
            assert not rem.any(), "units are L-aligned in every channel"
            table = {}
            for ch in self.buffer_channels(buffer):
                mine = np.flatnonzero(channel == ch)
                order = np.empty_like(mine)
                order[row[mine]] = mine           # row r of the channel holds unit order[r]
                assert np.array_equal(np.sort(row[mine]), np.arange(mine.size)), "units fill the channel"
                table[ch] = order
            self._unit_tables[buffer] = table
        return self._unit_tables[buffer]

    def unit_table(self, buffer: str) -> dict[int, np.ndarray]:
        """Where the units of ``buffer`` sit, as the host moves them: for each channel the buffer uses,
        the logical unit numbers u (points [L*u, L*u + L), which are contiguous in HBM) in the order the
        channel holds them from byte 0, over the whole batch (element e's units, numbered from
        e*N/L, follow element e-1's). One element's table is built once per size and kept: the host's
        scatter and gather are then one row-gather or row-scatter of L-point rows per channel and element
        run."""
        table = self._element_unit_table(buffer)
        if self._b == 1:
            return table
        per = self.element_points // self._p.lanes
        offsets = np.arange(self._b, dtype=np.int64)[:, None] * per
        return {ch: (offsets + units[None, :]).reshape(-1) for ch, units in table.items()}

    def _check_points(self, pts: np.ndarray) -> None:
        if pts.shape != (self.n_points,):
            what = f"{self._b} x {self.element_points}" if self._b > 1 else f"{self.n_points}"
            raise ValueError(f"points: expected {what} points, got shape {pts.shape}")

    def channel_words(self, buffer) -> np.ndarray:
        """One channel's memory (any array whose bytes are the channel's: uint8, uint64, a mapped buffer)
        as a flat array of point words (:attr:`point_dtype`), without a copy where the array allows."""
        words = np.asarray(buffer)
        if words.dtype != self.point_dtype:
            words = np.ascontiguousarray(words).reshape(-1).view(self.point_dtype)
        return words.reshape(-1)

    def scatter_into(self, points, buffers, buffer: str = "input") -> None:
        """Place ``points`` (B*N) as ``buffer`` into the per-channel arrays ``buffers`` (indexable by HBM
        channel; each an array whose bytes are the channel's memory, at least ``channel_bytes`` of them:
        :meth:`channel_words`), touching only the channels the buffer uses: one pass over the data,
        straight into (for example) a card's mapped buffers."""
        pts = np.asarray(points)
        if pts.dtype != self.point_dtype:
            # a value no point word holds would be cut to one silently (a uint64 into a 31-bit field's words)
            if pts.size and not 0 <= int(pts.min()) <= int(pts.max()) < 1 << (8 * self.point_bytes):
                bad = int(pts.max()) if int(pts.min()) >= 0 else int(pts.min())
                raise ValueError(f"points: a {self._p.field} point is a {8 * self.point_bytes}-bit word in HBM, "
                                 f"got {bad:#x}")
            pts = pts.astype(self.point_dtype)
        self._check_points(pts)
        lanes, b = self._p.lanes, self._b
        rows = pts.reshape(b, -1, lanes)              # [element, unit, lane]

        def one(item):
            ch, units = item
            dst = self.channel_words(buffers[ch])[: b * units.size * lanes]
            np.take(rows, units, axis=1, out=dst.reshape(b, -1, lanes), mode="wrap")   # in range: no buffering
        each_channel(one, self._element_unit_table(buffer).items(), pts.size)

    def gather_from(self, buffers, buffer: str = "output") -> np.ndarray:
        """The B*N points of ``buffer`` (default: the transform's output X) read from per-channel arrays
        (indexable by HBM channel, as :meth:`scatter_into` takes them), as a new array of
        :attr:`point_dtype`."""
        out = np.empty(self.n_points, dtype=self.point_dtype)
        lanes, b = self._p.lanes, self._b
        unit = unit_dtype(lanes, self.point_bytes)
        rows = out.reshape(b, -1).view(unit)

        def one(item):
            ch, units = item
            src = np.ascontiguousarray(self.channel_words(buffers[ch])[: b * units.size * lanes])
            rows[:, units] = src.reshape(b, -1).view(unit)
        each_channel(one, self._element_unit_table(buffer).items(), out.size)
        return out

    def scatter(self, points, buffer: str = "input") -> list[np.ndarray]:
        """One array of point words (:attr:`point_dtype`) per channel (C arrays of ``channel_bytes``)
        holding ``points`` placed as ``buffer``; channels the buffer does not use are zero."""
        mem = np.zeros((self.channels, self.points_per_channel), dtype=self.point_dtype)
        self.scatter_into(points, mem, buffer)
        return list(mem)

    def gather(self, buffers, buffer: str = "output") -> np.ndarray:
        """The B*N points of ``buffer`` (default: the transform's output X) from per-channel arrays."""
        if len(buffers) != self.channels:
            raise ValueError(f"buffers: expected {self.channels} channel arrays, got {len(buffers)}")
        return self.gather_from(buffers, buffer)

    # -- access streams (what the DMA does, for benches, docs and the bandwidth model) ----------------
    def cycle_units(self, pass_index: int, direction: str) -> np.ndarray:
        """Units the engine moves, in order, as rows of (physical channel, first beat): shape
        (cycles_per_pass * 2, 2), the B elements one after the other. Reads are (unit A, unit B) per
        engine cycle; pass-1 writes follow the DMA's corner turn (per block of L/2 cycles, the rows of the
        round two by two)."""
        self._check_pass(pass_index)
        if direction not in ("read", "write"):
            raise ValueError(f"direction: must be 'read' or 'write', got {direction!r}")
        lanes = self._p.lanes
        if direction == "read" or pass_index == 2:
            buffer = ("input" if pass_index == 1 else "state") if direction == "read" else "output"
            slot = np.arange(1 << self.rows_log(buffer))[None, :]
            blk = np.arange(self.blocks(buffer))[:, None]
            slot, blk = np.broadcast_arrays(slot, blk)
        else:
            buffer = "state"
            # round g (state rows L*g .. L*g+L-1), block b, rows two by two
            g = np.arange((1 << self.rows_log("state")) // lanes)[:, None, None]
            b = np.arange(self.blocks("state"))[None, :, None]
            row = lanes * g + np.arange(lanes)[None, None, :]
            row, b = np.broadcast_arrays(row, b)
            slot = self.slot_of_row("state", row)
            blk = b
        slot = np.asarray(slot).reshape(-1)
        blk = np.asarray(blk).reshape(-1)
        chans = np.asarray(self.buffer_channels(buffer))[self.slot_channel(buffer, slot)]
        one = np.stack([chans, self.unit_beat(buffer, slot, blk)], axis=1)
        offset = np.arange(self._b)[:, None, None] * np.array([0, self.element_beats])[None, None, :]
        return (one[None, :, :] + offset).reshape(-1, 2)

    def bursts(self, pass_index: int, direction: str) -> dict[int, list[tuple[int, int]]]:
        """AXI bursts per physical channel, in issue order: (first beat, beats). Sequential streams
        (reads, pass-2 writes) are cut into ``burst_beats``; pass-1 writes are one burst per unit."""
        units = self.cycle_units(pass_index, direction)
        out: dict[int, list[tuple[int, int]]] = {}
        if direction == "write" and pass_index == 1:
            for ch, beat in units:
                out.setdefault(int(ch), []).append((int(beat), self.unit_beats))
            return out
        chans = (self.read_channels(pass_index) if direction == "read" else self.write_channels(pass_index))
        bl = self.burst_beats
        for ch in chans:
            out[ch] = [(b, bl) for b in range(0, self.beats_per_channel, bl)]
        return out

    def hbm_bytes_per_transform(self) -> int:
        """Bytes the DMA moves for one kernel run, all B transforms (each pass reads and writes every point
        once; every beat carries P useful points)."""
        return 4 * self.n_points * self.point_bytes
