"""hw.control.ControlSlave: parameter checks, lint, synthesis and the cocotb/Verilator bench
(sim/benches/control.py: register-map conformance, start/done/interrupt, ap_start while busy, bad_size, bad_align,
pointer latching, WSTRB, raw AW/W orders, random AXI-Lite backpressure) for 4 and 32 channels."""

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.flow import catalog
from nantucket.hw.control import READ_GROUP, ControlSlave
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import RUN_ARGS
from nantucket.hw.flow.runner import lint_verilog, run_bench

PARAM_SETS = {
    "C4": BuildParams(lanes=4, log_core=4, channels=4),
    "C32": BuildParams(),
}


def test_parameter_errors():
    with pytest.raises(TypeError, match="params"):
        ControlSlave({"channels": 4})
    with pytest.raises(TypeError, match="params"):
        ControlSlave(None)
    with pytest.raises(ValueError, match="channels"):
        catalog.build("control", channels=3)


def test_properties():
    p = PARAM_SETS["C4"]
    c = ControlSlave(p)
    Fragment.get(c, None)          # elaborates (and marks it used)
    assert c.params is p and c.channels == 4
    assert c.register_map.params == p
    assert c.supported_log_n == R.RegisterMap(p).supported_log_n
    lo, hi = p.min_log_n, p.max_log_n
    assert (lo, hi) == (4, 8)                 # L4 C4: 2^(4/2) = 4 rows per pass at the least; 2k = 8
    assert [v for v in range(0, 12) if c.log_n_supported(v)] == list(range(lo, hi + 1))
    for v in (1 << 31, (1 << 32) - 1, 256 + lo):
        assert not c.log_n_supported(v)
    assert c.read_latency >= 1 and c.write_latency >= 1
    sig = c.signature.members
    assert sig["axil"].signature.addr_width == R.ADDRESS_BITS
    assert sig["axil"].signature.data_width == R.DATA_BITS
    assert sig["base"].shape.size == 64 * p.channels


@pytest.mark.parametrize("tag", sorted(PARAM_SETS))
def test_lint(tag):
    # "interrupt" is a C++ word Verilator warns about; Vitis needs the name on the kernel top anyway.
    lint_verilog(catalog.emit_verilog("control", params=PARAM_SETS[tag]), "control", waive=("SYMRSVDWORD",))


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
def test_synthesizes(tmp_path):
    from nantucket.hw.flow.synth import synthesize
    r = synthesize("control", PARAM_SETS["C32"].as_dict(), tmp_path, quiet=True)
    assert r["DSP48E2"] == 0 and r["BRAM"] == 0 and r["URAM"] == 0
    p = PARAM_SETS["C32"]
    assert 0 < r["LUT"] < 5000
    # the argument words are the only wide state: no second copy of the pointers or the scalars
    # log_n, hbm_NN lo/hi, flags, batch, coset_shift_lo/hi, the status record's pointer lo/hi, row_step_lo/hi
    words = 1 + 2 * p.channels + 4 + 2 + 2
    # plus the commitment's argument words: foreign to an NTT-only build, each compared whole against reset
    words += sum(len(a.words) for a in RUN_ARGS if "ntt" not in a.ops)
    rmap = R.RegisterMap(p)
    # plus the start checks' four register stages (issue 28): a few bits per supported size (size, batch
    # bound, input and chain pairs, their AND), and the registers' bits ORed or compared in groups
    checks = 6 * len(rmap.supported_log_n) + 100
    # plus the decoded run's row step, registered once: the source of its crossing to the ntt domain (a
    # synchronizer's source must be a flop, tests/test_crossings.py)
    crossing = 64
    # plus the read pipeline (issue 28): a 32-bit word per group of READ_GROUP words that holds a register
    # (CTRL and the interrupt registers, the arguments, the ID block), a hit bit each, the word index
    readable = {R.CTRL, R.GIER, R.IP_IER, R.IP_ISR} | {o for a in rmap.args for o in a.word_offsets} \
        | {rmap.id_offset(n) for n in R.ID_REGISTERS}
    groups = len({(o >> 2) // READ_GROUP for o in readable})
    reads = 33 * groups + 16
    # plus the write address decode (issue 28): a flop per writable word, four per two address bits
    writes = (len(readable) - len(R.ID_REGISTERS)) + 4 * ((R.ADDRESS_BITS - 2 + 1) // 2)
    assert 32 * words <= r["FF"] < 32 * words + 200 + checks + crossing + reads + writes


@pytest.mark.parametrize("tag", sorted(PARAM_SETS))
def test_bench(tag):
    p = PARAM_SETS[tag]
    run_bench(ControlSlave(p), name="control", params=p.as_dict(), test_module="nantucket.sim.benches.control")
