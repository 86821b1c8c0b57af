"""The library API in every field on the model backend: nantucket.ntt / intt / open(field=...), device
arrays, the LDE, dtypes and refusals; and the sim and xrt backends refusing a field their build lacks.

Every transform is checked against sums on Python ints written here from the definitions, with each
field's p and generator written here too (not read from the code under test):
X_k = sum_j x_j c^j w^(jk), w = g^((p-1)/N); the inverse x_j = c^(-j) N^(-1) sum_k X_k w^(-jk).
"""

import numpy as np
import pytest

import nantucket
from nantucket.host import backends as B
from nantucket.host.backend_base import ModelBackend
from nantucket.hw.model.params import BuildParams

from field_reference import NAMES, SPEC as REF, naive, rev  # noqa: F401

#: name: (p, generator, 2-adicity, numpy dtype at the API's edges), from each field's definition
SPEC = {name: (*REF[name], np.uint32 if REF[name][0] < 2**32 else np.uint64) for name in NAMES}
SMALL_LOGS = [2, 3, 4, 5, 6]






def points(name, shape, seed):
    p, _, _, dtype = SPEC[name]
    return np.random.default_rng(seed).integers(0, p, size=shape, dtype=np.uint64).astype(dtype)


def as_lists(a):
    return [[int(v) for v in row] for row in np.atleast_2d(a)]


# -- transforms against the sums -----------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("log_n", SMALL_LOGS)
def test_forward_and_inverse_match_the_sums_with_the_field_s_dtype(name, log_n):
    dtype = SPEC[name][3]
    x = points(name, 1 << log_n, seed=log_n)
    y = nantucket.ntt(x, field=name)
    assert y.dtype == dtype and y.shape == x.shape
    assert y.tolist() == naive(x, name)
    back = nantucket.intt(y, field=name)
    assert back.dtype == dtype and np.array_equal(back, x)
    assert nantucket.ntt(x, inverse=True, field=name).tolist() == naive(x, name, inverse=True)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("order", ["nn", "nr", "rn", "rr"])
@pytest.mark.parametrize("inverse", [False, True])
def test_every_order_with_a_coset(name, order, inverse):
    p = SPEC[name][0]
    shift = (p - 1) // 3 + 5          # any nonzero value below p
    x = points(name, 32, seed=len(order) + inverse)
    y = nantucket.ntt(x, inverse=inverse, coset=shift, order=order, field=name)
    assert y.tolist() == naive(x, name, inverse=inverse, coset=shift, order=order)
    # and back: the other direction with the orders swapped
    back = nantucket.ntt(y, inverse=not inverse, coset=shift, order=order[::-1], field=name)
    assert np.array_equal(back, x)


@pytest.mark.parametrize("name", NAMES)
def test_a_batch_transforms_each_row(name):
    x = points(name, (3, 16), seed=7)
    for kwargs in (dict(), dict(inverse=True), dict(coset=3, order="rn")):
        y = nantucket.ntt(x, field=name, **kwargs)
        assert y.shape == (3, 16) and y.dtype == SPEC[name][3]
        assert as_lists(y) == [naive(row, name, **kwargs) for row in as_lists(x)]


