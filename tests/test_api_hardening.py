"""Hardening of the library API and the device backends: unknown keywords and ill-typed options named, sizes
beyond the field or the machine's memory refused before allocating, the device's own lines in its log,
a bad build folder or xclbin path said as such, devices shared by threads, the simulated card quiet.

Results are checked against the golden model's plain NTT (hw.model.ntt), never against the API itself.
"""

import math
import threading
import time
import tracemalloc

import numpy as np
import pytest

import nantucket
from nantucket.host import backends as B
from nantucket.host import memory as M
from nantucket.host import xrt as X
from nantucket.host.backend_base import DeviceError, ModelBackend
from nantucket.host.sim_backend import SimBackend, smallest_params
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.build_root import BuildDirUnwritable
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin
from nantucket.sim.kernel_model import ModelCard

P = 2**64 - 2**32 + 1
SMALL = BuildParams(lanes=4, log_core=3, channels=4)            # native 2^4 .. 2^6 on the stand-in card


def rand_points(shape, seed):
    return np.random.default_rng(seed).integers(0, P, size=shape, dtype=np.uint64)


def plain_ntt(x, inverse=False):
    """The golden model's natural-order NTT of every row."""
    rows = np.asarray(x).reshape(-1, np.shape(x)[-1])
    return np.stack([ntt_model.ntt(r, inverse) for r in rows]).reshape(np.shape(x))


def open_fake_xrt(tmp_path, params=SMALL, **options):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake,
                                **{"timeout_s": 5.0, "progress": False, **options})


# -- item 1: unknown keywords -------------------------------------------------------------------------

X8 = np.arange(8, dtype=np.uint64)

SIM_OPTIONS = "params, field, refresh, stalls, progress, cycle_budget"
XRT_OPTIONS = "params, xclbin, device, pyxrt_module, field, layout, timeout_s, progress, kernel_computes"
NTT_XRT_OPTIONS = "params, xclbin, device, pyxrt_module, layout, timeout_s, progress, kernel_computes"

TYPOS = [  # (call, the message's start, its unknown keyword, its valid list)
    (lambda: nantucket.ntt(X8, cosett=7), "ntt", "cosett", "inverse, coset, order, axis, ext, backend, field, params"),
    (lambda: nantucket.ntt(X8, invrese=True), "ntt", "invrese", "inverse, coset, order, axis, ext, backend, field, params"),
    (lambda: nantucket.intt(X8, ordr="rr"), "intt", "ordr", "coset, order, axis, ext, backend, field, params"),
    (lambda: nantucket.intt(X8, inverse=True), "intt", "inverse", "coset, order, axis, ext, backend, field, params"),
    (lambda: nantucket.ntt(X8, backend="xrt", xclbn="a.xclbin"), "ntt", "xclbn",
     "inverse, coset, order, axis, ext, backend, field, " + NTT_XRT_OPTIONS),
    (lambda: nantucket.open("sim", parms=SMALL), r"open\('sim'\)", "parms", SIM_OPTIONS),
    (lambda: nantucket.open("model", refesh=False), r"open\('model'\)", "refesh", "params, field"),
    (lambda: nantucket.open("model", refresh=False), r"open\('model'\)", "refresh", "params, field"),
    (lambda: nantucket.open("xrt", xclbn="a.xclbin"), r"open\('xrt'\)", "xclbn", XRT_OPTIONS),
    (lambda: B.make_backend("sim", parms=SMALL), r"make_backend\('sim'\)", "parms", SIM_OPTIONS),
    (lambda: ModelBackend(parms=SMALL), "ModelBackend", "parms", "params, field"),
    (lambda: SimBackend(parms=SMALL), "SimBackend", "parms", SIM_OPTIONS),
    (lambda: X.XrtBackend(xclbn="a.xclbin"), "XrtBackend", "xclbn", XRT_OPTIONS),
]


@pytest.mark.parametrize("call, what, unknown, valid", TYPOS, ids=[f"{t[1]}-{t[2]}" for t in TYPOS])
def test_an_unknown_keyword_is_a_type_error_naming_it_and_the_valid_ones(call, what, unknown, valid):
    with pytest.raises(TypeError, match=rf"^{what}: unknown keyword '{unknown}' \(valid: {valid}\)"):
        call()


