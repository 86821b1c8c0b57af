"""Shapes of the API (docs/api.md "Shapes: axis and extension fields"): ``axis=0`` (each column of an
(N, B) matrix one polynomial) and ``ext=D`` (the trailing axis the D limbs of an extension element), on
ntt, intt, lde and device arrays, checked against an independent extension-field implementation written
here: elements as D-tuples of ints, the full product modulo the irreducible x^D - W, and the transforms
from their definitions (O(N^2) sums) with base-field roots and shifts embedded in the extension.

Model device: every field, forward / inverse / coset / every order / lde, axis 0 and -1. The xrt driver on
the stand-in card (sim.fake_pyxrt, the register-level kernel model): the same results, the arrays
resident, the scatter reading the caller's memory in place and the gather writing the result's (no
transpose pass). The sim card (the kernel RTL in Verilator, the small builds other tests use) in
Goldilocks, BabyBear and KoalaBear. Several devices and a Dask cluster pass the keywords on.
"""

import numpy as np
import pytest

import nantucket
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

from field_reference import SPEC, rev, root

#: field: (D, W): the extension F[x]/(x^D - W) its provers use (plonky2's GoldilocksExt2; Plonky3's
#: quartic BabyBear and KoalaBear extensions)
EXT = {"goldilocks": (2, 7), "goldilocks-plonky2": (2, 7), "babybear": (4, 11), "koalabear": (4, 3)}
FIELDS = list(EXT)
SHIFT = 7


# -- the independent extension field -----------------------------------------------------------------

