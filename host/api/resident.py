"""Points that stay on the card: a (B, N) array held in the kernel's device buffers.

A :class:`ResidentRows` is the B rows in chunks of at most the kernel's largest batch for N
(``driver.batch_limit``), each chunk one :class:`host.xrt.DeviceBuffers` set whose regions hold its rows
placed for the kernel. Each chunk remembers its *placement*: which buffer layout its points follow
("input": where the kernel reads x, "output": where it writes X) and whether the array's logical order
is bit-reversed there (point j at the place of natural index rev(j)). A transform runs the kernel on the
chunk's buffers in place (the output overwrites the input, same offsets) and leaves the chunk in the
"output" placement; nothing moves to or from the host.

The two placements are different permutations of the same words for every size (HbmLayout.place of the
input and of the output differ for even and odd log_n alike: the input's rows are in the lanes' input
order, the output's in natural order), and the order a transform asks for decides which one it needs.
A chunk whose placement is not the one the next transform needs is re-laid out through the host: its
points come back (gather with the current placement) and go out again (scatter with the needed one);
:attr:`Relayouts.count` counts these round trips and the device's ``transfers`` their bytes. The kernel
has no on-card re-layout yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Chunk", "ResidentRows", "upload_rows", "download_rows", "relayout", "INPUT_NATURAL"]

#: The placement asarray() puts points in: the kernel's input, natural order.
INPUT_NATURAL = ("input", False)


@dataclass
class Chunk:
    """Rows [row0, row0 + rows) of a resident array, in one buffer set, with their placement."""
    row0: int
    rows: int
    bufs: object                    # host.xrt.DeviceBuffers
    placement: tuple[str, bool] = INPUT_NATURAL


class ResidentRows:
    """A (B, N) array on a card: ``driver`` (host.xrt.XrtBackend), ``n`` points per row, ``chunks``."""

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


def upload_rows(driver, rows: np.ndarray) -> ResidentRows:
    """New buffers holding the (B, N) ``rows`` placed as the kernel's natural-order input."""
    n = rows.shape[1]
    layout = driver.layout_for(n.bit_length() - 1)
    limit = driver.batch_limit(layout.log_n)
    chunks = []
    for r0 in range(0, rows.shape[0], limit):
        part = rows[r0:r0 + limit]
        bufs = driver.allocate(layout, part.shape[0])
        driver.upload(bufs, part)
        chunks.append(Chunk(r0, part.shape[0], bufs))
    return ResidentRows(driver, n, chunks)


def download_rows(store: ResidentRows, chunks=None) -> np.ndarray:
    """The (B, N) rows of ``store`` (or of the given chunks) brought back to the host, logical order."""
    chunks = store.chunks if chunks is None else chunks
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
