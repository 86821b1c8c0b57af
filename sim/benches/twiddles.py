"""cocotb bench for hw.twiddles.TwiddleGenerator against hw.model.twiddles.lane_twiddles.

A run is a list of starts, each (pass, log_n, rounds, extra[, inverse, batch]): ``start`` with ``pass2``,
``log_frame`` = the pass's frame size f (n1 in pass 1, n2 in pass 2, :meth:`BuildParams.pass_log_sizes`)
and the run's ``log_n`` and ``inverse`` (the other fields random), then ``rounds`` whole frames of 2^(f-1) input cycles
(up to ``batch`` x the rounds of one transform: the columns wrap at each element) and ``extra`` cycles
of one more frame, abandoned by the next start (which must rewind). Starts follow each other without reset, switching pass and frame size, with random
input gaps and enable stalls; every output word is checked, and every output must appear exactly
``latency`` enabled cycles after its input cycle.

Words are the build's field's (``params.prime_field``), those of general stages as its general multiplier
takes them (its ``encode``, hw/multiplier.py). Facts: ``runs`` (optional list of [pass, log_n, rounds, extra]); by default every native log_n of the
build, both passes, all rounds (at most ``max_rounds`` if given), plus some abandoned starts, shuffled;
about half of them inverse and batches of 1 to 3 transforms.
"""

import random

import cocotb
from cocotb.triggers import FallingEdge

import numpy as np

from nantucket.hw.model import lane as LM
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.twiddles import lane_twiddles as model_twiddles
from nantucket.hw.run import run_layout
from nantucket.hw.multiplier import general_multiplier
from nantucket.hw.twiddles import stream_word_bits
from nantucket.sim.benches.lib import PATTERNS, pattern, reset, start_clock
from nantucket.hw.flow.runner import bench_facts


def _split(value: int, lanes: int, bits: int = 64) -> list[int]:
    return [(value >> (bits * i)) & ((1 << bits) - 1) for i in range(lanes)]


def lane_twiddles(params: BuildParams, pass_index: int, round_: int, lane: int, **kwargs) -> np.ndarray:
    """The model's words (hw.model.twiddles.lane_twiddles), those of general stages (field values: not a
    shift stage's, not the free slot) as the field's general multiplier takes them (the identity in
    Goldilocks)."""
    words = model_twiddles(params, pass_index, round_, lane, **kwargs).copy()
    field, k = params.prime_field, params.log_core
    f = words.shape[0].bit_length()                  # 2^(f-1) cycles
    _, stage = LM.twiddle_plan(f)
    phys = np.asarray(LM.physical_stages(k, f) + (-1,))[stage]
    general = (stage >= 0) & (phys < LM.shift_stages(k, field))
    unit = general_multiplier(field)
    words[general] = [unit.encode(int(w)) for w in words[general]]
    return words


def _random_run(params: BuildParams, rng: random.Random, **fields) -> int:
    """The value of a run (hw.run.run_layout) with ``fields`` and every other field random."""
    layout = run_layout(params)
    value = rng.getrandbits(layout.size)
    for name, field in layout:
        if name in fields:
            value &= ~(((1 << field.width) - 1) << field.offset)
            value |= int(fields[name]) << field.offset
    return value


def _default_runs(params: BuildParams, frame_sizes: list[int], max_rounds: int | None, rng: random.Random) -> list:
    """Every log_n whose frames the generator honours, both passes, all rounds (at most ``max_rounds``);
    and for about a third of them one more start abandoned in the middle of a frame; shuffled. Each
    start inverse or not and a batch of 1..3 at random."""
    runs = []
    for log_n in range(params.min_log_n, params.max_log_n + 1):
        frames = params.pass_log_sizes(log_n)
        if not set(frames) <= set(frame_sizes):
            continue
        for pass_index in (1, 2):
            inverse, batch = rng.getrandbits(1), rng.randrange(1, 4)
            rounds = batch * (1 << frames[2 - pass_index]) // params.lanes
            rounds = min(rounds, max_rounds or rounds)
            runs.append([pass_index, log_n, rounds, 0, inverse, batch])
            if rng.random() < 0.35:
                runs.append([pass_index, log_n, rng.randrange(rounds),
                             rng.randrange(1, 1 << (frames[pass_index - 1] - 1)), 1 - inverse, batch])
    rng.shuffle(runs)
    return runs


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_all_sizes(dut, idle, stall):
    await _starts(dut, idle, stall)


