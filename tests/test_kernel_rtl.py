"""The kernel top as Vitis packages it: port names, lint, and the engine/twiddle blocks' lint."""

import re

import pytest

from nantucket.hw.flow import catalog
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.runner import lint_verilog

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

SMALL = BuildParams(lanes=4, log_core=4, channels=4)
# Amaranth's Verilog backend emits `case` statements without `default` for signals that are assigned
# only in some FSM states, after assigning their default value first: complete logic, which Verilator
# still reports as CASEINCOMPLETE. `interrupt` is a reserved word in SystemVerilog; Vitis wants it.
WAIVE = ("CASEINCOMPLETE",)


@pytest.fixture(scope="module")
def kernel_verilog():
    return catalog.emit_verilog("kernel", params=SMALL)


def _ports(verilog: str, top: str) -> dict[str, str]:
    body = verilog[verilog.index(f"module {top}("):]
    body = body[:body.index("endmodule")]
    return {name: d for d, name in re.findall(r"^\s*(input|output)\s+(?:\[[^\]]*\]\s*)?(\w+);", body, re.M)}


def test_vitis_port_names(kernel_verilog):
    ports = _ports(kernel_verilog, "kernel")
    for clk in ("ap_clk", "ap_rst_n", "ap_clk_2", "ap_rst_n_2"):
        assert ports.get(clk) == "input", clk
    assert ports.get("interrupt") == "output"
    for ch in range(SMALL.channels):
        prefix = R.master_port(ch)
        for sig, d in (("awvalid", "output"), ("awready", "input"), ("wdata", "output"), ("wlast", "output"),
                       ("bvalid", "input"), ("araddr", "output"), ("rdata", "input"), ("rlast", "input")):
            assert ports.get(f"{prefix}_{sig}") == d, f"{prefix}_{sig}"
    for sig, d in (("awaddr", "input"), ("wdata", "input"), ("rdata", "output"), ("bresp", "output")):
        assert ports.get(f"{R.CONTROL_PORT}_{sig}") == d
    # Vitis infers interfaces from single-underscore names only
    assert not [p for p in ports if "__" in p]


def test_kernel_lint(kernel_verilog):
    lint_verilog(kernel_verilog, "kernel", waive=WAIVE + ("SYMRSVDWORD",))


@pytest.mark.parametrize("name", ["twiddles", "engine"])
def test_block_lint(name):
    lint_verilog(catalog.emit_verilog(name, params=SMALL), name, waive=WAIVE)


@pytest.mark.full
def test_default_kernel_lint_and_one_module_per_repeated_block():
    """The default build (16 lanes, k = 12, 32 channels) as `nantucket rtl` / the Vitis build emit it."""
    params = BuildParams()
    text = catalog.emit_verilog("kernel", params=params)
    modules = re.findall(r"^module (\S+)\(", text, re.M)
    for name in (f"nt_lane_k{params.log_core}", "nt_butterfly", "nt_mulreduce"):
        assert modules.count(name) == 1, name
    assert len(re.findall(rf"^\s*nt_lane_k{params.log_core} \S+ \(", text, re.M)) == params.lanes
    assert set(_ports(text, "kernel")) >= {f"{R.master_port(c)}_araddr" for c in range(params.channels)}
    lint_verilog(text, "kernel", waive=WAIVE + ("SYMRSVDWORD",))
