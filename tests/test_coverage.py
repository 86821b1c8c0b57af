"""scripts/coverage.py: merging coverage.dat files and mapping Verilog lines back to hw/ source lines."""

from pathlib import Path

import pytest

from nantucket.tools import coverage as C


def _point(line, page, count, span=None, o="block", toggle_of=None):
    fields = {"f": "top.v", "l": str(line), "n": "3", "t": page.split("_")[1], "page": f"{page}/top",
              "o": toggle_of or o, "h": "top"}
    if span:
        fields["S"] = span
    key = "".join(f"\x01{k}\x02{v}" for k, v in fields.items())
    return f"C '{key}' {count}"


def _design(repo: Path) -> str:
    """Yosys-style Verilog of a small block whose src names lines of hw/blk.py, sim/model.py and a
    library file outside the repository (numbers chosen for the test, not taken from any real file)."""
    hw = f"{repo}/hw/blk.py"
    lib = "/elsewhere/amaranth/hdl/_dsl.py"
    return "\n".join([
        "module top(a, y, z);",                                          # 1
        f'  (* src = "{hw}:5" *)',                                        # 2
        "  input [3:0] a;",                                               # 3
        "  wire \\$1 ;",                                                  # 4
        "  wire \\$2 ;",                                                  # 5
        "  wire \\$3 ;",                                                  # 6
        f'  (* src = "{hw}:6" *)',                                        # 7
        "  output [3:0] y;",                                              # 8
        "  reg [3:0] y;",                                                 # 9
        f'  (* src = "{hw}:7" *)',                                        # 10
        "  wire z;",                                                      # 11
        f'  assign \\$1  = a == (* src = "{hw}:10" *) 4\'h3;',            # 12: If condition, taken
        f'  assign \\$2  = a == (* src = "{hw}:12" *) 4\'h5;',            # 13: Elif condition, never taken
        f'  assign \\$3  = a + (* src = "{hw}:11|{repo}/sim/model.py:4" *) 4\'h1;',  # 14
        f'  assign z = a[0] & (* src = "{hw}:15" *) a[1];',               # 15: z toggles
        f'  (* src = "{lib}:486" *)',                                     # 16
        "  always @* begin",                                              # 17
        "    y = 4'h0;",                                                  # 18
        "    if (\\$1 ) begin",                                           # 19
        "      y = \\$3 ;",                                               # 20
        "    end else if (\\$2 ) begin",                                  # 21
        "      y = 4'h1;",                                                # 22
        "    end",                                                        # 23
        "  end",                                                          # 24
        "endmodule",                                                      # 25
    ])


def _dat(if_count, elif_count, z_toggles):
    return "\n".join([
        "# SystemC::Coverage-3",
        _point(17, "v_line", 9, span="17-18"),
        _point(19, "v_line", if_count, span="19-20", o="if"),
        _point(21, "v_line", elif_count, span="21-22", o="if"),
        _point(21, "v_line", 9, o="else"),                     # implicit else: no statements, no S
        _point(11, "v_toggle", z_toggles, toggle_of="z:0->1"),
        _point(11, "v_toggle", 0, toggle_of="z:1->0"),
        _point(3, "v_toggle", 1, toggle_of="a[0]:0->1"),
        _point(3, "v_toggle", 0, toggle_of="a[0]:1->0"),
        "",
    ])


def test_hw_lines_follow_the_points_that_ran(tmp_path):
    cov = C.Coverage(tmp_path)
    cov.add(_design(tmp_path), C.parse_dat(_dat(if_count=4, elif_count=0, z_toggles=2)))
    got = {(path, line): hit for (path, line), hit in cov.lines.items()}
    # the taken If condition and the sum its branch reads ran; the Elif condition never held;
    # the continuous assignment ran because z toggled
    assert got == {("hw/blk.py", 10): True, ("hw/blk.py", 11): True, ("hw/blk.py", 12): False,
                   ("hw/blk.py", 15): True, ("sim/model.py", 4): True}
    assert cov.figure("hw") == (3, 4)
    assert cov.figure("sim") == (1, 1)
    assert cov.uncovered("hw") == [("hw/blk.py", 12)]
    # points standing for hw/ lines: the If branch and z's assignment ran, the Elif branch did not
    assert cov.points["hw"] == [2, 3]
    assert cov.partly_covered("hw") == []
    # declarations (lines 5, 6, 7) are no code that runs; the library's src is nobody's hw/ line
    assert not any(line in (5, 6, 7) for _, line in cov.lines)


