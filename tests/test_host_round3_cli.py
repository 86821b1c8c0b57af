"""The CLI, round 3: `run --json` prints its one JSON object also for an argument that fails the
parser's own checks (a type check, an unknown flag), with exit 2 and the one line on stderr."""

import json

import pytest

from nantucket.host.cli import main


@pytest.mark.parametrize("bad", [["--batch", "zero"], ["--coset", "x"], ["--no-such-flag"], ["--field", "mersenne"]],
                         ids=["batch", "coset", "unknown", "field"])
def test_run_json_on_an_argument_that_fails_its_type_check_prints_one_object(tmp_path, capsys, bad):
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["run", str(i), str(e), "--json", *bad]) == 2
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["verdict"] == "ERROR" and report["exit_status"] == 2
    assert err == f"nantucket: error: {report['error']}\n" and "\n" not in report["error"]
    assert main(["run", str(i), str(e), *bad]) == 2                 # without --json: nothing on stdout
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("nantucket: error: ")
