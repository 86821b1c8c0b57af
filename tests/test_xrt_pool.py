"""The XRT backend's pool of device buffers (host/xrt/transfers.py: BufferPool) on the stand-in pyxrt
(sim/fake_pyxrt.py, which logs every ``bo(...)`` and ``free(...)``), and the 31-bit fields' uint32 points
through the API without a uint64 copy. Results are checked against the golden model."""

import gc
import weakref

import numpy as np
import pytest

import nantucket
from nantucket.host import xrt as X
from nantucket.host.api import checks as C
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_BYTES
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

SMALL = BuildParams(lanes=4, log_core=3, channels=4)        # native 2^4 .. 2^6 points
BABY = BuildParams(lanes=8, log_core=4, channels=4, field="babybear")


def make(tmp_path, params=SMALL, **knobs):
    fake = FakePyxrt(**knobs)
    be = X.XrtBackend(params, xclbin=write_xclbin(tmp_path / "n.xclbin", params), pyxrt_module=fake,
                      field=params.prime_field, timeout_s=1.0, progress=False)
    return fake, be


def allocs(fake):
    return [c for c in fake.calls if c.startswith("bo(")]


def frees(fake):
    return [c for c in fake.calls if c.startswith("free(")]


def rows(field, n, seed, batch=1):
    return np.random.default_rng(seed).integers(0, field.p, (batch, n), dtype=np.uint64)


def test_a_released_set_is_handed_out_again_without_a_pyxrt_call(tmp_path):
    fake, be = make(tmp_path)
    layout = be.layout_for(5)
    fake.calls.clear()
    a = be.allocate(layout, 2)
    bos = dict(a.bos)
    assert len(allocs(fake)) == SMALL.channels
    a.release()
    assert not a.bos and be.buffer_pool.idle_bytes == SMALL.channels * 2 * layout.channel_bytes
    fake.calls.clear()
    b = be.allocate(be.layout_for(6), 1)        # the same bytes per buffer: any layout and batch
    assert not allocs(fake) and not frees(fake)
    assert all(b.bos[ch] is bos[ch] for ch in bos)
    c = be.allocate(layout, 1)                  # another size: new buffers
    assert len(allocs(fake)) == SMALL.channels and not any(c.bos[ch] is bos[ch] for ch in bos)


def test_a_dropped_set_comes_back_when_collected_and_runs_right_in_reused_buffers(tmp_path):
    fake, be = make(tmp_path)
    layout = be.layout_for(6)
    for seed in range(4):
        fake.calls.clear()
        x = rows(F.GOLDILOCKS, 64, seed)
        bufs = be.allocate(layout, 1)           # dropped at the end of the loop body, never released
        be.upload(bufs, x)
        be.execute_ntt(bufs)
        assert np.array_equal(be.download(bufs, 1), ntt_model.transform(x))
        assert bool(allocs(fake)) == (seed == 0), seed
        del bufs
    assert be.buffer_pool.reused == 3 and be.buffer_pool.allocated == 1


def test_arrays_of_a_stream_reuse_buffers_blocking_and_pipelined(tmp_path):
    """dev.ntt(x).numpy() per column: one set of buffers for the whole stream, also with wait=False (the
    finished calls hold no array, so its buffers come back without the garbage collector)."""
    fake = FakePyxrt()
    path = write_xclbin(tmp_path / "n.xclbin", SMALL)
    with nantucket.open("xrt", params=SMALL, xclbin=path, pyxrt_module=fake, progress=False) as dev:
        xs = [rows(F.GOLDILOCKS, 64, s)[0] for s in range(12)]
        dev.ntt(xs[0]).numpy()
        fake.calls.clear()
        gc.disable()
        try:
            for x in xs[:6]:
                assert np.array_equal(dev.ntt(x).numpy(), ntt_model.ntt(x))
            assert not allocs(fake), "a blocking stream allocated"
            futs = []
            for x in xs[6:]:
                futs.append(dev.numpy(dev.ntt(x, wait=False), wait=False))
                if len(futs) > 2:
                    futs.pop(0).result()
            for f in futs:
                f.result()
            dev.synchronize()
            # at most the sets of the calls in flight at once (the pipeline holds max_pending)
            assert len(allocs(fake)) <= SMALL.channels * dev.max_pending
            assert not frees(fake)
        finally:
            gc.enable()


