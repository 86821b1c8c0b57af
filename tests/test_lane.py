# amaranth: UnusedElaboratable=no
"""The lane (hw/lane.py) and its reorders (hw/reorder.py).

Fast part (amaranth.sim): the control and reorder logic at every k from 2 to 8, the general stages
(k >= 7) with a behavioural butterfly that exists only here (exact modular arithmetic in a few
registers, any latency), the shift-only stages and the output scale real, so reorders, commutators,
twiddle replay and the corner-turn twiddle table are checked against the stage reference.
Bench part (cocotb on Verilator): the real lane with hw.butterfly.Butterfly, sim/benches/lane.py.
Some lanes here are built only to read their properties (first line: no unused-component warnings).
"""

import random

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nantucket.hw.flow.runner import run_bench
from nantucket.hw.lane import HalfChain, Lane
from nantucket.hw.model import lane as LM
from nantucket.hw.model.field import P
from nantucket.hw.reorder import FrameReorder, bit_sources


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


class Restart:
    """A slot of ``run_lane_sim``: wait until the lane is empty, then pulse ``restart`` with new
    ``log_frame`` and run (``log_n``; ``inverse``: pass 1 of an inverse run, ``normalize``: its pass 2),
    changed to random values right after: the lane must have taken them."""

    def __init__(self, log_frame: int, log_n: int | None = None, inverse: bool = False, normalize: bool = False):
        self.log_frame, self.log_n = log_frame, log_n if log_n is not None else 2 * log_frame
        self.inverse, self.normalize = inverse, normalize


def run_lane_sim(dut: Lane, slots, stall_rate: float, seed: int):
    """Drive frame slots ((pairs, stream), None for an idle frame, or a Restart) through ``dut`` in
    amaranth.sim. Frames are 2^f points for the f of the last Restart (k before the first).

    Returns (output pairs in arrival order, enabled edge of every output, enabled edge of every frame
    start, f of every valid frame)."""
    rng = random.Random(seed)
    k = dut.log_core
    outs, out_edges, starts, sizes = [], [], [], []
    n_valid = sum(len(s[0]) for s in slots if isinstance(s, tuple))          # pairs
    drain_cycles = dut.latency + dut.period

    # a bound that fails a lane which loses output pairs instead of waiting for them forever
    limit = 4 * (sum(len(s[0]) if isinstance(s, tuple) else dut.period for s in slots) + 10 * drain_cycles)

    async def bench(ctx):
        edge, slot, t, f = 0, 0, 0, k
        sent = 0                                    # pairs sent so far
        drain = 0
        for _ in range(limit):
            if drain >= drain_cycles:
                break
            per = 1 << (f - 1)
            en = rng.random() >= stall_rate
            ctx.set(dut.en, en)
            feeding = slot < len(slots)
            fr = slots[slot] if feeding else None
            if isinstance(fr, Restart) and len(outs) < sent:
                fr = None                           # a restart waits (idle) until the lane is empty
            elif isinstance(fr, Restart):           # then rewinds the frame clock at once
                ctx.set(dut.restart, 1)
                ctx.set(dut.log_frame, fr.log_frame)
                ctx.set(dut.run.log_n, fr.log_n)
                ctx.set(dut.run.inverse, fr.inverse or fr.normalize)
                ctx.set(dut.run.coset, 0)
                ctx.set(dut.pass2, fr.normalize)
                ctx.set(dut.i_valid, 0)
                await ctx.tick()
                ctx.set(dut.restart, 0)
                ctx.set(dut.log_frame, rng.randrange(k + 1))
                ctx.set(dut.run.log_n, rng.randrange(2 * k + 1))
                ctx.set(dut.run.inverse, rng.getrandbits(1))
                ctx.set(dut.run.coset, rng.getrandbits(1))
                ctx.set(dut.pass2, rng.getrandbits(1))
                slot, t, f = slot + 1, 0, fr.log_frame
                continue
            if fr is None:
                ctx.set(dut.i_valid, 0 if en else rng.getrandbits(1))
                for s in (dut.i_x0, dut.i_x1, dut.i_w_first, dut.i_w_rest):
                    ctx.set(s, rng.getrandbits(64))
            else:
                pairs, stream = fr
                assert len(pairs) == per, "frame of the wrong size for the lane's log_frame"
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
                        sizes.append(f)
                    sent += fr is not None
                    t += 1
                    if t == per:
                        t = 0
                        if not isinstance(slots[slot], Restart):
                            slot += 1
                if ctx.get(dut.o_valid):
                    outs.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
                    out_edges.append(edge)
                    assert len(outs) <= n_valid, "more output pairs than input pairs"
                if not feeding and len(outs) == n_valid:
                    drain += 1
            await ctx.tick()
        assert drain >= drain_cycles, f"{len(outs)} of {n_valid} output pairs after {limit} cycles"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return outs, out_edges, starts, sizes


