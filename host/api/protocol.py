"""The one device protocol: :class:`DeviceProtocol`, the public operations of every device front.

A *front* is what :func:`nantucket.open` gives: a :class:`~host.api.device.Device` (one card or the model),
a :class:`~host.api.multi.MultiDevice` (several cards) or a :class:`~host.api.cluster.ClusterDevice`
(a Dask cluster's workers). Each public operation is declared here once: its name, signature, keyword
check (an unknown keyword is a TypeError naming it, the valid ones and the front: ``MultiDevice.ntt``)
and the ``wait`` check (``wait=False``: a :class:`~host.api.futures.DeviceFuture` of the call). The front
serves it through one protected hook (``asarray`` -> ``_serve_asarray``, with the keywords checked
and ``wait`` a bool), so a front cannot declare an operation with another signature, and an
operation added here is on one card, several cards and a cluster at once:

- an operation composed of the others (``intt`` is ``ntt`` inverse; calls written only against this
  protocol, such as the commitments' ``commit`` and ``lde_commit``, host/api/commit_device.py's
  ``CommitCalls``, which the protocol inherits) is a method here and nothing in the fronts;
- an operation each front does its own way has an abstract hook: every front must serve it, or say
  why it cannot in its hook by raising :class:`NotServed` (:meth:`DeviceProtocol.not_served`).

``free(a)`` is one of them: on every front it gives the array's device memory back at once (a card's
buffers, the model's host rows, a worker's parts), after the calls submitted before it that use the
array; any later use of the array is a ValueError saying it was freed. Without it, an array's memory
goes when the array is garbage-collected (and with the device's ``close``).
"""

from __future__ import annotations

import abc

from nantucket.host.backend_base import keywords_checked

from .commit_device import CommitCalls
from .futures import check_wait

__all__ = ["DeviceProtocol", "NotServed", "OPERATIONS"]

#: The public operations of the protocol, in the order the docs list them.
OPERATIONS = ("asarray", "ntt", "intt", "lde", "numpy", "rows", "free", "synchronize", "close", "commit",
              "lde_commit")


class NotServed(NotImplementedError):
    """An operation of the device protocol that a front cannot serve (the message says which and why)."""


def _label(name: str):
    return lambda device: f"{device.front}.{name}"


