"""The public API (nantucket/): transforms against a direct computation over the field written here
with Python ints, batches, orders, cosets, the LDE, devices and residency, argument errors; the same
sequence on the xrt backend (stand-in pyxrt with the register-level kernel model) and once on the
simulated card (Verilator), bit-identical with the model.
"""

import numpy as np
import pytest

import nantucket
from nantucket.host import backends as B
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.host.sim_backend import smallest_params
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

P = 2**64 - 2**32 + 1
EDGES = [0, 1, 2, P - 1, P - 2, 2**32 - 1, 2**32, 2**63, 2**64 - 2**33]
ORDERS = ["nn", "nr", "rn", "rr"]
BIG_SHIFT = 0x1234_5678_9ABC_DEF1 % P


# -- the independent computation -------------------------------------------------------------------

def root(n):
    """The transform's root of unity: 7^((p-1)/n), 7 generating the multiplicative group."""
    return pow(7, (P - 1) // n, P)


def bitrev(i, k):
    return int(format(i, f"0{k}b")[::-1], 2) if k else 0


def permute_bitrev(v):
    k = len(v).bit_length() - 1
    return [v[bitrev(i, k)] for i in range(len(v))]


def ref_transform(x, inverse=False, coset=None, order="nn"):
    """The definitions: forward X_k = sum_j x_j g^j w^(jk); inverse x_j = g^(-j) (1/N) sum_k X_k w^(-jk)."""
    v = [int(a) for a in x]
    n = len(v)
    if order[0] == "r":
        v = permute_bitrev(v)
    g = 1 if coset is None else coset
    w = root(n)
    if not inverse:
        out = [sum(v[j] * pow(g, j, P) * pow(w, j * k, P) for j in range(n)) % P for k in range(n)]
    else:
        w_inv, n_inv, g_inv = pow(w, P - 2, P), pow(n, P - 2, P), pow(g, P - 2, P)
        out = [pow(g_inv, j, P) * n_inv * sum(v[k] * pow(w_inv, j * k, P) for k in range(n)) % P
               for j in range(n)]
    if order[1] == "r":
        out = permute_bitrev(out)
    return out


def evaluate(coeffs, z):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * z + c) % P
    return acc


def rand_points(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, P, size=shape, dtype=np.uint64)
    flat = x.reshape(-1)
    k = min(flat.size, len(EDGES))
    flat[:k] = np.array(EDGES[:k], dtype=np.uint64)
    return x


