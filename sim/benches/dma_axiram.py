"""cocotb bench: DmaEngine (through sim.dma_axi_top.DmaAxiTop) against cocotbext-axi AxiRam slaves, an
HBM model written by somebody else, with random pauses on every AXI channel and a Python loopback with
random gaps on both stream sides. Transforms of every size of the build back to back (no reset between
them), as batches of 1, 3 and 2 transforms in turn (up to a quarter of the largest size's points), both
passes each; every point checked against the layout model and the pass schedule of that size and batch,
and every byte of every channel outside the run's B regions left as it was. Points are the build's field's
words (64-bit Goldilocks points, or 32-bit words of a 31-bit field, eight a beat), random words of that
width with the field's edge words among them (:func:`sim.benches.dma_loopback.dma_points`)."""

import random

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge, ReadOnly
from cocotbext.axi import AxiBus, AxiRam

from nantucket.hw.model.layout import HbmLayout, lde_pairs
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.hw.model.schedule import loopback_passes
from nantucket.hw.run import run_bits
from nantucket.hw.flow.runner import bench_facts
from nantucket.sim.benches.dma_loopback import dma_points

GUARD = 4096


def pauses(rate, seed):
    rng = random.Random(seed)
    while True:
        yield rng.random() < rate


async def loopback(dut, rate, seed):
    """The NTT engine stand-in: take points_out, give them back on points_in, both sides with gaps.

    Inputs change at the falling edge; after they settle (ReadOnly) the handshakes the next rising
    edge will perform are known (points_in.ready may depend on points_in.valid combinationally)."""
    rng = random.Random(seed)
    queue = []
    in_valid = False
    dut.points_out__ready.value = 0
    dut.points_in__valid.value = 0
    while True:
        await FallingEdge(dut.ntt_clk)
        if not in_valid and queue and rng.random() >= rate:
            in_valid = True
            dut.points_in__payload.value = queue[0]
        dut.points_in__valid.value = int(in_valid)
        ready = len(queue) < 4 and rng.random() >= rate
        dut.points_out__ready.value = int(ready)
        await ReadOnly()
        if ready and int(dut.points_out__valid.value):
            queue.append(int(dut.points_out__payload.value))
        if in_valid and int(dut.points_in__ready.value):
            queue.pop(0)
            in_valid = False


async def setup(dut, stalls):
    """Clocks, reset, an AxiRam per channel (with pauses at rate ``stalls``) and the loopback: (build
    parameters, the RAMs, their size in bytes)."""
    facts = bench_facts()
    p = BuildParams(**facts["params"])
    largest = HbmLayout(p)
    cocotb.start_soon(Clock(dut.dma_clk, p.sim_period_ps("dma"), unit="ps").start())
    cocotb.start_soon(Clock(dut.ntt_clk, p.sim_period_ps("ntt"), unit="ps").start())
    dut.start.value = 0
    dut.pass_index.value = 0
    dut.run.value = run_bits(p, Run(p.max_log_n))
    dut.base.value = sum(GUARD << (64 * c) for c in range(p.channels))
    dut.dma_rst.value = 1
    dut.ntt_rst.value = 1
    size = 2 * GUARD + largest.channel_bytes
    rams = []
    for c in range(p.channels):
        ram = AxiRam(AxiBus.from_prefix(dut, f"m{c:02d}_axi_"), dut.dma_clk, dut.dma_rst, size=size)
        if stalls:
            for i, chan in enumerate((ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                                      ram.read_if.ar_channel, ram.read_if.r_channel)):
                chan.set_pause_generator(pauses(stalls, 10 * c + i))
        rams.append(ram)
    await ClockCycles(dut.dma_clk, 5)
    dut.dma_rst.value = 0
    dut.ntt_rst.value = 0
    cocotb.start_soon(loopback(dut, stalls, 99))
    return p, rams, size


