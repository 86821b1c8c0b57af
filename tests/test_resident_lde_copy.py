"""An LDE of a device-resident array on the stand-in card (xrt over sim.fake_pyxrt): the input stays on
the card. Its rows are copied between buffer sets there (CardDriver.copy_rows, host.xrt: one ``bo.copy``
per HBM channel and source chunk) into the buffers the chained LDE runs in, so the lde call moves no
point over the link (the stand-in's own link log, not only Device.transfers); the result is the model's
LDE (hw.model.ntt's inverse, the zero-extension in numpy, its coset transform; for the axis and ext
layouts the model backend's lde). Without ``bo.copy`` (the published pyxrt binds none) the copy goes
through the host maps and both ways are counted (host/api/device.py, host/api/resident.py,
host/xrt/transfers.py)."""

import numpy as np
import pytest

import nantucket
from nantucket.host.backend_base import CardDriver
from nantucket.host.xrt import TransferFailed
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

GOLD = BuildParams(lanes=4, log_core=4, channels=4)                          # native 2^4 .. 2^8
BABY = BuildParams(lanes=8, log_core=4, channels=4, field="babybear")        # native 2^6 .. 2^8
KOALA = BuildParams(lanes=8, log_core=4, channels=4, field="koalabear")


def open_card(tmp_path, params, **knobs):
    fake = FakePyxrt(**knobs)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0,
                                progress=False, field=params.prime_field)


def link_bytes(fake, dev, since: int) -> dict:
    """The bytes the stand-in's link moved each way from log entry ``since`` (the status record's syncs
    left out: the kernel's, not the points'; a bo.copy's entry is 0 bytes)."""
    status = dev.backend.card.status_buffer.bo.address()
    moved = {"to-device": 0, "from-device": 0}
    for _card, to_device, _s, _e, nbytes, address in list(fake.link_log)[since:]:
        if address != status and to_device is not None:
            moved["to-device" if to_device else "from-device"] += nbytes
    return moved


def model_lde(values, blowup: int, shift: int, order: str, field):
    """(evaluations, coefficients) of (B, M) rows: hw.model's inverse (input order ``order[0]``), the
    zero-extension in numpy, hw.model's coset transform (output order ``order[1]``)."""
    v = np.asarray(values, dtype=np.uint64)
    coeffs = ntt_model.transform(v, inverse=True, order=order[0] + "n", field=field)
    ext = np.zeros(v.shape[:-1] + (v.shape[-1] * blowup,), dtype=np.uint64)
    ext[..., :v.shape[-1]] = coeffs
    return ntt_model.transform(ext, coset=shift, order="n" + order[1], field=field), coeffs


def rand(shape, seed, field):
    return np.random.default_rng(seed).integers(0, field.p, shape, dtype=np.uint64).astype(field.dtype)


CASES = [
    # params, values' shape, axis, ext, blowup, order, return_coeffs
    (GOLD, (20, 16), None, None, 4, "nn", False),   # 2 source chunks (16 + 4 rows), LDE chunks of 4
    (GOLD, (3, 16), None, None, 16, "rr", True),    # chained through 2^5, coefficients back
    (GOLD, (7, 16, 3), None, 3, 4, "nr", False),    # chunks of 5 elements: an LDE chunk spans two
    (GOLD, (32, 5), 0, None, 2, "nn", False),       # columns
    (BABY, (5, 64), None, None, 2, "rn", True),
    (BABY, (3, 64, 4), None, 4, 4, "nr", False),    # quartic extension limbs
    (KOALA, (6, 64), None, None, 4, "rr", False),
    (KOALA, (64, 3), 0, None, 2, "nn", True),
]


@pytest.mark.parametrize("params, shape, axis, ext, blowup, order, coeffs", CASES,
                         ids=[f"{c[0].field}-{'x'.join(map(str, c[1]))}-{c[5]}" for c in CASES])
def test_resident_lde_moves_nothing_over_the_link(tmp_path, params, shape, axis, ext, blowup, order, coeffs):
    field = params.prime_field
    values = rand(shape, hash(shape) % 1000, field)
    shift = 7
    fake, dev = open_card(tmp_path, params)
    with dev:
        if order[0] == "r":
            # an array whose points sit bit-reversed on the card (left so by an "nr" transform), its
            # logical contents ``values``: the order the LDE reads, so no relayout
            u = ntt_model.transform(values.astype(np.uint64), inverse=True, order="rn", field=field)
            a = dev.ntt(dev.asarray(u.astype(field.dtype)), order="nr")
            assert all(c.placement == ("input", True) for c in a.store.chunks)
        else:
            a = dev.asarray(values, axis=axis, ext=ext)
        assert a.resident
        before, start, copies = dict(dev.transfers), len(fake.link_log), len(fake.copy_log)
        got = dev.lde(a, blowup, shift, order=order, return_coeffs=coeffs)
        ext_arr, got_c = got if coeffs else (got, None)
        moved = link_bytes(fake, dev, start)
        c_bytes = 0 if got_c is None else got_c.size * field.point_bytes
        # nothing went up; only the coefficients asked for came down; Device.transfers says the same
        assert moved == {"to-device": 0, "from-device": c_bytes}
        assert {k: dev.transfers[k] - before[k] for k in before} == moved
        assert len(fake.copy_log) > copies and dev.relayouts == 0
        assert "the input stayed on the card" in dev.backend.report["Host work"]
        assert ext_arr.resident
        out = ext_arr.numpy()
        assert np.array_equal(a.numpy(), values)          # the source is unchanged on the card
    want = nantucket.lde(values, blowup, shift, order=order, return_coeffs=coeffs, axis=-1 if axis is None else axis,
                         ext=ext, field=field)
    want_e, want_c = want if coeffs else (want, None)
    assert np.array_equal(out, want_e)
    if coeffs:
        assert np.array_equal(got_c, want_c)
    if axis is None and ext is None:                      # rows: hw.model's transforms directly
        ref_e, ref_c = model_lde(values, blowup, shift, order, field)
        assert np.array_equal(out.astype(np.uint64), ref_e)
        if coeffs:
            assert np.array_equal(got_c.astype(np.uint64), ref_c)