def split_frames(dut: Lane, outs, out_edges, starts, sizes):
    """The output frames (natural order) of ``run_lane_sim``, checking that frame j's first pair left
    exactly ``latency_at(f)`` enabled cycles after its first input pair, with no bubbles inside."""
    frames, pos = [], 0
    assert len(outs) == sum(1 << (f - 1) for f in sizes)
    for j, f in enumerate(sizes):
        per = 1 << (f - 1)
        assert out_edges[pos] - starts[j] == dut.latency_at(f), f"frame {j} (f = {f}): latency"
        assert out_edges[pos + per - 1] - out_edges[pos] == per - 1, f"frame {j}: bubbles"
        frames.append(LM.from_lane_pairs(np.array(outs[pos:pos + per], dtype=np.uint64)))
        pos += per
    return frames


def _column_factor(k: int, column: int, log_n: int | None = None):
    """c = w_N^column (N = 2^log_n, default 2^(2k)) for lane_reference; None for column 0."""
    from nantucket.hw.model import field as F
    return F.pow_(F.root_of_unity(1 << (log_n or 2 * k)), column) if column else None


# The general stages (k >= 7) take the behavioural butterfly, here at latencies 1 and 3; the shift-only
# stages and the output scale are the real ones.
LOGIC_CASES = [(k, 2) for k in range(2, 7)] + [(7, 1), (7, 3), (8, 3)]


@pytest.mark.parametrize("k, bf_latency", LOGIC_CASES, ids=[f"k{k}_bf{b}" for k, b in LOGIC_CASES])
def test_lane_logic(k, bf_latency):
    """Frames back to back (plain, then pass-1 scaled by random columns) with an idle frame after the
    first and random stalls: against the stage reference (lane_reference, c = w_N^column); the
    latency, no bubbles, and M frames in M * 2^(k-1) + latency enabled cycles."""
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(bf_latency))
    per = dut.period
    rng = np.random.default_rng(k * 10 + bf_latency)
    n_frames = 3 if k <= 7 else 2
    x = rng.integers(0, P, (n_frames, 1 << k), dtype=np.uint64)
    columns = [0] + [random.Random(k).randrange(1, 1 << k) for _ in range(n_frames - 1)]
    frames = [(LM.to_lane_pairs(x[f]), LM.shift_stream(k, columns[f])) for f in range(n_frames)]
    slots = [frames[0], None] + frames[1:]                 # one idle frame after the first
    outs, out_edges, starts, _ = run_lane_sim(dut, slots, stall_rate=0.25, seed=k)
    assert len(outs) == n_frames * per
    got = np.array(outs, dtype=np.uint64).reshape(n_frames, per, 2)
    for f in range(n_frames):
        want = LM.lane_reference(x[f], c=_column_factor(k, columns[f]))
        assert np.array_equal(LM.from_lane_pairs(got[f]), want), f"frame {f}"
        assert out_edges[f * per] - starts[f] == dut.latency
        assert out_edges[f * per + per - 1] - out_edges[f * per] == per - 1
    # back-to-back (after the idle slot): M frames take M * 2^(k-1) + latency enabled cycles
    assert out_edges[-1] - starts[1] + 1 == (n_frames - 1) * per + dut.latency


