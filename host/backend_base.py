"""The device interface every backend implements, and the golden-model backend.

A backend owns its device memory: ``run(points, inverse, coset=None, order="nn")`` moves the points in
(1-D, or a (B, N) batch of rows), runs the transform (inverse with 1/N, coset shift g, input and output
orders "nn" / "nr" / "rn" / "rr"), moves the result out and returns it; ``timings`` holds the seconds each phase took in the last run
(``to-device``, ``kernel``, ``from-device``), ``report`` any further lines a device has to say
(kernel cycles, projected time, the size the kernel ran, ...) and ``kernel_log_n`` log2 of the size its
kernel transformed in the last run (None for a device without a kernel, such as the model). The
registry of backends by name is host/backends.py.
"""

import time

import numpy as np

from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams

__all__ = ["Backend", "DeviceError", "ModelBackend"]


class DeviceError(RuntimeError):
    """A device failed to run a transform (the message says which device and why)."""


class Backend:
    """Base class: a device that can transform a vector of points."""

    name = "abstract"

    def __init__(self):
        self.timings: dict[str, float] = {}
        self.report: dict[str, str] = {}
        self.kernel_log_n: int | None = None

    def supports(self, n_points: int) -> str | None:
        """None when n_points can be transformed, else a one-line reason."""
        return None

    def run(self, points: np.ndarray, inverse: bool = False, *, coset: int | None = None,
            order: str = "nn") -> np.ndarray:
        """The transform of every row of ``points`` (1-D: one transform; 2-D: a batch), as a new array of
        the same shape. See :func:`hw.model.ntt.transform` for the definitions."""
        raise NotImplementedError

    def note_resident(self, n: int, rows: int, calls: int, inverse: bool, coset, order: str) -> None:
        """A transform ran on device-resident data (host/api/resident.py) in ``calls`` kernel calls:
        a backend with a report updates it, as :meth:`run` would."""

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

    def run(self, points, inverse=False, *, coset=None, order="nn"):
        t0 = time.perf_counter()
        self.memory = np.array(points, dtype=np.uint64, copy=True)
        t1 = time.perf_counter()
        self.memory = ntt_model.transform(self.memory, inverse=inverse, coset=coset, order=order)
        t2 = time.perf_counter()
        out = self.memory.copy()
        t3 = time.perf_counter()
        self.timings = {"to-device": t1 - t0, "kernel": t2 - t1, "from-device": t3 - t2}
        return out
