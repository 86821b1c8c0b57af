"""lde(values, blowup, shift, order=, return_coeffs=) on the model, the stand-in card (xrt over
sim.fake_pyxrt) and the simulated card, checked against an independent computation: the inverse DFT and
the evaluation on the coset written out in Python integers (host/api/device.py, host/api/resident.py)."""

import numpy as np
import pytest

import nantucket
from nantucket.host.api.resident import lde_path, lde_runs
from nantucket.hw.model import field as F
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.regmap import RegisterMap
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

ORDERS = ("nn", "nr", "rn", "rr")
L4K4 = BuildParams(lanes=4, log_core=4, channels=4)          # native 2^4 .. 2^8


def rev(i: int, bits: int) -> int:
    return int(format(i, f"0{bits}b")[::-1], 2) if bits else 0


def ref_lde(values, blowup: int, shift: int, order: str = "nn", field=F.DEFAULT_FIELD):
    """(evaluations, coefficients) of every row, from the definitions: c_j = (1/M) sum_k v_k w_M^(-jk),
    e_k = sum_j c_j (shift w_T^k)^j, the orders by index reversal; Python integers only."""
    p = field.p
    rows = np.atleast_2d(np.asarray(values)).tolist()
    evals, coeffs = [], []
    for row in rows:
        m = len(row)
        bits_m = m.bit_length() - 1
        v = [row[rev(i, bits_m)] for i in range(m)] if order[0] == "r" else row
        wi = pow(field.root_of_unity(m), p - 2, p)
        inv_m = pow(m, p - 2, p)
        c = [inv_m * sum(v[k] * pow(wi, j * k, p) for k in range(m)) % p for j in range(m)]
        t = m * blowup
        wt = field.root_of_unity(t)
        e = []
        for k in range(t):
            x, acc = shift * pow(wt, k, p) % p, 0
            for cj in reversed(c):
                acc = (acc * x + cj) % p
            e.append(acc)
        if order[1] == "r":
            bits_t = t.bit_length() - 1
            e = [e[rev(i, bits_t)] for i in range(t)]
        evals.append(e)
        coeffs.append(c)
    shape = np.shape(values)
    return (np.array(evals, dtype=np.uint64).reshape(shape[:-1] + (shape[-1] * blowup,)),
            np.array(coeffs, dtype=np.uint64).reshape(shape))


def rand(shape, seed, field=F.DEFAULT_FIELD):
    return np.random.default_rng(seed).integers(0, field.p, shape, dtype=np.uint64).astype(field.dtype)


def open_fake_xrt(tmp_path, params, **options):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0,
                                progress=False, **options)


# -- the model ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("field", ["goldilocks", "babybear"])
def test_model_lde_orders_and_coefficients(order, field):
    f = F.get(field)
    values = rand((2, 16), seed=3, field=f)
    want, want_c = ref_lde(values, 4, 7, order, f)
    with nantucket.open("model", field=field) as dev:
        ext, coeffs = dev.lde(values, 4, 7, order=order, return_coeffs=True)
        assert isinstance(coeffs, np.ndarray) and coeffs.dtype == f.dtype and coeffs.shape == (2, 16)
        assert np.array_equal(ext.numpy(), want) and np.array_equal(coeffs, want_c)
        assert np.array_equal(dev.lde(values[0], 4, 7, order=order).numpy(), want[0])
        steps = dev.backend.steps
        assert [s["step"] for s in steps] == ["inverse", "zero-extension", "coset forward"]
        assert all(s["cpu_s"] is not None and s["kernel_calls"] == 0 for s in steps)
        assert [s["rows"] for s in steps] == [1, 1, 1]          # the last call: one polynomial


def test_bad_lde_keywords():
    with nantucket.open("model") as dev:
        with pytest.raises(ValueError, match="order"):
            dev.lde(np.ones(8, dtype=np.uint64), 2, 7, order="nx")
        with pytest.raises(TypeError, match="return_coeffs"):
            dev.lde(np.ones(8, dtype=np.uint64), 2, 7, return_coeffs=1)
        with pytest.raises(TypeError, match="unknown keyword 'orders'"):
            dev.lde(np.ones(8, dtype=np.uint64), 2, 7, orders="nr")


