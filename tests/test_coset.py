"""Coset transforms: the factor model against the golden model, the point scale and
the factor generator in amaranth.sim, and the engine on Verilator (sim/benches/coset.py)."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from nantucket.hw.coset import CosetFactors, PointScale
from nantucket.hw.engine import NttEngine
from nantucket.hw.model import coset as CM, field as F
from nantucket.hw.model.ntt import transform, transform_naive
from nantucket.hw.model.params import BuildParams
from nantucket.hw.multiplier import general_multiplier
from nantucket.sim.benches.lib import EDGE_VALUES, NONCANONICAL_VALUES, edge_values
from nantucket.hw.flow.runner import run_bench

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

EDGE_SHIFTS = (1, F.P - 1, 2**32, 7)


def edge_shifts(field) -> tuple[int, ...]:
    """1, p - 1, 2^32 (below p), 7, the generator and 2^16 + 1 in ``field``."""
    return tuple(dict.fromkeys(g for g in EDGE_SHIFTS + (field.generator, 2**16 + 1) if g < field.p))


# -- the model -------------------------------------------------------------------------------------

@pytest.mark.parametrize("lanes, k, channels, log_n, batch", [
    (4, 4, 4, 8, 1), (4, 4, 4, 7, 3), (4, 4, 4, 4, 2), (8, 5, 8, 9, 2), (8, 5, 8, 10, 1), (2, 6, 4, 11, 1)])
def test_four_step_with_factor_streams(lanes, k, channels, log_n, batch):
    """The engine's passes, cycle by cycle through pass_schedule, with the factor pair of each cycle
    applied to every lane's input (forward) or output (inverse) pair, equal the golden model's
    transform(x, inverse=, coset=g) for every element of a batch; odd and even n, edge shifts."""
    params = BuildParams(lanes=lanes, log_core=k, channels=channels)
    rng = np.random.default_rng(log_n)
    for inverse in (False, True):
        for g in EDGE_SHIFTS + (int(rng.integers(2, 2**62)),):
            x = rng.integers(0, F.P, batch << log_n, dtype=np.uint64)
            x[:len(EDGE_VALUES)] = EDGE_VALUES
            _, out = CM.coset_passes(params, x, g, log_n, inverse, batch)
            want = transform(x.reshape(batch, -1), inverse=inverse, coset=g).reshape(-1)
            assert np.array_equal(out, want), f"shift {g}, inverse {inverse}"


def test_golden_model_coset_is_the_definition():
    """transform(coset=) itself against the O(N^2) sums, so the check above rests on the definition."""
    rng = random.Random(2)
    for n in (1, 4, 8, 16):
        x = [rng.randrange(F.P) for _ in range(n)]
        for inverse in (False, True):
            g = rng.choice(EDGE_SHIFTS + (rng.randrange(2, F.P),))
            assert transform(x, inverse=inverse, coset=g).tolist() == \
                transform_naive(x, inverse=inverse, coset=g)[0]


def test_factor_tables_and_streams():
    """HI[i >> s] * LO[i & mask] = b^i for every position of every frame size; the stream is b^(the
    lanes' positions): input order forward, output order inverse; the pass bases are G, g, h, H."""
    g = 0x1234_5678_9ABC_DEF
    h = F.inv(g)
    for f in range(2, 13):
        b = F.pow_(g, 3 + f)
        lo, hi = CM.factor_tables(b, f)
        s = f // 2
        assert all(F.mul(hi[i >> s], lo[i & ((1 << s) - 1)]) == F.pow_(b, i) for i in range(1 << f))
    for n in (4, 7, 24):
        n1, n2 = (n + 1) // 2, n // 2
        assert CM.pass_base(g, n, 1, False) == F.pow_(g, 1 << n2)
        assert CM.pass_base(g, n, 2, False) == g
        assert CM.pass_base(g, n, 1, True) == h
        assert CM.pass_base(g, n, 2, True) == F.pow_(h, 1 << n1)
        for pass_index, inverse in ((1, False), (2, True)):
            f = CM.pass_frame(n, pass_index)
            base = CM.pass_base(g, n, pass_index, inverse)
            got = CM.factor_stream(g, n, pass_index, inverse)
            pos = CM.factor_positions(f, inverse)
            assert got.tolist() == [[F.pow_(base, int(i)) for i in pair] for pair in pos]


# -- the blocks in amaranth.sim ----------------------------------------------------------------------

#: The multiply/reduce latency per field (hw/arith.py MulReduce, hw/mont_reduce.py).
MUL_LATENCY = {"goldilocks": 12, "babybear": 9, "koalabear": 9}


@pytest.mark.parametrize("field", list(MUL_LATENCY))
def test_point_scale(field):
    """Both sides with random enable stalls, each mode: the multiplied side gives x * f (also for
    non-canonical x of the field's width) exactly the multiplier's latency in enabled cycles after its
    input, the factor given as the multiplier's word (Montgomery form in BabyBear and KoalaBear); the
    other side (both in a plain pass) passes x through in the same cycle."""
    fd = F.get(field)
    dut = PointScale(field=fd)
    rng = random.Random(1)
    top = 1 << fd.width
    values = tuple(edge_values(fd)) + (NONCANONICAL_VALUES if fd.p == F.P else (fd.p, fd.p + 1, top - 1))
    items = [tuple(rng.choice(values) if rng.random() < 0.4 else rng.randrange(top) for _ in range(4))
             + tuple(rng.choice(edge_values(fd)) if rng.random() < 0.3 else rng.randrange(fd.p) for _ in range(2))
             for _ in range(60)]                     # head x0, x1, tail x0, x1, f0, f1 (field values)
    word = general_multiplier(fd).encode
    results = {}

    async def bench(ctx):
        for mode in ((0, 0), (1, 0), (0, 1)):
            ctx.set(dut.scale_in, mode[0]); ctx.set(dut.scale_out, mode[1])
            heads, tails, i = [], [], 0              # (enabled cycle, x0, x1) of every valid output
            for _ in range(3 * len(items) + 60):
                en = rng.random() < 0.7
                ctx.set(dut.en, en)
                live = i < len(items)
                item = items[i] if live else (0,) * 6
                for port, v in zip((dut.i_head_x0, dut.i_head_x1, dut.i_tail_x0, dut.i_tail_x1), item[:4]):
                    ctx.set(port, v)
                ctx.set(dut.i_f0, word(item[4])); ctx.set(dut.i_f1, word(item[5]))
                ctx.set(dut.i_head_valid, live); ctx.set(dut.i_tail_valid, live)
                if en and ctx.get(dut.o_head_valid):
                    heads.append((i, ctx.get(dut.o_head_x0), ctx.get(dut.o_head_x1)))
                if en and ctx.get(dut.o_tail_valid):
                    tails.append((i, ctx.get(dut.o_tail_x0), ctx.get(dut.o_tail_x1)))
                if en:
                    i += 1
                await ctx.tick()
            results[mode] = heads, tails

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    lat = MUL_LATENCY[field]
    for (scale_in, scale_out), (heads, tails) in results.items():
        for side, got, multiplied in (("head", heads, scale_in), ("tail", tails, scale_out)):
            want = []
            for t, (hx0, hx1, tx0, tx1, f0, f1) in enumerate(items):
                x0, x1 = (hx0, hx1) if side == "head" else (tx0, tx1)
                want.append((t + lat, x0 * f0 % fd.p, x1 * f1 % fd.p) if multiplied else (t, x0, x1))
            assert got == want, f"mode in={scale_in} out={scale_out}, {side}"
    assert dut.latency == lat and dut.mul_units == 2


def _run_generator(params, offsets, cases, stall_rate=0.3, seed=0):
    """Drive CosetFactors through ``cases`` (shift, inverse, pass_index, log_n, idle cycles before the
    start); returns per case (cycles from start to ready, the factor pairs of 3 frames of enabled cycles)."""
    dut = CosetFactors(params, offsets)
    rng = random.Random(seed)
    out = []

    async def bench(ctx):
        for g, inverse, pass_index, log_n, idle in cases:
            ctx.set(dut.run.coset_shift, g)
            for _ in range(idle):
                await ctx.tick()
            for port, v in ((dut.start, 1), (dut.run.coset, 1), (dut.run.inverse, inverse),
                            (dut.pass2, pass_index == 2), (dut.run.log_n, log_n)):
                ctx.set(port, v)
            await ctx.tick()
            ctx.set(dut.start, 0)
            waited = 1
            while not ctx.get(dut.ready):
                await ctx.tick()
                waited += 1
            period = 1 << (CM.pass_frame(log_n, pass_index) - 1)
            pairs = []
            while len(pairs) < 3 * period:
                en = rng.random() >= stall_rate
                ctx.set(dut.en, en)
                if en:
                    pairs.append((ctx.get(dut.o_f0), ctx.get(dut.o_f1)))
                await ctx.tick()
            ctx.set(dut.en, 0)
            out.append((waited, pairs))

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    return dut, out


GENERATOR_CASES = [("goldilocks", 4), ("goldilocks", 5), ("babybear", 4), ("koalabear", 5)]


@pytest.mark.parametrize("field, k", GENERATOR_CASES, ids=[f"{f}_k{k}" for f, k in GENERATOR_CASES])
def test_factor_generator(field, k):
    """Every frame size and mode (forward and inverse, both passes), edge and random shifts, with random
    stalls of the stream: the factors of three frames equal hw.model.coset.factor_stream from the right
    position (inverse: offset by the lanes' latency to their output multipliers). ``ready`` comes exactly
    setup_cycles(f) after the start when the chains are there, setup_cycles(f, cached=True) when the
    pass's table set was built for the same (inverse, n) under the same shift (a new shift drops the
    sets), and after the chains when the shift changed just before the start. In BabyBear and KoalaBear
    the factors are Montgomery words (the shift arrives canonical and is encoded by the chain job):
    decoded they are the model's field values."""
    params = BuildParams(lanes=4, log_core=k, channels=4, field=field)
    fd = params.prime_field
    general = general_multiplier(fd)
    offsets = {f: 41 + 3 * f for f in range(2, k + 1)}
    rng = random.Random(k)
    chain = CosetFactors(params, offsets).chain_cycles
    combos = [(0, 1, 5), (0, 2, 2 * k - 1), (1, 1, 2 * k - 1), (1, 2, 2 * k), (1, 2, 2 * k), (0, 1, 2 * k),
              (0, 1, 2 * k), (0, 1, 5)]
    cases, expect_wait = [], []
    for i, g in enumerate(edge_shifts(fd) + (rng.randrange(2, fd.p),)):
        tags = {}                                   # the generator's table sets, as documented
        for j, (inverse, pass_index, log_n) in enumerate(combos):
            idle = chain + 2 if j == 0 and i % 2 else 0
            cases.append((g, inverse, pass_index, log_n, idle))
            cached = tags.get(pass_index) == (inverse, log_n)
            tags[pass_index] = (inverse, log_n)
            expect_wait.append("cold" if j == 0 and not idle else cached)
    dut, out = _run_generator(params, offsets, cases, seed=k)
    for (g, inverse, pass_index, log_n, idle), (waited, pairs), wait in zip(cases, out, expect_wait):
        f = CM.pass_frame(log_n, pass_index)
        what = f"shift {g}, inverse {inverse}, pass {pass_index}, 2^{log_n}"
        assert pairs == dut.model(g, log_n, pass_index, bool(inverse), len(pairs)), what
        # decoded (a * w through the multiplier's model with a = 1), the words are the field's factors
        values = CM.factor_stream(g, log_n, pass_index, inverse, fd)
        if not inverse:
            assert [(general.model(1, a), general.model(1, b)) for a, b in pairs[:len(values)]] == \
                [tuple(map(int, v)) for v in values], what
        if wait == "cold":
            assert dut.setup_cycles(f) < waited <= dut.setup_cycles(f) + chain + 2, what
        else:
            assert waited == dut.setup_cycles(f, cached=wait), f"{what}: ready after {waited}"


# -- the engine on Verilator -------------------------------------------------------------------------

# L4_k4 (channels 2: the same engine RTL, and the build tests/test_engine.py makes) and L2_k5 (odd k).
@pytest.mark.parametrize("lanes, k, channels", [(4, 4, 2), (2, 5, 2)], ids=["L4_k4", "L2_k5"])
def test_engine_coset(lanes, k, channels):
    params = BuildParams(lanes=lanes, log_core=k, channels=channels)
    engine = NttEngine(params)
    run_bench(engine, name="engine", params={"params": params.as_dict()}, test_module="nantucket.sim.benches.coset",
              facts={"coset_extra": [engine.coset_extra_cycles(f) for f in range(2, k + 1)],
                     "coset_extra_cached": [engine.coset_extra_cycles(f, cached=True) for f in range(2, k + 1)],
                     "chain_cycles": engine.coset_factors.chain_cycles})


def test_factor_generator_default_build():
    """The default build (k = 12), whose frames of 2^9 points and up have table levels that end on their
    last issue: every factor of three frames against the model, forward and inverse, both passes, at
    sizes whose frames are 8..12 (a level that ended on its last issue gave that product the next level's
    chain word: every 16th pair wrong from f = 9 on)."""
    params = BuildParams(lanes=16, log_core=12, channels=32)
    offsets = {f: 41 + 3 * f for f in range(2, 13)}
    cases = [(7, 0, 1, 18, 0), (7, 0, 2, 20, 0), (7, 1, 1, 24, 0), (0x1234_5678_9ABC_DEF, 1, 2, 23, 0),
             (0x1234_5678_9ABC_DEF, 0, 1, 16, 0)]
    dut, out = _run_generator(params, offsets, cases, seed=12)
    for (g, inverse, pass_index, log_n, _), (_, pairs) in zip(cases, out):
        assert pairs == dut.model(g, log_n, pass_index, bool(inverse), len(pairs)), (g, inverse, pass_index, log_n)
