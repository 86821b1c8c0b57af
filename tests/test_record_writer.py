"""hw.record.RecordWriter: parameter checks, lint, synthesis and its cocotb/Verilator bench
(sim/benches/record.py: records under no, random and bursty stalls on AW, W and B, OKAY and error
responses)."""

import pytest

from nantucket.hw.axi import Axi4ReadSignature, Axi4WriteSignature
from nantucket.hw.flow.runner import lint_verilog, run_bench
from nantucket.hw.model.record import RECORD_BYTES
from nantucket.hw.record import RecordWriter

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")


def _writer():
    return RecordWriter(Axi4WriteSignature(addr_width=64, data_width=256))


def test_parameter_errors():
    with pytest.raises(TypeError, match="axi"):
        RecordWriter(Axi4ReadSignature())
    with pytest.raises(ValueError, match="axi"):
        RecordWriter(Axi4WriteSignature(data_width=128))


def test_bench():
    run_bench(_writer(), name="record_writer", test_module="nantucket.sim.benches.record")


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
def test_lint_and_synthesis(tmp_path):
    from amaranth.back import verilog
    from nantucket.hw.flow.synth import synthesize
    # CASEINCOMPLETE: Amaranth's FSM cases without `default` after the default assignment (complete logic;
    # tests/test_kernel_rtl.py waives it for the same reason)
    lint_verilog(verilog.convert(_writer(), name="record_writer"), "record_writer", waive=("CASEINCOMPLETE",))
    r = synthesize("record_writer", {}, tmp_path, quiet=True, component=_writer())
    assert r["DSP48E2"] == 0 and r["BRAM"] == 0 and r["URAM"] == 0
    # the latched record (8 bits a byte of it) and the burst address are the state; no DSP, no RAM
    bits = 8 * RECORD_BYTES
    assert bits <= r["FF"] < bits + 64 + 64 and 0 < r["LUT"] < 3 * bits
