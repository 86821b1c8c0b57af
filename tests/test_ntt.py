"""Transforms against the O(N^2) definition and against each other."""

import numpy as np
import pytest

from nantucket.hw.model import field as F, fourstep, ntt as N

P = F.P


def rand(n, seed):
    return np.random.default_rng(seed).integers(0, P, n, dtype=np.uint64)


@pytest.mark.parametrize("log_n", range(1, 11))
def test_forward_and_inverse_match_definition(log_n):
    x = rand(1 << log_n, log_n)
    ref = N.dft_naive(x.tolist())
    assert N.ntt(x).tolist() == ref
    assert N.ntt_radix2(x).tolist() == ref
    assert N.ntt(x, inverse=True).tolist() == N.dft_naive(x.tolist(), inverse=True)


def test_definition_small_cases_by_hand():
    # N = 2: X = (x0 + x1, x0 - x1); N = 4 uses w4 = 2^48 (w4^2 = 2^96 = -1).
    assert N.dft_naive([3, 5]) == [8, (3 - 5) % P]
    w4 = F.root_of_unity(4)
    assert w4 in (2**48, P - 2**48)
    x = [1, 2, 3, 4]
    assert N.dft_naive(x) == [sum(v * pow(w4, j * k, P) for j, v in enumerate(x)) % P for k in range(4)]


@pytest.mark.parametrize("log_n", [11, 12, 13])
def test_fast_equals_radix2(log_n):
    x = rand(1 << log_n, 100 + log_n)
    assert np.array_equal(N.ntt(x), N.ntt_radix2(x))
    assert np.array_equal(N.ntt(x, inverse=True), N.ntt_radix2(x, inverse=True))


def test_round_trip_2_16():
    x = rand(1 << 16, 5)
    assert np.array_equal(N.intt(N.ntt(x)), x)


def test_edge_vectors():
    n = 256
    # A single 1 at index j transforms to w^(j*k); all-ones to N at index 0.
    e = np.zeros(n, dtype=np.uint64)
    e[3] = 1
    w = F.root_of_unity(n)
    assert N.ntt(e).tolist() == [pow(w, 3 * k, P) for k in range(n)]
    assert N.ntt(np.ones(n, dtype=np.uint64)).tolist() == [n] + [0] * (n - 1)
    pm1 = np.full(n, P - 1, dtype=np.uint64)
    assert N.ntt(pm1).tolist() == [(P - n) % P] + [0] * (n - 1)


def test_noncanonical_input_is_reduced():
    x = np.array([P, P + 1, 2**64 - 1, 5], dtype=np.uint64)
    assert N.ntt(x).tolist() == N.dft_naive([v % P for v in x.tolist()])


@pytest.mark.parametrize("n, n1", [(4, 2), (16, 4), (64, 8), (64, 2), (64, 32), (256, 16), (1024, 4),
                                   (4096, 64), (8192, 64)])
def test_four_step_equals_direct(n, n1):
    x = rand(n, n)
    assert np.array_equal(fourstep.four_step(x, n1), N.ntt_radix2(x))
    assert np.array_equal(fourstep.four_step(x, n1, inverse=True), N.ntt_radix2(x, inverse=True))


def test_pass1_state_definition():
    # state[n2, k1] = w_N^(n2*k1) * sum_n1 x[N2*n1 + n2] * w_N1^(n1*k1), checked by Python ints.
    n, n1 = 64, 8
    n2 = n // n1
    x = rand(n, 9).tolist()
    wn, w1 = F.root_of_unity(n), F.root_of_unity(n1)
    state = fourstep.pass1(np.array(x, dtype=np.uint64), n1)
    for c in range(n2):
        for k1 in range(n1):
            ref = sum(x[n2 * j + c] * pow(w1, j * k1, P) for j in range(n1)) * pow(wn, c * k1, P) % P
            assert int(state[c, k1]) == ref


def test_dif_running_twiddle_scales_outputs():
    # After all stages with running twiddle c, out[bitrev(m)] = c^m * X[m].
    k, c = 5, 123456789
    x = rand(1 << k, 3)
    y = N.dif_stages(x, c=c)[N.bit_reverse_indices(k)]
    X = N.dft_naive(x.tolist())
    assert y.tolist() == [pow(c, m, P) * X[m] % P for m in range(1 << k)]


def test_twiddle_rom_size_and_content():
    for k in range(1, 8):
        rom = N.twiddle_rom(k)
        assert rom.size == (1 << k) - 1
        off = 0
        for s in range(k):
            h = (1 << k) >> (s + 1)
            w = F.root_of_unity(2 * h)
            assert rom[off:off + h].tolist() == [pow(w, j, P) for j in range(h)]
            off += h


@pytest.mark.parametrize("bad", [0, 3, 6, 100])
def test_rejects_non_power_of_two(bad):
    with pytest.raises(ValueError, match="power of two"):
        N.ntt(np.zeros(bad, dtype=np.uint64))


# -- the prover's transforms: the fast model against the O(N^2) definition ----------------

@pytest.mark.parametrize("order", N.ORDERS)
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("coset", [None, 7, 3, F.P - 1])
@pytest.mark.parametrize("n", [1, 2, 8, 16])
def test_transform_against_the_definition(n, coset, inverse, order):
    rng = np.random.default_rng(n * 31 + (coset or 0) % 97)
    x = rng.integers(0, F.P, size=(3, n), dtype=np.uint64)
    x[0, :] = np.resize(np.array([0, 1, F.P - 1, 2**32, 2**63], dtype=np.uint64), n)
    got = N.transform(x, inverse=inverse, coset=coset, order=order)
    want = N.transform_naive(x, inverse=inverse, coset=coset, order=order)
    assert got.tolist() == want


@pytest.mark.parametrize("m, n", [(1, 4), (2, 8), (4, 16), (8, 32)])
@pytest.mark.parametrize("coset", [None, 7])
def test_zero_extended_input(m, n, coset):
    rng = np.random.default_rng(m + n)
    x = rng.integers(0, F.P, size=(2, m), dtype=np.uint64)
    for inverse in (False, True):
        got = N.transform(x, inverse=inverse, coset=coset, size=n, order="nr")
        assert got.tolist() == N.transform_naive(x, inverse=inverse, coset=coset, size=n, order="nr")


def test_transform_round_trips_and_one_dimensional_input():
    x = np.random.default_rng(5).integers(0, F.P, 64, dtype=np.uint64)
    for order, back in (("nn", "nn"), ("nr", "rn"), ("rn", "nr"), ("rr", "rr")):
        y = N.transform(x, coset=7, order=order)
        assert y.shape == (64,)
        assert np.array_equal(N.transform(y, inverse=True, coset=7, order=back), x)
    assert np.array_equal(N.transform(x), N.ntt(x))


@pytest.mark.parametrize("kwargs, match", [
    ({"coset": 0}, "coset"), ({"coset": F.P}, "coset"), ({"order": "nx"}, "order"),
    ({"size": 4}, "fit"), ({"size": 12}, "size"), ({"size": 16, "order": "rn"}, "natural"),
])
def test_transform_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        N.transform(np.zeros(8, dtype=np.uint64), **kwargs)
