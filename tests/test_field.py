"""Field operations against Python big-int arithmetic, at the edges and on random values."""

import itertools
import random

import numpy as np
import pytest

from nantucket.hw.model import field as F

P = F.P
EDGES = [0, 1, 2, P - 2, P - 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63, 2**64 - 2**32]
# Inputs a vector op may see that are not canonical (values in [p, 2^64)).
NONCANONICAL = [P, P + 1, 2**64 - 2, 2**64 - 1]


def u64(values):
    return np.array(values, dtype=np.uint64)


def test_constants():
    assert P == 0xFFFF_FFFF_0000_0001
    assert pow(2, 96, P) == P - 1            # 2^96 = -1
    assert pow(2, 64, P) == 2**32 - 1        # 2^64 = 2^32 - 1
    assert F.root_of_unity(8) == P - 2**24   # the 8th root: 7^((p-1)/8) = -2^24
    # 7 generates the multiplicative group: 7^((p-1)/q) != 1 for every prime q | p - 1.
    for q in (2, 3, 5, 17, 257, 65537):
        assert (P - 1) % q == 0 and pow(7, (P - 1) // q, P) != 1


@pytest.mark.parametrize("log_n", range(0, 33))
def test_root_of_unity_order(log_n):
    w = F.root_of_unity(1 << log_n)
    assert pow(w, 1 << log_n, P) == 1
    if log_n:
        assert pow(w, 1 << (log_n - 1), P) == P - 1


@pytest.mark.parametrize("bad", [0, 3, 12, 2**33])
def test_root_of_unity_rejects(bad):
    with pytest.raises(ValueError, match="n"):
        F.root_of_unity(bad)


def test_scalar_ops_edges():
    for a, b in itertools.product(EDGES, repeat=2):
        assert F.add(a, b) == (a + b) % P
        assert F.sub(a, b) == (a - b) % P
        assert F.mul(a, b) == (a * b) % P
    for a in EDGES[1:]:
        if a % P:
            assert F.mul(a, F.inv(a)) == 1
            assert F.pow_(a, -3) == pow(F.inv(a), 3, P)
    with pytest.raises(ZeroDivisionError):
        F.inv(0)
    with pytest.raises(ZeroDivisionError):
        F.inv(P)


def test_vector_ops_edges():
    pairs = list(itertools.product(EDGES, repeat=2))
    a = u64([x for x, _ in pairs])
    b = u64([y for _, y in pairs])
    assert F.vadd(a, b).tolist() == [(x + y) % P for x, y in pairs]
    assert F.vsub(a, b).tolist() == [(x - y) % P for x, y in pairs]
    assert F.vmul(a, b).tolist() == [(x * y) % P for x, y in pairs]
    assert F.vneg(u64(EDGES)).tolist() == [(-x) % P for x in EDGES]


def test_vector_mul_noncanonical_inputs():
    vals = EDGES + NONCANONICAL
    pairs = list(itertools.product(vals, repeat=2))
    a = u64([x for x, _ in pairs])
    b = u64([y for _, y in pairs])
    assert F.vmul(a, b).tolist() == [(x * y) % P for x, y in pairs]
    assert F.vcanon(u64(vals)).tolist() == [x % P for x in vals]


def test_vector_ops_random():
    rng = random.Random(7)
    xs = [rng.randrange(P) for _ in range(20000)]
    ys = [rng.randrange(2**64) for _ in range(20000)]
    a, b = u64(xs), u64(ys)
    assert F.vmul(a, b).tolist() == [(x * y) % P for x, y in zip(xs, ys)]
    yc = [y % P for y in ys]
    bc = u64(yc)
    assert F.vadd(a, bc).tolist() == [(x + y) % P for x, y in zip(xs, yc)]
    assert F.vsub(a, bc).tolist() == [(x - y) % P for x, y in zip(xs, yc)]


def test_reduce128_extremes():
    for hi, lo in [(0, 0), (2**64 - 1, 2**64 - 1), (2**64 - 1, 0), (0, 2**64 - 1), (2**32, 1), (2**63, 5)]:
        assert F.reduce128(u64([hi]), u64([lo])).tolist() == [(hi * 2**64 + lo) % P]


def test_vector_scalar_shapes():
    assert int(F.vmul(np.uint64(3), np.uint64(P - 1))) == (3 * (P - 1)) % P
    assert F.vmul(u64([1, 2, 3]), np.uint64(5)).tolist() == [5, 10, 15]


def test_powers_and_vpow():
    w = F.root_of_unity(1 << 10)
    assert F.powers(w, 37, start=5).tolist() == [5 * pow(w, i, P) % P for i in range(37)]
    assert F.powers(w, 0).size == 0
    e = [0, 1, 2, 1023, 2**40 + 3]
    assert F.vpow(w, np.array(e, dtype=np.uint64)).tolist() == [pow(w, x, P) for x in e]


def test_as_u64_rejects_other_dtypes():
    with pytest.raises(TypeError, match="uint64"):
        F.as_u64(np.zeros(3, dtype=np.int64))
