"""The model's projected kernel time (host/projection.py): the kernel starts it projects are the starts a
card backend makes for the same call (recorded from the simulated card's driver), their cycles are
hw.model.cycles' for those starts, and the CLI's report and JSON carry them as a projection."""

import json

import numpy as np
import pytest

import nantucket
from nantucket.host.projection import PROJECTION_SOURCE, card_runs, project_steps
from nantucket.host.sim_backend import smallest_params
from nantucket.host.xrt import XrtBackend
from nantucket.hw.model.cycles import projected_calls
from nantucket.hw.engine import NttEngine
from nantucket.hw.model.params import BuildParams

PARAMS = smallest_params(64)          # tests/test_api.py's build (L4_k3_C4): 2^4 .. 2^6 native

# (shape, keywords): native sizes split at the batch limit, below the smallest size, past one call (the
# four-step with the twiddles in the kernel's row steps), forward and inverse, with and without a coset
CALLS = [((40, 64), {}), ((8, 32), {"inverse": True}), ((3, 8), {}), ((16, 64), {"coset": 7}),
         ((1, 1024), {}), ((2, 1024), {"inverse": True, "coset": 3})]


def _key(run):
    return (run.log_n, run.flags, run.batch, run.coset_shift, run.row_step, run.op)


@pytest.fixture(scope="module")
def recorded():
    """The runs the simulated card's driver started for each call of CALLS, and the steps it reported."""
    seen, out = [], []
    original = XrtBackend.execute

    def recording(self, run, buffers):
        seen.append(run)
        return original(self, run, buffers)

    XrtBackend.execute = recording
    try:
        rng = np.random.default_rng(11)
        with nantucket.open("sim", params=PARAMS) as dev:
            for shape, kw in CALLS:
                del seen[:]
                x = rng.integers(0, 2**64 - 2**32, size=shape, dtype=np.uint64)
                a = dev.asarray(x)
                dev.ntt(a, **kw)
                a.numpy()
                out.append((list(seen), list(dev.backend.steps)))
    finally:
        XrtBackend.execute = original
    return out


@pytest.mark.parametrize("case", range(len(CALLS)))
def test_the_projected_starts_are_the_card_backends(recorded, case):
    (shape, kw), (runs, _) = CALLS[case], recorded[case]
    n = shape[-1].bit_length() - 1
    mine = card_runs(PARAMS, n, shape[0], inverse=kw.get("inverse", False), coset=kw.get("coset"))
    assert [_key(r) for r in mine] == [_key(r) for r in runs]


def test_the_model_device_reports_the_projection_of_those_starts(recorded):
    engine = NttEngine(PARAMS)
    rng = np.random.default_rng(3)
    for (shape, kw), (runs, _) in zip(CALLS, recorded):
        with nantucket.open("model", params=PARAMS) as dev:
            a = dev.asarray(rng.integers(0, 2**32, size=shape, dtype=np.uint64))
            dev.ntt(a, **kw)
            (step,) = dev.backend.steps
            assert step["kernel_calls"] == 0 and step["where"] == "host"
            assert step["cycles"] == projected_calls(PARAMS, runs, engine=engine)
            assert step["projected_s"] == pytest.approx(step["cycles"] / (PARAMS.ntt_mhz * 1e6))
            assert PROJECTION_SOURCE in dev.backend.report["Kernel projection"]


def test_an_lde_projects_its_inverse_and_coset_forward_not_its_zero_extension():
    with nantucket.open("model", params=PARAMS) as dev:
        dev.lde(dev.asarray(np.arange(2 * 16, dtype=np.uint64).reshape(2, 16)), 4, 7)
        steps = {st["step"]: st for st in dev.backend.steps}
    inverse = projected_calls(PARAMS, card_runs(PARAMS, 4, 2, inverse=True, coset=None), engine=NttEngine(PARAMS))
    forward = projected_calls(PARAMS, card_runs(PARAMS, 6, 2, inverse=False, coset=7), engine=NttEngine(PARAMS))
    assert steps["inverse"]["cycles"] == inverse
    assert steps["coset forward"]["cycles"] == forward
    assert steps["zero-extension"]["cycles"] is None


def test_the_cli_reports_the_model_projection_in_text_and_json(tmp_path, capsys):
    from nantucket.host.cli import main
    inp, exp = tmp_path / "in.npy", tmp_path / "ex.npy"
    assert main(["points", "12", str(inp), str(exp)]) == 0
    capsys.readouterr()
    assert main(["run", "--backend", "model", "--json", str(inp), str(exp)]) == 0
    report = json.loads(capsys.readouterr().out)
    default = BuildParams.default_for()
    (step,) = report["steps"]
    expected = projected_calls(default, card_runs(default, 12, 1, inverse=False, coset=None),
                               engine=NttEngine(default))
    assert step["cycles"] == expected
    assert report["projected_kernel_s"] == pytest.approx(expected / (default.ntt_mhz * 1e6))
    assert report["projected_end_to_end_s"] > report["projected_kernel_s"]
    assert main(["run", "--backend", "model", str(inp), str(exp)]) == 0
    text = capsys.readouterr().out
    assert f"({PROJECTION_SOURCE}, every step)" in text and "Kernel projection" in text


def test_project_steps_leaves_host_only_steps_alone():
    steps = [{"step": "twiddles", "log_n": 4, "rows": 1, "cycles": None, "projected_s": None}]
    assert project_steps(steps, PARAMS)[0]["cycles"] is None