def test_the_brief_s_message_for_open_sim():
    with pytest.raises(TypeError) as e:
        nantucket.open("sim", parms=SMALL)
    assert str(e.value).startswith("open('sim'): unknown keyword 'parms' (valid: params, field, refresh, stalls, "
                                   "progress, cycle_budget)")
    assert "did you mean 'params'" in str(e.value)


def test_device_methods_refuse_unknown_keywords_and_leave_the_data():
    with nantucket.open("model") as dev:
        a = dev.asarray(X8)
        for call, what, valid in [
                (lambda: dev.ntt(a, cosett=7), "Device.ntt", "a, inverse, coset, order, axis, ext, wait"),
                (lambda: dev.ntt(a, invrese=True), "Device.ntt", "a, inverse, coset, order, axis, ext, wait"),
                (lambda: dev.intt(a, ordr="rr"), "Device.intt", "a, coset, order, axis, ext, wait"),
                (lambda: dev.intt(a, inverse=False), "Device.intt", "a, coset, order, axis, ext, wait"),
                (lambda: dev.asarray(X8, copy=True), "Device.asarray", "x, axis, ext, wait"),
                (lambda: dev.lde(a, 2, 7, shfit=3), "Device.lde", "values, blowup, shift, order, return_coeffs, axis, ext, wait"),
                (lambda: a.numpy(copy=False), "DeviceArray.numpy", "out, wait"),
                (lambda: dev.close(force=True), "Device.close", "none")]:
            with pytest.raises(TypeError, match=rf"^{what}: unknown keyword '\w+' \(valid: {valid}\)"):
                call()
        assert not dev.closed
        assert np.array_equal(a.numpy(), X8), "a refused call changed the data"


def test_a_typo_is_refused_before_the_backend_opens():
    # xrt without a card, pyxrt or xclbin: had it been opened, the error would be another
    with pytest.raises(TypeError, match="unknown keyword 'cosett'"):
        nantucket.ntt(X8, backend="xrt", cosett=7)
    with pytest.raises(TypeError, match="unknown keyword 'timeout'"):
        nantucket.open("xrt", timeout=3)


def test_backend_options_are_each_constructor_s_keywords():
    assert B.backend_options("model") == ("params", "field")
    assert B.backend_options("sim") == tuple(SIM_OPTIONS.split(", "))
    assert B.backend_options("xrt") == tuple(XRT_OPTIONS.split(", "))
    with pytest.raises(ValueError, match="backend: unknown backend 'gpu'"):
        B.backend_options("gpu")


def test_device_options_keeps_the_cli_options_each_backend_takes(monkeypatch):
    def progress(line):
        pass
    given = dict(params=SMALL, xclbin=None, device=0, progress=progress)
    assert B.device_options("model", **given) == {"params": SMALL}
    assert B.device_options("sim", **given) == {"params": SMALL, "progress": progress}
    assert B.device_options("xrt", **given) == given

    def anything(**options):             # a factory that takes any keyword gets them all
        return ModelBackend()
    monkeypatch.setitem(B.BACKENDS, "any", anything)
    assert B.device_options("any", **given) == given
    # what the CLI does with them opens every backend (sim starts nothing until a transform)
    for name in ("model", "sim", "any"):
        with nantucket.open(name, **B.device_options(name, **given)) as dev:
            assert dev.backend is not None


@pytest.mark.parametrize("bad", [{"lanes": 4}, "L4_k3_C4", 3, SMALL.as_dict()])
def test_params_that_are_not_build_params_are_named(bad, tmp_path):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "n.xclbin", SMALL)
    for call in (lambda: nantucket.open("model", params=bad), lambda: nantucket.open("sim", params=bad),
                 lambda: nantucket.open("xrt", params=bad, xclbin=xclbin, pyxrt_module=fake),
                 lambda: nantucket.ntt(X8, params=bad), lambda: ModelBackend(params=bad),
                 lambda: SimBackend(params=bad), lambda: X.XrtBackend(bad, xclbin=xclbin, pyxrt_module=fake)):
        with pytest.raises(TypeError, match=r"^params: expected BuildParams or None, got "):
            call()
    assert fake.kernel_model is None, "the card was opened before params was checked"