# -- chaining on the card ----------------------------------------------------------------------------

def test_every_blowup_up_to_16_chains_on_the_default_build():
    """Every native M and blowup 2..16 whose result the build holds (T <= 2^24) has a chain of pairs the
    kernel places, among them the blowup-4 LDE at 2^12 that fell back to the host before: (12, 14) is not
    a pair of L16_k12_C32, but 2^12 -> 2^13 -> 2^14 is."""
    params = BuildParams()
    rmap = RegisterMap(params)
    for m in range(params.min_log_n, params.max_log_n + 1):
        for b in range(1, 5):
            if m + b <= params.max_log_n:
                path = lde_path(rmap, m, m + b)
                assert path is not None and path[0] == m and path[-1] == m + b, (m, b)
                assert all(rmap.lde_pair_ok(r, s) for r, s in zip(path, path[1:])), path
    assert not rmap.lde_pair_ok(12, 14) and lde_path(rmap, 12, 14) == [12, 13, 14]
    assert lde_path(rmap, 12, 15) == [12, 15]
    assert lde_path(rmap, 24, 25) is None


@pytest.mark.parametrize("log_m, blowup", [(4, 2), (4, 4), (4, 16), (5, 8), (6, 4), (7, 2)])
def test_xrt_lde_chains_every_blowup(tmp_path, log_m, blowup):
    """On L4_k4_C4 every LDE up to 2^8 runs chained on the card (also (4, 8), which the build does not
    place: through a size between): the values go up once, nothing comes back before numpy(), the runs
    are lde_runs' for lde_path's chain; the result is the independent one."""
    fake, dev = open_fake_xrt(tmp_path, L4K4)
    values = rand((3, 1 << log_m), seed=log_m + blowup)
    log_t = log_m + blowup.bit_length() - 1
    with dev:
        path = lde_path(dev.backend.rmap, log_m, log_t)
        runs0 = list(dev.backend.kernel_runs)
        ext = dev.lde(values, blowup, 7)
        assert ext.resident
        assert dev.transfers == {"to-device": values.nbytes, "from-device": 0}
        chunks = len(ext.store.chunks)
        want_runs = [(r.log_n, r.batch, r.flags) for _, r in lde_runs(path, 7, ext.store.chunks[0].rows)]
        assert dev.backend.kernel_runs[len(runs0):][:len(want_runs)] == want_runs
        assert len(dev.backend.kernel_runs) - len(runs0) == chunks * len(want_runs)
        assert "chained" in dev.backend.report["Host work"]
        steps = dev.backend.steps
        assert [s["step"] for s in steps] == ["inverse", "zero-extension", "coset forward"]
        assert sum(s["kernel_calls"] for s in steps) == chunks * len(want_runs)
        assert all(s["host_work"].startswith("none") and s["where"] == "card" for s in steps)
        assert [s["rows"] for s in steps] == [3, 3, 3]          # the three polynomials, every step
        got = ext.numpy()
    assert np.array_equal(got, ref_lde(values, blowup, 7)[0])


@pytest.mark.parametrize("order", ORDERS)
def test_xrt_lde_orders_and_coefficients_on_the_card(tmp_path, order):
    """(4, 8) through a size between, with the orders in the layout tables and the coefficients brought
    back: the only transfers are the values up and the coefficients down (then the result by numpy()); a
    following transform reads the result where it sits (no relayout for a matching input order)."""
    fake, dev = open_fake_xrt(tmp_path, L4K4)
    values = rand((2, 16), seed=11)
    want, want_c = ref_lde(values, 16, 5, order)
    with dev:
        ext, coeffs = dev.lde(values, 16, 5, order=order, return_coeffs=True)
        assert dev.transfers == {"to-device": values.nbytes, "from-device": values.nbytes}
        assert np.array_equal(coeffs, want_c)
        dev.intt(ext, coset=5, order=order[1] + "n")
        assert dev.relayouts == 0
        back = ext.numpy()
        assert np.array_equal(back[:, :16], want_c) and not back[:, 16:].any()
    with nantucket.open("model") as model:
        assert np.array_equal(model.lde(values, 16, 5, order=order).numpy(), want)


