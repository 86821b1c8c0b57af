"""hw.control.ControlSlave's start checks (``refused``, ``supported``) against RegisterMap.check_start at
the edges of every size's batch bound (2^j - 1, 2^j, 2^j + 1 for each size n, whose bound bit j sits
anywhere in the batch's bytes) and with chained sizes, in Amaranth's simulator: the default build's
sizes (17 for Goldilocks, 15 for BabyBear) take bounds 2^0 .. 2^16, across three bytes, which the small
builds do not reach. Arguments are written over AXI4-Lite; ``refused`` is read once the checks settled."""

import pytest
from amaranth.sim import Simulator

from nantucket.hw.control import ControlSlave
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams

from axil_master import axil_write

SETTLE = 8          # cycles after a write's response: more than the checks' register stages


def _batches(rmap) -> list[int]:
    """Every size's bound and its neighbours, alone and with a bit of each higher byte, the byte edges,
    0 and the largest word."""
    values = {0, 1, 2, 0xFFFF_FFFF, 1 << 31}
    for n in rmap.supported_log_n:
        top = rmap.max_batch(n)
        values |= {top - 1, top, top + 1, 2 * top} | {top | 1 << b for b in (8, 16, 24, 31) if 1 << b > top}
    values |= {1 << b for b in (7, 8, 15, 16, 23, 24)} | {(1 << b) + 1 for b in (8, 16, 24)}
    return sorted(v for v in values if 0 <= v <= 0xFFFF_FFFF)


def _run(params: BuildParams, trials):
    """trials: (log_n, batch, chain_log_n); returns [(trial, refused, supported)]."""
    dut = ControlSlave(params)
    rmap = dut.register_map
    bus = dut.axil
    seen = []

    async def bench(ctx):
        last = {}
        for trial in trials:
            for name, value in zip(("log_n", "batch", "chain_log_n"), trial):
                if last.get(name) != value:
                    await axil_write(ctx, bus, rmap.arg(name).offset, value)
                    last[name] = value
            await ctx.tick().repeat(SETTLE)
            seen.append((trial, ctx.get(dut.refused), ctx.get(dut.supported)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return rmap, seen


@pytest.mark.parametrize("field", ["goldilocks", "babybear"])
def test_batch_bounds_of_every_size(field):
    params = BuildParams.default_for(field)
    rmap = R.RegisterMap(params)
    sizes = rmap.supported_log_n
    trials = [(n, b, 0) for n in sizes for b in _batches(rmap) if b <= 2 * rmap.max_batch(n) + 1 or b >= 1 << 8]
    # a few unsupported sizes (batch >= 1 only) and chained sizes (the batch within the chain size's bound)
    trials += [(n, b, 0) for n in (0, params.max_log_n + 1, 1 << 16, 1 << 31) for b in (0, 1, 1 << 8, 1 << 16, 1 << 24, 0xFFFF_FFFF)]
    for n in sizes:
        for t in sizes:
            if rmap.lde_pair_ok(n, t) and t != n:
                top = rmap.max_batch(t)
                trials += [(n, b, t) for b in (top, top + 1)]
    rmap, seen = _run(params, trials)
    for (log_n, batch, chain_log_n), refused, supported in seen:
        want = rmap.check_start(log_n, 0, batch, 0, 0, chain_log_n, 0)
        what = f"log_n {log_n} batch {batch:#x} chain_log_n {chain_log_n}"
        assert refused == want, f"{what}: refused {refused:#x}, expected {want:#x}"
        assert supported == int(params.min_log_n <= log_n <= params.max_log_n), what
    # the trials cover both answers of the batch check at every size
    for n in sizes:
        answers = {refused & R.STATUS_BAD_BATCH for (ln, _, c), refused, _ in seen if ln == n and c == 0}
        assert answers == {0, R.STATUS_BAD_BATCH}, n


def _run_bases(params: BuildParams, trials):
    """trials: (log_n, bases) with bases one per hbm_NN; returns [(trial, refused)] (only changed words
    are written, as in ``_run``)."""
    dut = ControlSlave(params)
    rmap = dut.register_map
    bus = dut.axil
    seen = []

    async def bench(ctx):
        last = {}
        for log_n, bases in trials:
            words = {rmap.arg("log_n").offset: log_n}
            for pa, b in zip(rmap.pointer_args, bases):
                words.update(zip(pa.word_offsets, rmap.split_pointer(b)))
            for off, value in words.items():
                if last.get(off) != value:
                    await axil_write(ctx, bus, off, value)
                    last[off] = value
            await ctx.tick().repeat(SETTLE)
            seen.append(((log_n, bases), ctx.get(dut.refused)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return rmap, seen


@pytest.mark.parametrize("field", ["goldilocks", "babybear"])
def test_every_base_misaligned_by_every_low_bit_is_bad_align(field):
    """STATUS.bad_align from the pointer registers: each hbm_NN base in turn off the DMA's longest burst
    (an AXI4 burst must not cross 4 KiB: 8 beats of 32 bytes) by one low bit below it (a random one, and
    bit 0 and the top one for the first and last channel), with random high bits on every base, next to an
    unsupported size (both reasons) and with every base aligned again (accepted); against check_start given
    the bases."""
    import random
    rng = random.Random(1234)
    params = BuildParams.default_for(field)
    rmap = R.RegisterMap(params)
    align, size = rmap.base_align, rmap.supported_log_n[-1]
    assert align % (8 * 32) == 0 and 4096 % align == 0
    good = [rng.getrandbits(64) & ~(align - 1) for _ in range(params.channels)]
    trials = [(size, good)]
    for ch in range(params.channels):
        bits = [rng.randrange(align.bit_length() - 1)]
        if ch in (0, params.channels - 1):
            bits += [0, align.bit_length() - 2]
        for bit in bits:
            bad = list(good)
            bad[ch] |= 1 << bit
            trials.append((size, bad))
        trials.append((size, good))
    trials += [(params.max_log_n + 1, trials[1][1]), (size, [b | align - 1 for b in good]), (size, good)]
    rmap, seen = _run_bases(params, trials)
    for (log_n, bases), refused in seen:
        want = rmap.check_start(log_n, bases=bases)
        assert refused == want, f"log_n {log_n} bases {[hex(b) for b in bases]}: refused {refused:#x}, expected {want:#x}"
    answers = [refused & R.STATUS_BAD_ALIGN for _, refused in seen]
    assert answers.count(0) >= params.channels + 1 and answers.count(R.STATUS_BAD_ALIGN) >= params.channels + 2