def test_a_masked_array_is_refused_naming_the_argument():
    masked = np.ma.masked_array(X8, mask=[0, 1, 0, 0, 0, 0, 0, 0])
    with pytest.raises(TypeError, match=r"^x: a masked array .* its mask would be ignored"):
        nantucket.ntt(masked)
    with nantucket.open("model") as dev:
        for call, name in ((lambda: dev.asarray(masked), "x"), (lambda: dev.ntt(masked), "a"),
                           (lambda: dev.lde(masked, 2, 7), "values")):
            with pytest.raises(TypeError, match=rf"^{name}: a masked array"):
                call()
        assert dev.transfers["to-device"] == 0


@pytest.mark.parametrize("order", [np.array(["nn"]), np.array(["nn", "rr"]), ["nn"], ("r", "r"), b"nn", 1, None])
def test_an_order_that_is_not_a_str_is_a_type_error_naming_order(order):
    with pytest.raises(TypeError, match=r"^order: expected a str, one of nn, nr, rn, rr"):
        nantucket.ntt(X8, order=order)
    with nantucket.open("model") as dev:
        a = dev.asarray(X8)
        with pytest.raises(TypeError, match=r"^order: expected a str"):
            dev.ntt(a, order=order)
        assert np.array_equal(a.numpy(), X8)


def test_a_numpy_str_order_is_an_order():
    x = rand_points(16, 1)
    assert np.array_equal(nantucket.ntt(x, order=np.str_("nn")), plain_ntt(x))


@pytest.mark.parametrize("bad", ["inverse", "", None, 3, {"inverse": True}.keys()])
def test_kernel_computes_that_is_not_a_collection_of_names_is_named(bad, tmp_path):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "n.xclbin", SMALL)
    with pytest.raises(TypeError, match=r"^kernel_computes: expected a set of transform names"):
        X.XrtBackend(SMALL, xclbin=xclbin, pyxrt_module=fake, kernel_computes=bad)
    with pytest.raises(TypeError, match=r"^kernel_computes: expected a set of transform names"):
        nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=fake, kernel_computes=bad)
    assert fake.kernel_model is None
    with pytest.raises(ValueError, match=r"^kernel_computes: unknown transforms \['inverse '\]"):
        X.XrtBackend(SMALL, xclbin=xclbin, pyxrt_module=fake, kernel_computes={"inverse "})


@pytest.mark.parametrize("bad, exc", [("1", TypeError), (True, TypeError), (np.bool_(True), TypeError),
                                      ([1], TypeError), (math.nan, ValueError), (0, ValueError),
                                      (-1.5, ValueError), (-math.inf, ValueError)])
def test_timeout_s_that_is_not_a_positive_number_is_named(bad, exc, tmp_path):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "n.xclbin", SMALL)
    with pytest.raises(exc, match=r"^timeout_s: expected a positive number of seconds"):
        X.XrtBackend(SMALL, xclbin=xclbin, pyxrt_module=fake, timeout_s=bad)
    assert fake.kernel_model is None


@pytest.mark.parametrize("timeout_s", [math.inf, np.float64(2.5), 3, 1e300])
def test_timeout_s_may_be_any_positive_real_inf_meaning_no_limit(timeout_s, tmp_path):
    _, dev = open_fake_xrt(tmp_path, timeout_s=timeout_s)
    with dev:
        x = rand_points(64, 2)
        assert np.array_equal(dev.ntt(dev.asarray(x)).numpy(), plain_ntt(x))
        assert dev.backend.timeout_s == (None if timeout_s == math.inf else float(timeout_s))


@pytest.mark.parametrize("bad, exc", [(True, TypeError), ("0", TypeError), (1.0, TypeError), (-1, ValueError)])
def test_device_index_is_an_int(bad, exc, tmp_path):
    with pytest.raises(exc, match=r"^device: expected a device index"):
        X.XrtBackend(SMALL, xclbin=write_xclbin(tmp_path / "n.xclbin", SMALL), device=bad,
                     pyxrt_module=FakePyxrt())
    X.XrtBackend(SMALL, xclbin=tmp_path / "n.xclbin", device=np.int64(0), pyxrt_module=FakePyxrt()).close()