def test_a_resident_array_in_another_order_comes_back_once(tmp_path):
    """An array left bit-reversed by an "nr" transform, given to lde with input order "n" (another order
    is a permutation inside each channel, no byte copy): its rows come back once and go up in the order
    the kernel reads, no relayout, the array left as it sits; the result is the model's."""
    field = F.get("goldilocks")
    x = rand((4, 32), 5, field)
    fake, dev = open_card(tmp_path, GOLD)
    with dev:
        a = dev.ntt(dev.asarray(x), order="nr")
        values = ntt_model.transform(x, order="nr", field=field)      # the array's logical contents
        before, start = dict(dev.transfers), len(fake.link_log)
        ext = dev.lde(a, 4, 3, order="nn")
        moved = link_bytes(fake, dev, start)
        assert moved == {"to-device": x.nbytes, "from-device": x.nbytes}
        assert {k: dev.transfers[k] - before[k] for k in before} == moved
        assert dev.relayouts == 0 and all(c.placement == ("input", True) for c in a.store.chunks)
        got = ext.numpy()
        assert np.array_equal(a.numpy(), values)
    assert np.array_equal(got, model_lde(values, 4, 3, "nn", field)[0])


def test_without_bo_copy_the_copy_goes_through_the_host_and_is_counted(tmp_path):
    """A pyxrt without bo.copy (the published one): the same result, the rows synced from the source
    buffers and to the new ones (no gather or scatter), both ways in Device.transfers and the link log,
    and the report does not say the input stayed on the card."""
    field = F.get("babybear")
    x = rand((5, 64), 9, field)
    fake, dev = open_card(tmp_path, BABY, bo_copy=False)
    with dev:
        a = dev.asarray(x)
        before, start = dict(dev.transfers), len(fake.link_log)
        ext = dev.lde(a, 4, 11, order="nr")
        moved = link_bytes(fake, dev, start)
        assert moved == {"to-device": x.size * 4, "from-device": x.size * 4} and not fake.copy_log
        assert {k: dev.transfers[k] - before[k] for k in before} == moved
        assert "stayed on the card" not in dev.backend.report["Host work"]
        got = ext.numpy()
    assert np.array_equal(got.astype(np.uint64), model_lde(x, 4, 11, "nr", field)[0])


def test_copy_rows_places_rows_where_an_upload_would(tmp_path):
    """The driver's copy_rows (bo.copy per channel and piece) and the interface's default (through the
    host) put rows of two source sets, from given offsets, where upload of those rows into a set sized for
    a larger run puts them (the first run of a chained LDE reads them there); bo.copy out of a buffer's
    bounds is a TransferFailed naming the channel."""
    field = F.get("goldilocks")
    fake, dev = open_card(tmp_path, GOLD)
    with dev:
        be = dev.backend
        x, y = rand((3, 16), 1, field), rand((2, 16), 2, field)
        src1, src2 = be.allocate(be.layout_for(4), 3), be.allocate(be.layout_for(4), 2)
        be.upload(src1, x)
        be.upload(src2, y, reverse=True)
        want = np.concatenate([x[1:3], y[0:2]])         # rows 1, 2 of src1 then rows 0, 1 of src2
        for on_card, copy in ((True, be.copy_rows),
                              (False, lambda dst, pieces, **kw: CardDriver.copy_rows(be, dst, pieces, **kw))):
            dst = be.allocate(be.layout_for(6), 4)
            start = len(fake.link_log)
            moved = copy(dst, [(src1, 1, 0, 2), (src2, 0, 2, 2)], log_n=4)
            if on_card:
                assert moved == 0 and link_bytes(fake, dev, start) == {"to-device": 0, "from-device": 0}
            else:
                assert moved > 0
            back = be.download(dst, 4, buffer="input", log_n=4)
            assert np.array_equal(back[:2], want[:2])
            # src2 holds its rows bit-reversed: copied as placed, they read back with reverse=True
            assert np.array_equal(be.download(dst, 4, buffer="input", log_n=4, reverse=True)[2:], want[2:])
        with pytest.raises(ValueError, match="rows: 3 rows of 2"):
            be.copy_rows(src2, [(src1, 0, 1, 2)], log_n=4)          # 2 rows from row 1 of a 2-row set
        bo1, bo2 = src1.bos[0], src2.bos[0]
        with pytest.raises(TransferFailed, match="copying: copy: .* out of bounds"):
            be.card.xrt.copy(bo2, bo1, bo1.size(), 0, 0, "copying")
