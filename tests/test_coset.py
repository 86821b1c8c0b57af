"""Coset transforms: the factor model against the golden model, the factor generator (streams and frame
words) in amaranth.sim, and the engine on Verilator (sim/benches/coset.py)."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from nantucket.hw.coset import CosetFactors
from nantucket.hw.engine import NttEngine
from nantucket.hw.model import coset as CM, field as F
from nantucket.hw.model.ntt import transform, transform_naive
from nantucket.hw.model.params import BuildParams
from nantucket.hw.multiplier import general_multiplier
from nantucket.sim.benches.coset import coset_facts
from nantucket.sim.benches.lib import EDGE_VALUES
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


def _run_generator(params, offsets, cases, stall_rate=0.3, seed=0):
    """Drive CosetFactors through ``cases`` (shift, inverse, pass_index, log_n, idle cycles before the
    start); returns per case (cycles from start to ready, the factor pairs and frame words of 3 frames of
    enabled cycles). As in the engine (PREFILL), no enabled cycle comes in the two cycles after the start."""
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
            await ctx.tick().repeat(2)
            waited = 3
            while not ctx.get(dut.ready):
                await ctx.tick()
                waited += 1
            period = 1 << (CM.pass_frame(log_n, pass_index) - 1)
            pairs, words = [], []
            while len(pairs) < 3 * period:
                en = rng.random() >= stall_rate and ctx.get(dut.ready)
                ctx.set(dut.en, en)
                if en:
                    pairs.append((ctx.get(dut.o_f0), ctx.get(dut.o_f1)))
                    words.append(tuple(ctx.get(w) for w in dut.o_k))
                await ctx.tick()
            ctx.set(dut.en, 0)
            out.append((waited, pairs, words))

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    return dut, out


GENERATOR_CASES = [("goldilocks", 4), ("goldilocks", 5), ("babybear", 4), ("koalabear", 5)]


@pytest.mark.parametrize("field, k", GENERATOR_CASES, ids=[f"{f}_k{k}" for f, k in GENERATOR_CASES])
def test_factor_generator(field, k):
    """Every frame size and mode (forward and inverse, both passes), edge and random shifts, with random
    stalls: in the streaming passes (forward pass 1, inverse pass 2) the factors of three frames equal
    hw.model.coset.factor_stream from the right position (offset by the lanes' input register forward,
    their latency to the output scale inverse), and in every pass the frame words equal
    hw.model.coset.frame_words round by round (CosetFactors.frame_word_model; forward pass 2: the rows).
    ``ready`` comes exactly setup_cycles(f) after the start of a streaming pass when the chains are
    there, setup_cycles(f, cached=True) when its table set was built for the same n under the same shift
    (a new shift drops the sets) and the last streaming pass's frame words were the same (a set kept from
    an earlier pass: ``words_cached``=False), and after the chains when the shift changed just before the start; at
    once (when the enabled cycles may start, two cycles after the start) in the other passes. In BabyBear and KoalaBear the factors and words are
    Montgomery words (the shift arrives canonical and is encoded by the chain job): decoded they are the
    model's field values."""
    params = BuildParams(lanes=4, log_core=k, channels=4, field=field)
    fd = params.prime_field
    general = general_multiplier(fd)
    offsets = {f: 41 + 3 * f for f in range(2, k + 1)}
    rng = random.Random(k)
    chain = CosetFactors(params, offsets).chain_cycles
    combos = [(0, 1, 5), (0, 2, 2 * k - 1), (1, 1, 2 * k - 1), (1, 2, 2 * k), (1, 2, 2 * k), (0, 1, 2 * k),
              (0, 1, 2 * k), (0, 1, 5)]
    combos = [(0, 1, 5), (1, 2, 2 * k - 1), (0, 2, 2 * k - 1), (1, 1, 2 * k - 1), (1, 2, 2 * k), (1, 2, 2 * k),
              (0, 1, 2 * k), (0, 1, 2 * k), (0, 1, 5), (0, 2, 5)]
    cases, expect_wait = [], []
    for i, g in enumerate(edge_shifts(fd) + (rng.randrange(2, fd.p),)):
        tags = {}                                   # the generator's table sets, as documented
        for j, (inverse, pass_index, log_n) in enumerate(combos):
            idle = chain + 2 if j == 0 and i % 2 else 0
            cases.append((g, inverse, pass_index, log_n, idle))
            if not CM.streams(pass_index, bool(inverse)):
                expect_wait.append(None)
                continue
            cached = tags.get(inverse) == log_n
            words_cached = tags.get("words") == (inverse, log_n)          # the last streaming pass's
            tags[inverse], tags["words"] = log_n, (inverse, log_n)
            expect_wait.append("cold" if not tags.get("warm") and not idle else (cached, words_cached))
            tags["warm"] = True
    dut, out = _run_generator(params, offsets, cases, seed=k)
    for (g, inverse, pass_index, log_n, idle), (waited, pairs, words), wait in zip(cases, out, expect_wait):
        f = CM.pass_frame(log_n, pass_index)
        what = f"shift {g}, inverse {inverse}, pass {pass_index}, 2^{log_n}"
        want_words = dut.frame_word_model(g, log_n, pass_index, bool(inverse), len(words))
        assert want_words is None or words == want_words, what
        if wait is None:                            # no stream: ready at once
            assert waited == 3, what
            continue
        assert pairs == dut.model(g, log_n, pass_index, bool(inverse), len(pairs)), what
        # decoded (a * w through the multiplier's model with a = 1), the words are the field's factors
        values = CM.factor_stream(g, log_n, pass_index, inverse, fd)
        period = values.shape[0]
        first = dut.offset(f, bool(inverse))
        assert [(general.model(1, a), general.model(1, b)) for a, b in pairs] == \
            [tuple(map(int, values[(t - first) % period])) for t in range(len(pairs))], what
        kw = CM.frame_words(params, g, log_n, pass_index, bool(inverse))
        assert [general.model(1, w) for w in words[0]] == list(kw[0]), what
        if wait == "cold":
            assert dut.setup_cycles(f) < waited <= dut.setup_cycles(f) + chain + 2, what
        else:
            assert waited == dut.setup_cycles(f, cached=wait[0], words_cached=wait[1]), f"{what}: ready after {waited}"


