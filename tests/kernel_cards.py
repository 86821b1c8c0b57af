"""Shared by the kernel tests of the non-default fields (tests/test_kernel_fields.py, goldilocks-plonky2;
tests/test_kernel_fields31.py, BabyBear and KoalaBear): a register-level card on the kernel RTL, the runs
that cover every mode of a build, the identification check and an XrtBackend on the stand-in pyxrt."""

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import FLAG_COSET, FLAG_INVERSE, Run
from nantucket.sim.cosim import SimulatedKernel
from nantucket.sim.kernel_model import HbmModel
from nantucket.sim.regression import RegisterCard, TrialRun


def register_card(params: BuildParams):
    """A module fixture's body: the RegisterCard on the kernel RTL of ``params`` (one Verilator build),
    closed after the tests."""
    kernel = SimulatedKernel(params, HbmModel(params.channels), HbmLayout(params), progress=lambda line: None)
    yield RegisterCard(kernel)
    kernel.close()


def trial(run: Run, seed: int, *, stalls: bool = True, refresh: bool = True) -> TrialRun:
    return TrialRun(run, refresh=refresh, stalls=stalls, data_seed=seed)


def check_identification(card) -> None:
    """The FIELD word reads the build's field's code; the rest of the ID block is the build's."""
    k, field = card.kernel, card.params.field
    assert k.read(card.rmap.id_offset("FIELD")) == R.FIELD_CODES[field]
    assert R.field_of_code(k.read(card.rmap.id_offset("FIELD"))) == field
    for name in ("MAGIC", "VERSION", "LANES", "LOG_CORE", "CHANNELS", "MIN_LOG_N", "MAX_LOG_N"):
        assert k.read(card.rmap.id_offset(name)) == card.rmap.id_values[name], name


def every_mode(params: BuildParams, shift: int) -> list[Run]:
    """Forward, inverse, coset (``shift`` and the edge shift p - 1), inverse coset, the largest batch at the
    smallest size, a chained output and a zero-extended input."""
    n, m = params.max_log_n, params.max_log_n - 1
    return [Run(n), Run(n, FLAG_INVERSE), Run(n, FLAG_COSET, coset_shift=shift),
            Run(m, FLAG_COSET | FLAG_INVERSE, coset_shift=params.prime_field.p - 1),
            Run(params.min_log_n, FLAG_INVERSE, batch=R.RegisterMap(params).max_batch(params.min_log_n)),
            Run(m, FLAG_INVERSE, chain_log_n=n), Run(n, FLAG_COSET, coset_shift=shift, input_log_m=m)]


def fake_xrt(tmp_path, host_params, card_params, field=None, **knobs):
    """An XrtBackend for ``host_params`` (points in its field, or ``field``) on a stand-in card built with
    ``card_params`` (sim/fake_pyxrt.py; ``knobs`` go to FakePyxrt)."""
    from nantucket.host import xrt as X
    from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin
    fake = FakePyxrt(**knobs)
    path = write_xclbin(tmp_path / "nantucket.xclbin", card_params)
    field = field or (host_params.field if host_params is not None else "goldilocks")
    return X.XrtBackend(host_params, xclbin=path, pyxrt_module=fake, field=field, timeout_s=1.0, progress=False)


def lde_on_card(card, shift: int, seed: int = 5):
    """The prover's LDE in two starts on one card, the data never leaving it: the inverse transform of 2^m
    random evaluations (m = 2k - 2) written as the zero-extended input of a 2^2k run (chain_log_n), then
    the forward coset transform with ``shift`` reading it (input_log_m), on memory filled with garbage;
    checked against the golden model's inverse then coset transform in the build's field. Returns
    (evaluations, output, n) for the caller's own checks."""
    import numpy as np
    from nantucket.hw.model import ntt
    p, field = card.params, card.params.prime_field
    n, m = p.max_log_n, p.max_log_n - 2
    rng = np.random.default_rng(seed)
    for mem in card.mem:
        mem[:] = rng.integers(0, 1 << 64, mem.size, dtype=np.uint64)
    evaluations = rng.integers(0, field.p, 1 << m, dtype=np.uint64)
    HbmLayout(p, m, 1).scatter_into(evaluations, card.mem, "input")
    assert card.start(trial(Run(m, FLAG_INVERSE, chain_log_n=n), 0)) == 0
    assert card.start(trial(Run(n, FLAG_COSET, coset_shift=shift, input_log_m=m), 0)) == 0
    got = HbmLayout(p, n, 1).gather_from(card.mem, "output")
    card.sequence = None                        # started outside card.check: its record count restarts
    want = ntt.transform(ntt.transform(evaluations, inverse=True, field=field), coset=shift, size=1 << n,
                         field=field)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} of {want.size} points differ from the golden model, first at {bad[0]}"
    return evaluations, got, n
