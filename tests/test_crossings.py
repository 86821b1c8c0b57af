"""Clock-domain crossings (hw/flow/crossings.py) and the constraints generated for them (hw/flow/constraints.py).

Tiny two-domain designs with a known structure check the checker (a direct crossing, an enable or a RAM
read address from the other domain must be flagged; FFSynchronizer, AsyncFIFO must pass, and only when
the synchronizer flops are marked); a small kernel is checked end to end, constraints evaluated in tclsh.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth.back import verilog as amaranth_verilog
from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Module, ResetSignal, Signal
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.memory import Memory

from nantucket.hw.flow import catalog
from nantucket.hw.flow.constraints import ATTR_MAX_DELAY, CdcPlatform, cdc_tcl, find_dual_clock_rams, find_synchronizers
from nantucket.hw.flow.crossings import check_constraint_names, find_crossings, read_netlist
from nantucket.hw.kernel import VitisKernel
from nantucket.hw.model import regmap
from nantucket.hw.model.params import BuildParams

REPO = Path(__file__).resolve().parent.parent
CLOCKS = {"clk_a": "a", "clk_b": "b"}
CLOCK_NETS = {"a_clk": "clk_a", "b_clk": "clk_b"}      # clock net inside the design -> top port


def port_domain(port):
    return "b" if port in ("rst_b", "o") else "a"


class TwoDomains(Elaboratable):
    """Domains a and b on ports clk_a/rst_a, clk_b/rst_b; ``build(m, self)`` adds the logic under test
    between input ``i`` (domain a) and output ``o`` (domain b)."""

    def __init__(self, build):
        self.build = build
        self.i = Signal(8)
        self.o = Signal(8)
        self.clocks = [Signal(name=n) for n in ("clk_a", "rst_a", "clk_b", "rst_b")]

    def elaborate(self, platform):
        m = Module()
        m.domains.a = ClockDomain()
        m.domains.b = ClockDomain()
        clk_a, rst_a, clk_b, rst_b = self.clocks
        m.d.comb += [ClockSignal("a").eq(clk_a), ResetSignal("a").eq(rst_a),
                     ClockSignal("b").eq(clk_b), ResetSignal("b").eq(rst_b)]
        self.build(m, self)
        return m


def crossings_of(build, platform=True):
    design = TwoDomains(build)
    ports = [design.i, design.o, *design.clocks]
    if platform:
        text = amaranth_verilog.convert(design, name="top", ports=ports, platform=CdcPlatform("top"),
                                        emit_src=False)
    else:
        text = amaranth_verilog.convert(design, name="top", ports=ports, emit_src=False)
    netlist = read_netlist(text, "top")
    return text, netlist, find_crossings(netlist, CLOCKS, port_domain)


def direct(m, d):
    src = Signal(8)
    m.d.a += src.eq(d.i)
    m.d.b += d.o.eq(src)


def enable_from_other_domain(m, d):
    en = Signal()
    m.d.a += en.eq(d.i[0])
    with m.If(en):
        m.d.b += d.o.eq(d.o + 1)


def ram_address_from_writer(m, d):
    mem = m.submodules.mem = Memory(shape=8, depth=16, init=[])
    wr, rd = mem.write_port(domain="a"), mem.read_port(domain="b")
    addr = Signal(4)
    m.d.a += addr.eq(addr + 1)
    m.d.comb += [wr.addr.eq(addr), wr.data.eq(d.i), wr.en.eq(1), rd.addr.eq(addr)]
    m.d.b += d.o.eq(rd.data)


def synchronized(m, d):
    src = Signal(8)
    m.d.a += src.eq(d.i)
    m.submodules.sync = FFSynchronizer(src, d.o, o_domain="b")


def through_async_fifo(m, d):
    fifo = m.submodules.fifo = AsyncFIFO(width=8, depth=8, w_domain="a", r_domain="b")
    m.d.comb += [fifo.w_data.eq(d.i), fifo.w_en.eq(1), fifo.r_en.eq(1)]
    m.d.b += d.o.eq(fifo.r_data)


def logic_before_synchronizer(m, d):
    src = Signal(8)
    m.d.a += src.eq(d.i)
    m.submodules.sync = FFSynchronizer(src ^ (src >> 1), d.o, o_domain="b")   # sampled through an XOR


@pytest.mark.parametrize("build,start", [(direct, "src"), (enable_from_other_domain, "en"),
                                         (ram_address_from_writer, "addr"), (logic_before_synchronizer, "src")])
def test_unsynchronized_crossings_are_flagged(build, start):
    _, _, crossings = crossings_of(build)
    bad = [c for c in crossings if c.via is None]
    assert [(c.start_domain, c.end_domain) for c in bad] == [("a", "b")]
    assert bad[0].start.endswith(start)


def test_ff_synchronizer_passes_only_when_marked():
    text, _, crossings = crossings_of(synchronized)
    assert [(c.endpoint, c.via) for c in crossings] == [("sync.stage0", "synchronizer")]
    assert re.search(rf'\\{re.escape(ATTR_MAX_DELAY)}\s*=\s*"2.000"', text)
    # Without the platform hook (the kernel before this change) the same flops are an unmarked crossing.
    _, _, plain = crossings_of(synchronized, platform=False)
    assert [(c.endpoint, c.via) for c in plain] == [("sync.stage0", None)]


def test_async_fifo_passes_through_synchronizers_and_its_ram():
    text, netlist, crossings = crossings_of(through_async_fifo)
    assert all(c.via is not None for c in crossings), crossings
    vias = {c.via for c in crossings}
    assert vias == {"synchronizer", "RAM fifo.storage"}
    ends = {c.endpoint for c in crossings if c.via == "synchronizer"}
    assert {"fifo.produce_cdc.stage0", "fifo.consume_cdc.stage0", "fifo.rst_cdc.stage0"} <= ends
    assert [(r.path, r.memory, r.write_clock, r.read_clock) for r in find_dual_clock_rams(text, "top")] == \
        [("fifo", "storage", "a_clk", "b_clk")]
    names = check_constraint_names(cdc_tcl(text, "top", CLOCK_NETS), netlist)
    assert names["empty"] == []
    assert "fifo/storage_reg/O" in names["constrained"]
    assert {f"fifo/produce_cdc/stage0_reg[{i}]" for i in range(4)} <= set(names["constrained"])
    assert "fifo/rst_cdc/stage1_reg/PRE" in names["constrained"]


def test_max_input_delay_is_honoured():
    def build(m, d):
        m.submodules.sync = FFSynchronizer(d.i, d.o, o_domain="b", max_input_delay=1.5e-9)
    design = TwoDomains(build)
    text = amaranth_verilog.convert(design, name="top", ports=[design.i, design.o, *design.clocks],
                                    platform=CdcPlatform("top"))
    assert [(s.path, s.stages, s.delay, s.kind) for s in find_synchronizers(text, "top")] == \
        [("sync", ["stage0", "stage1"], "1.500", "ff")]


# -- the kernel --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kernel():
    params = BuildParams(lanes=4, log_core=4, channels=2)
    text = catalog.verilog_of(VitisKernel(params), regmap.KERNEL_NAME)
    netlist = read_netlist(text, regmap.KERNEL_NAME)
    return text, netlist, find_crossings(netlist, VitisKernel.CLOCKS, VitisKernel.port_domain)


def test_kernel_crossings_are_all_synchronized(kernel):
    _, _, crossings = kernel
    assert crossings and all(c.via is not None for c in crossings), [c for c in crossings if c.via is None]
    assert {(c.start_domain, c.end_domain) for c in crossings} == {("dma", "ntt"), ("ntt", "dma")}
    # Outside the FIFOs, the run and its pass cross once as one value and each start as a pulse: in the
    # sequencer and in the DMA (its pass state), two synchronizers each; the status record's NTT cycle
    # counts come back once.
    ends = {c.endpoint for c in crossings if c.via == "synchronizer" and "_fifo" not in c.endpoint}
    assert ends == {"core.ntt.run_sync.stage0", "core.ntt.start_sync.ff_sync.stage0", "core.ntt.cycles_sync.stage0",
                    "core.ntt.dma.sync_state.stage0", "core.ntt.dma.sync_start.ff_sync.stage0"}
    assert any(c.via.startswith("RAM ") for c in crossings)


def test_kernel_constraint_names_exist(kernel):
    text, netlist, crossings = kernel
    tcl = cdc_tcl(text, regmap.KERNEL_NAME, VitisKernel.CLOCK_NETS)
    names = check_constraint_names(tcl, netlist)
    assert names["empty"] == []
    constrained = {re.sub(r"_reg(\[\d+\])?(/\w+)?$", "", c) for c in names["constrained"]}
    for c in crossings:
        target = c.endpoint if c.via == "synchronizer" else c.via[4:]
        assert target.replace(".", "/") in constrained, c
    # A name that is not in the netlist is reported.
    broken = tcl.replace("{core/ntt/run_sync}", "{core/ntt/run_synchronizer}")
    assert broken != tcl
    assert any("run_synchronizer" in q for q in check_constraint_names(broken, netlist)["empty"])


def test_check_crossings_script_reports_ok(tmp_path):
    r = subprocess.run([sys.executable, "-m", "nantucket.tools.check_crossings", "--workdir",
                        str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("CROSSINGS OK")
    bad = subprocess.run([sys.executable, "-m", "nantucket.tools.check_crossings", "--lanes", "3"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1



def test_slr_plan_names_exist_and_place_every_block_once(kernel):
    from nantucket.hw.flow.slr_plan import DEVICE, plan, slr_tcl
    from nantucket.hw.engine import NttEngine
    _, netlist, _ = kernel
    params = BuildParams(lanes=4, log_core=4, channels=2)
    names = check_constraint_names(slr_tcl(params), netlist)
    assert names["empty"] == []
    placed = [p.split(" ", 1)[1] for p in names["placed"]]
    assert len(placed) == len(set(placed))
    lanes = sorted(p for p in placed if re.fullmatch(r"core/ntt/engine/lane\d+", p))
    assert lanes == sorted(f"core/ntt/engine/lane{i}" for i in range(params.lanes))
    assert "core/ntt/dma" in placed and "core/ntt/engine/twiddles" in placed
    assert any(p.startswith("pblock_dynamic_SLR0 core/ntt/dma") for p in names["placed"])   # next to the HBM
    # The multiply/reduce units placed are the engine's, and the default build fits each SLR's DSPs.
    for p in (params, BuildParams(), BuildParams.default_for("babybear")):
        units, engine = plan(p).mul_units, NttEngine(p)
        assert units[0] + units[1] == engine.mul_units
        assert plan(p).dsp(0) + plan(p).dsp(1) == engine.dsp_tiles
    assert max(plan(BuildParams()).dsp(s) for s in (0, 1)) <= DEVICE["DSP48E2"]
    # a 31-bit lane: k - 1 general butterflies (the last stage's twiddle is 1) and the output scale's four
    # units (which serve the coset too), 2 DSP48E2 each (Montgomery, R = 2^32: two 26 x 17 tiles)
    baby = BuildParams.default_for("babybear")
    assert plan(baby).dsp(0) == baby.lanes // 2 * 2 * (baby.log_core - 1 + 4)
