"""A constrained-random regression of the API: fields, shapes (rows, columns with axis=0, extension
limbs), sizes (below, in and past the native range), orders, cosets, inverse, the LDE (blowups, its
coefficients), blocking and wait=False calls, chained transforms on resident arrays, on the golden-model
device, a stand-in card and two stand-in cards (sim/fake_pyxrt.py). Every result is checked against the
golden model (hw.model.ntt.transform) applied along the points axis of the numpy array itself (an
independent path: no device, no layout step). Seeded: a failure names its case and reruns the same."""

import numpy as np
import pytest

import nantucket
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

BUILDS = {name: BuildParams(lanes=4, log_core=3, channels=4, field=name) if F.FIELDS[name].point_bytes == 8 else
          BuildParams(lanes=8, log_core=4, channels=4, field=name) for name in F.FIELDS}
CASES_PER_DEVICE = 40
ORDERS = ("nn", "nr", "rn", "rr")


def along(x: np.ndarray, axis: int, fn) -> np.ndarray:
    """fn of the (R, N) rows of x's points on ``axis`` (the other axes kept in place)."""
    moved = np.moveaxis(x.astype(np.uint64), axis, -1)
    rows = fn(moved.reshape(-1, moved.shape[-1]))
    return np.moveaxis(rows.reshape(moved.shape[:-1] + (rows.shape[-1],)), -1, axis)


def reference(field, op, x, axis, kw):
    if op in ("ntt", "intt"):
        return along(x, axis, lambda r: ntt_model.transform(r, inverse=op == "intt", coset=kw.get("coset"),
                                                            order=kw["order"], field=field))
    blowup, shift, order = kw["blowup"], kw["shift"], kw["order"]

    def lde(r):
        c = ntt_model.transform(r, inverse=True, order=order[0] + "n", field=field)
        padded = np.concatenate([c, np.zeros((c.shape[0], c.shape[1] * (blowup - 1)), np.uint64)], axis=1)
        return ntt_model.transform(padded, coset=shift, order="n" + order[1], field=field)
    coeffs = along(x, axis, lambda r: ntt_model.transform(r, inverse=True, order=order[0] + "n", field=field))
    return along(x, axis, lde), coeffs


def random_case(rng, field, params):
    """(op, x, axis argument, points axis of x, ext, keywords) within what the field and build take."""
    log_n = int(rng.integers(max(1, params.min_log_n - 2), params.max_log_n + 2))
    op = ("ntt", "intt", "lde")[int(rng.integers(3))]
    kw = {"order": ORDERS[int(rng.integers(4))]}
    if op == "lde":
        kw["blowup"] = 1 << int(rng.integers(0, 3))
        kw["shift"] = int(rng.integers(1, field.p, dtype=np.uint64))
    elif rng.random() < 0.5:
        kw["coset"] = int(rng.integers(1, field.p, dtype=np.uint64))
    n, batch = 1 << log_n, int(rng.integers(1, 6))
    ext = int(rng.integers(2, 4)) if rng.random() < 0.25 else None
    axis = 0 if (batch > 1 and rng.random() < 0.4) else -1
    shape = (n,) if batch == 1 and rng.random() < 0.5 else ((n, batch) if axis == 0 else (batch, n))
    if ext:
        shape += (ext,)
    points_axis = 0 if axis == 0 or len(shape) == 1 + bool(ext) else 1
    edge = rng.random() < 0.2          # edge values: 0, 1, p - 1
    x = (rng.choice(np.array([0, 1, field.p - 1], dtype=np.uint64), shape) if edge else
         rng.integers(0, field.p, shape, dtype=np.uint64)).astype(field.dtype if rng.random() < 0.7 else np.uint64)
    return op, x, axis, points_axis, ext, kw


def run_case(dev, op, x, axis, ext, kw, rng):
    wait = bool(rng.random() < 0.5)
    resident = bool(rng.random() < 0.5)
    src = dev.asarray(x, axis=axis, ext=ext, wait=wait) if resident else x
    given = {} if resident else {"axis": axis, "ext": ext}
    if op == "lde":
        got = dev.lde(src, kw["blowup"], kw["shift"], order=kw["order"], return_coeffs=True, wait=wait, **given)
        got = got.result() if not wait else got
        return dev.numpy(got[0]), got[1]
    call = dev.intt if op == "intt" else dev.ntt
    extra = {"coset": kw["coset"]} if "coset" in kw else {}
    a = call(src, order=kw["order"], wait=wait, **extra, **given)
    return dev.numpy(a, wait=False).result() if not wait else a.numpy()


def open_device(kind, field_name, tmp_path):
    if kind == "model":
        return nantucket.open("model", field=field_name)
    params = BUILDS[field_name]
    xclbin = write_xclbin(tmp_path / f"{field_name}.xclbin", params)
    extra = {"devices": [0, 1]} if kind == "two cards" else {}
    return nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=FakePyxrt(devices=2), timeout_s=5.0,
                          progress=False, field=field_name, **extra)


@pytest.mark.parametrize("kind", ["model", "card", "two cards"])
@pytest.mark.parametrize("field_name", list(F.FIELDS))
def test_random_api_calls_give_the_golden_models_results(tmp_path, kind, field_name):
    field = F.FIELDS[field_name]
    seed = (list(F.FIELDS).index(field_name), ["model", "card", "two cards"].index(kind), 2026)
    rng = np.random.default_rng(seed)
    with open_device(kind, field_name, tmp_path) as dev:
        for case in range(CASES_PER_DEVICE):
            op, x, axis, points_axis, ext, kw = random_case(rng, field, BUILDS[field_name])
            what = f"seed {seed} case {case}: {op} of {x.shape} {x.dtype}, axis {axis}, ext {ext}, {kw}"
            want = reference(field, op, x, points_axis, kw)
            got = run_case(dev, op, x.copy(), axis, ext, kw, rng)
            if op == "lde":
                assert got[0].dtype == field.dtype and got[1].dtype == field.dtype, what
                assert np.array_equal(got[0], want[0]), what
                assert np.array_equal(got[1], want[1]), what
            else:
                assert got.dtype == field.dtype and got.shape == x.shape, what
                assert np.array_equal(got, want), what