def as_ints(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


# -- transforms on the model ------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 8, 64])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("coset", [None, 7, BIG_SHIFT])
@pytest.mark.parametrize("inverse", [False, True], ids=["forward", "inverse"])
def test_transform_matches_the_definition(n, order, coset, inverse):
    x = rand_points(n, seed=n)
    y = nantucket.ntt(x, inverse=inverse, coset=coset, order=order)
    assert y.dtype == np.uint64 and y.shape == x.shape
    assert as_ints(y) == ref_transform(x, inverse, coset, order)
    if inverse:
        assert np.array_equal(nantucket.intt(x, coset=coset, order=order), y)


def test_batch_transforms_every_row():
    x = rand_points((3, 16), seed=3)
    y = nantucket.ntt(x, coset=5, order="nr")
    assert y.shape == (3, 16)
    for r in range(3):
        assert as_ints(y[r]) == ref_transform(x[r], coset=5, order="nr"), f"row {r}"


def test_python_int_lists_are_accepted():
    rows = [[1, 2, 3, P - 1], [0, 2**63, 5, 6]]
    y = nantucket.ntt(rows)
    assert y.dtype == np.uint64
    assert [as_ints(r) for r in y] == [ref_transform(r) for r in rows]


def test_any_byte_order_and_strides():
    x = rand_points((2, 32), seed=4)
    expected = nantucket.ntt(x)
    assert np.array_equal(nantucket.ntt(x.astype(">u8")), expected)
    wide = np.zeros((2, 64), dtype=np.uint64)
    wide[:, ::2] = x
    y = nantucket.ntt(wide[:, ::2])
    assert y.dtype == np.dtype(np.uint64) and np.array_equal(y, expected)


def spot_values(x, ks, coset):
    """X_k of the coset transform for a few k, each by one O(N) sum."""
    n, g, w = len(x), coset, root(len(x))
    v = [int(a) for a in x]
    return [sum(v[j] * pow(g, j, P) * pow(w, j * k, P) for j in range(n)) % P for k in ks]


def test_large_rows_spot_checked():
    """Rows longer than 2^10 take the model's four-step path; check sampled outputs directly."""
    x = rand_points((2, 1 << 11), seed=11)
    y = nantucket.ntt(x, coset=7, order="nr")
    k = 11
    for r in range(2):
        ks = [0, 1, 1000, 2047]
        got = [int(y[r][bitrev(kk, k)]) for kk in ks]       # output is bit-reversed
        assert got == spot_values(x[r], ks, 7), f"row {r}"
    back = nantucket.intt(y, coset=7, order="rn")
    assert np.array_equal(back, x)


@pytest.mark.parametrize("order_fwd, order_inv", [("nn", "nn"), ("nr", "rn"), ("rn", "nr"), ("rr", "rr")])
def test_coset_round_trip(order_fwd, order_inv):
    x = rand_points((2, 32), seed=5)
    y = nantucket.ntt(x, coset=BIG_SHIFT, order=order_fwd)
    assert np.array_equal(nantucket.intt(y, coset=BIG_SHIFT, order=order_inv), x)


@pytest.mark.parametrize("blowup", [1, 2, 4])
@pytest.mark.parametrize("shift", [7, BIG_SHIFT])
def test_lde_evaluates_the_polynomial_on_the_coset(blowup, shift):
    m = 8
    rng = np.random.default_rng(blowup)
    coeffs = [[int(c) for c in rng.integers(0, P, size=m, dtype=np.uint64)] for _ in range(2)]
    coeffs[1][-1] = P - 1
    evals = np.array([[evaluate(c, pow(root(m), i, P)) for i in range(m)] for c in coeffs], dtype=np.uint64)
    z = [shift * pow(root(m * blowup), k, P) % P for k in range(m * blowup)]
    with nantucket.open("model") as dev:
        out = dev.lde(evals, blowup, shift)
        assert out.shape == (2, m * blowup)
        got = out.numpy()
        one = dev.lde(evals[0], blowup, shift).numpy()
    for r in range(2):
        assert as_ints(got[r]) == [evaluate(coeffs[r], zk) for zk in z], f"row {r}"
    assert one.shape == (m * blowup,) and np.array_equal(one, got[0])


# -- devices -----------------------------------------------------------------------------------------

def chain(dev, x, values):
    """One sequence of device operations; returns every intermediate result as numpy."""
    x_before = x.copy()
    a = dev.asarray(x)
    assert dev.ntt(a, coset=7, order="nr") is a
    first = a.numpy()
    dev.intt(a, coset=7, order="rn")
    back = a.numpy()
    b = dev.ntt(x[0], order="rr")                  # a numpy array: moved, then transformed
    assert isinstance(b, nantucket.DeviceArray)
    ext = dev.lde(values, 4, BIG_SHIFT)
    assert np.array_equal(x, x_before), "an argument was modified"
    return first, back, b.numpy(), ext.numpy()


def test_model_device_keeps_data_resident(monkeypatch):
    def no_round_trip(*_a, **_k):
        raise AssertionError("the model device must not go through Backend.run")
    monkeypatch.setattr(B.ModelBackend, "run", no_round_trip)
    x = rand_points((2, 16), seed=8)
    x_before = x.copy()
    with nantucket.open("model") as dev:
        a = dev.asarray(x)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0}
        dev.ntt(a, coset=7)
        dev.intt(a, coset=7)
        dev.ntt(a, order="nr")
        ext = dev.lde(a, 2, 7)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0}, "chained ops moved data"
        y = a.numpy()
        assert dev.transfers["from-device"] == x.nbytes
        assert as_ints(y[1]) == ref_transform(x[1], order="nr")
        assert ext.shape == (2, 32)
    assert np.array_equal(x, x_before)


def test_device_results_equal_the_functions():
    x = rand_points((2, 16), seed=9)
    values = rand_points(8, seed=10)
    with nantucket.open("model") as dev:
        first, back, b, ext = chain(dev, x, values)
    assert np.array_equal(first, nantucket.ntt(x, coset=7, order="nr"))
    assert np.array_equal(back, x)
    assert as_ints(b) == ref_transform(x[0], order="rr")
    assert ext.shape == (32,)


def open_fake_xrt(tmp_path, params, timeout_s=5.0, **knobs):
    fake = FakePyxrt(**knobs)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=timeout_s,
                                progress=False)


def test_xrt_backend_is_bit_identical_with_the_model(tmp_path):
    params = BuildParams(lanes=4, log_core=3, channels=4)        # native 2^4 .. 2^6: 16 and 64 both native
    x = rand_points((2, 16), seed=12)
    values = rand_points(16, seed=13)
    with nantucket.open("model") as dev:
        expected = chain(dev, x, values)
    fake, dev = open_fake_xrt(tmp_path, params)
    with dev:
        assert isinstance(dev, nantucket.BackendDevice)
        got = chain(dev, x, values)
        # One batched kernel call per transform of the (2, 16) array, one for x[0], two for the LDE.
        assert fake.kernel_model.runs == 5
        # What moves: each asarray and numpy; the ntt "nr" leaves a bit-reversed array in the input
        # placement, just what the intt "rn" reads, so only "rr" on x[0] (asarray put it in natural order)
        # needs a host round trip; the LDE moves its 16 values in and the 64 results out, nothing between.
        row = 16 * 8
        assert dev.relayouts == 1
        assert dev.transfers == {"to-device": 2 * row + row + row + row,
                                 "from-device": 2 * row + 2 * row + row + row + 4 * row}
    for e, g, what in zip(expected, got, ["coset nr", "round trip", "rr", "lde"]):
        assert np.array_equal(e, g), what


