"""nantucket.commit / nantucket.verify: the library API over the model's commitment schemes.

Bit-exactness is tests/test_commit_model.py's; here: the API's shape (exports, Commitment's attributes,
openings), every tampering refused with its named error for every scheme, and bad input refused in one line
naming the argument before any hashing (house rules: ValueError/TypeError, unknown keyword TypeError,
unknown scheme ValueError with the valid names and a close-match hint).
"""

import numpy as np
import pytest

import nantucket
from nantucket.hw.model import commit as model
from nantucket.hw.model import field as F

NAMES = ["plonky3-babybear-16", "plonky3-babybear-24", "plonky3-koalabear-16", "plonky3-koalabear-24",
         "plonky3-goldilocks", "plonky2", "winterfell-rp64"]


def field_of(name):
    return F.get(nantucket.SCHEMES[name].field)


def matrices_for(name, rng):
    f = field_of(name)
    mats = [rng.integers(0, f.p, size=(8, 5), dtype=np.uint64).astype(f.dtype),
            rng.integers(0, f.p, size=(8, 11), dtype=np.uint64).astype(f.dtype)]
    if name.startswith("plonky3"):
        mats.append(rng.integers(0, f.p, size=(4, 3), dtype=np.uint64).astype(f.dtype))
    return mats


@pytest.fixture(scope="module", params=NAMES)
def committed(request):
    name = request.param
    mats = matrices_for(name, np.random.default_rng(NAMES.index(name)))
    return name, mats, nantucket.commit(mats, scheme=name)


def test_exports():
    for name in ("commit", "verify", "Commitment", "CommitmentError", "SCHEMES"):
        assert name in nantucket.__all__ and getattr(nantucket, name) is not None
    assert list(nantucket.SCHEMES) == NAMES
    assert issubclass(nantucket.CommitmentError, ValueError)
    for s in nantucket.SCHEMES.values():
        assert len(s.pin.commit) == 40 and s.pin.tag.startswith("v")


def test_commitment_attributes(committed):
    name, mats, c = committed
    f = field_of(name)
    assert isinstance(c, nantucket.Commitment)
    assert c.scheme.name == name
    assert c.dimensions == tuple((m.shape[0], m.shape[1]) for m in mats)
    digest = 8 if f.dtype == np.uint32 else 4
    assert c.root.shape == (digest,) and c.root.dtype == f.dtype and c.cap.shape == (1, digest)
    assert np.array_equal(c.root, model.commit(mats, name).root)
    assert name in repr(c)


def test_openings_verify(committed):
    name, mats, c = committed
    openings = c.open([0, 3, 7])
    for index, opening in zip([0, 3, 7], openings):
        for j, m in enumerate(mats):
            assert np.array_equal(opening.rows[j], m[index >> (3 - (m.shape[0] - 1).bit_length())])
            assert opening.rows[j].dtype == field_of(name).dtype
        assert nantucket.verify(name, c.root, c.dimensions, index, opening) is True
        assert nantucket.verify(name, c.root, [list(d) for d in c.dimensions], index, tuple(opening)) is True


def test_tampered_row_refused(committed):
    name, mats, c = committed
    f = field_of(name)
    for j in range(len(mats)):
        rows, siblings = c.open(5)
        rows = list(rows)
        rows[j] = rows[j].copy()
        rows[j][-1] = (int(rows[j][-1]) + 1) % f.p
        with pytest.raises(model.CapMismatch):
            nantucket.verify(name, c.root, c.dimensions, 5, (rows, siblings))


def test_tampered_path_refused(committed):
    name, mats, c = committed
    f = field_of(name)
    rows, siblings = c.open(2)
    for level in range(siblings.shape[0]):
        bad = siblings.copy()
        bad[level, 0] = (int(bad[level, 0]) + 1) % f.p
        with pytest.raises(model.CapMismatch):
            nantucket.verify(name, c.root, c.dimensions, 2, (rows, bad))
    with pytest.raises(model.CapMismatch):                      # two levels swapped
        nantucket.verify(name, c.root, c.dimensions, 2, (rows, siblings[[1, 0, 2]]))
    with pytest.raises(model.WrongHeight):
        nantucket.verify(name, c.root, c.dimensions, 2, (rows, siblings[:-1]))
    with pytest.raises(model.WrongHeight):
        nantucket.verify(name, c.root, c.dimensions, 2, (rows, np.concatenate([siblings, siblings[:1]])))


