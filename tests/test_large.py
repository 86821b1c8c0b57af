"""Transforms past one kernel call (host/large.py): the four-step over batched kernel calls, with the
golden model as the kernel, on the xrt driver over the register-level kernel model, and on the kernel RTL
(sim). Every result is checked against hw.model.ntt.transform (or the model device's lde)."""

import numpy as np
import pytest

import nantucket
from nantucket.host import large as L
from nantucket.host.sim_backend import SimBackend
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import FLAG_COSET
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

SMALL = BuildParams(lanes=4, log_core=3, channels=4)        # 2^4 .. 2^6 points a call
RTL = BuildParams(lanes=4, log_core=4, channels=4)          # tests/test_kernel.py's first build: 2^4 .. 2^8


def rand(field, shape, seed):
    return np.random.default_rng(seed).integers(0, field.p, shape, dtype=np.uint64)


def model_kernel(field, min_log_n, max_log_n, seen):
    """A native call on the golden model that refuses what one kernel call cannot take, splitting larger
    rows again through the four-step as the driver's run does."""
    def native(rows, inverse, coset, order):
        n = rows.shape[1]
        if n > 1 << max_log_n:
            return L.four_step(rows, inverse=inverse, coset=coset, order=order, field=field,
                               min_log_n=min_log_n, max_log_n=max_log_n, native=native)
        seen.append(n)
        return ntt.transform(rows, inverse=inverse, coset=coset, order=order, field=field)
    return native


@pytest.mark.parametrize("field, log_n", [("goldilocks", 9), ("goldilocks", 12), ("babybear", 10),
                                          ("koalabear", 10), ("goldilocks-plonky2", 9)])
def test_four_step_equals_the_transform_in_every_mode(field, log_n):
    field = F.get(field)
    seen = []
    native = model_kernel(field, 4, 6, seen)
    for i, order in enumerate(L.ORDERS):
        for inverse in (False, True):
            for coset in (None, field.generator, field.p - 1):
                x = rand(field, (2, 1 << log_n), seed=100 * log_n + 10 * i + inverse)
                got = L.four_step(x, inverse=inverse, coset=coset, order=order, field=field, min_log_n=4,
                                  max_log_n=6, native=native)
                want = ntt.transform(x, inverse=inverse, coset=coset, order=order, field=field)
                assert np.array_equal(got, want), (order, inverse, coset)
    assert max(seen) <= 1 << 6


@pytest.mark.parametrize("field", ["goldilocks", "babybear", "koalabear"])
def test_every_size_up_to_the_two_adicity_on_a_tiny_kernel(field):
    """Every size from one past the call's 2^4 to 2^14 on a kernel of 2^2 .. 2^4 points a call (up to
    three levels of splits); the sizes up to each field's 2-adicity on the model: the full test below."""
    field = F.get(field)
    for log_n in range(5, 15):
        inverse, coset = log_n % 2 == 1, (None if log_n % 3 else 5)
        order = L.ORDERS[log_n % 4]
        x = rand(field, 1 << log_n, seed=log_n)
        got = L.four_step(x, inverse=inverse, coset=coset, order=order, field=field, min_log_n=2, max_log_n=4,
                          native=model_kernel(field, 2, 4, []))
        assert np.array_equal(got, ntt.transform(x, inverse=inverse, coset=coset, order=order, field=field)), log_n


@pytest.mark.full
@pytest.mark.parametrize("field, log_n", [("goldilocks", 25), ("babybear", 27), ("koalabear", 24)])
def test_the_largest_sizes_on_the_default_build(field, log_n):
    """Past the default build's 2^24 (KoalaBear's 2^24 split on a 2^20 kernel): each field's largest
    size that this machine's memory allows, against the golden model."""
    field = F.get(field)
    params = BuildParams.default_for(field.name)
    max_log_n = min(params.max_log_n, log_n - 4)
    x = rand(field, 1 << log_n, seed=1)
    got = L.four_step(x, inverse=False, coset=field.generator, order="nn", field=field,
                      min_log_n=params.min_log_n, max_log_n=max_log_n,
                      native=model_kernel(field, params.min_log_n, max_log_n, []))
    assert np.array_equal(got, ntt.transform(x, coset=field.generator, field=field))


