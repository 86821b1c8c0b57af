# amaranth: UnusedElaboratable=no
"""The lane (hw/lane.py) and its reorders (hw/reorder.py).

Fast part (amaranth.sim): the control and reorder logic with a behavioural butterfly that exists only
here (exact modular arithmetic in a few registers, any latency), so reorders, commutators, twiddle replay
and the corner-turn twiddle table are checked at every k from 2 to 9 in seconds.
Bench part (cocotb on Verilator): the real lane with hw.butterfly.Butterfly, sim/bench_lane.py.
Some lanes here are built only to read their properties (first line: no unused-component warnings).
"""

import random

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.lane import HalfChain, Lane
from hw.model import lane as LM
from hw.model.field import P
from hw.reorder import FrameReorder, bit_sources


class BehaviouralButterfly(wiring.Component):
    """Test stand-in: (x0 + x1, (x0 - x1) * w) mod p after ``latency`` enabled cycles."""

    def __init__(self, latency: int = 2):
        self._latency = latency
        super().__init__({"en": In(1), "i_valid": In(1), "i_x0": In(64), "i_x1": In(64), "i_w": In(64),
                          "i_w_pass": In(64), "o_valid": Out(1), "o_x0": Out(64), "o_x1": Out(64),
                          "o_w_pass": Out(64)})

    @property
    def latency(self) -> int:
        return self._latency

    def elaborate(self, platform):
        m = Module()
        v = [self.i_valid, (self.i_x0 + self.i_x1) % P, ((self.i_x0 + P - self.i_x1) * self.i_w) % P,
             self.i_w_pass]
        for i in range(self._latency):
            regs = [Signal(1, name=f"v{i}"), Signal(64, name=f"a{i}"), Signal(64, name=f"b{i}"),
                    Signal(64, name=f"w{i}")]
            with m.If(self.en):
                m.d.sync += [r.eq(x) for r, x in zip(regs, v)]
            v = regs
        m.d.comb += [self.o_valid.eq(v[0]), self.o_x0.eq(v[1]), self.o_x1.eq(v[2]), self.o_w_pass.eq(v[3])]
        return m


def run_lane_sim(dut: Lane, slots, stall_rate: float, seed: int):
    """Drive frame slots ((pairs, stream) or None for an idle frame) through ``dut`` in amaranth.sim.

    Returns (output pairs in arrival order, enabled edge of every output, enabled edge of every frame
    start)."""
    rng = random.Random(seed)
    per = dut.period
    outs, out_edges, starts = [], [], []
    n_valid = sum(isinstance(s, tuple) for s in slots)

    async def bench(ctx):
        edge, slot, t = 0, 0, 0
        drain = 0
        while drain < dut.latency + per:
            en = rng.random() >= stall_rate
            ctx.set(dut.en, en)
            feeding = slot < len(slots)
            fr = slots[slot] if feeding else None
            sent_frames = sum(isinstance(f, tuple) for f in slots[:slot])
            if isinstance(fr, str) and len(outs) < sent_frames * per:
                fr = None                           # "restart" waits (idle) until the lane is empty
            elif isinstance(fr, str):               # then rewinds the frame clock at once
                ctx.set(dut.restart, 1)
                ctx.set(dut.i_valid, 0)
                await ctx.tick()
                ctx.set(dut.restart, 0)
                slot, t = slot + 1, 0
                continue
            if fr is None:
                ctx.set(dut.i_valid, 0 if en else rng.getrandbits(1))
                for s in (dut.i_x0, dut.i_x1, dut.i_w_first, dut.i_w_rest):
                    ctx.set(s, rng.getrandbits(64))
            else:
                pairs, stream = fr
                ctx.set(dut.i_valid, 1)
                ctx.set(dut.i_x0, int(pairs[t, 0]))
                ctx.set(dut.i_x1, int(pairs[t, 1]))
                ctx.set(dut.i_w_first, int(stream[t, 0]))
                ctx.set(dut.i_w_rest, int(stream[t, 1]))
            if en:
                edge += 1
                if feeding:
                    assert ctx.get(dut.o_slot_start) == (t == 0)
                    if fr is not None and t == 0:
                        starts.append(edge)
                    t += 1
                    if t == per:
                        t = 0
                        if not isinstance(slots[slot], str):
                            slot += 1
                if ctx.get(dut.o_valid):
                    outs.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
                    out_edges.append(edge)
                    assert len(outs) <= n_valid * per, "more output pairs than input pairs"
                if not feeding and len(outs) == n_valid * per:
                    drain += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return outs, out_edges, starts


