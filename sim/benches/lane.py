"""cocotb bench for hw.lane.Lane: streams of whole transforms against the golden model.

Every test crosses an *idle* pattern (the input running dry: the controller drops ``en`` in the middle
of a frame, and at frame boundaries whole idle frames with ``i_valid`` low and garbage on the inputs)
with a *stall* pattern (the output not accepted: ``en`` low). Frames rotate between the plain transform,
the pass-1 scaled transform with a random column (c = w_N^column) and the (unscaled) inverse transform,
so the same hardware is shown to compute all of them from the twiddle stream alone. Expected values come
from hw.model.lane.lane_reference (hw.model.ntt's stage reference), never from the lane model or the RTL.

Run-time frame sizes (``test_frame_sizes``): without a reset, a restart with a new ``log_frame`` f and
``log_n`` n before each run of 2^f-point frames (sizes from the ``sizes`` fact, default every f in the
order k, 3, k-1, 2, ...; n = 2f - 1, 2f, 2k and others), the scale c = w_N^column with N = 2^n.
The lane then runs the two passes of an inverse transform at each f: a restart
with ``inverse`` (the inverse stream, output m times w_N^(-column m)) and one with ``normalize`` (times
1/N, the column ignored), against the same reference with c = w_N^(-column) and times 1/N.

Checks: every output frame equals the reference; its first pair leaves exactly ``latency_at(f)``
(the ``latencies`` fact) enabled cycles after its first input pair, its pairs leave on consecutive
enabled cycles (no bubbles), nothing valid leaves for idle frames; ``o_slot_start`` marks every frame
start; and the enabled cycles from the first input to the last output equal frames * 2^(f-1) + latency.
"""

from __future__ import annotations

import random
import time

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from nantucket.hw.model import field as F
from nantucket.hw.model import lane as LM
from nantucket.hw.run import lane_run_layout
from nantucket.hw.multiplier import general_multiplier
from nantucket.sim.benches.lib import PATTERNS, edge_values, pattern, reset, start_clock
from nantucket.hw.flow.runner import bench_facts


def general_words(k: int, f: int, field) -> np.ndarray:
    """Mask over a 2^f frame's stream (2^(f-1), 2) of a 2^k lane: the words its general stages consume
    (field values; not a shift stage's shift amount, not the free slot)."""
    _, stage = LM.twiddle_plan(f)
    phys = np.asarray(LM.physical_stages(k, f) + (-1,))[stage]
    return (stage >= 0) & (phys < LM.shift_stages(k, field))


def hardware_stream(stream: np.ndarray, k: int, f: int, field) -> np.ndarray:
    """The model's stream (hw.model.lane.shift_stream) as the lane takes it: the words of its general
    stages as the field's general multiplier takes them (``encode``, the identity in Goldilocks)."""
    general = general_words(k, f, field)
    unit = general_multiplier(field)
    out = stream.copy()
    out[general] = [unit.encode(int(w)) for w in stream[general]]
    return out


def size_order(k: int) -> list[int]:
    """Every frame size 2..k, in the order k, 3, k-1, 2, then the rest (switching up and down)."""
    first = [f for f in (k, 3, k - 1, 2) if 2 <= f <= k]
    return list(dict.fromkeys(first + list(range(k, 1, -1))))