class Ext:
    """F_p[x] / (x^D - W): elements are D-tuples of ints (limb l the coefficient of x^l)."""

    def __init__(self, field: str):
        self.p = SPEC[field][0]
        self.d, self.w = EXT[field]

    def irreducible(self) -> bool:
        """x^D - W for D = 2 or 4 (p = 1 mod 4): irreducible iff W is not a square mod p."""
        return pow(self.w, (self.p - 1) // 2, self.p) == self.p - 1

    def base(self, c: int) -> tuple:
        return (c % self.p,) + (0,) * (self.d - 1)

    def add(self, a, b):
        return tuple((x + y) % self.p for x, y in zip(a, b))

    def mul(self, a, b):
        """The full product: the schoolbook product of the two polynomials, x^D folded back as W."""
        prod = [0] * (2 * self.d - 1)
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                prod[i + j] += x * y
        out = prod[:self.d]
        for k in range(self.d, 2 * self.d - 1):
            out[k - self.d] += self.w * prod[k]
        return tuple(v % self.p for v in out)

    def zero(self):
        return (0,) * self.d


def ext_ntt(E: Ext, field: str, x, *, inverse=False, coset=None, order="nn"):
    """The transform of a list of extension elements from its definition, every product a full extension
    product (twiddles and shifts are base-field constants embedded as x^0 limbs)."""
    p, n = E.p, len(x)
    k = n.bit_length() - 1
    if order[0] == "r":
        x = [x[rev(j, k)] for j in range(n)]
    w = root(field, n)
    c = 1 if coset is None else coset
    if inverse:
        w, c = pow(w, p - 2, p), pow(c, p - 2, p)
    out = []
    for kk in range(n):
        acc = E.zero()
        for j, v in enumerate(x):
            factor = pow(w, j * kk, p) if inverse else pow(c, j, p) * pow(w, j * kk, p)
            acc = E.add(acc, E.mul(E.base(factor), v))
        if inverse:
            acc = E.mul(acc, E.base(pow(n, p - 2, p) * pow(c, kk, p)))
        out.append(acc)
    if order[1] == "r":
        out = [out[rev(i, k)] for i in range(n)]
    return out


def ext_lde(E: Ext, field: str, values, blowup: int, shift: int):
    """The interpolant of the values (on the M-th roots) evaluated by Horner at shift * w_T^k."""
    coeffs = ext_ntt(E, field, values, inverse=True)
    t = len(values) * blowup
    wt = root(field, t)
    out = []
    for kk in range(t):
        z = E.base(shift * pow(wt, kk, E.p))
        acc = E.zero()
        for c in reversed(coeffs):
            acc = E.add(E.mul(acc, z), c)
        out.append(acc)
    return out


def polys(a: np.ndarray, axis: int, ext: int | None) -> list[list]:
    """The polynomials of an array (each a list of points: ints, or D-tuples with ext), in batch order."""
    if ext is None:
        a = a[..., None]
    if a.ndim == 2:                                  # one polynomial
        return [[tuple(int(v) for v in pt) for pt in a]]
    a = a if axis in (-1, 1) else a.transpose(1, 0, 2)
    return [[tuple(int(v) for v in pt) for pt in row] for row in a]


def array_of(rows: list[list], axis: int, ext: int | None, one: bool, dtype) -> np.ndarray:
    """The inverse of :func:`polys`."""
    a = np.array(rows, dtype=object)                 # (B, N, D)
    if one:
        a = a[0]
    elif axis not in (-1, 1):
        a = a.transpose(1, 0, 2)
    if ext is None:
        a = a[..., 0]
    return a.astype(dtype)


def ext_for(field, ext):
    """The reference's extension for ``ext`` limbs: the field's own for its D, else F[x]/(x^D - W) with
    the field's W (any D: the transforms only multiply by base-field constants), D = 1 the base field."""
    E = Ext(field)
    E.d = ext if ext is not None else 1
    return E


def reference(x, field, axis, ext, **kw):
    E = ext_for(field, ext)
    rows = [ext_ntt(E, field, poly, **kw) for poly in polys(x, axis, ext)]
    return array_of(rows, axis, ext, x.ndim == (1 if ext is None else 2), x.dtype)


def reference_lde(x, field, axis, ext, blowup, shift):
    E = ext_for(field, ext)
    rows = [ext_lde(E, field, poly, blowup, shift) for poly in polys(x, axis, ext)]
    return array_of(rows, axis, ext, x.ndim == (1 if ext is None else 2), x.dtype)


def points_axis(a: np.ndarray, axis: int, ext: int | None) -> int:
    """The array axis holding the points (``axis`` counts the axes that are not the limbs)."""
    return axis % (a.ndim - (ext is not None))


def reversed_points(a: np.ndarray, axis: int, ext: int | None) -> np.ndarray:
    """``a`` with every polynomial's points in bit-reversed order (its own inverse)."""
    ax = points_axis(a, axis, ext)
    n = a.shape[ax]
    return np.take(a, [rev(i, n.bit_length() - 1) for i in range(n)], axis=ax)


def reference_lde_ordered(x, field, axis, ext, blowup, shift, order):
    """(evaluations, coefficients) of lde(x, ..., order=order, return_coeffs=True): the values' order
    undone, the natural-order interpolant's coefficients and its evaluations, the result's order applied."""
    natural = reversed_points(x, axis, ext) if order[0] == "r" else x
    coeffs = reference(natural, field, axis, ext, inverse=True)
    evals = reference_lde(natural, field, axis, ext, blowup, shift)
    return (reversed_points(evals, axis, ext) if order[1] == "r" else evals), coeffs


def points(shape, field, seed):
    p = SPEC[field][0]
    dtype = np.uint64 if p > 2**32 else np.uint32
    rng = np.random.default_rng(seed)
    x = rng.integers(0, p, shape, dtype=np.uint64).astype(dtype)
    x.reshape(-1)[:2] = (p - 1, 0)                  # the edges
    return x


def shaped(n: int, b: int | None, axis: int, d: int | None) -> tuple:
    """The array shape of b polynomials of n points (b None: one) with the points on ``axis``."""
    base = (n,) if b is None else ((b, n) if axis in (-1, 1) else (n, b))
    return base + ((d,) if d is not None else ())


def test_the_reference_extensions_are_fields():
    """x^D - W is irreducible for each field's extension, and the product is a field's: commutative,
    associative, invertible (a^(p^D - 1) = 1)."""
    rng = np.random.default_rng(3)
    for field in FIELDS:
        E = Ext(field)
        assert E.irreducible(), field
        a, b, c = (tuple(int(v) for v in rng.integers(0, min(E.p, 2**62), E.d)) for _ in range(3))
        assert E.mul(a, b) == E.mul(b, a) and E.mul(E.mul(a, b), c) == E.mul(a, E.mul(b, c))
        acc, base, e = E.base(1), a, E.p ** E.d - 1
        while e:
            if e & 1:
                acc = E.mul(acc, base)
            base, e = E.mul(base, base), e >> 1
        assert acc == E.base(1), field


# -- the model device -----------------------------------------------------------------------------------

@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("ext", ["ext", None])
@pytest.mark.parametrize("inverse, coset, order", [(False, None, "nn"), (True, None, "nn"), (False, SHIFT, "nr"),
                                                   (True, SHIFT, "rn"), (False, None, "rr")])
def test_transforms_match_the_definition(field, axis, ext, inverse, coset, order):
    d = EXT[field][0] if ext else None
    x = points(shaped(16, 3, axis, d), field, seed=hash((field, axis, inverse, order)) % 1000)
    want = reference(x, field, axis, d, inverse=inverse, coset=coset, order=order)
    got = nantucket.ntt(x, inverse=inverse, coset=coset, order=order, axis=axis, ext=d, field=field)
    assert got.shape == x.shape and got.dtype == x.dtype and got.flags.c_contiguous
    assert np.array_equal(got, want)
    with nantucket.open("model", field=field) as dev:
        a = dev.asarray(x, axis=axis, ext=d)
        assert a.shape == x.shape and a.ext == d and a.axis == (0 if axis == 0 else 1)
        dev.ntt(a, inverse=inverse, coset=coset, order=order)
        assert np.array_equal(a.numpy(), want)
        back = order[1] + order[0]
        dev.ntt(a, inverse=not inverse, coset=coset, order=back)
        assert np.array_equal(a.numpy(), x), "the round trip"


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("axis", [-1, 0])
def test_one_polynomial_and_an_extension_scalar(field, axis):
    """1-D points (axis 0 and -1 alike) and (N, D) elements; the transform is linear over the extension:
    ntt(alpha * x) = alpha * ntt(x) for an extension scalar alpha (full products, computed here)."""
    E = Ext(field)
    x = points((8, E.d), field, 5)
    y = nantucket.ntt(x, ext=E.d, axis=axis, field=field, coset=SHIFT)
    assert np.array_equal(y, reference(x, field, axis, E.d, coset=SHIFT))
    alpha = (3, 5, 7, 11)[:E.d]
    ax = np.array([E.mul(alpha, tuple(int(v) for v in pt)) for pt in x], dtype=object).astype(x.dtype)
    ay = nantucket.ntt(ax, ext=E.d, axis=axis, field=field, coset=SHIFT)
    assert [tuple(int(v) for v in pt) for pt in ay] == [E.mul(alpha, tuple(int(v) for v in pt)) for pt in y]
    one = points((16,), field, 6)
    assert np.array_equal(nantucket.ntt(one, axis=0, field=field), nantucket.ntt(one, field=field))


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("ext", ["ext", None])
@pytest.mark.parametrize("blowup", [2, 4])
def test_lde_evaluates_the_interpolant_on_the_coset(field, axis, ext, blowup):
    d = EXT[field][0] if ext else None
    x = points(shaped(8, 2, axis, d), field, seed=blowup)
    want = reference_lde(x, field, axis, d, blowup, SHIFT)
    with nantucket.open("model", field=field) as dev:
        out = dev.lde(x, blowup, SHIFT, axis=axis, ext=d)
        assert out.shape == want.shape and out.axis == (0 if axis == 0 else 1) and out.ext == d
        assert np.array_equal(out.numpy(), want)
        a = dev.asarray(x, axis=axis, ext=d)
        again = dev.lde(a, blowup, SHIFT)           # a device array's own axis and ext
        assert np.array_equal(again.numpy(), want)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("axis, ext, order", [(0, "ext", "nr"), (-1, "ext", "rr"), (0, None, "rn"), (0, 3, "nn")])
def test_lde_orders_and_coefficients_keep_the_shape(field, axis, ext, order):
    """lde's order and return_coeffs with axis and ext: the evaluations in the values' layout, each
    polynomial's points in the result's order, and the coefficients (natural order) in the values' shape,
    axis and limbs; from host points and from a device array of them alike."""
    d = EXT[field][0] if ext == "ext" else ext
    x = points(shaped(8, 2, axis, d), field, seed=len(order) + (d or 0))
    want, want_c = reference_lde_ordered(x, field, axis, d, 2, SHIFT, order)
    with nantucket.open("model", field=field) as dev:
        out, coeffs = dev.lde(x, 2, SHIFT, order=order, return_coeffs=True, axis=axis, ext=d)
        assert out.shape == want.shape and out.ext == d and out.axis == (0 if axis == 0 else 1)
        assert coeffs.shape == x.shape and coeffs.dtype == x.dtype and coeffs.flags.c_contiguous
        assert np.array_equal(coeffs, want_c) and np.array_equal(out.numpy(), want)
        again, coeffs2 = dev.lde(dev.asarray(x, axis=axis, ext=d), 2, SHIFT, order=order, return_coeffs=True)
        assert np.array_equal(coeffs2, want_c) and np.array_equal(again.numpy(), want)


# -- bad input ---------------------------------------------------------------------------------------

X = np.arange(32, dtype=np.uint64).reshape(16, 2)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: nantucket.ntt(X, axis=2), ValueError,
     r"^axis: 2 is out of range for 2-D points of shape \(16, 2\); expected -1 .* or 0 "),
    (lambda: nantucket.ntt(X, axis=-3), ValueError, r"^axis: -3 is out of range"),
    (lambda: nantucket.ntt(X, axis=1.0), TypeError, r"^axis: expected an int"),
    (lambda: nantucket.ntt(X, axis=True), TypeError, r"^axis: expected an int"),
    (lambda: nantucket.ntt(X, axis=None), TypeError, r"^axis: expected an int"),
    (lambda: nantucket.ntt(X, ext=3), ValueError,
     r"^x: ext=3 limbs per element, but the trailing axis has 2 \(shape \(16, 2\)\)$"),
    (lambda: nantucket.ntt(X, ext=0), ValueError, r"^ext: expected a positive number of limbs D"),
    (lambda: nantucket.ntt(X, ext=2.0), TypeError, r"^ext: expected None or a positive int D"),
    (lambda: nantucket.ntt(X, ext="2"), TypeError, r"^ext: expected None or a positive int D"),
    (lambda: nantucket.ntt(X.reshape(-1), ext=2), ValueError, r"^x: with ext=2, expected a 2-D array"),
    (lambda: nantucket.ntt(X, ext=2, axis=1), ValueError,
     r"^axis: 1 is out of range for 1-D points of shape \(16, 2\) \(the trailing axis of the ext limbs"),
    (lambda: nantucket.ntt(X.astype(np.int64), axis=0), TypeError, r"^x: expected a numpy uint64 array"),
    (lambda: nantucket.ntt(np.zeros((12, 2), np.uint64), axis=0), ValueError,
     r"^x: the transform length must be a power of two, got 12"),
    (lambda: nantucket.ntt(X, axes=0), TypeError, r"^ntt: unknown keyword 'axes' .*did you mean 'axis'"),
    (lambda: nantucket.open("model").lde(X, 2, 7, ext=-1), ValueError, r"^ext: expected a positive"),
])
def test_bad_shapes_are_one_line_errors_naming_the_parameter(call, exc, message):
    with pytest.raises(exc, match=message) as e:
        call()
    assert "\n" not in str(e.value)


