"""The CLI: `run --json` prints its one JSON object also for an argument that fails the
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


def test_a_31_bit_bin_file_run_without_field_fails_with_a_hint(tmp_path, capsys):
    """BabyBear .bin files (uint32) run without --field are read as half as many Goldilocks words: the run
    fails, and the report says why it likely did (every value's 32-bit halves below 2^31) and which
    --field to pass, in the text report before TEST FAILED and in the JSON one; with the field it passes,
    and a Goldilocks run that fails on its own data gets no such hint."""
    i, e = tmp_path / "in.bin", tmp_path / "exp.bin"
    assert main(["points", "8", str(i), str(e), "--field", "babybear"]) == 0
    capsys.readouterr()
    assert main(["run", str(i), str(e)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "TEST FAILED"
    hint = [ln for ln in lines if ln.startswith("Hint")]
    assert len(hint) == 1 and "--field babybear or koalabear" in hint[0] and str(i) in hint[0]
    assert main(["run", str(i), str(e), "--json"]) == 1
    assert "--field babybear or koalabear" in json.loads(capsys.readouterr().out)["hint"]
    assert main(["run", str(i), str(e), "--field", "babybear"]) == 0
    capsys.readouterr()
    gi, ge, other = tmp_path / "g.bin", tmp_path / "ge.bin", tmp_path / "other.bin"
    assert main(["points", "8", str(gi), str(ge)]) == 0
    assert main(["points", "8", str(other), str(tmp_path / "x.bin"), "--seed", "5"]) == 0
    capsys.readouterr()
    assert main(["run", str(gi), str(tmp_path / "x.bin"), "--json"]) == 1
    assert "hint" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("made, run", [(["--axis", "0"], []), ([], ["--axis", "0"])], ids=["made-axis0", "run-axis0"])
def test_a_batch_in_the_other_layout_fails_with_the_flag_that_matches(tmp_path, capsys, made, run):
    """Files made with --axis 0 run without it (or the other way round): every point differs, and the
    report says the run in the other layout matches EXPECTED (the golden model's transform of INPUT read
    that way), before TEST FAILED; a failure that no layout explains gets no layout hint."""
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "6", str(i), str(e), "--batch", "4", "--coset", "7", *made]) == 0
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--batch", "4", "--coset", "7", *run]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "TEST FAILED" and "256 of 256 points differ" in "\n".join(lines)
    hint = [ln for ln in lines if ln.startswith("Hint")]
    assert len(hint) == 1 and ("with --axis 0 matches EXPECTED" if made else "without it matches EXPECTED") in hint[0]
    assert main(["run", str(i), str(e), "--batch", "4", "--coset", "7", *made]) == 0
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--batch", "4", "--coset", "5", *run, "--json"]) == 1
    assert "hint" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("field", ["babybear", "goldilocks"])
def test_run_reports_the_bytes_the_link_moves_and_projects_their_time(tmp_path, monkeypatch, capsys, field):
    """`run --backend sim` (the simulated card's kernel stubbed by the register-level model: no Verilator)
    of an LDE of 4 x 2^6 points to 2^8 (chained on the card) and of a transform: transfers_bytes is 4
    bytes a point in BabyBear, 8 in Goldilocks (the point files' own words), and projected_pcie_s the link's time of those bytes."""
    import nantucket.sim.cosim
    from nantucket.host.run_report import pcie_seconds
    from nantucket.hw.model import field as F
    from nantucket.sim.kernel_model import ModelCard
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", ModelCard)
    monkeypatch.chdir(tmp_path)
    word = F.FIELDS[field].point_bytes
    build = ["--backend", "sim", "--field", field, "--lanes", "8" if word == 4 else "4", "--log-core", "4",
             "--channels", "4"]
    for flags, moved in ((["--blowup", "4", "--coset", "7"], (4 * 64, 4 * 256)), ([], (4 * 128, 4 * 128))):
        log_n = "6" if flags else "7"
        inp, exp = tmp_path / "in.bin", tmp_path / "exp.bin"
        assert main(["points", log_n, str(inp), str(exp), "--batch", "4", "--field", field, *flags]) == 0
        capsys.readouterr()
        assert main(["run", str(inp), str(exp), "--batch", "4", *build, *flags, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["verdict"] == "PASSED"
        assert report["transfers_bytes"] == {"to-device": moved[0] * word, "from-device": moved[1] * word}
        assert inp.stat().st_size == moved[0] * word                # the file's own words
        assert report["projected_pcie_s"] == pytest.approx(pcie_seconds(moved[0] * word, moved[1] * word))
