"""Several cards behind one device: ``nantucket.open(backend, devices=...)``.

A :class:`MultiDevice` holds one :class:`~host.api.device.Device` per card (each with its own pipeline:
futures.py) and splits every batch by rows: a (B, N) array goes to the cards in contiguous parts (as
equal as B allows), each card moving and transforming its part at the same time as the others, and the
results come back in row order. A single row (1-D, or B = 1) goes whole to the next card in turn, so a
stream of single columns spreads over the cards too. With ``axis=0`` the batch's elements are the
columns of an (N, B) matrix, and with ``ext`` each element has D limbs: the parts are then columns
(views; the card's layout step reads them in place) and the limbs stay together. A card that fails is named in the error
(:class:`CardError`). Nobody splits one transform across cards: each row is one card's.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading

import numpy as np


from nantucket.host.backend_base import DeviceError, keywords_checked

from . import checks as C
from .device import DeviceArray, check_not_freed, check_out, row_indices
from .futures import DeviceFuture
from .protocol import DeviceProtocol
from .split import SplitArray

__all__ = ["MultiDevice", "MultiArray", "CardError"]


class CardError(DeviceError):
    """A card of a MultiDevice failed: ``card`` its position, ``cause`` its own error."""

    def __init__(self, message: str, card: int, cause: BaseException):
        super().__init__(message)
        self.card, self.cause = card, cause


class MultiArray(SplitArray):
    """A 1-D (N) or 2-D (B, N) array held by the cards of a :class:`MultiDevice`, in row order: ``parts``
    [(card, DeviceArray)]."""

    _where, _holders_name = "its cards", "cards"
    resident = property(lambda self: all(a.resident for _, a in self.parts))

    @keywords_checked("MultiArray.rows")
    def rows(self, indices, *, wait: bool = True):
        """Rows ``indices`` of a (B, N) array (see :meth:`MultiDevice.rows`)."""
        return self.device.rows(self, indices, wait=wait)

    def _holders(self) -> list:
        return [c for c, _ in self._parts]


class _Gather(DeviceFuture):
    """The future of a call split over cards: done when every card's part is; its value ``combine`` of
    theirs (in card order), or the first failing card's error as ``card_error(card, error)`` gives it
    (a CardError)."""

    def __init__(self, device, what, parts, combine, array=None, card_error=None):
        super().__init__(device, what, array)
        self._parts, self._combine, self._left = parts, combine, len(parts)
        self._card_error = card_error or (lambda card, e: e)
        #: while pending, each card's future of its part of ``array`` (in the array's part order), what a
        #: next call on that card reads (it fails with that card's error); None once done
        self._sources = [f for _, f in parts] if array is not None and parts else None
        self._lock = threading.Lock()
        if not parts:
            self.set_result(combine([]))
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
                    raise self._card_error(card, e)
            value = self._combine([f.result() for _, f in self._parts])
        except BaseException as e:          # never leave the future pending
            self.set_exception(e)
        else:
            self.set_result(value)
        finally:
            # the parts' futures call back into this one: a cycle that would keep every card's arrays
            # (and their device buffers) until the garbage collector's next pass
            with self._lock:
                self._parts, self._combine, self._sources = [], None, None

    def sources(self) -> list | None:
        """While the call is pending: each card's future of its part of ``array`` (in the array's part
        order), what a next call on that card reads; None once it is done (or when it makes no array)."""
        with self._lock:
            return self._sources


class MultiDevice(DeviceProtocol):
    """Cards of one backend as one device (see the module's docstring): the device protocol's operations
    (host/api/protocol.py), each split over the cards. ``cards``: the Devices; ``names``: what each is
    called in errors (``xrt device 1``, ``sim card 0``)."""

    front = "MultiDevice"

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
        """(a MultiArray, what each of its parts' cards reads: its DeviceArray, or while the call that makes
        or transforms it may be pending, that card's future of it) for a MultiArray or a future of this
        device's that gives one; (a unchanged, None) otherwise. The future of a call that failed raises its
        error (as on a single device): its parts are not what the call was to make."""
        if isinstance(a, MultiArray):
            return a, [arr for _, arr in a.parts]
        if isinstance(a, _Gather) and isinstance(a.array, MultiArray) and a.device is self:
            sources = a.sources()
            if sources is None:             # done
                error = a.exception()
                if error is not None:
                    raise error
                return a.array, [arr for _, arr in a.array.parts]
            return a.array, sources
        return a, None

    def _check_own(self, a: MultiArray, name: str) -> None:
        if a.device is not self:
            raise ValueError(f"{name}: the array lives on another device ({a.device.name!r}); "
                             f"move it with {name}.numpy() first")
        if self.closed:
            raise RuntimeError(f"device {self.name!r} is closed")
        check_not_freed(a, name)

    def _points(self, x, name: str, axis=None, ext=None):
        """x checked as points, and their layout (checks.Shape; ``axis`` default -1)."""
        if isinstance(x, (DeviceArray, DeviceFuture)):
            raise TypeError(f"{name}: an array of a single card's device: give the MultiDevice its "
                            f"{name}.numpy() or a MultiArray of its own")
        if self.closed:
            raise RuntimeError(f"device {self.name!r} is closed")
        return C.as_shaped(x, name, self.field, -1 if axis is None else axis, ext, native=True)

    def _submit(self, wait: bool, what: str, parts, combine, array_layout=None, coeffs_layout=None, in_place=None):
        """parts: [(card, DeviceFuture)]; the gathered value (wait) or its future: the new MultiArray of
        ``array_layout`` (with ``coeffs_layout``: it and the coefficients of every card's part joined in
        order, an LDE's ``return_coeffs``), or ``in_place``, the MultiArray the parts transform (the
        future is then one the next call can be given, as a single device's)."""
        array = in_place
        if array_layout is not None:
            array = MultiArray(self, [(c, f.array) for c, f in parts], array_layout.shape, array_layout)
            combine = (lambda _: array) if coeffs_layout is None else (
                lambda got: (array, coeffs_layout.join([c for _, c in got])))
        fut = _Gather(self, what, parts, combine, array, self._card_error)
        return fut.result() if wait else fut

    def _on_rows(self, x, name: str, call, what: str, wait: bool, blowup: int = 1, axis=None, ext=None,
                 coeffs: bool = False):
        """``call(card, part, axis, ext)`` for each part of the host points x (a new MultiArray; with
        ``coeffs`` and the coefficients, joined in the points' layout): the batch's elements (rows, or
        columns with axis 0) split over the cards, each part a view."""
        points, layout = self._points(x, name, axis, ext)
        parts = []
        for card, e0, n in self._split(layout.elements):
            parts.append((card, call(self.cards[card], layout.part(points, e0, e0 + n), layout.axis, layout.ext)))
        return self._submit(wait, what, parts, None, layout.resized(layout.n * blowup), layout if coeffs else None)

    # -- the protocol's operations (host/api/protocol.py declares them, their keywords and wait) -------

    def _serve_asarray(self, x, axis, ext, wait):
        x, sources = self._own(x)
        if isinstance(x, MultiArray):
            self._check_own(x, "x")
            x.layout.check_same(axis, ext, "x")
            return x if wait else self._submit(False, "asarray", [], lambda _: x, in_place=x)
        return self._on_rows(x, "x", lambda dev, part, ax, ex: dev.asarray(part, axis=ax, ext=ex, wait=False),
                             "asarray", wait, axis=axis, ext=ext)

    def _serve_ntt(self, a, inverse, coset, order, axis, ext, wait):
        a, sources = self._own(a)
        kw = dict(inverse=inverse, coset=coset, order=order, wait=False)
        if isinstance(a, MultiArray):
            self._check_own(a, "a")
            a.layout.check_same(axis, ext, "a")
            parts = [(card, self.cards[card].ntt(src, **kw)) for (card, _), src in zip(a.parts, sources)]
            return self._submit(wait, "ntt", parts, lambda _: a, in_place=a)
        return self._on_rows(a, "a", lambda dev, part, ax, ex: dev.ntt(part, axis=ax, ext=ex, **kw), "ntt", wait,
                             axis=axis, ext=ext)

    def _serve_lde(self, values, blowup, shift, order, return_coeffs, axis, ext, wait):
        """Device.lde split by the batch's elements over the cards; with ``return_coeffs`` (a new
        MultiArray, the coefficients of every card's part joined back in order)."""
        values, sources = self._own(values)
        blowup = C.check_blowup(blowup)
        kw = dict(order=C.check_order(order), return_coeffs=C.check_flag(return_coeffs, "return_coeffs"), wait=False)
        if isinstance(values, MultiArray):
            self._check_own(values, "values")
            layout = values.layout
            layout.check_same(axis, ext, "values")
            parts = [(card, self.cards[card].lde(src, blowup, shift, **kw))
                     for (card, _), src in zip(values.parts, sources)]
            return self._submit(wait, "lde", parts, None, layout.resized(layout.n * blowup),
                                layout if kw["return_coeffs"] else None)
        return self._on_rows(values, "values",
                             lambda dev, part, ax, ex: dev.lde(part, blowup, shift, axis=ax, ext=ex, **kw),
                             "lde", wait, blowup, axis=axis, ext=ext, coeffs=kw["return_coeffs"])

    def _serve_numpy(self, a, out, wait):
        a, sources = self._own(a)
        if not isinstance(a, MultiArray):
            raise TypeError(f"a: expected a MultiArray (or a future of one), got {type(a).__name__}")
        self._check_own(a, "a")
        check_out(out, a.shape, a.dtype)
        parts = [(card, self.cards[card].numpy(src, wait=False)) for (card, _), src in zip(a.parts, sources)]
        layout = a.layout

        def combine(rows):
            joined = layout.join(rows)          # along the batch axis: rows, or columns with axis 0
            if out is None:
                return joined
            np.copyto(out, joined)
            return out
        return self._submit(wait, "numpy", parts, combine)

    def _serve_rows(self, a, indices, wait):
        """Device.rows over the cards: each card brings back only the rows asked of its part, joined in
        the order asked."""
        a, sources = self._own(a)
        if not isinstance(a, MultiArray):
            raise TypeError(f"a: expected a MultiArray (or a future of one), got {type(a).__name__}")
        self._check_own(a, "a")
        wanted = row_indices(a, indices)
        parts, picks, r0 = [], [], 0
        for (card, arr), src in zip(a.parts, sources):
            mine = np.flatnonzero((wanted >= r0) & (wanted < r0 + arr.shape[0]))
            if mine.size:
                parts.append((card, self.cards[card].rows(src, (wanted[mine] - r0).tolist(), wait=False)))
                picks.append(mine)
            r0 += arr.shape[0]
        n = a.shape[1]

        def combine(got):
            out = np.empty((wanted.size, n), dtype=a.dtype)
            for mine, rows in zip(picks, got):
                out[mine] = rows
            return out
        return self._submit(wait, "rows", parts, combine)

    def _serve_free(self, a) -> None:
        """Device.free of every card's part (each after that card's calls on it)."""
        a, sources = self._own(a)
        if not isinstance(a, MultiArray):
            raise TypeError(f"a: expected a MultiArray of this device (or a future of one), got {type(a).__name__}")
        self._check_own(a, "a")
        a.freed = True
        errors = []
        for (card, _), src in zip(a.parts, sources):
            try:
                self.cards[card].free(src)
            except (DeviceError, RuntimeError) as e:
                errors.append(self._card_error(card, e))
        if errors:
            raise errors[0]

    def _serve_synchronize(self) -> None:
        for c in self.cards:
            c.synchronize()

    def _serve_close(self) -> None:
        """Close every card (each finishing its calls first)."""
        with cf.ThreadPoolExecutor(len(self.cards)) as pool:
            list(pool.map(lambda c: c.close(), self.cards))

    def __repr__(self) -> str:
        return (f"<nantucket.MultiDevice {self.name!r} {self.field.name} x {len(self.cards)} cards"
                f"{' (closed)' if self.closed else ''}>")
