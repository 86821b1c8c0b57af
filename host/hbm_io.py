"""The host's layout step: B transforms of N points to and from the kernel's per-channel buffers, with the
input and output orders composed into the placement.

A batch of B transforms sits in each channel as B regions of ``layout.channel_bytes``, element e right
after element e - 1 (the kernel's ``batch`` argument). Within a region the points sit where
:class:`hw.model.layout.HbmLayout` places them. An order is part of this step, never of the kernel: the
kernel always reads natural-order x and writes natural-order X; the user's point i of a bit-reversed
array is the natural point rev(i), so a bit-reversed order only changes which user point goes to (or
comes from) each HBM word. Both moves are one pass over the data:

- natural order: one row gather (scatter) of L-point units per channel, from the layout's unit table;
- bit-reversed order: one point gather per channel from an index table (the unit table with the bit
  reversal composed in), built once per build, size, buffer and order and kept.

A zero-extended input (the kernel's ``input_log_m`` = m: each row's first 2^m of N points, the rest zeros
the kernel never reads) is scattered by :func:`scatter_padded`: only the units holding one of the 2^m
points are written (``HbmLayout.zero_units``), so the host neither builds nor writes the zeros.
"""

from __future__ import annotations

import numpy as np

from nantucket.hw.model.layout import HbmLayout, each_channel, unit_dtype
from nantucket.hw.model.ntt import bit_reverse_indices

__all__ = ["point_table", "scatter_rows", "gather_rows", "live_unit_table", "scatter_padded"]

#: point index tables by (params, log_n, buffer): {channel: user indices in channel order}
_POINT_TABLES: dict[tuple, dict[int, np.ndarray]] = {}
#: live unit tables by (params, log_n, log_m): {channel: (channel unit rows, logical units)}
_LIVE_TABLES: dict[tuple, dict[int, tuple[np.ndarray, np.ndarray]]] = {}


def point_table(layout: HbmLayout, buffer: str) -> dict[int, np.ndarray]:
    """For each channel ``buffer`` uses: the user indices of a bit-reversed-order array, in the order the
    channel holds its points from byte 0 (the unit table, expanded to points, through the bit reversal).
    Built once per build, size and buffer."""
    key = (layout.params, layout.log_n, buffer)
    if key not in _POINT_TABLES:
        lanes = layout.unit_points
        # int32 halves the tables (2^24 points: 64 MiB per buffer) for every size a build has (<= 2^24)
        rev = bit_reverse_indices(layout.log_n).astype(np.int32 if layout.log_n < 31 else np.int64)
        _POINT_TABLES[key] = {ch: rev[(units[:, None] * lanes + np.arange(lanes)).reshape(-1)]
                              for ch, units in layout.unit_table(buffer).items()}
    return _POINT_TABLES[key]


def _regions(layout: HbmLayout, view: np.ndarray, batch: int) -> np.ndarray:
    """The first ``batch`` regions of a channel's buffer (any array of its bytes), as a (batch, words)
    view of point words (uint64, or uint32 in a 31-bit field)."""
    words = layout.points_per_channel
    return layout.channel_words(view)[: batch * words].reshape(batch, words)


def _lead(rows: np.ndarray) -> tuple[int, int]:
    """(batch, N) of rows whose last axis holds the N points and whose leading axes, in C order, count
    the batch elements (a (B, N) array, or an (E, D, N) view: element e's D limbs)."""
    if rows.ndim < 2:
        raise ValueError(f"rows: expected a (B, N) array of rows, got shape {rows.shape}")
    return int(np.prod(rows.shape[:-1])), rows.shape[-1]


#: Rows up to which a natural-order gather puts each row's units with np.put (one call per row and
#: channel); more rows go in one fancy assignment per channel.
PUT_MAX_ROWS = 64

#: Rows per block of a strided scatter (:func:`scatter_rows`): 16 points of each row of an (N, B) matrix
#: are 128 contiguous bytes, two cache lines, read once.
STRIDED_BLOCK_ROWS = 16


