"""Clock-domain-crossing constraints generated with the kernel, the way Amaranth's Xilinx platform does it.

Amaranth builds every ``FFSynchronizer`` / ``AsyncFFSynchronizer`` (also the ones inside
``amaranth.lib.fifo.AsyncFIFO``) through ``platform.get_ff_sync`` / ``platform.get_async_ff_sync`` when the
platform it elaborates with has them. :class:`CdcPlatform` is such a platform without a vendor toolchain:
the flops it builds carry ``ASYNC_REG = "TRUE"`` (Vivado keeps them together in one slice and never turns
them into an SRL) and, on the first stage, :data:`ATTR_MAX_DELAY` (or :data:`ATTR_MAX_DELAY_PRE` for the
preset pins of a reset synchronizer) with the delay in ns -- Amaranth's ``amaranth.vivado.max_delay``.
The flops are plain Amaranth registers (no FDPE instances), so Verilator simulates the same Verilog.

:func:`cdc_tcl` reads those attributes back from the emitted Verilog, plus every dual-clock memory (the
storage of an AsyncFIFO: written on one clock, read on the other), and writes a Tcl script for Vivado's
implementation run. It names cells below each instance of the kernel's top module only (so the platform's
clocks and logic stay the platform's: it creates no clock and sets no clock-to-clock exception):

- ``set_property ASYNC_REG TRUE`` on every synchronizer stage;
- ``set_max_delay -datapath_only -from <launching clock> -to <first stage>`` (Amaranth's Tcl, which finds
  the launching clock with ``all_fanin``), so routing delay and the skew between the bits of a Gray-coded
  FIFO pointer stay below one period of the faster kernel clock;
- ``set_max_delay -to <PRE pins>`` of the reset synchronizers' flops;
- ``set_max_delay -datapath_only -from <write clock> -through <RAM output pins>`` for each dual-clock RAM:
  a LUTRAM's write-clock-to-read-register path is a real crossing (the FIFO's pointers guarantee the word
  is stable long before it is read); a block RAM has no such path and the constraint then covers nothing.

Cell names follow Vivado's for inferred registers and memories (``<path>/<reg>_reg``, ``..._reg[<bit>]``,
``<path>/<memory>_reg...``), with ``<path>`` the Amaranth hierarchy (module ``top.core.ntt.dma`` is instance
``core/ntt/dma``). :func:`hw.flow.crossings.check_constraint_names` evaluates the script in ``tclsh`` against the
netlist Yosys reads from the same Verilog, so a name that does not exist fails a test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal, Signal

from nantucket.hw.shared import VerilogCollector

__all__ = ["ATTR_MAX_DELAY", "ATTR_MAX_DELAY_PRE", "CdcPlatform", "SyncFlops", "DualClockRam",
           "find_synchronizers", "find_dual_clock_rams", "cdc_tcl"]

ATTR_MAX_DELAY = "nantucket.cdc.max_delay"
ATTR_MAX_DELAY_PRE = "nantucket.cdc.max_delay_pre"


class CdcPlatform(VerilogCollector):
    """The platform :func:`hw.flow.catalog.verilog_of` elaborates with: shared modules (VerilogCollector) and
    synchronizers marked for the constraints. ``max_delay_ns``: the datapath-only limit a synchronizer
    gets when its ``max_input_delay`` is not set (one period of the faster kernel clock)."""

    def __init__(self, top: str, max_delay_ns: float = 2.0):
        super().__init__(top)
        if not isinstance(max_delay_ns, (int, float)) or not max_delay_ns > 0:
            raise ValueError(f"max_delay_ns: expected a positive number, got {max_delay_ns!r}")
        self.max_delay_ns = float(max_delay_ns)

    def _delay(self, sync) -> str:
        # max_input_delay is in seconds (None: not given); reading it as Amaranth's own platforms do.
        delay = sync._max_input_delay
        return f"{delay * 1e9 if delay is not None else self.max_delay_ns:.3f}"

    def get_ff_sync(self, ff_sync):
        m = Module()
        flops = [Signal(ff_sync.i.shape(), name=f"stage{index}", init=ff_sync._init,
                        reset_less=ff_sync._reset_less, attrs={"ASYNC_REG": "TRUE"})
                 for index in range(ff_sync._stages)]
        flops[0].attrs[ATTR_MAX_DELAY] = self._delay(ff_sync)
        for i, o in zip((ff_sync.i, *flops), flops):
            m.d[ff_sync._o_domain] += o.eq(i)
        m.d.comb += ff_sync.o.eq(flops[-1])
        return m

    def get_async_ff_sync(self, async_ff_sync):
        # Amaranth's generic implementation (a local domain reset asynchronously by the input), with the
        # attributes; Vivado infers FDPE flops whose PRE pins get the max-delay constraint.
        m = Module()
        m.domains.async_ff = ClockDomain("async_ff", async_reset=True, local=True)
        flops = [Signal(1, name=f"stage{index}", init=1,
                        attrs={"ASYNC_REG": "TRUE", ATTR_MAX_DELAY_PRE: self._delay(async_ff_sync)})
                 for index in range(async_ff_sync._stages)]
        for i, o in zip((0, *flops), flops):
            m.d.async_ff += o.eq(i)
        edge = async_ff_sync.i if async_ff_sync._edge == "pos" else ~async_ff_sync.i
        m.d.comb += [
            ResetSignal("async_ff").eq(edge),
            ClockSignal("async_ff").eq(ClockSignal(async_ff_sync._o_domain)),
            async_ff_sync.o.eq(flops[-1]),
        ]
        return m


# -- reading the emitted Verilog back ----------------------------------------------------------------

_MODULE = re.compile(r"^module\s+(\\\S+|\w+)\s*\((.*?)^endmodule", re.MULTILINE | re.DOTALL)
_DECL = re.compile(r"((?:\(\*[^*]*\*\)\s*)*)\b(reg|wire|input|output)\s+(?:\[\d+:\d+\]\s+)?(\\\S+|\w+)")
_ATTR = re.compile(r"\(\*\s*\\?([\w.$]+)\s*=\s*\"([^\"]*)\"\s*\*\)")
_MEMORY = re.compile(r"^\s*reg\s+(?:\[\d+:\d+\]\s+)?(\\\S+|\w+)\s*\[\d+:\d+\]\s*;", re.MULTILINE)
_ALWAYS = re.compile(r"always\s+@\(posedge\s+(\\\S+|\w+)[^)]*\)(.*?)(?=\n\s*(?:always|assign|reg|wire|"
                     r"initial|endmodule|\\\S+\s+\S+\s*\(|\w+\s+\S+\s*\())", re.DOTALL)


@dataclass(frozen=True)
class SyncFlops:
    """One synchronizer in the emitted Verilog: instance path, stage registers, delay (ns, as written in
    the attribute), kind ("ff" or "async_ff")."""
    path: str
    stages: list
    delay: str
    kind: str


@dataclass(frozen=True)
class DualClockRam:
    """A memory written on one clock and read on another: instance path, memory name, clock nets."""
    path: str
    memory: str
    write_clock: str
    read_clock: str


def _instance_path(module: str, top: str) -> str | None:
    """``\\top.core.ntt.dma`` -> ``core/ntt/dma`` (Amaranth names each module after its place in the hierarchy);
    None for modules outside the top's hierarchy (shared blocks ``nt_*``)."""
    name = module.lstrip("\\")
    if name == top:
        return ""
    if not name.startswith(top + "."):
        return None
    return name[len(top) + 1:].replace(".", "/")