def test_xrt_device_runs_each_size_natively_and_reports_it(tmp_path):
    """Rows of 2^5 and 2^6 and 2^2 points on one device (native 2^4 .. 2^6): each right, the backend's
    report and kernel_log_n name the size the kernel ran, the kernel's log_n argument agrees."""
    params = BuildParams(lanes=4, log_core=3, channels=4)
    fake, dev = open_fake_xrt(tmp_path, params)
    with dev:
        for log_n, ran, text in ((5, 5, "2^5 points, native"), (6, 6, "2^6 points, native"),
                                 (2, 4, "2^4 points (2^2 zero-padded by the host)"),
                                 (5, 5, "2^5 points, native")):
            x = rand_points((2, 1 << log_n), seed=log_n)
            a = dev.asarray(x)
            dev.ntt(a, inverse=log_n == 6)
            with nantucket.open("model") as model:
                assert np.array_equal(a.numpy(), model.ntt(model.asarray(x), inverse=log_n == 6).numpy())
            assert dev.backend.kernel_log_n == ran == fake.kernel_model.arg_value("log_n")
            assert dev.backend.report["Kernel size"] == text


def test_a_size_past_one_kernel_call_runs_as_a_four_step(tmp_path):
    """Sizes past the build's 2^(2k) are no longer refused: the driver runs them as a four-step over
    kernel calls (host/large.py, tests/test_large.py); the LDE to such a size too."""
    params = BuildParams(lanes=4, log_core=2, channels=4)        # native N = 16
    fake, dev = open_fake_xrt(tmp_path, params)
    x, values = rand_points(32, seed=3), rand_points(16, seed=4)
    with dev:
        a = dev.asarray(x)
        assert not a.resident                                    # past one call: staged in host memory
        got, ext = dev.ntt(a).numpy(), dev.lde(values, 4, 7).numpy()
        assert fake.kernel_model.runs > 2
    with nantucket.open("model") as model:
        assert np.array_equal(got, model.ntt(x).numpy())
        assert np.array_equal(ext, model.lde(values, 4, 7).numpy())


def test_a_failed_run_raises_device_error_and_keeps_the_data(tmp_path):
    """A run that fails keeps a staged array's data (the result replaces it only on success); a resident
    array whose run timed out (the kernel may still write its buffers: pyxrt cannot abort it) is refused
    from then on, naming the run, rather than read back as if it were either."""
    _fake, dev = open_fake_xrt(tmp_path, BuildParams(lanes=4, log_core=2, channels=4), timeout_s=0.05,
                               hang=True)
    with dev:
        staged = dev.asarray(np.arange(8, dtype=np.uint64))             # below the native sizes
        a = dev.asarray(np.arange(16, dtype=np.uint64))
        assert a.resident and not staged.resident
        with pytest.raises(nantucket.DeviceError, match="did not finish"):
            dev.ntt(a, coset=7)
        with pytest.raises(RuntimeError, match=r"^a: the array may be half-written: the ntt run on it failed "
                                               r"\(KernelTimeout: the kernel did not finish"):
            a.numpy()
        with pytest.raises(nantucket.DeviceError):
            dev.ntt(staged)
        assert np.array_equal(staged.numpy(), np.arange(8, dtype=np.uint64))


# -- errors -------------------------------------------------------------------------------------------

BAD_INPUTS = [
    (np.array([1, P, 3, 4], dtype=np.uint64), ValueError,
     rf"value {P} at index 1 is not below the goldilocks modulus p = {P}"),
    (np.array([[1, 2], [3, 2**64 - 1]], dtype=np.uint64), ValueError,
     rf"value {2**64 - 1} at index \(1, 1\) is not below the goldilocks modulus p .*\(1 of the 4 values are >= p\)"),
    (np.arange(4, dtype=np.int64), TypeError, "expected a numpy uint64 array, got dtype int64"),
    (np.arange(4, dtype=np.float64), TypeError, "got dtype float64"),
    (np.arange(4, dtype=np.uint32), TypeError, "got dtype uint32"),
    (np.arange(4, dtype=object), TypeError, "got dtype object"),
    ("0123", TypeError, "got str"),
    ([1, 2, -3, 4], ValueError, r"element \(2,\) = -3 is not in \[0, p\)"),
    ([1, 2, P, 4], ValueError, r"element \(2,\) = \d+ is not in \[0, p\)"),
    ([1, 2.0], TypeError, r"element \(1,\) is float"),
    ([True, False], TypeError, r"element \(0,\) is bool"),
    ([[1, 2], [3]], ValueError, "the rows of a batch must all have the same length"),
    (np.arange(6, dtype=np.uint64), ValueError, "must be a power of two, got 6"),
    (np.zeros((2, 12), dtype=np.uint64), ValueError, r"power of two, got 12 \(shape \(2, 12\)\)"),
    (np.zeros((2, 2, 4), dtype=np.uint64), ValueError, r"got shape \(2, 2, 4\)"),
    (np.uint64(5), TypeError, "got uint64"),
    (np.array(5, dtype=np.uint64), ValueError, r"got shape \(\)"),
    (np.zeros(0, dtype=np.uint64), ValueError, "empty array"),
    (np.zeros((0, 8), dtype=np.uint64), ValueError, r"empty array \(shape \(0, 8\)\)"),
    ([], ValueError, "empty array"),
]