def test_a_device_array_keeps_its_layout():
    """A DeviceArray's axis and ext are its own: given again they must agree (ValueError otherwise)."""
    with nantucket.open("model") as dev:
        a = dev.asarray(X, axis=0)
        assert dev.asarray(a) is a and dev.asarray(a, axis=0) is a
        dev.ntt(a, axis=-2)                         # the same axis, counted from the end
        with pytest.raises(ValueError, match=r"^axis: a holds its points on axis 0 \(set when it was made\), not axis=-1$"):
            dev.ntt(a, axis=-1)
        with pytest.raises(ValueError, match=r"^ext: values holds base-field points .*not ext=2$"):
            dev.lde(a, 2, 7, ext=2)
        b = dev.asarray(X, ext=2)
        with pytest.raises(ValueError, match=r"^ext: a holds ext=2 limbs"):
            dev.intt(b, ext=4)


# -- the xrt driver on the stand-in card: resident, in place ---------------------------------------------

def small_params(field):
    """2^4 .. 2^6 points natively in Goldilocks, 2^6 .. 2^8 in a 31-bit field (at least 8 lanes)."""
    if field.startswith("goldilocks"):
        return BuildParams(lanes=4, log_core=3, channels=4, field=field)
    return BuildParams(lanes=8, log_core=4, channels=4, field=field)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("axis, ext, b", [(0, None, 5), (-1, "ext", 3), (0, "ext", 3), (0, 3, 2)])
