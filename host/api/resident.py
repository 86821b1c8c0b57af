"""Points that stay on the card: a (B, N) array held in the kernel's device buffers.

A :class:`ResidentRows` is the B rows in chunks of at most the kernel's largest batch for N
(``driver.batch_limit``; ``driver`` a :class:`host.backend_base.CardDriver`), each chunk one
:class:`host.xrt.DeviceBuffers` set whose regions hold its rows placed for the kernel. Each chunk remembers its *placement*: which buffer layout its points follow
("input": where the kernel reads x, "output": where a plain run writes X) and whether the array's logical
order is bit-reversed there (point j at the place of natural index rev(j)).

A transform runs the kernel on the chunk's buffers with ``chain_log_n`` = log_n: the kernel writes X not
in the "output" placement but as the input of the next run of the same size (hw.model.layout:
``HbmLayout.output_as_input``), so the chunk stays in the "input" placement and the next transform of the
array starts straight away; nothing moves to or from the host. Only an order the placement does not have
(a transform whose input order is not the order the array sits in: the orders are the host's layout
tables, host/hbm_io.py) is re-laid out through the host: the points come back (gather with the current
placement) and go out again (scatter with the needed one); :attr:`Device.relayouts` counts these round
trips and the device's ``transfers`` their bytes.

An LDE runs as one sequence on the card (:func:`lde_chained`): the 2^m-point inverse writes the
coefficients as the zero-extended input of the 2^t-point coset NTT (``chain_log_n`` = t), which reads
only them (``input_log_m`` = m), in the same buffers sized for 2^t points. Where the build cannot place
that pair (``RegisterMap.lde_pair_ok``) the coefficients go through the host and come back zero-extended
(:func:`coset_padded`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nantucket.hw.model.layout import lde_pairs
from nantucket.hw.model.run import Run

from .transforms import zero_extend

__all__ = ["Chunk", "ResidentRows", "upload_rows", "download_rows", "relayout", "INPUT_NATURAL",
           "lde_chained", "coset_padded"]

#: The placement asarray() puts points in, and every transform leaves them in: the kernel's input,
#: natural order.
INPUT_NATURAL = ("input", False)


@dataclass
class Chunk:
    """Rows [row0, row0 + rows) of a resident array, in one buffer set, with their placement."""
    row0: int
    rows: int
    bufs: object                    # host.xrt.DeviceBuffers
    placement: tuple[str, bool] = INPUT_NATURAL


class ResidentRows:
    """A (B, N) array on a card: ``driver`` (a host.backend_base.CardDriver, such as host.xrt.XrtBackend),
    ``n`` points per row, ``chunks``."""

    def __init__(self, driver, n: int, chunks: list[Chunk]):
        self.driver, self.n, self.chunks = driver, n, chunks

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.chunks)

    @property
    def log_n(self) -> int:
        return self.n.bit_length() - 1

    @property
    def nbytes(self) -> int:
        return self.rows * self.n * 8

    def release(self) -> None:
        for c in self.chunks:
            c.bufs.release()
        self.chunks = []


def _row_count(part: np.ndarray) -> int:
    return part.size // part.shape[-1]


def _parts(driver, rows: np.ndarray, log_n: int):
    """(row0, part) of the chunks of at most the kernel's largest batch of 2^log_n points. ``rows``: (R, N)
    rows, or an (E, D, N) view of E elements' D extension limbs (row e * D + l; host/api/checks.Shape):
    its chunks are whole elements where D fits in a batch, else the limbs of one element; every part is a
    view of ``rows``."""
    limit = driver.batch_limit(log_n)
    if rows.ndim == 2:
        for r0 in range(0, rows.shape[0], limit):
            yield r0, rows[r0:r0 + limit]
        return
    elements, d = rows.shape[0], rows.shape[1]
    if d <= limit:
        per = limit // d
        for e0 in range(0, elements, per):
            yield e0 * d, rows[e0:e0 + per]
        return
    for e in range(elements):
        for l0 in range(0, d, limit):
            yield e * d + l0, rows[e, l0:l0 + limit]


def _rows_of(view: np.ndarray, r0: int, rows: int) -> np.ndarray | None:
    """Rows [r0, r0 + rows) of a (R, N) or (E, D, N) view, as a view (None when they are not one slice)."""
    if view.ndim == 2:
        return view[r0:r0 + rows]
    d = view.shape[1]
    if r0 % d == 0 and rows % d == 0:
        return view[r0 // d:(r0 + rows) // d]
    if r0 // d == (r0 + rows - 1) // d:
        return view[r0 // d, r0 % d:r0 % d + rows]
    return None


def upload_rows(driver, rows: np.ndarray) -> ResidentRows:
    """New buffers holding the (B, N) ``rows`` (or an (E, D, N) view: :func:`_parts`; any strides: the
    layout step reads them in place) placed as the kernel's natural-order input."""
    n = rows.shape[-1]
    layout = driver.layout_for(n.bit_length() - 1)
    chunks = []
    for r0, part in _parts(driver, rows, layout.log_n):
        bufs = driver.allocate(layout, _row_count(part))
        driver.upload(bufs, part)
        chunks.append(Chunk(r0, _row_count(part), bufs))
    return ResidentRows(driver, n, chunks)