@pytest.mark.parametrize("bf_latency", [1, 3])
@pytest.mark.parametrize("k", range(2, 10))
def test_lane_logic(k, bf_latency):
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(bf_latency), scale="stages")
    per = dut.period
    rng = np.random.default_rng(k * 10 + bf_latency)
    n_frames = 3 if k <= 7 else 2
    x = rng.integers(0, P, (n_frames, 1 << k), dtype=np.uint64)
    cs = [None] + [random.Random(k).randrange(2, P) for _ in range(n_frames - 1)]
    frames = [(LM.to_lane_pairs(x[f]), LM.twiddle_stream(k, cs[f])) for f in range(n_frames)]
    slots = [frames[0], None] + frames[1:]                 # one idle frame after the first
    outs, out_edges, starts = run_lane_sim(dut, slots, stall_rate=0.25, seed=k)
    assert len(outs) == n_frames * per
    got = np.array(outs, dtype=np.uint64).reshape(n_frames, per, 2)
    for f in range(n_frames):
        assert np.array_equal(LM.from_lane_pairs(got[f]), LM.lane_reference(x[f], c=cs[f])), f"frame {f}"
        assert out_edges[f * per] - starts[f] == dut.latency - 1 + 1
        assert out_edges[f * per + per - 1] - out_edges[f * per] == per - 1
    # back-to-back (after the idle slot): M frames take M * 2^(k-1) + latency enabled cycles
    assert out_edges[-1] - starts[1] + 1 == (n_frames - 1) * per + dut.latency


@pytest.mark.parametrize("k", [3, 6])
def test_restart_between_streams(k):
    """``restart`` (used by the engine between passes) rewinds the frame clock of an empty lane: the next
    stream may start at once, and no frame stored before the restart comes out again."""
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(2), scale="stages")
    per = dut.period
    rng = np.random.default_rng(k)
    x = rng.integers(0, P, (3, 1 << k), dtype=np.uint64)
    frames = [(LM.to_lane_pairs(x[f]), LM.twiddle_stream(k, None if f else 5)) for f in range(3)]
    slots = [frames[0], "restart", frames[1], frames[2]]
    outs, out_edges, starts = run_lane_sim(dut, slots, stall_rate=0.2, seed=k)
    assert len(outs) == 3 * per
    got = LM.from_lane_pairs(np.array(outs, dtype=np.uint64).reshape(3, per, 2))
    for f in range(3):
        assert np.array_equal(got[f], LM.lane_reference(x[f], c=None if f else 5)), f"frame {f}"
    assert out_edges[per] - starts[1] == dut.latency


def test_lane_logic_detects_wrong_twiddles():
    """The checks above can fail: a scaled frame fed plain twiddles does not match."""
    k = 4
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(1), scale="stages")
    x = np.random.default_rng(0).integers(0, P, 1 << k, dtype=np.uint64)
    outs, _, _ = run_lane_sim(dut, [(LM.to_lane_pairs(x), LM.twiddle_stream(k))], 0.0, 0)
    y = LM.from_lane_pairs(np.array(outs, dtype=np.uint64).reshape(1, -1, 2))[0]
    assert np.array_equal(y, LM.lane_reference(x))
    assert not np.array_equal(y, LM.lane_reference(x, c=3))


