"""scripts/timing_estimate.py: reading Yosys' sta/ltp reports and writing only its own doc section."""

import pytest

from nantucket.tools import timing_estimate as T

# The shapes of Yosys 0.5x output (sta: endpoint first; ltp: startpoint first).
STA = """
3. Executing STA pass (static timing analysis).
Latest arrival time in 'blk' is 2100:
    2100 (<unknown>)
Warning: Critical-path does not terminate in a recognised endpoint.
           $abc$o2
    1900 $abc$lut$1 (LUT6.I0->O)
           \\a [0]
    1250 $abc$lut$2 (LUT3.I2->O)
           \\b [1]
     800 $carry$3 (CARRY4.CI->CO[3])
           \\c [0]
     303 $auto$ff.cc:1$5 (FDRE.C->Q)
       0   \\clk (<primary input>)
Warning: Endpoint blk.$x has no (* sta_arrival *) value.

Arrival histogram:
    1100 (<unknown>)
"""


def test_sta_path_counts_logic_cells_only():
    r = T.sta_path(STA)
    assert r["arrival_ps"] == 2100
    assert r["path"] == ["untimed cell", "LUT6", "LUT3", "CARRY4", "FDRE"]
    assert r["levels"] == 3
    assert T.sta_path("no timing here")["arrival_ps"] is None
    from_port = STA.replace("     303 $auto$ff.cc:1$5 (FDRE.C->Q)\n       0   \\clk (<primary input>)",
                            "       0   \\i_valid (<primary input>)")
    assert from_port != STA and T.sta_path(from_port)["path"][-1] == "input port"


def _cell(kind, **ports):
    """A netlist cell for costliest_chain: ports as name=(direction, bits)."""
    return {"type": kind, "port_directions": {p: d for p, (d, _) in ports.items()},
            "connections": {p: b for p, (_, b) in ports.items()}}


