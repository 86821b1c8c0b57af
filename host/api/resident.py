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
only them (``input_log_m`` = m), in the same buffers sized for 2^t points. A resident array's points get
there by a copy on the card (:func:`lde_resident`: ``bo.copy``), never through the host. Where the build cannot place
that pair (``RegisterMap.lde_pair_ok``) the coefficients go through the host and come back zero-extended
(:func:`coset_padded`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nantucket.hw.model.layout import lde_pairs
from nantucket.hw.model.run import Run

from .transforms import zero_extend

__all__ = ["Chunk", "ResidentRows", "parts", "upload_rows", "download_rows", "relayout", "INPUT_NATURAL",
           "lde_chained", "lde_resident", "source_pieces", "lde_path", "lde_runs", "coset_padded"]

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
        #: why the buffers' contents are not to be trusted (a run on them failed part way), or None
        self.failed: str | None = None

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.chunks)

    @property
    def log_n(self) -> int:
        return self.n.bit_length() - 1


    def release(self) -> None:
        for c in self.chunks:
            c.bufs.release()
        self.chunks = []


def _row_count(part: np.ndarray) -> int:
    return part.size // part.shape[-1]


def parts(driver, rows: np.ndarray, log_n: int):
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
    """New buffers holding the (B, N) ``rows`` (or an (E, D, N) view: :func:`parts`; any strides: the
    layout step reads them in place) placed as the kernel's natural-order input."""
    n = rows.shape[-1]
    layout = driver.layout_for(n.bit_length() - 1)
    chunks = []
    for r0, part in parts(driver, rows, layout.log_n):
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
    got = [store.driver.download(c.bufs, c.rows, buffer=c.placement[0], reverse=c.placement[1]) for c in chunks]
    return np.concatenate(got) if len(got) != 1 else got[0]


def relayout(store: ResidentRows, chunk: Chunk, placement: tuple[str, bool]) -> int:
    """Move ``chunk`` to ``placement`` through the host (its logical contents unchanged); returns the
    points moved each way."""
    rows = download_rows(store, [chunk])
    store.driver.upload(chunk.bufs, rows, reverse=placement[1], buffer=placement[0])
    chunk.placement = placement
    return rows.size


def lde_path(rmap, log_m: int, log_t: int) -> list[int] | None:
    """The sizes an LDE from 2^log_m to 2^log_t points chains through on the card: [m, s1, ..., t] with
    every consecutive pair one the build places (``rmap.lde_pair_ok``), the fewest kernel cycles first
    (a hop through s costs a forward and an inverse run of 2^s points), or None when no such chain
    exists (a size outside the native range). [m, t] is the direct chain of two runs."""
    if not (rmap.log_n_supported(log_m) and rmap.log_n_supported(log_t)) or log_t < log_m:
        return None
    if rmap.lde_pair_ok(log_m, log_t):
        return [log_m, log_t]
    # cheapest chain over the sizes between: cost of a hop through s ~ 2 x 2^s points
    best: dict[int, tuple[int, list[int]]] = {log_m: (0, [log_m])}
    for s in range(log_m + 1, log_t + 1):
        options = [(cost + (0 if s == log_t else 2 << s), path + [s]) for r, (cost, path) in best.items()
                   if rmap.lde_pair_ok(r, s)]
        if options:
            best[s] = min(options)
    return best[log_t][1] if log_t in best else None