def test_half_chain_alone():
    """A first half (a = 3 stages) maps input order to 'turn_in' order with the DIF stages applied."""
    k = 6
    a, _ = LM.halves(k)
    dut = HalfChain(a, butterfly=lambda: BehaviouralButterfly(2))
    orders = LM.interface_orders(k)
    assert dut.buffer_points == [4, 2] and dut.latency == 3 * 2 + 3
    # 2^a-point groups: the first a stages of the lane transform, checked through the lane model's tables
    rng = np.random.default_rng(5)
    x = rng.integers(0, P, 1 << k, dtype=np.uint64)
    stream = LM.twiddle_stream(k, c=12345)
    tables = LM.stage_tables(stream, k)
    ref = x.copy()
    from hw.model import field as F
    n = 1 << k
    for s in range(a):
        h = n >> (s + 1)
        v = ref.reshape(n // (2 * h), 2, h)
        out = np.empty_like(v)
        out[:, 0, :] = F.vadd(v[:, 0, :], v[:, 1, :])
        out[:, 1, :] = F.vmul(F.vsub(v[:, 0, :], v[:, 1, :]), tables[s][None, :])
        ref = out.reshape(n)
    pairs = LM.to_lane_pairs(x)
    got, got_w = [], []
    group = dut.group_cycles

    async def bench(ctx):
        ctx.set(dut.en, 1)
        cycle = 0
        total = (1 << (k - 1))
        while len(got) < total:
            t = cycle
            if t < total:
                ctx.set(dut.i_valid, 1)
                ctx.set(dut.i_phase, t % group)
                ctx.set(dut.i_x0, int(pairs[t, 0]))
                ctx.set(dut.i_x1, int(pairs[t, 1]))
                ctx.set(dut.i_w_first, int(stream[t, 0]))
                ctx.set(dut.i_w_rest, int(stream[t, 1]))
            else:
                ctx.set(dut.i_valid, 0)
                ctx.set(dut.i_phase, t % group)
            if ctx.get(dut.o_valid):
                got.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
                got_w.append(ctx.get(dut.o_w_rest))
            cycle += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    got = np.array(got, dtype=np.uint64)
    assert np.array_equal(got, ref[orders["turn_in"]])
    # the stream leaves re-aligned with the output cycles
    assert np.array_equal(np.array(got_w, dtype=np.uint64), stream[:, 1])


def _random_bit_permutation_order(k, rng):
    perm = rng.permutation(k)             # index bit b <- source perm[b]: source k-1 is the port
    t = np.arange(1 << (k - 1))[:, None]
    q = np.array([[0, 1]])
    src = np.concatenate([np.broadcast_to((t >> b) & 1, (1 << (k - 1), 2)) for b in range(k - 1)]
                         + [np.broadcast_to(q, (1 << (k - 1), 2))]).reshape(k, 1 << (k - 1), 2)
    return sum(src[perm[b]] << b for b in range(k))


@pytest.mark.parametrize("k,seed", [(2, 0), (3, 1), (5, 2), (6, 3), (6, 4)])
def test_frame_reorder(k, seed):
    rng = np.random.default_rng(seed)
    w_order = _random_bit_permutation_order(k, rng)
    r_order = _random_bit_permutation_order(k, rng)
    dut = FrameReorder(w_order, r_order)
    per = dut.period
    frames = rng.integers(0, 1 << 64, (3, per, 2), dtype=np.uint64)
    slots = [frames[0], None, frames[1], frames[2]]
    outs, out_edges, starts = [], [], []
    prng = random.Random(seed)

    async def bench(ctx):
        edge, phase = 0, 0
        while len(outs) < 3 * per or edge < len(slots) * per + dut.latency + per:
            en = prng.random() >= 0.3
            ctx.set(dut.en, en)
            ctx.set(dut.i_phase, phase)
            slot, t = divmod(edge, per)
            fr = slots[slot] if slot < len(slots) else None
            ctx.set(dut.i_valid, int(fr is not None))
            ctx.set(dut.i_x0, int(fr[t, 0]) if fr is not None else prng.getrandbits(64))
            ctx.set(dut.i_x1, int(fr[t, 1]) if fr is not None else prng.getrandbits(64))
            if en:
                edge += 1
                phase = (phase + 1) % (2 * per)
                if fr is not None and t == 0:
                    starts.append(edge)
                if ctx.get(dut.o_valid):
                    outs.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
                    out_edges.append(edge)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    got = np.array(outs, dtype=np.uint64).reshape(3, per, 2)
    for f in range(3):
        assert np.array_equal(got[f], dut.model(frames[f]))
        assert out_edges[f * per] - starts[f] == dut.latency
    assert dut.stored_points == 2 << k


def test_bit_sources_rejects_non_permutations():
    with pytest.raises(ValueError, match="order"):
        bit_sources(np.array([[0, 1], [3, 2]]))
    with pytest.raises(ValueError, match="order"):
        bit_sources(np.zeros((3, 2), dtype=int))
    assert bit_sources(LM.interface_orders(3)["output"]) == [1, 0, -1]


def test_parameter_checks():
    with pytest.raises(ValueError, match="log_core"):
        Lane(1)
    with pytest.raises(ValueError, match="log_core"):
        Lane(13)
    with pytest.raises(TypeError, match="log_core"):
        Lane(4.0)
    with pytest.raises(TypeError, match="butterfly"):
        Lane(4, butterfly=3)
    with pytest.raises(ValueError, match="depth"):
        HalfChain(0)
    with pytest.raises(ValueError, match="scale"):
        Lane(4, scale="input")


def test_properties_k12():
    from hw.arith import ModSub, MulReduce
    from hw.shift_butterfly import ShiftReduce
    for scale in ("stages", "output"):
        lane = Lane(12, scale=scale)          # the real butterflies
        assert lane.period == 2048
        assert max(lane.buffer_points) == 32 and lane.buffer_points == [32, 16, 8, 4, 2] * 2
        assert lane.stored_points == 4 * 4096 + 2 * 62
    general, shift = ModSub.LATENCY + MulReduce.LATENCY, ModSub.LATENCY + ShiftReduce.LATENCY
    folded, out = Lane(12, scale="stages"), Lane(12)
    assert folded.butterfly_latencies == [general] * 12 and folded.mul_units == 12
    assert folded.latency == 12 * general + 2 * 31 + 2 * (2048 + 1)
    # stages 6..11 use 64th roots of unity: shift-only; the four-step scale moves to the output
    # (the last stage's twiddle is 1: no shift unit, just the subtraction)
    assert out.scale == "output" and out.butterfly_latencies == [general] * 6 + [shift] * 5 + [ModSub.LATENCY]
    assert out.mul_units == 6 + 4 and out.dsp_tiles == 10 * MulReduce.DSP_TILES
    assert out.latency == (6 * general + 5 * shift + ModSub.LATENCY + 2 * 31 + 2 * (2048 + 1)
                           + 1 + 2 * MulReduce.LATENCY)


def test_catalog_entry():
    from amaranth.hdl import Fragment
    from hw import catalog
    lane = catalog.build("lane", log_core=3)
    assert isinstance(lane, Lane) and lane.log_core == 3
    Fragment.get(lane, None)            # elaborates


def test_reorder_ram_style():
    orders = LM.interface_orders(3)
    with pytest.raises(ValueError, match="ram_style"):
        FrameReorder(orders["turn_in"], orders["turn_out"], ram_style="huge")
    assert Lane(12).ram_style == "ultra"
    assert Lane(11).ram_style is None


@pytest.mark.parametrize("k", [3, 7])
def test_output_scale_lane(k):
    """The default lane (shift-only late stages, the four-step scale on the output) with its real
    butterflies: plain, scaled and inverse frames with stalls and an idle frame, against the reference
    (hw.model.ntt through lane_reference, c = w_N^column), not the lane model."""
    from hw.model import field as F
    dut = Lane(k)
    assert dut.scale == "output"
    per = dut.period
    rng = np.random.default_rng(k)
    x = rng.integers(0, P, (3, 1 << k), dtype=np.uint64)
    columns, inverse = [0, (1 << k) - 3, 0], [False, False, True]
    frames = [(LM.to_lane_pairs(x[f]), LM.shift_stream(k, columns[f], inverse[f])) for f in range(3)]
    outs, out_edges, starts = run_lane_sim(dut, [frames[0], None, frames[1], frames[2]], 0.2, seed=k)
    got = LM.from_lane_pairs(np.array(outs, dtype=np.uint64).reshape(3, per, 2))
    w = F.root_of_unity(1 << (2 * k))
    for f in range(3):
        c = F.pow_(w, columns[f]) if columns[f] else None
        assert np.array_equal(got[f], LM.lane_reference(x[f], c=c, inverse=inverse[f])), f"frame {f}"
    assert out_edges[0] - starts[0] == dut.latency
