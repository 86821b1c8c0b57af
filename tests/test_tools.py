"""nantucket.tools without a checkout to write into (installed from a wheel): a doc section goes to
stdout with its markers and no file is written, a picture only into the --out given, coverage refuses
(docs/build.md, "The tools"). tests/test_imports.py runs the same from an installed wheel; these run the
choices in-process, with the checkout's paths taken away."""

from nantucket.tools import coverage, draw_diagrams, perfdoc, regmap_doc


def test_update_section_without_a_doc_prints_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert perfdoc.update_section("probe", "| a |\n", doc=None) is None
    out = capsys.readouterr()
    assert out.out == "<!-- begin probe -->\n| a |\n<!-- end probe -->\n"
    assert "nothing written" in out.err
    assert list(tmp_path.iterdir()) == []


def test_update_section_with_a_doc_replaces_only_its_section(tmp_path):
    doc = tmp_path / "perf.md"
    doc.write_text("# T\n\n<!-- begin a -->\nold a\n<!-- end a -->\n\n<!-- begin b -->\nold b\n<!-- end b -->\n")
    assert perfdoc.update_section("a", "new a", doc=doc) == doc
    assert perfdoc.update_section("c", "new c", doc=doc) == doc
    assert doc.read_text() == ("# T\n\n<!-- begin a -->\nnew a\n<!-- end a -->\n\n<!-- begin b -->\nold b\n"
                               "<!-- end b -->\n\n<!-- begin c -->\nnew c\n<!-- end c -->\n")


def test_the_checkout_is_found_from_the_tools_folder():
    root = perfdoc.checkout()
    assert root is not None and (root / "scripts" / "perfdoc.py").samefile(perfdoc.__file__)
    assert perfdoc.DOC == root / "docs" / "performance.md" == perfdoc.doc_path("docs/performance.md")


def test_regmap_doc_without_a_doc_prints_the_block(capsys, monkeypatch):
    monkeypatch.setattr(regmap_doc, "DOC", None)
    assert regmap_doc.main([]) == 0
    assert capsys.readouterr().out == regmap_doc.section() + "\n"


def test_regmap_doc_names_a_missing_doc(tmp_path, capsys):
    assert regmap_doc.main(["--doc", str(tmp_path / "none.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "none.md" in err[0]


def test_draw_diagrams_without_a_checkout_needs_out(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(draw_diagrams, "IMG", None)
    assert draw_diagrams.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--out" in err[0]


def test_coverage_without_a_checkout_refuses(capsys, monkeypatch):
    monkeypatch.setattr(coverage, "REPO", None)
    assert coverage.main(["--reuse"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checkout" in err[0]