@pytest.mark.parametrize("k", [3, 7])
def test_restart_between_streams(k):
    """``restart`` (used by the engine between passes) rewinds the frame clock of an empty lane: the next
    stream may start at once, and no frame stored before the restart comes out again."""
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(2))
    per = dut.period
    rng = np.random.default_rng(k)
    x = rng.integers(0, P, (3, 1 << k), dtype=np.uint64)
    columns = [5, 0, 0]
    frames = [(LM.to_lane_pairs(x[f]), LM.shift_stream(k, columns[f])) for f in range(3)]
    slots = [frames[0], Restart(k), frames[1], frames[2]]
    outs, out_edges, starts, _ = run_lane_sim(dut, slots, stall_rate=0.2, seed=k)
    assert len(outs) == 3 * per
    got = LM.from_lane_pairs(np.array(outs, dtype=np.uint64).reshape(3, per, 2))
    for f in range(3):
        assert np.array_equal(got[f], LM.lane_reference(x[f], c=_column_factor(k, columns[f]))), f"frame {f}"
    assert out_edges[per] - starts[1] == dut.latency


def _size_order(k: int) -> list[int]:
    """Every frame size 2..k, in the order k, 3, k-1, 2, then the rest (switching up and down)."""
    first = [k, 3, k - 1, 2]
    return list(dict.fromkeys([f for f in first if 2 <= f <= k] + list(range(k, 1, -1))))


@pytest.mark.parametrize("k", [4, 7])
def test_lane_frame_sizes(k):
    """Every frame size on one lane without a reset: runs of 2^f-point frames (scaled and plain, an idle
    frame inside, random stalls), a restart with the next f (N = 2^(2f)) between runs; against the stage
    reference at 2^f (lane_reference, c = w_N^column) and latency_at(f) exactly. At k = 7 the general
    stage is the behavioural butterfly; more sizes and N in test_output_scale_lane_frame_sizes."""
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(2))
    rng = np.random.default_rng(100 + k)
    prng = random.Random(k)
    slots, expect = [], []
    for f in _size_order(k):
        x = rng.integers(0, P, (2, 1 << f), dtype=np.uint64)
        columns = [prng.randrange(1, 1 << k), 0]
        slots += [Restart(f), (LM.to_lane_pairs(x[0]), LM.shift_stream(k, columns[0], frame=f)), None,
                  (LM.to_lane_pairs(x[1]), LM.shift_stream(k, columns[1], frame=f))]
        expect += [LM.lane_reference(x[j], c=_column_factor(k, columns[j], 2 * f)) for j in range(2)]
    got = split_frames(dut, *run_lane_sim(dut, slots, stall_rate=0.25, seed=k))
    assert len(got) == len(expect)
    for j, (g, e) in enumerate(zip(got, expect)):
        assert np.array_equal(g, e), f"frame {j} (2^{len(e).bit_length() - 1} points)"


def test_lane_latency_at():
    """latency_at(f) is a chain of the active stages only: the input register, 2^(f-1) +
    FrameReorder.READ_LATENCY per reorder, the last ceil(f/2) and floor(f/2) butterflies of each half and
    their commutators (2^(d-1) - 1 cycles for d stages)."""
    from nantucket.hw.arith import MulReduce
    for k in (4, 7, 12):
        lane = Lane(k)
        lat = lane.butterfly_latencies
        a, _ = LM.halves(k)
        assert lane.latency == lane.latency_at(k)
        for f in range(2, k + 1):
            af, bf = LM.halves(f)
            active = lat[a - af:a] + lat[k - bf:]
            phys = LM.physical_stages(k, f)
            assert [lat[s] for s in phys] == active
            assert lane.latency_at(f) == (sum(active) + (1 << (af - 1)) - 1 + (1 << (bf - 1)) - 1
                                          + 2 * ((1 << (f - 1)) + FrameReorder.READ_LATENCY) + 2
                                          + 2 * MulReduce.LATENCY + Lane.INPUT_LATENCY)
    with pytest.raises(ValueError, match="log_frame"):
        Lane(4).latency_at(5)
    with pytest.raises(ValueError, match="log_frame"):
        Lane(4).latency_at(1)


