"""Every model in hw.model, for every field, against an independent computation.

The reference (tests/field_reference.py) is written from the fields' definitions alone: each field's
prime and generator as the provers publish them (not read from hw.model.field), the roots g^((p-1)/N), and
the transforms as the O(N^2) sums on Python ints. The models checked: the field's scalar and vector
operations (at the field's edge values), the fast transform (forward, inverse, coset, the four orders,
batches, zero-extended input), the LDE built from it, the four-step passes, the lane model (plain, scaled
and with shift stages) and the engine's cycle-by-cycle coset passes on small builds.
"""

import itertools
import random

import numpy as np
import pytest

from nantucket.hw.model import coset as coset_model, field as F, fourstep, lane, ntt
from nantucket.hw.model.params import BuildParams

from field_reference import NAMES, SPEC, naive, root


def edges(name: str) -> list[int]:
    p, _, _ = SPEC[name]
    near = [2**15, 2**16, 2**30, 2**31, 2**32, 2**63]
    vals = {0, 1, 2, p - 2, p - 1} | {v + d for v in near for d in (-1, 0, 1) if 0 <= v + d < p}
    return sorted(vals)


def dft(name: str, row, *, inverse=False, shift=None) -> list[int]:
    return naive(row, name, inverse=inverse, coset=shift)


def rand_rows(name: str, rows: int, n: int, seed: int) -> np.ndarray:
    p, _, _ = SPEC[name]
    rng = random.Random(seed)
    pool = edges(name)
    data = [[rng.choice(pool) if rng.random() < 0.3 else rng.randrange(p) for _ in range(n)] for _ in range(rows)]
    return np.array(data, dtype=np.uint64)


@pytest.mark.parametrize("name", NAMES)
def test_field_facts(name):
    p, g, two_adicity = SPEC[name]
    f = F.get(name)
    assert (f.p, f.generator, f.two_adicity) == (p, g, two_adicity)
    assert f.width == p.bit_length() and f.point_bits in (32, 64) and f.point_bits >= f.width
    for log_n in (0, 1, 5, two_adicity):
        assert f.root_of_unity(1 << log_n) == root(name, 1 << log_n)
    with pytest.raises(ValueError, match=f"2\\^{two_adicity}"):
        f.root_of_unity(1 << (two_adicity + 1))


def test_plonky2_chain():
    """plonky2's published roots: the 2^32-th root and the 64th root 8 (its shift-only stages)."""
    f = F.get("goldilocks-plonky2")
    assert f.root_of_unity(2**32) == 7277203076849721926
    assert f.root_of_unity(64) == 8
    assert F.get("goldilocks").root_of_unity(64) != 8       # the two chains differ
    assert f.shift_roots_log == 6 and F.GOLDILOCKS.shift_roots_log == 6


@pytest.mark.parametrize("name", ["babybear", "koalabear"])
def test_31bit_shift_stages(name):
    """Only the last DIF stage (twiddle 1) of a 31-bit lane is shift-only."""
    f = F.get(name)
    assert f.shift_roots_log == 1
    assert lane.shift_stages(6, f) == 5
    assert lane.stage_shifts(6, 5, field=f) == (0,)


@pytest.mark.parametrize("name", NAMES)
def test_scalar_and_vector_ops(name):
    p, _, _ = SPEC[name]
    f = F.get(name)
    vals = edges(name)
    pairs = list(itertools.product(vals, repeat=2))
    a = np.array([x for x, _ in pairs], dtype=np.uint64)
    b = np.array([y for _, y in pairs], dtype=np.uint64)
    assert f.vadd(a, b).tolist() == [(x + y) % p for x, y in pairs]
    assert f.vsub(a, b).tolist() == [(x - y) % p for x, y in pairs]
    assert f.vmul(a, b).tolist() == [(x * y) % p for x, y in pairs]
    assert f.vneg(np.array(vals, dtype=np.uint64)).tolist() == [(-x) % p for x in vals]
    big = [p, p + 1, 2**64 - 1, 2**63 + 5]
    assert f.vcanon(np.array(vals + big, dtype=np.uint64)).tolist() == [x % p for x in vals + big]
    assert f.vmul(np.array(big, dtype=np.uint64), np.array(big[::-1], dtype=np.uint64)).tolist() == \
        [(x * y) % p for x, y in zip(big, big[::-1])]
    for x, y in pairs[::7]:
        assert (f.add(x, y), f.sub(x, y), f.mul(x, y)) == ((x + y) % p, (x - y) % p, x * y % p)
        if x:
            assert f.mul(x, f.inv(x)) == 1
    assert f.vpow(3, np.arange(40, dtype=np.uint64)).tolist() == [pow(3, e, p) for e in range(40)]
    assert f.powers(5, 33, start=7).tolist() == [7 * pow(5, e, p) % p for e in range(33)]
    f.check_canonical(np.array([p - 1], dtype=np.uint64))
    with pytest.raises(ValueError, match=f"index 1 is not below the {name} modulus"):
        f.check_canonical(np.array([0, p], dtype=np.uint64), "x")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("log_n", [1, 2, 3, 5])