@cocotb.test()
async def test_reset_state(dut):
    """Without any start after reset the generator runs pass 1 in frames of 2^k, as it did before it
    had ``log_frame`` (no engine relies on that, but the reset values must not be an arbitrary frame)."""
    facts = bench_facts()
    params = BuildParams(**facts["params"]["params"])
    lanes, k, latency = params.lanes, params.log_core, facts["props"]["latency"]
    bits = stream_word_bits(params.prime_field)
    cycles, rounds = 1 << (k - 1), min(2, (1 << k) // lanes)
    start_clock(dut.clk)
    dut.en.value = 1
    dut.i_valid.value = 0
    dut.start.value = 0
    dut.log_frame.value = 2                              # ignored: only a start latches it
    dut.run.value = _random_run(params, random.Random(3), log_n=params.min_log_n)
    await reset(dut.clk, dut.rst)
    dut.i_valid.value = 1
    got = []
    for edge in range(rounds * cycles + latency):
        await FallingEdge(dut.clk)
        if edge == rounds * cycles - 1:
            dut.i_valid.value = 0
        if int(dut.o_valid.value):
            got.append((int(dut.o_w_first.value), int(dut.o_w_rest.value)))
    assert len(got) == rounds * cycles
    for g in range(rounds):
        for lane in range(lanes):
            want = lane_twiddles(params, 1, g, lane)
            for t in range(cycles):
                first, rest = got[g * cycles + t]
                assert (_split(first, lanes, bits)[lane], _split(rest, lanes, bits)[lane]) == tuple(map(int, want[t])), \
                    f"round {g} lane {lane} cycle {t}"


@cocotb.test()
async def test_random_stalls(dut):
    """One crossing only, for the large configurations."""
    await _starts(dut, "random", "random")


async def _starts(dut, idle, stall):
    facts = bench_facts()
    params = BuildParams(**facts["params"]["params"])
    props = facts["props"]
    latency = props["latency"]
    lanes = params.lanes
    bits = stream_word_bits(params.prime_field)
    rng = random.Random(f"{idle}/{stall}")
    runs = facts.get("runs") or _default_runs(params, props["frame_sizes"], facts.get("max_rounds"), rng)
    start_clock(dut.clk)
    dut.en.value = 0
    dut.i_valid.value = 0
    dut.start.value = 0
    await reset(dut.clk, dut.rst)
    idle_it, stall_it = pattern(idle, seed=1), pattern(stall, seed=2)
    for run in runs:
        pass_index, log_n, rounds, extra, inverse, batch = list(run) + [0, 1][len(run) - 4:]
        f = params.pass_log_sizes(log_n)[pass_index - 1]
        cycles = 1 << (f - 1)
        dut.start.value = 1
        dut.pass2.value = int(pass_index == 2)
        dut.log_frame.value = f
        dut.run.value = _random_run(params, rng, log_n=log_n, inverse=inverse)
        await FallingEdge(dut.clk)
        dut.start.value = 0
        # latched on start: changes after it are ignored
        dut.pass2.value = rng.getrandbits(1)
        dut.log_frame.value = rng.randrange(f + 1)
        dut.run.value = _random_run(params, rng, log_n=rng.randrange(params.max_log_n + 1))
        total = rounds * cycles + extra
        sent_at, got, edge = [], [], 0
        while len(got) < total:
            en = not next(stall_it)
            if en and int(dut.o_valid.value):
                got.append((int(dut.o_w_first.value), int(dut.o_w_rest.value)))
                assert edge + 1 - sent_at[len(got) - 1] == latency, "output not `latency` enabled cycles after input"
            valid = en and len(sent_at) < total and not next(idle_it)
            dut.en.value = int(en)
            dut.i_valid.value = int(valid)
            if en:
                edge += 1
            if valid:
                sent_at.append(edge)
            await FallingEdge(dut.clk)
            assert edge < 50 * total + 1000, "timeout"
        dut.en.value = 0
        where = f"pass {pass_index} log_n {log_n} (f = {f}) inverse {inverse} batch {batch}"
        for g in range(-(-total // cycles)):
            for lane in range(lanes):
                want = lane_twiddles(params, pass_index, g, lane, log_n=log_n,
                                     inverse=bool(inverse), batch=batch)
                for t in range(min(cycles, total - g * cycles)):
                    first, rest = got[g * cycles + t]
                    assert (_split(first, lanes, bits)[lane], _split(rest, lanes, bits)[lane]) == tuple(map(int, want[t])), \
                        f"{where} round {g} lane {lane} cycle {t}"
