"""Several cards behind one device: ``nantucket.open(backend, devices=...)``.

A :class:`MultiDevice` holds one :class:`~host.api.device.Device` per card (each with its own pipeline:
futures.py) and splits every batch by rows: a (B, N) array goes to the cards in contiguous parts (as
equal as B allows), each card moving and transforming its part at the same time as the others, and the
results come back in row order. A single row (1-D, or B = 1) goes whole to the next card in turn, so a
stream of single columns spreads over the cards too. A card that fails is named in the error
(:class:`CardError`). Nobody splits one transform across cards: each row is one card's.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading

import numpy as np

from nantucket.host.backend_base import DeviceError, keywords_checked

from . import checks as C
from .device import DeviceArray
from .futures import DeviceFuture, check_wait

__all__ = ["MultiDevice", "MultiArray", "CardError"]


class CardError(DeviceError):
    """A card of a MultiDevice failed: ``card`` its position, ``cause`` its own error."""

    def __init__(self, message: str, card: int, cause: BaseException):
        super().__init__(message)
        self.card, self.cause = card, cause


class MultiArray:
    """A 1-D (N) or 2-D (B, N) array held by the cards of a :class:`MultiDevice`, in row order: ``parts``
    [(card, DeviceArray)]."""

    def __init__(self, device: "MultiDevice", parts: list, shape: tuple[int, ...]):
        self._device, self._parts, self.shape = device, parts, shape

    device = property(lambda self: self._device)
    dtype = property(lambda self: self._device.field.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))
    resident = property(lambda self: all(a.resident for _, a in self._parts))

    def __len__(self) -> int:
        return self.shape[0]

    @keywords_checked("MultiArray.numpy")
    def numpy(self, *, wait: bool = True) -> np.ndarray:
        """The rows back from every card, in order (``wait=False``: a future of them)."""
        return self._device.numpy(self, wait=wait)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a MultiArray lives on its cards: call .numpy() to bring its data back")

    def __repr__(self) -> str:
        return f"MultiArray(shape={self.shape}, dtype={self.dtype}, cards={[c for c, _ in self._parts]})"


class _Gather(DeviceFuture):
    """The future of a call split over cards: done when every card's part is; its value ``combine`` of
    theirs (in card order), or the first failing card's error as a CardError."""

    def __init__(self, device, what, parts, combine, array=None):
        super().__init__(device, what, array)
        self._parts, self._combine, self._left = parts, combine, len(parts)
        self._lock = threading.Lock()
        if not parts:
            self._future.set_result(combine([]))
        for _, f in parts:
            f.add_done_callback(self._one_done)

    def _one_done(self, _) -> None:
        with self._lock:
            self._left -= 1
            if self._left:
                return
        try:
            for card, f in self._parts:
                e = f.exception()
                if e is not None:
                    raise self.device._card_error(card, e)
            value = self._combine([f.result() for _, f in self._parts])
        except BaseException as e:          # never leave the future pending
            self._future.set_exception(e)
        else:
            self._future.set_result(value)