def test_closing_frees_the_pool_and_sets_released_after_close(tmp_path):
    fake, be = make(tmp_path)
    idle = be.allocate(be.layout_for(6), 1)
    live = be.allocate(be.layout_for(5), 1)
    idle.release()
    assert fake.hbm.allocated_bytes() > RECORD_BYTES
    fake.calls.clear()
    be.close()
    assert len(frees(fake)) == SMALL.channels + 1           # the idle set and the status record
    assert be.buffer_pool.idle_bytes == 0
    live.release()                                           # after close: freed, not kept
    assert be.buffer_pool.idle_bytes == 0 and fake.hbm.allocated_bytes() == 0


def test_the_pool_keeps_at_most_its_limit_oldest_sets_freed_first(tmp_path):
    fake, be = make(tmp_path)
    layout = be.layout_for(6)
    one = SMALL.channels * layout.channel_bytes
    be.buffer_pool.limit_bytes = 2 * one
    sets = [be.allocate(layout, 1) for _ in range(3)]
    first = [weakref.ref(bo) for bo in sets[0].bos.values()]
    fake.calls.clear()
    for s in sets:
        s.release()
    assert be.buffer_pool.idle_bytes == 2 * one
    assert len(frees(fake)) == SMALL.channels                # the oldest set, gone
    assert all(r() is None for r in first)
    big = be.allocate(layout, 3)                             # a set past the limit is never kept
    fake.calls.clear()
    big.release()
    assert len(frees(fake)) == SMALL.channels


def test_the_buffers_of_a_run_that_timed_out_never_go_back_to_the_pool(tmp_path):
    fake, be = make(tmp_path, hang=True)
    be.timeout_s = 0.05
    bufs = be.allocate(be.layout_for(6), 1)
    be.upload(bufs, rows(F.GOLDILOCKS, 64, 1))
    with pytest.raises(X.KernelTimeout):
        be.execute_ntt(bufs)
    bufs.release()
    assert be.buffer_pool.idle_bytes == 0


def test_out_of_device_memory_frees_the_idle_sets_and_tries_again(tmp_path):
    # a bank of 16 KiB: an idle set of 8 KiB a buffer leaves no room for a set of 12 KiB
    fake, be = make(tmp_path, bank_bytes=16 << 10)
    layout = be.layout_for(6)
    small = be.allocate(layout, 8192 // layout.channel_bytes)
    small.release()
    assert be.buffer_pool.idle_bytes
    bigger = be.allocate(layout, 12288 // layout.channel_bytes)
    assert bigger.channel_bytes == 12288 and be.buffer_pool.idle_bytes == 0


def test_uint32_points_of_a_31_bit_field_are_not_converted(tmp_path):
    field = BABY.prime_field
    x = rows(field, 1 << 7, 3, batch=2).astype(np.uint32)
    got, _ = C.as_shaped(x, "x", field, native=True)
    assert got is x
    assert C.as_shaped(x.astype(">u4"), "x", field, native=True)[0].dtype == np.uint32
    assert C.as_shaped(x, "x", field)[0].dtype == np.uint64          # the default: uint64 rows
    fake = FakePyxrt()
    path = write_xclbin(tmp_path / "n.xclbin", BABY)
    want = ntt_model.transform(x.astype(np.uint64), field=field)
    with nantucket.open("xrt", params=BABY, xclbin=path, pyxrt_module=fake, field="babybear",
                        progress=False) as dev:
        a = dev.asarray(x)
        assert dev.transfers["to-device"] == x.nbytes               # what the link moves: 4 bytes a point
        y = dev.ntt(a).numpy()
        assert y.dtype == np.uint32 and np.array_equal(y, want)
        cols = dev.ntt(np.ascontiguousarray(x.T), axis=0).numpy()  # columns: a strided view, uint32
        assert np.array_equal(cols, want.T)
        lde = dev.lde(x, 2, 7).numpy()
        coeffs = ntt_model.transform(x.astype(np.uint64), inverse=True, field=field)
        padded = np.concatenate([coeffs, np.zeros_like(coeffs)], axis=1)
        assert np.array_equal(lde, ntt_model.transform(padded, coset=7, field=field))
    # a staged backend (the model) and the one-shot call take the uint32 rows too
    assert np.array_equal(nantucket.ntt(x, field="babybear"), want)
    with nantucket.open("model", field="babybear") as dev:
        assert np.array_equal(dev.ntt(x).numpy(), want)
