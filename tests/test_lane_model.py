"""The lane model (hw/model/lane.py): the twiddle stream format and the lane transform, against the
independent references in hw.model.ntt / hw.model.fourstep."""

import numpy as np
import pytest

from nantucket.hw.model import field as F, fourstep, lane as LM, ntt as N
from nantucket.hw.model.schedule import lane_input_order

P = F.P
KS = list(range(2, 13))


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, P, shape, dtype=np.uint64)


@pytest.mark.parametrize("k", KS)
def test_plan_uses_every_rom_entry_once(k):
    rom_index, stage = LM.twiddle_plan(k)
    assert rom_index.shape == (1 << (k - 1), 2)
    used = rom_index[rom_index >= 0]
    assert sorted(used.tolist()) == list(range((1 << k) - 1))      # 2^k - 1 words, one slot unused
    assert (rom_index < 0).sum() == 1
    for s in range(k):                                               # the stage column agrees with the ROM layout
        sel = stage == s
        assert np.all(rom_index[sel] >= LM.rom_offset(k, s))
        assert np.all(rom_index[sel] < LM.rom_offset(k, s) + (1 << (k - 1 - s)))
    # stage 0 consumes on w_first exactly the twiddle of the pair entering on that cycle
    i0 = lane_input_order(k)[:, 0]
    assert np.array_equal(rom_index[:, LM.W_FIRST], i0)


@pytest.mark.parametrize("k", KS)
def test_first_half_slots_arrive_in_their_window(k):
    """Stage s (first half) owns slots [T_s, 2T_s) of every group: the property hw/lane.py relies on."""
    a, b = LM.halves(k)
    rom_index, stage = LM.twiddle_plan(k)
    m = 1 << (a - 1)
    for t in range(1 << (k - 1)):
        x = t % m
        if x:
            s = stage[t, LM.W_REST]
            assert 1 <= s < a and (1 << (a - 1 - s)) <= x < (2 << (a - 1 - s))
        else:
            assert stage[t, LM.W_REST] in (-1,) + tuple(range(a, k))


@pytest.mark.parametrize("k", KS)
def test_plain_lane_is_the_ntt(k):
    x = rand((3, 1 << k), k)
    y = LM.from_lane_pairs(LM.lane_transform(LM.to_lane_pairs(x), LM.twiddle_stream(k)))
    for row, out in zip(x, y):
        assert np.array_equal(out, N.ntt_radix2(row))
    if k <= 8:
        assert y[0].tolist() == N.dft_naive(x[0].tolist())


@pytest.mark.parametrize("k", KS)
def test_inverse_stream(k):
    x = rand(1 << k, 50 + k)
    y = LM.from_lane_pairs(LM.lane_transform(LM.to_lane_pairs(x), LM.twiddle_stream(k, inverse=True)))
    assert np.array_equal(F.vmul(y, np.uint64(F.inv(1 << k))), N.intt(x))


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_scaled_lane_is_pass1(k):
    """Fed c = w_N^n2 the lane computes column n2 of the four-step pass 1."""
    n_total = 1 << (2 * k)
    x = rand(n_total, 7 * k)
    state = fourstep.pass1(x)                       # state[n2, k1]
    cols = x.reshape(1 << k, 1 << k).T             # cols[n2, n1]
    c = fourstep.column_scale_bases(n_total, 1 << k)
    for n2 in (0, 1, (1 << k) - 1):
        stream = LM.twiddle_stream(k, c=int(c[n2]))
        y = LM.from_lane_pairs(LM.lane_transform(LM.to_lane_pairs(cols[n2]), stream))
        assert np.array_equal(y, state[n2])
        assert np.array_equal(y, LM.lane_reference(cols[n2], c=int(c[n2])))


@pytest.mark.parametrize("log_n", [4, 5, 7, 9])
def test_inverse_passes_with_output_scale(log_n):
    """The engine's inverse run, pass by pass, from the lane model with the output scale: pass 1 columns
    of 2^n1 (n1 = ceil(n/2)) with the inverse stream and ``inverse`` (w_N^(-n2 k1)), pass 2 rows with
    ``normalize`` (1/N); the pass-1 state equals fourstep.pass1(x, N1, inverse=True), the result
    fourstep.pass2(..., normalize=True) and the O(N^2) inverse definition (hw.model.ntt.transform_naive)."""
    n1, n2 = (log_n + 1) // 2, log_n // 2
    k = max(n1, 2)
    x = rand(1 << log_n, 70 + log_n)
    cols = x.reshape(1 << n1, 1 << n2).T                              # cols[n2, n1]
    state = np.stack([LM.from_lane_pairs(LM.scaled_lane_transform(
        LM.to_lane_pairs(cols[c]), LM.shift_stream(k, c, True, frame=n1), log_core=k, log_n=log_n, inverse=True))
        for c in range(1 << n2)])                                     # state[n2, k1]
    assert np.array_equal(state, fourstep.pass1(x, 1 << n1, inverse=True))
    rows = state.T                                                    # rows[k1, n2]
    z = np.stack([LM.from_lane_pairs(LM.scaled_lane_transform(
        LM.to_lane_pairs(rows[r]), LM.shift_stream(k, 0, True, frame=n2), log_core=k, log_n=log_n, normalize=True))
        for r in range(1 << n1)])                                     # z[k1, k2]
    out = np.ascontiguousarray(z.T).reshape(-1)                       # X[k1 + N1 k2]
    assert np.array_equal(out, fourstep.pass2(state, inverse=True, normalize=True))
    assert [int(v) for v in out] == N.transform_naive(x, inverse=True)[0]
    assert np.array_equal(fourstep.four_step(x, 1 << n1, inverse=True), out)