# -- the engine on Verilator -------------------------------------------------------------------------

# L4_k4 (channels 2: the same engine RTL, and the build tests/test_engine.py makes) and L2_k5 (odd k).
@pytest.mark.parametrize("lanes, k, channels", [(4, 4, 2), (2, 5, 2)], ids=["L4_k4", "L2_k5"])
def test_engine_coset(lanes, k, channels):
    params = BuildParams(lanes=lanes, log_core=k, channels=channels)
    engine = NttEngine(params)
    run_bench(engine, name="engine", params={"params": params.as_dict()}, test_module="nantucket.sim.benches.coset",
              facts=coset_facts(engine))


def test_factor_generator_default_build():
    """The default build (k = 12, 16 lanes), whose frames of 2^9 points and up have table levels that end
    on their last issue: every factor and frame word of three frames against the model, forward and
    inverse, both passes, at sizes whose frames are 8..12 (a level that ended on its last issue gave that
    product the next level's chain word: every 16th pair wrong from f = 9 on)."""
    params = BuildParams(lanes=16, log_core=12, channels=32)
    offsets = {f: 41 + 3 * f for f in range(2, 13)}
    cases = [(7, 0, 1, 18, 0), (7, 0, 2, 20, 0), (7, 1, 1, 24, 0), (7, 0, 1, 8, 0), (7, 0, 1, 8, 0),
             (0x1234_5678_9ABC_DEF, 1, 2, 23, 0), (0x1234_5678_9ABC_DEF, 0, 1, 16, 0),
             (0x1234_5678_9ABC_DEF, 0, 1, 24, 0)]
    dut, out = _run_generator(params, offsets, cases, seed=12)
    kept, shifts = set(), set()
    for (g, inverse, pass_index, log_n, _), (waited, pairs, words) in zip(cases, out):
        what = (g, inverse, pass_index, log_n)
        if g in shifts and CM.streams(pass_index, bool(inverse)):     # a new shift waits for its chains
            # at L = 16 the frame words' set-up (66 cycles) is the longer one up to f = 8 or so
            f = CM.pass_frame(log_n, pass_index)
            assert waited == dut.setup_cycles(f, cached=(g, inverse, log_n) in kept), (what, waited)
            kept.add((g, inverse, log_n))
        shifts.add(g)
        want_words = dut.frame_word_model(g, log_n, pass_index, bool(inverse), len(words))
        assert want_words is None or words == want_words, what
        if CM.streams(pass_index, bool(inverse)):
            assert pairs == dut.model(g, log_n, pass_index, bool(inverse), len(pairs)), what


