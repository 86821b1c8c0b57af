"""The formal proofs (hw/formal/, docs/verification.md): the quick bounded set here, the deep set marked
``full``; the runner's reporting on a design that breaks its property; and the check that no property
reaches the RTL that Vitis or Verilator builds."""

import re

import pytest
from amaranth.hdl import Assert, ClockDomain, ClockSignal, Cover, Module, ResetSignal, Signal

from nantucket.hw.formal.control import ControlHarness
from nantucket.hw.formal.props import Props
from nantucket.hw.formal.sby import rtlil_of, run_sby
from nantucket.hw.formal.suite import PROOFS, QUICK_MUTANTS, run_proof
from nantucket.hw.model.params import BuildParams

_CHECK_CELL = re.compile(r"cell \$(check|assert|assume|cover|live|fair|print)\b")
_CHECK_VERILOG = re.compile(r"\b(assert|assume|cover|restrict)\b|\$(error|fatal|display)\b")


def _failures(lines):
    return [line for line in lines if "FAILED" in line or "NOT " in line]


@pytest.mark.parametrize("proof", [p for p in PROOFS if p.quick], ids=lambda p: p.name)
def test_quick_bounded_set(proof, tmp_path):
    """Every assertion is proved (k-induction) or holds to the quick depth, each case it is about is
    reached (Cover), and the first mutants fail their assertions (the deep set runs every mutant)."""
    lines = run_proof(proof, tmp_path, deep=False, print_=lambda line: None)
    assert lines and not _failures(lines), "\n".join(_failures(lines))
    assert sum(1 for line in lines if "its mutant fails it" in line) == min(QUICK_MUTANTS, len(proof.mutants))


@pytest.mark.full
@pytest.mark.parametrize("proof", PROOFS, ids=lambda p: p.name)
def test_deep_set(proof, tmp_path):
    lines = run_proof(proof, tmp_path, deep=True, print_=lambda line: None)
    assert lines and not _failures(lines), "\n".join(_failures(lines))
    assert sum(1 for line in lines if "its mutant fails it" in line) == len(proof.mutants)


def test_dma_pass_state_before_the_fix_fails_at_4_to_1(tmp_path):
    """What the proof found in hw/dma/engine.py: with the start's toggle on the start itself (``setup`` =
    0) the zero mask, registered a dma edge later, reaches the ntt side after the start at 4 : 1; with the
    toggle on a register of the start (the engine now, ``setup`` = 1) the suite proves the crossing at
    4 : 1 (tests/test_dma_clock_ratio.py shows the hang at 3 : 1 and 4 : 1 in simulation)."""
    from nantucket.hw.formal.sync import RunCrossingHarness
    h = RunCrossingHarness(use="dma", max_period=4, timing=dict(setup=0))
    r = run_sby(tmp_path, "dma_4to1_before", rtlil_of(h, h.ports), mode="bmc", depth=16)
    assert r.status == "FAIL" and r.failed == ["value_at_start"], (r.status, r.failed, r.log)
    assert next(p for p in PROOFS if p.name == "pass_crossing_dma").kwargs["max_period"] == 4


def test_level_fifo_write_reset_of_a_cycle_of_each_clock(tmp_path):
    """Without exact_full, a write reset seen by one edge of each clock (the FIFO's promise) empties the
    FIFO: no word taken with no room after it. It failed (a counterexample at step 12) before the read
    pointer's synchronizer stages reset with the write side: the write side, out of reset before the read
    side's reset pointer had crossed back, decoded the read pointer of before the reset into its level."""
    from nantucket.hw.formal.fifo_reset import FifoResetHarness
    h = FifoResetHarness(depth=4, width=3, max_period=3, hold=0, exact_full=False)
    r = run_sby(tmp_path, "level_reset", rtlil_of(h, h.ports), mode="bmc", depth=14)
    assert r.status == "PASS", (r.status, r.failed, r.step, r.log)


def _counter_design(limit):
    """A counter 0..9 with the assertion that it stays below ``limit`` (fails for limit <= 9)."""
    m = Module()
    clk, rst = Signal(), Signal()
    m.domains.sync = ClockDomain()
    m.d.comb += [ClockSignal().eq(clk), ResetSignal().eq(rst)]
    p = Props(m)
    p.assumes("no_reset", ~rst)
    c = Signal(4)
    m.d.sync += c.eq(c + 1)
    with m.If(c == 9):
        m.d.sync += c.eq(0)
    p.asserts("below_limit", c < limit, reach=c == 9)
    return m, [clk, rst]


def test_runner_names_the_failing_property_and_its_trace(tmp_path):
    m, ports = _counter_design(limit=7)
    r = run_sby(tmp_path, "counter", rtlil_of(m, ports), mode="bmc", depth=12)
    assert r.status == "FAIL" and r.failed == ["below_limit"] and r.step == 7
    assert r.trace is not None and r.trace.suffix == ".vcd" and r.trace.exists()


def test_runner_proves_by_induction_and_reaches_the_cover(tmp_path):
    m, ports = _counter_design(limit=10)
    il = rtlil_of(m, ports)
    assert run_sby(tmp_path, "counter", il, mode="prove", depth=4).status == "PASS"
    cover = run_sby(tmp_path, "counter", il, mode="cover", depth=12)
    assert cover.status == "PASS" and cover.reached == ["below_limit_reached"]


def test_property_names_are_unique_identifiers():
    m = Module()
    p = Props(m)
    p.asserts("one", Signal())
    with pytest.raises(ValueError, match="used twice"):
        p.asserts("one", Signal())
    with pytest.raises(ValueError, match="identifier"):
        p.covers("not a name", Signal())


def test_a_wrapper_emits_checks():
    """The positive control of the next test: the formal wrappers' RTLIL has $check cells."""
    h = ControlHarness()
    assert _CHECK_CELL.search(rtlil_of(h, h.ports))


def test_kernel_rtl_has_no_properties():
    """The kernel as Vitis packages it (hw/flow/vitis.py), at a small build: no assertion, assumption,
    cover or print cell in its RTLIL, no such statement in its Verilog."""
    from amaranth.back import rtlil

    from nantucket.hw.flow import catalog
    from nantucket.hw.flow.vitis import emit_kernel_verilog
    params = BuildParams(lanes=4, log_core=4, channels=4)
    verilog = emit_kernel_verilog(params)
    assert "module nantucket" in verilog
    assert not _CHECK_VERILOG.search(re.sub(r"//[^\n]*|/\*.*?\*/|\(\*.*?\*\)", "", verilog, flags=re.S))
    component = catalog.build("kernel", lanes=params.lanes, log_core=params.log_core, channels=params.channels)
    assert not _CHECK_CELL.search(rtlil.convert(component))
