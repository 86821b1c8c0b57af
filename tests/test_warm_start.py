"""The warm start (hw/flow/runner.py): a model whose component the class and parameters determine is
found by a digest of the package's gateware sources, without emitting Verilog; that digest depends on
the sources' content and relative paths only (two copies at different paths share the cache), and any
change to a gateware source misses."""

import shutil
from pathlib import Path

import pytest

from nantucket.hw.flow import runner
from nantucket.sim.smoke import SmokeDelay


def _copy_sources(dest: Path) -> Path:
    for folder in runner.GATEWARE_FOLDERS:
        shutil.copytree(runner.REPO_ROOT / folder, dest / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_two_copies_at_different_paths_share_the_key_and_any_source_change_misses(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "_SOURCES", {})
    a = _copy_sources(tmp_path / "a")
    b = _copy_sources(tmp_path / "deeper" / "checkout b")
    assert runner.source_digest(a) == runner.source_digest(b) == runner.source_digest(runner.REPO_ROOT)
    comp, params = SmokeDelay(width=8, latency=3), {"width": 8, "latency": 3}
    key = runner.quick_key(comp, "smoke", params, "recipe", root=a)
    assert key == runner.quick_key(comp, "smoke", params, "recipe", root=b)
    assert key != runner.quick_key(comp, "smoke", {"width": 8, "latency": 4}, "recipe", root=a)
    assert key != runner.quick_key(comp, "smoke", params, "another recipe", root=a)
    # a one-byte change in any gateware file of either folder, and a new file, give another digest
    sources = sorted(p for f in runner.GATEWARE_FOLDERS for p in (b / f).rglob("*.py"))
    before = runner.source_digest(b)
    for i, path in enumerate((sources[0], sources[len(sources) // 2], sources[-1])):
        path.write_bytes(path.read_bytes() + b"\n")
        runner._SOURCES.clear()
        after = runner.source_digest(b)
        assert after != before, path
        before = after
    (b / "hw" / "new_block.py").write_text("X = 1\n")
    runner._SOURCES.clear()
    assert runner.source_digest(b) != before


def test_a_cached_model_is_found_without_verilog_and_a_source_change_emits_again(tmp_path, monkeypatch):
    monkeypatch.setenv("NANTUCKET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "BUILD_ROOT", tmp_path / "run")
    monkeypatch.setattr(runner, "_SOURCES", {})
    emitted = []
    real_emit = runner.emit_verilog
    monkeypatch.setattr(runner, "emit_verilog", lambda *a, **k: emitted.append(a[1]) or real_emit(*a, **k))
    params = {"width": 8, "latency": 5}

    def bench():
        return runner.run_bench(SmokeDelay(**params), name="smoke", params=params, params_complete=True,
                                test_module="nantucket.sim.benches.smoke", testcase="test_delay")

    bench()
    assert emitted == ["smoke"]
    model = (runner.build_dir_for("smoke", params) / "model").resolve()
    bench()                                          # found by the sources' digest: no Verilog emitted
    assert emitted == ["smoke"]
    shutil.rmtree(runner.build_dir_for("smoke", params))  # a fresh checkout: the run directory from the model
    bench()
    assert emitted == ["smoke"]
    assert (runner.build_dir_for("smoke", params) / "smoke.v").read_text() == (model / "smoke.v").read_text()
    # the same sources with one change (as another checkout's edit would give): emitted again, and
    # the unchanged Verilog still finds the one model
    monkeypatch.setattr(runner, "_SOURCES", {runner.REPO_ROOT: "0" * 64})
    bench()
    assert emitted == ["smoke", "smoke"]
    assert (runner.build_dir_for("smoke", params) / "model").resolve() == model
    # without params_complete the Verilog is always emitted
    runner.run_bench(SmokeDelay(**params), name="smoke", params=params,
                     test_module="nantucket.sim.benches.smoke", testcase="test_delay")
    assert emitted == ["smoke"] * 3
