"""Several hosts: open(backend, cluster=...) on a Dask LocalCluster of two worker processes (one cluster
for the module: worker processes are slow to start)."""

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


def test_a_batch_splits_over_the_workers_each_opening_its_device_once(client):
    x, v = rand((5, 512), 1), rand((3, 64), 2)
    with nantucket.open("model", cluster=client) as dev, nantucket.open("model") as ref:
        a = dev.asarray(x)
        assert sorted(set(a.workers)) == dev.workers() and len(dev.workers()) == 2
        dev.ntt(a, coset=7, order="nr")
        assert np.array_equal(a.numpy(), nantucket.ntt(x, coset=7, order="nr"))
        dev.intt(a, coset=7, order="rn")
        assert np.array_equal(a.numpy(), x)
        assert np.array_equal(dev.lde(v, 4, 3).numpy(), ref.lde(v, 4, 3).numpy())
        futs = [dev.ntt(row, wait=False) for row in x]          # single rows: to the workers in turn
        assert [f.result().numpy().tolist() for f in futs] == nantucket.ntt(x).tolist()
        assert set(dev.opened().values()) == {1}                  # once per worker, not per task


def test_lde_order_and_coefficients_over_the_workers(client):
    """lde's order and return_coeffs across the workers: the evaluations as one device gives them, the
    coefficients (the inverse of the values in their order) joined back in order, from host rows, from
    columns (axis=0) and from a ClusterArray; the ClusterArray is a host.api.split.SplitArray."""
    from nantucket.host.api.split import SplitArray
    v = rand((5, 64), 4)
    coeffs = nantucket.intt(v, order="rn")
    with nantucket.open("model", cluster=client) as dev, nantucket.open("model") as ref:
        want = ref.lde(v, 4, 3, order="rr").numpy()
        a, c = dev.lde(v, 4, 3, order="rr", return_coeffs=True)
        assert len(set(a.workers)) == 2 and np.array_equal(a.numpy(), want) and np.array_equal(c, coeffs)
        a, c = dev.lde(v.T, 4, 3, order="rr", return_coeffs=True, axis=0, wait=False).result()
        assert np.array_equal(a.numpy(), want.T) and np.array_equal(c, coeffs.T)
        held = dev.asarray(v)
        a, c = dev.lde(held, 4, 3, order="rr", return_coeffs=True)
        assert np.array_equal(a.numpy(), want) and np.array_equal(c, coeffs)
        assert np.array_equal(dev.lde(held, 4, 3, order="nr").numpy(), ref.lde(v, 4, 3, order="nr").numpy())
        with pytest.raises(TypeError, match="^return_coeffs: expected True or False"):
            dev.lde(v, 4, 3, return_coeffs=1)
        assert isinstance(a, SplitArray) and repr(a).startswith("ClusterArray(shape=(5, 256), dtype=uint64, workers=[")
        with pytest.raises(TypeError, match="^a ClusterArray lives on the cluster's workers"):
            np.asarray(a)
        with pytest.raises(TypeError, match="^ClusterArray.numpy: unknown keyword 'copy'"):
            a.numpy(copy=False)


def test_cluster_arguments_are_checked(client):
    with pytest.raises(TypeError, match="^cluster: expected a dask.distributed Client or a scheduler address"):
        nantucket.open("model", cluster=3)
    with pytest.raises(TypeError, match="unknown keyword 'refresh'"):
        nantucket.open("model", cluster=client, refresh=False)
    with pytest.raises(ValueError, match="^devices: expected a count of cards >= 1, got 0"):
        nantucket.open("model", cluster=client, devices=0)


# last: the cluster's nanny restarts the worker, which takes a while
def test_a_lost_worker_is_named_and_host_data_goes_to_another(client):
    x = rand((4, 256), 3)
    with nantucket.open("model", cluster=client) as dev:
        a = dev.asarray(x)
        gone = a.workers[0]
        client.run(os._exit, 1, workers=[gone], on_error="ignore")
        deadline = time.monotonic() + 30
        while gone in dev.workers() and time.monotonic() < deadline:
            time.sleep(0.1)
        with pytest.raises(nantucket.DeviceError, match=f"^worker {gone} left the cluster holding part of the array"):
            a.numpy()
        # the rows are still on the host: the call goes to the workers there are
        assert np.array_equal(dev.ntt(x).numpy(), nantucket.ntt(x))


# What a hostile probe found: a worker that leaves after its part finished but before the part's value is
# fetched (the fetch waited forever), a freed ClusterArray given to a later call, a wait=False call whose
# caller writes into its array after submitting it.

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
        w, key, _ = a.parts[0]
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
