"""Emit a repeated block's Verilog once and instantiate it wherever it is used.

Amaranth elaborates every instance of a component separately and writes one Verilog module per instance,
so the default kernel (16 lanes of 12 butterflies, 48 more multiply/reduce units in the twiddle
generator) costs minutes and gigabytes to emit and gives Verilator 16 copies of the same lane to compile.
:func:`share` wraps a component whose hardware depends only on its ``shared_key`` (a property naming the
parameters that make it; ``None`` = not shareable): when the design is emitted by
:func:`hw.flow.catalog.verilog_of`, the first instance of each key is converted on its own into module
``nt_<key>`` and every instance becomes an Amaranth ``Instance`` of that module; the modules ride along
in the :class:`VerilogCollector` "platform" and are appended to the top's Verilog. Elaborated any other
way (amaranth.sim, a plain ``convert``), the wrapper is the component itself, so behaviour is identical.
"""

from __future__ import annotations

import re

from amaranth.hdl import ClockSignal, Elaboratable, Instance, ResetSignal, ValueCastable
from amaranth.lib import wiring

__all__ = ["VerilogCollector", "Shared", "share", "module_name"]

_PORT_LIST = re.compile(r"^\s*module\s+(\S+)\s*\(([^)]*)\)\s*;", re.MULTILINE)
_CLOCK_PORT = re.compile(r"(?:(\w+)_)?(clk|rst)")     # Amaranth's names: clk/rst, <domain>_clk/<domain>_rst


def module_name(key: str) -> str:
    """The Verilog module name of shared blocks with ``shared_key`` == key."""
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9_]+", key):
        raise ValueError(f"shared_key: expected letters, digits and '_', got {key!r}")
    return f"nt_{key}"


class VerilogCollector:
    """The platform object :func:`hw.flow.catalog.verilog_of` elaborates with: collects shared modules.

    ``modules``: module name -> Verilog text (every module of that block's own hierarchy),
    in the order they were first needed.
    """

    #: Keep Amaranth's src attributes in the shared modules too (set by hw.flow.catalog.verilog_of).
    emit_src = False

    def __init__(self, top: str):
        self.top = top
        self.modules: dict[str, str] = {}
        self._ports: dict[str, tuple[list[str], type, dict]] = {}

    def module(self, name: str, component) -> list[str]:
        """The port names of shared module ``name``, converting ``component`` into it the first time."""
        from amaranth.back import verilog
        shape = _port_shapes(component)
        if name not in self._ports:
            self._check_name(name)
            text = verilog.convert(component, name=name, platform=self, emit_src=self.emit_src)
            header = {m.group(1): m.group(2) for m in _PORT_LIST.finditer(text)}
            if name not in header:
                raise RuntimeError(f"shared module {name}: no module header in the emitted Verilog")
            ports = [p.strip() for p in header[name].split(",") if p.strip()]
            self._ports[name] = (ports, type(component), shape)
            self.modules[name] = text
        ports, cls, known = self._ports[name]
        # One key must mean one piece of hardware: the same class with the same ports.
        if cls is not type(component) or known != shape:
            raise ValueError(f"shared_key {name[3:]!r}: {type(component).__name__} instances with different "
                             f"ports share a key (the key must name every parameter)")
        return ports

    def add_module(self, name: str, text: str) -> None:
        """A hand-written module (simulation models) that instances in the design refer to by ``name``."""
        self._check_name(name)
        if self.modules.setdefault(name, text) != text:
            raise ValueError(f"module {name!r}: two different texts under one name")

    def _check_name(self, name: str) -> None:
        if name == self.top:
            raise ValueError(f"module {name!r} has the name of the top module")

    def verilog(self, top_text: str) -> str:
        return "\n".join([top_text, *self.modules.values()])


def _port_shapes(component) -> dict:
    """Port name -> (direction, shape) of a component's signature."""
    return {"__".join(map(str, path)): (str(member.flow), repr(member.shape))
            for path, member, _ in component.signature.flatten(component)}


class Shared(Elaboratable):
    """``component`` as an instance of the shared module ``nt_<component.shared_key>`` (see module doc)."""

    def __init__(self, component: wiring.Component):
        if not isinstance(component, wiring.Component):
            raise TypeError(f"component: expected a wiring.Component, got {type(component).__name__}")
        key = getattr(component, "shared_key", None)
        if key is None:
            raise ValueError(f"component: {type(component).__name__} has no shared_key")
        self._component = component
        self._name = module_name(key)

    @property
    def name(self) -> str:
        return self._name

    def elaborate(self, platform):
        comp = self._component
        if not isinstance(platform, VerilogCollector):
            return comp
        # The component itself is never elaborated in this design (the module stands for it): the files
        # that build shared blocks start with "# amaranth: UnusedElaboratable=no" for that.
        ports = platform.module(self._name, comp)
        conns = {}
        for path, member, value in comp.signature.flatten(comp):
            if isinstance(value, ValueCastable):
                value = value.as_value()
            port = "__".join(map(str, path))
            conns[("i_" if member.flow == wiring.In else "o_") + port] = value
        # The rest are the clock and reset of each domain used: clk/rst (sync), <domain>_clk/<domain>_rst.
        for port in set(ports) - {k[2:] for k in conns}:
            m = _CLOCK_PORT.fullmatch(port)
            if m is None:
                raise RuntimeError(f"shared module {self._name}: port {port!r} is neither in the signature "
                                   f"nor a clock or reset")
            domain = m.group(1) or "sync"
            conns[f"i_{port}"] = ClockSignal(domain) if m.group(2) == "clk" else ResetSignal(domain)
        return Instance(self._name, **conns)


def share(component):
    """``Shared(component)`` if it has a ``shared_key``, else the component itself."""
    if getattr(component, "shared_key", None) is None:
        return component
    return Shared(component)
