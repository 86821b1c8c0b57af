"""The host library: the link bytes the API counts against the stand-in card's own log, and the
calls a hostile probe found silently wrong (futures of failed calls on several cards, ``wait=False``
arguments changed after submission, resident arrays half-written by a failed run). Results are checked
against the golden model (hw.model.ntt), byte counts against the stand-in pyxrt's link log
(sim/fake_pyxrt.py: every sync it served)."""

import numpy as np
import pytest

import nantucket
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

#: The stand-in card of every field: native 2^4 .. 2^6 points, a 31-bit field's 2^6 .. 2^8 (its HBM
#: layout needs 8 lanes: a unit fills whole beats of eight 32-bit points)
BUILDS = {name: BuildParams(lanes=4, log_core=3, channels=4, field=name) if F.FIELDS[name].point_bytes == 8 else
          BuildParams(lanes=8, log_core=4, channels=4, field=name) for name in F.FIELDS}


def rand(field, shape, seed):
    return np.random.default_rng(seed).integers(0, field.p, shape, dtype=np.uint64).astype(field.dtype)


def open_xrt(tmp_path, field_name="goldilocks", devices=None, **knobs):
    params = BUILDS[field_name]
    fake = FakePyxrt(devices=2 if devices else 1, **knobs)
    xclbin = write_xclbin(tmp_path / f"{field_name}.xclbin", params)
    extra = {} if devices is None else {"devices": devices}
    dev = nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=2.0, progress=False,
                         field=field_name, **extra)
    return fake, dev


def link_bytes(fake, dev, since: int = 0) -> dict:
    """The points' bytes the stand-in's link moved each way (its log from entry ``since``; the status
    record's syncs left out: they are the kernel's, not the points')."""
    status = dev.backend.card.status_buffer.bo.address()
    moved = {"to-device": 0, "from-device": 0}
    for _card, to_device, _s, _e, nbytes, address in list(fake.link_log)[since:]:
        if address != status:
            moved["to-device" if to_device else "from-device"] += nbytes
    return moved


