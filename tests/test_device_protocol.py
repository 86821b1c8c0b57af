"""One device protocol (host/api/protocol.py): ``Device``, ``MultiDevice`` and ``ClusterDevice`` inherit
``DeviceProtocol``, which declares each public operation once.

Held: the three fronts' public methods are the protocol's (names, signatures, the very function objects: no
front re-declares one) plus only the extras listed here; an unknown keyword names the front and the valid
keywords; the commitment calls (host/api/commit_device.py's CommitCalls) are on every front; ``free(a)``
means the same on every front (the memory given back after the calls before it, every later use a
ValueError naming the front's free); a front that cannot serve an operation raises NotServed saying why,
and a front missing one cannot be made.
"""

import inspect

import numpy as np
import pytest

import nantucket
from nantucket.host.api.cluster import ClusterDevice
from nantucket.host.api.device import BackendDevice, Device, ModelDevice
from nantucket.host.api.multi import MultiDevice
from nantucket.host.api.protocol import OPERATIONS, DeviceProtocol, NotServed
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

FRONTS = (Device, MultiDevice, ClusterDevice)
#: A front's public methods beyond the protocol's, and why.
EXTRAS = {Device: set(), MultiDevice: set(),
          ClusterDevice: {"workers", "opened"}}       # the cluster's own: its workers, and how often each opened
SMALL = BuildParams(lanes=4, log_core=3, channels=4)


def public_methods(cls) -> dict:
    return {n: getattr(cls, n) for n in dir(cls)
            if not n.startswith("_") and callable(getattr(cls, n))
            and not isinstance(inspect.getattr_static(cls, n), (property, type))}


def rand(shape, seed=0):
    return np.random.default_rng(seed).integers(0, F.P, size=shape, dtype=np.uint64)


@pytest.mark.parametrize("front", FRONTS + (ModelDevice, BackendDevice), ids=lambda c: c.__name__)
def test_every_front_has_the_protocols_methods_and_signatures_and_only_those(front):
    assert issubclass(front, DeviceProtocol)
    protocol = public_methods(DeviceProtocol)
    assert set(OPERATIONS) <= set(protocol)
    mine = public_methods(front)
    assert set(mine) == set(protocol) | EXTRAS.get(front, set()), set(mine) ^ set(protocol)
    for name, method in protocol.items():
        assert inspect.signature(mine[name]) == inspect.signature(method), name
        assert mine[name] is method, f"{front.__name__}.{name} re-declares the protocol's {name}"


def test_the_protocols_operations_take_the_keywords_of_one_declaration():
    sig = {n: inspect.signature(getattr(DeviceProtocol, n)) for n in OPERATIONS}
    for name in ("asarray", "ntt", "intt", "lde", "numpy", "rows", "commit", "lde_commit"):
        assert sig[name].parameters["wait"].default is True, name
    assert list(sig["ntt"].parameters) == ["self", "a", "inverse", "coset", "order", "axis", "ext", "wait"]
    assert list(sig["free"].parameters) == ["self", "a"]


class _StubClient:
    """Enough of a Dask client for a ClusterDevice to be made (no workers: nothing is ever sent)."""

    scheduler = type("S", (), {"address": "tcp://nowhere"})()

    def scheduler_info(self, n_workers=-1):
        return {"workers": {}}


def fronts():
    """One device of each front: the model, two model cards, a cluster with no workers (argument
    checks only)."""
    cluster = ClusterDevice(_StubClient(), False, None, "model", F.GOLDILOCKS, None, 4, {})
    return [nantucket.open("model"), nantucket.open("model", devices=2), cluster]


def test_an_unknown_keyword_names_the_front_and_the_valid_ones():
    for dev in fronts():
        for call, name in ((lambda: dev.ntt([1, 2], invers=True), "ntt"), (lambda: dev.intt([1, 2], foo=1), "intt"),
                           (lambda: dev.free(None, wait=False), "free"), (lambda: dev.synchronize(now=1), "synchronize"),
                           (lambda: dev.commit([], scheme="plonky3-goldilocks", cap=1), "commit")):
            with pytest.raises(TypeError, match=rf"^{dev.front}\.{name}: unknown keyword"):
                call()
        with pytest.raises(TypeError, match="did you mean 'inverse'"):
            dev.ntt([1, 2], invers=True)
        with pytest.raises(TypeError, match="^wait: expected True or False"):
            dev.asarray([1, 2], wait=1)
        if not isinstance(dev, ClusterDevice):
            dev.close()