@pytest.mark.parametrize("x, exc, message", BAD_INPUTS, ids=[f"bad{i}" for i in range(len(BAD_INPUTS))])
def test_bad_points_are_named(x, exc, message):
    with pytest.raises(exc, match="x: .*" + message):
        nantucket.ntt(x)
    with nantucket.open("model") as dev:
        with pytest.raises(exc, match="x: .*" + message):
            dev.asarray(x)
        with pytest.raises(exc, match="values: .*" + message):
            dev.lde(x, 2, 7)
        with pytest.raises(exc, match="a: .*" + message):
            dev.ntt(x)
        assert dev.transfers["to-device"] == 0


BAD_OPTIONS = [
    (dict(coset=0), ValueError, r"coset: the shift must satisfy 0 < g < p .*got 0"),
    (dict(coset=P), ValueError, r"coset: the shift must satisfy 0 < g < p"),
    (dict(coset=-7), ValueError, r"coset: the shift must satisfy 0 < g < p"),
    (dict(coset=7.0), TypeError, r"coset: expected an int shift"),
    (dict(coset=True), TypeError, r"coset: expected an int shift"),
    (dict(order="natural"), ValueError, r"order: expected one of nn, nr, rn, rr .* got 'natural'"),
    (dict(order="NN"), ValueError, r"order: expected one of"),
    (dict(inverse=1), TypeError, r"inverse: expected True or False, got int"),
]


@pytest.mark.parametrize("kwargs, exc, message", BAD_OPTIONS, ids=[str(k) for k, _, _ in BAD_OPTIONS])
def test_bad_options_are_named_before_the_backend_opens(kwargs, exc, message):
    # backend "xrt" without a card or xclbin: had it been opened, it would fail with a device error.
    with pytest.raises(exc, match=message):
        nantucket.ntt(np.zeros(8, dtype=np.uint64), backend="xrt", **kwargs)
    with nantucket.open("model") as dev:
        a = dev.asarray(np.arange(8, dtype=np.uint64))
        with pytest.raises(exc, match=message):
            dev.ntt(a, **kwargs)
        assert np.array_equal(a.numpy(), np.arange(8, dtype=np.uint64)), "a failed call changed the data"


def test_bad_points_are_named_before_the_backend_opens():
    with pytest.raises(ValueError, match="x: the transform length must be a power of two"):
        nantucket.ntt(np.zeros(12, dtype=np.uint64), backend="xrt")


@pytest.mark.parametrize("blowup, shift, exc, message", [
    (3, 7, ValueError, "blowup: expected a power of two >= 1, got 3"),
    (0, 7, ValueError, "blowup: expected a power of two >= 1, got 0"),
    (2.0, 7, ValueError, "blowup: expected a power of two >= 1, got 2.0"),
    (2, 0, ValueError, "shift: the shift must satisfy 0 < g < p"),
    (2, None, TypeError, "shift: expected an int shift"),
])
def test_bad_lde_arguments(blowup, shift, exc, message):
    with nantucket.open("model") as dev:
        with pytest.raises(exc, match=message):
            dev.lde(np.ones(8, dtype=np.uint64), blowup, shift)


def test_device_misuse():
    with pytest.raises(ValueError, match="backend: unknown backend 'gpu'"):
        nantucket.open("gpu")
    with pytest.raises(TypeError, match="a DeviceArray is transformed by its device"):
        with nantucket.open() as dev:
            nantucket.ntt(dev.asarray([1, 2]))
    with nantucket.open() as one, nantucket.open() as other:
        a = one.asarray([1, 2, 3, 4])
        with pytest.raises(ValueError, match=r"a: the array lives on another device \('model'\)"):
            other.ntt(a)
        with pytest.raises(TypeError, match=r"call \.numpy\(\)"):
            np.asarray(a)
        assert other.asarray(a.numpy()).numpy().tolist() == [1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="device 'model' is closed"):
        a.numpy()
    with pytest.raises(RuntimeError, match="device 'model' is closed"):
        one.ntt(np.ones(4, dtype=np.uint64))


# -- the simulated card ---------------------------------------------------------------------------------

