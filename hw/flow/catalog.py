"""Registry of the gateware blocks that can be emitted, simulated and synthesized by name.

Owners add their block with one line in ``COMPONENTS``: a name and a factory taking keyword
parameters (the component's own constructor checks them). The name is also the Verilog top module.
"""

import inspect
import re
from typing import Any, Callable, Mapping

__all__ = ["COMPONENTS", "names", "build", "emit_verilog", "verilog_of", "param_tag"]


def param_tag(params: Mapping[str, Any]) -> str:
    """A directory-safe name for a parameter set: ``depth=2,width=64`` -> ``depth2_width64`` (the build
    directories of simulation and synthesis are named with it)."""
    if not params:
        return "default"
    parts = []
    for k in sorted(params):
        v = params[k]
        if hasattr(v, "tag") and callable(v.tag):      # BuildParams and friends
            v = v.tag()
        elif isinstance(v, Mapping):                     # e.g. BuildParams.as_dict()
            v = "-".join(f"{ik}{iv}" for ik, iv in v.items())
        parts.append(f"{k}{v}")
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", "_".join(parts))


def _make(cls, kw: dict):
    """cls(**kw), with unknown or missing parameters reported (TypeError) before any instance exists
    (a half-built Amaranth component would warn "created but never used")."""
    try:
        inspect.signature(cls).bind(**kw)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}: {e}") from None
    return cls(**kw)


def _modadd(**kw):
    from nantucket.hw.arith import ModAdd
    return _make(ModAdd, kw)


def _modsub(**kw):
    from nantucket.hw.arith import ModSub
    return _make(ModSub, kw)


def _mulreduce(*, field="goldilocks"):
    """The unit of the field's general multiplier (hw.multiplier.general_multiplier, the one choice of
    it): MulReduce for Goldilocks, MontgomeryMulReduce for BabyBear and KoalaBear (``field``: a preset's
    name)."""
    from nantucket.hw.multiplier import general_multiplier
    return general_multiplier(field).unit()


def _butterfly(*, multiplier: str = "general", shifts=None, pass_width: int | None = None, field="goldilocks"):
    """Butterfly over ``field`` (a preset's name) with the named multiplier: "general" (the field's
    general kind, hw.multiplier.general_multiplier), or "shift" with ``shifts`` (amounts as a list or a
    comma-separated string: 0..191 in Goldilocks, only 0 in the 31-bit fields; default all)."""
    from nantucket.hw.arith import as_field
    from nantucket.hw.butterfly import Butterfly
    from nantucket.hw.multiplier import ShiftMultiplier, general_multiplier
    f = as_field(field)
    if multiplier == "general":
        if shifts is not None:
            raise ValueError("shifts: only the shift multiplier takes shift amounts")
        kind = general_multiplier(f)
    elif multiplier == "shift":
        top = f.shift_count - 1
        if isinstance(shifts, str):
            try:
                shifts = [int(s) for s in shifts.split(",")]
            except ValueError:
                raise ValueError(f"shifts: expected amounts 0..{top} separated by commas, got {shifts!r}") from None
        elif isinstance(shifts, int) and not isinstance(shifts, bool):
            shifts = [shifts]
        kind = ShiftMultiplier(shifts, field=f)
    else:
        raise ValueError(f"multiplier: expected 'general' or 'shift', got {multiplier!r}")
    return Butterfly(multiplier=kind, pass_width=pass_width)


def _lane(**kw):
    from nantucket.hw.lane import Lane
    return _make(Lane, kw)


def _control(**kw):
    """ControlSlave from BuildParams fields (lanes=, log_core=, channels=, ...) or params=BuildParams."""
    from nantucket.hw.control import ControlSlave
    from nantucket.hw.model.params import BuildParams
    return ControlSlave(kw["params"] if set(kw) == {"params"} else BuildParams(**kw))


def _dma(lanes: int = 16, log_core: int = 12, channels: int = 32, field: str = "goldilocks", **kw):
    from nantucket.hw.dma import DmaEngine
    from nantucket.hw.model.params import BuildParams
    return DmaEngine(BuildParams(lanes=lanes, log_core=log_core, channels=channels, field=field), **kw)


def _params_component(module: str, cls_name: str):
    """A factory for components built from BuildParams fields (lanes=, log_core=, channels=, ...)."""
    def factory(**kw):
        import importlib
        from nantucket.hw.model.params import BuildParams
        cls = getattr(importlib.import_module(module), cls_name)
        return cls(kw["params"] if set(kw) == {"params"} else BuildParams(**kw))
    return factory