class DeviceProtocol(CommitCalls, abc.ABC):
    """What every device front serves (see the module). ``front``: the class name messages give;
    ``name``: the device's; ``field``: the prime field it computes in; ``closed``: whether it is closed.
    The Merkle commitment calls ``commit`` and ``lde_commit`` come from :class:`~host.api.commit_device.
    CommitCalls`, written against the operations below only."""

    front = "DeviceProtocol"

    # -- the operations ---------------------------------------------------------------------------------

    @keywords_checked(_label("asarray"))
    def asarray(self, x, *, axis: int | None = None, ext: int | None = None, wait: bool = True):
        """x (numpy uint64 array, uint32 for a 31-bit field, or list of ints; 1-D or 2-D; values below the
        device field's p) as an array of this device, of x's shape; an array of this device is returned as
        is. ``axis``: the axis of each polynomial's points (-1, the default: rows; 0: the columns of an
        (N, B) matrix); ``ext``: D, the trailing axis holds the D limbs of extension-field elements
        (docs/api.md, "Shapes"). ``wait=False``: a DeviceFuture of it (docs/api.md "Asynchronous calls")."""
        return self._serve_asarray(x, axis, ext, check_wait(wait))

    @keywords_checked(_label("ntt"))
    def ntt(self, a, *, inverse: bool = False, coset: int | None = None, order: str = "nn",
            axis: int | None = None, ext: int | None = None, wait: bool = True):
        """The NTT (or with inverse=True the inverse NTT) of every row of ``a``, in place for an array of
        this device (returned), else of ``a`` moved to the device first (a new array). If a run fails, the
        array keeps its previous contents; on a card, where the kernel may have written part of them, it is
        refused from then on (a RuntimeError naming the failed run).

        coset: shift g (0 < g < p of the device's field) or None; order: "nn", "nr", "rn" or "rr" (input
        then output order, n = natural, r = bit-reversed); axis, ext: as for :meth:`asarray` (an array's
        own by default; a different one is a ValueError). See docs/api.md for the definitions. ``a`` may
        also be a DeviceFuture of this device's array; ``wait=False`` returns a DeviceFuture."""
        return self._serve_ntt(a, inverse, coset, order, axis, ext, check_wait(wait))

    @keywords_checked(_label("intt"))
    def intt(self, a, *, coset: int | None = None, order: str = "nn", axis: int | None = None,
             ext: int | None = None, wait: bool = True):
        """The inverse NTT of every row of ``a``: :meth:`ntt` with ``inverse=True``."""
        return self._serve_ntt(a, True, coset, order, axis, ext, check_wait(wait))

    @keywords_checked(_label("lde"))
    def lde(self, values, blowup: int, shift: int, *, order: str = "nn", return_coeffs: bool = False,
            axis: int | None = None, ext: int | None = None, wait: bool = True):
        """Low-degree extension, as one sequence on the device; returns a new array.

        values: the M evaluations of a polynomial of degree < M on the M-th roots of unity, 1-D or a
        (B, M) batch; the result holds its evaluations on the coset shift * <w_(blowup*M)>: inverse NTT
        of size M, zero-extension to blowup*M, coset NTT with the shift. ``order``: the values' order then
        the result's ("nn", the default; "nr": bit-reversed evaluations, a Merkle tree's leaves; "rn",
        "rr"), composed into the layout step where the data is on a card. ``return_coeffs``: return
        (evaluations, coefficients), the coefficients (natural order, a numpy array of the values' shape,
        axis and ext) the inverse step computed. axis, ext: as for :meth:`ntt` (the result has the same
        ones). values is left unchanged."""
        return self._serve_lde(values, blowup, shift, order, return_coeffs, axis, ext, check_wait(wait))

    @keywords_checked(_label("numpy"))
    def numpy(self, a, *, out=None, wait: bool = True):
        """``a.numpy()``: a new numpy array with the contents of ``a`` (an array of this device, or a
        DeviceFuture of one), or written into ``out`` (a writable C-contiguous numpy array of ``a``'s shape
        and the field's dtype, checked when the call is made; the gather writes each point in its place,
        no temporary) and ``out`` returned; ``wait=False``: a DeviceFuture of it (``out`` then holds the
        contents once the future is done)."""
        return self._serve_numpy(a, out, check_wait(wait))

    @keywords_checked(_label("rows"))
    def rows(self, a, indices, *, wait: bool = True):
        """``a.rows(indices)``: rows ``indices`` (ints, numpy's negative ones included, any order, repeats
        allowed) of ``a``, a (B, N) array of rows of this device (or a DeviceFuture of one), as a new
        (len(indices), N) numpy array of the field's dtype. On a card only those rows move (a Merkle
        opening's rows of a committed matrix); ``transfers`` counts them. ``wait=False``: a DeviceFuture."""
        return self._serve_rows(a, indices, check_wait(wait))

    @keywords_checked(_label("free"))
    def free(self, a) -> None:
        """Give the device memory of ``a`` (an array of this device, or a DeviceFuture of one) back now,
        after the calls submitted before that use it; any later use of ``a`` is a ValueError."""
        self._serve_free(a)

    @keywords_checked(_label("synchronize"))
    def synchronize(self) -> None:
        """Wait until every call submitted so far has finished (their errors stay with their futures)."""
        self._serve_synchronize()

    @keywords_checked(_label("close"))
    def close(self) -> None:
        """Finish the calls submitted so far, then release the device; its arrays become unusable."""
        self._serve_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- what a front provides ------------------------------------------------------------------------

    def not_served(self, operation: str, why: str) -> NotServed:
        """The error of an ``operation`` this front cannot serve, ``why`` saying the reason."""
        return NotServed(f"{self.front}.{operation}: not served on {self.name!r}: {why}")

    @abc.abstractmethod
    def _serve_asarray(self, x, axis, ext, wait: bool):
        """:meth:`asarray` (its keywords checked, ``wait`` a bool)."""

    @abc.abstractmethod
    def _serve_ntt(self, a, inverse, coset, order, axis, ext, wait: bool):
        """:meth:`ntt` and :meth:`intt`."""

    @abc.abstractmethod
    def _serve_lde(self, values, blowup, shift, order, return_coeffs, axis, ext, wait: bool):
        """:meth:`lde`."""

    @abc.abstractmethod
    def _serve_numpy(self, a, out, wait: bool):
        """:meth:`numpy`."""

    @abc.abstractmethod
    def _serve_rows(self, a, indices, wait: bool):
        """:meth:`rows`."""

    @abc.abstractmethod
    def _serve_free(self, a) -> None:
        """:meth:`free`."""

    @abc.abstractmethod
    def _serve_synchronize(self) -> None:
        """:meth:`synchronize`."""

    @abc.abstractmethod
    def _serve_close(self) -> None:
        """:meth:`close`."""
