"""Commitments on a device (host/api/commit_device.py): ``dev.commit`` over resident arrays and
``dev.lde_commit`` on the model, several model cards, the stand-in card (xrt over sim.fake_pyxrt) and the
simulated card (the babybear and goldilocks builds test_api_shapes.py and test_api_lde.py compile).

Every root is checked against an independent computation: the golden model's NTTs (hw.model.ntt: inverse,
zero-extension, coset forward), the rows reordered by index reversal here, then hw.model.commit; a Plonky3
root also by hand from the permutation (leaf = the first 8 of P(row | 0), node = the first 8 of
P(left | right)), the known-answer style of tests/test_commit_model.py. The mixin is used through a
subclass made here (or the device itself once its class has it), so the tests hold before and after the
device protocol inherits CommitCalls.
"""

import numpy as np
import pytest

import nantucket
from nantucket.host.api import commit_device as CD
from nantucket.host.api.commit_device import CommitCalls, device_commit, device_lde_commit
from nantucket.host.api.futures import DeviceFuture
from nantucket.host.memory import MemoryTooSmall
from nantucket.hw.model import commit as M
from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.hash import permutation
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

SCHEME_FIELDS = {name: s.field for name, s in M.SCHEMES.items()}


def rand(shape, field, seed):
    f = F.get(field)
    return np.random.default_rng(seed).integers(0, f.p, shape, dtype=np.uint64).astype(f.dtype)


def rev(i: int, bits: int) -> int:
    return int(format(i, f"0{bits}b")[::-1], 2) if bits else 0


def ref_lde_rows(trace: np.ndarray, blowup: int, shift: int, field: str, bit_reversed: bool) -> np.ndarray:
    """The (N * blowup, W...) coset LDE of every column of ``trace`` (axis 0; any trailing axes are more
    columns) by the golden model's transforms, its rows bit-reversed here when the scheme commits them so."""
    f = F.get(field)
    n = trace.shape[0]
    cols = trace.reshape(n, -1).T.astype(np.uint64)
    coeffs = ntt_model.transform(cols, inverse=True, field=f)
    evals = ntt_model.transform(coeffs, coset=shift, size=n * blowup, field=f)      # zero-extended
    t = n * blowup
    if bit_reversed:
        bits = t.bit_length() - 1
        evals = evals[:, [rev(i, bits) for i in range(t)]]
    return evals.T.reshape((t,) + trace.shape[1:]).astype(f.dtype)


def with_calls(dev):
    """``dev`` with CommitCalls: itself once its class has them, else a subclass over the same backend."""
    if isinstance(dev, CommitCalls):
        return dev
    kind = type(f"Committing{type(dev).__name__}", (CommitCalls, type(dev)), {})
    if hasattr(dev, "cards"):
        return kind(dev.name, dev.cards, dev.names)
    out = kind(dev.name, dev.backend)
    out.max_pending = dev.max_pending
    return out


def open_fake_xrt(tmp_path, params, **options):
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    return nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=FakePyxrt(), timeout_s=5.0,
                          progress=False, field=params.field, **options)


# -- the model -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(M.SCHEMES))
def test_model_lde_commit_root_is_the_reference_lde_committed(name):
    s = M.SCHEMES[name]
    trace = rand((8, 3), s.field, seed=1)
    want_rows = ref_lde_rows(trace, 2, s.lde_shift, s.field, s.bit_reversed)
    with nantucket.open("model", field=s.field) as dev0:
        dev = with_calls(dev0)
        c, lde = dev.lde_commit(dev.asarray(trace, axis=0), 2, scheme=name)
        assert np.array_equal(lde.numpy(), want_rows)
        assert np.array_equal(c.cap, M.commit(want_rows, name).cap)
        assert c.report["host_work"] == "tree on the host" and c.report["transfers_bytes"] == {
            "to-device": 0, "from-device": 0}
        # the shift defaults to the scheme's; given, it is used
        c7, _ = dev.lde_commit(trace, 2, 5, scheme=name, axis=0)
        assert np.array_equal(c7.cap, M.commit(ref_lde_rows(trace, 2, 5, s.field, s.bit_reversed), name).cap)


