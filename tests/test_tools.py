"""nantucket.tools without a checkout to write into (installed from a wheel): a doc section goes to
stdout with its markers and no file is written, a picture only into the --out given, coverage refuses
(docs/build.md, "The tools"). tests/test_imports.py runs the same from an installed wheel; these run the
choices in-process, with the checkout's paths taken away."""

import os

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


def test_importing_a_tool_changes_no_environment():
    # A tool that set NANTUCKET_SIM_OPT=-O2 at import made every pytest worker (which imports every test
    # module while collecting) compile the suite's Verilator models at -O2; the long-run tools set it in main().
    import pkgutil
    import subprocess
    import sys

    import nantucket.tools as tools

    names = [m.name for m in pkgutil.iter_modules(tools.__path__) if m.name != "__main__"]
    probe = ("import importlib, os, sys; before = dict(os.environ)\n"
             "for name in sys.argv[1:]:\n"
             "    importlib.import_module('nantucket.tools.' + name)\n"
             "    changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))\n"
             "    assert not changed, f'importing nantucket.tools.{name} changed {changed}'\n")
    env = {k: v for k, v in os.environ.items() if k != "NANTUCKET_SIM_OPT"}
    result = subprocess.run([sys.executable, "-c", probe, *names], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1]
