"""`nantucket commit`, `query` and `verify` (host/cli_commit.py): the root against the golden model's LDE
and tree (tests/test_commit_device.py's reference), the files round-trip, tampering is refused (exit 1),
bad input is exit 2 with a one-line error naming the file or argument, and nothing is half-written."""

import json

import numpy as np
import pytest

from nantucket.host.cli import main
from nantucket.host.points import write_points
from nantucket.hw.model import commit as M
from nantucket.hw.model import field as F

from test_commit_device import rand, ref_lde_rows


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def trace_file(tmp_path):
    x = rand((3, 16), "babybear", seed=4)          # 3 polynomials back to back
    path = tmp_path / "trace.txt"
    write_points(path, x.reshape(-1), field="babybear")
    return path, x


def test_commit_prints_the_models_root_and_saves_a_tree_query_and_verify_use(capsys, tmp_path, trace_file):
    path, x = trace_file
    want = M.commit(ref_lde_rows(x.T, 2, 31, "babybear", True), "plonky3-babybear-16")
    tree = tmp_path / "tree.json"
    status, out, _ = run(capsys, "commit", path, "--scheme", "plonky3-babybear-16", "--batch", 3, "--blowup", 2,
                         "--tree", tree, "--json")
    got = json.loads(out)
    assert status == 0 and got["cap"] == [want.root.astype(np.uint64).tolist()]
    assert got["report"]["host_work"] == "tree on the host"
    saved = json.loads(tree.read_text())
    assert saved["format"] == "nantucket-commitment" and saved["dimensions"] == [[32, 3]]
    assert saved["layers"][-1] == got["cap"]
    status, out, _ = run(capsys, "commit", path, "--scheme", "plonky3-babybear-16", "--batch", 3, "--blowup", 2)
    assert status == 0 and "Host work......... tree on the host" in out and "Root" in out
    ops = tmp_path / "ops.json"
    assert run(capsys, "query", "--tree", tree, "--index", 0, 31, 7, "--output", ops)[0] == 0
    opened = json.loads(ops.read_text())
    assert [o["index"] for o in opened["openings"]] == [0, 31, 7]
    assert opened["openings"][1]["rows"][0] == saved["matrices"][0][31]
    status, out, _ = run(capsys, "verify", ops, "--commitment", tree)
    assert status == 0 and out.strip().endswith("VERIFIED")
    # the same openings from the point files
    ops2 = tmp_path / "ops2.json"
    assert run(capsys, "query", path, "--scheme", "plonky3-babybear-16", "--batch", 3, "--blowup", 2, "--index",
               0, 31, 7, "--output", ops2)[0] == 0
    assert json.loads(ops2.read_text()) == opened
    # tampering: a row value, a sibling, the index
    p = F.get("babybear").p
    for change in (lambda o: o["openings"][0]["rows"][0].__setitem__(1, (o["openings"][0]["rows"][0][1] + 1) % p),
                   lambda o: o["openings"][1]["siblings"][2].__setitem__(0, 5),
                   lambda o: o["openings"][2].__setitem__("index", 6)):
        bad = json.loads(ops.read_text())
        change(bad)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        status, out, _ = run(capsys, "verify", tmp_path / "bad.json", "--commitment", tree, "--json")
        assert status == 1 and json.loads(out)["verdict"] == "FAILED" and "CapMismatch" in out


def test_every_scheme_commits_on_the_command_line(capsys, tmp_path):
    for name, s in M.SCHEMES.items():
        x = rand((8, 2), s.field, seed=2)              # a row-major 8 x 2 trace
        path = tmp_path / f"{name}.txt"
        write_points(path, x.reshape(-1), field=s.field)
        status, out, _ = run(capsys, "commit", path, "--scheme", name, "--batch", 2, "--axis", 0, "--json")
        assert status == 0 and json.loads(out)["cap"] == M.commit(x, name).cap.astype(np.uint64).tolist()


