"""Device backends by name: one small interface (host/backend_base.py), so the CLI and the library run
the same code on every device. Backends register here in :data:`BACKENDS`, with the rule that turns
the CLI's build options into the BuildParams they get (:func:`build_params`).
"""

from typing import Callable

from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams

from .backend_base import Backend, DeviceError, ModelBackend

__all__ = ["Backend", "DeviceError", "ModelBackend", "BACKENDS", "register_backend", "make_backend",
           "build_params"]


BACKENDS: dict[str, Callable[..., Backend]] = {}
ParamsRule = Callable[[int, dict], "BuildParams | None"]
_PARAMS_RULES: dict[str, ParamsRule] = {}


def _given_only(n_points: int, given: dict) -> BuildParams | None:
    """The model: build options are checked as parameters, and otherwise unused."""
    return BuildParams(**given) if given else None


def _kernel_given(n_points: int, given: dict) -> BuildParams | None:
    """A card: given options name the build the xclbin must hold (the rest at their defaults), checked
    against what the kernel's HBM layout accepts; none given means whatever the xclbin reports."""
    if not given:
        return None
    params = BuildParams(**given)
    HbmLayout(params)
    return params


def _kernel_smallest(n_points: int, given: dict) -> BuildParams:
    """The simulated card: the smallest kernel build that holds n_points, with the given options kept."""
    return BuildParams.smallest_for(n_points, check=HbmLayout, **given)


def register_backend(name: str, factory: Callable[..., Backend],
                     params_rule: ParamsRule = _given_only) -> None:
    BACKENDS[name] = factory
    _PARAMS_RULES[name] = params_rule


def build_params(name: str, n_points: int, given: dict) -> BuildParams | None:
    """The BuildParams to give backend ``name`` for n_points and the build options ``given`` (lanes,
    log_core, channels; absent ones omitted), or None for the backend's own choice. Raises ValueError
    (or TypeError) with a one-line reason when no build the backend accepts fits."""
    if name not in BACKENDS:
        raise ValueError(f"backend: unknown backend {name!r} (choose from {', '.join(sorted(BACKENDS))})")
    return _PARAMS_RULES.get(name, _given_only)(n_points, given)


def make_backend(name: str, **options) -> Backend:
    """Instantiate a backend by name; options are the CLI's device options (params, xclbin, ...)."""
    if name not in BACKENDS:
        raise ValueError(f"backend: unknown backend {name!r} (choose from {', '.join(sorted(BACKENDS))})")
    return BACKENDS[name](**options)


def _xrt_backend(**options) -> Backend:
    from .xrt import XrtBackend      # imports no pyxrt until a device is opened
    return XrtBackend(**options)


def _sim_backend(**options) -> Backend:
    from .sim_backend import SimBackend      # builds and starts nothing until a transform runs

    return SimBackend(**options)


register_backend("model", ModelBackend, _given_only)
register_backend("sim", _sim_backend, _kernel_smallest)
register_backend("xrt", _xrt_backend, _kernel_given)
