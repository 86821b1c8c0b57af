"""The library API's classes share their state through public methods and properties only.

Held over the source of host/api: no module reads or writes another class's (another object's)
``_``-prefixed member (``X._name`` with X not ``self``, ``cls`` or ``super()``: a subclass uses its base's
protected members through ``self``; dunder names allowed). The state the fronts share (an array's storage,
layout, parts, freed mark and job order; a future's array; a split call's pending sources) is public and
documented on its class. A module's own private helpers reached through the module (``M._helper`` with M
an imported module, or ``from .m import _helper``) are not an object's state and are not counted here.
"""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API_DIR = ROOT / "host" / "api"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(value: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object's own members (its class's and its bases')."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"


def private_accesses(source: str, modules=frozenset()) -> list[tuple[int, str]]:
    """(line, text) of every access to another object's private attribute in ``source`` (``modules``: the
    names bound to imported modules there, whose attributes are a module's, not an object's)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            if not (isinstance(node.value, ast.Name) and node.value.id in modules):
                found.append((node.lineno, ast.unparse(node)))
    return found


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def module_names(path: Path) -> frozenset:
    """The names host/api's module ``path`` binds to modules anywhere in it (``import numpy as np``, ``from .
    import checks as C``, a function's own ``from . import commit_device as CD``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = "nantucket.host.api".rsplit(".", node.level - 1)[0] if node.level > 1 else "nantucket.host.api"
                base = f"{package}.{base}" if base else package
            names.update(a.asname or a.name for a in node.names if _is_module(f"{base}.{a.name}"))
    return frozenset(names)


def test_no_host_api_module_reaches_into_another_objects_privates():
    paths = sorted(API_DIR.glob("*.py"))
    assert {p.name for p in paths} >= {"device.py", "multi.py", "cluster.py", "split.py", "protocol.py"}
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in paths
             for line, text in private_accesses(p.read_text(), module_names(p))]
    assert not found, f"{len(found)} private attributes of other objects used in host/api:\n" + "\n".join(found)


@pytest.mark.parametrize("source, flagged", [
    ("a._parts", ["a._parts"]),
    ("arr._store = x", ["arr._store"]),
    ("self.device._card_error(card, e)", ["self.device._card_error"]),
    ("SplitArray._numpy", ["SplitArray._numpy"]),
    ("fut._future.set_result(1)", ["fut._future"]),
    ("C._helper(x)", []),                   # C: a module (given below), its own helper
    ("self._parts = cls._where", []),
    ("super()._holders()", []),
    ("type(self).__name__", []),
    ("a.parts, a.layout.view(x)", []),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_scan_flags_other_objects_privates_only(source, flagged):
    assert [text for _, text in private_accesses(source, frozenset({"C"}))] == flagged


def test_the_modules_of_a_file_are_its_module_aliases():
    names = module_names(API_DIR / "device.py")
    assert {"C", "RS", "T", "np", "F"} <= names and not names & {"DeviceArray", "Run", "keywords_checked"}
