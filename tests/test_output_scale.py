"""OutputScale (hw/output_scale.py) in amaranth.sim against an independent power computation, and the
structure of the default engine: where its multipliers are."""

import random
import re

import pytest
from amaranth.sim import Simulator

from nantucket.hw.model import field as F
from nantucket.hw.output_scale import OutputScale
from nantucket.sim.benches.lib import edge_values

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")


#: DSP48E2 of the four multipliers: 12 per Goldilocks multiply/reduce, 2 per Montgomery one.
DSP_TILES = {"goldilocks": 48, "babybear": 8, "koalabear": 8}
#: BabyBear at k = 12 in make test-full (KoalaBear's k = 12 runs the same general path in make test).
CASES = [pytest.param(field, k, id=f"{field}_k{k}",
                      marks=[pytest.mark.full] if (field, k) == ("babybear", 12) else [])
         for field in DSP_TILES for k in (2, 4, 12)]


def _simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(testbench)
    sim.run()


@pytest.mark.parametrize("field, k", CASES)
def test_output_scale_with_stalls(field, k):
    """In each field (Goldilocks: the top roots and 1/N as shifts; BabyBear and KoalaBear: the general
    path, every factor word and 1/N through the Montgomery multiplier), frames (of 2^(f-1) cycles for several f <= k, the first 64 cycles at k = 12), each with its own
    column and N = 2^n (n = 2k and smaller, down to 0), forward, inverse (w_N^(-column m)) and normalize
    (1/N, the column ignored), edge and random points, random enable stalls, against pow() of the root
    and of 2: Y[m] = X[m] * w_N^(+-column * m) or X[m] / N. The cycle and column of each pair are given
    one enabled cycle ahead, n and the two flags CONTROL_LEAD (3) ahead, with CONTROL_LEAD - 1 enabled
    cycles without a pair where they change (the lane changes them only at a restart, while it is empty)."""
    fd = F.get(field)
    dut = OutputScale(k, field=fd)
    assert dut.shifted == (field == "goldilocks")
    edges = edge_values(fd)
    rng = random.Random(k)
    top = (1 << k) - 1
    frames = [(k, 2 * k, 0, 0, 0), (k, 2 * k, top, 0, 0), (k, 2 * k, rng.randrange(1 << k), 0, 0),
              (k, 2 * k, top, 1, 0), (k, 2 * k, rng.randrange(1 << k), 1, 0), (k, 2 * k, 0, 1, 0),
              (k, 2 * k, rng.randrange(1 << k), 0, 1), (k, 2 * k, 0, 1, 1),
              (max(2, k - 1), 2 * k - 1, top, 0, 0), (max(2, k - 1), 2 * k - 1, top, 1, 0),
              (2, 3, rng.randrange(1 << k), 0, 0), (2, 3, rng.randrange(1 << k), 1, 0), (2, 3, 0, 0, 1),
              (k, k, rng.randrange(1 << k), 0, 0), (k, k, rng.randrange(1 << k), 1, 0), (k, k, 5 % (1 << k), 1, 1),
              (3, 1, 1, 0, 0), (3, 1, 1, 1, 0), (3, 1, 0, 0, 1), (k, 0, rng.randrange(1 << k), 0, 0),
              (k, 0, 0, 0, 1), (k, 2 * k - 3, rng.randrange(1 << k), 0, 0),
              (k, 2 * k - 3, rng.randrange(1 << k), 1, 0), (k, 2 * k - 3, 0, 0, 1)]
    items = []                                     # (t, column, n, inverse, normalize, x0, x1), back to back
    for f, n, col, inv, norm in frames:
        if items and items[-1][2:5] != (n, inv, norm):
            # the controls change: CONTROL_LEAD - 1 enabled cycles without a pair
            items += [None] * (OutputScale.CONTROL_LEAD - 1)
        for t in range(min(1 << (f - 1), 64)):
            x0 = rng.choice(edges) if rng.random() < 0.3 else rng.randrange(fd.p)
            x1 = rng.choice(edges) if rng.random() < 0.1 else rng.randrange(fd.p)
            items.append((t, col, n, inv, norm, x0, x1))
    got = []

    lead = OutputScale.CONTROL_LEAD

    def controls(j):                               # of the first pair at index j or later
        return next((it[2:5] for it in items[max(j, 0):] if it is not None), None)

    async def tb(ctx):
        i = -lead                                  # lead-in cycles that give item 0's controls
        for _ in range(4 * len(items) + 200):
            en = rng.random() < 0.75 or i < 0
            ctx.set(dut.en, en)
            if en and ctx.get(dut.o_valid):
                got.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
            nxt = items[i + 1] if 0 <= i + 1 < len(items) else None
            # tail mode: the residue flag is ignored, so random
            ctx.set(dut.i_next_new_r, rng.randrange(2))
            if nxt is not None:
                ctx.set(dut.i_next_first, nxt[0] == 0); ctx.set(dut.i_next_column, nxt[1])
            else:
                ctx.set(dut.i_next_first, rng.randrange(2))
                ctx.set(dut.i_next_column, rng.randrange(1 << k))
            ctl = controls(i + 1)
            if ctl is not None:
                for port, v in zip((dut.i_log_n, dut.i_inverse, dut.i_normalize), ctl):
                    ctx.set(port, v)
            if 0 <= i < len(items) and items[i] is not None:
                ctx.set(dut.i_x0, items[i][5]); ctx.set(dut.i_x1, items[i][6])
                ctx.set(dut.i_valid, 1)
            else:
                ctx.set(dut.i_valid, 0)
            if en:
                i += 1
            await ctx.tick()

    _simulate(dut, tb)
    expect = []
    p = fd.p
    for t, col, n, inv, norm, x0, x1 in filter(None, items):
        if norm:
            f0 = f1 = pow(pow(2, n, p), p - 2, p)                 # 1/N by Fermat
        else:
            w = fd.root_of_unity(1 << n)
            e0, e1 = col * 2 * t, col * (2 * t + 1)
            if inv:                                               # w^-e = w^(N - e mod N)
                e0, e1 = (-e0) % (1 << n), (-e1) % (1 << n)
            f0, f1 = pow(w, e0, p), pow(w, e1, p)
        expect.append((x0 * f0 % p, x1 * f1 % p))
    bad = [(i, items[i], g, e) for i, (g, e) in enumerate(zip(got, expect)) if g != e]
    assert got == expect, bad[:4]
    assert dut.dsp_tiles == DSP_TILES[field]


