"""The runner's per-user model cache (hw/flow/runner.py): a model built once serves every checkout, a new
design of the same flavour compiles only itself (Verilator's run-time objects are kept and copied in: this
pins verilated.mk's verilated*.o and make's up-to-date rule), a model linked in another checkout finds this
one's cocotb library, and old entries are pruned."""

import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

from nantucket.hw.flow import runner
from nantucket.sim.smoke import SmokeDelay


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty model cache; the checkout's build root under tmp_path/a (the test moves it)."""
    monkeypatch.setenv("NANTUCKET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runner, "BUILD_ROOT", tmp_path / "a")
    return tmp_path / "cache" / "verilator"


def _models(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir() and not p.name.startswith((".", runner.RUNTIME_PREFIX)))


def _compiled(model: Path) -> list[str]:
    """The objects the build of ``model`` compiled (its build.log's ``-o x.o``)."""
    words = (model / "build.log").read_text().split()
    return sorted(words[i + 1] for i, w in enumerate(words[:-1]) if w == "-o" and words[i + 1].endswith(".o"))


def _bench(latency: int) -> Path:
    params = {"width": 8, "latency": latency}
    return runner.run_bench(SmokeDelay(**params), name="smoke", params=params,
                            test_module="nantucket.sim.benches.smoke", testcase="test_delay")


def test_one_build_serves_every_checkout_and_a_new_design_compiles_only_itself(cache, tmp_path, monkeypatch):
    first = _bench(6)
    (model,) = _models(cache)
    assert "verilated.o" in _compiled(model) and "verilated_vpi.o" in _compiled(model)
    (runtime,) = cache.glob(f"{runner.RUNTIME_PREFIX}*")
    assert sorted(p.name for p in runtime.glob("*.o")) == sorted(o for o in _compiled(model) if o.startswith("verilated"))
    # the finished model keeps what a run needs, not the objects it was linked from
    assert (model / "smoke").is_file() and not list(model.glob("*.o")) and not list(model.glob("*.gch"))
    # the run directory: Verilog, digest, a link to the model, this run's own results file
    bdir = runner.build_dir_for("smoke", {"width": 8, "latency": 6})
    assert first.parent == bdir and first.name.startswith(f"{runner.RESULTS_PREFIX}{os.getpid()}-")
    assert (bdir / "model").resolve() == model.resolve()
    assert (bdir / runner.STAMP).read_text() == (model / runner.STAMP).read_text()

    # linked with the building checkout's cocotb library folder as RUNPATH, which LD_LIBRARY_PATH
    # overrides (an RPATH would not): a model built in a checkout since deleted runs on the library the
    # runner puts on LD_LIBRARY_PATH
    dynamic = subprocess.run(["readelf", "-d", str(model / "smoke")], capture_output=True, text=True,
                             check=True).stdout
    assert "(RUNPATH)" in dynamic and "(RPATH)" not in dynamic and "libcocotbvpi_verilator.so" in dynamic
    from cocotb_tools.config import libs_dir
    assert (Path(libs_dir) / "libcocotbvpi_verilator.so").is_file()

    # another checkout (another build root): the same model, nothing built
    monkeypatch.setattr(runner, "BUILD_ROOT", tmp_path / "b")
    built = (model / "smoke").stat().st_mtime_ns
    _bench(6)
    assert _models(cache) == [model] and (model / "smoke").stat().st_mtime_ns == built
    assert (tmp_path / "b" / "smoke").is_dir()

    # another design of the same flavour: its build compiles the model only, and the model works
    _bench(7)
    (new,) = [m for m in _models(cache) if m != model]
    assert not [o for o in _compiled(new) if o.startswith("verilated")]
    assert "Vtop__ALL.o" in _compiled(new)


def test_prune_removes_models_unused_for_long_unless_in_use(tmp_path):
    root = tmp_path / "verilator"
    old = time.time() - 86400 * (runner.CACHE_KEEP_DAYS + 1)
    for name in ("a" * 32, "b" * 32, "c" * 32, f"{runner.RUNTIME_PREFIX}{'d' * 32}"):
        (root / name).mkdir(parents=True)
        (root / name / runner.STAMP).write_text(name)
    for name in ("a" * 32, "c" * 32, f"{runner.RUNTIME_PREFIX}{'d' * 32}"):
        os.utime(root / name / runner.STAMP, (old, old))
    (root / ("e" * 32)).mkdir()                                 # no stamp: not a finished model
    with open(root / f".{'c' * 32}.lock", "w") as held:        # in use: left alone
        fcntl.flock(held, fcntl.LOCK_EX)
        removed = runner._prune_cache(root)
    assert sorted(p.name for p in removed) == sorted(["a" * 32, f"{runner.RUNTIME_PREFIX}{'d' * 32}"])
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["b" * 32, "c" * 32, "e" * 32]


def test_the_digest_ignores_only_the_order_of_a_module_s_ports():
    """Yosys may list a two-clock design's ports in another order in another process; instances connect
    by name, so the model is the same, and the digest must see one design. Anything else still differs."""
    a = ("module top(a, \\b$1 , dma_clk, dma_rst, ntt_clk,\n, ntt_rst, z);\n  input a;\nendmodule\n"
         "module \\top.sub (ntt_clk, dma_clk, y);\nendmodule\n")
    b = ("module top(a, \\b$1 , ntt_clk, ntt_rst, dma_clk,\n, dma_rst, z);\n  input a;\nendmodule\n"
         "module \\top.sub (dma_clk, ntt_clk, y);\nendmodule\n")
    assert a != b and runner._canonical(a) == runner._canonical(b)
    for other in (a.replace("z);", "q);"), a.replace("input a;", "input [1:0] a;"), a.replace("\\b$1 ", "\\b$2 "),
                  a.replace("\\top.sub", "\\top.other")):
        assert runner._canonical(other) != runner._canonical(a)
    # a header Yosys did not write (parameters before the ports) stays as it is
    hand = "module ram #(parameter integer DEPTH = 1) (clk, a);\nendmodule\n"
    assert runner._canonical(hand) == hand