class LaneTB:
    """Drives whole frames (pairs + twiddle words) into a Lane and collects its output frames."""

    def __init__(self, dut):
        facts = bench_facts()
        self.dut = dut
        self.k = facts["params"]["log_core"]
        #: the lane's field (the ``field`` parameter, default Goldilocks): points, twiddles, reference
        self.field = F.get(facts["params"].get("field", F.DEFAULT_FIELD.name))
        self.P = self.field.p
        self.edges = np.array(edge_values(self.field), dtype=np.uint64)
        self.props = facts["props"]
        self.latencies = {int(f): lat for f, lat in facts["latencies"].items()}
        assert self.latencies[self.k] == self.props["latency"]
        assert self.props["period"] == 1 << (self.k - 1)
        self.frames = int(facts.get("frames", 3))
        self.sizes = [int(f) for f in facts.get("sizes") or size_order(self.k)]
        self.f, self.log_n = self.k, 2 * self.k           # until the first restart
        self.inverse, self.normalize = False, False
        self.log = dut._log

    @property
    def period(self) -> int:
        return 1 << (self.f - 1)

    @property
    def latency(self) -> int:
        return self.latencies[self.f]

    async def start(self):
        d = self.dut
        start_clock(d.clk)
        for s in (d.en, d.restart, d.log_frame, d.run, d.pass2, d.i_valid, d.i_x0, d.i_x1,
                  d.i_w_first, d.i_w_rest):
            s.value = 0
        await reset(d.clk, d.rst)

    async def restart(self, log_frame: int, log_n: int, inverse: bool = False, normalize: bool = False):
        """Pulse ``restart`` with a new frame size, N and output-scale mode (``inverse``: pass 1 of an
        inverse run, ``normalize``: its pass 2; the lane must be empty); the ports then change to random
        values: the lane must have taken them at the restart."""
        d = self.dut
        layout = lane_run_layout(self.k)
        await FallingEdge(d.clk)
        d.restart.value, d.log_frame.value, d.pass2.value = 1, log_frame, int(normalize)
        d.run.value = layout.const({"log_n": log_n, "inverse": int(inverse or normalize)}).as_value().value
        d.en.value, d.i_valid.value = random.getrandbits(1), 0
        await FallingEdge(d.clk)
        d.restart.value, d.en.value = 0, 0
        d.log_frame.value, d.pass2.value = random.randrange(self.k + 1), random.getrandbits(1)
        d.run.value = layout.const({"log_n": random.randrange(2 * self.k + 1), "inverse": random.getrandbits(1),
                                    "coset": random.getrandbits(1)}).as_value().value
        self.f, self.log_n = log_frame, log_n
        self.inverse, self.normalize = inverse, normalize

    def make_frame(self, x: np.ndarray, scale: int | None, inverse: bool = False):
        """(pairs, stream, expected natural-order output) of one frame of the current size. ``scale``:
        the column n2 (the lane multiplies output m by w_N^(n2 m), N = 2^log_n); None for a plain
        transform."""
        assert len(x) == 1 << self.f
        fd = self.field
        pairs = LM.to_lane_pairs(x)
        stream = LM.shift_stream(self.k, scale or 0, inverse=inverse, frame=self.f, field=fd)
        w = fd.root_of_unity(1 << self.log_n)
        c = None if not scale or self.normalize else fd.pow_(fd.inv(w) if self.inverse else w, scale)
        expect = LM.lane_reference(x, c=c, inverse=inverse, field=fd)
        if self.normalize:                               # the lane's pass 2 of an inverse run: times 1/N
            expect = fd.vmul(expect, np.uint64(fd.inv(1 << self.log_n)))
        return pairs, hardware_stream(stream, self.k, self.f, fd), expect

    def random_scale(self) -> int:
        """A random pass-1 column for ``make_frame``."""
        return random.randrange(1, 1 << self.k)

    def random_frames(self, n: int, rng: np.random.Generator):
        """Frame f: plain (f = 0 mod 3), pass-1 scaled at random (1 mod 3), inverse twiddles (2 mod 3)."""
        frames = []
        for f in range(n):
            x = rng.integers(0, self.P, 1 << self.f, dtype=np.uint64)
            scale = self.random_scale() if f % 3 == 1 else None
            frames.append(self.make_frame(x, scale, inverse=f % 3 == 2))
        return frames

    def _garbage(self):
        d = self.dut
        for s in (d.i_x0, d.i_x1, d.i_w_first, d.i_w_rest):
            s.value = random.getrandbits(len(s))

    async def run(self, frames, idle, stall, idle_frame_rate: float = 0.0):
        """Send ``frames`` (None = an idle frame); return the output frames as (2^(k-1), 2) arrays."""
        d, per, lat = self.dut, self.period, self.latency
        slots = []
        for fr in frames:
            if idle_frame_rate and random.random() < idle_frame_rate:
                slots.append(None)
            slots.append(fr)
        n_valid = sum(fr is not None for fr in slots)
        outputs: list[tuple[int, int]] = []
        out_edges: list[int] = []
        start_edges: list[int] = []          # enabled edge that took pair 0 of each valid frame
        edge = 0                             # enabled edges so far
        slot, t = 0, 0
        t0 = time.monotonic()
        cycles = 0
        limit = 40 * (len(slots) + 2) * per + 20 * lat + 1000
        while True:
            await FallingEdge(d.clk)
            cycles += 1
            feeding = slot < len(slots)
            dry = feeding and next(idle)
            en = not next(stall) and not dry
            if en and int(d.o_valid.value):
                outputs.append((int(d.o_x0.value), int(d.o_x1.value)))
                out_edges.append(edge + 1)
                assert len(outputs) <= n_valid * per, "more valid outputs than input pairs"
            if en:
                if feeding:
                    assert int(d.o_slot_start.value) == (t == 0), f"o_slot_start wrong at frame cycle {t}"
                    fr = slots[slot]
                    if fr is None:
                        self._garbage()
                        d.i_valid.value = 0
                    else:
                        pairs, stream, _ = fr
                        d.i_x0.value, d.i_x1.value = int(pairs[t, 0]), int(pairs[t, 1])
                        d.i_w_first.value, d.i_w_rest.value = int(stream[t, 0]), int(stream[t, 1])
                        d.i_valid.value = 1
                        if t == 0:
                            start_edges.append(edge + 1)
                    t += 1
                    if t == per:
                        slot, t = slot + 1, 0
                else:
                    self._garbage()
                    d.i_valid.value = 0
                edge += 1
            else:
                self._garbage()
                d.i_valid.value = random.getrandbits(1)
            d.en.value = int(en)
            if len(outputs) == n_valid * per and not feeding:
                # keep draining a while: nothing else may come out
                if edge >= out_edges[-1] + lat + per:
                    break
            assert cycles < limit, f"timeout: {len(outputs)} of {n_valid * per} output pairs after {cycles} cycles"
        d.en.value = 0
        elapsed = time.monotonic() - t0

        got = np.array(outputs, dtype=np.uint64).reshape(n_valid, per, 2)
        for f in range(n_valid):
            first = out_edges[f * per]
            assert first - start_edges[f] == lat, \
                f"frame {f}: first output {first - start_edges[f]} enabled cycles after its input, latency {lat}"
            assert out_edges[f * per + per - 1] - first == per - 1, f"frame {f}: bubbles inside the output frame"
        first_in = start_edges[0]
        span = out_edges[-1] - first_in + 1
        expect_span = (len(slots) - (slots.index(next(s for s in slots if s is not None)))) * per + lat
        assert span == expect_span, f"{span} enabled cycles from first input to last output, expected {expect_span}"
        self.log.info("k=%d, f=%d: %d frames (%d slots), %d cycles (%d enabled) in %.2f s: %.0f cycles/s",
                      self.k, self.f, n_valid, len(slots), cycles, edge, elapsed, cycles / max(elapsed, 1e-9))
        return got

    def check(self, got, frames):
        valid = [fr for fr in frames if fr is not None]
        for f, (fr, out) in enumerate(zip(valid, got)):
            y = LM.from_lane_pairs(out)
            expect = fr[2]
            if not np.array_equal(y, expect):
                bad = np.flatnonzero(y != expect)
                raise AssertionError(f"frame {f}: {bad.size} wrong outputs, first at X[{bad[0]}]: "
                                     f"got {int(y[bad[0]]):#x}, expected {int(expect[bad[0]]):#x}")