def test_default_engine_structure():
    """Independent count in the emitted Verilog: the lane module holds the general butterflies (one
    multiplier each), the output scale's four multipliers and the coset point scale's two; the twiddle
    generator has none, the coset factor generator three."""
    from nantucket.hw.flow import catalog
    from nantucket.hw.engine import NttEngine
    from nantucket.hw.model.params import BuildParams
    lanes, k = 2, 8                          # k = 8: stages 0, 1 general, 2..7 shift-only
    engine = NttEngine(BuildParams(lanes=lanes, log_core=k, channels=2))
    text = catalog.verilog_of(engine, "engine")
    count = lambda mod: len(re.findall(rf"^\s*{mod}\s+\S+\s*\(", text, re.M))
    assert count(f"nt_lane_k{k}") == lanes
    assert count("nt_butterfly") == 2
    assert count("nt_mulreduce") == 1 + 4 + 4    # in the butterfly module; 4 in the lane; 4
    assert len(re.findall(r"^\s*nt_shift_butterfly\w*\s+\S+\s*\(", text, re.M)) == 6
    assert engine.mul_units == lanes * (2 + 4) + 4


@pytest.mark.parametrize("field", [pytest.param("babybear", marks=pytest.mark.full), "koalabear"])
def test_montgomery_engine_structure(field):
    """A 31-bit engine's multipliers, counted in the emitted Verilog: every stage but the last is a
    general (Montgomery) butterfly, the last a shift butterfly (its one twiddle is 1); the lane's output
    scale has four Montgomery units and no shifter (the coset runs on them), the coset factor generator four;
    no Goldilocks multiply/reduce anywhere."""
    from nantucket.hw.flow import catalog
    from nantucket.hw.engine import NttEngine
    from nantucket.hw.model.params import BuildParams
    lanes, k = 2, 4
    engine = NttEngine(BuildParams(lanes=lanes, log_core=k, channels=2, field=field))
    text = catalog.verilog_of(engine, "engine")
    count = lambda mod: len(re.findall(rf"^\s*{mod}\s+\S+\s*\(", text, re.M))
    assert count(f"nt_lane_k{k}_{field}") == lanes
    assert count(f"nt_butterfly_montgomery_{field}") == k - 1
    assert len(re.findall(rf"^\s*nt_shift_butterfly_{field}\w*\s+\S+\s*\(", text, re.M)) == 1
    assert count(f"nt_montmul_{field}") == 1 + 4 + 4     # in the butterfly module; 4 in the lane; 4
    assert "nt_mulreduce" not in text
    out_scale = text[text.index(f"module \\nt_lane_k{k}_{field}.out_scale "):].split("endmodule")[0]
    assert len(re.findall(rf"^\s*nt_montmul_{field}\s+\S+\s*\(", out_scale, re.M)) == 4
    assert "nt_shiftreduce" not in out_scale
    assert engine.mul_units == lanes * ((k - 1) + 4) + 4


