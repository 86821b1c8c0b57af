"""The HBM DMA engine, as blocks joined by streams (see :mod:`hw.dma.engine` for the picture):

- :mod:`.axi_read`: :class:`AxiReadMaster`, one sequential buffer into a FIFO, credit limited;
- :mod:`.axi_write`: :class:`AxiWriteMaster`, bursts at queued addresses with the FIFO's beats;
- :mod:`.assembler`: :class:`ReadAssembler` (unit collectors and the pair assembler);
- :mod:`.write_path`: :class:`WritePath` (pass-1 corner turn, unit splitters);
- :mod:`.addresses`: the read and write address generators, built from ``hw.model.layout``;
- :mod:`.engine`: :class:`DmaEngine`, the top that wires them across the two clock domains.
"""

from .engine import DmaEngine

__all__ = ["DmaEngine"]