def download_rows(store: ResidentRows, chunks=None, out: np.ndarray | None = None) -> np.ndarray:
    """The (B, N) rows of ``store`` (or of the given chunks) brought back to the host, logical order,
    from whichever placement each chunk is in. ``out``: a writable (B, N) or (E, D, N) view (of the whole
    array; any strides) the layout step's gather writes each chunk's rows into, returned."""
    chunks = store.chunks if chunks is None else chunks
    if out is not None:
        for c in chunks:
            dst = _rows_of(out, c.row0, c.rows)
            if dst is not None:
                store.driver.download(c.bufs, c.rows, buffer=c.placement[0], reverse=c.placement[1], out=dst)
                continue
            # a chunk across elements of an (E, D, N) view (an upload from a view of other strides)
            part = store.driver.download(c.bufs, c.rows, buffer=c.placement[0], reverse=c.placement[1])
            d = out.shape[1]
            for i, r in enumerate(range(c.row0, c.row0 + c.rows)):
                out[r // d, r % d] = part[i]
        return out
    parts = [store.driver.download(c.bufs, c.rows, buffer=c.placement[0], reverse=c.placement[1])
             for c in chunks]
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def relayout(store: ResidentRows, chunk: Chunk, placement: tuple[str, bool]) -> int:
    """Move ``chunk`` to ``placement`` through the host (its logical contents unchanged); returns the
    bytes moved each way."""
    rows = download_rows(store, [chunk])
    store.driver.upload(chunk.bufs, rows, reverse=placement[1], buffer=placement[0])
    chunk.placement = placement
    return rows.nbytes


def lde_chained(driver, rows: np.ndarray, log_t: int, shift: int) -> ResidentRows:
    """The LDE of the (B, M) host ``rows`` (or an (E, D, M) view: :func:`_parts`) (evaluations, natural order) to 2^log_t points on the coset
    ``shift``, as a new resident array in the natural input placement. Per chunk: buffers sized for
    2^log_t points, the M points uploaded where a 2^m-point run reads them, then two runs with nothing
    between them: the inverse (``chain_log_n`` = t: the coefficients land as the zero-extended input of
    the 2^t-point run) and the coset NTT (``input_log_m`` = m; ``chain_log_n`` = t keeps the result in
    the input placement). Needs ``driver.rmap.lde_pair_ok(m, t)``."""
    log_m = rows.shape[-1].bit_length() - 1
    layout = driver.layout_for(log_t)
    chunks = []
    for r0, part in _parts(driver, rows, log_t):
        batch = _row_count(part)
        bufs = driver.allocate(layout, batch)
        driver.upload(bufs, part)
        driver.execute_run(bufs, Run.of(log_m, inverse=True, batch=batch, chain_log_n=log_t))
        driver.execute_run(bufs, Run.of(log_t, coset=shift, batch=batch, input_log_m=log_m, chain_log_n=log_t))
        chunks.append(Chunk(r0, batch, bufs))
    return ResidentRows(driver, 1 << log_t, chunks)


def coset_padded(driver, coeffs: np.ndarray, log_t: int, shift: int) -> tuple[ResidentRows, int]:
    """The coset NTT with ``shift`` of the (B, M) host ``coeffs`` zero-extended to 2^log_t points, as a
    new resident array in the natural input placement; returns it and the bytes synced to the card.
    Where the build takes the pair (``lde_pair_ok``) only the M points' units are written and the kernel
    reads only them (``input_log_m``); otherwise the host writes the zeros too."""
    log_m = coeffs.shape[1].bit_length() - 1
    extended = driver.rmap.lde_pair_ok(log_m, log_t)
    layout = driver.layout_for(log_t)
    chunks, moved = [], 0
    for r0, part in _parts(driver, coeffs, log_t):
        bufs = driver.allocate(layout, part.shape[0])
        if extended:
            moved += driver.upload_padded(bufs, part)
        else:
            moved += driver.upload(bufs, zero_extend(part, 1 << (log_t - log_m)))
        driver.execute_run(bufs, Run.of(log_t, coset=shift, batch=part.shape[0],
                                        input_log_m=log_m if extended else 0, chain_log_n=log_t))
        chunks.append(Chunk(r0, part.shape[0], bufs))
    return ResidentRows(driver, 1 << log_t, chunks), moved


def chained_lde_blowups(params) -> dict[int, list[int]]:
    """For each native log2 M of the build ``params``: the blowups > 1 whose ``lde`` runs chained on the
    card (``lde_pairs`` has (m, m + log2 blowup)); blowup 1 always does."""
    pairs = lde_pairs(params)
    return {m: [1 << (t - m) for t in range(m + 1, params.max_log_n + 1) if (m, t) in pairs]
            for m in range(params.min_log_n, params.max_log_n + 1)}


def chained_lde_table(params) -> str:
    """``chained_lde_blowups`` as the markdown table of docs/api.md (one row per M)."""
    lines = ["| M | blowups chained on the card |", "|---|---|"]
    for m, blowups in chained_lde_blowups(params).items():
        lines.append(f"| 2^{m} | {', '.join(str(b) for b in blowups) or 'none (1 only)'} |")
    return "\n".join(lines)