def lde_runs(path: list[int], shift: int, batch: int, *, coeffs_back: bool = False) -> list[tuple[str, Run]]:
    """The kernel runs of a chained LDE along ``path`` (:func:`lde_path`), each with the step it belongs to
    ("inverse", "zero-extension", "coset forward"): the 2^m inverse writing the coefficients as the
    zero-extended input of the next size; at every size s between, a forward run (the evaluations on the
    2^s-th roots, read zero-extended) and an inverse one writing the 2^s coefficients (their upper part
    zero) as the next size's input: the zero-extension done on the card; then the 2^t coset NTT reading
    the zero-extended input, its result left in the input placement. ``coeffs_back``: the inverse first
    keeps the coefficients in the 2^m input placement (where the host reads exactly the M points), then a
    forward run of the same size restores the values before the chained inverse (kernel runs of 2^m points
    instead of moving 2^s zero-extended points over the link)."""
    m, t = path[0], path[-1]
    runs = []
    if coeffs_back:
        runs += [("inverse", Run.of(m, inverse=True, batch=batch, chain_log_n=m)),
                 ("inverse", Run.of(m, batch=batch, chain_log_n=m))]
    runs.append(("inverse", Run.of(m, inverse=True, batch=batch, chain_log_n=path[1])))
    for prev, s, nxt in zip(path, path[1:], path[2:]):
        runs += [("zero-extension", Run.of(s, batch=batch, input_log_m=prev, chain_log_n=s)),
                 ("zero-extension", Run.of(s, inverse=True, batch=batch, chain_log_n=nxt))]
    runs.append(("coset forward", Run.of(t, coset=shift, batch=batch, input_log_m=path[-2], chain_log_n=t)))
    return runs


def lde_chained(driver, rows: np.ndarray, log_t: int, shift: int, *, path: list[int] | None = None,
                reverse_in: bool = False, reverse_out: bool = False, coeffs: bool = False, on_run=None):
    """The LDE of the (B, M) host ``rows`` (or an (E, D, M) view: :func:`parts`; any strides: the layout
    step reads them in place) (evaluations; bit-reversed order with ``reverse_in``) to
    2^log_t points on the coset ``shift``, as a new resident array in the input placement (its order
    bit-reversed with ``reverse_out``: the layout tables, no pass). Per chunk: buffers sized for 2^log_t
    points, the M points uploaded where a 2^m-point run reads them, then the runs of :func:`lde_runs`
    along ``path`` (default the direct pair, which needs ``driver.rmap.lde_pair_ok(m, t)``) with nothing
    between them but, with ``coeffs``, the download of the coefficients. ``on_run(step, run)`` is called
    after each kernel run. Returns the array, and the (B, M) coefficients (natural order) or None."""
    log_m = rows.shape[-1].bit_length() - 1
    fills = ((r0, _row_count(part), lambda bufs, part=part: driver.upload(bufs, part, reverse=reverse_in))
             for r0, part in parts(driver, rows, log_t))
    return _lde_chunks(driver, fills, log_m, log_t, shift, path, reverse_out, coeffs, on_run)


def source_pieces(store: ResidentRows, r0: int, batch: int) -> list[tuple[object, int, int, int]]:
    """The (src set, first source row, first row in the new set, rows) pieces that rows [r0, r0 + batch)
    of ``store`` are in: one per chunk of ``store`` they overlap (its rows consecutive in its buffers)."""
    pieces = []
    for c in store.chunks:
        lo, hi = max(r0, c.row0), min(r0 + batch, c.row0 + c.rows)
        if lo < hi:
            pieces.append((c.bufs, lo - c.row0, lo - r0, hi - lo))
    return pieces


