"""Device backends: one small interface, so the CLI runs the same code on every device.

A backend owns its device memory: ``run(points, inverse)`` moves the points in, runs the transform,
moves the result out and returns it; ``timings`` holds the seconds each phase took in the last run
(``to-device``, ``kernel``, ``from-device``) and ``report`` any further lines a device has to say
(kernel cycles, projected time, ...). Backends register themselves by name in :data:`BACKENDS`.
"""

import time
from typing import Callable

import numpy as np

from hw.model import ntt as ntt_model
from hw.model.params import BuildParams

__all__ = ["Backend", "DeviceError", "ModelBackend", "BACKENDS", "register_backend", "make_backend"]


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


def register_backend(name: str, factory: Callable[..., Backend]) -> None:
    BACKENDS[name] = factory


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
    from sim.backend import SimBackend
    return SimBackend(**options)


register_backend("model", ModelBackend)
register_backend("sim", _sim_backend)
register_backend("xrt", _xrt_backend)