@pytest.mark.parametrize("options, exc, name", [
    (dict(refresh="no"), TypeError, "refresh"), (dict(stalls=1), TypeError, "stalls"),
    (dict(progress=3), TypeError, "progress"), (dict(progress="stderr"), TypeError, "progress"),
    (dict(cycle_budget=True), ValueError, "cycle_budget"), (dict(cycle_budget=0), ValueError, "cycle_budget"),
    (dict(cycle_budget=2.5), ValueError, "cycle_budget")])
def test_sim_options_are_checked_by_type(options, exc, name):
    with pytest.raises(exc, match=rf"^{name}: expected"):
        SimBackend(**options)


def test_sim_options_take_numpy_values():
    SimBackend(cycle_budget=np.int64(1000), refresh=np.bool_(False)).close()


def test_numpy_integers_are_shifts_and_bools_are_not():
    x = rand_points(16, 3)
    g = 7

    def scaled(v):
        return np.array([pow(g, j, P) * int(c) % P for j, c in enumerate(v)], dtype=np.uint64)
    want = plain_ntt(scaled(x))
    for shift in (np.int64(g), np.uint64(g), np.int32(g)):
        assert np.array_equal(nantucket.ntt(x, coset=shift), want)
    with nantucket.open("model") as dev:
        lde = dev.lde(x, np.int64(2), np.uint64(g)).numpy()
        coeffs = np.concatenate([plain_ntt(x, inverse=True), np.zeros(16, dtype=np.uint64)])
        assert np.array_equal(lde, plain_ntt(scaled(coeffs)))
        for bad in (True, np.bool_(True)):
            with pytest.raises(TypeError, match="^coset: expected an int shift"):
                dev.ntt(x, coset=bad)
            with pytest.raises(TypeError, match="^shift: expected an int shift"):
                dev.lde(x, 2, bad)
        with pytest.raises(ValueError, match="^blowup: expected a power of two"):
            dev.lde(x, True, g)


# -- item 2: sizes beyond the field and beyond the machine's memory -----------------------------------

def test_an_lde_beyond_the_field_s_largest_size_names_blowup_and_the_size():
    with nantucket.open("model") as dev:
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match=r"^blowup: 1073741824 \(2\^30\) x 8 points = 2\^33 points is "
                                             r"beyond the field's largest transform size 2\^32"):
            dev.lde(X8, blowup=2**30, shift=7)
        a = dev.asarray(np.ones((3, 16), dtype=np.uint64))
        with pytest.raises(ValueError, match=r"^blowup: .* = 2\^33 points"):
            dev.lde(a, 2**29, 7)
        assert time.perf_counter() - t0 < 1.0