def test_plonky3_lde_commit_root_by_hand_from_the_permutation():
    """4 leaves (a 2 x 3 trace at blowup 2): the root from Poseidon2-16 calls written out here."""
    s = M.SCHEMES["plonky3-babybear-16"]
    perm = permutation("poseidon2-babybear-16")
    trace = rand((2, 3), "babybear", seed=5)
    rows = ref_lde_rows(trace, 2, s.lde_shift, "babybear", True).astype(np.uint64)

    def p(state):
        return np.asarray(perm.permute(np.asarray(state, dtype=np.uint64).reshape(1, 16)))[0, :8]
    leaves = [p(list(r) + [0] * 13) for r in rows]
    mid = [p(list(leaves[0]) + list(leaves[1])), p(list(leaves[2]) + list(leaves[3]))]
    root = p(list(mid[0]) + list(mid[1]))
    with nantucket.open("model", field="babybear") as dev:
        c, _ = device_lde_commit(dev, trace, 2, scheme=s.name, axis=0)
    assert c.root.tolist() == [int(v) for v in root]


def test_leaves_are_every_polynomial_at_an_index_and_limbs_in_limb_order():
    f = "babybear"
    rows = rand((3, 8), f, seed=2)              # 3 polynomials as rows (the default axis)
    ext = rand((8, 2, 4), f, seed=3)            # 2 columns of degree-4 extension elements
    with nantucket.open("model", field=f) as dev:
        c = device_commit(dev, dev.asarray(rows), scheme="plonky3-babybear-16")
        assert np.array_equal(c.root, M.commit(rows.T, "plonky3-babybear-16").root)
        c = device_commit(dev, dev.asarray(ext, axis=0, ext=4), scheme="plonky3-babybear-16")
        assert np.array_equal(c.root, M.commit(ext.reshape(8, 8), "plonky3-babybear-16").root)
        # an extension trace's LDE is each limb's: the reference LDE of the 8 limb columns
        c, lde = device_lde_commit(dev, ext, 4, scheme="plonky3-babybear-16", axis=0, ext=4)
        want = ref_lde_rows(ext, 4, 31, f, True)
        assert lde.shape == (32, 2, 4) and np.array_equal(lde.numpy(), want)
        assert np.array_equal(c.root, M.commit(want.reshape(32, 8), "plonky3-babybear-16").root)


def test_mixed_heights_openings_round_trip_and_tampering_is_refused():
    f = "koalabear"
    a, b = rand((16, 3), f, seed=6), rand((8, 2), f, seed=7)
    with nantucket.open("model", field=f) as dev:
        c = device_commit(dev, [dev.asarray(a, axis=0), dev.asarray(b, axis=0)], scheme="plonky3-koalabear-24",
                          cap_height=1)
        want = M.commit([a, b], "plonky3-koalabear-24", cap_height=1)
        assert np.array_equal(c.cap, want.cap) and c.dimensions == want.dimensions
        for i in (0, 5, 15):
            op = c.open(i)
            assert nantucket.verify("plonky3-koalabear-24", c.cap, c.dimensions, i, op)
            bad = op.rows[0].copy()
            bad[0] = (int(bad[0]) + 1) % F.get(f).p
            with pytest.raises(M.CapMismatch):
                nantucket.verify("plonky3-koalabear-24", c.cap, c.dimensions, i, (( bad, op.rows[1]), op.siblings))


def test_lde_commit_rows_open_from_the_device_and_wait_false_gives_a_future():
    s = M.SCHEMES["plonky2"]
    trace = rand((8, 5), s.field, seed=8)
    with nantucket.open("model", field=s.field) as dev:
        fut = device_lde_commit(dev, trace, 2, scheme="plonky2", axis=0, wait=False)
        assert isinstance(fut, DeviceFuture)
        c, lde = fut.result(timeout=60)
        c2, _ = device_lde_commit(dev, trace, 2, scheme="plonky2", axis=0)
        assert np.array_equal(c.cap, c2.cap)
        op = c.open(3)
        assert np.array_equal(lde.numpy()[3], op.rows[0])
        assert nantucket.verify("plonky2", c.cap, c.dimensions, 3, op)
        f2 = device_commit(dev, lde, scheme="plonky2", wait=False)
        assert np.array_equal(f2.result(timeout=60).cap, c.cap)


def test_the_mixin_on_a_device_names_its_keywords():
    with nantucket.open("model", field="babybear") as dev0:
        dev = with_calls(dev0)
        a = dev.asarray(rand((8, 2), "babybear", 1), axis=0)
        assert np.array_equal(dev.commit(a, scheme="plonky3-babybear-16").root,
                              M.commit(a.numpy(), "plonky3-babybear-16").root)
        with pytest.raises(TypeError, match=r"\.commit: unknown keyword 'cap' .*cap_height"):
            dev.commit(a, scheme="plonky3-babybear-16", cap=1)
        with pytest.raises(TypeError, match=r"\.lde_commit: unknown keyword 'blow'"):
            dev.lde_commit(a, 2, scheme="plonky3-babybear-16", blow=2)


