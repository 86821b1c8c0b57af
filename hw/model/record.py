"""The status record: what the kernel writes into device memory at the end of every start.

XRT's published Python binding (``pyxrt.pyi``) declares no way to read a kernel register, so a host on it
cannot read STATUS. The kernel therefore also writes STATUS, its identification and its own cycle counts
as one record of :data:`RECORD_BYTES` bytes (two 256-bit beats, 16 little-endian 32-bit words) at the
address in its ``status`` argument (a pointer served by master ``m00_axi``, so a buffer in HBM[0]),
after the last write response of the run and before ``ap_done``; a refused start writes it too (and
nothing else). A host reads it with ``bo.sync`` and ``bo.map`` alone. This module is the one definition
of the record's words, which the gateware (hw/kernel.py), the kernel model (sim/kernel_model.py) and
the host's driver (host/xrt/) use.

Words, in address order (the second layout, register map VERSION 7: room for the operation, its engine's
words and a pointer to results that do not fit):

==  ====================  ==========================================================================
0   MAGIC .. COMMIT       the identification block's words, in its order (hw.model.regmap
10                        ``ID_REGISTERS``), STATUS as it reads after this start's done
11  SEQUENCE              starts since reset, this one included (1 for the first)
12  OP                    this start's ``op`` argument (hw.model.ops)
13  RUN                   this start's log_n (bits 7..0), flags (15..8), input_log_m (23..16) and
                          chain_log_n (31..24), each the low 8 bits of its argument register
14  BATCH                 this start's batch argument
15  TOTAL_DMA_CYCLES      ap_clk cycles from the accepted start to the record's write (set-up included)
16  RESULT_LO, RESULT_HI  where in HBM the operation wrote results that do not fit the record (a Merkle
17                        root or cap beside its tree), 0 when it has none (the NTT's results are its
                          point buffers)
18  RESULT_BYTES          how many bytes of results are there (0: none)
19  ENGINE_0 .. 12        the operation's own words (hw.model.ops ``Operation.status_words``; the NTT's:
31                        PASS1_DMA_CYCLES, PASS1_NTT_CYCLES, PASS2_DMA_CYCLES, PASS2_NTT_CYCLES: the
                          ap_clk (DMA) and ap_clk_2 (NTT) cycles of each pass, from its start to its last
                          write response); unused ones 0
==  ====================  ==========================================================================

The cycle words of a refused start are 0, and so are its engine words. Counters saturate at 2^32 - 1
(9.5 s at 450 MHz: no run is that long). The record's address is rounded down to :data:`RECORD_BYTES`
(its four beats stay in one 4 KiB page). :class:`StatusRecord` reads an engine word by its name too
(``record["PASS1_DMA_CYCLES"]``), through the operation the OP word names.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .params import BuildParams
from .regmap import ID_REGISTERS, MAGIC, VERSION, RegisterMap
from .ops import ENGINE_WORDS, operation
from .run import Run

__all__ = ["RECORD_ID_WORDS", "RECORD_WORDS", "RECORD_BYTES", "RECORD_BEATS", "CYCLE_WORDS", "ENGINE_RECORD_WORDS",
           "StatusRecord", "run_word", "record_words", "engine_word"]

#: The identification words the record carries: the whole block.
RECORD_ID_WORDS = ID_REGISTERS
#: The engine area's words.
ENGINE_RECORD_WORDS = tuple(f"ENGINE_{i}" for i in range(ENGINE_WORDS))
#: The record's words, in address order (4 bytes each).
RECORD_WORDS = RECORD_ID_WORDS + ("SEQUENCE", "OP", "RUN", "BATCH", "TOTAL_DMA_CYCLES", "RESULT_LO", "RESULT_HI",
                                  "RESULT_BYTES") + ENGINE_RECORD_WORDS
RECORD_BYTES = 4 * len(RECORD_WORDS)
#: 256-bit beats of one record.
RECORD_BEATS = RECORD_BYTES // 32
#: The NTT's cycle words, by name (its engine words and the total), which a refused start leaves 0.
CYCLE_WORDS = ("PASS1_DMA_CYCLES", "PASS1_NTT_CYCLES", "PASS2_DMA_CYCLES", "PASS2_NTT_CYCLES",
               "TOTAL_DMA_CYCLES")
_MASK = 0xFFFF_FFFF

assert RECORD_BYTES % 32 == 0 and len(RECORD_WORDS) == 32 and RECORD_BYTES & (RECORD_BYTES - 1) == 0


def run_word(log_n: int, flags: int, input_log_m: int, chain_log_n: int) -> int:
    """Word 9 (RUN) of a start with these argument registers (the low 8 bits of each): ints for the host
    and the model, Amaranth values for the control slave (one definition for both)."""
    return (log_n & 0xFF) | (flags & 0xFF) << 8 | (input_log_m & 0xFF) << 16 | (chain_log_n & 0xFF) << 24


@functools.lru_cache(maxsize=64)
def _id_values(params: BuildParams) -> dict:
    """RegisterMap(params).id_values, built once per build: the driver checks a record after every call
    (a RegisterMap builds the whole map)."""
    return RegisterMap(params).id_values


def engine_word(op: int, name: str) -> str | None:
    """The record word (ENGINE_i) that holds engine word ``name`` of operation code ``op``, or None."""
    o = operation(op)
    if o is None or name not in o.status_words:
        return None
    return ENGINE_RECORD_WORDS[o.status_words.index(name)]


def record_words(params: BuildParams, *, status: int, sequence: int, run: Run, cycles: dict | None = None,
                 result: tuple[int, int] = (0, 0)) -> list[int]:
    """The words a kernel built with ``params`` writes after ``run`` (register contents), with STATUS
    ``status``, start number ``sequence``, the ``cycles`` words by name (TOTAL_DMA_CYCLES or one of the
    op's engine words; missing ones 0) and ``result`` (address, bytes)."""
    ids = _id_values(params)
    values = dict({n: ids[n] for n in RECORD_ID_WORDS if n != "STATUS"}, STATUS=status, SEQUENCE=sequence,
                  OP=run.op, RUN=run_word(run.log_n, run.flags, run.input_log_m, run.chain_log_n), BATCH=run.batch,
                  RESULT_LO=result[0] & _MASK, RESULT_HI=result[0] >> 32, RESULT_BYTES=result[1])
    for name, v in (cycles or {}).items():
        word = name if name == "TOTAL_DMA_CYCLES" else engine_word(run.op, name)
        if word is None:
            raise KeyError(f"cycles: no record word {name} for op {run.op}")
        values[word] = min(int(v), _MASK)
    return [values.get(name, 0) & _MASK for name in RECORD_WORDS]


@dataclass(frozen=True)
class StatusRecord:
    """One record as read back. ``words``: {name: value} for every name of :data:`RECORD_WORDS`."""
    words: dict

    @classmethod
    def from_bytes(cls, raw) -> "StatusRecord":
        """The record in the first RECORD_BYTES of ``raw`` (bytes or a uint8 array)."""
        buf = np.frombuffer(bytes(np.asarray(raw, dtype=np.uint8).reshape(-1)[:RECORD_BYTES]), dtype="<u4")
        if buf.size < len(RECORD_WORDS):
            raise ValueError(f"raw: a status record is {RECORD_BYTES} bytes, got {buf.size * 4}")
        return cls(dict(zip(RECORD_WORDS, (int(v) for v in buf))))

    def __getitem__(self, name: str) -> int:
        """A word by its record name, or an engine word of the record's operation by its own name."""
        if name in self.words:
            return self.words[name]
        word = engine_word(self.words["OP"], name)
        if word is None:
            raise KeyError(f"name: no record word {name!r} (op {self.words['OP']})")
        return self.words[word]

    @property
    def result(self) -> tuple[int, int]:
        """(address, bytes) of the results the operation wrote beside its buffers; (0, 0): none."""
        return self.words["RESULT_LO"] | self.words["RESULT_HI"] << 32, self.words["RESULT_BYTES"]

    @property
    def written(self) -> bool:
        """Whether a kernel wrote it: MAGIC and VERSION are this map's (a record the host cleared
        before the start and that still reads 0 was never written)."""
        return self.words["MAGIC"] == MAGIC and self.words["VERSION"] == VERSION

    @property
    def status(self) -> int:
        return self.words["STATUS"]

    def describes(self, run: Run) -> bool:
        """Whether the record is the one of a start of ``run`` (its OP, RUN and BATCH words)."""
        return (self.words["OP"] == run.op and self.words["RUN"] == run_word(run.log_n, run.flags, run.input_log_m, run.chain_log_n)
                and self.words["BATCH"] == run.batch & _MASK)

    def run_fields(self) -> dict:
        """The start the record describes: {log_n, flags, input_log_m, chain_log_n, batch} (the low 8 bits
        of each argument the RUN word holds, and BATCH)."""
        run = self.words["RUN"]
        return {"log_n": run & 0xFF, "flags": run >> 8 & 0xFF, "input_log_m": run >> 16 & 0xFF,
                "chain_log_n": run >> 24 & 0xFF, "batch": self.words["BATCH"], "op": self.words["OP"]}

    def mismatched_ids(self, params: BuildParams) -> dict:
        """{name: (read, expected)} for every identification word other than STATUS that differs."""
        want = _id_values(params)
        return {n: (self.words[n], want[n]) for n in RECORD_ID_WORDS if n != "STATUS" and self.words[n] != want[n]}

    def cycles(self) -> dict:
        """The NTT's cycle words by name (0 for a record of another operation)."""
        return {n: (self[n] if n == "TOTAL_DMA_CYCLES" or engine_word(self.words["OP"], n) else 0)
                for n in CYCLE_WORDS}

    def kernel_seconds(self, params: BuildParams) -> float:
        """The run's time by the kernel's own count: TOTAL_DMA_CYCLES at the build's DMA clock."""
        return self.words["TOTAL_DMA_CYCLES"] / (params.dma_mhz * 1e6)
