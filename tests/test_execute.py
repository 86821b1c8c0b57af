"""The card path: ``execute(run, buffers)`` on the register-level kernel model (sim/kernel_model.py), the xrt
backend over the stand-in pyxrt and the sim backend's simulated card, one method for a run of any operation.

Held: an NTT run through ``execute`` gives the points of the golden model and the same status record (every
word but the start's SEQUENCE; on the simulated card also but the cycle counts) as the old path,
``Backend.run``, which is itself a layer building ``Run.ntt`` and calling ``execute``; an op the build does not
carry is refused by the host (KernelRefused naming bad_op, nothing sent) and by the kernel itself (its record's
STATUS.bad_op); the kernel model runs an op through the table of operations (hw.model.ops: its ``model``);
the model backend, without a kernel, refuses ``execute`` with NoKernel.
"""

import dataclasses

import numpy as np
import pytest

from nantucket.host import xrt as X
from nantucket.host.backend_base import ModelBackend, NoKernel
from nantucket.host.sim_backend import SimBackend, smallest_params
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.ops import carried_codes
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import StatusRecord
from nantucket.hw.model.run import STATUS_BAD_OP, Run
from nantucket.sim import kernel_model as KM
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

SMALL = BuildParams(lanes=4, log_core=3, channels=4)        # native 2^4 .. 2^6
#: The words of a record that differ from start to start (the start's number) or with the clock.
SEQUENCE = ("SEQUENCE",)
CLOCKED = ("TOTAL_DMA_CYCLES", "ENGINE_0", "ENGINE_1", "ENGINE_2", "ENGINE_3")


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, F.P, size=shape, dtype=np.uint64)


def same_record(a: StatusRecord, b: StatusRecord, ignore=SEQUENCE) -> bool:
    return {k: v for k, v in a.words.items() if k not in ignore} == {k: v for k, v in b.words.items() if k not in ignore}


def foreign_op(params) -> int:
    """An op code the build does not carry (the first such)."""
    return next(c for c in range(32) if c not in carried_codes(params))


def make_xrt(tmp_path, params=SMALL, **knobs):
    fake = FakePyxrt(**knobs)
    path = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, X.XrtBackend(params, xclbin=path, pyxrt_module=fake, timeout_s=1.0, progress=False)


# -- the kernel model ------------------------------------------------------------------------------------

class ModelKernel:
    """A KernelModel with a buffer on every channel for runs of up to ``params``' largest size and a
    status record page in HBM[0]."""

    def __init__(self, params=SMALL):
        self.params = params
        self.hbm = KM.HbmModel(32)
        self.km = KM.KernelModel(params, self.hbm, HbmLayout(params))
        nbytes = HbmLayout(params).channel_bytes
        self.bases = [self.hbm.allocate(ch, nbytes) for ch in range(params.channels)]
        self.buffers = {R.pointer_arg(ch): b for ch, b in enumerate(self.bases)}
        self.buffers[R.RECORD_ARG] = self.hbm.allocate(0, 4096)

    def words(self, lay):
        return [self.hbm.view(b, lay.channel_bytes).view(lay.point_dtype) for b in self.bases]

    def place(self, rows, log_n):
        lay = HbmLayout(self.params, log_n, rows.shape[0])
        lay.scatter_into(rows.reshape(-1), self.words(lay), "input")
        return lay

    def result(self, lay):
        return lay.gather(self.words(lay), "output").reshape(lay.batch, -1)


@pytest.mark.parametrize("log_n, batch, inverse, coset", [(6, 1, False, None), (4, 2, True, 7), (5, 2, False, 3)])
def test_execute_on_the_model_kernel_gives_the_golden_points_and_the_old_paths_record(tmp_path, log_n, batch,
                                                                                      inverse, coset):
    rows = rand((batch, 1 << log_n), seed=log_n)
    card = ModelKernel()
    lay = card.place(rows, log_n)
    record = card.km.execute(Run.ntt(log_n, inverse=inverse, coset=coset, batch=batch), card.buffers)
    want = np.stack([ntt_model.transform(r, inverse=inverse, coset=coset) for r in rows])
    assert np.array_equal(card.result(lay), want)
    assert record.written and record.status == 0 and record.describes(Run.ntt(log_n, inverse=inverse, coset=coset,
                                                                              batch=batch))
    # the old path: the xrt backend's run() over the stand-in pyxrt, on the same build
    _, be = make_xrt(tmp_path)
    assert np.array_equal(be.run(rows if batch > 1 else rows[0], inverse=inverse, coset=coset).reshape(want.shape),
                          want)
    assert same_record(record, be.last_record)
    be.close()


def test_the_kernel_model_refuses_an_op_the_build_does_not_carry_touching_no_points():
    card = ModelKernel()
    rows = rand((1, 64), seed=1)
    lay = card.place(rows, 6)
    before = [w.copy() for w in card.words(lay)]
    record = card.km.execute(Run(6, op=foreign_op(SMALL)), card.buffers)
    assert record.written and record.status & STATUS_BAD_OP and record["OP"] == foreign_op(SMALL)
    assert all(np.array_equal(a, b) for a, b in zip(before, card.words(lay)))


