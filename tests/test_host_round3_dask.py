"""Several hosts, what a hostile probe found: a worker that leaves after its part finished but before
the part's value is fetched (the fetch waited forever), a freed ClusterArray given to a later call, a
``wait=False`` call whose caller writes into its array after submitting it. On a LocalCluster of two
worker processes, model backend, results against the golden model."""

import os
import time

import numpy as np
import pytest

import nantucket
from nantucket.hw.model import ntt as ntt_model

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=50)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, nantucket.P, shape, dtype=np.uint64)


def test_a_freed_cluster_array_is_refused_by_name(client):
    """(And numpy(out=...) of a ClusterArray writes into the caller's array before it is freed.)"""
    x = rand((2, 16), 1)
    with nantucket.open("model", cluster=client) as dev:
        a = dev.asarray(x)
        out = np.zeros_like(x)
        assert a.numpy(out=out) is out and np.array_equal(out, x)
        with pytest.raises(ValueError, match=r"^out: expected shape \(2, 16\), got \(16, 2\)"):
            a.numpy(out=out.T.copy())
        dev.free(a)
        for call in (a.numpy, lambda: dev.ntt(a), lambda: dev.lde(a, 2, 7), lambda: dev.free(a)):
            with pytest.raises(ValueError, match=r"^(a|values): the array was freed \(ClusterDevice.free\)"):
                call()


def test_a_wait_false_call_sends_the_points_as_submitted(client):
    """The caller writes into its array right after a wait=False call returned, while the call waits
    behind an earlier one: the workers get what was checked."""
    x = rand((4, 64), 2)
    want = ntt_model.transform(x)
    with nantucket.open("model", cluster=client) as dev:
        first = dev.lde(rand((2, 1 << 14), 3), 8, 7, wait=False)
        f = dev.ntt(x, wait=False)
        x[:] = np.uint64(2**64 - 1)
        assert not first.done(), "the call ran before the caller wrote: the test proves nothing"
        assert np.array_equal(f.result().numpy(), want)


def test_a_worker_that_leaves_before_its_finished_part_is_fetched_is_named(client):
    """A part that finished on a worker which then left, fetched afterwards (the value lived only there):
    WorkerLost naming the worker, within seconds, not a wait forever."""
    from nantucket.host.api import cluster as CL
    with nantucket.open("model", cluster=client) as dev:
        a = dev.asarray(rand((2, 16), 4))
        w, key, _ = a._parts[0]
        task = CL._Task(CL._w_numpy, (dev._spec, key), w, False)
        dev._submit(task)
        distributed.wait([task.future], timeout=30)
        assert task.future.status == "finished"
        client.run(os._exit, 1, workers=[w], on_error="ignore")
        deadline = time.monotonic() + 30
        while w in dev.workers() and time.monotonic() < deadline:
            time.sleep(0.1)
        t0 = time.monotonic()
        with pytest.raises(CL.WorkerLost, match=f"^worker {w} left the cluster holding part of the array") as e:
            dev._fetch([task])
        assert e.value.worker == w and time.monotonic() - t0 < 20
