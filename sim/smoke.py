"""A tiny component that exists only to prove the simulation flow works end to end (tests/test_runner.py)."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SmokeDelay"]


class SmokeDelay(wiring.Component):
    """o_data = i_data + 1 (mod 2^width), ``latency`` enabled cycles later; holds while ``en`` is 0."""

    def __init__(self, width: int = 8, latency: int = 2):
        if not isinstance(width, int) or isinstance(width, bool):
            raise TypeError(f"width: expected an int, got {type(width).__name__}")
        if not isinstance(latency, int) or isinstance(latency, bool):
            raise TypeError(f"latency: expected an int, got {type(latency).__name__}")
        if width < 1:
            raise ValueError(f"width: must be >= 1, got {width}")
        if latency < 1:
            raise ValueError(f"latency: must be >= 1, got {latency}")
        self._width = width
        self._latency = latency
        super().__init__({"en": In(1), "i_valid": In(1), "i_data": In(width),
                          "o_valid": Out(1), "o_data": Out(width)})

    @property
    def width(self) -> int:
        return self._width

    @property
    def latency(self) -> int:
        return self._latency

    def elaborate(self, platform):
        m = Module()
        valid, data = self.i_valid, (self.i_data + 1)[:self._width]
        for i in range(self._latency):
            v = Signal(name=f"v{i}")
            d = Signal(self._width, name=f"d{i}")
            with m.If(self.en):
                m.d.sync += [v.eq(valid), d.eq(data)]
            valid, data = v, d
        m.d.comb += [self.o_valid.eq(valid), self.o_data.eq(data)]
        return m