def _modules(verilog: str, top: str):
    for m in _MODULE.finditer(verilog):
        path = _instance_path(m.group(1), top)
        if path is not None:
            yield path, m.group(2)


def find_synchronizers(verilog: str, top: str) -> list[SyncFlops]:
    """Every module with ASYNC_REG registers carrying one of the delay attributes, in text order."""
    found = []
    for path, body in _modules(verilog, top):
        # A register's attributes sit on its first declaration (``output`` for a port, then ``reg``).
        attrs_of, regs = {}, set()
        for decl in _DECL.finditer(body):
            name = decl.group(3).lstrip("\\")
            attrs_of.setdefault(name, {}).update(_ATTR.findall(decl.group(1)))
            if decl.group(2) == "reg":
                regs.add(name)
        stages, delay, kind = [], None, None
        for name in sorted(regs):
            attrs = attrs_of[name]
            if attrs.get("ASYNC_REG") != "TRUE":
                continue
            stages.append(name)
            for attr, k in ((ATTR_MAX_DELAY, "ff"), (ATTR_MAX_DELAY_PRE, "async_ff")):
                if attr in attrs:
                    delay, kind = delay or attrs[attr], k
        if stages:
            if kind is None:
                raise ValueError(f"verilog: ASYNC_REG registers in {path or top} carry no delay attribute")
            found.append(SyncFlops(path, stages, delay, kind))
    return found


