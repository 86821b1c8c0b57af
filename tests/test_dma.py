"""DMA engine: parameter checks, a fast amaranth.sim loopback, the cocotb/Verilator loopback bench
(sim/benches/dma_loopback.py) and the AXI-RAM bench, each over every run size of its builds (N = 2^4 ..
2^16, C = 2 .. 32 channels) and batches of B = 1, 2, 3 transforms, sizes and batches switching without
reset; in Goldilocks (four 64-bit points a beat) and in the 31-bit fields (eight 32-bit words a beat),
random words of the point width with the field's edge words among them."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from nantucket.hw.dma import DmaEngine
from nantucket.hw.model.layout import BEAT_BITS, BEAT_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.hw.model.schedule import loopback_passes, pass_schedule
from nantucket.hw.points import pack_beat, unpack_beat
from nantucket.hw.run import run_bits
from nantucket.sim.benches.dma_loopback import dma_points
from nantucket.sim.hbm import DmaLoopback
from nantucket.hw.flow.runner import run_bench


def test_parameter_errors():
    with pytest.raises(TypeError, match="params"):
        DmaEngine({"lanes": 16})
    with pytest.raises(ValueError, match="fifo_beats"):
        DmaEngine(BuildParams(lanes=4, log_core=4, channels=4), fifo_beats=100)
    with pytest.raises(ValueError, match="write_fifo_beats"):
        DmaEngine(BuildParams(lanes=4, log_core=4, channels=4), write_fifo_beats=64)
    with pytest.raises(ValueError, match="lanes"):
        DmaEngine(BuildParams(lanes=2, log_core=4, channels=4))
    with pytest.raises(TypeError, match="write_bursts"):
        DmaEngine(BuildParams(lanes=4, log_core=4, channels=4), write_bursts=2.0)
    dma = DmaEngine(BuildParams(lanes=4, log_core=4, channels=4))
    assert dma.fifo_points == 512 and dma.payload_width == 512 and dma.transpose_delay == 2
    # a 31-bit field's unit of L 32-bit words fills whole beats of eight from 8 lanes on
    for field in ("babybear", "koalabear"):
        with pytest.raises(ValueError, match=rf"lanes: the HBM layout of {field} needs at least 8 lanes.*got 4"):
            DmaEngine(BuildParams(lanes=4, log_core=4, channels=4, field=field))
    dma = DmaEngine(BuildParams(lanes=8, log_core=4, channels=4, field="babybear"))
    assert dma.fifo_points == 128 * 8 and dma.payload_width == 8 * 2 * 32 and dma.transpose_delay == 4


def test_loopback_passes_keeps_the_words():
    """The loopback model moves point words of any width as they are (uint32 words of a 31-bit field, the
    top bit set too): state and output against the pass schedule, index by index."""
    params = BuildParams(lanes=8, log_core=4, channels=4, field="babybear")
    x = np.random.default_rng(3).integers(0, 2**32, 3 << 6, dtype=np.uint32)
    x[:4] = [0xFFFF_FFFF, 0x8000_0000, params.prime_field.p - 1, 0]
    state, out = loopback_passes(params, x, 6, 3)
    assert state.dtype == out.dtype == np.uint32
    r1, w1 = pass_schedule(params, 1, 6, 3)
    r2, w2 = pass_schedule(params, 2, 6, 3)
    for reads, writes, src, dst in ((r1, w1, x, state), (r2, w2, state, out)):
        for i, j in zip(reads.reshape(-1).tolist(), writes.reshape(-1).tolist()):
            assert dst[j] == src[i]
    assert sorted(out.tolist()) == sorted(x.tolist())


def _sentinel(channel: int, beat: int) -> int:
    return (0x5EED << 240) | (channel << 32) | beat


def _beats(words, field) -> list[int]:
    """Point words of ``field`` (lowest address first) as 256-bit beats."""
    per = BEAT_BITS // field.point_bits
    return [pack_beat(beat, field) for beat in np.asarray(words).reshape(-1, per)]


def _words(beats, field) -> np.ndarray:
    """256-bit beats as the field's point words."""
    return np.array([w for v in beats for w in unpack_beat(v, field)], dtype=field.dtype)