class MultiDevice:
    """Cards of one backend as one device (see the module's docstring). ``cards``: the Devices;
    ``names``: what each is called in errors (``xrt device 1``, ``sim card 0``)."""

    def __init__(self, name: str, cards: list, names: list[str]):
        self.name, self.cards, self.names = name, cards, names
        self.field = cards[0].field
        self._next = 0                      # the card the next single row goes to
        self._lock = threading.Lock()

    backend = property(lambda self: self.cards[0].backend)
    closed = property(lambda self: all(c.closed for c in self.cards))
    relayouts = property(lambda self: sum(c.relayouts for c in self.cards))

    @property
    def transfers(self) -> dict:
        return {k: sum(c.transfers[k] for c in self.cards) for k in ("to-device", "from-device")}

    def _card_error(self, card: int, e: BaseException) -> BaseException:
        if isinstance(e, (DeviceError, RuntimeError)) and not isinstance(e, CardError):
            err = CardError(f"card {card} of {len(self.cards)} ({self.names[card]}): {e}", card, e)
            err.__cause__ = e
            return err
        return e

    def _split(self, rows: int) -> list[tuple[int, int, int]]:
        """(card, row0, rows) of each part of ``rows`` rows: contiguous, as equal as possible; a single
        row to the next card in turn."""
        k = len(self.cards)
        if rows == 1:
            with self._lock:
                card, self._next = self._next, (self._next + 1) % k
            return [(card, 0, 1)]
        parts, r0 = [], 0
        for card in range(min(k, rows)):
            n = rows // k + (card < rows % k)
            parts.append((card, r0, n))
            r0 += n
        return parts

    def _own(self, a):
        """a MultiArray, or the one a future of this device's makes (else a unchanged)."""
        if isinstance(a, _Gather) and isinstance(a._array, MultiArray) and a.device is self:
            return a._array
        return a

    def _check_own(self, a: MultiArray, name: str) -> None:
        if a._device is not self:
            raise ValueError(f"{name}: the array lives on another device ({a._device.name!r}); "
                             f"move it with {name}.numpy() first")
        if self.closed:
            raise RuntimeError(f"device {self.name!r} is closed")

    def _points(self, x, name: str):
        if isinstance(x, (DeviceArray, DeviceFuture)):
            raise TypeError(f"{name}: an array of a single card's device: give the MultiDevice its "
                            f"{name}.numpy() or a MultiArray of its own")
        if self.closed:
            raise RuntimeError(f"device {self.name!r} is closed")
        return C.as_points(x, name, self.field)

    def _submit(self, wait: bool, what: str, parts, combine, array_shape=None):
        """parts: [(card, DeviceFuture)]; the gathered value (wait) or its future."""
        array = None
        if array_shape is not None:
            array = MultiArray(self, [(c, f._array) for c, f in parts], array_shape)
            combine = (lambda _: array)
        fut = _Gather(self, what, parts, combine, array)
        return fut.result() if wait else fut

    def _on_rows(self, x, name: str, call, what: str, wait: bool, blowup: int = 1):
        """``call(card, rows)`` for each part of the host points x (a new MultiArray)."""
        points = self._points(x, name)
        rows = points.reshape(-1, points.shape[-1])
        parts = []
        for card, r0, n in self._split(rows.shape[0]):
            part = points if points.ndim == 1 else rows[r0:r0 + n]
            parts.append((card, call(self.cards[card], part)))
        shape = points.shape[:-1] + (points.shape[-1] * blowup,)
        return self._submit(wait, what, parts, None, shape)

    # -- the Device interface -----------------------------------------------------------------------

    @keywords_checked("MultiDevice.asarray")
    def asarray(self, x, *, wait: bool = True):
        wait = check_wait(wait)
        x = self._own(x)
        if isinstance(x, MultiArray):
            self._check_own(x, "x")
            return x if wait else self._submit(False, "asarray", [], lambda _: x)
        return self._on_rows(x, "x", lambda dev, part: dev.asarray(part, wait=False), "asarray", wait)

    @keywords_checked("MultiDevice.ntt")
    def ntt(self, a, *, inverse: bool = False, coset: int | None = None, order: str = "nn", wait: bool = True):
        wait = check_wait(wait)
        a = self._own(a)
        kw = dict(inverse=inverse, coset=coset, order=order, wait=False)
        if isinstance(a, MultiArray):
            self._check_own(a, "a")
            parts = [(card, self.cards[card].ntt(arr, **kw)) for card, arr in a._parts]
            return self._submit(wait, "ntt", parts, lambda _: a)
        return self._on_rows(a, "a", lambda dev, part: dev.ntt(part, **kw), "ntt", wait)

    @keywords_checked("MultiDevice.intt")
    def intt(self, a, *, coset: int | None = None, order: str = "nn", wait: bool = True):
        return self.ntt(a, inverse=True, coset=coset, order=order, wait=wait)

    @keywords_checked("MultiDevice.lde")
    def lde(self, values, blowup: int, shift: int, *, wait: bool = True):
        wait = check_wait(wait)
        values = self._own(values)
        blowup = C.check_blowup(blowup)
        if isinstance(values, MultiArray):
            self._check_own(values, "values")
            parts = [(card, self.cards[card].lde(arr, blowup, shift, wait=False)) for card, arr in values._parts]
            return self._submit(wait, "lde", parts, None, values.shape[:-1] + (values.shape[-1] * blowup,))
        return self._on_rows(values, "values", lambda dev, part: dev.lde(part, blowup, shift, wait=False), "lde",
                             wait, blowup)

    @keywords_checked("MultiDevice.numpy")
    def numpy(self, a, *, wait: bool = True):
        wait = check_wait(wait)
        a = self._own(a)
        if not isinstance(a, MultiArray):
            raise TypeError(f"a: expected a MultiArray, got {type(a).__name__}")
        self._check_own(a, "a")
        parts = [(card, self.cards[card].numpy(arr, wait=False)) for card, arr in a._parts]
        one = a.ndim == 1

        def combine(rows):
            return rows[0] if one else np.concatenate(rows)
        return self._submit(wait, "numpy", parts, combine)

    @keywords_checked("MultiDevice.synchronize")
    def synchronize(self) -> None:
        for c in self.cards:
            c.synchronize()

    @keywords_checked("MultiDevice.close")
    def close(self) -> None:
        """Close every card (each finishing its calls first)."""
        with cf.ThreadPoolExecutor(len(self.cards)) as pool:
            list(pool.map(lambda c: c.close(), self.cards))

    def __enter__(self) -> "MultiDevice":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<nantucket.MultiDevice {self.name!r} {self.field.name} x {len(self.cards)} cards"
                f"{' (closed)' if self.closed else ''}>")
