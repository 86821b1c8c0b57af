"""Twiddle generator: the model's words against an independent four-step computation, the cocotb/Verilator
bench against the model (every run-time frame size), plus parameter checks."""

import random
import re

import numpy as np
import pytest
from amaranth.back import rtlil

from nantucket.hw.model import field as F
from nantucket.hw.model.lane import from_lane_pairs, scaled_lane_transform, shift_stream, to_lane_pairs
from nantucket.hw.model.ntt import dft_naive
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.twiddles import lane_twiddles
from nantucket.hw.twiddles import TwiddleGenerator, stream_word_bits
from nantucket.hw.flow.runner import run_bench

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")


# -- the model: what each lane must be fed, for every size ------------------------------------------

def _want_column(x, log_n: int, column: int) -> list[int]:
    """A four-step pass over one column/row of 2^f points, from the definition: the DFT of x, output m
    times w_N^(column * m), N = 2^log_n (column 0: the plain DFT)."""
    w = F.root_of_unity(1 << log_n)
    return [v * pow(w, column * m, F.P) % F.P for m, v in enumerate(dft_naive(x))]


def test_model_words_compute_both_passes_of_every_size():
    """Fed lane_twiddles(log_n), a 2^k lane (the bit-exact lane model) computes pass 1's scaled column
    transforms (frames of n1) and pass 2's row transforms (frames of n2) of a 2^log_n transform."""
    params = BuildParams(lanes=4, log_core=5, channels=4)
    k, rng = params.log_core, random.Random(5)
    for log_n in range(params.min_log_n, params.max_log_n + 1):
        frames = params.pass_log_sizes(log_n)
        for pass_index in (1, 2):
            f = frames[pass_index - 1]
            rounds = (1 << frames[2 - pass_index]) // params.lanes
            for g, lane in {(0, 0), (rounds - 1, params.lanes - 1), (rng.randrange(rounds), rng.randrange(4))}:
                x = np.array([rng.choice((0, 1, F.P - 1, 2**32, 2**63, rng.randrange(F.P))) for _ in range(1 << f)],
                             dtype=np.uint64)
                stream = lane_twiddles(params, pass_index, g, lane, log_n=log_n)
                assert stream.shape == (1 << (f - 1), 2)
                y = from_lane_pairs(scaled_lane_transform(to_lane_pairs(x), stream, log_core=k, log_n=log_n))
                column = params.lanes * g + lane if pass_index == 1 else 0
                assert [int(v) for v in y] == _want_column(x, log_n, column), (log_n, pass_index, g, lane)


