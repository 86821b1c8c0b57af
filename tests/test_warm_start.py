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


class _Terminal(__import__("io").StringIO):
    def isatty(self):
        return True


def test_the_api_shows_the_simulated_cards_start_on_a_terminal_and_logs_it_otherwise(monkeypatch, caplog):
    import io
    import logging
    from nantucket.host.api import device as api_device
    from nantucket.host.progress import StartLines
    tty = _Terminal()
    lines = StartLines(tty)
    lines("[hw.flow.runner] building kernel_harness [x] with verilator ...")
    lines("[hw.flow.runner] building kernel_harness: 60 s elapsed")
    lines(f"[cosim] {StartLines.CONNECTED} after 61.0 s")
    lines("xrt: kernel call: 2^12 points")              # after the start: logged only
    shown = tty.getvalue().split("\r\x1b[K")
    assert [s.split(" s  ", 1)[1] for s in shown if s] == [
        "[hw.flow.runner] building kernel_harness [x] with verilator ...",
        "[hw.flow.runner] building kernel_harness: 60 s elapsed"]
    assert tty.getvalue().endswith("\r\x1b[K")           # the line is cleared once the simulator is up
    pipe = io.StringIO()
    with caplog.at_level(logging.INFO, logger="nantucket.sim"):
        StartLines(pipe)("[cosim] simulator connected after 2.0 s")
    assert pipe.getvalue() == "" and [r.getMessage() for r in caplog.records][-1].startswith("[cosim] simulator")
    # nantucket.open("sim") without progress= gets one; a progress given is kept
    seen = {}
    monkeypatch.setattr(api_device, "make_backend", lambda name, **o: seen.update(o) or (_ for _ in ()).throw(KeyError))
    with __import__("pytest").raises(KeyError):
        api_device.make_device("sim", api_device.F.DEFAULT_FIELD, 4, {})
    assert isinstance(seen["progress"], StartLines)
    with __import__("pytest").raises(KeyError):
        api_device.make_device("sim", api_device.F.DEFAULT_FIELD, 4, {"progress": False})
    assert seen["progress"] is False