def test_split_and_plan():
    assert L.split_log_n(25, 8, 24) == (8, 17)
    assert L.split_log_n(28, 8, 24) == (8, 20)
    assert L.split_log_n(33, 8, 24) == (9, 24)
    with pytest.raises(ValueError, match="fit one kernel call"):
        L.split_log_n(24, 8, 24)
    plan = L.plan_steps(BuildParams(), 28)
    # 2^20 columns of 2^8 points (2^16 a call), then 2^8 rows of 2^20 (16 a call): 16 + 16 calls
    assert [(s["log_n"], s["rows"], s["kernel_calls"]) for s in plan] == [(8, 1 << 20, 16), (20, 1 << 8, 16)]
    assert sum(s["rows"] << s["log_n"] for s in plan) == 2 << 28


def open_fake(tmp_path, params):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0,
                                progress=False)


def test_the_driver_runs_sizes_past_one_call_on_the_kernel_model(tmp_path):
    """On the xrt driver over the register-level kernel model: every mode, a batch, the steps' figures and
    the kernel calls the plan predicts."""
    fake, dev = open_fake(tmp_path, SMALL)
    field = F.GOLDILOCKS
    with dev:
        backend = dev.backend
        for log_n, order, inverse, coset in [(7, "nn", False, None), (8, "nr", False, 7), (9, "rn", True, 7),
                                             (10, "rr", True, None), (8, "nn", True, field.p - 1)]:
            x = rand(field, (3, 1 << log_n), seed=log_n)
            runs = fake.kernel_model.runs if fake.kernel_model is not None else 0
            got = dev.ntt(x, inverse=inverse, coset=coset, order=order).numpy()
            assert np.array_equal(got, ntt.transform(x, inverse=inverse, coset=coset, order=order)), log_n
            calls = sum(s["kernel_calls"] for s in L.plan_steps(SMALL, log_n, 3))
            assert fake.kernel_model.runs - runs == calls
            steps = backend.steps
            assert [s["step"] for s in steps] == ["columns", "twiddles", "rows"]
            assert sum(s["kernel_calls"] for s in steps) == calls and steps[1]["kernel_calls"] == 0
            n1, n2 = L.split_log_n(log_n, SMALL.min_log_n, SMALL.max_log_n)
            assert (steps[0]["log_n"], steps[0]["rows"], steps[2]["log_n"], steps[2]["rows"]) == (n1, 3 << n2, n2, 3 << n1)
            # the host's step works on the whole transforms; every step here is of rows one call takes
            assert (steps[1]["log_n"], steps[1]["rows"], steps[1]["where"]) == (log_n, 3, "host")
            assert all(s["parts"] is None for s in steps)
            assert backend.report["Kernel calls"].startswith(f"{calls} calls in 2 steps")
            assert backend.kernel_log_n == log_n
        # a size of one call afterwards: one step again
        dev.ntt(rand(field, 64, seed=1)).numpy()
        assert [s["step"] for s in backend.steps] == ["transform"]


def test_a_step_past_one_call_lists_its_own_steps(tmp_path):
    """2^13 on a build of 2^4 .. 2^6 points a call: 2^13 = 2^7 x 2^6, the 2^7-point columns themselves a
    four-step (2^4 x 2^3): the columns step carries their steps as its parts, whose kernel calls add up to
    its own and to what the kernel model ran."""
    fake, dev = open_fake(tmp_path, SMALL)
    x = rand(F.GOLDILOCKS, 1 << 13, seed=13)
    with dev:
        assert np.array_equal(dev.ntt(x, coset=7).numpy(), ntt.transform(x, coset=7))
        steps = dev.backend.steps
    assert [(s["step"], s["log_n"], s["rows"]) for s in steps] == [("columns", 7, 1 << 6), ("twiddles", 13, 1),
                                                                   ("rows", 6, 1 << 7)]
    parts = steps[0]["parts"]
    assert [(p["step"], p["log_n"], p["rows"]) for p in parts] == [("columns", 4, 1 << 9), ("twiddles", 7, 1 << 6),
                                                                   ("rows", 3, 1 << 10)]
    assert sum(p["kernel_calls"] for p in parts) == steps[0]["kernel_calls"] > 0
    assert steps[0]["where"] == "card and host" and steps[2]["parts"] is None
    assert sum(s["kernel_calls"] for s in steps) == fake.kernel_model.runs == \
        sum(s["kernel_calls"] for s in L.plan_steps(SMALL, 13))


