"""The coset factor generator's units (hw/coset/): each unit's model() composes to the generator's model, and
each unit's cycle figures are what its hardware does inside the generator and what the generator's figures
are composed of (amaranth.sim)."""

import random

import pytest
from amaranth.sim import Simulator

from nantucket.hw.coset import CosetFactors
from nantucket.hw.coset.control import PassControl
from nantucket.hw.model import coset as CM
from nantucket.hw.model.params import BuildParams

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

FIELDS = [("goldilocks", 4, 4), ("babybear", 4, 4), ("koalabear", 2, 5), ("goldilocks", 8, 5)]
IDS = [f"{f}_L{lanes}_k{k}" for f, lanes, k in FIELDS]


def _generator(field, lanes, k):
    params = BuildParams(lanes=lanes, log_core=k, channels=4, field=field)
    return params, CosetFactors(params, {f: 41 + 3 * f for f in range(2, k + 1)}, input_offset=2)


def _composed_pairs(dut, params, shift, log_n, pass_index, inverse, cycles, row_step=0, batch=1):
    """The factor pairs from the units' models alone: the chain job's words give the pass base (at the
    pass's chain offset), the table builder its tables (and the step's), the row-step updater each next
    element's, the stream the pairs from the position where the lanes' multipliers are."""
    nmax = params.max_log_n
    f = CM.pass_frame(log_n, pass_index)
    chains = dut.chain_job.model(shift, row_step)
    base = (nmax if inverse else 0) + CM.chain_offset(log_n, pass_index, inverse)
    tables = dut.builder.model(chains[base], f)
    elements = [tables]
    if row_step > 1:
        step = dut.builder.model(chains[2 * nmax + base], f)
        for _ in range(max(batch, 1) - 1):
            elements.append(dut.rows.model(elements[-1], step))
    offset = dut.offset(f, inverse)
    each = CM.element_cycles(params, log_n)
    period = 1 << (f - 1)
    streams = [dut.stream.model(t, f, inverse, period) for t in elements]
    out = []
    for t in range(cycles):
        e = min(len(elements) - 1, max(0, t - offset) // each)
        out.append(streams[e][(t - offset) % period])
    return out


@pytest.mark.parametrize("field, lanes, k", FIELDS, ids=IDS)
def test_unit_models_compose_to_the_generator_model(field, lanes, k):
    """ChainJob.model -> TableBuilder.model -> (RowStepUpdater.model per element) -> FactorStream.model
    equals CosetFactors.model (hw.model.coset.factor_stream of each element's shift) in every streaming
    pass of every size, edge and random shifts and row steps, batches up to 3."""
    params, dut = _generator(field, lanes, k)
    fd = params.prime_field
    rng = random.Random(k)
    for shift in (1, fd.p - 1, 7, rng.randrange(2, fd.p)):
        for row_step in (0, 1, 2, rng.randrange(2, fd.p)):
            for log_n in range(params.min_log_n, params.max_log_n + 1):
                batch = min(3, 1 << (params.max_log_n - log_n))
                for pass_index, inverse in ((1, False), (2, True)):
                    cycles = batch * CM.element_cycles(params, log_n) + 41 + 3 * k
                    want = dut.model(shift, log_n, pass_index, inverse, cycles, row_step=row_step, batch=batch)
                    got = _composed_pairs(dut, params, shift, log_n, pass_index, inverse, cycles, row_step, batch)
                    assert got == want, (shift, row_step, log_n, pass_index)


@pytest.mark.parametrize("field, lanes, k", FIELDS, ids=IDS)
def test_frame_word_model_from_the_chain_words(field, lanes, k):
    """FrameWords.model's round 0 is the set-up's doubling from the chain job's words (K0_0 = c, K0[l + 2^t]
    = K0[l] x b^(2^t), c = 1 forward, 1/N inverse), and each next round of an element is the last times
    b^L (the chain word at log2 L), through the multiplier's model; forward pass 2's words are the rows."""
    params, dut = _generator(field, lanes, k)
    fd, mul, word = params.prime_field, dut.words._b.general.model, dut.words._b.word
    nmax, lb = params.max_log_n, dut.words.levels
    for shift in (7, fd.p - 1):
        chains = dut.chain_job.model(shift)
        for log_n in (params.min_log_n, params.max_log_n):
            for pass_index, inverse in ((1, False), (2, True)):
                f = CM.pass_frame(log_n, pass_index)
                period, first = 1 << (f - 1), dut.offset(f, inverse) - 1
                rounds = (1 << (log_n - f)) // lanes
                got = dut.words.model(shift, log_n, pass_index, inverse, first + rounds * period)
                base = nmax if inverse else 0
                k0 = [word(fd.inv(1 << log_n)) if inverse else word(1)]
                for t in range(lb):
                    k0 += [mul(w, chains[base + t]) for w in k0]
                want = [k0]
                for _ in range(rounds - 1):
                    want.append([mul(w, chains[base + lb]) for w in want[-1]])
                assert [list(got[first + g * period]) for g in range(rounds)] == want, (shift, log_n, pass_index)
            rows = dut.words.model(shift, log_n, 2, False, 1)
            assert list(rows[0]) == list(range(lanes))
        assert dut.words.model(shift, params.min_log_n, 1, True, 4) is None


def _trace(dut, cases, probes):
    """Run ``cases`` (shift, row step, inverse, pass, log_n, batch, idle cycles before the start, cycles
    from the start) with en = ready from the third cycle after the start on (as the engine); returns per
    case the probes' values on every cycle from the one the shift and step are set in (the start's is
    index ``idle``)."""
    out = []

    async def bench(ctx):
        for g, s, inverse, pass_index, log_n, batch, idle, length in cases:
            ctx.set(dut.run.coset_shift, g)
            ctx.set(dut.run.row_step, s)
            rows = []
            for c in range(idle + length):
                if c == idle:
                    for port, v in ((dut.start, 1), (dut.run.coset, 1), (dut.run.inverse, inverse),
                                    (dut.run.batch, batch), (dut.pass2, pass_index == 2), (dut.run.log_n, log_n)):
                        ctx.set(port, v)
                ctx.set(dut.en, c >= idle + 3 and ctx.get(dut.ready))
                rows.append({name: ctx.get(sig) for name, sig in probes.items()})
                await ctx.tick()
                ctx.set(dut.start, 0)
            ctx.set(dut.en, 0)
            out.append(rows)

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    return out


def _rises(rows, name):
    """The cycles where probe ``name`` goes from 0 to 1 (cycle 0 counts when it is 1 there)."""
    return [c for c, r in enumerate(rows) if r[name] and (c == 0 or not rows[c - 1][name])]


def _span(rows, name):
    """How many cycles probe ``name`` is 1."""
    return sum(1 for r in rows if r[name])


@pytest.mark.parametrize("field, lanes, k", FIELDS, ids=IDS)
def test_unit_latencies_compose_to_the_generator_figures(field, lanes, k):
    """Each unit's figure, measured on its own signals inside the generator, and ``ready`` as their
    composition: the chains are there ChainJob.NOTICE + ChainJob.cycles after the shift changes; a
    streaming pass leaves WAIT PassControl.latency cycles after its start (chains there), BUILD lasts
    TableBuilder.build_cycles(f) a table set (its own unless kept, and the step's with a row step), PRIME
    FactorStream.latency cycles, FrameWords.ok rises FrameWords.setup_cycles after the start, and ``ready``
    rises at the later of the two paths, which is CosetFactors.setup_cycles; a row step's update makes the
    next set readable RowStepUpdater.update_cycles after its start (both cycles counted); without a row
    step ``ready`` is then low CosetFactors.frame_word_stall_cycles cycles (FrameWords.job_cycles composed,
    nonzero where rounds are shorter than the job); CosetFactors.latency is the stream's."""
    params, dut = _generator(field, lanes, k)
    ctl = dut.control
    probes = {"ready": dut.ready, "ok": dut.chain_job.chains[0].ok, "same": dut.chain_job.same[0],
              "wait": ctl.states["WAIT"], "build": ctl.states["BUILD"], "prime": ctl.states["PRIME"],
              "words_ok": dut.words.ok, "update": dut.rows.update_start, "next_ready": dut.rows.nxt_ready}
    n_small = params.min_log_n
    n_top = max(n for n in range(params.min_log_n, params.max_log_n + 1) if CM.pass_frame(n, 1) == k)
    settle = dut.chain_job.NOTICE + dut.chain_cycles + 10
    each = CM.element_cycles(params, n_small)
    # (shift, step, inverse, pass, n, batch, idle, cycles): a new shift's chains, the same pass again (its
    # set and words kept), a stepping pass of the smallest size after the step's chains (inverse: the
    # elements' boundaries come after the prime), a new shift's biggest pass, a plain small pass
    cases = [(5, 0, 0, 1, n_top, 1, settle, 400), (5, 0, 0, 1, n_top, 1, 0, 400),
             (5, 3, 1, 2, n_small, 3, settle, 3 * each + 400),
             (9, 0, 0, 1, n_top, 1, settle, 400), (9, 0, 1, 2, n_small, 1, 0, each + 400)]
    runs = _trace(dut, cases, probes)
    assert dut.latency == dut.stream.latency
    # the chains: 5's job for the shift set at cycle 0, after 5's chains were there
    assert _rises([dict(r, both=r["ok"] and r["same"]) for r in runs[3]], "both")[-1] == settle - 10
    stalled = 0
    for j, (rows, (g, s, inverse, pass_index, log_n, batch, idle, _)) in enumerate(zip(runs, cases)):
        what = (g, s, inverse, pass_index, log_n, batch)
        rows = rows[idle:]
        f = CM.pass_frame(log_n, pass_index)
        stepping, cached = s > 1, j == 1
        left_wait = [c for c in range(1, len(rows)) if rows[c - 1]["wait"] and not rows[c]["wait"]][0]
        assert left_wait == PassControl.latency, what
        assert _span(rows, "build") == (int(not cached) + int(stepping)) * dut.builder.build_cycles(f), what
        assert _span(rows, "prime") == dut.stream.latency, what
        words_ok = _rises(rows, "words_ok")[-1]
        assert words_ok == dut.words.setup_cycles(stepping, cached), what
        stream_path = PassControl.latency + _span(rows, "build") + dut.stream.latency
        ready = [c for c in range(3, len(rows)) if rows[c]["ready"]][0]
        assert ready == max(stream_path, words_ok) == dut.setup_cycles(f, cached, stepping), what
        if stepping:
            starts, readies = _rises(rows, "update"), _rises(rows, "next_ready")
            assert len(starts) == len(readies) == batch - 1, what
            assert [r - u + 1 for u, r in zip(starts, readies)] == [dut.rows.update_cycles(f)] * (batch - 1), what
        else:
            low = sum(1 for r in rows[ready:] if not r["ready"])
            assert low == dut.frame_word_stall_cycles(log_n, pass_index, bool(inverse), batch, cached), what
            stalled += low
    # (with two lanes a round's job, L + lat + 2 cycles, is done before each swap of these passes)
    assert stalled > 0 or lanes < 4
