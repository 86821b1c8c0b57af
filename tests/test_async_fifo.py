"""The DMA's dual-clock FIFO (hw/dma/async_fifo.py): in cocotb on Verilator with two unrelated clocks
(sim/benches/async_fifo.py: random words, random stalls on both sides, capacity, rate, the write reset),
in both ways of working out ``full``; its crossings pass the project's crossing check and its constraints
name real cells; the Gray code round trip; bad arguments."""

import random

import pytest
from amaranth.back import verilog as amaranth_verilog
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from nantucket.hw.dma.async_fifo import AsyncFifo, gray_decode, gray_decode_registered, gray_encode
from nantucket.hw.flow.constraints import CdcPlatform, cdc_tcl, find_dual_clock_rams
from nantucket.hw.flow.crossings import check_constraint_names, find_crossings, read_netlist
from nantucket.hw.flow.runner import run_bench


@pytest.mark.parametrize("exact_full", [False, True], ids=["level_full", "exact_full"])
def test_async_fifo_on_two_clocks(exact_full):
    depth, width = 16, 16
    run_bench(AsyncFifo(width=width, depth=depth, w_domain="w", r_domain="r", level=True, exact_full=exact_full),
              name="async_fifo", params={"depth": depth, "width": width, "exact_full": exact_full},
              test_module="nantucket.sim.benches.async_fifo")


@pytest.mark.parametrize("bits", [2, 5, 9, 11])
def test_gray_round_trip(bits):
    """Encode, decode and the two-stage registered decode (2 cycles later) against the binary value,
    every value of ``bits`` bits (a sample of them past 9 bits)."""
    value, gray, back = Signal(bits), Signal(bits), Signal(bits)
    m = Module()
    m.d.comb += [gray.eq(gray_encode(value)), back.eq(gray_decode(gray))]
    staged = gray_decode_registered(m, "sync", gray, "staged")
    values = list(range(1 << bits)) if bits <= 9 else random.Random(bits).sample(range(1 << bits), 600)
    seen = []

    async def bench(ctx):
        for v in values + [0, 0]:
            ctx.set(value, v)
            seen.append((v, ctx.get(gray), ctx.get(back), ctx.get(staged)))
            await ctx.tick()
    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    for v, g, b, _ in seen:
        assert g == v ^ (v >> 1) and b == v
    assert [s for *_, s in seen[2:]] == values
    # successive codes differ in one bit, across the wrap too
    if bits <= 9:
        codes = [g for _, g, _, _ in seen[:1 << bits]]
        assert all(bin(a ^ b).count("1") == 1 for a, b in zip(codes, codes[1:] + codes[:1]))


@pytest.mark.parametrize("exact_full", [False, True])
def test_crossings_are_synchronizers_and_the_ram(exact_full):
    fifo = AsyncFifo(width=8, depth=16, w_domain="a", r_domain="b", level=True, exact_full=exact_full)
    top = Module()                          # the FIFO an instance inside a top, as in the kernel
    top.submodules.fifo = fifo
    ports = [fifo.w_stream.valid, fifo.w_stream.ready, fifo.w_stream.payload, fifo.w_level,
             fifo.r_stream.valid, fifo.r_stream.ready, fifo.r_stream.payload]
    text = amaranth_verilog.convert(top, name="top", ports=ports, platform=CdcPlatform("top"), emit_src=False)
    netlist = read_netlist(text, "top")
    crossings = find_crossings(netlist, {"a_clk": "a", "b_clk": "b"},
                               lambda port: "b" if "r_stream" in port or port.startswith("b_") else "a")
    assert crossings and all(c.via is not None for c in crossings), crossings
    assert {c.via for c in crossings} == {"synchronizer", "RAM fifo.storage"}
    # each pointer crosses at its synchronizer's first stage, sampled from the other side's register
    # (the reset synchronizer's stages are all preset by the write reset)
    by_end = {c.endpoint: c for c in crossings if c.via == "synchronizer"}
    assert set(by_end) == {f"fifo.{s}" for s in ("w_gry_cdc.stage0", "r_gry_cdc.stage0", "rst_cdc.stage0",
                                                  "rst_cdc.stage1")}
    assert (by_end["fifo.w_gry_cdc.stage0"].start, by_end["fifo.r_gry_cdc.stage0"].start) == ("fifo.w_gry",
                                                                                              "fifo.r_gry")
    assert [(r.path, r.memory, r.write_clock, r.read_clock) for r in find_dual_clock_rams(text, "top")] == \
        [("fifo", "storage", "a_clk", "b_clk")]
    names = check_constraint_names(cdc_tcl(text, "top", {"a_clk": "a_clk", "b_clk": "b_clk"}), netlist)
    assert names["empty"] == []
    for sync in ("w_gry_cdc", "r_gry_cdc"):
        assert {f"fifo/{sync}/stage0_reg[{i}]" for i in range(5)} <= set(names["constrained"])
    assert "fifo/storage_reg/O" in names["constrained"]
    assert "fifo/rst_cdc/stage1_reg/PRE" in names["constrained"]


@pytest.mark.parametrize("kwargs,match", [
    ({"depth": 6}, "depth"), ({"depth": 2}, "depth"), ({"depth": 1, "exact_full": True}, "depth"),
    ({"width": 0}, "width"), ({"r_domain": "w"}, "r_domain")])
def test_bad_arguments(kwargs, match):
    args = {"width": 8, "depth": 8, "w_domain": "w", "r_domain": "r", **kwargs}
    with pytest.raises(ValueError, match=match):
        AsyncFifo(**args)


def test_unknown_keyword():
    with pytest.raises(TypeError):
        AsyncFifo(width=8, depth=8, w_domain="w", r_domain="r", levels=True)