def test_xrt_arrays_are_resident_and_the_layout_step_reads_and_writes_in_place(tmp_path, monkeypatch, field, axis,
                                                                              ext, b):
    """Every call matches the model device's (checked against the reference above); the rows reach the driver's upload as views of the caller's
    array (the scatter reads it in place: no transpose copy) and numpy()'s gather writes straight into the
    result; chained transforms stay on the card (no relayout). D = 3 or 4 with 2 transforms per kernel
    call (the LDE's) splits an element's limbs over calls."""
    d = EXT[field][0] if ext == "ext" else ext
    p = small_params(field)
    x = points(shaped(1 << (p.min_log_n + 1), b, axis, d), field, seed=b)     # 2 or 4 per kernel call
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", p)
    with nantucket.open("xrt", params=p, xclbin=xclbin, pyxrt_module=fake, field=field, timeout_s=5.0,
                        progress=False) as dev:
        driver = dev.backend
        seen = {"up": [], "down": []}
        upload, download = driver.upload, driver.download

        def spy_upload(bufs, rows, **kw):
            seen["up"].append(rows)
            return upload(bufs, rows, **kw)

        def spy_download(bufs, batch, **kw):
            seen["down"].append(kw.get("out"))
            return download(bufs, batch, **kw)
        monkeypatch.setattr(driver, "upload", spy_upload)
        monkeypatch.setattr(driver, "download", spy_download)
        wide = x.astype(np.uint64)                  # what the API holds (uint32 points are widened once)
        a = dev.asarray(wide, axis=axis, ext=d)
        assert a.resident and len(seen["up"]) >= 1
        assert all(np.shares_memory(r, wide) for r in seen["up"]), "a copy went to the scatter"
        dev.ntt(a, coset=SHIFT, order="nr")
        dev.intt(a, coset=SHIFT, order="rn")
        dev.ntt(a, order="nr")
        assert dev.relayouts == 0
        got = a.numpy()
        assert got.flags.c_contiguous and got.dtype == x.dtype
        assert seen["down"] and all(o is not None and np.shares_memory(o, got) for o in seen["down"])
        out = dev.lde(x, 2, SHIFT, axis=axis, ext=d)
        assert "LDE ran on the card" in dev.backend.report["Host work"]
        out = out.numpy()
    with nantucket.open("model", field=field) as model:
        assert np.array_equal(got, model.ntt(x, order="nr", axis=axis, ext=d).numpy())
        assert np.array_equal(out, model.lde(x, 2, SHIFT, axis=axis, ext=d).numpy())


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("axis, ext, b, order, computes", [
    (0, "ext", 3, "nr", None), (0, "ext", 2, "rn", None), (0, 3, 2, "rr", None), (-1, "ext", 2, "nr", None),
    (0, "ext", 3, "nr", frozenset({"coset", "batch"}))])