def _coset(**kw):
    """The engine's coset factor generator (hw/coset/) from BuildParams fields, with the offsets of the
    build's lanes."""
    from nantucket.hw.coset import CosetFactors
    from nantucket.hw.lane import Lane
    from nantucket.hw.model.params import BuildParams
    p = kw["params"] if set(kw) == {"params"} else BuildParams(**kw)
    lane = Lane(p.log_core, field=p.prime_field)
    return CosetFactors(p, {f: lane.coset_output_offset(f) for f in range(2, p.log_core + 1)},
                        input_offset=lane.scale_input_offset)


def _permutation(*, hash: str = "poseidon2-koalabear-16", rate="1", unit=None):
    """The permutation engine's core (hw/permutation/) for ``hash`` at ``rate`` (1/k permutations per
    cycle, e.g. "1/4"); ``unit``: only that part of the core (a round unit's index, "head" or "tail": per-unit
    synthesis)."""
    from nantucket.hw.permutation import PermutationCore, core_part
    return PermutationCore(hash, rate) if unit is None else core_part(hash, rate, unit)


def _leaf_sponge(*, scheme: str = "plonky3-koalabear-16", group: int = 32, max_leaf_len: int = 64,
                 core_rate="1/28"):
    """The commitment's leaf sponge (hw/commit/sponge.py) for a 31-bit Plonky3 ``scheme``: ``group`` leaves
    interleaved on one leaf-permutation core at ``core_rate`` (the default: the smallest build)."""
    from nantucket.hw.commit import LeafSponge
    return LeafSponge(scheme, group, max_leaf_len=max_leaf_len, core_rate=core_rate)


def _tree_builder(*, scheme: str = "plonky3-koalabear-16", max_log_leaves: int = 24, core_rate="1/28", depth=None):
    """The commitment's Merkle tree builder (hw/commit/tree.py): one compression core at ``core_rate``."""
    from nantucket.hw.commit import TreeBuilder
    return TreeBuilder(scheme, max_log_leaves=max_log_leaves, core_rate=core_rate, depth=depth)


def _kernel(**kw):
    """The Vitis top (top module ``nantucket`` when emitted for a build)."""
    from nantucket.hw.kernel import VitisKernel
    from nantucket.hw.model.params import BuildParams
    return VitisKernel(kw["params"] if set(kw) == {"params"} else BuildParams(**kw))


#: name -> factory(**params) -> wiring.Component
COMPONENTS: dict[str, Callable] = {
    "modadd": _modadd,
    "modsub": _modsub,
    "mulreduce": _mulreduce,
    "butterfly": _butterfly,
    "lane": _lane,
    "control": _control,
    "dma": _dma,
    "twiddles": _params_component("nantucket.hw.twiddles", "TwiddleGenerator"),
    "engine": _params_component("nantucket.hw.engine", "NttEngine"),
    "ntt_operation": _params_component("nantucket.hw.ntt_operation", "NttOperation"),
    "coset": _coset,
    "kernel": _kernel,
    "permutation": _permutation,
    "leaf_sponge": _leaf_sponge,
    "tree_builder": _tree_builder,
}


def names() -> list[str]:
    return sorted(COMPONENTS)


def build(name: str, **params):
    """A fresh component instance for ``name`` with ``params``."""
    if name not in COMPONENTS:
        raise ValueError(f"name: unknown component {name!r}; known: {', '.join(names())}")
    return COMPONENTS[name](**params)


def verilog_of(component, name: str, *, emit_src: bool = False) -> str:
    """Verilog for an already built component, top module ``name``, followed by the modules of the
    blocks it instantiates through :func:`hw.shared.share` (each emitted once). Synchronizers come out
    marked for the clock-crossing constraints (:class:`hw.flow.constraints.CdcPlatform`). ``emit_src``:
    keep Amaranth's ``(* src = "file:line" *)`` attributes (coverage builds map lines back with them)."""
    from amaranth.back import verilog
    from nantucket.hw.flow.constraints import CdcPlatform
    collector = CdcPlatform(name)
    collector.emit_src = emit_src
    return collector.verilog(verilog.convert(component, name=name, platform=collector, emit_src=emit_src))


def emit_verilog(name: str, **params) -> str:
    """Verilog for the named component; the top module is called ``name``."""
    return verilog_of(build(name, **params), name)
