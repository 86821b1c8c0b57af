"""scripts/timing_estimate.py: reading Yosys' sta/ltp reports and writing only its own doc section."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("timing_estimate", REPO / "scripts" / "timing_estimate.py")
T = importlib.util.module_from_spec(spec)
spec.loader.exec_module(T)

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
LTP = """
Longest topological path in blk (length=6):
    0: \\a [1]
    1: $n1 (via $lut$1)
    2: $n2 (via $alu.slice[0].genblk1.carry4)
    3: $n3 (via $alu.slice[1].genblk1.carry4)
    4: $n4 (via $alu.slice[2].genblk1.carry4)
    5: $n5 (via $lut$2)
    6: $n6 (via $alu2.slice[0].genblk1.carry4)
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


def test_chain_depth_groups_carries():
    # 2 LUTs, 4 CARRY4 in two chains (3 + 1) -> 2 CARRY8 equivalents
    assert T.chain_depth(LTP) == {"luts": 2, "carry8": 2, "chains": 2}


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
    fresh = tmp_path / "new.md"
    fresh.write_text("# Performance\n")
    T.write_doc(T.doc_section(rows, 300), fresh)
    assert fresh.read_text().startswith("# Performance\n\n" + T.BEGIN)


def test_periods_follow_the_build_clocks():
    from nantucket.hw.model.params import BuildParams
    assert T.periods_ps(464, 300) == {"ntt": 2155, "dma": 3333}
    assert T.periods_ps(450, 450) == {"ntt": 2222, "dma": 2222}
    p = BuildParams()
    assert T.periods_ps() == T.periods_ps(p.ntt_mhz, p.dma_mhz)


def test_estimate_runs_on_the_twiddle_generator(tmp_path):
    """The block ABC9 aborted on (the sliced twiddle ROM): the estimate finishes with a timed path."""
    rows = T.estimate(["twiddles"], tmp_path, 300, T.periods_ps(450, 450))
    assert [r["domain"] for r in rows] == ["ntt"]
    assert isinstance(rows[0]["arrival_ps"], int) and rows[0]["arrival_ps"] > 0
    text = T.table(rows, 300)
    assert rows[0]["period_ps"] == 2222 and ("over 2222" in text or "fits 2222" in text)