def test_xrt_lde_orders_and_coefficients_with_axis_and_ext(tmp_path, field, axis, ext, b, order, computes):
    """The LDE chained on the stand-in card with the orders in the layout step and the coefficients
    brought back, for columns of extension elements (an element's limbs split over kernel calls for D = 3
    and 4: 2 LDE transforms per call) and a kernel without the inverse (the coefficients through the
    host): the values read in place, the result and the coefficients in the values' layout, resident and
    then transformed back on the card without a relayout."""
    d = EXT[field][0] if ext == "ext" else ext
    p = small_params(field)
    x = points(shaped(1 << (p.min_log_n + 1), b, axis, d), field, seed=b + len(order))
    want, want_c = reference_lde_ordered(x, field, axis, d, 2, SHIFT, order)
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", p)
    options = {} if computes is None else {"kernel_computes": computes}
    with nantucket.open("xrt", params=p, xclbin=xclbin, pyxrt_module=fake, field=field, timeout_s=5.0,
                        progress=False, **options) as dev:
        wide = x.astype(np.uint64)
        ups = []
        upload = dev.backend.upload

        def spy_upload(bufs, rows, **kw):
            ups.append(rows)
            return upload(bufs, rows, **kw)
        dev.backend.upload = spy_upload
        out, coeffs = dev.lde(wide, 2, SHIFT, order=order, return_coeffs=True, axis=axis, ext=d)
        if computes is None:
            assert "LDE ran on the card" in dev.backend.report["Host work"]
            assert ups and all(np.shares_memory(r, wide) for r in ups), "a copy went to the scatter"
        assert out.resident and out.shape == want.shape and out.axis == (0 if axis == 0 else 1) and out.ext == d
        assert coeffs.shape == x.shape and coeffs.dtype == x.dtype
        assert np.array_equal(coeffs, want_c)
        assert np.array_equal(out.numpy(), want)
        dev.intt(out, coset=SHIFT, order=order[1] + "n")        # back to the coefficients, zero-extended
        if computes is None:
            assert dev.relayouts == 0
        back = out.numpy()
    ax = points_axis(x, axis, d)
    m = x.shape[ax]
    assert np.array_equal(np.take(back, range(m), axis=ax), want_c)
    assert not np.take(back, range(m, 2 * m), axis=ax).any()


