"""The simulation runner itself: build, cache, facts, and a failing bench must fail."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from amaranth.hdl import Fragment

from nantucket.hw.flow import runner
from nantucket.hw.flow.build_root import build_base, checkout_root
from nantucket.hw.flow.runner import REPO_ROOT, build_dir_for, component_props, param_tag, run_bench
from nantucket.sim.smoke import SmokeDelay


def test_param_tag():
    assert param_tag({}) == "default"
    assert param_tag({"width": 8, "latency": 3}) == "latency3_width8"


def test_checkout_builds_under_its_build_folder():
    """In the repository (this test's checkout), builds stay in build/sim, where the Makefile looks."""
    repo = Path(__file__).resolve().parent.parent
    assert checkout_root() == repo
    assert build_base({"HOME": "/nowhere"}) == repo / "build"
    if not os.environ.get("NANTUCKET_BUILD_DIR"):
        assert runner.BUILD_ROOT == repo / "build" / "sim"


def test_build_folder_outside_a_checkout(tmp_path):
    """A package folder without the project's pyproject.toml beside it (an installed wheel, or another
    project's pyproject.toml) builds in the XDG cache; NANTUCKET_BUILD_DIR overrides every choice."""
    installed = tmp_path / "site-packages" / "nantucket"
    (installed / "sim").mkdir(parents=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    home = {"HOME": str(tmp_path / "home")}
    for parent in (installed, other):
        assert checkout_root(parent) is None
        assert build_base(home, parent) == tmp_path / "home" / ".cache" / "nantucket"
        assert build_base(dict(home, XDG_CACHE_HOME=str(tmp_path / "xdg")), parent) == tmp_path / "xdg" / "nantucket"
        # a relative XDG_CACHE_HOME is invalid (XDG base directory rule) and ignored
        assert build_base(dict(home, XDG_CACHE_HOME="rel"), parent) == tmp_path / "home" / ".cache" / "nantucket"
    repo = Path(__file__).resolve().parent.parent
    for parent in (installed, repo):
        assert build_base(dict(home, NANTUCKET_BUILD_DIR=str(tmp_path / "b")), parent) == tmp_path / "b"
        assert build_base(dict(home, NANTUCKET_BUILD_DIR=""), parent) == build_base(home, parent)  # empty: unset


def test_component_props():
    dut = SmokeDelay(width=5, latency=3)
    Fragment.get(dut, None)            # elaborated: no "created but never used" warning
    props = component_props(dut)
    assert props["latency"] == 3 and props["width"] == 5


@pytest.mark.parametrize("latency", [1, 3])
def test_smoke_bench(latency):
    params = {"width": 8, "latency": latency}
    run_bench(SmokeDelay(**params), name="smoke", params=params, test_module="nantucket.sim.benches.smoke")
    assert (build_dir_for("smoke", params) / ".nantucket-build-hash").exists()


def test_wrong_latency_fails():
    """The bench must notice a pipeline that is not as deep as claimed (no test that cannot fail)."""
    params = {"width": 8, "latency": 3}
    with pytest.raises(AssertionError, match="cocotb tests failed"):
        run_bench(SmokeDelay(**params), name="smoke", params=params, test_module="nantucket.sim.benches.smoke",
                  facts={"props": {"width": 8, "latency": 2}}, testcase="test_delay")


# -- builds that a kill cannot break -----------------------------------------------------------------

KILL_PARAMS = {"width": 8, "latency": 2}
_BUILD_IN_CHILD = """
import sys
from pathlib import Path
import nantucket.hw.flow.runner as r
from nantucket.sim.smoke import SmokeDelay
r.BUILD_ROOT = Path(sys.argv[1])
r.build(SmokeDelay(width=8, latency=2), name="smoke", params={"width": 8, "latency": 2})
"""


def _proc_stat(pid: int):
    """(state, ppid, comm) of a live process, or None."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), comm


def _descendants(root: int) -> dict[int, str]:
    children: dict[int, list[int]] = {}
    comms = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _proc_stat(int(entry))):
            children.setdefault(st[1], []).append(int(entry))
            comms[int(entry)] = st[2]
    out, todo = {}, [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out[c] = comms[c]
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    st = _proc_stat(pid)
    return st is not None and st[0] != "Z"


@pytest.fixture
def build_root(monkeypatch):
    """A fresh BUILD_ROOT inside the repository (where the runner's log lines expect it), with an empty
    model cache of its own (inherited by child processes), so its builds really build."""
    (REPO_ROOT / "build").mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="test-runner-", dir=REPO_ROOT / "build"))
    monkeypatch.setattr(runner, "BUILD_ROOT", root)
    monkeypatch.setenv("NANTUCKET_CACHE_DIR", str(root / "cache"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_killed_build_leaves_no_compiler_and_no_broken_cache(build_root):
    """kill -9 of the building process mid-compile: its make/g++ die with it; a build directory left
    with truncated, newer-than-source outputs is rebuilt from scratch, not reused; the leftovers of the
    killed build are swept."""
    proc = subprocess.Popen([sys.executable, "-c", _BUILD_IN_CHILD, str(build_root)], cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not any(c in ("make", "cc1plus") for c in _descendants(proc.pid).values()):
            assert proc.poll() is None and time.monotonic() < deadline, "the build never reached make"
            time.sleep(0.05)
        tree = _descendants(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {p: c for p, c in tree.items() if _alive(p)}
    for p in left:                                   # do not leave them running for the next test
        os.kill(p, signal.SIGKILL)
    assert not left, f"processes of the killed build still running: {left}"

    # What a SIGKILL of the whole group can leave: no stamp, truncated outputs dated after their sources
    # (make would call them up to date). Where the old runner built in place, this is that directory.
    bdir = build_dir_for("smoke", KILL_PARAMS)
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / runner.STAMP).unlink(missing_ok=True)
    future = time.time() + 3600
    for name in ("smoke", "Vtop__ALL.a", "Vtop__ALL.o", "Vtop__pch.h.fast.gch", "Vtop__pch.h.slow.gch"):
        (bdir / name).write_bytes(b"")
        os.utime(bdir / name, (future, future))
    run_bench(SmokeDelay(**KILL_PARAMS), name="smoke", params=KILL_PARAMS, test_module="nantucket.sim.benches.smoke")
    assert sorted(p.name for p in bdir.parent.iterdir() if not p.name.endswith(".lock")) == [bdir.name]


def test_failed_build_names_its_log_and_caches_nothing(build_root):
    params = {"width": 8, "latency": 1}
    with pytest.raises(runner.SimBuildFailed, match="log: ") as e:
        runner.build(SmokeDelay(**params), name="smoke", params=params, extra_args=("--no-such-option",))
    log = Path(str(e.value).split("log: ")[1].split(";")[0])
    assert log.is_file() and "no-such-option" in log.read_text()
    assert not build_dir_for("smoke", params).exists()
    assert not [p for p in (build_root / "smoke").iterdir() if p.name.startswith(".building-")]


def test_sweep_removes_only_dead_owners_scratch(tmp_path):
    from nantucket.hw.flow.scratch import scratch_dir, sweep_stale
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for pid in (dead.pid, os.getpid(), os.getppid()):
        (tmp_path / f"nantucket-x-{pid}-abc").mkdir()
    (tmp_path / f"nantucket-y-{dead.pid}-abc").mkdir()          # another prefix: not this sweep's
    assert sweep_stale(tmp_path, "nantucket-x-") == [tmp_path / f"nantucket-x-{dead.pid}-abc"]
    with scratch_dir("nantucket-y-", tmp_path) as mine:
        assert Path(mine).name.startswith(f"nantucket-y-{os.getpid()}-")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [f"nantucket-x-{os.getpid()}-abc", f"nantucket-x-{os.getppid()}-abc", Path(mine).name])
