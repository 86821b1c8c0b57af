"""Device backends: one small interface, so the CLI runs the same code on every device.

A backend owns its device memory: ``run(points, inverse)`` moves the points in, runs the transform,
moves the result out and returns it; ``timings`` holds the seconds each phase took in the last run
(``to-device``, ``kernel``, ``from-device``) and ``report`` any further lines a device has to say
(kernel cycles, projected time, ...). Backends register themselves by name in :data:`BACKENDS`, with
the rule that turns the CLI's build options into the BuildParams they get (:func:`build_params`).
"""

import time
from typing import Callable

import numpy as np

from hw.model import ntt as ntt_model
from hw.model.layout import HbmLayout
from hw.model.params import BuildParams

__all__ = ["Backend", "DeviceError", "ModelBackend", "BACKENDS", "register_backend", "make_backend",
           "build_params"]


class DeviceError(RuntimeError):
    """A device failed to run a transform (the message says which device and why)."""


class Backend:
    """Base class: a device that can transform a vector of points."""

    name = "abstract"

    def __init__(self):
        self.timings: dict[str, float] = {}
        self.report: dict[str, str] = {}

    def supports(self, n_points: int) -> str | None:
        """None when n_points can be transformed, else a one-line reason."""
        return None

    def run(self, points: np.ndarray, inverse: bool = False) -> np.ndarray:
        raise NotImplementedError

    def locate(self, index: int) -> str | None:
        """Where output point ``index`` of the last run lived in device memory, as a short text such as
        ``"HBM channel 3, byte 0x1a40"``, or None when the device has no such notion (the model)."""
        return None

    def close(self) -> None:
        pass


class ModelBackend(Backend):
    """The golden model on the host CPU; its device memory is a numpy array."""

    name = "model"

    def __init__(self, params: BuildParams | None = None, **_options):
        super().__init__()
        self.params = params
        self.memory = np.zeros(0, dtype=np.uint64)

    def run(self, points, inverse=False):
        t0 = time.perf_counter()
        self.memory = np.array(points, dtype=np.uint64, copy=True)
        t1 = time.perf_counter()
        self.memory = ntt_model.ntt(self.memory, inverse=inverse)
        t2 = time.perf_counter()
        out = self.memory.copy()
        t3 = time.perf_counter()
        self.timings = {"to-device": t1 - t0, "kernel": t2 - t1, "from-device": t3 - t2}
        return out


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
    # The simulated card lives in sim/ (Verilator, cocotb); only this backend reaches into it.
    from host.sim_backend import SimBackend
    return SimBackend(**options)


register_backend("model", ModelBackend, _given_only)
register_backend("sim", _sim_backend, _kernel_smallest)
register_backend("xrt", _xrt_backend, _kernel_given)