def test_xrt_lde_of_a_resident_bit_reversed_array(tmp_path):
    """A resident array left bit-reversed by an "nr" transform, given to lde with order "rr": its values
    come back once from where they sit and go up in the order the kernel reads, unchanged on the card."""
    fake, dev = open_fake_xrt(tmp_path, L4K4)
    x = rand((2, 32), seed=21)
    with dev:
        a = dev.ntt(dev.asarray(x), order="nr")
        values = a.numpy()
        ext = dev.lde(a, 8, 3, order="rr")
        assert dev.relayouts == 0
        got = ext.numpy()
        assert np.array_equal(a.numpy(), values)
    assert np.array_equal(got, ref_lde(values, 8, 3, "rr")[0])


def test_xrt_lde_fallback_keeps_orders_and_coefficients(tmp_path):
    """A kernel without the inverse: the coefficients come from the host around a forward run, the coset
    NTT still runs on the card; orders and coefficients as chained, and the report says what the host
    did, step by step."""
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", L4K4)
    values = rand((2, 16), seed=31)
    want, want_c = ref_lde(values, 4, 9, "rr")
    with nantucket.open("xrt", params=L4K4, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0, progress=False,
                        kernel_computes=frozenset({"coset", "batch"})) as dev:
        ext, coeffs = dev.lde(values, 4, 9, order="rr", return_coeffs=True)
        assert np.array_equal(ext.numpy(), want) and np.array_equal(coeffs, want_c)
        steps = dev.backend.steps
        assert steps[0]["kernel_calls"] >= 1 and steps[2]["kernel_calls"] == 1
        assert "inverse" in dev.backend.report["Host work"]


def test_lde_below_the_native_sizes_is_staged(tmp_path):
    """M = 2^2 below L4_k4_C4's 2^4: the inverse is a staged (zero-padded) run, the coset NTT of 2^4
    runs on the card; same result."""
    fake, dev = open_fake_xrt(tmp_path, L4K4)
    values = rand((2, 4), seed=41)
    with dev:
        ext, coeffs = dev.lde(values, 4, 7, order="nr", return_coeffs=True)
        got = ext.numpy()
    want, want_c = ref_lde(values, 4, 7, "nr")
    assert np.array_equal(got, want) and np.array_equal(coeffs, want_c)


# -- the simulated card (the kernel RTL in Verilator) -----------------------------------------------

def test_sim_lde_chains_on_the_simulated_kernel():
    """The build the other sim tests use (the smallest that holds 2^6 points, L4_k3_C4): the LDE of a
    (2, 16) batch to 2^6 points chained on the simulated kernel, the orders in the layout step and the
    coefficients brought back between the runs; nothing the host computes, the independent result."""
    from nantucket.host.sim_backend import smallest_params
    values = rand((2, 16), seed=61)
    want, want_c = ref_lde(values, 4, 7, "rr")
    # below the native sizes, a batch the 2^5-point coset NTT takes in several calls: the coefficients
    # through the host, then one call's buffers at a time (the simulated HBM holds one buffer set)
    small = rand((3, 8), seed=62)
    with nantucket.open("sim", params=smallest_params(64), progress=lambda line: None) as dev:
        ext, coeffs = dev.lde(values, 4, 7, order="rr", return_coeffs=True)
        got = ext.numpy()
        steps = dev.backend.steps
        assert dev.backend.open(smallest_params(64)).batch_limit(5) < small.shape[0]
        assert np.array_equal(dev.lde(small, 4, 7, order="nr").numpy(), ref_lde(small, 4, 7, "nr")[0])
    assert np.array_equal(got, want) and np.array_equal(coeffs, want_c)
    assert all(s["where"] == "card" and s["host_work"].startswith("none") for s in steps)
    assert all(s["cycles"] for s in steps if s["kernel_calls"])