def _backdoor(dut):
    """(write, read) through the loopback's HBM backdoor: ``write(ctx, channel, first beat, words)`` and
    ``read(ctx, channel, beats) -> words``, one beat per DMA cycle."""
    async def write(ctx, c, first, words):
        ctx.set(dut.bd_chan, c)
        ctx.set(dut.bd_we, 1)
        for b, word in enumerate(words, first):
            ctx.set(dut.bd_addr, b)
            ctx.set(dut.bd_wdata, word)
            await ctx.tick("dma")
        ctx.set(dut.bd_we, 0)

    async def read(ctx, c, beats):
        ctx.set(dut.bd_chan, c)
        out = []
        for b in beats:
            ctx.set(dut.bd_addr, b)
            await ctx.tick("dma")
            out.append(ctx.get(dut.bd_rdata))
        return out
    return write, read


def _simulate_with_burst_log(dut, params, tb, issued):
    """Run testbench ``tb`` on the loopback ``dut`` (both clocks) while logging every AR and AW of every
    channel into ``issued[(channel, "ar" | "aw")]`` as (first beat from the buffer base, beats)."""
    async def monitor(ctx):
        ports = [dut.dma.m_axi[c] for c in range(params.channels)]
        sigs = [s for a in ports for s in (a.arvalid, a.arready, a.araddr, a.arlen,
                                            a.awvalid, a.awready, a.awaddr, a.awlen)]
        async for _, _, *vals in ctx.tick("dma").sample(*sigs):
            for c in range(params.channels):
                arv, arr, ara, arl, awv, awr, awa, awl = vals[8 * c:8 * c + 8]
                for kind, fire, addr, length in (("ar", arv and arr, ara, arl), ("aw", awv and awr, awa, awl)):
                    if fire:
                        beat, rest = divmod(addr - dut.buffer_base(c), BEAT_BYTES)
                        assert rest == 0, f"channel {c}: unaligned {kind} address {addr:#x}"
                        issued.setdefault((c, kind), []).append((beat, length + 1))

    sim = Simulator(dut)
    sim.add_clock(1e-6 / params.dma_mhz, domain="dma")
    sim.add_clock(1e-6 / params.ntt_mhz, domain="ntt")
    sim.add_testbench(tb)
    sim.add_process(monitor)
    sim.run()