def test_sim_backend_is_bit_identical_with_the_model():
    """One build (the smallest that holds 2^6 points, compiled once) for every call of the sequence."""
    x = rand_points((2, 16), seed=14)
    values = rand_points(16, seed=15)
    with nantucket.open("model") as dev:
        expected = chain(dev, x, values)
    with nantucket.open("sim", params=smallest_params(64), progress=lambda line: None) as dev:
        got = chain(dev, x, values)
    for e, g, what in zip(expected, got, ["coset nr", "round trip", "rr", "lde"]):
        assert np.array_equal(e, g), what


# -- the kernel's transforms and data resident on the card (xrt over the stand-in pyxrt) ----------------

SMALL = BuildParams(lanes=4, log_core=3, channels=4)            # native 2^4 .. 2^6, 2^6 points per call


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("coset", [None, 7, 2**63 + 11])
@pytest.mark.parametrize("inverse", [False, True], ids=["forward", "inverse"])
def test_xrt_device_transforms_match_the_definition_in_one_kernel_call(tmp_path, order, coset, inverse):
    """A (B, N) array on the card is one kernel call with the flags; the result is the definition's."""
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((4, 16), seed=len(order) + inverse)
    with dev:
        a = dev.asarray(x)
        assert a.resident
        runs = fake.kernel_model.runs
        dev.ntt(a, inverse=inverse, coset=coset, order=order)
        assert fake.kernel_model.runs == runs + 1
        km = fake.kernel_model
        assert km.arg_value("batch") == 4
        assert km.arg_value("flags") == ((1 if inverse else 0) | (2 if coset is not None else 0))
        y = a.numpy()
    for r in range(4):
        assert as_ints(y[r]) == ref_transform(x[r], inverse, coset, order), f"row {r}"


def test_a_resident_transform_moves_no_points_and_leaves_x_where_the_next_run_reads(tmp_path):
    """asarray places the points, ntt runs the kernel on those very buffers (no Backend.run, nothing
    moved) and the output lands where HbmLayout places the INPUT of the same size (chain_log_n = log_n),
    numpy brings them back."""
    from nantucket.hw.model.layout import HbmLayout
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((2, 32), seed=21)
    with dev:
        dev.backend.run = None                                # would fail if called
        a = dev.asarray(x)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0}
        bos = [dict(c.bufs.bos) for c in a.store.chunks]
        dev.ntt(a, coset=5)
        assert fake.kernel_model.arg_value("chain_log_n") == 5
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0} and dev.relayouts == 0
        assert [c.bufs.bos for c in a.store.chunks] == bos, "the kernel ran on other buffers"
        want = nantucket.ntt(x, coset=5)
        lay = HbmLayout(SMALL, 5)
        channel, offset = lay.place("input")
        for e in range(2):
            words = offset // 8 + e * lay.points_per_channel
            on_card = np.array([fake.hbm.view(bos[0][int(c)].address() + 8 * int(w), 8).view(np.uint64)[0]
                                for c, w in zip(channel, words)])
            assert np.array_equal(on_card, want[e]), f"element {e} is not X at its input places"
        assert np.array_equal(a.numpy(), want)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": x.nbytes}


#: The syncs of the kernel's status record between two starts: read back after the first, cleared before
#: the next (its buffer is on HBM[0]); no point moves with them.
RECORD_SYNCS = ["sync(XCL_BO_SYNC_BO_FROM_DEVICE, group 0)", "sync(XCL_BO_SYNC_BO_TO_DEVICE, group 0)"]


def _point_syncs(calls):
    """The syncs of a fake pyxrt call list other than the status record's: its clear right before a
    start's arguments are set, its read right after the wait."""
    def record(i):
        return ((calls[i] == RECORD_SYNCS[1] and calls[i + 1:i + 2] == ["set_arg(0)"])
                or (calls[i] == RECORD_SYNCS[0] and i > 0 and calls[i - 1].startswith("wait(")))
    return [c if c.startswith("sync(") and not record(i) else None for i, c in enumerate(calls)]


def _syncs_between_starts(calls):
    """For each pair of consecutive kernel starts in a fake pyxrt call list, the syncs of points between
    them (the status record's left out)."""
    starts = [i for i, c in enumerate(calls) if c == "start"]
    points = _point_syncs(calls)
    return [[c for c in points[i:j] if c] for i, j in zip(starts, starts[1:])]


@pytest.mark.parametrize("log_n", [4, 5, 6])
def test_transforms_of_a_resident_array_chain_on_the_card(tmp_path, log_n):
    """For even and odd sizes, every transform leaves its output in the input placement, so a sequence of
    transforms of one array (also a bit-reversed output read back as a bit-reversed input) needs no host
    round trip: no sync between the kernel runs, relayouts 0, transfers only asarray's; exact result."""
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((2, 1 << log_n), seed=log_n)
    with dev:
        a = dev.asarray(x)
        fake.calls.clear()
        runs = fake.kernel_model.runs
        dev.ntt(a, order="nr")
        dev.intt(a, order="rn")
        dev.ntt(a, coset=BIG_SHIFT)
        dev.intt(a, coset=BIG_SHIFT)
        dev.ntt(a, inverse=True, order="nr")
        assert fake.kernel_model.runs - runs == 5 * (2 if log_n == 6 else 1)      # 2^6: one row per call
        assert not any(_syncs_between_starts(fake.calls)) and not any(_point_syncs(fake.calls))
        assert [c for c in fake.calls if c.startswith("sync(")] == 5 * (2 if log_n == 6 else 1) * RECORD_SYNCS[::-1]
        assert dev.relayouts == 0
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0}
        got = a.numpy()
    for r in range(2):
        assert as_ints(got[r]) == ref_transform(x[r], inverse=True, order="nr"), f"row {r}"