def scatter_rows(layout: HbmLayout, rows: np.ndarray, buffers, *, buffer: str = "input",
                 reverse: bool = False) -> None:
    """Place the (B, N) ``rows`` as ``buffer`` into the per-channel arrays ``buffers`` (indexable by HBM
    channel, each holding at least B regions), row e in region e; ``reverse``: the rows are in
    bit-reversed order. Touches only the channels the buffer uses. Rows of another integer type than the
    field's point words (uint64 rows of a 31-bit field) are converted on the way, in the same pass.

    ``rows`` may be any strided view, read where it is: the transpose of an (N, B) matrix whose columns
    are the polynomials, or an (E, D, N) view (more leading axes count the regions in C order: the D
    limbs of extension-field elements). The column or limb order is composed into the same pass: a view
    whose points are not contiguous goes in blocks of STRIDED_BLOCK_ROWS rows, each read from the matrix
    into a small scratch block (whole cache lines of every matrix row) and scattered from there, so no
    transpose of the whole array is ever made."""
    rows = np.asarray(rows)
    batch, n = _lead(rows)
    if n != layout.n_points:
        raise ValueError(f"rows: expected rows of {layout.n_points} points, got shape {rows.shape}")
    if rows.strides[-1] == rows.itemsize or batch == 1:
        _scatter_block(layout, rows, buffers, buffer, reverse, 0, batch)
        return
    inner = batch // rows.shape[0]                  # rows per index of the first axis (the limbs)
    per = max(1, STRIDED_BLOCK_ROWS // inner)
    scratch = np.empty((per,) + rows.shape[1:], dtype=rows.dtype)
    for i0 in range(0, rows.shape[0], per):
        part = rows[i0:i0 + per]
        block = scratch[:part.shape[0]]
        np.copyto(block, part)
        _scatter_block(layout, block, buffers, buffer, reverse, i0 * inner, batch)


def _scatter_block(layout: HbmLayout, rows: np.ndarray, buffers, buffer: str, reverse: bool, r0: int,
                   batch: int) -> None:
    """:func:`scatter_rows` of rows r0 .. r0 + len(rows) of a ``batch``."""
    count, n = _lead(rows)
    lead = rows.shape[:-1]
    lanes = layout.unit_points

    def regions(ch):
        return _regions(layout, buffers[ch], batch)[r0:r0 + count]
    if reverse:
        def one(item):
            ch, idx = item
            np.take(rows, idx, axis=-1, out=regions(ch).reshape(lead + (-1,)), mode="wrap")
        each_channel(one, point_table(layout, buffer).items(), rows.size)
        return
    if rows.dtype == layout.point_dtype and rows.strides[-1] == rows.itemsize:
        # the points are the words: each L-point unit one opaque item, a fixed-size copy (as the gather)
        unit = unit_dtype(lanes, layout.point_bytes)
        units_v = rows.view(unit)                           # lead + (N / L,) items, a view

        def one_unit(item):
            ch, units = item
            np.take(units_v, units, axis=-1, out=regions(ch).view(unit).reshape(lead + (units.size,)), mode="wrap")
        each_channel(one_unit, layout.unit_table(buffer).items(), rows.size)
        return
    units_of = rows.reshape(lead + (n // lanes, lanes))       # a view: only the last axis splits

    def one_natural(item):          # another integer type (uint64 rows of a 31-bit field): converted here
        ch, units = item
        dst = regions(ch).reshape(lead + (units.size, lanes))
        np.take(units_of, units, axis=-2, out=dst, mode="wrap")
    each_channel(one_natural, layout.unit_table(buffer).items(), rows.size)


def gather_rows(layout: HbmLayout, buffers, batch: int, *, buffer: str = "output",
                reverse: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """The (B, N) points of ``buffer`` in the first ``batch`` regions of the per-channel arrays
    ``buffers``, as a new array of the field's point words (uint64, or uint32 in a 31-bit field;
    bit-reversed order with ``reverse``).

    ``out``: write them there instead and return it: any writable array of B x N points whose last axis
    holds the points (leading axes: the regions in C order), of any strides and integer dtype, such as the
    transpose of an (N, B) matrix or an (E, D, N) view of extension limbs; the gather writes each point
    straight to its place (no separate transpose pass)."""
    n, lanes = layout.n_points, layout.unit_points
    if out is not None:
        got_batch, got_n = _lead(out)
        if (got_batch, got_n) != (batch, n):
            raise ValueError(f"out: expected {batch} rows of {n} points, got shape {out.shape}")
        if out.dtype == layout.point_dtype and out.flags.c_contiguous:
            # plain rows (a 1-D or (B, N) result): the unit-item gather below, into out itself
            _gather_into(layout, buffers, batch, buffer, reverse, out.reshape(batch, n))
            return out
        lead = out.shape[:-1]
        if reverse:
            def one_out(item):
                ch, idx = item
                out[..., idx] = _regions(layout, buffers[ch], batch).reshape(lead + (-1,))
            each_channel(one_out, point_table(layout, buffer).items(), out.size)
            return out
        units_out = out.reshape(lead + (n // lanes, lanes))     # a view: only the last axis splits

        def one_out_natural(item):
            ch, units = item
            units_out[..., units, :] = _regions(layout, buffers[ch], batch).reshape(lead + (units.size, lanes))
        each_channel(one_out_natural, layout.unit_table(buffer).items(), out.size)
        return out
    return _gather_into(layout, buffers, batch, buffer, reverse, np.empty((batch, n), dtype=layout.point_dtype))


def _gather_into(layout: HbmLayout, buffers, batch: int, buffer: str, reverse: bool, out: np.ndarray) -> np.ndarray:
    """:func:`gather_rows` into a C-contiguous (B, N) array of the field's point words."""
    n, lanes = layout.n_points, layout.unit_points
    if reverse:
        def one(item):
            ch, idx = item
            out[:, idx] = _regions(layout, buffers[ch], batch)
        each_channel(one, point_table(layout, buffer).items(), out.size)
        return out
    unit = unit_dtype(lanes, layout.point_bytes)
    units_of = out.view(unit)                       # (batch, N / L): one item per L-point unit

    def one_natural(item):
        ch, units = item
        src = _regions(layout, buffers[ch], batch).view(unit)
        if batch <= PUT_MAX_ROWS:
            for r in range(batch):                  # np.put: about 1.2 x faster than a fancy assignment
                np.put(units_of[r], units, src[r])
        else:
            units_of[:, units] = src
    each_channel(one_natural, layout.unit_table(buffer).items(), out.size)
    return out


def live_unit_table(layout: HbmLayout, log_m: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each input channel of ``layout``: (rows, units), the channel's unit rows (from byte 0 of an
    element's region) that hold one of the first 2^log_m points of the element, and the logical unit
    numbers placed there (``HbmLayout.zero_units`` is False for them). Built once per build, size and m."""
    key = (layout.params, layout.log_n, log_m)
    if key not in _LIVE_TABLES:
        live = ~layout.zero_units(log_m)
        table = {}
        for ch, units in layout.unit_table("input").items():
            units = units[: layout.element_points // layout.unit_points]      # one element's units
            rows = np.flatnonzero(live[units])
            table[ch] = (rows, units[rows])
        _LIVE_TABLES[key] = table
    return _LIVE_TABLES[key]


def scatter_padded(layout: HbmLayout, rows: np.ndarray, buffers) -> None:
    """Place the (B, M) ``rows`` (natural order, M = 2^m <= N) as the zero-extended input of ``layout``'s
    2^log_n-point run, row e in region e of the per-channel arrays ``buffers``: only the units of the M
    points are written; every other word is left as it was (the kernel, told ``input_log_m`` = m, reads
    none of them)."""
    rows = np.asarray(rows)
    batch, m = rows.shape
    lanes, n = layout.unit_points, layout.element_points
    if m & (m - 1) or not lanes <= m <= n:
        raise ValueError(f"rows: expected rows of a power of two from {lanes} to {n} points, got shape {rows.shape}")
    units_of = rows.reshape(batch, m // lanes, lanes)

    def one(item):
        ch, (unit_rows, units) = item
        dst = _regions(layout, buffers[ch], batch).reshape(batch, -1, lanes)
        dst[:, unit_rows] = units_of[:, units]
    each_channel(one, live_unit_table(layout, m.bit_length() - 1).items(), rows.size)