def test_the_kernel_model_runs_an_op_through_the_table_of_operations(monkeypatch):
    """The kernel model computes with the run's operation's ``model`` (hw.model.ops), not a copy of its own:
    an NTT whose model is replaced writes that model's result."""
    real = KM.operation

    def marked(code):
        op = real(code)
        return dataclasses.replace(op, model=lambda params, run, x: (x + 1) % F.P)
    monkeypatch.setattr(KM, "operation", marked)
    card = ModelKernel()
    rows = rand((1, 64), seed=2)
    lay = card.place(rows, 6)
    assert card.km.execute(Run.ntt(6), card.buffers).status == 0
    assert np.array_equal(card.result(lay), (rows + 1) % F.P)


def test_the_kernel_models_execute_checks_its_buffers_and_a_start_that_never_finishes():
    card = ModelKernel()
    with pytest.raises(ValueError, match="buffers: .*missing status"):
        card.km.execute(Run.ntt(6), {k: v for k, v in card.buffers.items() if k != R.RECORD_ARG})
    with pytest.raises(ValueError, match="buffers: .*unknown hbm_99"):
        card.km.execute(Run.ntt(6), dict(card.buffers, hbm_99=0))
    card.km.hang = True
    with pytest.raises(KM.KernelHung, match="did not finish"):
        card.km.execute(Run.ntt(6), card.buffers)


# -- the xrt backend over the stand-in pyxrt -------------------------------------------------------------

def test_xrt_execute_gives_the_points_and_record_of_run(tmp_path):
    fake, be = make_xrt(tmp_path)
    rows = rand((2, 32), seed=3)
    old = be.run(rows, coset=5)
    old_record = be.last_record
    bufs = be.allocate(be.layout_for(5), batch=2)
    be.upload(bufs, rows)
    record = be.execute(Run.ntt(5, coset=5, batch=2), bufs)
    assert isinstance(record, StatusRecord) and record is be.last_record
    assert np.array_equal(be.download(bufs, 2), old)
    assert np.array_equal(old, np.stack([ntt_model.transform(r, coset=5) for r in rows]))
    assert same_record(record, old_record) and record["SEQUENCE"] == old_record["SEQUENCE"] + 1
    bufs.release()
    be.close()


def test_run_is_a_layer_over_execute(tmp_path, monkeypatch):
    """Backend.run on a card builds the NTT's runs and gives each to execute: a batch past one call's
    largest is several runs of Run.ntt, each through execute."""
    seen = []
    inner = X.XrtBackend.execute

    def recording(self, run, buffers):
        seen.append(run)
        return inner(self, run, buffers)
    monkeypatch.setattr(X.XrtBackend, "execute", recording)
    _, be = make_xrt(tmp_path)
    limit = be.batch_limit(6)
    rows = rand((limit + 1, 64), seed=4)
    assert np.array_equal(be.run(rows, inverse=True), np.stack([ntt_model.intt(r) for r in rows]))
    assert seen == [Run.ntt(6, inverse=True, batch=limit), Run.ntt(6, inverse=True, batch=1)]
    be.close()


def test_xrt_refuses_an_op_the_build_does_not_carry_before_sending_and_the_kernel_does_too(tmp_path):
    fake, be = make_xrt(tmp_path)
    bufs = be.allocate(be.layout_for(6))
    starts = fake.kernel_model.starts
    with pytest.raises(X.KernelRefused, match="the host refused") as e:
        be.execute(Run(6, op=foreign_op(SMALL)), bufs)
    assert "bad_op" in e.value.reasons and fake.kernel_model.starts == starts
    # sent past the host's check, the kernel refuses it itself, from its record
    with pytest.raises(X.KernelRefused, match="the kernel refused") as e:
        be._start_and_wait(bufs, Run(6, op=foreign_op(SMALL)))
    assert e.value.reasons == ("bad_op",) and fake.kernel_model.starts == starts + 1
    bufs.release()
    be.close()


def test_the_model_backend_has_no_kernel_to_execute_on():
    with pytest.raises(NoKernel, match="model: no kernel"):
        ModelBackend().execute(Run.ntt(6), None)


# -- the sim backend's simulated card (the small build make test already compiles) ------------------------

def test_sim_execute_gives_the_points_and_record_of_run():
    params = smallest_params(64)          # tests/test_api.py's build
    sim = SimBackend(params, progress=lambda line: None)
    try:
        x = rand((1, 64), seed=5)
        old = sim.run(x[0], coset=7)
        assert np.array_equal(old, ntt_model.transform(x[0], coset=7))
        driver = sim.call_driver(64)
        old_record = driver.last_record
        bufs = driver.allocate(driver.layout_for(6))
        driver.upload(bufs, x)
        record = sim.execute(Run.ntt(6, coset=7), bufs)
        assert np.array_equal(driver.download(bufs, 1)[0], old)
        assert record.written and same_record(record, old_record, SEQUENCE + CLOCKED)
        assert record["TOTAL_DMA_CYCLES"] > 0               # the simulated kernel counts
        with pytest.raises(X.KernelRefused, match="the host refused") as e:
            sim.execute(Run(6, op=foreign_op(params)), bufs)
        assert "bad_op" in e.value.reasons
        with pytest.raises(X.KernelRefused, match="the kernel refused") as e:
            driver._start_and_wait(bufs, Run(6, op=foreign_op(params)))
        assert e.value.reasons == ("bad_op",)
        bufs.release()
    finally:
        sim.close()
    with pytest.raises(Exception, match="no simulated card is open"):
        sim.execute(Run.ntt(6), None)
