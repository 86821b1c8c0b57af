"""What an array split over several devices is: :class:`SplitArray`, the base of the arrays of a
MultiDevice (its cards, host/api/multi.py) and of a ClusterDevice (its workers, host/api/cluster.py).

Such an array holds ``parts`` (one per device holding some of its batch's elements, in order; what a
part is, the subclass says), its ``shape`` and its layout (``checks.Shape``: ``axis`` and ``ext``);
``numpy()`` asks the device that made it to gather the parts back.
"""

from __future__ import annotations

import numpy as np

from nantucket.host.backend_base import keywords_checked

from . import checks as C

__all__ = ["SplitArray"]


def _numpy(self, *, out: np.ndarray | None = None, wait: bool = True) -> np.ndarray:
    """The parts back from every device, joined in order (or into ``out``, as DeviceArray.numpy's;
    ``wait=False``: a future of them)."""
    return self.device.numpy(self, out=out, wait=wait)


class SplitArray:
    """A 1-D (N) or 2-D (B, N) array (with ``ext``, a trailing axis of limbs) whose batch elements live on
    the devices of ``device``, in order: ``parts`` as the subclass keeps them. Subclasses name where the
    parts live (``_where``, for the error of ``np.asarray``) and list their holders (:meth:`_holders`,
    for ``repr``). ``layout``: how the shape maps onto the parts' rows (checks.Shape: ``axis``, ``ext``);
    ``freed``: whether the device's ``free`` gave the parts' memory back (every later use raises)."""

    #: where the parts live ("its cards"), for messages
    _where = "several devices"
    #: the repr's name for the holders of the parts
    _holders_name = "devices"

    def __init__(self, device, parts: list, shape: tuple[int, ...], layout: C.Shape | None = None):
        self._device, self._parts, self.shape = device, parts, tuple(shape)
        self._layout = layout if layout is not None else C.Shape.rows_of(self.shape)
        self.freed = False

    parts = property(lambda self: self._parts, doc="The parts, one per device holding some of the batch's "
                     "elements, in order (what a part is, the subclass says).")
    layout = property(lambda self: self._layout, doc="How the shape maps onto the parts' rows (checks.Shape).")
    axis = property(lambda self: self._layout.axis)
    ext = property(lambda self: self._layout.ext)

    device = property(lambda self: self._device)
    dtype = property(lambda self: self._device.field.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # numpy's unknown-keyword error names the subclass ("MultiArray.numpy")
        cls.numpy = keywords_checked(f"{cls.__name__}.numpy")(_numpy)

    def _holders(self) -> list:
        """Who holds each part, in order (cards, workers)."""
        raise NotImplementedError

    def __len__(self) -> int:
        return self.shape[0]

    numpy = _numpy

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"a {type(self).__name__} lives on {self._where}: call .numpy() to bring its data back")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, {self._holders_name}={self._holders()})"
