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


@pytest.mark.parametrize("field, k", CASES)
def test_output_scale_with_stalls(field, k):
    """In each field (Goldilocks: the top roots and 1/N as shifts; BabyBear and KoalaBear: the general
    path, every factor word and 1/N through the Montgomery multiplier), frames (of 2^(f-1) cycles for several f <= k, the first 64 cycles at k = 12), each with its own
    column and N = 2^n (n = 2k and smaller, down to 0), forward, inverse (w_N^(-column m)) and normalize
    (1/N, the column ignored), edge and random points, random enable stalls, against pow() of the root
    and of 2: Y[m] = X[m] * w_N^(+-column * m) or X[m] / N. The cycle, column, n and the two flags of
    each pair are given one enabled cycle ahead."""
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
        for t in range(min(1 << (f - 1), 64)):
            x0 = rng.choice(edges) if rng.random() < 0.3 else rng.randrange(fd.p)
            x1 = rng.choice(edges) if rng.random() < 0.1 else rng.randrange(fd.p)
            items.append((t, col, n, inv, norm, x0, x1))
    got = []

    async def tb(ctx):
        i = -1                                     # -1: one lead-in cycle that gives item 0's controls
        for _ in range(4 * len(items) + 200):
            en = rng.random() < 0.75 or i < 0
            ctx.set(dut.en, en)
            if en and ctx.get(dut.o_valid):
                got.append((ctx.get(dut.o_x0), ctx.get(dut.o_x1)))
            if i + 1 < len(items):
                t, col, n, inv, norm, _, _ = items[i + 1]
                ctx.set(dut.i_next_cycle, t); ctx.set(dut.i_next_column, col); ctx.set(dut.i_log_n, n)
                ctx.set(dut.i_inverse, inv); ctx.set(dut.i_normalize, norm)
            else:
                ctx.set(dut.i_next_cycle, rng.randrange(1 << max(1, k - 1)))
                ctx.set(dut.i_next_column, rng.randrange(1 << k))
            if 0 <= i < len(items):
                ctx.set(dut.i_x0, items[i][5]); ctx.set(dut.i_x1, items[i][6])
                ctx.set(dut.i_valid, 1)
            else:
                ctx.set(dut.i_valid, 0)
            if en:
                i += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(tb)
    sim.run()
    expect = []
    p = fd.p
    for t, col, n, inv, norm, x0, x1 in items:
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