def _run_segments(fd, k, segments, rng, *, max_pairs=None):
    """Drives ``segments`` through an OutputScale(k) in ``fd`` with random enable stalls and checks every
    output against pow() / field.mul, independently of the block's model.

    A segment is (head, stream, f, n, inverse, normalize, frames, gap), frames a list of (column, K), gap
    the idle enabled cycles before its first pair (at least CONTROL_LEAD - 1, and 1). The controls of an
    enabled cycle are those of the pairs entering on the next CONTROL_LEAD enabled cycles, random where
    none does (so a segment's are given exactly CONTROL_LEAD enabled cycles ahead of its first pair). Each frame is 2^(f-1) pairs
    (t = 0, 1, ..), the first ``max_pairs`` at most. In tail segments i_log_frame is random (ignored), in
    stream segments i_head is."""
    from nantucket.hw.model.schedule import lane_input_order
    from nantucket.hw.multiplier import general_multiplier
    dut = OutputScale(k, field=fd)
    lead = OutputScale.CONTROL_LEAD
    encode = general_multiplier(fd).encode
    p = fd.p
    edges = edge_values(fd)
    pick = lambda edge: rng.choice(edges) if rng.random() < edge else rng.randrange(p)
    slots = []          # per enabled cycle: (segment, item or None); item (t, col, K, x0, x1, s0, s1)
    ctls = []
    expect = []
    for head, stream, f, n, inv, norm, frames, gap in segments:
        assert gap >= max(1, lead - 1)
        ctl = (head if not stream else rng.randrange(2), stream,
               f if head or stream else rng.randrange(k + 1), n, inv, norm)
        ctls.append(ctl)
        slots += [(len(ctls) - 1, None)] * gap
        order = lane_input_order(f)
        w = fd.root_of_unity(1 << n)
        for col, kk in frames:
            for t in range((1 << (f - 1)) if max_pairs is None else min(1 << (f - 1), max_pairs)):
                x0, x1, s0, s1 = pick(0.3), pick(0.1), pick(0.2), pick(0.2)
                slots.append((len(ctls) - 1, (t, col, kk, x0, x1, s0, s1)))
                if stream:
                    expect.append((fd.mul(fd.mul(x0, s0), kk), fd.mul(fd.mul(x1, s1), kk)))
                    continue
                if norm:
                    f0 = f1 = pow(pow(2, n, p), p - 2, p)                 # 1/N by Fermat
                else:
                    i0, i1 = (int(v) for v in order[t]) if head else (2 * t, 2 * t + 1)
                    e0, e1 = col * i0, col * i1
                    if inv:                                               # w^-e = w^(N - e mod N)
                        e0, e1 = -e0, -e1
                    f0, f1 = pow(w, e0 % (1 << n), p), pow(w, e1 % (1 << n), p)
                expect.append((x0 * f0 % p, x1 * f1 % p))
    # controls on the enabled cycle of slot j (index j + 1 in ctl_at: slot -1 is the lead-in cycle): those
    # of the pairs entering on the next CONTROL_LEAD enabled cycles, random where none enters
    ctl_at = []
    for j in range(-1, len(slots)):
        near = [slots[i][0] for i in range(j + 1, min(j + 1 + lead, len(slots))) if slots[i][1] is not None]
        assert len(set(near)) <= 1
        ctl_at.append(ctls[near[0]] if near else
                      (rng.randrange(2), rng.randrange(2), rng.randrange(k + 1), rng.randrange(2 * k + 1),
                       rng.randrange(2), rng.randrange(2)))
    got = []

    async def tb(ctx):
        i = -1
        tail = 0
        while tail < dut.latency + 10:
            en = rng.random() < 0.75
            ctx.set(dut.en, en)
            if en and ctx.get(dut.o_valid):
                got.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
            item = slots[i + 1][1] if i + 1 < len(slots) else None
            head, stream, f, n, inv, norm = ctl_at[min(i + 1, len(slots))]
            ctx.set(dut.i_head, head); ctx.set(dut.i_stream, stream); ctx.set(dut.i_log_frame, f)
            ctx.set(dut.i_log_n, n); ctx.set(dut.i_inverse, inv); ctx.set(dut.i_normalize, norm)
            if item is not None:
                # the pair's t starts a frame (0) / a residue of lane_input_order (t = r 2^(a-1) + mm, a =
                # ceil(f/2): the low a - 1 bits 0); the residue flag is random outside head mode (ignored)
                t, (seg_head, seg_stream, seg_f) = item[0], segments[slots[i + 1][0]][:3]
                ctx.set(dut.i_next_first, t == 0)
                ctx.set(dut.i_next_new_r, t % (1 << ((seg_f + 1) // 2 - 1)) == 0 if seg_head and not seg_stream
                        else rng.randrange(2))
                ctx.set(dut.i_next_column, item[1])
                ctx.set(dut.i_next_k, encode(item[2]))
            else:                                  # idle: anything
                ctx.set(dut.i_next_first, rng.randrange(2)); ctx.set(dut.i_next_new_r, rng.randrange(2))
                ctx.set(dut.i_next_column, rng.randrange(1 << k)); ctx.set(dut.i_next_k, rng.randrange(p))
            cur = slots[i][1] if 0 <= i < len(slots) else None
            if cur is not None:
                ctx.set(dut.i_x0, cur[3]); ctx.set(dut.i_x1, cur[4])
                ctx.set(dut.i_s0, encode(cur[5])); ctx.set(dut.i_s1, encode(cur[6]))
                ctx.set(dut.i_valid, 1)
            else:
                ctx.set(dut.i_valid, 0)
                ctx.set(dut.i_x0, rng.randrange(p)); ctx.set(dut.i_x1, rng.randrange(p))
                ctx.set(dut.i_s0, rng.randrange(p)); ctx.set(dut.i_s1, rng.randrange(p))
            if en:
                i += 1
                if i >= len(slots):
                    tail += 1
            await ctx.tick()

    _simulate(dut, tb)
    bad = [(i, g, e) for i, (g, e) in enumerate(zip(got, expect)) if g != e]
    assert len(got) == len(expect) and not bad, (len(got), len(expect), bad[:4])


FIELDS = list(DSP_TILES)
MODE_CASES = [pytest.param(field, k, id=f"{field}_k{k}") for field in FIELDS for k in (2, 4)]


def _columns(rng, k, count):
    top = (1 << k) - 1
    return ([top, 0, 1] + [rng.randrange(1 << k) for _ in range(count)])[:max(count, 1)]


@pytest.mark.parametrize("field, k", MODE_CASES)
def test_output_scale_head(field, k):
    """Head mode (the lane input order's positions at frame size f): forward and inverse, every f in
    2..k (odd and even, f = 2), n = 2k down to 0, several columns per run, normalize; runs separated by
    exactly CONTROL_LEAD or more idle enabled cycles, with tail runs between."""
    fd = F.get(field)
    rng = random.Random(100 + k)
    gap = max(1, OutputScale.CONTROL_LEAD - 1)         # the fewest idle cycles between runs
    segs = []
    for f in range(2, k + 1):
        for n in sorted({2 * k, 2 * k - 1, f, k + 1, 3, 1, 0}):
            for inv in (0, 1):
                segs.append((1, 0, f, n, inv, 0, [(c, 0) for c in _columns(rng, k, 4)],
                             gap + rng.choice([0, 0, 1, 3])))
        segs.append((1, 0, f, 2 * k - 1, rng.randrange(2), 1, [(rng.randrange(1 << k), 0)], gap))
        segs.append((0, 0, f, 2 * k, rng.randrange(2), 0, [(c, 0) for c in _columns(rng, k, 2)], gap))
    _run_segments(fd, k, segs, rng)


@pytest.mark.parametrize("field, k", MODE_CASES)
def test_output_scale_stream(field, k):
    """Stream mode: Y = X * S * K (S per point, K per frame, edge values 0, 1, p-1, p-2 and random), i_head,
    the column, n, i_inverse and i_normalize irrelevant; then switches to tail and head ROM runs and
    back, each after CONTROL_LEAD (or more) idle enabled cycles."""
    fd = F.get(field)
    rng = random.Random(200 + k)
    gap = max(1, OutputScale.CONTROL_LEAD - 1)         # the fewest idle cycles between runs
    p = fd.p
    ks = [0, 1, p - 1, p - 2] + [rng.randrange(p) for _ in range(4)]
    frames = lambda count: [(rng.randrange(1 << k), rng.choice(ks)) for _ in range(count)]
    segs = [
        (0, 1, k, 2 * k, 0, 0, [(0, kk) for kk in ks], gap),
        (0, 1, 2, 2 * k, 1, 1, frames(6), gap + 2),
        (0, 0, k, 2 * k, 0, 0, [(c, 0) for c in _columns(rng, k, 3)], gap),     # tail ROM
        (0, 1, k, k, 1, 0, frames(4), gap),
        (1, 0, k, 2 * k, 1, 0, [(c, 0) for c in _columns(rng, k, 3)], gap + 5),  # head ROM
        (1, 1, max(2, k - 1), 2 * k - 1, 0, 1, frames(5), gap),
        (1, 0, 2, 3, 0, 0, [(c, 0) for c in _columns(rng, k, 3)], gap),
        (0, 0, k, 2 * k, 1, 1, [(0, 0)], gap),                                 # tail normalize
        (0, 1, k, 0, 0, 0, frames(3), gap),
    ]
    _run_segments(fd, k, segs, rng)


@pytest.mark.parametrize("field", FIELDS)
def test_output_scale_modes_k12(field):
    """k = 12, a few whole frames: head forward and inverse (f = 12, f = 11 and f = 7, 2), stream, tail, and the
    switches between them after CONTROL_LEAD idle enabled cycles."""
    fd = F.get(field)
    k, rng = 12, random.Random(12)
    gap = max(1, OutputScale.CONTROL_LEAD - 1)         # the fewest idle cycles between runs
    p = fd.p
    top = (1 << k) - 1
    segs = [
        (0, 0, 12, 24, 0, 0, [(top, 0), (rng.randrange(1 << k), 0)], gap),
        (1, 0, 12, 24, 0, 0, [(top, 0), (rng.randrange(1 << k), 0)], gap),
        (1, 0, 11, 23, 1, 0, [(rng.randrange(1 << k), 0)], gap + 1),
        (1, 0, 7, 21, 0, 0, [(rng.randrange(1 << k), 0) for _ in range(2)], gap),
        (1, 0, 2, 3, 1, 0, [(rng.randrange(1 << k), 0) for _ in range(2)], gap),
        (0, 1, 12, 24, 0, 0, [(0, p - 1), (0, rng.randrange(p))], gap),
        (1, 0, 12, 13, 1, 0, [(rng.randrange(1 << k), 0)], gap),
    ]
    _run_segments(fd, k, segs, rng)


@pytest.mark.parametrize("field", FIELDS)
def test_output_scale_model(field):
    """The block's model (for benches) against pow() at the lane input order's positions and field.mul."""
    from nantucket.hw.model.schedule import lane_input_order
    fd = F.get(field)
    rng = random.Random(7)
    dut = OutputScale(4, field=fd)
    p = fd.p
    for f, n, col, inv in ((4, 8, 13, 0), (3, 5, 7, 1), (2, 3, 15, 0), (4, 1, 3, 1)):
        pairs = [(rng.randrange(p), rng.randrange(p)) for _ in range(1 << (f - 1))]
        w = fd.root_of_unity(1 << n)
        sign = -1 if inv else 1
        for head, order in ((True, lane_input_order(f)), (False, [(2 * t, 2 * t + 1) for t in range(len(pairs))])):
            want = [tuple(x * pow(w, sign * col * int(i) % (1 << n), p) % p for x, i in zip(xy, ij))
                    for xy, ij in zip(pairs, order)]
            assert dut.model(pairs, log_frame=f, log_n=n, column=col, inverse=inv, head=head) == want
        assert dut.model(pairs, log_n=n, normalize=True) == [
            tuple(x * pow(1 << n, p - 2, p) % p for x in xy) for xy in pairs]
        s = [(rng.randrange(p), rng.randrange(p)) for _ in pairs]
        kk = rng.randrange(p)
        assert dut.model(pairs, stream=True, s=s, k=kk) == [
            (x0 * s0 * kk % p, x1 * s1 * kk % p) for (x0, x1), (s0, s1) in zip(pairs, s)]