@cocotb.test()
@cocotb.parametrize(idle=PATTERNS, stall=PATTERNS)
async def test_stream(dut, idle, stall):
    """Back-to-back random frames, alternately plain and scaled, with input gaps and output stalls."""
    tb = LaneTB(dut)
    await tb.start()
    rng = np.random.default_rng(random.getrandbits(32))
    frames = tb.random_frames(tb.frames, rng)
    got = await tb.run(frames, pattern(idle, seed=random.getrandbits(32)),
                       pattern(stall, seed=random.getrandbits(32)),
                       idle_frame_rate=0.0 if idle == "none" else 0.3)
    tb.check(got, frames)


@cocotb.test()
@cocotb.parametrize(stall=("none", "random"))
async def test_frame_sizes(dut, stall):
    """Frame sizes switched at run time without a reset: for each f of the ``sizes`` fact a restart
    with log_frame = f and a log_n, then scaled, plain and inverse frames and one of the field's edge
    values (idle gaps and idle frames, stalls)."""
    tb = LaneTB(dut)
    await tb.start()
    rng = np.random.default_rng(random.getrandbits(32))
    for i, f in enumerate(tb.sizes):
        n = [2 * f - 1, 2 * f, 2 * tb.k, random.randrange(1, 2 * tb.k + 1)][i % 4]
        await tb.restart(f, n)
        frames = [tb.make_frame(rng.integers(0, tb.P, 1 << f, dtype=np.uint64), tb.random_scale()),
                  tb.make_frame(rng.integers(0, tb.P, 1 << f, dtype=np.uint64), None),
                  tb.make_frame(rng.integers(0, tb.P, 1 << f, dtype=np.uint64), tb.random_scale(), inverse=True),
                  tb.make_frame(rng.choice(tb.edges, 1 << f), tb.random_scale())]
        got = await tb.run(frames, pattern("random", seed=random.getrandbits(32)),
                           pattern(stall, seed=random.getrandbits(32)), idle_frame_rate=0.3)
        tb.check(got, frames)
        # an inverse transform's two passes at this size: pass 1 (inverse), pass 2 (normalize)
        for inverse, normalize in ((True, False), (False, True)):
            await tb.restart(f, n, inverse, normalize)
            frames = [tb.make_frame(rng.integers(0, tb.P, 1 << f, dtype=np.uint64), tb.random_scale(), inverse=True),
                      tb.make_frame(rng.choice(tb.edges, 1 << f), tb.random_scale(), inverse=True)]
            got = await tb.run(frames, pattern("random", seed=random.getrandbits(32)),
                               pattern(stall, seed=random.getrandbits(32)), idle_frame_rate=0.3)
            tb.check(got, frames)
    await tb.restart(tb.k, 2 * tb.k)                     # forward again for the tests that follow


