"""Build parameters and the lane/engine order contract of hw.model.schedule."""

import numpy as np
import pytest

from nantucket.hw.model import field as F, fourstep, ntt as N
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.schedule import lane_input_order, lane_output_order, pass_schedule


def test_defaults():
    p = BuildParams()
    assert (p.lanes, p.log_core, p.channels) == (16, 12, 32)
    assert p.n_points == 2**24 and p.points_per_cycle == 32 and p.cycles_per_pass == 2**19


@pytest.mark.parametrize("kwargs, name, exc", [
    ({"lanes": 3}, "lanes", ValueError), ({"lanes": 64}, "lanes", ValueError),
    ({"log_core": 1}, "log_core", ValueError), ({"log_core": 13}, "log_core", ValueError),
    ({"channels": 1}, "channels", ValueError), ({"channels": 64}, "channels", ValueError),
    ({"lanes": 8, "log_core": 2}, "lanes", ValueError), ({"dma_mhz": 0}, "dma_mhz", ValueError),
    ({"lanes": 4.0}, "lanes", TypeError), ({"log_core": True}, "log_core", TypeError),
])
def test_rejects_bad_parameters(kwargs, name, exc):
    with pytest.raises(exc, match=name):
        BuildParams(**kwargs)


@pytest.mark.parametrize("k", range(2, 13))
def test_lane_input_order_is_first_stage_pairs(k):
    order = lane_input_order(k)
    assert order.shape == (1 << (k - 1), 2)
    assert sorted(order.ravel().tolist()) == list(range(1 << k))
    # Every pair is a butterfly of the first GS stage: distance 2^(k-1).
    assert np.all(order[:, 1] - order[:, 0] == 1 << (k - 1))
    out = lane_output_order(k)
    assert out.ravel().tolist() == list(range(1 << k))


def _run_schedule(params, x):
    """Drive model lanes exactly as pass_schedule says and return (state, X)."""
    k = params.log_core
    n, size = params.n_points, params.core_points
    cs = fourstep.column_scale_bases(n, size)
    results = []
    src = x
    for pass_index in (1, 2):
        dst = np.zeros(n, dtype=np.uint64)
        reads, writes = pass_schedule(params, pass_index)
        for g in range(reads.shape[0]):
            for lane in range(params.lanes):
                pts = np.zeros(size, dtype=np.uint64)
                pts[lane_input_order(k).ravel()] = src[reads[g, :, lane].ravel()]
                c = cs[g * params.lanes + lane] if pass_index == 1 else None
                y = N.dif_stages(pts, c=c)[N.bit_reverse_indices(k)]
                dst[writes[g, :, lane].ravel()] = y[lane_output_order(k).ravel()]
        results.append(dst)
        src = dst
    return results


@pytest.mark.parametrize("lanes, k", [(1, 2), (2, 3), (4, 4), (16, 4), (4, 5), (32, 5)])
def test_pass_schedule_computes_the_transform(lanes, k):
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    x = np.random.default_rng(k).integers(0, F.P, params.n_points, dtype=np.uint64)
    state, out = _run_schedule(params, x)
    assert np.array_equal(state.reshape(1 << k, 1 << k), fourstep.pass1(x))
    assert out.tolist() == N.dft_naive(x.tolist()) if k <= 4 else np.array_equal(out, N.ntt_radix2(x))


def test_pass_schedule_covers_every_index_once():
    params = BuildParams(lanes=4, log_core=4, channels=2)
    for p in (1, 2):
        reads, writes = pass_schedule(params, p)
        assert sorted(reads.ravel().tolist()) == list(range(params.n_points))
        assert sorted(writes.ravel().tolist()) == list(range(params.n_points))
    with pytest.raises(ValueError, match="pass_index"):
        pass_schedule(params, 3)


# -- BuildParams.smallest_for ----------------------------------------------------------------------------

def _kernel_accepts(params) -> bool:
    from nantucket.hw.model.layout import HbmLayout
    try:
        HbmLayout(params)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("given", [{}, {"lanes": 4}, {"lanes": 16}, {"lanes": 8, "channels": 32},
                                   {"channels": 2}, {"channels": 32}])
def test_smallest_for_is_the_smallest_kernel_that_holds_n(given):
    from nantucket.hw.model.layout import HbmLayout
    for n in [1, 2, 3, 16, 17, 255, 256, 257, 2**20, 2**24 - 1, 2**24]:
        p = BuildParams.smallest_for(n, check=HbmLayout, **given)
        assert p.n_points >= n and _kernel_accepts(p)
        assert all(getattr(p, k) == v for k, v in given.items())
        assert (p.lanes, p.channels) == (given.get("lanes", 4), given.get("channels", 4))
        # no smaller core would do: k - 1 either does not hold n or is not a build the kernel takes
        if p.log_core > 2:
            fields = dict(lanes=p.lanes, channels=p.channels, log_core=p.log_core - 1)
            try:
                smaller = BuildParams(**fields)
            except ValueError:
                continue
            assert smaller.n_points < n or not _kernel_accepts(smaller)