def test_a_line_with_a_point_that_never_ran_is_partly_covered(tmp_path):
    extra = _point(20, "v_line", 0, span="20", o="cond_then")    # another point on the sum's line
    cov = C.Coverage(tmp_path)
    cov.add(_design(tmp_path), C.parse_dat(_dat(if_count=4, elif_count=1, z_toggles=1) + extra + "\n"))
    assert cov.uncovered("hw") == []
    assert cov.partly_covered("hw") == [("hw/blk.py", 11)]


def test_a_wire_that_never_toggles_leaves_its_assignment_uncovered(tmp_path):
    cov = C.Coverage(tmp_path)
    cov.add(_design(tmp_path), C.parse_dat(_dat(if_count=4, elif_count=1, z_toggles=0)))
    assert cov.uncovered("hw") == [("hw/blk.py", 15)]
    # toggle points of hw/ signals: a's two (one hit) and z's two (none hit)
    assert cov.toggles["hw"] == [1, 4]


def test_merged_runs_cover_what_either_covered(tmp_path):
    first = C.parse_dat(_dat(if_count=0, elif_count=3, z_toggles=0))
    second = C.parse_dat(_dat(if_count=2, elif_count=0, z_toggles=1))
    merged = C.merge([first, second])
    assert sum(merged.values()) == sum(first.values()) + sum(second.values())
    cov = C.Coverage(tmp_path)
    cov.add(_design(tmp_path), merged)
    assert cov.figure("hw") == (4, 4)


def test_two_builds_of_one_source_line_count_it_once(tmp_path):
    cov = C.Coverage(tmp_path)
    cov.add(_design(tmp_path), C.parse_dat(_dat(if_count=0, elif_count=0, z_toggles=0)))
    assert cov.figure("hw") == (0, 4)
    cov.add(_design(tmp_path), C.parse_dat(_dat(if_count=1, elif_count=0, z_toggles=0)))
    assert cov.figure("hw") == (2, 4)


@pytest.mark.parametrize("bad", ["C 'x' many", "garbage line", "C x' 3"])
def test_a_malformed_dat_line_is_named(bad):
    with pytest.raises(ValueError, match="coverage.dat line 2"):
        C.parse_dat("# SystemC::Coverage-3\n" + bad + "\n")


def test_spans_and_src_lists():
    assert C.span_lines("12,14-16") == [12, 14, 15, 16]
    assert C._locations("a.py:3|b.py:7.2-7.9") == [("a.py", 3), ("b.py", 7)]


def test_uncovered_lines_are_grouped_by_their_function():
    source = "class A:\n    def f(self):\n        x = 1\n\n    def g(self):\n        y = 2\n"
    assert C.enclosing_function(source, 3) == "A.f"
    assert C.enclosing_function(source, 6) == "A.g"
    assert C.enclosing_function(source, 1) == "A"
    reasons = {("hw/a.py", "A.f"): "error paths"}
    assert C.reason_for("hw/a.py", "A.f", reasons) == "error paths"
    assert C.reason_for("hw/a.py", "A.g", reasons) == C.UNCLASSIFIED


def test_amaranth_src_attributes_reach_hw_lines():
    """The assumption the mapping rests on: a block emitted for a coverage build carries src attributes
    that name its own hw/ file on the Verilog lines the points are made of."""
    from nantucket.hw.flow.catalog import verilog_of
    from nantucket.hw.arith import ModAdd
    text = verilog_of(ModAdd(), "modadd", emit_src=True)
    src = C.VerilogSources(text)
    named = {C.classify(f) for n in range(1, len(src.lines) + 1) for f, _ in src.sources(n)} - {None}
    assert ("hw", "hw/arith.py") in named
    assert 'src = "' not in verilog_of(ModAdd(), "modadd")        # normal builds stay without src


def test_the_runner_switch_builds_apart(monkeypatch, tmp_path):
    from nantucket.hw.flow import runner
    monkeypatch.delenv(runner.COVERAGE_ENV, raising=False)
    plain = runner.build_dir_for("smoke", {"depth": 2})
    assert runner.coverage_dir() is None
    monkeypatch.setenv(runner.COVERAGE_ENV, str(tmp_path))
    assert runner.coverage_dir() == tmp_path.resolve()
    assert runner.coverage_dir("icarus") is None
    covered = runner.build_dir_for("smoke", {"depth": 2})
    assert covered != plain and covered.parent == plain.parent
