"""The kernel top as Vitis packages it: port names, lint, and the engine/twiddle blocks' lint."""

import re

import pytest

from hw import catalog
from hw.model import regmap as R
from hw.model.params import BuildParams
from sim.runner import lint_verilog

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