def test_lane_logic_detects_wrong_twiddles():
    """The checks above can fail: a scaled frame fed plain twiddles does not match."""
    k = 4
    dut = Lane(k, butterfly=lambda: BehaviouralButterfly(1))
    x = np.random.default_rng(0).integers(0, P, 1 << k, dtype=np.uint64)
    outs, _, _, _ = run_lane_sim(dut, [(LM.to_lane_pairs(x), LM.shift_stream(k, 0))], 0.0, 0)
    y = LM.from_lane_pairs(np.array(outs, dtype=np.uint64).reshape(1, -1, 2))[0]
    assert np.array_equal(y, LM.lane_reference(x))
    assert not np.array_equal(y, LM.lane_reference(x, c=3))


@pytest.mark.parametrize("active", [1, 2, 3])
def test_half_chain_alone(active):
    """A first half of 3 stages running its last ``active`` (d_f) stages is the first half of a 2^f lane
    with a_f = d_f (f = 2 d_f): it maps that lane's input order to its 'turn_in' order with the DIF stages
    applied, after latency_at(d_f) cycles, and hands the stream on re-aligned."""
    dut = HalfChain(3, butterfly=lambda: BehaviouralButterfly(2))
    assert dut.buffer_points == [3 * 2, 3 * 1] and dut.latency == dut.latency_at(3) == 3 * 2 + 3   # 3D at D <= 2
    assert dut.latency_at(active) == 2 * active + (1 << (active - 1)) - 1
    k = 2 * active
    a, _ = LM.halves(k)
    assert a == active
    orders = LM.interface_orders(k)
    # 2^a-point groups: the first a stages of the lane transform, checked through the lane model's tables
    rng = np.random.default_rng(5)
    x = rng.integers(0, P, 1 << k, dtype=np.uint64)
    stream = LM.twiddle_stream(k, c=12345)
    tables = LM.stage_tables(stream, k)
    ref = x.copy()
    from nantucket.hw.model import field as F
    n = 1 << k
    for s in range(a):
        h = n >> (s + 1)
        v = ref.reshape(n // (2 * h), 2, h)
        out = np.empty_like(v)
        out[:, 0, :] = F.vadd(v[:, 0, :], v[:, 1, :])
        out[:, 1, :] = F.vmul(F.vsub(v[:, 0, :], v[:, 1, :]), tables[s][None, :])
        ref = out.reshape(n)
    pairs = LM.to_lane_pairs(x)
    got, got_w, first_out = [], [], []
    high = 3 << (active - 1)                # phase bits above the group's: ignored

    async def bench(ctx):
        ctx.set(dut.en, 1)
        ctx.set(dut.i_depth, active)
        await ctx.tick()                    # the depth is taken a cycle before the data (registered flags)
        total = (1 << (k - 1))
        for cycle in range(total + 40):
            t = cycle
            ctx.set(dut.i_phase, (t % (1 << (a - 1))) | high)
            if t < total:
                ctx.set(dut.i_valid, 1)
                ctx.set(dut.i_x0, int(pairs[t, 0]))
                ctx.set(dut.i_x1, int(pairs[t, 1]))
                ctx.set(dut.i_w_first, int(stream[t, 0]))
                ctx.set(dut.i_w_rest, int(stream[t, 1]))
            else:
                ctx.set(dut.i_valid, 0)
            if ctx.get(dut.o_valid):
                first_out.append(cycle)
                got.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
                got_w.append(ctx.get(dut.o_w_rest))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert first_out[0] == dut.latency_at(active)
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


@pytest.mark.parametrize("k,seed,sizes", [(2, 0, [2]), (3, 1, [3]), (5, 2, [5]), (6, 3, [6]),
                                          (6, 4, [6, 2, 5, 3, 4]), (5, 5, [3, 5, 2, 4, 5])])
def test_frame_reorder(k, seed, sizes):
    """Random bit-permutation orders for every frame size 2..k; runs of frames of the sizes in ``sizes``
    (a restart and a rewound phase before each run; the phase's bits above the frame are random), with
    an idle frame and random stalls, against the block's model and latency_at(f)."""
    rng = np.random.default_rng(seed)
    orders = {f: (_random_bit_permutation_order(f, rng), _random_bit_permutation_order(f, rng))
              for f in range(2, k + 1)}
    dut = FrameReorder(orders)
    assert dut.frame_sizes == tuple(range(2, k + 1)) and dut.latency == dut.latency_at(k) == dut.period + FrameReorder.READ_LATENCY
    runs = [(f, rng.integers(0, 1 << 64, (3, 1 << (f - 1), 2), dtype=np.uint64)) for f in sizes]
    got = [[] for _ in runs]
    prng = random.Random(seed)

    async def bench(ctx):
        for (f, frames), outs in zip(runs, got):
            per = 1 << (f - 1)
            high = prng.getrandbits(k) & ~((2 << (f - 1)) - 1)        # phase bits above the parity
            ctx.set(dut.restart, 1)
            ctx.set(dut.log_frame, f)
            await ctx.tick()
            ctx.set(dut.restart, 0)
            slots = [frames[0], None, frames[1], frames[2]]
            starts, out_edges = [], []
            edge, phase = 0, 0
            while edge < len(slots) * per + dut.latency_at(f) + per:
                en = prng.random() >= 0.3
                ctx.set(dut.en, en)
                ctx.set(dut.i_phase, high | phase)
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
            assert [out_edges[j * per] - starts[j] for j in range(3)] == [dut.latency_at(f)] * 3

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for (f, frames), outs in zip(runs, got):
        outs = np.array(outs, dtype=np.uint64).reshape(3, 1 << (f - 1), 2)   # nothing stale came out
        for j in range(3):
            assert np.array_equal(outs[j], dut.model(frames[j])), f"f = {f}, frame {j}"
    assert dut.stored_points == 2 << k


def test_frame_reorder_rejects_bad_orders():
    orders = LM.interface_orders(3)
    with pytest.raises(TypeError, match="orders"):
        FrameReorder((orders["turn_in"], orders["turn_out"]))
    with pytest.raises(ValueError, match="shape"):
        FrameReorder({4: (orders["turn_in"], orders["turn_out"])})
    with pytest.raises(ValueError, match="order"):
        FrameReorder({3: (orders["turn_in"], orders["turn_in"] * 0)})


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
    with pytest.raises(TypeError, match="scale"):
        Lane(4, scale="output")             # one design: the scale is always on the output


def test_properties_k12():
    from nantucket.hw.arith import ModSub, MulReduce
    from nantucket.hw.shift_reduce import ShiftReduce
    out = Lane(12)                          # the real butterflies
    assert out.period == 2048
    # commutators of depth D = 16 .. 1 per half hold 2D points, 3D at D <= 2 (late swap)
    assert max(out.buffer_points) == 32 and out.buffer_points == [32, 16, 8, 6, 3] * 2
    assert out.stored_points == 4 * 4096 + 2 * 65
    general, shift = ModSub.LATENCY + MulReduce.LATENCY, ModSub.LATENCY + ShiftReduce.LATENCY
    # stages 6..11 use 64th roots of unity: shift-only; the four-step scale is on the output
    # (the last stage's twiddle is 1: no shift unit, just the subtraction); the coset runs on the output
    # scale's units (hw/coset/): 10 units, 120 DSP48E2
    assert out.butterfly_latencies == [general] * 6 + [shift] * 5 + [ModSub.LATENCY]
    assert out.mul_units == 6 + 4 and out.dsp_tiles == 10 * MulReduce.DSP_TILES == 120
    assert out.latency == (6 * general + 5 * shift + ModSub.LATENCY + 2 * 31
                           + 2 * (2048 + FrameReorder.READ_LATENCY) + 2 + 2 * MulReduce.LATENCY
                           + Lane.INPUT_LATENCY)


def test_catalog_entry():
    from amaranth.hdl import Fragment
    from nantucket.hw.flow import catalog
    lane = catalog.build("lane", log_core=3)
    assert isinstance(lane, Lane) and lane.log_core == 3
    Fragment.get(lane, None)            # elaborates


def test_reorder_ram_style():
    orders = LM.interface_orders(3)
    with pytest.raises(ValueError, match="ram_style"):
        FrameReorder({3: (orders["turn_in"], orders["turn_out"])}, ram_style="huge")
    assert Lane(12).ram_style == "ultra"
    assert Lane(11).ram_style is None


@pytest.mark.parametrize("k", [3, 7])
def test_output_scale_lane(k):
    """The default lane (shift-only late stages, the four-step scale on the output) with its real
    butterflies: plain, scaled and inverse frames with stalls and an idle frame, against the reference
    (hw.model.ntt through lane_reference, c = w_N^column), not the lane model."""
    from nantucket.hw.model import field as F
    dut = Lane(k)
    per = dut.period
    rng = np.random.default_rng(k)
    x = rng.integers(0, P, (3, 1 << k), dtype=np.uint64)
    columns, inverse = [0, (1 << k) - 3, 0], [False, False, True]
    frames = [(LM.to_lane_pairs(x[f]), LM.shift_stream(k, columns[f], inverse[f])) for f in range(3)]
    outs, out_edges, starts, _ = run_lane_sim(dut, [frames[0], None, frames[1], frames[2]], 0.2, seed=k)
    got = LM.from_lane_pairs(np.array(outs, dtype=np.uint64).reshape(3, per, 2))
    w = F.root_of_unity(1 << (2 * k))
    for f in range(3):
        c = F.pow_(w, columns[f]) if columns[f] else None
        assert np.array_equal(got[f], LM.lane_reference(x[f], c=c, inverse=inverse[f])), f"frame {f}"
    assert out_edges[0] - starts[0] == dut.latency


@pytest.mark.parametrize("k, sizes", [(4, None), (5, None), (6, None), (8, [8, 3, 5])],
                         ids=["k4", "k5", "k6", "k8"])
def test_output_scale_lane_frame_sizes(k, sizes):
    """The default lane with its real butterflies at run-time frame sizes (every f at k = 4..6, a few at
    k = 8), switching sizes between restarts without a reset: for each f, N = 2^n with n = 2f - 1, 2f
    and others, columns != 0 (a plain frame, a scaled one, an inverse one, edge values), stalls and an
    idle frame. Expected: the stage reference at 2^f with c = w_N^column (lane_reference), and the
    lane model (scaled_lane_transform with log_core = k, log_n = n); latency_at(f) exactly."""
    from nantucket.hw.model import field as F
    from nantucket.sim.benches.lib import EDGE_VALUES
    dut = Lane(k)
    rng = np.random.default_rng(200 + k)
    prng = random.Random(k)
    slots, expect = [], []
    for i, f in enumerate(sizes or _size_order(k)):
        n = [2 * f - 1, 2 * f, min(2 * k, f + 1 + i % 3), 2 * k][i % 4]
        x = rng.integers(0, P, (3, 1 << f), dtype=np.uint64)
        x[2] = rng.choice(np.array(EDGE_VALUES, dtype=np.uint64), 1 << f)
        columns = [prng.randrange(1, 1 << k), 0, prng.randrange(1 << k)]
        inverse = [False, False, True]
        slots.append(Restart(f, n))
        for j in range(3):
            pairs, stream = LM.to_lane_pairs(x[j]), LM.shift_stream(k, columns[j], inverse[j], frame=f)
            slots += [(pairs, stream)] + ([None] if j == 0 else [])
            c = F.pow_(F.root_of_unity(1 << n), columns[j])
            ref = LM.lane_reference(x[j], c=c, inverse=inverse[j])
            assert np.array_equal(LM.from_lane_pairs(dut.model(pairs, stream, log_n=n)), ref)
            expect.append(ref)
    got = split_frames(dut, *run_lane_sim(dut, slots, stall_rate=0.2, seed=k))
    assert len(got) == len(expect)
    for j, (g, e) in enumerate(zip(got, expect)):
        assert np.array_equal(g, e), f"frame {j} (2^{len(e).bit_length() - 1} points)"


@pytest.mark.parametrize("k, sizes", [(4, None)], ids=["k4"])
def test_output_scale_lane_inverse(k, sizes):
    """The default lane running inverse passes at run-time frame sizes, switching between forward,
    inverse (pass 1: output m times w_N^(-column m)) and normalize (pass 2: times 1/N) at restarts without
    a reset, edge values, stalls and an idle frame. Expected from the stage reference (lane_reference
    with the inverse twiddles and c = w_N^(-column), times F.inv(N) for normalize), and the lane model
    (Lane.model with the same flags); latency_at(f) exactly, as forward."""
    from nantucket.hw.model import field as F
    from nantucket.sim.benches.lib import EDGE_VALUES
    dut = Lane(k)
    rng = np.random.default_rng(300 + k)
    prng = random.Random(k + 1)
    slots, expect = [], []
    modes = [(True, False), (False, True), (False, False), (True, False)]    # (inverse, normalize)
    for i, f in enumerate(sizes or _size_order(k)):
        for inverse, normalize in modes[i % 2:i % 2 + 3]:
            n = [2 * f - 1, 2 * f, min(2 * k, f + 1 + i % 3), 2 * k][(i + inverse) % 4]
            x = rng.integers(0, P, (2, 1 << f), dtype=np.uint64)
            x[1] = rng.choice(np.array(EDGE_VALUES, dtype=np.uint64), 1 << f)
            columns = [0 if normalize else prng.randrange(1, 1 << k), (1 << k) - 1]
            slots.append(Restart(f, n, inverse, normalize))
            for j in range(2):
                # inverse frames carry the inverse stream; a forward restart may still run inverse
                # twiddles (the unnormalized inverse with a forward scale), as before the flags
                twiddles_inverse = inverse or normalize or j == 1
                pairs = LM.to_lane_pairs(x[j])
                stream = LM.shift_stream(k, columns[j], twiddles_inverse, frame=f)
                slots += [(pairs, stream)] + ([None] if j == 0 else [])
                if normalize:
                    ref = F.vmul(LM.lane_reference(x[j], inverse=True), np.uint64(F.inv(1 << n)))
                else:
                    w = F.root_of_unity(1 << n)
                    c = F.pow_(F.inv(w) if inverse else w, columns[j])
                    ref = LM.lane_reference(x[j], c=c, inverse=twiddles_inverse)
                model = dut.model(pairs, stream, log_n=n, inverse=inverse, normalize=normalize)
                assert np.array_equal(LM.from_lane_pairs(model), ref)
                expect.append(ref)
    got = split_frames(dut, *run_lane_sim(dut, slots, stall_rate=0.2, seed=k + 7))
    assert len(got) == len(expect)
    for j, (g, e) in enumerate(zip(got, expect)):
        assert np.array_equal(g, e), f"frame {j} (2^{len(e).bit_length() - 1} points)"


def test_narrow_pass_butterfly():
    """The k = 12 lane's last first-half stage passes on only the low bits of the stream (the second
    half's words): still the full butterfly on the points, the low bits passed in step with them."""
    from nantucket.hw.butterfly import Butterfly
    from nantucket.sim.benches.lib import EDGE_VALUES, pysim_pipeline
    with pytest.raises(ValueError):
        Butterfly(pass_width=0)
    dut = Butterfly(pass_width=16)
    assert dut.shared_key != Butterfly().shared_key          # a module of its own
    rng = random.Random(11)
    items = [(a, b, rng.randrange(P), rng.getrandbits(16)) for a in EDGE_VALUES for b in EDGE_VALUES]
    got = pysim_pipeline(dut, items, ["i_x0", "i_x1", "i_w", "i_w_pass"], ["o_x0", "o_x1", "o_w_pass"], seed=3)
    assert got == [((x0 + x1) % P, (x0 - x1) * w % P, wp) for x0, x1, w, wp in items]


# -- cocotb benches of the real lane on Verilator ---------------------------------------------------
#
# cocotb benches of the real lane (hw.lane.Lane with its real butterflies) on Verilator.
#
# Every k from 2 to 8 streams at least four back-to-back random frames (plain, pass-1 scaled and inverse
# in turn), k = 10 and k = 12 three; each crossed with idle/stall patterns, plus edge-value frames (the
# lane: shift-only late stages, the four-step scale on the output). One build directory per k.
# Run-time frame sizes (sim/benches/lane.py test_frame_sizes): every f = 2..k at k <= 8, f = 10, 5 at
# k = 10 and f = 9 at k = 12, switched by restarts without a reset, with several log_n; each size also runs the two passes of an inverse transform (the lane's ``inverse`` and ``normalize``).

FRAMES = {k: 4 for k in range(2, 9)} | {10: 3, 12: 3}
#: Frame sizes test_frame_sizes runs (None: every f, see sim/benches/lane.py size_order).
SIZES = {10: [10, 5], 12: [9]}


#: The default lane (k = 12) and k = 10 are larger builds: make test-full; so are k = 5 and 8 (make test keeps
#: 2, 3, 4 inside the six shift-only stages, and 7, whose last stage multiplies by a general twiddle).
_BENCH_KS = [pytest.param(k, id=f"k{k}", marks=[pytest.mark.full] if k >= 10 or k in (5, 6, 8) else [])
             for k in sorted(FRAMES)]


@pytest.mark.parametrize("k", _BENCH_KS)
def test_lane_bench(k):
    params = {"log_core": k}
    lane = Lane(**params)
    run_bench(lane, name="lane", params=params, test_module="nantucket.sim.benches.lane",
              facts={"frames": FRAMES[k], "sizes": SIZES.get(k),
                     "latencies": {f: lane.latency_at(f) for f in range(2, k + 1)}})


#: Other fields' lanes on Verilator: k = 7 (its first stage general: the twiddle words of the field's own
#: root chain through a multiplier) and, in make test-full, k = 4 (every stage a shift stage in Goldilocks;
#: the plonky2 engine of tests/test_engine.py runs such lanes in make test).
#: BabyBear and KoalaBear (Montgomery words, only the last stage shift-only, the general output scale):
#: k = 5 of KoalaBear in make test, the others in make test-full.
FIELD_CASES = [pytest.param("goldilocks-plonky2", 4, marks=pytest.mark.full, id="goldilocks-plonky2_k4"),
               pytest.param("goldilocks-plonky2", 7, id="goldilocks-plonky2_k7"),
               pytest.param("koalabear", 5, id="koalabear_k5"),
               pytest.param("babybear", 4, marks=pytest.mark.full, id="babybear_k4"),
               pytest.param("babybear", 7, marks=pytest.mark.full, id="babybear_k7"),
               pytest.param("koalabear", 8, marks=pytest.mark.full, id="koalabear_k8")]


@pytest.mark.parametrize("field, k", FIELD_CASES)
def test_lane_bench_fields(field, k):
    """The lane of another field (sim/benches/lane.py: every test, the field's edge values, stalls and
    idle frames) against that field's stage reference; a lane built for it is its own module."""
    params = {"log_core": k, "field": field}
    lane = Lane(**params)
    assert lane.field.name == field and lane.shared_key != Lane(k).shared_key
    run_bench(lane, name="lane", params=params, test_module="nantucket.sim.benches.lane",
              facts={"frames": 3, "sizes": [k, 3, 2] if k > 4 else None,
                     "latencies": {f: lane.latency_at(f) for f in range(2, k + 1)}})


@pytest.mark.parametrize("field, k", [("goldilocks", 3), ("babybear", 3),
                                      pytest.param("goldilocks", 12, marks=pytest.mark.full),
                                      pytest.param("koalabear", 12, marks=pytest.mark.full)])
def test_lint(field, k):
    from nantucket.hw.flow import catalog
    from nantucket.hw.flow.runner import lint_verilog
    lint_verilog(catalog.emit_verilog("lane", log_core=k, field=field), "lane")
