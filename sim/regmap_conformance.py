"""Register-map conformance: one sequence of AXI4-Lite accesses whose expected results come from the
reference :class:`sim.kernel_model.KernelModel` (which decodes :mod:`hw.model.regmap` exactly).

A cocotb bench of the gateware's control slave runs it with its own AXI4-Lite read/write
coroutines, so the offsets and bit behaviour of the RTL are checked against the one register map::

    from cocotbext.axi import AxiLiteMaster, AxiLiteBus
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.ap_clk, dut.ap_rst_n, False)
    async def read(off):  return int.from_bytes((await axil.read(off, 4)).data, "little")
    async def write(off, v): await axil.write(off, v.to_bytes(4, "little"))
    assert await check_conformance(read, write, params) == []

The sequence never sets ap_start, so no run is started and no memory is touched.
"""

from __future__ import annotations

from dataclasses import dataclass

from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from .kernel_model import HbmModel, KernelModel

__all__ = ["Access", "conformance_sequence", "check_conformance", "check_conformance_sync"]


@dataclass(frozen=True)
class Access:
    op: str                 # "r" or "w"
    offset: int
    value: int = 0          # written value (writes only)
    why: str = ""


def conformance_sequence(params: BuildParams) -> list[Access]:
    rmap = R.RegisterMap(params)
    seq = [Access("r", r.offset, why=f"{r.name} after reset") for r in rmap.registers]
    arg_words = [o for a in rmap.args for o in a.word_offsets]
    for i, off in enumerate(arg_words):            # distinct patterns expose aliased words
        seq.append(Access("w", off, (0xA5A5_0000 | (i << 4) | (off & 0xF)) ^ (i << 24), "argument word"))
    seq += [Access("r", off, why="argument word read back") for off in arg_words]
    seq += [Access("w", R.GIER, 0xFFFF_FFFF, "GIER: only bit0 is implemented"),
            Access("r", R.GIER, why="GIER"),
            Access("w", R.IP_IER, 0xFFFF_FFFF, "IER: only bit0 is implemented"),
            Access("r", R.IP_IER, why="IER"),
            Access("w", R.IP_ISR, 0, "ISR: writing 0 toggles nothing"),
            Access("r", R.IP_ISR, why="ISR stays clear without a run"),
            Access("w", R.GIER, 0, "GIER off"), Access("w", R.IP_IER, 0, "IER off")]
    for name in R.ID_REGISTERS:
        off = rmap.id_offset(name)
        seq += [Access("w", off, 0x5A5A_5A5A, f"{name} is read only"), Access("r", off, why=name)]
    for off in (0x14, R.ID_BASE - 4, R.ID_BASE + 4 * len(R.ID_REGISTERS), R.ADDRESS_RANGE - 4):
        if rmap.register_at(off) is None:
            seq.append(Access("r", off, why="unmapped word reads 0"))
    seq.append(Access("r", R.CTRL, why="still idle, nothing started"))
    return seq


async def check_conformance(read, write, params: BuildParams) -> list[str]:
    """Run the sequence through async ``read(offset) -> int`` / ``write(offset, value)``; returns the
    mismatches against the reference model (empty when the slave conforms)."""
    model = KernelModel(params, HbmModel(1), layout=None, hang=True)
    problems = []
    for acc in conformance_sequence(params):
        if acc.op == "w":
            await write(acc.offset, acc.value)
            model.write(acc.offset, acc.value)
        else:
            got, want = int(await read(acc.offset)), model.read(acc.offset)
            if got != want:
                problems.append(f"read 0x{acc.offset:03x} ({acc.why}): got 0x{got:08x}, expected 0x{want:08x}")
    return problems


def check_conformance_sync(read, write, params: BuildParams) -> list[str]:
    """The same with plain functions (for Python models)."""
    import asyncio

    async def aread(o):
        return read(o)

    async def awrite(o, v):
        write(o, v)

    return asyncio.run(check_conformance(aread, awrite, params))