def _peak_bytes(call):
    """numpy's and Python's peak allocation during call() (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.fixture
def small_machine(monkeypatch):
    """A machine with 16 MiB available."""
    monkeypatch.setattr(M, "available_bytes", lambda: 16 << 20)
    return 16 << 20


def test_a_legal_but_huge_lde_is_refused_before_allocating(small_machine):
    with nantucket.open("model") as dev:
        a = dev.asarray(X8)
        errors = []

        def call():
            try:
                dev.lde(a, 2**23, 7)                          # 2^26 points = 512 MiB of output alone
            except M.MemoryTooSmall as e:
                errors.append(e)
        assert _peak_bytes(call) < 1 << 20, "the refusal came after allocating"
        assert errors and isinstance(errors[0], ValueError)
        assert str(errors[0]).startswith("lde to 2^26 points needs ")
        assert str(errors[0]).endswith(" of memory, this machine has 16.0 MiB available")
        needs = float(str(errors[0]).split("needs ")[1].split(" GiB")[0])
        assert needs >= 1.0, "an LDE to 512 MiB needs at least twice that"


def test_huge_transforms_and_copies_are_refused_naming_the_size(small_machine):
    x = np.ones((4, 1 << 20), dtype=np.uint64)             # 32 MiB: twice what the machine has
    with nantucket.open("model") as dev:
        with pytest.raises(M.MemoryTooSmall, match=r"^x: 4 x 2\^20 points on the device needs 32\.0 MiB of "
                                                   r"memory, this machine has 16\.0 MiB available$"):
            dev.asarray(x)
        with pytest.raises(M.MemoryTooSmall, match=r"^inverse ntt of 4 x 2\^20 points needs [\d.]+ MiB"):
            dev.ntt(x, inverse=True)
        with pytest.raises(M.MemoryTooSmall, match=r"^x: 4 x 2\^20 points on the device needs"):
            nantucket.ntt(x)
        with pytest.raises(M.MemoryTooSmall, match=r"^x: 2\^22 points on the device needs"):
            nantucket.ntt(x.reshape(-1), backend="model", order="rr")
        assert dev.transfers["to-device"] == 0
        small = rand_points(1 << 10, 4)                      # what fits still runs
        assert np.array_equal(dev.ntt(small).numpy(), plain_ntt(small))


@pytest.mark.parametrize("shape, inverse, blowup", [((1 << 17,), True, None), ((1 << 17,), False, None),
                                                    ((64, 1 << 11), True, None), ((1 << 13, 16), False, None),
                                                    ((1 << 15,), None, 4), ((16, 1 << 10), None, 2)])
def test_the_model_s_memory_estimate_bounds_what_it_allocates_and_is_not_far_above(shape, inverse, blowup):
    """The estimate checked against the machine must hold the model's real peak (else a size that does
    not fit would start), and stay within a small factor of it (else sizes that fit, 2^24 points on a
    machine of a few GiB, would be refused)."""
    x = rand_points(shape, 5)
    with nantucket.open("model") as dev:
        a = dev.asarray(x)
        if blowup is None:
            estimate = dev._transform_bytes(shape, inverse)
            peak = _peak_bytes(lambda: dev.ntt(a, inverse=inverse, coset=7, order="rr"))
        else:
            estimate = dev._lde_bytes(shape, blowup)
            peak = _peak_bytes(lambda: dev.lde(a, blowup, 7))
    assert peak <= estimate <= 4 * peak, (peak, estimate)


def test_check_fits_reads_the_machine_s_memory():
    available = M.available_bytes()
    total = M.os.sysconf("SC_PHYS_PAGES") * M.os.sysconf("SC_PAGE_SIZE")
    assert 0 < available <= total
    M.check_fits(1 << 20, "a MiB")
    with pytest.raises(M.MemoryTooSmall, match=r"^a lot needs .* of memory, this machine has .* available$"):
        M.check_fits(4 * total, "a lot")


def test_available_memory_falls_back_to_sysconf(monkeypatch):
    monkeypatch.setattr(M, "_meminfo_available", lambda: None)
    monkeypatch.setattr(M, "_cgroup_available", lambda: None)
    # a fixed machine, so the answer is exact (the real free pages move between two readings)
    fake = {"SC_AVPHYS_PAGES": 12345, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(M.os, "sysconf", lambda name: fake[name])
    assert M.available_bytes() == 12345 * 4096
    assert M.format_bytes(1536) == "1.5 KiB" and M.format_bytes(100) == "100 B"


# -- item 4: what the device did, in its log ----------------------------------------------------------

def test_the_xrt_driver_writes_each_stage_and_its_error_to_progress(tmp_path):
    lines = []
    xclbin = write_xclbin(tmp_path / "n.xclbin", SMALL)
    fake = FakePyxrt(hang=True)
    with nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=fake, timeout_s=0.05,
                        progress=lines.append) as dev:
        assert lines[0] == "xrt: opening device 0" and lines[1] == f"xrt: loading {xclbin}"
        assert lines[2].startswith(f"xrt: kernel 'nantucket' ready, {SMALL.tag()} build; ID block")
        a = dev.asarray(rand_points(64, 6))
        with pytest.raises(DeviceError) as e:
            dev.ntt(a)
    assert "xrt: kernel call: 2^6 points, batch 1, flags 0x0, chain_log_n 6" in lines     # resident: chained
    errors = [line for line in lines if line.startswith("xrt: error: ")]
    assert errors == [f"xrt: error: {e.value}"], "the error is in the log once"

    lines.clear()
    with pytest.raises(X.DeviceOpenFailed) as e:
        nantucket.open("xrt", params=SMALL, xclbin=xclbin, device=3, pyxrt_module=FakePyxrt(),
                       progress=lines.append)
    assert lines == ["xrt: opening device 3", f"xrt: error: {e.value}"]


class _ModelKernel(ModelCard):
    """The simulated card over the register-level kernel model (no Verilator), remembering its starts."""

    started = []

    def __init__(self, params, hbm, layout, **options):
        super().__init__(params, hbm, layout, **options)
        _ModelKernel.started.append(params)


class _FailingKernel(_ModelKernel):
    def __init__(self, params, hbm, layout, **options):
        from nantucket.sim.cosim import SimulationError
        raise SimulationError("the simulator did not start: verilator exited with 1")


@pytest.fixture
def model_kernel(monkeypatch):
    import nantucket.sim.cosim
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _ModelKernel)
    _ModelKernel.started = []


def test_the_sim_backend_writes_its_stages_and_says_the_simulator_failed(monkeypatch, capfd):
    import nantucket.sim.cosim
    monkeypatch.setattr(nantucket.sim.cosim, "SimulatedKernel", _FailingKernel)
    lines = []
    with nantucket.open("sim", params=SMALL, progress=lines.append) as dev:
        with pytest.raises(DeviceError) as e:
            dev.ntt(X8 + 1)
    # the simulator failed, not "xclbin ... cannot load"
    assert str(e.value) == "simulated kernel: the simulator did not start: verilator exited with 1"
    assert not isinstance(e.value, X.XclbinLoadFailed)
    assert lines[0].startswith(f"sim: starting the simulated card for the {SMALL.tag()} build")
    assert lines[-1] == f"sim: error: {e.value}"
    assert capfd.readouterr() == ("", "")


def test_the_sim_backend_is_quiet_unless_asked_and_says_each_stage_when_asked(model_kernel, capfd):
    x = rand_points((2, 16), 7)
    with nantucket.open("sim", params=SMALL) as dev:
        assert np.array_equal(dev.ntt(dev.asarray(x)).numpy(), plain_ntt(x))
    assert capfd.readouterr() == ("", "")
    with nantucket.open("sim", params=SMALL, progress=True) as dev:
        dev.ntt(dev.asarray(x))
    out, err = capfd.readouterr()
    assert out == "" and f"[cosim] model kernel for {SMALL.tag()}" in err and "xrt: kernel call" in err


def test_the_runner_s_lines_go_where_the_simulated_card_says(capfd):
    from nantucket.hw.flow import runner
    lines = []
    with runner.lines_to(lines.append):
        runner._log("building x")
        with runner._ticker("building x", time.monotonic(), every=0.01):
            time.sleep(0.1)
    runner._log("after")
    assert lines[0] == "[hw.flow.runner] building x" and lines[1].startswith("[hw.flow.runner] building x: ")
    assert capfd.readouterr().err == "[hw.flow.runner] after\n"


def test_an_unwritable_build_folder_is_named_before_anything_starts(monkeypatch, tmp_path, model_kernel):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NANTUCKET_BUILD_DIR", str(blocker / "build"))
    for call in (lambda: nantucket.open("sim"), lambda: nantucket.ntt(X8, backend="sim"),
                 lambda: SimBackend(params=SMALL)):
        with pytest.raises(BuildDirUnwritable) as e:
            call()
        assert isinstance(e.value, ValueError) and "\n" not in str(e.value)
        assert str(e.value).startswith(f"NANTUCKET_BUILD_DIR={blocker / 'build'}: cannot write the build "
                                       f"folder {blocker / 'build'} (Not a directory)")
    assert _ModelKernel.started == []
    monkeypatch.setenv("NANTUCKET_BUILD_DIR", str(tmp_path / "new" / "build"))
    SimBackend().close()
    assert (tmp_path / "new" / "build").is_dir() and not list((tmp_path / "new" / "build").iterdir())


def test_a_missing_xclbin_or_a_directory_is_a_bad_argument(tmp_path):
    missing = tmp_path / "none.xclbin"
    for xclbin, text in ((missing, f"xclbin: {missing} does not exist"),
                         (tmp_path, f"xclbin: {tmp_path} is a directory, not an xclbin file")):
        # pyxrt_module omitted: the path is checked before pyxrt is imported (absent on this machine)
        for call in (lambda: X.XrtBackend(SMALL, xclbin=xclbin), lambda: nantucket.open("xrt", xclbin=xclbin)):
            with pytest.raises(X.XclbinNotFound) as e:
                call()
            assert isinstance(e.value, ValueError) and isinstance(e.value, DeviceError)
            assert str(e.value).startswith(text)
    with pytest.raises(TypeError, match="^xclbin: expected a path"):
        X.XrtBackend(SMALL, xclbin=3)


# -- item 4: a device shared by threads ---------------------------------------------------------------

def _hammer(work, threads=2):
    """Run work(i) in threads started together; re-raise the first error."""
    errors = []
    barrier = threading.Barrier(threads)

    def run(i):
        try:
            barrier.wait()
            work(i)
        except BaseException as e:          # noqa: BLE001 - reported to the test
            errors.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def _overlap_probe(obj, name):
    """Wrap obj.name to record how many calls run at once; returns the list of that count's maxima."""
    inner = getattr(obj, name)
    state = {"active": 0, "max": 0}
    lock = threading.Lock()

    def probe(*args, **kwargs):
        with lock:
            state["active"] += 1
            state["max"] = max(state["max"], state["active"])
        try:
            time.sleep(0.002)               # a window for another thread to come in
            return inner(*args, **kwargs)
        finally:
            with lock:
                state["active"] -= 1
    setattr(obj, name, probe)
    return state