@pytest.mark.parametrize("first, second", [("nr", "nn"), ("nn", "rn"), ("rr", "nr"), ("nr", "rn")])
def test_an_order_the_placement_does_not_have_is_one_counted_round_trip(tmp_path, first, second):
    """A transform whose input order is not the order the array sits in (the orders are layout tables)
    re-lays it out through the host: counted in relayouts and transfers, and still exact."""
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((3, 16), seed=7)
    with dev:
        a = dev.asarray(x)
        dev.ntt(a, order=first)
        relayouts = int(first[0] == "r")            # asarray put a natural-order array in place
        assert dev.relayouts == relayouts
        dev.ntt(a, inverse=True, coset=7, order=second)
        relayouts += first[1] != second[0]
        assert dev.relayouts == relayouts
        assert dev.transfers == {"to-device": x.nbytes * (1 + relayouts), "from-device": x.nbytes * relayouts}
        got = a.numpy()
    for r in range(3):
        want = ref_transform(ref_transform(x[r], order=first), inverse=True, coset=7, order=second)
        assert as_ints(got[r]) == want, f"row {r}"


def test_a_batch_beyond_one_call_is_split_on_the_card(tmp_path):
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((9, 16), seed=31)
    with dev:
        a = dev.asarray(x)
        assert [c.rows for c in a.store.chunks] == [4, 4, 1]
        runs = fake.kernel_model.runs
        dev.ntt(a, inverse=True, coset=3, order="rr")
        assert fake.kernel_model.runs == runs + 3
        y = a.numpy()
    assert np.array_equal(y, nantucket.ntt(x, inverse=True, coset=3, order="rr"))


def test_arrays_stay_on_a_card_only_for_a_backend_declaring_resident_arrays(tmp_path):
    """A backend keeps arrays on its card when it declares ResidentArrays and its driver_for gives a
    CardDriver: a driver_for method alone is not the protocol, and a driver of another kind is a TypeError."""
    from nantucket.host.api.device import BackendDevice
    from nantucket.host.backend_base import CardDriver, ResidentArrays
    x = rand_points((2, 32), 5)
    want = [v for row in x for v in ref_transform(row)]

    class Undeclared(B.ModelBackend):
        def driver_for(self, n_points):
            raise AssertionError("driver_for of a backend that does not declare ResidentArrays was called")

    dev = BackendDevice("undeclared", Undeclared())
    a = dev.ntt(dev.asarray(x))
    assert not a.resident and as_ints(a.numpy()) == want

    class OtherDriver(B.ModelBackend, ResidentArrays):
        def driver_for(self, n_points):
            return self

    with pytest.raises(TypeError, match="expected a CardDriver or None, got OtherDriver"):
        BackendDevice("other", OtherDriver()).asarray(x)
    fake, xdev = open_fake_xrt(tmp_path, BuildParams(lanes=4, log_core=3, channels=4))
    with xdev:
        assert isinstance(xdev.backend, ResidentArrays) and isinstance(xdev.backend, CardDriver)
        a = xdev.ntt(xdev.asarray(x))
        assert a.resident and as_ints(a.numpy()) == want


def test_small_sizes_are_staged_and_still_one_run(tmp_path):
    """Below the kernel's smallest size an array stays on the host; a transform of it is one batched
    Backend.run (zero-padded by the driver)."""
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((3, 4), seed=41)
    with dev:
        a = dev.asarray(x)
        assert not a.resident
        runs = fake.kernel_model.runs
        dev.ntt(a, coset=9, order="rn")
        assert fake.kernel_model.runs == runs + 1
        assert np.array_equal(a.numpy(), nantucket.ntt(x, coset=9, order="rn"))
        # what the link moves: the rows zero-padded to the kernel's smallest size, each way
        padded = x.shape[0] * (1 << SMALL.min_log_n) * 8
        assert dev.transfers == {"to-device": padded, "from-device": padded}


def ref_lde(values, blowup, shift):
    """The LDE computed independently: the golden model's inverse, the zero-extension in numpy, the golden
    model's coset transform."""
    coeffs = ntt_model.transform(values, inverse=True)
    ext = np.zeros(values.shape[:-1] + (values.shape[-1] * blowup,), dtype=np.uint64)
    ext[..., :values.shape[-1]] = coeffs
    return ntt_model.transform(ext, coset=shift)