def test_bad_input_is_exit_2_before_any_work_and_nothing_half_written(capsys, tmp_path, trace_file):
    path, _ = trace_file
    tree = tmp_path / "missing" / "tree.json"
    cases = [
        (("commit", path, "--scheme", "plonky3-babybear"), "--scheme: unknown scheme"),
        (("commit", path), "--scheme: required"),
        (("commit", "--scheme", "plonky2"), "INPUT: give at least one point file"),
        (("commit", path, "--scheme", "plonky3-babybear-16", "--batch", 3, "--tree", tree), "--tree: cannot write"),
        (("commit", path, "--scheme", "plonky3-babybear-16", "--coset", 7), "--coset: the LDE's shift"),
        (("commit", tmp_path / "none.txt", "--scheme", "plonky3-babybear-16"), "none.txt"),
        (("query", "--tree", path, "--index", 1), "trace.txt:1: not JSON"),
        (("query", path, "--scheme", "plonky3-babybear-16", "--batch", 3, "--index", 16), "--index: 16 is out of"),
        (("verify", path), "trace.txt:1: not JSON"),
        (("commit", path, "--scheme", "plonky2", "--backend", "nope"), "--backend: unknown backend 'nope'"),
        (("commit", path, "--scheme", "plonky2", "--xclbin", path), "--xclbin: the model backend takes no xclbin"),
    ]
    for argv, text in cases:
        status, out, err = run(capsys, *argv)
        assert status == 2 and text in err and err.count("\n") == 1, (argv, err)
    assert not tree.parent.exists()
    (tmp_path / "other.json").write_text(json.dumps({"format": "something"}))
    status, _, err = run(capsys, "verify", tmp_path / "other.json")
    assert status == 2 and "not a nantucket-openings file" in err
    t = tmp_path / "t.json"
    assert run(capsys, "commit", path, "--scheme", "plonky3-babybear-16", "--batch", 3, "--tree", t)[0] == 0
    changed = json.loads(t.read_text())
    changed["matrices"][0][0][0] ^= 1
    t.write_text(json.dumps(changed))
    status, _, err = run(capsys, "query", "--tree", t, "--index", 0)
    assert status == 2 and "do not commit to its cap" in err


def test_json_bad_input_prints_one_error_object(capsys, tmp_path, trace_file):
    path, _ = trace_file
    for argv in (("commit", path, "--scheme", "nope", "--json"), ("commit", path, "--scheme", "plonky2", "--json",
                                                                 "--batch", "x"),
                 ("verify", path, "--json")):
        status, out, err = run(capsys, *argv)
        got = json.loads(out)
        assert status == 2 and got["verdict"] == "ERROR" and got["exit_status"] == 2 and got["error"] in err


def test_extension_limbs_are_in_limb_order_within_each_polynomial(capsys, tmp_path):
    x = rand((2, 8, 4), "babybear", seed=9)       # 2 polynomials of 8 points of 4 limbs, back to back
    path = tmp_path / "ext.txt"
    write_points(path, x.reshape(-1), field="babybear")
    leaves = np.array([[int(x[b, i, k]) for b in range(2) for k in range(4)] for i in range(8)], dtype=np.uint64)
    status, out, _ = run(capsys, "commit", path, "--scheme", "plonky3-babybear-16", "--batch", 2, "--ext", 4, "--json")
    assert status == 0 and json.loads(out)["cap"] == M.commit(leaves, "plonky3-babybear-16").cap.astype(np.uint64).tolist()
    status, out, _ = run(capsys, "commit", path, "--scheme", "plonky3-babybear-16", "--batch", 2, "--ext", 4,
                         "--blowup", 2, "--json")
    cols = x.transpose(1, 0, 2).reshape(8, 8)               # every limb column's LDE, the same leaf order
    want = M.commit(ref_lde_rows(cols, 2, 31, "babybear", True), "plonky3-babybear-16")
    assert status == 0 and json.loads(out)["cap"] == want.cap.astype(np.uint64).tolist()