def test_tampered_index_or_root_refused(committed):
    name, mats, c = committed
    opening = c.open(6)
    for index in (7, 4, 2, 0):          # the sibling leaf (same path, other side) and others
        with pytest.raises(model.CapMismatch):
            nantucket.verify(name, c.root, c.dimensions, index, opening)
    with pytest.raises(model.IndexOutOfBounds):
        nantucket.verify(name, c.root, c.dimensions, 8, opening)
    root = c.root.copy()
    root[0] ^= 1
    with pytest.raises(model.CapMismatch):
        nantucket.verify(name, root, c.dimensions, 6, opening)


def test_tampered_dimensions_refused(committed):
    name, mats, c = committed
    opening = c.open(1)
    dims = [list(d) for d in c.dimensions]
    wider = [list(d) for d in dims]
    wider[0][1] += 1
    with pytest.raises(model.WrongWidth):
        nantucket.verify(name, c.root, wider, 1, opening)
    taller = [[2 * h, w] for h, w in dims]
    with pytest.raises(model.WrongHeight):
        nantucket.verify(name, c.root, taller, 1, opening)
    with pytest.raises(model.WrongBatchSize):
        nantucket.verify(name, c.root, dims[:-1], 1, opening)
    swapped = [dims[1], dims[0], *dims[2:]]
    with pytest.raises((model.WrongWidth, model.CapMismatch)):
        nantucket.verify(name, c.root, swapped, 1, (opening.rows[1:2] + opening.rows[:1] + opening.rows[2:],
                                                    opening.siblings))
    if name.startswith("plonky3"):
        odd = [list(d) for d in dims]
        odd[-1][0] = 3                                          # off the ladder of 8
        with pytest.raises(model.IncompatibleHeights):
            nantucket.verify(name, c.root, odd, 1, opening)
    else:
        mixed = [list(d) for d in dims]
        mixed[-1][0] = 4
        with pytest.raises(model.UnsupportedShape):
            nantucket.verify(name, c.root, mixed, 1, opening)


def test_plonky3_heights_bound_up_to_padding_as_the_reference():
    """verify_batch's own caveat: "Heights are only bound up to their power-of-two padding: two valid shapes
    whose padded layers coincide verify against the same cap" (7 rows claimed as 8)."""
    f = F.BABYBEAR
    m = np.random.default_rng(1).integers(0, f.p, size=(7, 3), dtype=np.uint64).astype(np.uint32)
    c = nantucket.commit(m, scheme="plonky3-babybear-16")
    assert nantucket.verify("plonky3-babybear-16", c.root, [(8, 3)], 4, c.open(4))


def test_caps():
    f = F.GOLDILOCKS_PLONKY2
    m = np.random.default_rng(2).integers(0, f.p, size=(32, 4), dtype=np.uint64)
    c = nantucket.commit(m, scheme="plonky2", cap_height=4)       # plonky2's standard configs' cap
    assert c.cap.shape == (16, 4) and c.cap.dtype == np.uint64
    with pytest.raises(nantucket.CommitmentError, match="use .cap"):
        c.root
    opening = c.open(21)
    assert opening.siblings.shape == (1, 4)
    assert nantucket.verify("plonky2", c.cap, c.dimensions, 21, opening)
    bad = c.cap.copy()
    bad[21 >> 1, 2] ^= 1
    with pytest.raises(model.CapMismatch):
        nantucket.verify("plonky2", bad, c.dimensions, 21, opening)
    with pytest.raises(model.CapMismatch):
        nantucket.verify("plonky2", c.cap, c.dimensions, 23, opening)
    with pytest.raises(model.WrongHeight):                        # a cap of 8 means one more level
        nantucket.verify("plonky2", c.cap[:8], c.dimensions, 21, opening)
    full = nantucket.commit(m, scheme="plonky2")
    assert np.array_equal(full.layers[1], c.cap) and full.root.shape == (4,)


def test_inputs_accepted():
    f = F.BABYBEAR
    rows = [[1, 2, 3], [4, 5, 6], [7, 8, f.p - 1], [0, 0, 0]]
    a = nantucket.commit(rows, scheme="plonky3-babybear-16")
    b = nantucket.commit(np.array(rows, dtype=np.uint32), scheme="plonky3-babybear-16")
    c = nantucket.commit([np.array(rows, dtype=np.int64)], scheme="plonky3-babybear-16")
    d = nantucket.commit([rows], scheme="plonky3-babybear-16")
    assert np.array_equal(a.root, b.root) and np.array_equal(a.root, c.root) and np.array_equal(a.root, d.root)
    e = nantucket.commit(np.zeros((4, 0), dtype=np.uint32), scheme="plonky3-babybear-16")   # empty rows
    assert e.root.shape == (8,)