@pytest.mark.parametrize("keep", [True, False], ids=["device-array", "numpy"])
def test_lde_runs_as_one_chained_sequence_on_the_card(tmp_path, keep):
    """values to the card once (a resident array's not at all: copied between buffer sets on the card,
    bo.copy), then per chunk the 2^4 inverse chained into the 2^6 coset NTT in the same buffers, with no sync
    between the two runs; the result stays in the input placement, the values on the card unchanged."""
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    values = rand_points((2, 16), seed=51)
    with dev:
        a = dev.asarray(values) if keep else values
        moved = dict(dev.transfers)
        runs = fake.kernel_model.runs
        fake.calls.clear()
        ext = dev.lde(a, 4, BIG_SHIFT)
        assert ext.resident and ext.shape == (2, 64)
        assert dev.transfers["from-device"] - moved["from-device"] == 0
        assert dev.transfers["to-device"] - moved["to-device"] == (0 if keep else values.nbytes)
        assert dev.relayouts == 0
        # 2^6 points fill the kernel's buffers: a chunk per row, two chained runs each
        assert fake.kernel_model.runs - runs == 4
        assert _syncs_between_starts(fake.calls)[0::2] == [[], []], "a sync between the chained runs"
        km = fake.kernel_model
        assert (km.arg_value("log_n"), km.arg_value("input_log_m"), km.arg_value("chain_log_n")) == (6, 4, 6)
        assert [r[0] for r in dev.backend.kernel_runs[-4:]] == [4, 6, 4, 6]
        assert "chained" in dev.backend.report["Host work"]
        assert dev.backend.report["Kernel calls"] == "4 calls: 2 x (2^4 inverse chained into 2^6 coset), batch 2"
        got = ext.numpy()
        if keep:
            assert np.array_equal(a.numpy(), values), "lde changed its input"
        assert np.array_equal(dev.ntt(ext, inverse=True, coset=BIG_SHIFT).numpy()[:, 16:], np.zeros((2, 48), np.uint64))
    assert np.array_equal(got, ref_lde(values, 4, BIG_SHIFT))
    with nantucket.open("model") as model:
        assert np.array_equal(got, model.lde(values, 4, BIG_SHIFT).numpy())


# (build, log2 M, blowup): the edges of lde_pairs for small builds, chained or not
LDE_CASES = [
    (BuildParams(lanes=8, log_core=5, channels=8), 6, 2),       # smallest native M
    (BuildParams(lanes=8, log_core=5, channels=8), 6, 8),       # the largest blowup from 2^6: (6, 9)
    (BuildParams(lanes=8, log_core=5, channels=8), 6, 16),      # (6, 10) unsupported: through a size between
    (BuildParams(lanes=8, log_core=5, channels=8), 7, 8),       # up to the largest size
    (BuildParams(lanes=8, log_core=5, channels=8), 9, 2),
    (BuildParams(lanes=4, log_core=4, channels=4), 4, 8),       # (4, 7)
    (BuildParams(lanes=4, log_core=4, channels=4), 4, 16),      # (4, 8) unsupported: through a size between
    (BuildParams(lanes=4, log_core=4, channels=4), 5, 8),       # (5, 8)
    (BuildParams(lanes=4, log_core=4, channels=4), 2, 4),       # M below the native range: staged values
    (BuildParams(lanes=4, log_core=4, channels=4), 7, 1),       # blowup 1: the pair (7, 7)
]


@pytest.mark.parametrize("params, log_m, blowup", LDE_CASES,
                         ids=[f"{p.tag()}-M2^{m}-x{b}" for p, m, b in LDE_CASES])
def test_lde_at_the_edges_of_the_lde_pairs(tmp_path, params, log_m, blowup):
    """A (3, M) batch: chained on the card (no coefficients to the host) exactly when lde_path finds a
    chain of pairs lde_pairs has (every native M), else the counted fallback; the same result either way,
    the golden model's."""
    from nantucket.host.api.resident import lde_path
    from nantucket.hw.model.regmap import RegisterMap
    log_t = log_m + (blowup.bit_length() - 1)
    chained = lde_path(RegisterMap(params), log_m, log_t) is not None
    fake, dev = open_fake_xrt(tmp_path, params)
    values = rand_points((3, 1 << log_m), seed=log_m * 7 + blowup)
    with dev:
        ext = dev.lde(values, blowup, 7)
        assert ext.resident
        # the fallback's staged inverse moves the values zero-padded to the kernel's smallest size each way
        staged = values.shape[0] * max(values.shape[1], 1 << params.min_log_n) * 8
        assert dev.transfers["from-device"] == (0 if chained else staged)
        assert dev.transfers["to-device"] == (values.nbytes if chained else staged + values.nbytes * blowup)
        assert ("chained" in dev.backend.report["Host work"]) == chained
        got = ext.numpy()
    assert np.array_equal(got, ref_lde(values, blowup, 7))