def test_two_threads_on_one_model_device_take_turns():
    with nantucket.open("model") as dev:
        state = _overlap_probe(dev, "_rows_ntt")
        xs = [rand_points((2, 64), 10 + i) for i in range(2)]

        def work(i):
            a = dev.asarray(xs[i])
            for _ in range(10):
                dev.ntt(a, coset=7)
                dev.intt(a, coset=7)
            assert np.array_equal(a.numpy(), xs[i])
        _hammer(work)
    assert state["max"] == 1


def test_two_threads_on_one_xrt_device_take_turns(tmp_path):
    fake, dev = open_fake_xrt(tmp_path)
    with dev:
        state = _overlap_probe(dev.backend, "execute_run")
        xs = [rand_points((2, 1 << (4 + i)), 20 + i) for i in range(2)]     # two sizes: two layouts

        def work(i):
            a = dev.asarray(xs[i])
            for _ in range(5):
                dev.ntt(a)
                assert np.array_equal(a.numpy(), plain_ntt(xs[i]))
                dev.intt(a)
            assert np.array_equal(a.numpy(), xs[i])
        _hammer(work)
    assert state["max"] == 1 and fake.kernel_model.runs >= 20


def test_two_threads_on_one_sim_device_take_turns(model_kernel):
    """Two sizes without build parameters: each needs its own build, so each run closes the other's
    simulated card (before the lock: an AttributeError in the other thread)."""
    with nantucket.open("sim") as dev:
        xs = [rand_points(1 << 4, 30), rand_points(1 << 6, 31)]

        def work(i):
            for _ in range(4):
                assert np.array_equal(dev.ntt(xs[i]).numpy(), plain_ntt(xs[i]))
        _hammer(work)
    assert {p.tag() for p in _ModelKernel.started} == {smallest_params(16).tag(), smallest_params(64).tag()}


def test_a_call_waiting_for_a_device_closed_meanwhile_is_told_it_is_closed():
    with nantucket.open("model") as dev:
        a = dev.asarray(rand_points(64, 40))
        inner = dev._rows_ntt
        entered = threading.Event()

        def slow(rows, inverse):
            entered.set()
            time.sleep(0.2)
            return inner(rows, inverse)
        dev._rows_ntt = slow
        events = []

        def call():
            dev.ntt(a)
            events.append("transformed")
        t = threading.Thread(target=call)
        t.start()
        entered.wait()
        dev.close()                         # waits for the running call
        events.append("closed")
        t.join()
        assert events == ["transformed", "closed"]
        with pytest.raises(RuntimeError, match="device 'model' is closed"):
            dev.ntt(a)


# -- item 4: the simulated card through the one-call API prints nothing ---------------------------------

def test_ntt_on_the_sim_backend_prints_nothing(capfd):
    """The real simulated card (Verilator; the build test_api.py's sim test uses, compiled once)."""
    x = rand_points(16, 50)
    y = nantucket.ntt(x, backend="sim", params=smallest_params(64))
    assert capfd.readouterr() == ("", "")
    assert np.array_equal(y, plain_ntt(x))