@pytest.mark.parametrize("name", NAMES)
def test_a_larger_size_through_the_four_step_model(name):
    """2^12 points (the model's four-step path, above its radix-2 limit): a few outputs checked against
    their sums in O(N) each, the whole against the inverse."""
    p, g, _, _ = SPEC[name]
    n = 1 << 12
    x = points(name, n, seed=12)
    y = nantucket.ntt(x, field=name)
    w = pow(g, (p - 1) // n, p)
    xs = [int(v) for v in x]
    for k in (0, 1, 5, 1234, n - 1):
        wk = pow(w, k, p)
        acc, t = 0, 1
        for v in xs:
            acc += v * t
            t = t * wk % p
        assert int(y[k]) == acc % p, k
    assert np.array_equal(nantucket.intt(y, field=name), x)


@pytest.mark.parametrize("name", NAMES)
def test_lde_evaluates_the_interpolant_on_the_coset(name):
    p, g, _, dtype = SPEC[name]
    m, blowup, shift = 8, 4, 7
    values = points(name, (2, m), seed=3)
    with nantucket.open("model", field=name) as dev:
        out = dev.lde(values, blowup, shift)
        assert out.shape == (2, m * blowup) and out.dtype == dtype
        got = out.numpy()
    assert got.dtype == dtype
    t = m * blowup
    wt = pow(g, (p - 1) // t, p)
    for row, vals in zip(got, as_lists(values)):
        coeffs = naive(vals, name, inverse=True)
        want = [sum(c * pow(shift * pow(wt, i, p), j, p) for j, c in enumerate(coeffs)) % p for i in range(t)]
        assert [int(v) for v in row] == want


@pytest.mark.parametrize("name", NAMES)
def test_device_arrays_chain_in_the_device_s_field(name):
    x = points(name, 16, seed=5)
    with nantucket.open(field=name) as dev:
        assert dev.field.name == name and dev.field.p == SPEC[name][0]
        a = dev.asarray(x)
        assert a.dtype == SPEC[name][3] and f"dtype={np.dtype(SPEC[name][3])}" in repr(a)
        dev.ntt(a, coset=3)
        dev.intt(a, order="nn")
        y = a.numpy()
    assert y.dtype == SPEC[name][3]
    assert y.tolist() == naive(naive(x, name, coset=3), name, inverse=True)


@pytest.mark.parametrize("name", ["babybear", "koalabear"])
def test_a_31_bit_field_takes_uint64_arrays_and_lists_below_p(name):
    x32 = points(name, 8, seed=1)
    want = naive(x32, name)
    for given in (x32.astype(np.uint64), x32.astype(">u4"), [int(v) for v in x32]):
        y = nantucket.ntt(given, field=name)
        assert y.dtype == np.uint32 and y.tolist() == want


def test_the_model_backend_takes_field_by_name_or_object():
    assert "field" in B.backend_options("model")
    x = points("babybear", 8, seed=2).astype(np.uint64)
    field = nantucket.FIELDS["babybear"]
    for given in ("babybear", field):
        backend = ModelBackend(field=given)
        assert backend.field is field
        assert backend.run(x).tolist() == naive(x, "babybear")
    with nantucket.open(field=field) as dev:
        assert dev.field is field


def test_the_two_goldilocks_chains_differ_only_in_their_roots():
    x = np.zeros(8, dtype=np.uint64)
    x[1] = 1                            # X_k = w^k
    plain = nantucket.ntt(x, field="goldilocks")
    plonky2 = nantucket.ntt(x, field="goldilocks-plonky2")
    assert int(plain[1]) == naive(x, "goldilocks")[1] != int(plonky2[1]) == naive(x, "goldilocks-plonky2")[1]


# -- plonky2 compatibility: its roots, from plonky2's source ----------------------------------------------

PLONKY2_POWER_OF_TWO_GENERATOR = 7277203076849721926     # plonky2 goldilocks_field.rs: the 2^32-th root


def test_goldilocks_plonky2_uses_plonky2_s_roots():
    p = SPEC["goldilocks"][0]
    field = nantucket.FIELDS["goldilocks-plonky2"]
    assert field.root_of_unity(1 << 32) == PLONKY2_POWER_OF_TWO_GENERATOR
    assert field.root_of_unity(64) == 8
    # the transforms use that chain: the NTT of the delta at 1 gives w_N at index 1
    for log_n in range(1, 13):
        x = np.zeros(1 << log_n, dtype=np.uint64)
        x[1] = 1
        w = int(nantucket.ntt(x, field="goldilocks-plonky2")[1])
        assert w == pow(PLONKY2_POWER_OF_TWO_GENERATOR, 1 << (32 - log_n), p), log_n
        if log_n == 6:
            assert w == 8


# -- refusals ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_a_value_not_below_p_is_named_with_its_index_and_the_field(name):
    p, _, _, dtype = SPEC[name]
    x = points(name, 8, seed=4)
    x[5] = p
    message = rf"x: value {p} at index 5 is not below the {name} modulus p = {p}"
    with pytest.raises(ValueError, match=message):
        nantucket.ntt(x, field=name)
    rows = points(name, (2, 4), seed=4)
    rows[1, 2] = p + 1
    with nantucket.open(field=name) as dev:
        with pytest.raises(ValueError, match=rf"a: value {p + 1} at index \(1, 2\) is not below the {name} "):
            dev.ntt(rows)
        with pytest.raises(ValueError, match=rf"values: element \(3,\) = {p} is not in \[0, p\), the {name} "):
            dev.lde([1, 2, 3, p], 2, 7)
        assert dev.transfers["to-device"] == 0


def test_a_babybear_value_is_checked_against_babybear_s_p_not_goldilocks():
    bb = SPEC["babybear"][0]
    x = np.array([1, 2, bb, 4], dtype=np.uint64)
    assert nantucket.ntt(x, field="goldilocks").dtype == np.uint64          # fine in Goldilocks
    with pytest.raises(ValueError, match=f"x: value {bb} at index 2 is not below the babybear modulus p = {bb}"):
        nantucket.ntt(x, field="babybear")
    # a uint64 value that would wrap into range as uint32 is refused, not truncated
    x[2] = (1 << 32) + 5
    with pytest.raises(ValueError, match=f"x: value {(1 << 32) + 5} at index 2 is not below the babybear"):
        nantucket.ntt(x, field="babybear")


@pytest.mark.parametrize("name", NAMES)
def test_coset_shifts_are_checked_against_the_field_s_p(name):
    p = SPEC[name][0]
    x = points(name, 8, seed=6)
    for bad in (0, p, p + 1):
        with pytest.raises(ValueError, match=rf"coset: the shift must satisfy 0 < g < p \(the {name} modulus "
                                             rf"p = {p}\), got {bad}"):
            nantucket.ntt(x, coset=bad, field=name)
    with nantucket.open(field=name) as dev:
        with pytest.raises(ValueError, match=rf"shift: the shift must satisfy 0 < g < p \(the {name} modulus"):
            dev.lde(x, 2, p)
    assert nantucket.ntt(x, coset=p - 1, field=name).tolist() == naive(x, name, coset=p - 1)


def test_a_size_beyond_koalabear_s_two_adicity_is_refused_before_anything_is_allocated():
    # a zero-stride view of 2^25 points: the length is checked before the values are converted or scanned
    huge = np.broadcast_to(np.uint32(0), (1 << 25,))
    for call in (lambda: nantucket.ntt(huge, field="koalabear"),
                 lambda: nantucket.open(field="koalabear").asarray(huge)):
        with pytest.raises(ValueError, match=r"x: koalabear has roots of unity up to 2\^24, got length "
                                             r"33554432 = 2\^25"):
            call()
    batch = np.broadcast_to(np.uint64(0), (2, 1 << 28))
    with pytest.raises(ValueError, match=r"x: babybear has roots of unity up to 2\^27"):
        nantucket.ntt(batch, field="babybear")
    with nantucket.open(field="koalabear") as dev:
        with pytest.raises(ValueError, match=r"beyond the field's largest transform size 2\^24 in koalabear"):
            dev.lde(np.zeros(1 << 4, dtype=np.uint32), 1 << 21, 7)


@pytest.mark.parametrize("name, array, message", [
    ("goldilocks", np.arange(4, dtype=np.uint32), "expected a numpy uint64 array, got dtype uint32"),
    ("goldilocks-plonky2", np.arange(4, dtype=np.int64), "expected a numpy uint64 array, got dtype int64"),
    ("babybear", np.arange(4, dtype=np.int32), r"expected a numpy uint32 \(or uint64\) array, got dtype int32"),
    ("babybear", np.arange(4, dtype=np.uint16), "got dtype uint16"),
    ("koalabear", np.arange(4, dtype=np.float32), "got dtype float32"),
])
def test_a_wrong_dtype_is_a_type_error(name, array, message):
    with pytest.raises(TypeError, match=f"^x: .*{message}"):
        nantucket.ntt(array, field=name)


def test_an_unknown_field_is_named_with_the_valid_ones():
    x = np.arange(4, dtype=np.uint64)
    valid = r"\(valid: goldilocks, goldilocks-plonky2, babybear, koalabear\)"
    for call in (lambda: nantucket.ntt(x, field="babybare"), lambda: nantucket.intt(x, field="babybare"),
                 lambda: nantucket.open(field="babybare"), lambda: ModelBackend(field="babybare")):
        with pytest.raises(ValueError, match=rf"field: unknown field 'babybare' {valid}; did you mean 'babybear'\?"):
            call()
    with pytest.raises(TypeError, match="field: expected a field name"):
        nantucket.ntt(x, field=31)


def test_a_backend_without_a_field_keyword_computes_in_goldilocks_only(monkeypatch):
    monkeypatch.setitem(B.BACKENDS, "plain", lambda params=None: ModelBackend(params))
    with nantucket.open("plain") as dev:
        assert dev.field.name == "goldilocks"
    with pytest.raises(ValueError, match="field: the plain backend computes in goldilocks only, not babybear"):
        nantucket.open("plain", field="babybear")


# -- the card backends: a field their build does not compute in is refused, before any work ---------------

def test_the_sim_backend_refuses_a_field_its_build_lacks_before_any_work(monkeypatch):
    import nantucket.host.sim_backend as S

    def no_work(*a, **k):
        raise AssertionError("the sim backend went on to its build folder")
    monkeypatch.setattr(S, "writable_build_base", no_work)
    with pytest.raises(ValueError, match="^field: the sim card's build computes in goldilocks, not babybear$"):
        S.SimBackend(BuildParams(lanes=4, log_core=2, channels=4), field="babybear")
    with pytest.raises(ValueError, match="^field: the sim card's build computes in goldilocks, not "
                                         "goldilocks-plonky2$"):
        S.SimBackend(BuildParams(lanes=4, log_core=2, channels=4), field="goldilocks-plonky2")
    with pytest.raises(ValueError, match="^field: the sim card's build computes in babybear, not goldilocks$"):
        S.SimBackend(BuildParams(lanes=8, log_core=3, channels=4, field="babybear"))
    with pytest.raises(ValueError, match="^field: the sim card's build computes in babybear, not koalabear$"):
        S.SimBackend(BuildParams(lanes=8, log_core=3, channels=4, field="babybear"), field="koalabear")
    assert "field" in B.backend_options("sim")


@pytest.mark.parametrize("field", ["babybear", "koalabear"])
def test_the_sim_backend_builds_a_31_bit_card_when_asked_without_params(tmp_path, monkeypatch, field):
    """Without params the card is built in the asked field: at least 8 lanes (eight 32-bit points a beat),
    a 4-lane build of that field refused with the reason."""
    import nantucket.host.sim_backend as S
    monkeypatch.setattr(S, "writable_build_base", lambda: tmp_path)
    be = S.SimBackend(field=field)
    assert be.field is nantucket.FIELDS[field]
    for n in (1 << 4, 1 << 8, 1 << 12):
        p = be.params_for(n)
        assert p.field == field and p.lanes == 8 and p.n_points >= n
    assert B.build_params("sim", 1 << 8, {}, field).field == field
    with pytest.raises(ValueError, match=f"the HBM layout of {field} needs at least 8 lanes"):
        B.build_params("sim", 1 << 8, {"lanes": 4}, field)


def test_the_sim_backend_builds_a_goldilocks_plonky2_card_when_asked_without_params(tmp_path, monkeypatch):
    import nantucket.host.sim_backend as S
    monkeypatch.setattr(S, "writable_build_base", lambda: tmp_path)    # nothing is built by the constructor
    be = S.SimBackend(field="goldilocks-plonky2")
    assert be.field is nantucket.FIELDS["goldilocks-plonky2"]
    assert be.params_for(1 << 8).field == "goldilocks-plonky2" and be.params_for(1 << 8).n_points >= 1 << 8
    assert B.build_params("sim", 1 << 8, {}, "goldilocks-plonky2").field == "goldilocks-plonky2"
    assert B.build_params("xrt", 1 << 8, {"lanes": 4}, "goldilocks-plonky2").field == "goldilocks-plonky2"
    assert B.build_params("xrt", 1 << 8, {}, "goldilocks-plonky2") is None      # the card says which build


def test_the_xrt_backend_refuses_a_field_its_build_lacks_before_opening():
    from nantucket.host.xrt import XrtBackend

    class NoPyxrt:                      # any use of it would fail the test
        def __getattr__(self, name):
            raise AssertionError(f"pyxrt.{name} used")
    # without params the card's identification names its build and field: checked once it is open
    # (tests/test_kernel_fields.py)
    for params, field, built in [(BuildParams(lanes=4, log_core=2, channels=4), "koalabear", "goldilocks"),
                                 (BuildParams(field="goldilocks-plonky2"), "goldilocks", "goldilocks-plonky2")]:
        with pytest.raises(ValueError, match=f"^field: the xrt card's build computes in {built}, not {field}$"):
            XrtBackend(params, xclbin="/nonexistent.xclbin", pyxrt_module=NoPyxrt(), field=field)
    assert "field" in B.backend_options("xrt")