def test_scaled_lane_k12():
    k = 12
    c = pow(F.root_of_unity(1 << 24), 4095, P)
    x = rand((2, 1 << k), 99)
    y = LM.from_lane_pairs(LM.lane_transform(LM.to_lane_pairs(x), LM.twiddle_stream(k, c=c)))
    assert np.array_equal(y, LM.lane_reference(x, c=c))


def test_lane_reference_scales_by_c_to_the_m():
    k, c = 4, 12345
    x = rand(1 << k, 3)
    y = LM.lane_reference(x, c=c)
    expect = [v * pow(c, m, P) % P for m, v in enumerate(N.dft_naive(x.tolist()))]
    assert y.tolist() == expect


def test_edge_values_and_batches():
    k = 6
    x = np.array([[0] * 64, [P - 1] * 64, [1] + [0] * 63, [2**64 - 2**32] * 64], dtype=np.uint64)
    y = LM.from_lane_pairs(LM.lane_transform(LM.to_lane_pairs(x), LM.twiddle_stream(k)))
    assert np.array_equal(y, LM.lane_reference(x))
    assert np.all(y[2] == 1)


def test_parameter_checks():
    with pytest.raises(ValueError, match="log_core"):
        LM.twiddle_plan(1)
    with pytest.raises(ValueError, match="log_core"):
        LM.twiddle_stream(13)
    with pytest.raises(TypeError, match="log_core"):
        LM.halves(4.0)
    with pytest.raises(ValueError, match="stream"):
        LM.stage_tables(np.zeros((4, 2), dtype=np.uint64), 4)


# -- lanes with shift stages and the scale on the output --------------------------------

@pytest.mark.parametrize("k", [2, 3, 5, 7, 12])
def test_shift_stream_lane_equals_reference(k):
    """The output-scaled lane model (decoded shift stream, then w_N^(n2 m)) against the stage reference
    with the pass-1 running twiddle c = w_N^n2 folded in; plain, scaled and inverse."""
    rng = np.random.default_rng(k)
    x = rng.integers(0, F.P, 1 << k, dtype=np.uint64)
    w = F.root_of_unity(1 << (2 * k))
    for column, inverse in ((0, False), (int(rng.integers(1, 1 << k)), False), ((1 << k) - 1, False), (0, True)):
        got = LM.from_lane_pairs(LM.scaled_lane_transform(LM.to_lane_pairs(x), LM.shift_stream(k, column, inverse)))
        expect = LM.lane_reference(x, c=F.pow_(w, column) if column else None, inverse=inverse)
        assert np.array_equal(got, expect), (k, column, inverse)


def test_shift_stages_use_powers_of_two_only():
    for k in (4, 9, 12):
        first = LM.shift_stages(k)
        assert first == max(0, k - 6)
        rom = N.twiddle_rom(k)
        for s in range(first, k):
            lo = LM.rom_offset(k, s)
            shifts = LM.stage_shifts(k, s)
            assert {F.pow_(2, j) for j in shifts} == {int(v) for v in rom[lo:lo + (1 << (k - 1 - s))]}
        if first > 0:
            with pytest.raises(ValueError, match="not a shift stage"):
                LM.stage_shifts(k, first - 1)
    assert LM.stage_shifts(12, 11) == (0,) and LM.stage_shifts(12, 10) == (0, 48)
    with pytest.raises(ValueError, match="power of two"):
        LM.twiddle_shift(3)


@pytest.mark.parametrize("k", [2, 6, 12])
def test_scale_slot_is_the_unused_slot(k):
    rom_index, _ = LM.twiddle_plan(k)
    unused = [(int(t), int(c)) for t, c in zip(*np.nonzero(rom_index < 0))]
    assert unused == [(LM.scale_slot(k), 1)]
    stream = LM.shift_stream(k, 5 % (1 << k))
    plain, column = LM.decode_stream(stream, k)
    assert int(column) == 5 % (1 << k)
    assert np.array_equal(plain, LM.twiddle_stream(k))
    with pytest.raises(ValueError, match="column"):
        LM.shift_stream(k, 1 << k)


@pytest.mark.parametrize("k", KS)
def test_frame_shift_words_fit_their_physical_stage(k):
    """A 2^k lane builds each shift-only stage for the shifts of ITS stage at 2^k (forward and inverse,
    hw/lane.py): the shift amounts a smaller frame sends to that physical stage must be among them."""
    for f in range(2, k + 1):
        _, stage = LM.twiddle_plan(f)
        phys = LM.physical_stages(k, f)
        for inverse in (False, True):
            stream = LM.shift_stream(k, 0, inverse, frame=f)
            for s_frame, p in enumerate(phys):
                if p < LM.shift_stages(k):
                    continue
                allowed = set(LM.stage_shifts(k, p)) | set(LM.stage_shifts(k, p, inverse=True))
                words = stream[stage == s_frame]
                assert {int(w) for w in words} <= allowed, f"f = {f}, frame stage {s_frame} on stage {p}"
