"""Device backends by name: one small interface (host/backend_base.py), so the CLI and the library run
the same code on every device. Backends register here in :data:`BACKENDS`, with the rule that turns
the CLI's build options into the BuildParams they get (:func:`build_params`).

Each backend takes the keywords of its constructor and no other (:func:`backend_options`): an option
one backend does not take is a TypeError naming it and the valid ones, never dropped. A caller holding
options meant for some backends only (the CLI's ``--xclbin``, ``--device``) keeps those of the chosen one
with :func:`device_options`.
"""

import importlib
from typing import Callable

from nantucket.hw.model import field as F
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams

from .backend_base import Backend, DeviceError, ModelBackend, check_params, keyword_names, unknown_keyword_error

__all__ = ["Backend", "DeviceError", "ModelBackend", "BACKENDS", "register_backend", "make_backend",
           "build_params", "backend_options", "check_options", "device_options"]


BACKENDS: dict[str, Callable[..., Backend]] = {}
ParamsRule = Callable[[int, dict], "BuildParams | None"]
_PARAMS_RULES: dict[str, ParamsRule] = {}


def _given_only(n_points: int, given: dict, field=None) -> BuildParams | None:
    """The model: build options are checked as parameters, and otherwise unused (the model computes in
    any field without a build)."""
    return BuildParams(**given) if given else None


def _kernel_given(n_points: int, given: dict, field=None) -> BuildParams | None:
    """A card: given options name the build the xclbin must hold (the rest at their defaults), checked
    against what the kernel's HBM layout accepts; none given means whatever the xclbin reports."""
    if not given:
        return None
    params = BuildParams(**given) if field is None else BuildParams(**given, field=field)
    HbmLayout(params)
    return params


def _kernel_smallest(n_points: int, given: dict, field=None) -> BuildParams:
    """The simulated card: the smallest kernel build in ``field`` that holds n_points in one call, with the
    given options kept; a size past the largest sim build's (k = 12: 2^24 points) runs on that build, one
    past the given ``log_core``'s 2^(2k) on that one: as a four-step over its calls (host/large.py), as
    the sim backend itself does without parameters (SimBackend.params_for)."""
    from .sim_backend import _LARGEST_SIM_LOG_N
    extra = {} if field is None else {"field": F.get(field, "field").name}
    if "log_core" in given:             # the given core, whatever the size
        n_points = 1
    return BuildParams.smallest_for(min(n_points, 1 << _LARGEST_SIM_LOG_N), check=HbmLayout, **given, **extra)


def register_backend(name: str, factory: Callable[..., Backend],
                     params_rule: ParamsRule = _given_only) -> None:
    BACKENDS[name] = factory
    _PARAMS_RULES[name] = params_rule


def build_params(name: str, n_points: int, given: dict, field=None) -> BuildParams | None:
    """The BuildParams to give backend ``name`` for n_points and the build options ``given`` (lanes,
    log_core, channels; absent ones omitted) in ``field`` (a name; None: the default), or None for the
    backend's own choice. Raises ValueError
    (or TypeError) with a one-line reason when no build the backend accepts fits."""
    _check_name(name)
    if field is not None:
        field = F.get(field, "field").name
    return _PARAMS_RULES.get(name, _given_only)(n_points, given, field)


def _check_name(name) -> None:
    if not isinstance(name, str):
        raise TypeError(f"backend: expected a backend name (str), got {type(name).__name__}")
    if name not in BACKENDS:
        raise ValueError(f"backend: unknown backend {name!r} (choose from {', '.join(sorted(BACKENDS))})")


def backend_options(name: str) -> tuple[str, ...] | None:
    """The keywords backend ``name`` takes (its constructor's), or None when its factory takes any."""
    _check_name(name)
    factory = BACKENDS[name]
    return keyword_names(factory.target() if isinstance(factory, _Lazy) else factory)


def check_options(name: str, options: dict, what: str | None = None) -> None:
    """TypeError naming every keyword of ``options`` backend ``name`` does not take, and the valid ones;
    TypeError when ``params`` is not a BuildParams. ``what`` names the caller (default make_backend)."""
    valid = backend_options(name)
    if valid is not None:
        unknown = [k for k in options if k not in valid]
        if unknown:
            raise unknown_keyword_error(what or f"make_backend({name!r})", unknown, valid)
    check_params(options.get("params"))


def device_options(name: str, **given) -> dict:
    """Of ``given`` (the CLI's device options: params, xclbin, device, progress), the ones backend
    ``name`` takes: ``api.open(name, **device_options(name, params=..., xclbin=..., ...))``. The others are
    left out (the CLI documents --xclbin and --device as the xrt backend's); a backend whose factory
    takes any keyword gets them all."""
    valid = backend_options(name)
    return dict(given) if valid is None else {k: v for k, v in given.items() if k in valid}


def make_backend(name: str, **options) -> Backend:
    """Instantiate a backend by name with its constructor's options (:func:`backend_options`); an
    option it does not take is a TypeError naming it and the valid ones."""
    check_options(name, options)
    return BACKENDS[name](**options)


class _Lazy:
    """The factory of a backend class imported on first use: the registry can list a backend and its
    options without importing its module (xrt imports no pyxrt until a device is opened; sim builds
    and starts nothing until a transform runs)."""

    def __init__(self, module: str, cls: str):
        self.module, self.cls = module, cls

    def target(self) -> type:
        return getattr(importlib.import_module(self.module, __package__), self.cls)

    def __call__(self, **options) -> Backend:
        return self.target()(**options)


register_backend("model", ModelBackend, _given_only)
register_backend("sim", _Lazy(".sim_backend", "SimBackend"), _kernel_smallest)
register_backend("xrt", _Lazy(".xrt", "XrtBackend"), _kernel_given)