def test_costliest_chain_prices_levels_not_cells():
    """A LUT, then a carry chain of 6 CARRY4 (8 cells, cheap) against 4 LUTs and an INV (5 cells,
    dearer): the price picks the LUTs, where Yosys' ltp (most cells) picked the carries."""
    cells = {"ff0": _cell("FDRE", D=("input", [20]), Q=("output", [2])),
             "la": _cell("LUT2", I0=("input", [2]), I1=("input", ["0"]), O=("output", [3])),
             "ff1": _cell("FDRE", D=("input", [9]), Q=("output", [21])),
             "ff2": _cell("FDRE", D=("input", [14]), Q=("output", [22]))}
    for i in range(6):                  # CO of one into CI of the next: one chain
        cells[f"c{i}"] = _cell("CARRY4", CI=("input", [3 + i] if i else ["0"]), S=("input", [3]),
                               CO=("output", [4 + i]))
    for i, (a, b) in enumerate(((2, 10), (10, 11), (11, 12), (13, 14))):
        cells[f"l{i}"] = _cell("LUT6", I0=("input", [a]), O=("output", [b]))
    cells["inv"] = _cell("INV", I=("input", [12]), O=("output", [13]))
    nets = {"state_q": {"bits": [2], "hide_name": 0}, "$abc$7$n2": {"bits": [2], "hide_name": 1},
            "sum": {"bits": [14, 13], "hide_name": 0}, "total_q": {"bits": [22], "hide_name": 0}}
    netlist = {"modules": {"blk": {"cells": cells, "netnames": nets,
                                   "ports": {"i": {"direction": "input", "bits": [30]},
                                             "o": {"direction": "output", "bits": [31]}}}}}
    r = T.costliest_chain(netlist, "blk")
    lut = T.US_LOGIC_PS + T.ROUTE_PS
    assert r == {"luts": 4, "carry8": 0, "chains": 0, "start": "FDRE", "from": "state_q", "to": "total_q",
                 "ps": T.REGISTER_PS + 4 * lut + T.ROUTE_PS}
    assert T.chain_ends(r) == "FDRE `state_q` to `total_q`"      # named by the register it ends at
    # the carry chain alone: one LUT, a routed net into the chain, 6 CARRY4 = 3 CARRY8
    for i in range(4):
        del cells[f"l{i}"]
    r = T.costliest_chain(netlist, "blk")
    assert r["luts"] == 1 and r["carry8"] == 3 and r["chains"] == 1
    assert r["ps"] == T.REGISTER_PS + lut + T.ROUTE_PS + 6 * (T.CARRY8_PS // 2) + T.ROUTE_PS


def test_chains_over_lists_each_start_and_end_over_the_limit():
    """Two registers' chains of 3 LUTs and one of 1 from the same start: over a limit between the two
    prices only the long ones are listed, once per start and end net (two end bits), at their price; a
    limit above every chain lists none; costliest_chain agrees with the listing's first."""
    cells = {"ff0": _cell("FDRE", D=("input", [40]), Q=("output", [2, 3])),
             "ff1": _cell("FDRE", D=("input", [12, 13]), Q=("output", [20, 21])),
             "ff2": _cell("FDRE", D=("input", [14]), Q=("output", [22]))}
    for i, (a, b) in enumerate(((2, 10), (10, 11), (11, 12), (3, 15), (15, 16), (16, 13), (2, 14))):
        cells[f"l{i}"] = _cell("LUT4", I0=("input", [a]), O=("output", [b]))
    nets = {"count": {"bits": [2, 3], "hide_name": 0}, "total_q": {"bits": [20, 21], "hide_name": 0},
            "flag_q": {"bits": [22], "hide_name": 0}}
    netlist = {"modules": {"blk": {"cells": cells, "netnames": nets, "ports": {}}}}
    lut = T.US_LOGIC_PS + T.ROUTE_PS
    three, one = T.REGISTER_PS + 3 * lut + T.ROUTE_PS, T.REGISTER_PS + lut + T.ROUTE_PS
    over = T.chains_over(netlist, "blk", (three + one) // 2)
    assert [(c["from"], c["to"], c["luts"], c["ps"], c["bits"]) for c in over] == [("count[0]", "total_q[0]", 3, three, 2)]
    assert T.chains_over(netlist, "blk", three) == []
    assert T.chains_over(netlist, "blk", one - 1)[-1]["to"] == "flag_q"
    assert T.costliest_chain(netlist, "blk")["ps"] == over[0]["ps"]
    report = T.chains_report([{"block": "blk", "domain": "ntt", "period_ps": 2222, "over": over},
                              {"block": "other", "domain": "dma", "period_ps": 2222, "over": []}])
    assert "blk (ntt): 1 chain over 2222 ps" in report and "other (dma): no chains over 2222 ps" in report
    assert "3 LUT + 0 CARRY8" in report and "(2 end bits)" in report


def test_doc_section_replaces_only_its_own_text(tmp_path):
    doc = tmp_path / "performance.md"
    before, after = "# Performance\n\nmeasured things\n", "\n## Later section\nmore\n"
    doc.write_text(before + "\n" + T.BEGIN + "\nold table\n" + T.END + "\n" + after)
    rows = [{"block": "butterfly", "params": {}, "domain": "ntt", "period_ps": T.periods_ps(464, 300)["ntt"],
             "arrival_ps": 1000, "levels": 2,
             "path": ["FDRE", "LUT6", "LUT2", "FDRE"], "estimate_ps": 1900,
             "depth": {"luts": 2, "carry8": 0, "chains": 0}, "depth_ps": 2400}]
    T.write_doc(T.doc_section(rows, 300), doc)
    text = doc.read_text()
    assert text.startswith(before) and text.endswith(after)
    assert "old table" not in text and text.count(T.BEGIN) == 1
    assert "over 2155 by 245" in text         # the worse estimate, 2400 ps, against 464 MHz
    assert "period: 2155 ps (464 MHz) for ntt " in text and "{" not in text    # every placeholder filled
    fresh = tmp_path / "new.md"
    fresh.write_text("# Performance\n")
    T.write_doc(T.doc_section(rows, 300), fresh)
    assert fresh.read_text().startswith("# Performance\n\n" + T.BEGIN)


def test_sections_of_each_build_and_field_live_side_by_side(tmp_path):
    """The small, default and per-field sections each replace only their own text; a new one goes after
    the last timing section, before what follows it."""
    doc = tmp_path / "performance.md"
    after = "\n## Later section\nmore\n"
    doc.write_text("# P\n\n" + T.BEGIN + "\nsmall\n" + T.END + "\n" + after)
    rows = [{"block": "butterfly", "params": {"field": "babybear"}, "domain": "ntt", "period_ps": 2222,
             "arrival_ps": 1000, "levels": 2, "path": ["FDRE", "LUT6", "FDRE"], "estimate_ps": 1900,
             "depth": {"luts": 2, "carry8": 0, "chains": 0}, "depth_ps": 2000}]
    for flags in (" --field babybear", " --build default", " --field babybear"):
        T.write_doc(T.doc_section(rows, 300, "b", flags), doc)
    text = doc.read_text()
    begin_bb, end_bb = T.markers(" --field babybear")
    assert text.count(begin_bb) == 1 and text.count(T.BEGIN_DEFAULT) == 1 and "\nsmall\n" in text
    assert text.index(T.END) < text.index(begin_bb) < text.index(end_bb) < text.index("## Later section")
    assert "### The same in babybear, at the small build's parameters" in text and text.endswith(after)


def test_periods_follow_the_build_clocks():
    from nantucket.hw.model.params import BuildParams
    assert T.periods_ps(464, 300) == {"ntt": 2155, "dma": 3333}
    assert T.periods_ps(450, 450) == {"ntt": 2222, "dma": 2222}
    p = BuildParams()
    assert T.periods_ps() == T.periods_ps(p.ntt_mhz, p.dma_mhz)


def _fake_yosys(tmp_path, monkeypatch, body: str):
    """Point the estimate at a stand-in for Yosys: a Python script with ``body`` (argv[2] is the Yosys
    script), counting its runs in ``runs``."""
    import sys
    exe = tmp_path / "fake_yosys.py"
    exe.write_text("import os, signal, sys\n"
                   "runs = open('runs', 'a+'); runs.write(sys.argv[2] + '\\n'); runs.close()\n"
                   "n = len(open('runs').read().splitlines())\n"
                   "sys.stdout = open(sys.argv[sys.argv.index('-l') + 1], 'a')    # Yosys' own log\n" + body)
    monkeypatch.setattr(T, "yosys_command", lambda: [sys.executable, str(exe)])
    return lambda: (tmp_path / "runs").read_text().splitlines()


def test_a_yosys_run_killed_by_a_signal_runs_again(tmp_path, monkeypatch):
    """SIGBUS while another process rewrites YoWASP's cache: the same run again, RETRIES times at most."""
    runs = _fake_yosys(tmp_path, monkeypatch, "if n < 3: os.kill(os.getpid(), signal.SIGBUS)\n")
    assert T.run_yosys("synth_xilinx {options}", tmp_path, tmp_path / "log", "") == ""
    assert runs() == ["synth_xilinx "] * 3
    (tmp_path / "runs").unlink()
    _fake_yosys(tmp_path, monkeypatch, "os.kill(os.getpid(), signal.SIGBUS)\n")
    with pytest.raises(RuntimeError, match="yosys failed"):
        T.run_yosys("synth_xilinx {options}", tmp_path, tmp_path / "log", "")
    assert len(runs()) == T.RETRIES + 1


def test_an_abc9_exit_runs_again_with_dff(tmp_path, monkeypatch):
    """ABC9 exits without a message on some netlists: once more with -dff, which the row then names."""
    runs = _fake_yosys(tmp_path, monkeypatch,
                       "if '-dff' not in sys.argv[2]:\n"
                       "    print('2.49.14.5. Executing ABC9.'); print('Running ABC command: \"/yosys-abc\"')\n"
                       "    sys.exit(1)\n")
    assert T.run_yosys("synth_xilinx -flatten {options}", tmp_path, tmp_path / "log") == "-dff"
    assert runs() == ["synth_xilinx -flatten ", "synth_xilinx -flatten -dff"]
    # exiting in ABC with -dff too: the machine hiccup, run again (RETRIES times), then reported
    (tmp_path / "runs").unlink()
    _fake_yosys(tmp_path, monkeypatch, "print('Running ABC command: \"/yosys-abc\"'); sys.exit(1)\n")
    with pytest.raises(RuntimeError, match="yosys failed"):
        T.run_yosys("synth_xilinx {options}", tmp_path, tmp_path / "log")
    assert runs() == ["synth_xilinx "] + ["synth_xilinx -dff"] * (T.RETRIES + 1)
    # any other failure is reported, naming the log
    (tmp_path / "runs").unlink()
    _fake_yosys(tmp_path, monkeypatch, "print('ERROR: syntax'); sys.exit(1)\n")
    with pytest.raises(RuntimeError, match=str(tmp_path / "log")):
        T.run_yosys("synth_xilinx {options}", tmp_path, tmp_path / "log")
    assert len(runs()) == 1


def test_block_parameters_small_and_default_build():
    from nantucket.hw.model.params import BuildParams
    d = BuildParams()
    assert T.block_params("butterfly") == {} == T.block_params("butterfly", "default")
    assert T.block_params("lane") == {"log_core": 4} and T.block_params("lane", "default") == {"log_core": d.log_core}
    assert T.block_params("dma", "default") == {"lanes": d.lanes, "log_core": d.log_core, "channels": d.channels}
    with pytest.raises(ValueError, match="build"):
        T.block_params("dma", "large")
    # a 31-bit field: its layout needs 8 lanes on the small build, 32 on its default one; every block is told
    bb = BuildParams.default_for("babybear")
    assert T.block_params("dma", "small", "babybear") == {"lanes": 8, "log_core": 4, "channels": 4, "field": "babybear"}
    assert T.block_params("dma", "default", "babybear") == {"lanes": bb.lanes, "log_core": bb.log_core,
                                                             "channels": bb.channels, "field": "babybear"}
    assert T.block_params("lane", "small", "koalabear") == {"log_core": 4, "field": "koalabear"}
    with pytest.raises(SystemExit) as e:            # argparse: its one-line error and exit 2
        T.main(["--field", "nope"])
    assert e.value.code == 2
    assert T.main(["--blocks", "nope"]) == 2 and T.main(["--ntt-mhz", "0"]) == 2


def _check_rows(rows, periods):
    """Every row: a timed path (arrival and levels), its estimate, and the verdict against its domain's
    period in the table."""
    text = T.table(rows, T.ROUTE_PS)
    for r in rows:
        assert r["period_ps"] == periods[r["domain"]]
        assert isinstance(r["arrival_ps"], int) and r["arrival_ps"] > 0 and r["levels"] >= 0
        assert r["estimate_ps"] == r["arrival_ps"] + T.ROUTE_PS * (r["levels"] + 1)
        worst = max(r["estimate_ps"], r["depth_ps"])
        line = next(l for l in text.splitlines() if l.startswith(f"| {r['block']} |") and f" {r['domain']} |" in l)
        assert (f"fits {r['period_ps']}" in line) == (worst <= r["period_ps"])
        assert (f"over {r['period_ps']} by {worst - r['period_ps']}" in line) == (worst > r["period_ps"])
    return text


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
def test_estimate_runs_on_the_control_block_of_a_small_build(tmp_path):
    """The control slave of the small build (about 30 s): its dma-domain worst path against the period
    of the build's dma clock."""
    from nantucket.hw.model.params import BuildParams
    periods = T.periods_ps()
    rows = T.estimate(["control"], tmp_path, T.ROUTE_PS, periods)
    assert [(r["block"], r["domain"]) for r in rows] == [("control", "dma")]
    assert periods["dma"] == BuildParams().period_ps("dma")
    _check_rows(rows, periods)


@pytest.mark.full
def test_estimate_runs_on_every_block_of_the_small_build(tmp_path, capsys):
    """Every block and domain (several minutes): the command line's table, one row per block and domain."""
    periods = T.periods_ps()
    rows = T.estimate(list(T.BLOCKS), tmp_path, T.ROUTE_PS, periods)
    assert [(r["block"], r["domain"]) for r in rows] == [(b, d) for b, (_, clocks, _) in T.BLOCKS.items()
                                                         for d in clocks]
    _check_rows(rows, periods)


@pytest.mark.full          # Yosys synthesis (make test-full); make test synthesizes modadd and modsub (tests/test_cli_rtl.py)
def test_synchronizer_flops_stay_flip_flops(tmp_path):
    """Vivado keeps ASYNC_REG flops out of SRLs; the estimate's Yosys script does the same
    (KEEP_SYNCHRONIZERS), while a plain synth_xilinx packs the same 3-stage synchronizer into an SRL
    (about 10 s)."""
    import subprocess
    from amaranth.hdl import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.cdc import FFSynchronizer
    from amaranth.lib.wiring import In, Out
    from nantucket.hw.flow.catalog import verilog_of
    from nantucket.hw.flow.synth import yosys_command

    class Crossing(wiring.Component):
        i: In(1)
        o: Out(1)

        def elaborate(self, platform):
            m = Module()
            m.submodules.sync = FFSynchronizer(self.i, self.o, stages=3)
            return m
    (tmp_path / "x.v").write_text(verilog_of(Crossing(), "x"))

    def srls(keep: bool) -> int:
        script = "; ".join(filter(None, ["read_verilog x.v", T.KEEP_SYNCHRONIZERS if keep else "",
                                         "synth_xilinx -family xcup -top x -flatten -noiopad -noclkbuf",
                                         "tee -q -o count.txt select -count t:SRL*"]))
        subprocess.run(yosys_command() + ["-q", "-p", script], cwd=tmp_path, check=True, capture_output=True)
        return int((tmp_path / "count.txt").read_text().split()[0])
    assert srls(keep=False) == 1
    assert srls(keep=True) == 0