def test_bad_arguments_are_refused_before_any_work(monkeypatch):
    x = rand((8, 2), "babybear", 1)
    with nantucket.open("model", field="babybear") as dev, nantucket.open("model") as other:
        a = dev.asarray(x, axis=0)
        cases = [
            (lambda: device_commit(dev, a, scheme="plonky2"), ValueError, "scheme: plonky2 commits goldilocks-plonky2"),
            (lambda: device_commit(dev, x, scheme="plonky3-babybear-16"), TypeError, "arrays: expected an array of"),
            (lambda: device_commit(dev, other.asarray(x.astype(np.uint64)), scheme="plonky3-babybear-16"),
             ValueError, "arrays: an array of another device"),
            (lambda: device_commit(dev, [], scheme="plonky3-babybear-16"), ValueError, "arrays: no arrays"),
            (lambda: device_commit(dev, a, scheme="plonky3-babybear-16", cap_height=-1), ValueError, "cap_height"),
            (lambda: device_commit(dev, a, scheme="plonky3-bb", ), ValueError, "scheme: unknown scheme"),
            (lambda: device_lde_commit(dev, a, 2, scheme="plonky3-babybear-16", order="nn"), ValueError,
             "order: plonky3-babybear-16 commits the LDE in bit-reversed row order"),
            (lambda: device_lde_commit(dev, a, 3, scheme="plonky3-babybear-16"), ValueError, "blowup"),
        ]
        for call, kind, text in cases:
            before = dict(dev.transfers)
            with pytest.raises(kind, match=text):
                call()
            assert dev.transfers == before
        with nantucket.open("model", field="goldilocks-plonky2") as gl:
            with pytest.raises(ValueError, match="winterfell-rp64 commits the goldilocks-plonky2 preset's LDE"):
                device_lde_commit(other, x.astype(np.uint64), 2, scheme="winterfell-rp64", axis=0)
            assert device_commit(other, other.asarray(x.astype(np.uint64), axis=0), scheme="plonky2").root.size == 4
            two = [other.asarray(x.astype(np.uint64), axis=0), other.asarray(x[:4].astype(np.uint64), axis=0)]
            before = dict(other.transfers)
            with pytest.raises(M.CommitmentError):          # plonky2's tree takes one height
                device_commit(other, two, scheme="plonky2")
            assert other.transfers == before
            del gl
        # the tree's layers counted against the host's memory before the LDE runs
        monkeypatch.setattr("nantucket.host.memory.available_bytes", lambda: 1 << 20)
        big = dev.asarray(rand((1 << 14, 64), "babybear", 3), axis=0)
        with pytest.raises(MemoryTooSmall, match="lde_commit: the plonky3-babybear-16 tree on the host"):
            device_lde_commit(dev, big, 4, scheme="plonky3-babybear-16")
        assert CD.tree_bytes("plonky3-babybear-16", [(1 << 24, 0)]) >= (1 << 25) * 8 * 8 - 8 * 8


@pytest.mark.parametrize("name", ["plonky3-babybear-24", "plonky3-goldilocks", "plonky2", "winterfell-rp64"])
def test_permutation_counts_are_the_calls_the_tree_makes(name, monkeypatch):
    """The report's count from the shapes, against the states the permutations were given (counted here)."""
    s = M.SCHEMES[name]
    counted = {}
    for pname in sorted(set(s.permutations)):
        perm = permutation(pname)
        inner = perm.permute

        def counting(states, _inner=inner, _name=pname, _width=perm.width):
            counted[_name] = counted.get(_name, 0) + np.asarray(states).reshape(-1, _width).shape[0]
            return _inner(states)
        monkeypatch.setattr(perm, "permute", counting)
    if s.bit_reversed and name != "plonky2":
        mats = [rand((16, 11), s.field, 1), rand((8, 3), s.field, 2), rand((2, 20), s.field, 3)]
    else:
        mats = [rand((16, 11), s.field, 1)]
    got = CD.permutation_counts(name, [m.shape for m in mats])
    M.commit(mats, name)
    assert got["by_permutation"] == counted and got["total"] == sum(counted.values())


# -- several cards, the stand-in card, the simulated card ---------------------------------------------------

def test_several_model_cards_gather_the_rows_into_one_tree():
    s = M.SCHEMES["plonky3-babybear-16"]
    trace = rand((16, 6), s.field, seed=9)
    with nantucket.open("model", field=s.field, devices=2) as dev:
        c, lde = device_lde_commit(dev, dev.asarray(trace, axis=0), 2, scheme=s.name)
        assert c.report["cards"] == 2
        both = with_calls(dev)
        fut = both.commit(both.asarray(trace, axis=0, wait=False), scheme=s.name, wait=False)
        assert np.array_equal(fut.result(timeout=60).root, M.commit(trace, s.name).root)
        assert np.array_equal(both.lde_commit(trace, 2, scheme=s.name, axis=0)[0].root, c.root)
    want = ref_lde_rows(trace, 2, s.lde_shift, s.field, True)
    assert np.array_equal(c.root, M.commit(want, s.name).root)


