"""hw/shared.py: repeated blocks are emitted once and instantiated; elsewhere they elaborate inline.

That the shared and the inline forms compute the same thing is shown by the block benches themselves: the
Verilator benches (engine, lane, kernel) run the instantiated form, the amaranth.sim tests the inline one,
both against the golden model.
"""

import re

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.flow import catalog
from nantucket.hw.arith import MulReduce
from nantucket.hw.engine import NttEngine
from nantucket.hw.lane import Lane
from nantucket.hw.model.params import BuildParams
from nantucket.hw.shared import Shared, VerilogCollector, module_name, share


def _modules(text):
    return re.findall(r"^module (\S+)\(", text, re.MULTILINE)


def _instances(text, module):
    return len(re.findall(rf"^\s*{re.escape(module)} \S+ \(", text, re.MULTILINE))


@pytest.mark.parametrize("lanes,k", [(2, 4), (4, 7)])
def test_engine_emits_each_repeated_block_once(lanes, k):
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    engine = NttEngine(params)
    text = catalog.verilog_of(engine, "engine")
    mods = _modules(text)
    assert len(mods) == len(set(mods)), "a module emitted twice"
    assert {f"nt_lane_k{k}", "nt_mulreduce"} <= set(mods)
    # independent count of the structure: L lanes of k butterflies, the general ones (stages 0 .. k-7,
    # twiddles beyond the 64th roots of unity) with one multiplier each, the others shift-only; per lane
    # the output scale's four multipliers (which also serve the coset); the coset generator's four;
    # the twiddle generator is a ROM
    general = max(0, k - 6)
    assert _instances(text, f"nt_lane_k{k}") == lanes
    butterflies = [name for name in mods if name.startswith(("nt_butterfly", "nt_shift_butterfly"))]
    assert sum(_instances(text, name) for name in butterflies) == k       # inside the one lane module
    assert sum(_instances(text, name) for name in butterflies if name.startswith("nt_butterfly")) == general
    # one in the general butterfly's module (if any), 4 in the lane module, 4 in the coset generator
    assert _instances(text, "nt_mulreduce") == (1 if general else 0) + 4 + 4
    assert engine.mul_units == lanes * (general + 4) + 4


def test_shared_is_the_component_outside_verilog_emission():
    mul = MulReduce()
    wrapper = Shared(mul)
    assert wrapper.name == "nt_mulreduce"
    assert wrapper.elaborate(None) is mul
    assert share(mul) is not mul and isinstance(share(mul), Shared)


def test_custom_butterfly_lane_is_not_shared():
    from nantucket.hw.butterfly import Butterfly
    lane = Lane(4, butterfly=Butterfly)
    assert lane.shared_key is None and share(lane) is lane
    assert Lane(4).shared_key == "lane_k4"


class _Narrow(wiring.Component):
    shared_key = "thing"

    def __init__(self, width=8):
        super().__init__({"a": In(width), "b": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.b.eq(self.a)
        return m


class _Wide(_Narrow):
    def __init__(self):
        super().__init__(16)


class _Parent(wiring.Component):
    def __init__(self, *children):
        self._children = children
        super().__init__({"x": In(1)})

    def elaborate(self, platform):
        m = Module()
        for i, c in enumerate(self._children):
            m.submodules[f"c{i}"] = share(c)
        return m


def test_one_key_with_two_shapes_is_rejected():
    with pytest.raises(ValueError, match="shared_key 'thing'"):
        catalog.verilog_of(_Parent(_Narrow(), _Wide()), "parent")


def test_same_key_same_shape_is_one_module_with_clock():
    text = catalog.verilog_of(_Parent(_Narrow(), _Narrow()), "parent")
    assert _modules(text).count("nt_thing") == 1 and _instances(text, "nt_thing") == 2
    assert re.search(r"nt_thing \S+ \(\s*\.a\(", text) and ".clk(clk)" in text


def test_bad_key_and_name_clash():
    with pytest.raises(ValueError, match="shared_key"):
        module_name("has space")
    with pytest.raises(ValueError, match="top module"):
        VerilogCollector("nt_thing").module("nt_thing", _Narrow())
    with pytest.raises(TypeError, match="component"):
        Shared(object())
