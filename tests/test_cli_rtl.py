"""`nantucket rtl` and `nantucket synth` (host/cli_rtl.py)."""

import json

from nantucket.host.cli import main


def test_rtl_writes_verilog(tmp_path, capsys):
    out = tmp_path / "bf.v"
    assert main(["rtl", "--component", "butterfly", "-o", str(out)]) == 0
    text = out.read_text()
    assert "module butterfly(" in text and "o_w_pass" in text
    assert "Wrote butterfly" in capsys.readouterr().out


def test_rtl_block_parameters(tmp_path):
    """Free-form --NAME VALUE pairs reach the block's constructor (dashes become underscores)."""
    a, b = tmp_path / "a.v", tmp_path / "b.v"
    assert main(["rtl", "--component", "lane", "--log-core", "2", "-o", str(a)]) == 0
    assert main(["rtl", "--component", "lane", "--log_core=3", "-o", str(b)]) == 0
    assert a.read_text() != b.read_text()


def test_rtl_bad_input(tmp_path, capsys):
    assert main(["rtl", "--component", "nope", "-o", str(tmp_path / "x.v")]) == 2
    assert "unknown block" in capsys.readouterr().err
    assert main(["rtl", "--component", "modadd", "--width", "3", "-o", str(tmp_path / "x.v")]) == 2
    assert "width" in capsys.readouterr().err
    assert main(["rtl", "--component", "modadd", "-o", str(tmp_path / "x.v"), "--dangling"]) == 2


def test_synth_json(tmp_path, capsys):
    assert main(["synth", "--component", "modsub", "--workdir", str(tmp_path), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["DSP48E2"] == 0 and r["LUT"] > 64 and r["FF"] >= 128
    assert set(r) >= {"DSP48E2", "LUT", "FF", "BRAM", "URAM", "cells"}


def test_synth_table(tmp_path, capsys):
    assert main(["synth", "--component", "modadd", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "DSP48E2" in out and "modadd" in out


_HIER_STAT = """
=== top ===

        +----------Local Count, excluding submodules.
        |
       23 cells
        3   FDRE
        2   LUT2
        2 submodules
        2   nt_unit

=== nt_unit ===

        +----------Local Count, excluding submodules.
        |
       11 cells
        1   DSP48E2
       10   FDRE

=== design hierarchy ===

        +----------Count including submodules.
        |
       27 cells
        2   DSP48E2
       23   FDRE
        2   LUT2
        2 submodules
        2   nt_unit
"""


def test_parse_stat_hierarchical_uses_the_totals():
    from nantucket.hw.flow.synth import parse_stat
    counts = parse_stat(_HIER_STAT)
    # the totals: top's own cells plus two instances of nt_unit, not the sum of every listing
    assert counts["DSP48E2"] == 2 and counts["FDRE"] == 3 + 2 * 10 and counts["LUT2"] == 2
    assert "nt_unit" not in counts