def _run_pysim(params, runs_wanted, *, refresh, stalls, seed=1):
    """Runs of B transforms of 2^n points for (n, B) in ``runs_wanted``, back to back without reset: the
    state and output against the golden passes; every AXI burst against the host layout of that size and
    batch (so nothing outside the run's B x N/R points per channel is read or written); and, belt and
    braces, guard words just before and after the run's buffers in every channel untouched."""
    dut = DmaLoopback(params, refresh_period=60, refresh_cycles=12, latency=8, seed=seed)
    rng = np.random.default_rng(seed)
    field = params.prime_field
    g = dut.guard_beats
    runs = []                   # (log_n, batch, x, memory after the run, AXI bursts issued)
    issued = {}                 # (channel, "ar" / "aw") -> [(first beat, beats)] in issue order

    write, read = _backdoor(dut)

    def guards(lay):
        return [g - 1, g + lay.beats_per_channel, g + lay.beats_per_channel + 1]

    async def tb(ctx):
        ctx.set(dut.refresh_en, refresh)
        ctx.set(dut.stall_en, stalls)
        ctx.set(dut.loop_stall_en, stalls)
        for log_n, batch in runs_wanted:
            lay = HbmLayout(params, log_n, batch)
            x = dma_points(rng, lay.n_points, field)
            inputs = lay.scatter(x, "input")
            for c in range(params.channels):
                for b in guards(lay):
                    await write(ctx, c, b, [_sentinel(c, b)])
            for c in lay.buffer_channels("input"):
                await write(ctx, c, g, _beats(inputs[c], field))
            issued.clear()
            ctx.set(dut.run.as_value(), run_bits(params, Run.of(log_n, batch=batch)))
            for ps in (1, 2):
                ctx.set(dut.pass_index, ps)
                ctx.set(dut.start, 1)
                await ctx.tick("dma")
                ctx.set(dut.start, 0)
                for _ in range(100_000):
                    await ctx.tick("dma")
                    if ctx.get(dut.done):
                        break
                else:
                    raise AssertionError(f"log_n = {log_n}, B = {batch}: pass {ps} timed out")
            assert all(ctx.get(dut.err[c]) == 0 for c in range(params.channels)), f"log_n = {log_n}, B = {batch}"
            mem = np.zeros((params.channels, lay.points_per_channel), dtype=lay.point_dtype)
            for c in range(params.channels):
                mem[c] = _words(await read(ctx, c, range(g, g + lay.beats_per_channel)), field)
                for b, v in zip(guards(lay), await read(ctx, c, guards(lay))):
                    assert v == _sentinel(c, b), f"log_n = {log_n}, B = {batch}: channel {c} guard beat {b} written"
            runs.append((log_n, batch, x, list(mem), dict(issued)))

    _simulate_with_burst_log(dut, params, tb, issued)
    assert [r[:2] for r in runs] == list(runs_wanted)
    for log_n, batch, x, mem, got_bursts in runs:
        lay = HbmLayout(params, log_n, batch)
        state, out = loopback_passes(params, x, log_n, batch)
        assert np.array_equal(lay.gather(mem, "state"), state), f"log_n = {log_n}, B = {batch}: state"
        assert np.array_equal(lay.gather(mem, "output"), out), f"log_n = {log_n}, B = {batch}: output"
        want = {}
        for ps in (1, 2):
            for kind, direction in (("ar", "read"), ("aw", "write")):
                for c, bursts in lay.bursts(ps, direction).items():
                    want.setdefault((c, kind), []).extend(bursts)
        assert got_bursts == want, f"log_n = {log_n}, B = {batch}"


def _sizes(params, seed=0):
    """(log_n, B): every size of the build, largest first (B = 1), then the rest shuffled with a repeat
    (so runs switch between sizes up and down and repeat one), with batches of 3, 2 and 1 transforms in
    turn, as many as fit the largest size's buffers."""
    rest = list(range(params.min_log_n, params.max_log_n))
    random.Random(seed).shuffle(rest)
    runs = [(params.max_log_n, 1)]
    for i, n in enumerate(rest + rest[:1]):
        b = (3, 2, 1)[i % 3]
        while b << n > 1 << params.max_log_n:
            b -= 1
        runs.append((n, b))
    return runs


@pytest.mark.parametrize("params", [BuildParams(lanes=16, log_core=4, channels=2),
                                    BuildParams(lanes=4, log_core=2, channels=4),
                                    BuildParams(lanes=4, log_core=3, channels=4),
                                    BuildParams(lanes=4, log_core=4, channels=4),
                                    BuildParams(lanes=4, log_core=4, channels=8),
                                    # 31-bit fields: eight 32-bit words a beat, one beat a unit (8 lanes) or
                                    # two (16 lanes)
                                    BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
                                    BuildParams(lanes=16, log_core=4, channels=2, field="babybear"),
                                    pytest.param(BuildParams(lanes=8, log_core=5, channels=2, field="koalabear"),
                                                 marks=pytest.mark.full),
                                    pytest.param(BuildParams(lanes=16, log_core=5, channels=4, field="koalabear"),
                                                 marks=pytest.mark.full),
                                    pytest.param(BuildParams(lanes=8, log_core=5, channels=8),
                                                 marks=pytest.mark.full)], ids=lambda p: p.tag())
def test_loopback_pysim(params):
    """Both passes of runs of every size and batches through the DMA with refresh and stalls: the data
    (random words of the field's point width and its edge words) against the golden passes, every AXI
    address and burst length against the host layout (``HbmLayout.bursts``) of that size and batch,
    nothing outside the run's buffers touched."""
    _run_pysim(params, _sizes(params), refresh=True, stalls=True)