def test_transform_every_mode(name, log_n):
    n = 1 << log_n
    x = rand_rows(name, 2, n, seed=log_n)
    shift = 7 if name != "babybear" else 31
    for inverse, coset, order in itertools.product((False, True), (None, shift), ntt.ORDERS):
        got = ntt.transform(x, inverse=inverse, coset=coset, order=order, field=name)
        want = [naive(row, name, inverse=inverse, coset=coset, order=order) for row in x.tolist()]
        assert got.tolist() == want, (inverse, coset, order)


@pytest.mark.parametrize("name", NAMES)
def test_transform_zero_extended_and_lde(name):
    p, _, _ = SPEC[name]
    m, blowup, shift = 8, 4, 3
    evals = rand_rows(name, 3, m, seed=11)
    # the LDE: interpolate on <w_M>, evaluate on shift * <w_(blowup M)>
    coeffs = ntt.transform(evals, inverse=True, field=name)
    lde = ntt.transform(coeffs, coset=shift, size=blowup * m, field=name)
    for row, got in zip(evals.tolist(), lde.tolist()):
        c = dft(name, row, inverse=True)
        w = root(name, blowup * m)
        want = [sum(cj * pow(shift * pow(w, i, p), j, p) for j, cj in enumerate(c)) % p for i in range(blowup * m)]
        assert got == want
        assert got[::blowup] == [sum(cj * pow(shift, j, p) * pow(root(name, m), i * j, p) for j, cj in enumerate(c)) % p
                                 for i in range(m)]


@pytest.mark.parametrize("name", NAMES)
def test_fast_transform_large_round_trip(name):
    """The four-step path of the fast transform (above the radix-2 limit) against the plain radix-2 one,
    and the round trip, at 2^12; one output point against the O(N) sum."""
    p, _, _ = SPEC[name]
    n = 1 << 12
    x = rand_rows(name, 1, n, seed=5)[0]
    y = ntt.ntt(x, field=name)
    assert np.array_equal(y, ntt.ntt_radix2(x, field=name))
    assert np.array_equal(ntt.intt(y, field=name), x)
    k = 1234
    w = root(name, n)
    assert int(y[k]) == sum(int(v) * pow(w, j * k, p) for j, v in enumerate(x.tolist())) % p


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("inverse", [False, True])
def test_four_step_passes(name, inverse):
    x = rand_rows(name, 1, 32, seed=3)[0]
    got = fourstep.four_step(x, inverse=inverse, field=name)
    assert got.tolist() == dft(name, x.tolist(), inverse=inverse)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("inverse", [False, True])
def test_lane_models(name, inverse):
    """A 2^5 lane: plain stream, scaled stream (running twiddle c), and with shift stages plus the output
    scale, each against the sums."""
    p, _, _ = SPEC[name]
    k, c = 5, 12345
    x = rand_rows(name, 2, 1 << k, seed=9)
    pairs = lane.to_lane_pairs(x)
    plain = lane.lane_transform(pairs, lane.twiddle_stream(k, inverse=inverse, field=name), field=name)
    want = [dft(name, row) if not inverse else [v * (1 << k) % p for v in dft(name, row, inverse=True)]
            for row in x.tolist()]
    assert lane.from_lane_pairs(plain).tolist() == want
    scaled = lane.lane_transform(pairs, lane.twiddle_stream(k, c, inverse, field=name), field=name)
    assert lane.from_lane_pairs(scaled).tolist() == [[v * pow(c, m, p) % p for m, v in enumerate(row)]
                                                      for row in want]
    column, log_n = 3, 2 * k
    stream = lane.shift_stream(k, column, inverse, field=name)
    out = lane.from_lane_pairs(lane.scaled_lane_transform(pairs, stream, log_core=k, inverse=inverse, field=name))
    wn = root(name, 1 << log_n)
    if inverse:
        wn = pow(wn, p - 2, p)
    assert out.tolist() == [[v * pow(wn, column * m, p) % p for m, v in enumerate(row)] for row in want]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("inverse", [False, True])
def test_engine_passes(name, inverse):
    """The engine's cycle-by-cycle two passes with the coset factor stream, a batch of 2, on a small build."""
    params = BuildParams(lanes=4, log_core=3, channels=4, field=name)
    n = params.max_log_n
    x = rand_rows(name, 2, 1 << n, seed=21)
    shift = 5
    _, out = coset_model.coset_passes(params, x.reshape(-1), shift, n, inverse=inverse, batch=2)
    assert out.reshape(2, -1).tolist() == [dft(name, row, inverse=inverse, shift=shift) for row in x.tolist()]


def test_field_names_and_params():
    assert F.FIELD_NAMES == tuple(NAMES)
    assert BuildParams(field="babybear").prime_field is F.BABYBEAR
    assert BuildParams(field=F.KOALABEAR).field == "koalabear"
    assert BuildParams().tag() == "L16_k12_C32" and BuildParams(field="koalabear").tag() == "L16_k12_C32_koalabear"
    with pytest.raises(ValueError, match="did you mean 'babybear'"):
        BuildParams(field="babybaer")
    with pytest.raises(TypeError, match="field"):
        F.get(3)
