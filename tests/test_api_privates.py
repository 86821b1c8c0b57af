"""The library API's classes share their state through public methods and properties only.

Held over the source of host/api: no module reads or writes another class's (another object's)
``_``-prefixed member (``X._name`` with X not ``self``, ``cls`` or ``super()``: a subclass uses its base's
protected members through ``self``; dunder names allowed), another module's private helper included
(``M._helper``, ``from .m import _helper``), as host/xrt holds it (tests/test_xrt_session.py). The state the
fronts share (an array's storage, layout, parts, freed mark and job order; a future's array; a split
call's pending sources) is public and documented on its class.
"""

import ast
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


def private_accesses(source: str) -> list[tuple[int, str]]:
    """(line, text) of every access to another object's (or module's) private attribute and every private
    name imported from another module in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, f"from {node.module} import {a.name}") for a in node.names if _private(a.name))
    return found


def test_no_host_api_module_reaches_into_another_objects_privates():
    paths = sorted(API_DIR.glob("*.py"))
    assert {p.name for p in paths} >= {"device.py", "multi.py", "cluster.py", "split.py", "protocol.py"}
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in paths for line, text in private_accesses(p.read_text())]
    assert not found, f"{len(found)} private attributes of other objects used in host/api:\n" + "\n".join(found)


@pytest.mark.parametrize("source, flagged", [
    ("a._parts", ["a._parts"]),
    ("arr._store = x", ["arr._store"]),
    ("self.device._card_error(card, e)", ["self.device._card_error"]),
    ("SplitArray._numpy", ["SplitArray._numpy"]),
    ("fut._future.set_result(1)", ["fut._future"]),
    ("CD._cap_height(2)", ["CD._cap_height"]),
    ("from .device import _array_of", ["from device import _array_of"]),
    ("self._parts = cls._where", []),
    ("super()._holders()", []),
    ("type(self).__name__", []),
    ("a.parts, a.layout.view(x)", []),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_scan_flags_other_objects_privates_only(source, flagged):
    assert [text for _, text in private_accesses(source)] == flagged