@cocotb.test()
@cocotb.parametrize(stall=("none", "random"))
async def test_edge_values(dut, stall):
    """All zeros, all p-1, a single 1 (plain and scaled), and the field's edge values."""
    tb = LaneTB(dut)
    await tb.start()
    n = 1 << tb.k
    rng = np.random.default_rng(random.getrandbits(32))
    single = np.zeros(n, dtype=np.uint64)
    single[0] = 1
    edges = rng.choice(tb.edges, n)
    frames = [
        tb.make_frame(np.zeros(n, dtype=np.uint64), None),
        tb.make_frame(np.full(n, tb.P - 1, dtype=np.uint64), None),
        tb.make_frame(single, None),
        tb.make_frame(single, (1 << tb.k) - 1),
        tb.make_frame(edges, None),
        tb.make_frame(np.full(n, tb.P - 1, dtype=np.uint64), tb.random_scale()),
    ]
    got = await tb.run(frames, pattern("none"), pattern(stall, seed=random.getrandbits(32)))
    tb.check(got, frames)
    assert np.all(LM.from_lane_pairs(got[2]) == 1)          # the transform of a single 1 is all ones


@cocotb.test()
async def test_sim_speed(dut):
    """Simulator speed with no Python work per cycle: a constant stream for many cycles, then one
    output frame checked against the lane model (constant points and twiddle words on every cycle)."""
    from cocotb.triggers import ClockCycles

    tb = LaneTB(dut)
    await tb.start()
    d, per, fd = dut, tb.period, tb.field
    x, w = random.randrange(tb.P), random.randrange(tb.P)
    w &= ~0xFF                          # shift stages read the low 8 bits: shift 0, in every stage's set
    d.i_x0.value, d.i_x1.value = x, x
    d.i_w_first.value, d.i_w_rest.value = w, w
    # the general stages read w as their multiplier's word: the field value v with encode(v) = w (encode
    # is v times encode(1))
    value = fd.mul(w, fd.inv(general_multiplier(fd).encode(1)))
    d.i_valid.value = 1
    d.en.value = 1
    cycles = max(int(bench_facts().get("speed_cycles", 4 * per)), tb.latency + 2 * per)
    cycles -= cycles % per                      # stop on a frame boundary
    t0 = time.monotonic()
    await ClockCycles(d.clk, cycles)
    elapsed = time.monotonic() - t0
    tb.log.info("k=%d: %d free-running cycles in %.2f s: %.0f cycles/s", tb.k, cycles, elapsed,
                cycles / max(elapsed, 1e-9))
    # For scripts/bench_lane.py: the measured speed next to the build.
    import json
    from pathlib import Path
    (Path(bench_facts()["build_dir"]) / "speed.json").write_text(
        json.dumps({"log_core": tb.k, "cycles": cycles, "seconds": elapsed}))
    # The output frame now starting is a constant frame's: compare one whole frame with the lane model.
    pairs = np.full((per, 2), x, dtype=np.uint64)
    stream = np.full((per, 2), w, dtype=np.uint64)
    stream[general_words(tb.k, tb.k, fd)] = value
    expect = LM.scaled_lane_transform(pairs, stream, field=fd)
    skip = tb.latency % per                     # output frames start `latency` cycles after input frames
    await FallingEdge(d.clk)
    got = []
    for _ in range(skip):
        await FallingEdge(d.clk)
    for _ in range(per):
        assert int(d.o_valid.value) == 1
        got.append((int(d.o_x0.value), int(d.o_x1.value)))
        await FallingEdge(d.clk)
    assert np.array_equal(np.array(got, dtype=np.uint64), expect)