def test_lde_past_one_call_on_the_kernel_model(tmp_path):
    """The LDE whose result (and whose values) are past one call: the inverse and the coset NTT as
    four-steps, bit-identical with the model device."""
    fake, dev = open_fake(tmp_path, SMALL)
    values = rand(F.GOLDILOCKS, (2, 1 << 5), seed=2)
    big = rand(F.GOLDILOCKS, 1 << 7, seed=3)
    with dev, nantucket.open("model") as model:
        assert np.array_equal(dev.lde(values, 8, 7).numpy(), model.lde(values, 8, 7).numpy())
        # the inverse of 2^5 in one call, the 2^8 coset NTT a four-step: its steps are that step's parts
        steps = dev.backend.steps
        assert [(s["step"], s["parts"] is not None) for s in steps] == \
            [("inverse", False), ("zero-extension", False), ("coset forward", True)]
        assert [p["step"] for p in steps[2]["parts"]] == ["columns", "twiddles", "rows"]
        assert sum(p["kernel_calls"] for p in steps[2]["parts"]) == steps[2]["kernel_calls"]
        assert steps[2]["where"] == "card and host" and "four-step" in steps[2]["host_work"]
        runs = fake.kernel_model.runs
        assert np.array_equal(dev.lde(big, 2, 3).numpy(), model.lde(big, 2, 3).numpy())
        steps = dev.backend.steps
        assert steps[0]["parts"] is not None and steps[2]["parts"] is not None
        assert sum(s["kernel_calls"] for s in steps) == fake.kernel_model.runs - runs


def test_the_kernel_rtl_runs_sizes_past_one_call(monkeypatch):
    """On the simulated kernel RTL (tests/test_kernel.py's 2^8 build): 2^11 with coset, inverse
    and both orders; the report's steps carry the kernel's own cycles. The between-steps twiddles run on
    the card: the stepped step's kernel calls carry the row step w_N (each transform row's calls from
    its first row's shift on) and the host makes no twiddled transpose (no field products)."""
    from nantucket.host.xrt.backend import XrtBackend

    field = F.GOLDILOCKS
    started = []
    execute_run = XrtBackend.execute_run

    def recording(self, bufs, run):
        started.append(run)
        return execute_run(self, bufs, run)

    def no_host_twiddles(*args, **kwargs):
        raise AssertionError("the host applied the twiddles")

    monkeypatch.setattr(XrtBackend, "execute_run", recording)
    monkeypatch.setattr(L, "_twiddled_transpose", no_host_twiddles)
    with nantucket.open("sim", params=RTL, progress=lambda line: None) as dev:
        backend = dev.backend
        for log_n, inverse, coset, order in [(11, False, 7, "nr"), (11, True, 7, "rn")]:
            x = rand(field, 1 << log_n, seed=log_n)
            started.clear()
            got = dev.ntt(x, inverse=inverse, coset=coset, order=order).numpy()
            assert np.array_equal(got, ntt.transform(x, inverse=inverse, coset=coset, order=order)), log_n
            steps = backend.steps
            kernel_steps = [s for s in steps if s["kernel_calls"]]
            assert all(isinstance(s["cycles"], int) and s["cycles"] >= s["rows"] * RTL.ideal_cycles(s["log_n"])
                       for s in kernel_steps)
            assert sum(s["cycles"] for s in kernel_steps) == backend.kernel_cycles
            assert "four-step" in backend.report["Host work"] and "over" in backend.report["Kernel cycles"]
            # the stepped step (the inverse's first, the forward's second): coset calls with the row step
            # w_N, their shifts g x w_N^r from each call's first row; the other step's calls without one
            n1, n2 = L.split_log_n(log_n, RTL.min_log_n, RTL.max_log_n)
            w = field.root_of_unity(1 << log_n)
            stepped_log_n = n1 if inverse else n2
            per = 1 << (n2 if inverse else n1)            # rows of one transform row (the shifts restart)
            stepped = [r for r in started if r.row_step > 1]
            assert stepped and all(r.row_step == w and r.log_n == stepped_log_n and r.flags & FLAG_COSET
                                   for r in stepped)
            assert sum(r.batch for r in stepped) == per
            first = 0
            for r in stepped:
                assert r.coset_shift == field.mul(coset, field.pow_(w, first)), first
                first += r.batch
            assert len(stepped) < len(started)
    assert isinstance(dev.backend, SimBackend)