def test_smallest_for_powers_of_two_are_the_sim_backends_builds():
    """With nothing given: 4 lanes, 4 channels and k = max(2, ceil(log2(N) / 2)), the builds that
    host.sim_backend has always chosen (and cached under build/sim/)."""
    from nantucket.hw.model.layout import HbmLayout
    for log_n in range(0, 25):
        want = BuildParams(lanes=4, log_core=max(2, (log_n + 1) // 2), channels=4)
        assert BuildParams.smallest_for(1 << log_n, check=HbmLayout) == want


@pytest.mark.parametrize("n, given, exc, needle", [
    (2**25, {}, ValueError, r"2\^24"),
    (2**10, {"log_core": 4}, ValueError, r"at most 2\^8"),
    (4, {"lanes": 2}, ValueError, "lanes"),          # only with the kernel check: the model takes 2 lanes
    (4, {"lanes": 3}, ValueError, "lanes"),
    (4, {"log_core": 13}, ValueError, "log_core"),
    (0, {}, ValueError, "n_points"),
    (4.0, {}, TypeError, "n_points"),
    (4, {"lanes": 4.0}, TypeError, "lanes"),
])
def test_smallest_for_rejects(n, given, exc, needle):
    from nantucket.hw.model.layout import HbmLayout
    with pytest.raises(exc, match=needle):
        BuildParams.smallest_for(n, check=HbmLayout, **given)


def test_smallest_for_without_a_check_takes_what_buildparams_takes():
    assert BuildParams.smallest_for(4, lanes=2) == BuildParams(lanes=2, log_core=2, channels=4)


@pytest.mark.parametrize("params", [BuildParams(lanes=4, log_core=4, channels=4), BuildParams(lanes=8, log_core=5, channels=8)],
                         ids=lambda p: p.tag())
def test_a_batch_schedule_runs_the_elements_back_to_back(params):
    """pass_schedule with batch B: every index of the B x N buffer exactly once per pass, and the
    transforms one after another: element e's part is the one-transform schedule shifted by e*N."""
    from nantucket.hw.model.schedule import loopback_passes, pass_schedule
    for log_n in (params.min_log_n, params.max_log_n - 1, params.max_log_n):
        n = 1 << log_n
        for batch in (1, 2, 3):
            for pass_index in (1, 2):
                reads, writes = pass_schedule(params, pass_index, log_n, batch)
                one_r, one_w = pass_schedule(params, pass_index, log_n)
                per = one_r.shape[0]
                assert reads.shape[0] == batch * per
                for e in range(batch):
                    np.testing.assert_array_equal(reads[e * per:(e + 1) * per], one_r + e * n)
                    np.testing.assert_array_equal(writes[e * per:(e + 1) * per], one_w + e * n)
            x = np.arange(batch * n, dtype=np.uint64) * np.uint64(7919)
            state, out = loopback_passes(params, x, log_n, batch)
            for e in range(batch):
                s1, o1 = loopback_passes(params, x[e * n:(e + 1) * n], log_n)
                np.testing.assert_array_equal(state[e * n:(e + 1) * n], s1)
                np.testing.assert_array_equal(out[e * n:(e + 1) * n], o1)
    with pytest.raises(ValueError, match="batch"):
        pass_schedule(params, 1, params.max_log_n, 0)


def test_each_field_has_a_default_build_that_uses_the_bandwidth():
    """16 lanes of 64-bit points, 32 of 32-bit ones: the same bytes per NTT cycle through the HBM (2L points
    of the field's width), k = 12 and 32 channels in every field; given fields replace the default's."""
    from nantucket.hw.model import field as F
    for name in F.FIELD_NAMES:
        p = BuildParams.default_for(name)
        assert (p.field, p.log_core, p.channels) == (name, 12, 32)
        assert p.points_per_cycle * p.prime_field.point_bits == 2 * 16 * 64, name
    assert BuildParams.default_for("goldilocks") == BuildParams()
    assert BuildParams.default_for("babybear").tag() == "L32_k12_C32_babybear"
    assert BuildParams.default_for(F.KOALABEAR, lanes=8, log_core=5, channels=8).tag() == "L8_k5_C8_koalabear"
    with pytest.raises(ValueError, match="babybear"):
        BuildParams.default_for("babybare")