def test_two_stand_in_cards_gather_the_rows_and_report_the_bytes(tmp_path):
    s = M.SCHEMES["plonky3-goldilocks"]
    params = BuildParams(lanes=4, log_core=4, channels=4)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    trace = rand((16, 6), s.field, seed=14)
    with nantucket.open("xrt", params=params, xclbin=xclbin, pyxrt_module=FakePyxrt(devices=2), timeout_s=5.0,
                        progress=False, devices=[0, 1]) as dev:
        before = [dict(card.transfers) for card in dev.cards]
        c, _ = device_lde_commit(dev, trace, 4, scheme=s.name, axis=0)
        moved = [{k: card.transfers[k] - b[k] for k in b} for card, b in zip(dev.cards, before)]
    want = ref_lde_rows(trace, 4, s.lde_shift, s.field, True)
    assert np.array_equal(c.root, M.commit(want, s.name).root)
    assert all(m["from-device"] > 0 for m in moved)          # both cards held rows
    assert c.report["cards"] == 2 and c.report["transfers_bytes"] == {
        k: sum(m[k] for m in moved) for k in ("to-device", "from-device")}
    assert "2 cards" in dict(CD.report_lines(c.report))["Gathered"]


def test_a_cluster_of_model_workers_serves_the_same_calls():
    distributed = pytest.importorskip("distributed")
    s = M.SCHEMES["plonky3-babybear-16"]
    trace = rand((16, 4), s.field, seed=13)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with nantucket.open("model", field=s.field, cluster=client) as dev:
            c, lde = device_lde_commit(dev, trace, 2, scheme=s.name, axis=0)
            got = lde.numpy()
    want = ref_lde_rows(trace, 2, s.lde_shift, s.field, True)
    assert np.array_equal(got, want) and np.array_equal(c.root, M.commit(want, s.name).root)
    assert c.report["cards"] == 2 and c.report["link"] is None


@pytest.mark.parametrize("field,scheme", [("babybear", "plonky3-babybear-16"), ("goldilocks", "plonky3-goldilocks")])
def test_stand_in_card_lde_commit_reports_the_link(tmp_path, field, scheme):
    s = M.SCHEMES[scheme]
    params = BuildParams(lanes=8 if field == "babybear" else 4, log_core=4, channels=4, field=field)
    trace = rand((16, 4), field, seed=10)
    with open_fake_xrt(tmp_path, params) as dev:
        before = dict(dev.transfers)
        c, lde = device_lde_commit(dev, trace, 4, scheme=scheme, axis=0)
        moved = {k: dev.transfers[k] - before[k] for k in before}
        op_rows = lde.numpy()[[1, 7]]
    want = ref_lde_rows(trace, 4, s.lde_shift, field, True)
    assert np.array_equal(c.root, M.commit(want, scheme).root)
    assert np.array_equal(op_rows, want[[1, 7]])
    r = c.report
    assert r["transfers_bytes"] == moved and moved["to-device"] > 0 and moved["from-device"] >= want.size * 4
    assert r["where"]["tree"] == "host" and r["where"]["lde"] in ("card", "card and host") and r["link"]["name"]
    assert any(st["where"] == "card" and st["kernel_calls"] for st in r["lde_steps"])
    assert r["projected_s"]["link_in"] == pytest.approx(moved["to-device"] / (r["link"]["to_card_gbps"] * 1e9))
    assert r["projected_s"]["tree"] == pytest.approx(r["permutations"]["total"] * 1.157e-6 / 4) \
        if field == "babybear" else r["projected_s"]["tree"] is None
    if field == "goldilocks":       # 2^4 and 2^6 are native: the kernel part is the build's ideal cycles
        ideal = (params.ideal_cycles(4) + params.ideal_cycles(6)) * 4 / (params.ntt_mhz * 1e6)
        assert r["projected_s"]["kernel"] == pytest.approx(ideal) and "ideal cycles" in r["kernel_projection"]
        assert r["projected_s"]["tree"] is None and "no published rate" in dict(CD.report_lines(r))["CPU rate"]
    labels = dict(CD.report_lines(r))
    assert labels["Host work"].startswith("tree on the host") and "bytes to the card" in labels["Link"]