# -- row steps (the run's row_step: element r has the shift g x s^r) ----------------------------------

def test_row_step_model_is_the_per_row_definition():
    """coset_passes with a row step, every size and direction of a small build, against the golden
    transform of each element with its own shift g s^r (computed here by pow); the element table update
    (step_tables) against the tables of the next element's base."""
    for field in ("goldilocks", "babybear"):
        params = BuildParams(lanes=4, log_core=4, channels=4, field=field)
        fd = params.prime_field
        rng = np.random.default_rng(3)
        g, s = random.Random(field).randrange(2, fd.p), random.Random(3).randrange(2, fd.p)
        for n in range(params.min_log_n, params.max_log_n + 1):
            batch = min(3, 1 << (params.max_log_n - n))
            x = rng.integers(0, fd.p, (batch, 1 << n), dtype=np.uint64)
            for inverse in (False, True):
                _, out = CM.coset_passes(params, x.reshape(-1), g, n, inverse, batch, row_step=s)
                for r in range(batch):
                    shift = g * pow(s, r, fd.p) % fd.p
                    assert np.array_equal(out.reshape(batch, -1)[r], transform(x[r], inverse=inverse, coset=shift,
                                                                               field=fd)), (field, n, inverse, r)
                for pass_index in (1, 2):
                    f = CM.pass_frame(n, pass_index)
                    cur = CM.factor_tables(CM.pass_base(g, n, pass_index, inverse, fd), f, fd)
                    step = CM.factor_tables(CM.pass_base(s, n, pass_index, inverse, fd), f, fd)
                    nxt = CM.factor_tables(CM.pass_base(g * s % fd.p, n, pass_index, inverse, fd), f, fd)
                    assert CM.step_tables(cur, step, fd) == nxt


def _run_stepping(params, offsets, cases, stall_rate=0.3, seed=0):
    """Drive CosetFactors through ``cases`` (shift, row step, inverse, pass, log_n, batch) with random
    stalls; returns per case the factor pairs and frame words of every element's cycles (from the
    multipliers' offset on) and the cycles ``ready`` was low after the stream had started."""
    dut = CosetFactors(params, offsets)
    rng = random.Random(seed)
    out = []

    async def bench(ctx):
        for g, s, inverse, pass_index, log_n, batch in cases:
            ctx.set(dut.run.coset_shift, g)
            ctx.set(dut.run.row_step, s)
            for port, v in ((dut.start, 1), (dut.run.coset, 1), (dut.run.inverse, inverse), (dut.run.batch, batch),
                            (dut.pass2, pass_index == 2), (dut.run.log_n, log_n)):
                ctx.set(port, v)
            await ctx.tick()
            ctx.set(dut.start, 0)
            await ctx.tick().repeat(2)
            offset = dut.offset(CM.pass_frame(log_n, pass_index), bool(inverse))
            total = batch * CM.element_cycles(params, log_n) + offset
            pairs, words, low, started = [], [], 0, False
            while len(pairs) < total:
                en = rng.random() >= stall_rate
                if not ctx.get(dut.ready):
                    en, low = False, low + started
                else:
                    started = True
                ctx.set(dut.en, en)
                if en:
                    pairs.append((ctx.get(dut.o_f0), ctx.get(dut.o_f1)))
                    words.append(tuple(ctx.get(w) for w in dut.o_k))
                await ctx.tick()
            ctx.set(dut.en, 0)
            out.append((pairs, words, low))

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    return dut, out


STEP_CASES = [("goldilocks", 4), ("babybear", 4), ("koalabear", 5)]


