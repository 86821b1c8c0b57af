"""The XRT backend's card session (host/xrt/card.py): the runs, the transfers and the identification share
one :class:`Card` through its public attributes and methods.

Held over the source: no module of host/xrt reads another object's ``_``-prefixed attribute (``X._name``
with X not ``self``/``cls``; dunders allowed) or imports another module's private name, and
``XrtBackend``'s class body stays under 300 lines. Held over the stand-in pyxrt: the backend's parts are
the card's, a run's status records are taken by the report, the self-test of a pyxrt without register
reads runs on the card and frees what it allocated, and closing the backend closes the session.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

from nantucket.host import xrt as X
from nantucket.host.xrt.card import Card
from nantucket.host.xrt.runs import KernelRuns
from nantucket.host.xrt.transfers import ScratchSets, Transfers
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

ROOT = Path(__file__).resolve().parent.parent
XRT_DIR = ROOT / "host" / "xrt"
#: the most lines XrtBackend's class may span (ast: end_lineno - lineno + 1, as tests/test_limits.py counts)
BACKEND_MAX_LINES = 300
SMALL = BuildParams(lanes=4, log_core=3, channels=4)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_accesses(source: str) -> list[tuple[int, str]]:
    """(line, text) of every read or write of another object's private attribute (``X._name`` where X is
    not the name ``self`` or ``cls``; dunder names allowed) and every private name imported from another
    module (``from .m import _name``) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, f"from {node.module} import {a.name}") for a in node.names if _private(a.name))
    return found


def class_lines(source: str, name: str) -> int:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.end_lineno - node.lineno + 1
    raise LookupError(name)


def test_no_host_xrt_module_reaches_into_another_objects_privates():
    paths = sorted(XRT_DIR.glob("*.py"))
    assert {p.name for p in paths} >= {"backend.py", "card.py", "runs.py", "transfers.py", "identity.py"}
    found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in paths for line, text in private_accesses(p.read_text())]
    assert not found, "private attributes of other objects used in host/xrt:\n" + "\n".join(found)


@pytest.mark.parametrize("source, flagged", [
    ("be._allocate(layout)", ["be._allocate"]),
    ("self.card._layouts[4] = 1", ["self.card._layouts"]),
    ("x = backend._runs.stuck_run", ["backend._runs"]),
    ("f()._x", ["f()._x"]),
    ("from .runs import _STRANDED, c_int", ["from runs import _STRANDED"]),
    ("self._x = cls._y", []),
    ("obj.__class__.__name__", []),
    ("from . import identity\nidentity.self_test(be)", []),
    ("card.runs.start_and_wait(bufs, run)", []),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_scan_flags_other_objects_privates_only(source, flagged):
    assert [text for _, text in private_accesses(source)] == flagged


def test_xrt_backend_stays_under_300_lines():
    lines = class_lines((XRT_DIR / "backend.py").read_text(), "XrtBackend")
    assert lines < BACKEND_MAX_LINES, f"XrtBackend spans {lines} lines"


def test_the_class_line_count_is_the_ast_span():
    source = "x = 1\n\nclass C:\n    '''doc'''\n\n    def f(self):\n        return 1\n"
    assert class_lines(source, "C") == 5


def make(tmp_path, params=SMALL, **knobs):
    fake = FakePyxrt(**knobs)
    path = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, X.XrtBackend(params, xclbin=path, pyxrt_module=fake, timeout_s=1.0, progress=False)


def test_the_backends_parts_share_one_card_session(tmp_path):
    fake, be = make(tmp_path)
    card = be.card
    assert isinstance(card, Card) and isinstance(card.runs, KernelRuns) and isinstance(card.transfers, Transfers)
    assert isinstance(card.scratch, ScratchSets)
    assert be.buffer_pool is card.transfers.pool and be._runs is card.runs
    assert be.params is card.params and be.rmap is card.rmap and be._status_buffer is card.status_buffer
    x = np.arange(SMALL.n_points, dtype=np.uint64)
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    # the run's buffers are the session's scratch set; its status record was taken by the report
    assert be._bos == card.scratch.first.bos and be.layout is card.scratch.first.layout
    assert card.runs.records == [] and be.last_record is card.runs.last_record is not None
    assert be.last_record.written
    bufs = be.allocate(be.layout_for(SMALL.log_n))
    be.upload(bufs, x[None, :])
    be.execute_run(bufs, Run(SMALL.log_n))
    # execute_run's record is held until the report takes it (note_resident)
    assert len(card.runs.records) == 1 and card.runs.records[0] is be.last_record
    assert be.last_record.describes(Run(SMALL.log_n))
    assert np.array_equal(be.download(bufs, 1)[0], ntt_model.ntt(x))
    be.note_resident(SMALL.n_points, 1, 1, False, None, "nn")
    assert card.runs.records == []
    bufs.release()
    be.close()
    assert card.device is None and card.kernel is None and card.status_buffer is None
    assert card.scratch.first is None and be.buffer_pool.closed and be.buffer_pool.idle_bytes == 0
    with pytest.raises(X.XrtError, match="closed"):
        be.run(x)
    with pytest.raises(X.XrtError, match="closed"):
        be.allocate(be.layout_for(SMALL.log_n))


def test_the_self_test_runs_on_the_session_and_frees_what_it_allocated(tmp_path):
    """Without register reads the identification transforms a known input and probes the next size up on
    the card session; the backend opens with none of those buffers held and no run of them reported."""
    fake, be = make(tmp_path, read_register=False)
    assert "self-test" in be.report["Identity"]
    assert be.card.scratch.first is None and be.buffer_pool.idle_bytes == 0
    assert be.kernel_runs == [] and be.card.runs.records == [] and be.kernel_log_n is None
    x = np.arange(SMALL.n_points, dtype=np.uint64)[::-1].copy()
    assert np.array_equal(be.run(x), ntt_model.ntt(x))
    be.close()