def test_commit_on_a_backend_through_nantucket_commit(tmp_path):
    params = BuildParams(lanes=8, log_core=4, channels=4, field="babybear")
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", params)
    x = rand((16, 3), "babybear", seed=11)
    c = nantucket.commit(x, scheme="plonky3-babybear-16", backend="xrt", params=params, xclbin=xclbin,
                         pyxrt_module=FakePyxrt(), timeout_s=5.0, progress=False)
    assert np.array_equal(c.root, M.commit(x, "plonky3-babybear-16").root)
    assert c.report["device"] == "xrt" and c.report["link"] is not None and c.report["where"] == {"tree": "host"}
    c = nantucket.commit(x, scheme="plonky3-babybear-16", blowup=2)
    assert np.array_equal(c.root, M.commit(ref_lde_rows(x, 2, 31, "babybear", True), "plonky3-babybear-16").root)
    two = nantucket.commit([x, x[:8]], scheme="plonky3-babybear-16", blowup=2)
    want = [ref_lde_rows(m, 2, 31, "babybear", True) for m in (x, x[:8])]
    assert np.array_equal(two.root, M.commit(want, "plonky3-babybear-16").root)
    assert [st["step"] for st in two.report["lde_steps"]] == ["inverse", "zero-extension", "coset forward"] * 2
    with pytest.raises(TypeError, match="commit: unknown keyword 'cap_heigth'"):
        nantucket.commit(x, scheme="plonky3-babybear-16", cap_heigth=1)


def test_sim_card_lde_commit_against_the_model():
    """The babybear build test_api_shapes.py compiles: the LDE on the simulated kernel, the tree on the host."""
    s = M.SCHEMES["plonky3-babybear-16"]
    trace = rand((16, 2), "babybear", seed=12)
    params = BuildParams(lanes=8, log_core=4, channels=4, field="babybear")
    with nantucket.open("sim", params=params, field="babybear", progress=lambda line: None) as dev:
        c, lde = device_lde_commit(dev, dev.asarray(trace, axis=0), 2, scheme=s.name)
        got = lde.numpy()
    want = ref_lde_rows(trace, 2, s.lde_shift, "babybear", True)
    assert np.array_equal(got, want) and np.array_equal(c.root, M.commit(want, s.name).root)
    assert c.report["where"]["tree"] == "host" and c.report["transfers_bytes"]["from-device"] > 0


def test_bench_commit_end_to_end_split_on_the_stand_in(capsys):
    """scripts/bench_commit.py's end-to-end part at a small size: the split's rows, the bytes the report
    counted."""
    from nantucket.tools import bench_commit
    report, wall, params = bench_commit.end_to_end(8, 4, 2)
    table = bench_commit.end_to_end_table(report, wall, params, 8, 4, 2)
    for row in ("| link in |", "| kernel (LDE) |", "| link out", "| tree on one CPU core |", "| total |"):
        assert row in table
    assert report["transfers_bytes"]["from-device"] >= (1 << 9) * 4 * 4 and report["projected_s"]["total"] > 0
    assert bench_commit.main(["--e2e-only", "--e2e-log-n", "8", "--e2e-cols", "2"]) == 0
    assert "| tree on one CPU core |" in capsys.readouterr().out


def test_sim_card_nantucket_commit_with_an_lde_and_another_preset_of_the_same_p():
    """The goldilocks build test_api_lde.py compiles (smallest_params(64)): nantucket.commit with blowup
    on the simulated kernel; a plonky2 tree (goldilocks-plonky2 values, the same p) of a device in goldilocks,
    but an LDE in another preset than the scheme's refused before any work."""
    from nantucket.host.sim_backend import smallest_params
    x = rand((16, 2), "goldilocks", seed=15)
    opts = dict(backend="sim", params=smallest_params(64), progress=lambda line: None)
    with pytest.raises(ValueError, match="field: plonky2 commits the goldilocks-plonky2 preset's LDE; a device in "
                                         "goldilocks cannot"):
        nantucket.commit(x, scheme="plonky2", blowup=2, field="goldilocks", **opts)
    c = nantucket.commit(x, scheme="plonky3-goldilocks", blowup=4, **opts)
    want = ref_lde_rows(x, 4, 7, "goldilocks", True)
    assert np.array_equal(c.root, M.commit(want, "plonky3-goldilocks").root)
    assert c.report["where"]["tree"] == "host" and c.report["transfers_bytes"]["from-device"] > 0
    c2 = nantucket.commit(x, scheme="plonky2", field="goldilocks", backend="model")     # the same p, no LDE
    assert np.array_equal(c2.cap, M.commit(x, "plonky2").cap)