def chained_bursts(params, log_n, log_t, batch):
    """AW bursts per physical channel of a pass 2 of ``batch`` 2^log_n-point runs chained into the input of
    a 2^log_t-point run: the pass schedule's output units (unit A, unit B of each cycle) in order, each
    one burst where ``output_as_input`` puts its first point."""
    lay = HbmLayout(params, log_n, batch)
    _, writes = pass_schedule(params, 2, log_n, batch)
    first = writes.reshape(-1, params.lanes, 2)[:, 0, :].reshape(-1)
    chans, offsets = lay.output_as_input(log_t, first)
    out = {}
    for c, o in zip(chans, offsets):
        out.setdefault(int(c), []).append((int(o) // BEAT_BYTES, lay.unit_beats))
    return out


def zero_extended_bursts(params, log_m, log_n, batch):
    """AR bursts per physical channel of a zero-extended pass 1 (log_m < log_n): one per unit of the
    channel that ``zero_units`` does not mark, in address order."""
    lay = HbmLayout(params, log_n, batch)
    zero = lay.zero_units(log_m)
    return {c: [(r * lay.unit_beats, lay.unit_beats) for r, u in enumerate(units) if not zero[u % zero.size]]
            for c, units in lay.unit_table("input").items()}


def _run_pysim_chain(params, chains, *, seed=2):
    """For (n, t, B) in ``chains``, back to back without reset: both passes of B 2^n-point runs with the
    output chained into the input of 2^t-point runs, then both passes of the 2^t-point runs reading that
    input zero-extended (m = n). Every output point where ``output_as_input`` says and every other word
    of the output channels (up to the 2^t run's buffers and guards) as it was; the zero-extended run's
    state and output are the golden passes of the output padded with zeros, although the zero units hold
    other data (so none of them was read); and every AXI burst of the four passes against the layout."""
    dut = DmaLoopback(params, refresh_period=60, refresh_cycles=12, latency=8, seed=seed)
    rng = np.random.default_rng(seed)
    field = params.prime_field
    per = BEAT_BITS // field.point_bits       # points a beat
    g = dut.guard_beats
    results = []                # (n, t, B, x, even channels before, after the chain, the t run's memory, bursts)
    issued = {}

    write, read = _backdoor(dut)

    async def dump(ctx, lay):
        """The run's buffers (every channel) plus one guard beat either side, as point words."""
        mem = np.zeros((params.channels, lay.points_per_channel + 2 * per), dtype=lay.point_dtype)
        for c in range(params.channels):
            mem[c] = _words(await read(ctx, c, range(g - 1, g + lay.beats_per_channel + 1)), field)
        return mem

    async def run_pass(ctx, ps, log_n, batch, log_m, chain):
        issued.clear()
        ctx.set(dut.pass_index, ps)
        ctx.set(dut.run.as_value(), run_bits(params, Run.of(log_n, batch=batch, input_log_m=log_m, chain_log_n=chain)))
        ctx.set(dut.start, 1)
        await ctx.tick("dma")
        ctx.set(dut.start, 0)
        for _ in range(100_000):
            await ctx.tick("dma")
            if ctx.get(dut.done):
                return dict(issued)
        raise AssertionError(f"{batch} x 2^{log_n} (m = {log_m}, chain = {chain}): pass {ps} timed out")

    async def tb(ctx):
        for s in (dut.refresh_en, dut.stall_en, dut.loop_stall_en):
            ctx.set(s, 1)
        for n, t, batch in chains:
            lay_t = HbmLayout(params, t, batch)
            x = dma_points(rng, batch << n, field)
            inputs = HbmLayout(params, n, batch).scatter(x, "input")
            for c in lay_t.buffer_channels("input"):
                # the n-run's input, then other (non-zero) words up to the t run's buffer end and its guards
                rest = _beats(rng.integers(1, 1 << field.point_bits, per * (lay_t.beats_per_channel + 2)
                                           - inputs[c].size, dtype=field.dtype), field)
                await write(ctx, c, g - 1, rest[:1] + _beats(inputs[c], field) + rest[1:])
            before = await dump(ctx, lay_t)
            # the chain is set through pass 1 and the zero extension through pass 2: each pass ignores the other
            bursts = [await run_pass(ctx, 1, n, batch, 0, t), await run_pass(ctx, 2, n, batch, 0, t)]
            chained = await dump(ctx, lay_t)
            bursts += [await run_pass(ctx, 1, t, batch, n, 0), await run_pass(ctx, 2, t, batch, n, 0)]
            assert all(ctx.get(dut.err[c]) == 0 for c in range(params.channels)), (n, t, batch)
            results.append((n, t, batch, x, before, chained, await dump(ctx, lay_t), bursts))

    _simulate_with_burst_log(dut, params, tb, issued)
    assert [r[:3] for r in results] == list(chains)
    for n, t, batch, x, before, chained, after, bursts in results:
        run = f"{batch} x 2^{n} chained into 2^{t}"
        lay_n, lay_t = HbmLayout(params, n, batch), HbmLayout(params, t, batch)
        _, out = loopback_passes(params, x, n, batch)
        # the chained output: every point where output_as_input says, every other word as it was
        ch, off = lay_n.output_as_input(t)
        pos = off // lay_n.point_bytes + per                 # points from the guard beat before the buffer
        assert np.array_equal(chained[ch, pos], out), f"{run}: output points"
        untouched = np.zeros(chained.shape, dtype=bool)
        untouched[lay_t.buffer_channels("output")] = True      # pass 1 wrote the others (the state)
        untouched[ch, pos] = False
        assert np.array_equal(chained[untouched], before[untouched]), f"{run}: a word not in the output written"
        # the zero units hold data (random non-zero words; zeros only where the input has its edge value 0)
        assert np.count_nonzero(before[untouched] == 0) <= np.count_nonzero(x == 0), "the zero units hold data"
        # the zero-extended run: the golden passes of the output padded with zeros
        x_t = np.zeros((batch, 1 << t), dtype=lay_t.point_dtype)
        x_t[:, :1 << n] = out.reshape(batch, -1)
        state, out_t = loopback_passes(params, x_t.reshape(-1), t, batch)
        inner = list(after[:, per:-per])
        assert np.array_equal(lay_t.gather(inner, "state"), state), f"{run}: the 2^{t} run's state"
        assert np.array_equal(lay_t.gather(inner, "output"), out_t), f"{run}: the 2^{t} run's output"
        want = [{(c, "ar"): b for c, b in lay_n.bursts(1, "read").items()}
                | {(c, "aw"): b for c, b in lay_n.bursts(1, "write").items()},
                {(c, "ar"): b for c, b in lay_n.bursts(2, "read").items()}
                | {(c, "aw"): b for c, b in chained_bursts(params, n, t, batch).items()},
                {(c, "ar"): b for c, b in (zero_extended_bursts(params, n, t, batch) if n < t
                                           else lay_t.bursts(1, "read")).items()}
                | {(c, "aw"): b for c, b in lay_t.bursts(1, "write").items()},
                {(c, "ar"): b for c, b in lay_t.bursts(2, "read").items()}
                | {(c, "aw"): b for c, b in lay_t.bursts(2, "write").items()}]
        for ps, (got, exp) in enumerate(zip(bursts, want), 1):
            assert got == exp, f"{run}: AXI bursts of pass {ps} of 4"


@pytest.mark.parametrize("params, chains", [
    pytest.param(BuildParams(lanes=4, log_core=4, channels=4), [(5, 5, 2), (4, 7, 1), (6, 8, 1), (7, 7, 1), (5, 8, 1)],
                 id="L4_k4_C4"),
    pytest.param(BuildParams(lanes=8, log_core=5, channels=8), [(7, 10, 1), (8, 8, 2), (6, 9, 1)], id="L8_k5_C8",
                 marks=pytest.mark.full),
    pytest.param(BuildParams(lanes=8, log_core=5, channels=2), [(6, 10, 1), (7, 7, 3)], id="L8_k5_C2"),
    pytest.param(BuildParams(lanes=8, log_core=4, channels=4, field="koalabear"), [(6, 8, 1), (7, 7, 2)],
                 id="L8_k4_C4_koalabear"),
    pytest.param(BuildParams(lanes=16, log_core=5, channels=2, field="babybear"), [(8, 10, 1), (9, 9, 1)],
                 id="L16_k5_C2_babybear", marks=pytest.mark.full)])
def test_chain_and_zero_extension_pysim(params, chains):
    """A chained pass 2 and the zero-extended pass 1 that reads its output, with refresh and stalls (see
    :func:`_run_pysim_chain`), pairs where a chained row pair shares a channel and where it does not,
    same size and larger, batches."""
    _run_pysim_chain(params, chains)


# Every size of each build (one Verilator build each): N = 2^4 .. 2^8 with C = 2 (one channel per direction,
# bursts of 4 beats and fewer), 2^8 .. 2^10 with C = 32, 2^8 .. 2^12 with 16 lanes and C = 4 (multi-beat
# units); make test-full adds the same corners larger: 2^8 .. 2^12 with C = 32 and 2^8 .. 2^16 with 16
# lanes. C = 32 uses 4 lanes here: the 16-lane, C = 32 engine takes about 10 minutes to build on 2 cores
# (it passed at N = 2^16, see docs/performance.md), and scripts/bench_dma.py builds and runs it at full size.
# A 31-bit field (eight 32-bit words a beat): 2^6 .. 2^8 with 8 lanes (a unit is one beat); make test-full
# adds 2^8 .. 2^12 with 16 lanes and C = 8 (two beats a unit).
VERILATOR_CASES = [pytest.param(p, id=p.tag(), marks=[pytest.mark.full] if full else [])
                   for p, full in [(BuildParams(lanes=4, log_core=4, channels=2), False),
                                   (BuildParams(lanes=4, log_core=5, channels=32), True),
                                   (BuildParams(lanes=16, log_core=6, channels=4), False),
                                   (BuildParams(lanes=8, log_core=4, channels=4, field="babybear"), False),
                                   (BuildParams(lanes=4, log_core=6, channels=32), True),
                                   (BuildParams(lanes=16, log_core=8, channels=4), True),
                                   (BuildParams(lanes=16, log_core=6, channels=8, field="koalabear"), True)]]


@pytest.mark.parametrize("params", VERILATOR_CASES)
def test_loopback_verilator(params):
    """The loopback bench; on the 16-lane builds and the 31-bit ones also its chained output read back
    zero-extended (test_chain_zero_extension: 16 lanes give multi-beat units, a 31-bit field the other
    point width)."""
    chain = params.lanes == 16 or params.prime_field.point_bits == 32
    tests = ["test_two_passes", "test_backdoor"] + (["test_chain_zero_extension"] if chain else [])
    run_bench(DmaLoopback(params), name="dma_loopback", params=params.as_dict(), testcase=tests,
              test_module="nantucket.sim.benches.dma_loopback")


# L8_k5_C8 (two-beat Goldilocks units, 8 channels) runs in make test-full; make test keeps one build per
# point width (multi-beat units are the 16-lane loopback builds' above).
@pytest.mark.parametrize("params", [BuildParams(lanes=4, log_core=4, channels=4),
                                    pytest.param(BuildParams(lanes=8, log_core=5, channels=8), marks=pytest.mark.full),
                                    BuildParams(lanes=8, log_core=4, channels=4, field="koalabear")],
                         ids=lambda p: p.tag())
def test_dma_against_axiram(params):
    """The same engine against cocotbext-axi's AxiRam (an independent AXI slave model), Goldilocks and a
    31-bit field (eight 32-bit words a beat, the bytes in AxiRam read back as the field's words)."""
    from nantucket.sim.dma_axi_top import DmaAxiTop
    run_bench(DmaAxiTop(params), name="dma_axiram", params=params.as_dict(),
              test_module="nantucket.sim.benches.dma_axiram")


@pytest.mark.parametrize("build", [dict(lanes=4, log_core=2, channels=4), dict(lanes=16, log_core=4, channels=2)],
                         ids=["L4_k2_C4", "L16_k4_C2"])
def test_lint(build):
    """The emitted Verilog is lint clean, also at the corners (one beat per unit, one channel per direction)."""
    from nantucket.hw.flow import catalog
    from nantucket.hw.flow.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("dma", **build), "dma")
