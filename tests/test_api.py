"""The public API (nantucket/): transforms against a direct computation over the field written here
with Python ints, batches, orders, cosets, the LDE, devices and residency, argument errors; the same
sequence on the xrt backend (stand-in pyxrt with the register-level kernel model) and once on the
simulated card (Verilator), bit-identical with the model.
"""

import numpy as np
import pytest

import nantucket
from nantucket.host import backends as B
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
        # What moves: each asarray and numpy; the intt "rn" needs the input placement of a bit-reversed
        # array where the ntt left the output placement, and "rr" on x[0] the bit-reversed input
        # placement where asarray put the natural one (two host round trips); the LDE's coefficients
        # out and the zero-extended 64 points in (the kernel cannot zero-extend yet).
        row = 16 * 8
        assert dev.relayouts == 2
        assert dev.transfers == {"to-device": 2 * row + 2 * row + row + row + row + 4 * row,
                                 "from-device": 2 * row + 2 * row + 2 * row + row + row + row + 4 * row}
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


def test_size_the_device_cannot_take_is_refused_before_anything_runs(tmp_path):
    params = BuildParams(lanes=4, log_core=2, channels=4)        # native N = 16
    fake, dev = open_fake_xrt(tmp_path, params)
    with dev:
        with pytest.raises(ValueError, match=r"x: backend 'xrt' cannot take this size: 32 points"):
            dev.asarray(np.zeros(32, dtype=np.uint64))
        with pytest.raises(ValueError, match=r"values: backend 'xrt' cannot take this size: 64 points"):
            dev.lde(np.zeros(16, dtype=np.uint64), 4, 7)
        a = dev.asarray(np.ones(16, dtype=np.uint64))
        with pytest.raises(ValueError, match="cannot take this size: 32 points"):
            dev.lde(a, 2, 7)
        assert fake.kernel_model is None or fake.kernel_model.runs == 0
        assert dev.transfers == {"to-device": 16 * 8, "from-device": 0}, "more than a's asarray moved"


def test_a_failed_run_raises_device_error_and_keeps_the_data(tmp_path):
    _fake, dev = open_fake_xrt(tmp_path, BuildParams(lanes=4, log_core=2, channels=4), timeout_s=0.05,
                               hang=True)
    with dev:
        a = dev.asarray(np.arange(16, dtype=np.uint64))
        with pytest.raises(nantucket.DeviceError, match="did not finish"):
            dev.ntt(a, coset=7)
        assert np.array_equal(a.numpy(), np.arange(16, dtype=np.uint64))


# -- errors -------------------------------------------------------------------------------------------

BAD_INPUTS = [
    (np.array([1, P, 3, 4], dtype=np.uint64), ValueError, r"value 0x[0-9a-f]+ at index 1 is not below p"),
    (np.array([[1, 2], [3, 2**64 - 1]], dtype=np.uint64), ValueError,
     r"value 0xffffffffffffffff at index \(1, 1\) is not below p .*\(1 of the 4 values are >= p\)"),
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


def test_a_resident_transform_moves_no_points_and_runs_in_place(tmp_path):
    """asarray places the points, ntt runs the kernel on those very buffers (no Backend.run, nothing
    moved, the output where HbmLayout places X), numpy brings them back."""
    from nantucket.hw.model.layout import HbmLayout
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((2, 32), seed=21)
    with dev:
        dev.backend.run = None                                # would fail if called
        a = dev.asarray(x)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0}
        bos = [dict(c.bufs.bos) for c in a._store.chunks]
        dev.ntt(a, coset=5)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0} and dev.relayouts == 0
        assert [c.bufs.bos for c in a._store.chunks] == bos, "the kernel ran on other buffers"
        want = nantucket.ntt(x, coset=5)
        lay = HbmLayout(SMALL, 5)
        channel, offset = lay.place("output")
        for e in range(2):
            words = offset // 8 + e * lay.points_per_channel
            on_card = np.array([fake.hbm.view(bos[0][int(c)].address() + 8 * int(w), 8).view(np.uint64)[0]
                                for c, w in zip(channel, words)])
            assert np.array_equal(on_card, want[e]), f"element {e} is not X at its output places"
        assert np.array_equal(a.numpy(), want)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": x.nbytes}


@pytest.mark.parametrize("log_n", [4, 5, 6])
def test_input_and_output_placements_differ_so_a_chain_relays_out_through_the_host(tmp_path, log_n):
    """For even and odd sizes the kernel writes X elsewhere than it reads x (HbmLayout.place), so the
    next transform of the same array needs a host round trip, counted in relayouts and transfers; the
    result is still exact."""
    from nantucket.hw.model.layout import HbmLayout
    lay = HbmLayout(SMALL, log_n)
    assert not all(np.array_equal(i, o) for i, o in zip(lay.place("input"), lay.place("output")))
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((1, 1 << log_n), seed=log_n)
    with dev:
        a = dev.asarray(x)
        dev.ntt(a, order="nr")
        dev.intt(a, order="rn")
        assert dev.relayouts == 1
        assert dev.transfers == {"to-device": 2 * x.nbytes, "from-device": x.nbytes}
        assert np.array_equal(a.numpy(), x)


def test_a_batch_beyond_one_call_is_split_on_the_card(tmp_path):
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    x = rand_points((9, 16), seed=31)
    with dev:
        a = dev.asarray(x)
        assert [c.rows for c in a._store.chunks] == [4, 4, 1]
        runs = fake.kernel_model.runs
        dev.ntt(a, inverse=True, coset=3, order="rr")
        assert fake.kernel_model.runs == runs + 3
        y = a.numpy()
    assert np.array_equal(y, nantucket.ntt(x, inverse=True, coset=3, order="rr"))


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
        assert dev.transfers == {"to-device": x.nbytes, "from-device": x.nbytes}


@pytest.mark.parametrize("keep", [True, False], ids=["device-array", "numpy"])
def test_lde_on_the_card_moves_only_the_coefficients_and_the_extension(tmp_path, keep):
    fake, dev = open_fake_xrt(tmp_path, SMALL)
    values = rand_points((2, 16), seed=51)
    with dev:
        a = dev.asarray(values) if keep else values
        moved = dict(dev.transfers)
        runs = fake.kernel_model.runs
        ext = dev.lde(a, 4, BIG_SHIFT)
        assert ext.resident and ext.shape == (2, 64)
        restore = values.nbytes if keep else 0            # the coefficients back in, to restore a
        assert dev.transfers["from-device"] - moved["from-device"] == values.nbytes
        assert dev.transfers["to-device"] - moved["to-device"] == \
            (0 if keep else values.nbytes) + restore + 4 * values.nbytes
        # one inverse call for both rows (and one restoring a), then the coset NTTs: 2^6 points per call
        assert fake.kernel_model.runs - runs == 1 + keep + 2
        got = ext.numpy()
        if keep:
            assert np.array_equal(a.numpy(), values), "lde changed its input"
    with nantucket.open("model") as model:
        assert np.array_equal(got, model.lde(values, 4, BIG_SHIFT).numpy())


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
