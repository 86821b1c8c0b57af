"""The house's import rules: folders import one way, and no module imports itself back in a cycle.

Order (each layer may import only itself and the layers before it):
hw.model <- hw <- sim <- host <- nantucket <- scripts. Nothing imports tests. Imports inside functions
count too: a lazy import is still a dependency.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["hw.model", "hw", "sim", "host", "nantucket", "scripts"]
PROJECT = ("hw", "host", "sim", "nantucket", "scripts", "tests")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


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
            if name.split(".")[0] in PROJECT:
                found.add(name)
    return found


def _project_modules() -> dict[str, Path]:
    modules = {}
    for top in PROJECT[:-1]:
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
    graph = _graph()
    # a package's __init__ re-exporting its own submodules is not a cycle between modules
    for name in graph:
        graph[name] = {d for d in graph[name] if not (d.startswith(name + ".") and
                                                      _project_modules()[name].name == "__init__.py")}
    cycles = _cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("graph, expect", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_finder_finds_cycles(graph, expect):
    assert _cycles(graph) == expect


def test_layer_rule_sees_a_violation(tmp_path):
    # the resolver must see `from host.cli import X` in a sim module as an upward import
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from host.cli import UsageError\n")
    assert "host.cli.UsageError" in _imports(src, "sim.m")
    assert LAYERS.index(_layer("host.cli")) > LAYERS.index(_layer("sim.m"))


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