# -- the link bytes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("field_name", list(F.FIELDS))
def test_transfers_count_what_the_link_moves_in_every_field(tmp_path, field_name):
    """Every kind of call on the stand-in card: resident placement, chained transforms, a relayout, the
    download, the chained LDE (with its coefficients back), the staged fallback below the native sizes,
    a staged LDE: ``Device.transfers`` equals the bytes the stand-in's link log shows, each way, after
    each call; a 31-bit field's points are 4 bytes on the link, as ``x.nbytes`` of its uint32 array."""
    field = F.FIELDS[field_name]
    fake, dev = open_xrt(tmp_path, field_name)
    n = 1 << BUILDS[field_name].min_log_n
    x = rand(field, (3, n), 1)
    with dev:
        a = dev.asarray(x)
        assert dev.transfers == {"to-device": x.nbytes, "from-device": 0}
        assert link_bytes(fake, dev) == dev.transfers
        dev.ntt(a, order="nr")
        dev.ntt(a, inverse=True, order="nn")            # the array sits bit-reversed: a relayout
        assert dev.relayouts == 1
        assert link_bytes(fake, dev) == dev.transfers
        twice = ntt_model.transform(ntt_model.transform(x.astype(np.uint64), order="nr", field=field), inverse=True,
                                    field=field)
        assert np.array_equal(a.numpy(), twice)
        assert link_bytes(fake, dev) == dev.transfers
        e, c = dev.lde(x, 2, 7, return_coeffs=True)
        assert np.array_equal(c, ntt_model.transform(x.astype(np.uint64), inverse=True, field=field))
        assert link_bytes(fake, dev) == dev.transfers
        got = e.numpy()
        assert link_bytes(fake, dev) == dev.transfers
        small = rand(field, (2, n // 4), 2)             # below the native sizes: staged, one Backend.run each
        assert np.array_equal(dev.ntt(small).numpy(), ntt_model.transform(small.astype(np.uint64), field=field))
        assert link_bytes(fake, dev) == dev.transfers
        dev.lde(small, 4, 3).numpy()                    # the coefficients through the host, the coset on the card
        assert link_bytes(fake, dev) == dev.transfers
    coeffs = ntt_model.transform(x.astype(np.uint64), inverse=True, field=field)
    padded = np.concatenate([coeffs, np.zeros_like(coeffs)], axis=1)
    assert np.array_equal(got, ntt_model.transform(padded, coset=7, field=field))


def test_a_31_bit_lde_reports_four_bytes_a_point_to_the_card(tmp_path):
    """A BabyBear LDE of 512 points (uint32) counts 2,048 bytes to the card, not 4,096: the CLI's
    transfer bytes and projected PCIe time come from this count."""
    fake, dev = open_xrt(tmp_path, "babybear")
    x = rand(F.BABYBEAR, (8, 64), 3)
    with dev:
        dev.lde(x, 2, 7)
        assert dev.transfers["to-device"] == x.nbytes == 2048
        assert link_bytes(fake, dev)["to-device"] == 2048


# -- several cards: the future of a failed call ----------------------------------------------------------


def test_the_future_of_a_call_that_failed_on_one_card_raises_wherever_it_is_given(tmp_path):
    """Rows below the native sizes (staged on each card, so the failed run leaves nothing on the card to
    mark): an ntt that fails on card 1 (AXI read error) gives a future whose array must not be read,
    transformed or extended as if the call had run: each raises the card's error, as on one device."""
    from nantucket.host.api.multi import CardError
    x = rand(F.GOLDILOCKS, (4, 8), 4)
    fake, dev = open_xrt(tmp_path, devices=[0, 1])
    with dev:
        a = dev.asarray(x)
        fake.set_fault("axi-read", 2)                   # the card loaded last: card 1
        f = dev.ntt(a, wait=False)
        with pytest.raises(CardError, match="card 1 of 2"):
            f.result()
        for call in (lambda: dev.numpy(f), lambda: dev.ntt(f), lambda: dev.intt(f), lambda: dev.lde(f, 2, 7)):
            with pytest.raises(CardError, match="card 1 of 2") as got:
                call()
            assert got.value is f.exception()
        fake.set_fault(None)
        # pending when given: card 1's part fails its own call, the gather names it
        fake.set_fault("axi-read", 2)
        g = dev.ntt(dev.asarray(x, wait=False), wait=False)
        h = dev.numpy(g, wait=False)
        with pytest.raises(CardError, match="card 1 of 2"):
            h.result()


def test_the_future_of_an_in_place_call_on_several_cards_is_the_next_calls_argument(tmp_path):
    """dev.ntt(a, wait=False) on a MultiArray gives a future the next call takes as its array (it named
    the wrong thing: "an array of a single card's device")."""
    x = rand(F.GOLDILOCKS, (4, 32), 5)
    _, dev = open_xrt(tmp_path, devices=[0, 1])
    with dev:
        a = dev.asarray(x)
        f = dev.ntt(a, coset=7, wait=False)
        g = dev.intt(f, coset=7, wait=False)
        assert g.result() is a
        assert np.array_equal(dev.numpy(g), x)
        h = dev.ntt(dev.asarray(a, wait=False), wait=False)
        assert np.array_equal(dev.numpy(h), ntt_model.transform(x))


# -- wait=False: what was checked is what is used --------------------------------------------------------


def slow_card(tmp_path, **knobs):
    """A stand-in card whose link takes about 0.1 s for the array of :func:`busy` (its timing model slowed
    200000x): calls submitted behind it run well after their submission returned."""
    from nantucket.sim.fake_pyxrt import LinkTiming
    return open_xrt(tmp_path, timing=LinkTiming(scale=200000), **knobs)


def busy(dev):
    """A call that keeps the upload stage busy (its future)."""
    return dev.asarray(np.zeros((16, 64), dtype=np.uint64), wait=False)


@pytest.mark.parametrize("call", ["asarray", "ntt", "lde"])
def test_a_wait_false_call_uses_the_points_as_they_were_when_it_was_submitted(tmp_path, call):
    """The caller writes into its array right after a wait=False call returned, while that call waits
    behind another: the result is that of the values it was given (and checked below p), not of what the
    array holds when the call runs, nor of 2^64 - 1 silently reduced mod p."""
    x = rand(F.GOLDILOCKS, (2, 32), 6)
    want = {"asarray": x.copy(), "ntt": ntt_model.transform(x),
            "lde": ntt_model.transform(np.concatenate([ntt_model.transform(x, inverse=True),
                                                       np.zeros_like(x)], axis=1), coset=7)}[call]
    _, dev = slow_card(tmp_path)
    with dev:
        first = busy(dev)
        f = {"asarray": lambda: dev.asarray(x, wait=False), "ntt": lambda: dev.ntt(x, wait=False),
             "lde": lambda: dev.lde(x, 2, 7, wait=False)}[call]()
        x[:] = np.uint64(2**64 - 1)
        assert not first.done(), "the call ran before the caller wrote: the test proves nothing"
        assert np.array_equal(dev.numpy(f), want)


def test_a_wait_false_call_on_several_cards_uses_the_points_as_submitted(tmp_path):
    x = rand(F.GOLDILOCKS, (4, 32), 7)
    want = ntt_model.transform(x)
    _, dev = slow_card(tmp_path, devices=[0, 1])
    with dev:
        first = busy(dev)
        f = dev.ntt(x, wait=False)
        x[:] = 0
        assert not first.done()
        assert np.array_equal(dev.numpy(f), want)


# -- a resident array a failed run half-wrote ------------------------------------------------------------


def test_a_resident_array_a_failed_run_half_wrote_is_refused_naming_the_run(tmp_path):
    """An ntt of a resident array in several kernel calls (chunks of the largest batch) that fails with an
    AXI error: the array's buffers hold part old, part new points. Reading it back, transforming it again
    or extending it raises, naming the failed run; the device and its other arrays go on working."""
    from nantucket.host.backend_base import DeviceError
    params = BUILDS["goldilocks"]
    x = rand(F.GOLDILOCKS, (3 * 4, 64), 8)
    fake, dev = open_xrt(tmp_path)
    with dev:
        assert dev.backend.batch_limit(params.max_log_n) < x.shape[0]     # several calls
        a, b = dev.asarray(x), dev.asarray(x)
        assert a.resident
        fake.set_fault("axi-write", 1)
        with pytest.raises(DeviceError):
            dev.ntt(a)
        fake.set_fault(None)
        for call in (a.numpy, lambda: dev.ntt(a), lambda: dev.lde(a, 2, 7), lambda: dev.numpy(a, wait=False).result()):
            with pytest.raises(RuntimeError, match=r"(a|values): the array may be half-written: the ntt run on it "
                                                   r"failed \(Kernel"):
                call()
        assert np.array_equal(dev.ntt(b).numpy(), ntt_model.transform(x))
        assert np.array_equal(dev.asarray(x).numpy(), x)


# -- the memory ceiling counts the working memory ------------------------------------------------------


def test_the_memory_check_of_a_card_counts_an_ldes_working_memory(tmp_path, monkeypatch):
    """On a card (xrt), an LDE whose input is small but whose result is not (256 points to 2^32) is
    refused before any work, naming what it needs, as on the model device: it passed every check and died
    in numpy's MemoryError allocating the zero-extended 32 GiB. A staged transform counts its copies too."""
    from nantucket.host import memory as M
    monkeypatch.setattr(M, "available_bytes", lambda: 1 << 30)
    fake, dev = open_xrt(tmp_path)
    with dev:
        calls = len(fake.calls)
        with pytest.raises(M.MemoryTooSmall, match=r"^lde to 2\^32 points needs [\d.]+ GiB of memory, this "
                                                   r"machine has 1\.0 GiB available$"):
            dev.lde(np.zeros(256, np.uint64), 1 << 24, 7)
        with pytest.raises(M.MemoryTooSmall, match=r"^ntt of 2\^24 points needs"):
            dev.ntt(np.zeros(1 << 24, np.uint64))                   # past one kernel call: staged
        assert len(fake.calls) == calls, "the card was touched"
        assert np.array_equal(dev.lde(np.ones(16, np.uint64), 4, 7).numpy(),
                              ntt_model.transform(np.r_[np.ones(1, np.uint64), np.zeros(63, np.uint64)], coset=7))


# -- DeviceFuture is a concurrent.futures.Future ---------------------------------------------------------


def test_a_device_future_is_a_concurrent_futures_future(tmp_path):
    """concurrent.futures.wait / as_completed and asyncio.wrap_future take it (they failed on it); it
    cannot be cancelled once submitted, and its result is the call's."""
    import asyncio
    import concurrent.futures as cf
    x = rand(F.GOLDILOCKS, (2, 32), 9)
    _, dev = open_xrt(tmp_path)
    with dev:
        futs = [dev.numpy(dev.ntt(row, wait=False), wait=False) for row in x]
        assert all(isinstance(f, cf.Future) for f in futs)
        assert not any(f.cancel() for f in futs)
        done, pending = cf.wait(futs, timeout=30)
        assert not pending and len(done) == 2
        assert sorted(f.result().tolist() for f in cf.as_completed(futs)) == sorted(ntt_model.transform(x).tolist())

        async def gather():
            return await asyncio.gather(*(asyncio.wrap_future(dev.ntt(row, wait=False)) for row in x))
        arrays = asyncio.run(gather())
        assert np.array_equal(np.array([a.numpy() for a in arrays]), ntt_model.transform(x))


# -- a device dropped without close() --------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["model", "xrt"])
def test_a_device_dropped_without_close_ends_its_stage_threads(tmp_path, backend):
    import gc
    dev = nantucket.open("model") if backend == "model" else open_xrt(tmp_path)[1]
    x = rand(F.GOLDILOCKS, (2, 32), 10)
    assert np.array_equal(dev.numpy(dev.ntt(x, wait=False), wait=False).result(), ntt_model.transform(x))
    threads = list(dev._pipeline._threads)
    assert len(threads) == 3 and all(t.is_alive() for t in threads)
    del dev
    gc.collect()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)


# -- small traps -----------------------------------------------------------------------------------------


def test_each_fields_generator_is_where_users_look_and_the_namespace_holds_no_stray_names():
    """nantucket.GENERATOR is Goldilocks' 7, which generates neither 31-bit field's group: GENERATORS
    gives each field's (checked here to generate: g^((p-1)/q) != 1 for each prime q of p - 1), and the
    top-level namespace does not export importlib's PackageNotFoundError."""
    def prime_factors(n):           # the fields' p - 1 have no prime factor above 2^17
        found, q = set(), 2
        while n > 1 and q < 1 << 17:
            while n % q == 0:
                found.add(q)
                n //= q
            q += 1
        assert n == 1
        return found
    assert nantucket.GENERATOR == 7 and set(nantucket.GENERATORS) == set(nantucket.FIELD_NAMES)
    assert "GENERATORS" in nantucket.__all__
    for name, g in nantucket.GENERATORS.items():
        p = F.FIELDS[name].p
        assert all(pow(g, (p - 1) // q, p) != 1 for q in prime_factors(p - 1)), name
    assert pow(7, (F.BABYBEAR.p - 1) // 2, F.BABYBEAR.p) == 1       # a square: no generator of BabyBear
    assert not hasattr(nantucket, "PackageNotFoundError")


def test_a_missing_xclbin_through_the_api_says_how_to_pass_it_to_the_api(tmp_path):
    from nantucket.host.xrt import XclbinNotFound
    with pytest.raises(XclbinNotFound, match=r"nantucket\.open\(\.\.\., xclbin=PATH\), `nantucket run --xclbin PATH`"):
        nantucket.open("xrt", xclbin=tmp_path / "none.xclbin", pyxrt_module=FakePyxrt())


# -- the prover's buffers --------------------------------------------------------------------------------


@pytest.mark.parametrize("field_name", ["goldilocks", "babybear"])
def test_module_level_lde_is_the_devices(tmp_path, field_name):
    """nantucket.lde beside ntt/intt: the model's by default, any backend's with its options, the same
    arguments as Device.lde (order, return_coeffs, axis), checked before the backend opens."""
    field = F.FIELDS[field_name]
    x = rand(field, (3, 64), 11)
    with nantucket.open("model", field=field_name) as dev:
        want = dev.lde(x, 4, 5, order="nr").numpy()
        want_e, want_c = dev.lde(np.ascontiguousarray(x.T), 2, 5, axis=0, return_coeffs=True)
        want_e = want_e.numpy()
    got = nantucket.lde(x, 4, 5, order="nr", field=field_name)
    assert got.dtype == field.dtype and np.array_equal(got, want)
    e, c = nantucket.lde(np.ascontiguousarray(x.T), 2, 5, axis=0, return_coeffs=True, field=field_name)
    assert np.array_equal(e, want_e) and np.array_equal(c, want_c)
    params = BUILDS[field_name]
    xclbin = write_xclbin(tmp_path / "l.xclbin", params)
    on_card = nantucket.lde(x, 4, 5, order="nr", field=field_name, backend="xrt", params=params, xclbin=xclbin,
                            pyxrt_module=FakePyxrt(), progress=False)
    assert np.array_equal(on_card, want)
    with pytest.raises(TypeError, match=r"^lde: unknown keyword 'blowp'"):
        nantucket.lde(x, 4, 5, blowp=2)
    with pytest.raises(ValueError, match=r"^blowup: expected a power of two >= 1, got 3"):
        nantucket.lde(x, 3, 5, field=field_name, backend="xrt", xclbin=tmp_path / "none.xclbin")  # not opened


@pytest.mark.parametrize("where", ["model", "xrt", "xrt-columns", "cards"])
def test_numpy_writes_into_the_callers_array(tmp_path, where):
    """DeviceArray.numpy(out=...) (a MultiArray's too) writes the contents into the caller's array and
    returns it, blocking or not; a wrong shape, dtype, layout or a read-only array is refused by name
    when the call is made, nothing written."""
    x = rand(F.GOLDILOCKS, (4, 32), 12)
    if where == "model":
        dev = nantucket.open("model")
    else:
        dev = open_xrt(tmp_path, devices=[0, 1] if where == "cards" else None)[1]
    with dev:
        a = dev.ntt(np.ascontiguousarray(x.T), axis=0) if where == "xrt-columns" else dev.ntt(x)
        want = ntt_model.transform(x)
        want = np.ascontiguousarray(want.T) if where == "xrt-columns" else want
        out = np.full(a.shape, 5, dtype=np.uint64)
        assert a.numpy(out=out) is out and np.array_equal(out, want)
        out2 = np.zeros(a.shape, dtype=np.uint64)
        f = a.numpy(out=out2, wait=False)
        assert f.result() is out2 and np.array_equal(out2, want)
        keep = np.full(a.shape, 9, dtype=np.uint64)
        bad = [(np.zeros(a.shape, np.uint32), TypeError, r"^out: expected dtype uint64 \(the field's\), got uint32"),
               (np.zeros((1,) + a.shape, np.uint64), ValueError, r"^out: expected shape"),
               (np.zeros(a.shape[::-1], np.uint64).T, ValueError, r"^out: expected a C-contiguous array"),
               ([0] * a.size, TypeError, r"^out: expected a numpy array, got list")]
        ro = keep.copy()
        ro.flags.writeable = False
        bad.append((ro, ValueError, r"^out: the array is read-only"))
        for given, error, message in bad:
            with pytest.raises(error, match=message):
                a.numpy(out=given)
        with pytest.raises(TypeError, match=r"unknown keyword 'outt'"):
            a.numpy(outt=keep)


@pytest.mark.parametrize("field_name", ["goldilocks", "babybear"])
def test_rows_of_a_resident_array_move_only_those_rows(tmp_path, field_name):
    """a.rows(indices) of a resident (B, N) array in several buffer sets (chunks of the largest batch),
    left bit-reversed by an "nr" transform: the rows asked (any order, repeats, negative indices) equal
    numpy()'s, and the stand-in's link log shows only the distinct rows asked moving from the card, as
    ``transfers`` counts. Bad indices are refused by name; the model device gives the same rows."""
    field = F.FIELDS[field_name]
    params = BUILDS[field_name]
    n = 1 << params.max_log_n
    x = rand(field, (12, n), 13)
    want = ntt_model.transform(x.astype(np.uint64), order="nr", field=field).astype(field.dtype)
    fake, dev = open_xrt(tmp_path, field_name)
    with dev:
        assert dev.backend.batch_limit(params.max_log_n) < 12
        a = dev.ntt(dev.asarray(x), order="nr")
        picks = [11, 0, 5, 5, -1, 7]
        before, start = dict(dev.transfers), len(fake.link_log)
        got = a.rows(picks)
        moved = link_bytes(fake, dev, start)["from-device"]
        assert got.dtype == field.dtype and np.array_equal(got, want[picks])
        assert moved == dev.transfers["from-device"] - before["from-device"] == 4 * n * field.point_bytes
        assert np.array_equal(dev.rows(a, np.array([3]), wait=False).result(), want[[3]])
        outside = r"^indices: row 12 \(at position 0\) is outside the array's 12 rows"
        for bad, error, message in [([12], ValueError, outside),
                                    ([-13], ValueError, r"^indices: row -13"),
                                    ([1.0], TypeError, r"^indices: expected a 1-D sequence of row numbers"),
                                    ([[1]], TypeError, r"^indices: expected a 1-D sequence")]:
            with pytest.raises(error, match=message):
                a.rows(bad)
        with pytest.raises(ValueError, match=r"^a: rows\(\) takes a \(B, N\) array of rows"):
            dev.asarray(np.ascontiguousarray(x.T), axis=0).rows([0])
    with nantucket.open("model", field=field_name) as model:
        m = model.ntt(model.asarray(x), order="nr")
        assert np.array_equal(m.rows(picks), want[picks])


def test_rows_of_an_array_on_two_cards_come_from_the_cards_holding_them(tmp_path):
    """A MultiArray's rows(indices): each card moves only the rows asked of its part (the link log per
    card), joined in the order asked."""
    x = rand(F.GOLDILOCKS, (6, 64), 14)
    want = ntt_model.transform(x, coset=3)
    fake, dev = open_xrt(tmp_path, devices=[0, 1])
    with dev:
        a = dev.ntt(dev.asarray(x), coset=3)
        start = len(fake.link_log)
        picks = [5, 0, 4, 4]
        assert np.array_equal(a.rows(picks), want[picks])
        # no kernel runs here: every sync is the rows' (card 0 holds rows 0..2, card 1 rows 3..5)
        moved = {card: sum(nb for c, to, _s, _e, nb, _a in list(fake.link_log)[start:] if c == card and not to)
                 for card in (0, 1)}
        assert np.array_equal(dev.rows(a, [1], wait=False).result(), want[[1]])
    assert moved == {0: 1 * 64 * 8, 1: 2 * 64 * 8}