@pytest.mark.parametrize("blowup", [8, 16], ids=["chained", "fallback"])
def test_lde_of_a_resident_bit_reversed_array(tmp_path, blowup):
    """values resident and bit-reversed in the input placement (left so by an "nr" transform): chained,
    they come back once from where they sit; in the fallback (a kernel without the coset, so the coset NTT
    is the host's around a staged run) the inverse runs on the card in their own buffers after one counted
    relayout to natural order, the coefficients come back, a forward run restores the values in place.
    Either way a is unchanged and the result exact."""
    params = BuildParams(lanes=4, log_core=4, channels=4)
    chained = blowup == 8
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    dev = nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0, progress=False,
                         kernel_computes=frozenset({"inverse", "batch"} | ({"coset"} if chained else set())))
    x = rand_points((2, 16), seed=blowup)
    with dev:
        a = dev.ntt(dev.asarray(x), order="nr")
        before = dict(dev.transfers)
        ext = dev.lde(a, blowup, BIG_SHIFT)
        row = x.nbytes
        assert dev.relayouts == (0 if chained else 1)
        # the fallback: the relayout (a row each way), the coefficients back, the zero-extended staged run
        # (blowup rows each way) and its result to the card
        assert dev.transfers["from-device"] - before["from-device"] == (row if chained else 2 * row + blowup * row)
        assert dev.transfers["to-device"] - before["to-device"] == (row if chained else row + 2 * blowup * row)
        got, values = ext.numpy(), a.numpy()
    assert np.array_equal(values, nantucket.ntt(x, order="nr")), "lde changed its input"
    assert np.array_equal(got, ref_lde(values, blowup, BIG_SHIFT))


def test_lde_fallback_with_a_supported_pair_writes_only_the_coefficients_units(tmp_path):
    """A kernel without the inverse: the coefficients come from the host, and go back zero-extended by the
    kernel (input_log_m), the host writing none of the zeros: a word outside the M points' units keeps
    what was there."""
    from nantucket.hw.model.layout import HbmLayout
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    values = rand_points((1, 16), seed=77)
    with nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0, progress=False,
                        kernel_computes=frozenset({"coset", "batch"})) as dev:
        driver = dev.backend
        allocate = driver.allocate

        def stale_allocate(layout, batch=1):          # buffers holding old data, as on a card
            bufs = allocate(layout, batch)
            for view in bufs.views.values():
                view[:] = np.uint64(0xBAD0_BAD0_BAD0_BAD0)
            return bufs
        driver.allocate = stale_allocate
        ext = dev.lde(values, 4, 11)
        km = fake.kernel_model
        assert (km.arg_value("log_n"), km.arg_value("input_log_m"), km.arg_value("chain_log_n")) == (6, 4, 6)
        assert "input_log_m = 4" in driver.report["Host work"]
        views = ext.store.chunks[0].bufs.views
        lay = HbmLayout(SMALL, 6)
        channel, offset = lay.place("input", np.arange(16, 64))
        stale = [views[int(c)][int(o) // 8] for c, o in zip(channel, offset)]
        assert stale == [0xBAD0_BAD0_BAD0_BAD0] * 48, "the host wrote the zero-extension"
        assert np.array_equal(ext.numpy(), ref_lde(values, 4, 11))


def test_a_resident_array_on_a_kernel_without_the_transform_goes_round_the_host(tmp_path):
    """A driver whose kernel computes only the forward transform (a kernel built without the others):
    the inverse coset of a resident array is done by the host around a kernel run, counted as a
    round trip; the forward stays on the card."""
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    x = rand_points((2, 16), seed=61)
    with nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0,
                        progress=False, kernel_computes=frozenset()) as dev:
        a = dev.asarray(x)
        dev.intt(a, coset=11, order="rn")
        assert dev.relayouts == 1 and fake.kernel_model.arg_value("flags") == 0
        dev.ntt(a, coset=11, order="nr")
        assert dev.relayouts == 2
        runs = fake.kernel_model.runs
        dev.ntt(a)                      # the fallback put the points back where the kernel reads them
        assert dev.relayouts == 2 and fake.kernel_model.runs == runs + 2      # no batches: a call per row
        assert np.array_equal(a.numpy(), nantucket.ntt(x))


def test_the_docs_table_of_chained_lde_blowups_is_the_generated_one():
    """docs/api.md shows which blowups chain on the default build: the block must be what
    chained_lde_table derives from lde_pairs, so it cannot go stale."""
    from pathlib import Path
    from nantucket.host.api.resident import chained_lde_blowups, chained_lde_table
    text = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    block = text.split("<!-- chained-lde-table: begin -->\n")[1].split("\n<!-- chained-lde-table: end -->")[0]
    assert block == chained_lde_table(BuildParams())
    small = chained_lde_blowups(BuildParams(lanes=4, log_core=3, channels=4))
    assert small == {4: [2, 4], 5: [2], 6: []}          # lde_pairs: (4, 5), (4, 6), (5, 6)