@pytest.mark.parametrize("devices", [None, 2], ids=["Device", "MultiDevice"])
def test_free_gives_the_memory_back_after_the_calls_before_it_and_refuses_every_later_use(devices):
    x = rand((4, 32), 1)
    with nantucket.open("model", devices=devices) as dev:
        a = dev.asarray(x)
        pending = dev.ntt(a, coset=7, wait=False)
        dev.free(a)                                    # after the pending ntt, which completes
        assert pending.result() is a and a.freed
        for call in (lambda: dev.numpy(a), lambda: dev.ntt(a), lambda: dev.lde(a, 2, 7), lambda: dev.rows(a, [0]),
                     lambda: dev.free(a), lambda: dev.asarray(a)):
            with pytest.raises(ValueError, match=rf"^(a|x|values): the array was freed \({dev.front}\.free\)"):
                call()
        with pytest.raises(TypeError, match="^a: expected a"):
            dev.free(x)
        b = dev.asarray(x)                              # the device goes on
        assert np.array_equal(dev.ntt(b).numpy(), ntt_model.transform(x))


def test_free_on_a_card_gives_the_arrays_buffers_back_at_once(tmp_path):
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    with nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0, progress=False) as dev:
        pool = dev.backend.buffer_pool
        a = dev.asarray(rand((2, 64), 2))
        assert a.resident
        idle = pool.idle_bytes
        dev.free(a)
        assert pool.idle_bytes > idle              # the set went back to the pool, not at garbage collection
        with pytest.raises(ValueError, match=r"^a: the array was freed \(Device\.free\)"):
            a.numpy()


def test_the_commitment_calls_are_on_every_front():
    """CommitCalls, written against the protocol, serves one card and several cards alike."""
    x = rand((8, 4), 3)
    got = []
    for dev in fronts()[:2]:
        with dev:
            got.append(dev.commit(dev.asarray(x, axis=0), scheme="plonky3-goldilocks").root)
    assert np.array_equal(got[0], got[1])
    assert np.array_equal(got[0], nantucket.commit(x, "plonky3-goldilocks").root)


class _Partial(DeviceProtocol):
    """A front that serves no rows: its hook says why."""

    front = "PartialDevice"
    name, closed = "partial", False

    def _serve_rows(self, a, indices, wait):
        raise self.not_served("rows", "its arrays never leave the host in rows")

    _serve_asarray = _serve_ntt = _serve_lde = _serve_numpy = _serve_free = lambda self, *args: None
    _serve_synchronize = _serve_close = lambda self: None


def test_an_operation_a_front_cannot_serve_is_a_named_error_saying_why():
    with pytest.raises(NotServed, match=r"^PartialDevice\.rows: not served on 'partial': its arrays never leave"):
        _Partial().rows(None, [0])
    assert issubclass(NotServed, NotImplementedError)


def test_a_front_missing_an_operation_cannot_be_made():
    class Missing(DeviceProtocol):
        front = "Missing"

        def _serve_asarray(self, x, axis, ext, wait):
            return x
    with pytest.raises(TypeError, match="abstract"):
        Missing()


# -- the cluster front (a Dask cluster of two in-process workers) -------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                       silence_logs=50)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_the_cluster_serves_rows_free_and_the_commitment_calls(client):
    x = rand((5, 16), 4)
    with nantucket.open("model", cluster=client) as dev:
        a = dev.asarray(x)
        assert len(set(a.workers)) == 2
        wanted = [4, 0, -1, 2, 2]
        assert np.array_equal(dev.rows(a, wanted), x[wanted])
        assert np.array_equal(dev.rows(a, [1, 3], wait=False).result(), x[[1, 3]])
        root = dev.commit(dev.asarray(x.T.copy(), axis=0), scheme="plonky3-goldilocks").root
        assert np.array_equal(root, nantucket.commit(x.T.copy(), "plonky3-goldilocks").root)
        dev.ntt(a, wait=False)
        dev.free(a)                                     # after the ntt
        with pytest.raises(ValueError, match=r"^a: the array was freed \(ClusterDevice\.free\)"):
            dev.rows(a, [0])