def find_dual_clock_rams(verilog: str, top: str) -> list[DualClockRam]:
    """Every memory array written under one clock and read under another (Yosys' Verilog back end
    writes a memory as ``reg [..] name [..];`` with one ``always @(posedge clk)`` block per port)."""
    found = []
    for path, body in _modules(verilog, top):
        for mem in _MEMORY.finditer(body):
            name = mem.group(1)
            esc = re.escape(name)
            writes, reads = set(), set()
            for blk in _ALWAYS.finditer(body):
                clock, text = blk.group(1).lstrip("\\"), blk.group(2)
                if re.search(rf"(?<![\w$\\]){esc}\s*\[[^;\n]*\]\s*<=", text):
                    writes.add(clock)
                if re.search(rf"<=\s*{esc}\s*\[", text):
                    reads.add(clock)
            if len(writes) == 1 and reads and reads != writes:
                write = next(iter(writes))
                for read in sorted(reads - writes):
                    found.append(DualClockRam(path, name.lstrip("\\"), write, read))
    return found


# -- the Tcl -----------------------------------------------------------------------------------------

_PROCS = r"""
# ASYNC_REG on every stage; the first stage: datapath-only max delay from the clock that launches its D.
proc nantucket_ff_sync {k path stages delay} {
  foreach s $stages { set_property ASYNC_REG TRUE [get_cells $k/$path/${s}_reg*] }
  foreach cell [get_cells $k/$path/[lindex $stages 0]_reg*] {
    set clock [get_clocks -quiet -of_objects [all_fanin -quiet -flat -startpoints_only [get_pins $cell/D]]]
    if {[llength $clock] != 0} {
      set_max_delay -datapath_only -from $clock -to $cell $delay
    }
  }
}
# A reset synchronizer: its flops are preset asynchronously by the other domain's reset.
proc nantucket_async_ff_sync {k path stages delay} {
  foreach s $stages {
    set cells [get_cells $k/$path/${s}_reg*]
    set_property ASYNC_REG TRUE $cells
    set_max_delay -to [get_pins -of_objects $cells -filter {REF_PIN_NAME == PRE}] $delay
  }
}
# A dual-clock RAM: paths launched by the write clock through the RAM's outputs (LUTRAM only).
proc nantucket_ram {k path memory write_clock delay} {
  set outs [get_pins -quiet -of_objects [get_cells $k/$path/${memory}_reg*] -filter {DIRECTION == OUT}]
  if {[llength $outs] != 0} {
    set_max_delay -datapath_only -from [get_clocks -of_objects [get_pins $k/$write_clock]] -through $outs $delay
  }
}
"""


def cdc_tcl(verilog: str, top: str, clock_ports: dict[str, str], ram_delay_ns: float = 2.0) -> str:
    """The constraints script for the kernel Verilog whose top module is ``top``.

    ``clock_ports``: clock port name inside the design (``<domain>_clk``) -> the top-level port that
    drives it (``kernel_dma_clk`` -> ``ap_clk``). Raises ValueError when a dual-clock RAM's write clock is
    not in it (the script could not name the launching clock)."""
    syncs = find_synchronizers(verilog, top)
    rams = find_dual_clock_rams(verilog, top)
    lines = [f"# Clock-domain-crossing constraints of module {top}, generated by hw/flow/constraints.py from "
             f"its Verilog; do not edit.",
             f"# {len(syncs)} synchronizers, {len(rams)} dual-clock RAMs. Run by v++ as an implementation "
             f"hook (opt_design pre); names are relative to each instance of {top}.",
             _PROCS.strip(), "",
             f"set nantucket_kernels [get_cells -hierarchical -filter {{REF_NAME == {top} || "
             f"ORIG_REF_NAME == {top}}}]",
             "if {[llength $nantucket_kernels] == 0} {",
             f"  puts \"CRITICAL WARNING: nantucket CDC constraints: no instance of {top}\"",
             "}",
             "foreach k $nantucket_kernels {"]
    for s in syncs:
        proc = "nantucket_ff_sync" if s.kind == "ff" else "nantucket_async_ff_sync"
        lines.append(f"  {proc} $k {{{s.path}}} {{{' '.join(s.stages)}}} {s.delay}")
    for r in rams:
        if r.write_clock not in clock_ports:
            raise ValueError(f"clock_ports: no top-level port for {r.write_clock} (RAM {r.path}/{r.memory})")
        lines.append(f"  nantucket_ram $k {{{r.path}}} {r.memory} {clock_ports[r.write_clock]} "
                     f"{ram_delay_ns:.3f}")
    lines.append("}")
    return "\n".join(lines) + "\n"