async def run_pass(dut, p, ps, log_n, batch, *, input_log_m=0, chain_log_n=0):
    await FallingEdge(dut.dma_clk)
    dut.run.value = run_bits(p, Run.of(log_n, batch=batch, input_log_m=input_log_m, chain_log_n=chain_log_n))
    dut.pass_index.value = ps
    dut.start.value = 1
    await FallingEdge(dut.dma_clk)
    dut.start.value = 0
    for _ in range(200 * (batch << log_n) // p.points_per_cycle + 5000):
        await RisingEdge(dut.dma_clk)
        if int(dut.done.value):
            return
    raise AssertionError(f"{batch} x 2^{log_n} (m = {input_log_m}, chain = {chain_log_n}): pass {ps} did not finish")


def preload(rams, lay, rng, size):
    """Random bytes over every RAM, then random points in ``lay``'s input placement ``GUARD`` bytes in;
    returns the points and the fill bytes."""
    x = dma_points(rng, lay.n_points, lay.params.prime_field)
    fill = bytes(rng.integers(0, 256, size, dtype=np.uint8))
    bufs = lay.scatter(x, "input")
    for c, ram in enumerate(rams):
        ram.write(0, fill)
        if c in lay.buffer_channels("input"):
            ram.write(GUARD, bufs[c].tobytes())
    return x, fill


@cocotb.test()
async def test_axiram_chain(dut):
    """Both passes of B 2^n-point runs chained into the input of 2^t-point runs, then both passes of those
    reading it zero-extended (m = n), with pauses on every AXI channel: the output exactly where
    ``output_as_input`` says and every other byte of every channel as it was (random bytes, so the zero
    units are not zeros in memory), then the 2^t run's state and output against the golden passes of the
    output padded with zeros."""
    p, rams, size = await setup(dut, 0.3)
    rng = np.random.default_rng(random.getrandbits(32))
    pairs = sorted(lde_pairs(p))
    grow = [q for q in pairs if q[0] < q[1]]
    for n, t, batch in [(*grow[-1], 1), (*grow[len(grow) // 2], 2), (*pairs[0], 3)]:
        while batch > 1 and batch << t > 1 << (p.max_log_n - 1):
            batch -= 1
        lay_n, lay_t = HbmLayout(p, n, batch), HbmLayout(p, t, batch)
        x, _ = preload(rams, lay_n, rng, size)
        before = [bytearray(ram.read(0, size)) for ram in rams]
        for ps in (1, 2):
            await run_pass(dut, p, ps, n, batch, chain_log_n=t)
        _, out = loopback_passes(p, x, n, batch)
        ch, off = lay_n.output_as_input(t)
        word, width = lay_n.point_dtype, lay_n.point_bytes
        for c, ram in enumerate(rams):
            raw = np.frombuffer(ram.read(0, size), dtype=word)
            want = np.frombuffer(before[c], dtype=word).copy()
            if c in lay_n.buffer_channels("output"):
                mine = ch == c
                want[(GUARD + off[mine]) // width] = out[mine]
                assert np.array_equal(raw, want), f"{batch} x 2^{n} -> 2^{t}: channel {c} not as output_as_input says"
            else:        # the state: pass 1 wrote it, nothing else around it
                end = GUARD + lay_n.channel_bytes
                assert raw[:GUARD // width].tobytes() == before[c][:GUARD] and raw[end // width:].tobytes() == before[c][end:]
        for ps in (1, 2):
            await run_pass(dut, p, ps, t, batch, input_log_m=n)
        x_t = np.zeros((batch, 1 << t), dtype=lay_t.point_dtype)
        x_t[:, :1 << n] = out.reshape(batch, -1)
        state, out_t = loopback_passes(p, x_t.reshape(-1), t, batch)
        inner = [np.frombuffer(ram.read(GUARD, lay_t.channel_bytes), dtype=lay_t.point_dtype) for ram in rams]
        assert np.array_equal(lay_t.gather(inner, "state"), state), f"{batch} x 2^{n} -> 2^{t}: state"
        assert np.array_equal(lay_t.gather(inner, "output"), out_t), f"{batch} x 2^{n} -> 2^{t}: output"
        dut._log.info(f"{batch} x 2^{n} chained into 2^{t} and read back zero-extended: right")


@cocotb.test()
@cocotb.parametrize(stalls=[0.0, 0.3])
async def test_axiram(dut, stalls):
    p, rams, size = await setup(dut, stalls)
    rng = np.random.default_rng(random.getrandbits(32))
    rest = list(range(p.min_log_n, p.max_log_n))
    random.shuffle(rest)
    for i, log_n in enumerate([p.max_log_n] + rest + rest[:1]):
        batch = (1, 3, 2)[i % 3]
        while batch > 1 and batch << log_n > 1 << (p.max_log_n - 2):    # batches on the cheap sizes
            batch -= 1
        lay = HbmLayout(p, log_n, batch)
        x, fill = preload(rams, lay, rng, size)
        dut.run.value = run_bits(p, Run.of(log_n, batch=batch))
        for ps in (1, 2):
            await FallingEdge(dut.dma_clk)
            dut.pass_index.value = ps
            dut.start.value = 1
            await FallingEdge(dut.dma_clk)
            dut.start.value = 0
            for _ in range(200 * lay.n_points // p.points_per_cycle + 5000):
                await RisingEdge(dut.dma_clk)
                if int(dut.done.value):
                    break
            else:
                state = {n: int(getattr(dut, n).value) for n in ("busy", "points_out__valid", "points_out__ready",
                                                                 "points_in__valid", "points_in__ready")}
                for c in range(p.channels):
                    state[c] = {n: int(getattr(dut, f"m{c:02d}_axi__{n}").value) for n in (
                        "awvalid", "awready", "wvalid", "wready", "bvalid", "bready", "arvalid", "arready", "rvalid")}
                raise AssertionError(f"{batch} x 2^{log_n}: pass {ps} did not finish: {state}")

        state, out = loopback_passes(p, x, log_n, batch)
        inner = []
        end = GUARD + lay.channel_bytes
        for c, ram in enumerate(rams):
            raw = ram.read(0, size)
            assert raw[:GUARD] == fill[:GUARD], f"{batch} x 2^{log_n}: channel {c} written before its buffer"
            assert raw[end:] == fill[end:], f"{batch} x 2^{log_n}: channel {c} written after its buffer"
            inner.append(np.frombuffer(raw[GUARD:end], dtype=lay.point_dtype))
        assert np.array_equal(lay.gather(inner, "state"), state), f"{batch} x 2^{log_n}: state"
        assert np.array_equal(lay.gather(inner, "output"), out), f"{batch} x 2^{log_n}: output"
        dut._log.info(f"{batch} x 2^{log_n} points: both passes right, nothing outside the buffers written")
