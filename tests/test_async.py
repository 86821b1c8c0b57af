"""Asynchronous device calls (wait=False): futures, submission order, the bounded queue, errors, threads,
and the overlap of link and kernel on the stand-in card's timing model."""

import threading

import numpy as np
import pytest

import nantucket
from nantucket.hw.model.params import BuildParams
from nantucket.host.api.futures import DeviceFuture
from nantucket.sim.fake_pyxrt import FakePyxrt, LinkTiming, write_xclbin

SMALL = BuildParams(lanes=4, log_core=3, channels=4)            # native 2^4 .. 2^6


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, nantucket.P, shape, dtype=np.uint64)


def open_xrt(tmp_path, params=SMALL, **knobs):
    fake = FakePyxrt(**knobs)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return fake, nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0,
                                progress=False)


@pytest.mark.parametrize("backend", ["model", "xrt"])
def test_futures_give_what_the_blocking_calls_give_in_submission_order(backend, tmp_path):
    x, v = rand((3, 64), 1), rand(16, 2)
    if backend == "model":
        dev = nantucket.open("model")
    else:
        _, dev = open_xrt(tmp_path)
    with dev:
        a = dev.asarray(x, wait=False)
        assert isinstance(a, DeviceFuture)
        before = dev.numpy(a, wait=False)                  # submitted before the transform: x itself
        f = dev.ntt(a, coset=7, order="nr", wait=False)
        after = dev.numpy(a, wait=False)
        back = dev.intt(a, coset=7, order="rn", wait=False)
        again = a.result().numpy(wait=False)
        ext = dev.lde(v, 4, 3, wait=False)
        dev.synchronize()
        assert all(g.done() for g in (a, before, f, after, back, again, ext))
        assert np.array_equal(before.result(), x)
        assert np.array_equal(after.result(), nantucket.ntt(x, coset=7, order="nr"))
        assert np.array_equal(again.result(), x)
        assert f.result() is a.result() and f.exception() is None
        with nantucket.open("model") as ref:
            assert np.array_equal(ext.result().numpy(), ref.lde(v, 4, 3).numpy())
        # a blocking call after asynchronous ones runs after them
        c = dev.ntt(x[0], wait=False)
        assert np.array_equal(dev.numpy(c), nantucket.ntt(x[0]))


def test_the_queue_is_bounded_and_a_full_queue_blocks_the_submitter():
    release = threading.Event()
    with nantucket.open("model", max_pending=2) as dev:
        transform = dev._transform

        def slow(*args):
            release.wait(10)
            return transform(*args)
        dev._transform = slow
        x = rand((3, 16), 3)
        held = [dev.ntt(x[0], wait=False), dev.ntt(x[1], wait=False)]
        third = []
        t = threading.Thread(target=lambda: third.append(dev.ntt(x[2], wait=False)))
        t.start()
        t.join(0.3)
        assert t.is_alive() and not third             # two pending: the third submission waits
        release.set()
        t.join(5)
        assert not t.is_alive()
        for row, fut in zip(x, held + third):
            assert np.array_equal(fut.result().numpy(), nantucket.ntt(row))


def test_a_failing_run_reaches_its_future_and_the_calls_that_need_its_array(tmp_path):
    fake, dev = open_xrt(tmp_path)
    with dev:
        fake.set_fault("axi-read", 1)
        f = dev.ntt(rand(64, 4), wait=False)
        g = dev.numpy(f, wait=False)
        with pytest.raises(nantucket.KernelAxiError, match="HBM channel 1"):
            f.result()
        with pytest.raises(nantucket.KernelAxiError):
            g.result()                                    # the array it reads never got its contents
        fake.set_fault(None)
        x = rand(64, 5)
        assert np.array_equal(dev.ntt(x).numpy(), nantucket.ntt(x))