@pytest.mark.parametrize("field, k", STEP_CASES, ids=[f"{f}_k{k}" for f, k in STEP_CASES])
def test_factor_generator_row_steps(field, k):
    """Row steps in the factor generator, every field: edge and random steps (2, p - 1, 2^32, random) and
    shifts, forward and inverse, both passes, the smallest size (elements shorter than the table update:
    ``ready`` falls at the boundaries) and larger ones, batches of 3, random stalls; every factor of every
    element of a streaming pass equals the stream of g s^r (CosetFactors.model, from
    hw.model.coset.factor_stream), decoded the field's values, and every frame word that of
    hw.model.coset.frame_words (element r: g s^r's). A row step of 0 or 1 is a plain coset batch. Without
    other stalls than the bench's, ``ready`` is never low in an element longer than the update whose
    rounds are longer than the frame words' job."""
    params = BuildParams(lanes=4, log_core=k, channels=4, field=field)
    fd = params.prime_field
    general = general_multiplier(fd)
    offsets = {f: 41 + 3 * f for f in range(2, k + 1)}
    rng = random.Random(k)
    steps = [s for s in (2, fd.p - 1, 2**32, rng.randrange(2, fd.p)) if s < fd.p]
    cases = []
    for i, s in enumerate(steps):
        g = edge_shifts(fd)[i % len(edge_shifts(fd))]
        for inverse, pass_index, log_n in ((0, 1, params.min_log_n), (1, 2, params.min_log_n), (0, 1, 2 * k - 2),
                                          (1, 2, 2 * k - 2), (0, 2, 2 * k - 2), (1, 1, params.min_log_n)):
            cases.append((g, s, inverse, pass_index, log_n, min(3, 1 << (params.max_log_n - log_n))))
    cases += [(7, 1, 0, 1, 2 * k - 2, 2), (7, 0, 1, 2, 2 * k - 2, 2)]
    dut, out = _run_stepping(params, offsets, cases, seed=k)
    for (g, s, inverse, pass_index, log_n, batch), (pairs, words, low) in zip(cases, out):
        what = f"shift {g}, step {s}, inverse {inverse}, pass {pass_index}, 2^{log_n} x {batch}"
        want_words = dut.frame_word_model(g, log_n, pass_index, bool(inverse), len(words), row_step=s, batch=batch)
        assert want_words is None or words == want_words, what
        if not CM.streams(pass_index, bool(inverse)):
            continue
        assert pairs == dut.model(g, log_n, pass_index, bool(inverse), len(pairs), row_step=s, batch=batch), what
        each = CM.element_cycles(params, log_n)
        f = CM.pass_frame(log_n, pass_index)
        offset = dut.offset(f, bool(inverse))
        for r in range(batch if s > 1 else 1):      # decoded, element by element, against pow()
            shift = g * pow(s, r, fd.p) % fd.p if s > 1 else g
            values = CM.factor_stream(shift, log_n, pass_index, bool(inverse), fd)
            period = values.shape[0]
            for t in range(offset + r * each, offset + (r + 1) * each):
                want = tuple(map(int, values[(t - offset) % period]))
                assert tuple(general.model(1, w) for w in pairs[t]) == want, f"{what}: element {r}, cycle {t}"
        if dut.update_cycles(f) <= each and dut.frame_word_job_cycles(True, True) <= 1 << (f - 1):
            assert low == 0, what


def test_run_row_step_checks():
    """Run: row_step 0 and 1 are no step; another value needs the coset flag and s < p (bad_shift), also
    in a 31-bit field; its words round-trip; element_shifts is g s^r."""
    from nantucket.hw.model.run import FLAG_COSET, STATUS_BAD_SHIFT, Run
    for field in ("goldilocks", "babybear"):
        params = BuildParams(lanes=4, log_core=4, channels=4, field=field)
        p = params.prime_field.p
        for s in (0, 1):
            assert Run(8, 0, 1, 0, row_step=s).check(params) == 0
        assert Run(8, 0, 1, 0, row_step=2).check(params) == STATUS_BAD_SHIFT
        assert Run(6, FLAG_COSET, 2, 7, row_step=p - 1).check(params) == 0
        assert Run(6, FLAG_COSET, 2, 7, row_step=p).check(params) == STATUS_BAD_SHIFT
        run = Run.of(6, coset=5, batch=4, row_step=3)
        assert Run.from_words(run.words()) == run
        assert run.element_shifts(p) == [5 * pow(3, r, p) % p for r in range(4)]
    with pytest.raises(ValueError, match="row_step"):
        Run(8, row_step=1 << 64)


@pytest.mark.parametrize("field", ["goldilocks", "babybear"])
def test_lint(field):
    """The generator on its own (its units' modules) passes verilator --lint-only. Amaranth's backend
    emits `case` statements without `default` for signals assigned only in some states after their
    default value: complete logic that Verilator still reports as CASEINCOMPLETE (waived, as for the
    engine and the kernel in tests/test_kernel_rtl.py)."""
    from nantucket.hw.flow import catalog
    from nantucket.hw.flow.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("coset", lanes=4, log_core=4, channels=4, field=field), "coset",
                 waive=("CASEINCOMPLETE",))