def test_model_inverse_words_and_batches():
    """Inverse runs and batches, from the definition (the inverse DFT sum with w^-1, output m times
    w_N^(-column m) in pass 1 and times 1/N in pass 2): fed lane_twiddles(inverse=True, batch=B), the
    lane model with the lane's inverse / normalize flags computes both passes of every size; in a batch,
    round g's lanes work on column (L g + l) mod N2 of element (L g + l) div N2."""
    params = BuildParams(lanes=4, log_core=4, channels=4)
    k, lanes, rng = params.log_core, params.lanes, random.Random(9)
    for log_n in range(params.min_log_n, params.max_log_n + 1):
        frames = params.pass_log_sizes(log_n)
        for pass_index in (1, 2):
            f, count = frames[pass_index - 1], 1 << frames[2 - pass_index]
            batch = 3
            for g in range(batch * count // lanes):
                lane = rng.randrange(lanes)
                x = np.array([rng.randrange(F.P) for _ in range(1 << f)], dtype=np.uint64)
                stream = lane_twiddles(params, pass_index, g, lane, log_n=log_n, inverse=True, batch=batch)
                column = (lanes * g + lane) % count if pass_index == 1 else 0
                y = from_lane_pairs(scaled_lane_transform(to_lane_pairs(x), stream, log_core=k, log_n=log_n,
                                                          inverse=pass_index == 1, normalize=pass_index == 2))
                w_f, w_n = F.inv(F.root_of_unity(1 << f)), F.inv(F.root_of_unity(1 << log_n))
                dft = [sum(int(v) * pow(w_f, j * m, F.P) for j, v in enumerate(x)) % F.P for m in range(1 << f)]
                if pass_index == 1:
                    want = [v * pow(w_n, column * m, F.P) % F.P for m, v in enumerate(dft)]
                else:
                    want = [v * F.inv(1 << log_n) % F.P for v in dft]
                assert [int(v) for v in y] == want, (log_n, pass_index, g, lane)
    with pytest.raises(ValueError, match="round"):
        lane_twiddles(params, 1, 12, 0, log_n=8, batch=3)         # 2^8: 16 columns a transform, 12 rounds
    with pytest.raises(ValueError, match="batch"):
        lane_twiddles(params, 1, 0, 0, log_n=8, batch=0)
    with pytest.raises(TypeError, match="scale"):
        lane_twiddles(params, 1, 0, 0, scale="output")            # one design: no scale argument


def test_model_default_size_is_unchanged():
    params = BuildParams(lanes=4, log_core=4, channels=4)
    for g in range(4):
        for lane in range(4):
            assert np.array_equal(lane_twiddles(params, 1, g, lane), shift_stream(4, 4 * g + lane))
            assert np.array_equal(lane_twiddles(params, 1, g, lane, log_n=8), shift_stream(4, 4 * g + lane))
            assert np.array_equal(lane_twiddles(params, 2, g, lane), shift_stream(4, 0))


def test_model_rejects_bad_sizes_and_rounds():
    params = BuildParams(lanes=4, log_core=4, channels=4)
    with pytest.raises(ValueError, match="log_n"):
        lane_twiddles(params, 1, 0, 0, log_n=params.max_log_n + 1)
    with pytest.raises(ValueError, match="log_n"):
        lane_twiddles(params, 1, 0, 0, log_n=params.min_log_n - 1)
    with pytest.raises(ValueError, match="round"):
        lane_twiddles(params, 1, 1, 0, log_n=4)         # 2^4: one round of 4 columns
    with pytest.raises(ValueError, match="pass_index"):
        lane_twiddles(params, 3, 0, 0)


# -- the gateware --------------------------------------------------------------------------------------

# L1_k2 in make test-full (the engine benches run the generator at L1_k4; make test's time is near its limit).
@pytest.mark.parametrize("lanes, k, crossed", [pytest.param(1, 2, True, marks=pytest.mark.full), (4, 4, True),
                                               (2, 5, True), (16, 6, False)])
def test_twiddle_generator(lanes, k, crossed):
    """Small configurations cross every idle/stall pattern over every native size (frames 2..k), both
    passes, switching size between starts, and check the reset state (frames of 2^k); the 16-lane one
    runs random stalls."""
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    tests = ["test_all_sizes", "test_reset_state"] if crossed else ["test_random_stalls"]
    run_bench(TwiddleGenerator(params), name="twiddles", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.twiddles", testcase=tests)


# L4_k4's generator also runs inside tests/test_engine.py's plonky2 engine: make test-full only.
# BabyBear and KoalaBear generators run inside tests/test_engine.py's L4_k4 engines: make test-full only.
@pytest.mark.parametrize("field, lanes, k", [pytest.param("goldilocks-plonky2", 4, 4, marks=pytest.mark.full),
                                             ("goldilocks-plonky2", 2, 7),
                                             pytest.param("babybear", 2, 5, marks=pytest.mark.full),
                                             pytest.param("koalabear", 4, 7, marks=pytest.mark.full)],
                         ids=["plonky2_L4_k4", "plonky2_L2_k7", "babybear_L2_k5", "koalabear_L4_k7"])
def test_twiddle_generator_fields(field, lanes, k):
    """Another field's generator: the words of its root chain (at k = 7 its first stage's are field
    values, the rest shift amounts; in BabyBear and KoalaBear every stage's but the last, in Montgomery
    form) against hw.model.twiddles.lane_twiddles of that field (general stages' words through the
    multiplier's ``encode``), every size, both passes, inverse and batches, random stalls; they differ
    from Goldilocks' words."""
    params = BuildParams(lanes=lanes, log_core=k, channels=2, field=field)
    default = BuildParams(lanes=lanes, log_core=k, channels=2)
    assert not np.array_equal(lane_twiddles(params, 1, 0, 1), lane_twiddles(default, 1, 0, 1))
    run_bench(TwiddleGenerator(params), name="twiddles", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.twiddles", testcase=["test_random_stalls", "test_reset_state"],
              facts={"max_rounds": 2})


@pytest.mark.full
def test_twiddle_generator_default_build():
    """The default build (16 lanes, k = 12): frames of 2^12 (2^24 points), 2^9 and 2^8 (2^17) and 2^4
    (2^8, the smallest), a few rounds each, forward and inverse, batches of the smallest size, with a
    start abandoned in the middle of a frame."""
    params = BuildParams()
    # [pass, log_n, rounds, extra, inverse, batch]: inverse at 2^24, 2^17 and 2^8, and a batch of three
    # 2^8 transforms (one round of 16 columns each: the column wraps every round)
    runs = [[1, 24, 2, 0], [2, 17, 1, 100], [1, 17, 3, 0], [2, 24, 1, 0], [1, 8, 1, 0], [2, 8, 0, 5], [1, 24, 1, 7],
            [1, 24, 2, 0, 1, 1], [2, 24, 1, 3, 1, 1], [1, 17, 2, 0, 1, 1], [2, 17, 1, 0, 1, 2],
            [1, 8, 3, 0, 1, 3], [2, 8, 2, 0, 0, 3], [1, 8, 3, 0, 0, 3]]
    run_bench(TwiddleGenerator(params), name="twiddles", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.twiddles", testcase="test_random_stalls", facts={"runs": runs})


def test_default_rom_maps_onto_whole_bram36s():
    """The default ROM (2^13 rows of 128 bits, two 64-bit words: every frame size, forward and inverse;
    no bit marks the free slot, the generator finds it from its row counter) is built from
    memories of at most 16 bits (four 8K x 4 BRAM36s), with no bit lost: Yosys splits a wider one of 8K
    rows over BRAMs of 4K rows with a LUT per bit to pick the half (a single 129-bit memory: 129 of
    the block's 188 LUTs)."""
    params = BuildParams()
    text = rtlil.convert(TwiddleGenerator(params))
    memories = [(int(w), int(d)) for w, d in re.findall(r"^\s*memory width (\d+) size (\d+)", text, re.MULTILINE)]
    assert memories
    assert all(width <= 16 for width, _ in memories), memories
    rows = 2 << params.log_core
    assert all(depth == rows for _, depth in memories)
    assert sum(width for width, _ in memories) == 2 * 64


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params"):
        TwiddleGenerator({"lanes": 4})


@pytest.mark.parametrize("field, bits", [("goldilocks", 64), ("goldilocks-plonky2", 64), ("babybear", 31),
                                         ("koalabear", 31)])
def test_stream_word_bits(field, bits):
    """A stream word holds the general multiplier's operand: a Goldilocks value (64 bits) or a 31-bit
    Montgomery word; the generator's ports are that wide per lane."""
    assert stream_word_bits(field) == bits
    gen = TwiddleGenerator(BuildParams(lanes=2, log_core=4, channels=2, field=field))
    assert len(gen.o_w_first.as_value()) == len(gen.o_w_rest.as_value()) == 2 * bits


def test_resources():
    plain = TwiddleGenerator(BuildParams())
    assert plain.mul_units == 0 and plain.dsp_tiles == 0
    assert plain.latency == 2           # ROM read, column insert
    assert plain.frame_sizes == tuple(range(2, 13))
    with pytest.raises(TypeError, match="scale"):
        TwiddleGenerator(BuildParams(), scale="output")     # one design: no scale argument