def test_bad_arguments_raise_at_submission_and_closed_devices_refuse():
    with nantucket.open("model") as dev, nantucket.open("model") as other:
        with pytest.raises(TypeError, match="^wait: expected True or False"):
            dev.ntt(rand(8, 1), wait="no")
        with pytest.raises(TypeError, match="unknown keyword 'wiat'"):
            dev.ntt(rand(8, 1), wiat=False)
        with pytest.raises(ValueError, match="^coset: "):
            dev.ntt(rand(8, 1), coset=0, wait=False)
        f = other.asarray(rand(8, 1), wait=False)
        with pytest.raises(ValueError, match="lives on another device"):
            dev.ntt(f, wait=False)
        with pytest.raises(TypeError, match="a future of numpy is not an array"):
            dev.ntt(dev.numpy(dev.asarray(rand(8, 1)), wait=False), wait=False)
    with pytest.raises(RuntimeError, match="is closed"):
        dev.ntt(rand(8, 1), wait=False)


def test_threads_sharing_a_device_each_get_their_own_results():
    x = rand((8, 256), 6)
    out, errors = [None] * 8, []
    with nantucket.open("model", max_pending=3) as dev:
        def work(i):
            try:
                f = dev.ntt(x[i], wait=(i % 2 == 0))
                a = f.result() if isinstance(f, DeviceFuture) else f
                out[i] = dev.numpy(a)
            except BaseException as e:
                errors.append(e)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert not errors
    assert all(np.array_equal(out[i], nantucket.ntt(x[i])) for i in range(8))


def _overlaps(log) -> int:
    """Pairs of a transfer to the card and one from it whose modelled intervals intersect."""
    ups = [(s, e) for _, to, s, e, *_ in log if to]
    downs = [(s, e) for _, to, s, e, *_ in log if not to]
    return sum(1 for s1, e1 in ups for s2, e2 in downs if s1 < e2 and s2 < e1)


def test_the_pipeline_overlaps_link_and_kernel_on_the_timing_model(tmp_path):
    """8 columns of 2^6 points on the stand-in with its timing model slowed 200000x (each channel's sync
    then takes milliseconds, which the model sleeps whole): one call after the other, no transfer to the
    card ever runs while one from the card does (the stand-in's link log, modelled intervals); submitted
    with wait=False, the pipeline moves the next column in while an earlier one comes back. Judged on
    the modelled timeline, not on wall-clock ratios."""
    fake, dev = open_xrt(tmp_path, timing=LinkTiming(scale=200000))
    x = rand((8, 64), 7)
    with dev:
        dev.ntt(x[0]).numpy()                           # tables built, buffers warmed
        serial_start = len(fake.link_log)
        serial = [dev.ntt(row).numpy() for row in x]
        serial_log = list(fake.link_log)[serial_start:]
        piped_start = len(fake.link_log)
        futs = [dev.numpy(dev.ntt(row, wait=False), wait=False) for row in x]
        piped = [f.result() for f in futs]
        piped_log = list(fake.link_log)[piped_start:]
    ref = nantucket.ntt(x)
    assert np.array_equal(np.array(serial), ref) and np.array_equal(np.array(piped), ref)
    assert serial_log and piped_log
    assert _overlaps(serial_log) == 0
    assert _overlaps(piped_log) > 0


def test_one_run_of_several_kernel_calls_overlaps_its_transfers_with_the_kernel(tmp_path):
    """XrtBackend.run of a batch the kernel takes in several calls (16 rows of 2^4 points, 4 a call on
    this build): the next call's points go to the card and the previous call's come back while the kernel
    runs, on three buffer sets; the stand-in's modelled link log shows transfers to and from the card at
    the same time, and the result equals the model's in every order, forward and inverse coset."""
    from nantucket.host.xrt import XrtBackend
    fake = FakePyxrt(timing=LinkTiming(scale=200000))
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    card = XrtBackend(SMALL, xclbin, pyxrt_module=fake, timeout_s=5.0, progress=False)
    try:
        x = rand((16, 16), 11)
        assert card.batch_limit(4) < 16                  # several calls
        start = len(fake.link_log)
        y = card.run(x, coset=7, order="nr")
        log = list(fake.link_log)[start:]
        assert np.array_equal(y, nantucket.ntt(x, coset=7, order="nr"))
        assert len(card.kernel_runs) == 16 // card.batch_limit(4)
        assert _overlaps(log) > 0
        assert np.array_equal(card.run(y, inverse=True, coset=7, order="rn"), x)
        assert np.array_equal(card.run(x[:3]), nantucket.ntt(x[:3]))        # one call again, set 0
    finally:
        card.close()