# -- the sim card (kernel RTL in Verilator): the small builds of tests/test_api.py and test_kernel_fields31.py

SIM_BUILDS = {
    "goldilocks": BuildParams(lanes=4, log_core=3, channels=4),            # smallest_params(64)
    "babybear": BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
    "koalabear": BuildParams(lanes=8, log_core=5, channels=8, field="koalabear"),
}


@pytest.mark.parametrize("field", list(SIM_BUILDS))
def test_sim_card_transforms_columns_and_extension_limbs(field):
    """On the simulated kernel: columns of extension elements forward with a coset and a bit-reversed
    output, back, an lde (also with a bit-reversed result and the coefficients back), and a (B, N) row
    batch of extension elements: every result the reference's."""
    d = EXT[field][0]
    x = points((16, 2, d), field, seed=1)           # 2 columns of 16 elements
    rows = points((2, 16, d), field, seed=2)
    with nantucket.open("sim", params=SIM_BUILDS[field], field=field, progress=lambda line: None) as dev:
        a = dev.asarray(x, axis=0, ext=d)
        dev.ntt(a, coset=SHIFT, order="nr")
        assert np.array_equal(a.numpy(), reference(x, field, 0, d, coset=SHIFT, order="nr"))
        dev.intt(a, coset=SHIFT, order="rn")
        assert np.array_equal(a.numpy(), x)
        assert np.array_equal(dev.lde(x, 2, SHIFT, axis=0, ext=d).numpy(), reference_lde(x, field, 0, d, 2, SHIFT))
        out, coeffs = dev.lde(x, 2, SHIFT, axis=0, ext=d, order="nr", return_coeffs=True)
        want, want_c = reference_lde_ordered(x, field, 0, d, 2, SHIFT, "nr")
        assert np.array_equal(coeffs, want_c) and np.array_equal(out.numpy(), want)
        assert np.array_equal(dev.ntt(rows, ext=d, inverse=True).numpy(), reference(rows, field, -1, d, inverse=True))


# -- several devices, several hosts -------------------------------------------------------------------------

def test_several_devices_split_the_columns_and_keep_the_limbs_together():
    x = points((16, 5, 2), "goldilocks", 9)
    want = reference(x, "goldilocks", 0, 2, coset=SHIFT)
    with nantucket.open("model", devices=2) as dev:
        a = dev.asarray(x, axis=0, ext=2)
        assert a.shape == x.shape and a.axis == 0 and a.ext == 2
        assert [arr.shape for _, arr in a.parts] == [(16, 3, 2), (16, 2, 2)]
        dev.ntt(a, coset=SHIFT)
        assert np.array_equal(a.numpy(), want)
        out = dev.lde(a, 2, SHIFT)                  # of a's values now: the transform's
        assert out.shape == (32, 5, 2)
        assert np.array_equal(out.numpy(), reference_lde(want, "goldilocks", 0, 2, 2, SHIFT))
        with pytest.raises(ValueError, match="^axis: a holds its points on axis 0"):
            dev.ntt(a, axis=-1)
        assert np.array_equal(dev.ntt(x.transpose(1, 0, 2), ext=2, coset=SHIFT).numpy(),
                              want.transpose(1, 0, 2))


def test_a_cluster_passes_axis_and_ext_on():
    distributed = pytest.importorskip("distributed")
    x = points((8, 3, 2), "goldilocks", 10)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with nantucket.open("model", cluster=client) as dev:
            a = dev.asarray(x, axis=0, ext=2)
            assert a.axis == 0 and a.ext == 2 and len(a.parts) == 2
            dev.ntt(a, order="nr")
            assert np.array_equal(a.numpy(), reference(x, "goldilocks", 0, 2, order="nr"))
            out = dev.lde(x, 2, SHIFT, axis=0, ext=2)
            assert np.array_equal(out.numpy(), reference_lde(x, "goldilocks", 0, 2, 2, SHIFT))
