"""Formal verification of the gateware (SymbiYosys with the smtbmc engines; docs/verification.md).

Nothing here is part of the RTL that Vitis or Verilator builds: the wrappers instantiate the design's
blocks unchanged and put the properties around them.

- :mod:`.props`: named Assert / Assume / Cover, hand-written history registers (``Past``-like) and
  ``internals`` (a block's own registers by name, for the invariants k-induction needs).
- :mod:`.axi4`: AXI4 master-side properties (reusable: any single-ID, in-order INCR master).
- :mod:`.axi4lite`: AXI4-Lite slave-side properties (reusable: any AXI4-Lite slave).
- :mod:`.dma_read`, :mod:`.dma_write`: the DMA's read and write masters, each in isolation, their control
  inputs assumed as the DMA engine drives them.
- :mod:`.control`: the kernel's control slave, wrapped from outside.
- :mod:`.crossing`: the DMA's dual-clock FIFO under two clocks; :mod:`.fifo_reset`: the same under resets
  mid-stream; :mod:`.sync`: the start pulse and the run
  value beside it across the clocks (the kernel's and the DMA's uses of Amaranth's synchronizers);
  :mod:`.counts`: the record's NTT cycle counts crossing back.
- :mod:`.kernel`: the kernel (control, sequencer, status record, the shared master 0) with a stub engine of
  ``hw.operation.engine_signature`` in the NTT's place.
- :mod:`.sby`: runs a wrapper through SymbiYosys; :mod:`.suite`: every proof, its covers and mutants.
"""