@pytest.mark.parametrize("call, error, match", [
    (lambda: nantucket.commit(np.zeros((4, 2), np.uint32), scheme="plonky3-babybear16"), ValueError,
     r"scheme: unknown scheme .*valid: plonky3-babybear-16.*did you mean 'plonky3-babybear-16'"),
    (lambda: nantucket.commit(np.zeros((4, 2), np.uint32), scheme=3), TypeError, "scheme: expected"),
    (lambda: nantucket.commit(np.zeros((4, 2), np.uint32), scheme="plonky2", cap_heigth=1), TypeError,
     "commit: unknown keyword 'cap_heigth'.*did you mean 'cap_height'"),
    (lambda: nantucket.verify("plonky2", np.zeros(4, np.uint64), [(4, 2)], 0, None, cap=1), TypeError,
     "verify: unknown keyword 'cap'"),
    (lambda: nantucket.commit(np.full((4, 2), F.BABYBEAR.p, np.uint32), scheme="plonky3-babybear-16"),
     ValueError, "matrices: value 2013265921 .* not below"),
    (lambda: nantucket.commit(np.zeros((4, 2)), scheme="plonky3-babybear-16"), TypeError, "matrices: expected an integer"),
    (lambda: nantucket.commit(np.zeros(4, np.uint32), scheme="plonky3-babybear-16"), ValueError, r"reshape\(-1, 1\)"),
    (lambda: nantucket.commit(np.zeros((2, 2, 2), np.uint32), scheme="plonky3-babybear-16"), ValueError, "2-D"),
    (lambda: nantucket.commit([], scheme="plonky2"), ValueError, "matrices: no matrices"),
    (lambda: nantucket.commit([[1, -1]], scheme="plonky2"), ValueError, "matrices: value -1"),
    (lambda: nantucket.commit([[1, 2.5]], scheme="plonky2"), TypeError, "matrices: expected field elements"),
    (lambda: nantucket.commit(np.array([[-1]]), scheme="plonky2"), ValueError, "matrices: negative"),
    (lambda: nantucket.commit(np.zeros((4, 2), np.uint64), scheme="plonky2", cap_height=-1), ValueError,
     "cap_height: must not be negative"),
    (lambda: nantucket.commit(np.zeros((4, 2), np.uint64), scheme="plonky2").open(True), TypeError, "indices"),
    (lambda: nantucket.commit(np.zeros((4, 2), np.uint64), scheme="plonky2").open(4), ValueError, "indices: index 4"),
    (lambda: nantucket.verify("plonky2", np.zeros(3, np.uint64), [(4, 2)], 0, ([], [])), ValueError,
     "commitment_root_or_cap: expected digests of 4"),
    (lambda: nantucket.verify("plonky2", np.zeros(4, np.uint64), [(4, 2)], 0.0, ([], [])), TypeError, "index"),
    (lambda: nantucket.verify("plonky2", np.zeros(4, np.uint64), [(4, -2)], 0, ([], [])), ValueError,
     r"dimensions\[0\]"),
    (lambda: nantucket.verify("plonky2", np.zeros(4, np.uint64), [(4, 2)], 0, None), TypeError, "opening"),
])
def test_bad_input_refused_in_one_line(call, error, match):
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_bench_commit_tool(capsys):
    """scripts/bench_commit.py (make bench-commit): a table row per scheme and size; bad arguments exit 2."""
    from nantucket.tools import bench_commit
    assert bench_commit.main(["--sizes", "3-4", "--schemes", "plonky3-koalabear-16,plonky2", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "| plonky3-koalabear-16 | 2^3 |" in out and "| plonky2 | 2^4 |" in out
    assert bench_commit.permutations_per_commit("plonky3-koalabear-24", 16, 17) == 16 * 2 + 15
    assert bench_commit.permutations_per_commit("plonky2", 16, 4) == 15
    assert bench_commit.main(["--schemes", "plonky9"]) == 2
    assert "unknown scheme 'plonky9'" in capsys.readouterr().err