def lde_resident(store: ResidentRows, log_t: int, shift: int, *, path: list[int] | None = None,
                 reverse_in: bool = False, reverse_out: bool = False, coeffs: bool = False, on_run=None):
    """:func:`lde_chained` of a resident array, whose points never leave the card: each chunk's buffers
    sized for 2^log_t points get the rows of ``store`` by a copy on the card (``driver.copy_rows``, host.xrt:
    one ``bo.copy`` per HBM channel and source chunk). That is a plain byte copy because a 2^m-point array
    in its own buffers (sized for 2^m points, every chunk in the natural or bit-reversed *input*
    placement) and the input of the chain's first run, a 2^m-point run in buffers sized for 2^t points,
    have the same places: region r of each input channel at r x ``HbmLayout(m).channel_bytes``, the
    regions of a set being of the run's size, not the set's (host/xrt/transfers.py ``rows_layout``); an
    LDE chunk (at most the batch limit of 2^t points) takes its rows from the one or two source chunks
    they are in. Every chunk of ``store`` must be in the placement ("input", ``reverse_in``) (another order
    is a permutation of the points inside each channel, not a byte copy: such an array goes through the
    host, :func:`lde_chained`). Returns the array, the coefficients or None, and the bytes the copies
    moved over the link each way (0 where the driver copies on the card)."""
    driver, moved = store.driver, [0]
    bad = [c.placement for c in store.chunks if c.placement != ("input", bool(reverse_in))]
    if bad:
        raise ValueError(f"store: a chunk in placement {bad[0]}, the LDE reads ('input', {bool(reverse_in)})")

    def fill(r0, batch):
        def copy(bufs):
            moved[0] += driver.copy_rows(bufs, source_pieces(store, r0, batch), log_n=store.log_n)
        return copy
    limit = driver.batch_limit(log_t)
    fills = ((r0, min(limit, store.rows - r0), fill(r0, min(limit, store.rows - r0)))
             for r0 in range(0, store.rows, limit))
    out, got = _lde_chunks(driver, fills, store.log_n, log_t, shift, path, reverse_out, coeffs, on_run)
    return out, got, moved[0]


def _lde_chunks(driver, fills, log_m: int, log_t: int, shift: int, path, reverse_out: bool, coeffs: bool, on_run):
    """The chained LDE of the chunks ``fills`` ((first row, rows, fill(bufs) placing them as a 2^log_m-point
    run's input)), each in a new set sized for 2^log_t points (:func:`lde_chained`)."""
    path = [log_m, log_t] if path is None else path
    layout = driver.layout_for(log_t)
    chunks, got = [], []
    for r0, batch, fill in fills:
        bufs = driver.allocate(layout, batch)
        fill(bufs)
        for i, (step, run) in enumerate(lde_runs(path, shift, batch, coeffs_back=coeffs)):
            driver.execute_run(bufs, run)
            if on_run is not None:
                on_run(step, run)
            if coeffs and i == 0:
                got.append(driver.download(bufs, batch, buffer="input", log_n=log_m))
        chunks.append(Chunk(r0, batch, bufs, ("input", bool(reverse_out))))
    return ResidentRows(driver, 1 << log_t, chunks), (None if not coeffs else np.concatenate(got) if len(got) > 1
                                                      else got[0])


def coset_padded(driver, coeffs: np.ndarray, log_t: int, shift: int) -> tuple[ResidentRows, int]:
    """The coset NTT with ``shift`` of the (B, M) host ``coeffs`` zero-extended to 2^log_t points, as a
    new resident array in the natural input placement; returns it and the bytes synced to the card.
    Where the build takes the pair (``lde_pair_ok``) only the M points' units are written and the kernel
    reads only them (``input_log_m``); otherwise the host writes the zeros too."""
    log_m = coeffs.shape[1].bit_length() - 1
    extended = driver.rmap.lde_pair_ok(log_m, log_t)
    layout = driver.layout_for(log_t)
    chunks, moved = [], 0
    for r0, part in parts(driver, coeffs, log_t):
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


def chained_lde_table(params, blowups=(2, 4, 8, 16)) -> str:
    """The markdown table of docs/api.md: for each native M of the build ``params`` and each blowup, the
    kernel runs of the LDE chained on the card per chunk (:func:`lde_path`, :func:`lde_runs`): 2 where the
    build places the pair itself, 2 more for each size between; "-" where blowup x M is past the build's
    largest transform."""
    from nantucket.hw.model.regmap import RegisterMap
    rmap = RegisterMap(params)
    lines = ["| M | " + " | ".join(f"blowup {b}" for b in blowups) + " |", "|---|" + "---|" * len(blowups)]
    for m in range(params.min_log_n, params.max_log_n + 1):
        cells = []
        for b in blowups:
            path = lde_path(rmap, m, m + b.bit_length() - 1)
            cells.append("-" if path is None else
                         f"{2 * len(path) - 2}" + (f" (via {', '.join(f'2^{s}' for s in path[1:-1])})"
                                                   if len(path) > 2 else ""))
        lines.append(f"| 2^{m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
