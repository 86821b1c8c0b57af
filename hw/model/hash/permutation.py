"""The interface every hash permutation of the golden model keeps, and the registry that names them.

A :class:`Permutation` maps states of ``width`` canonical field elements to states of ``width`` canonical
field elements, vectorized over any leading shape: ``perm.permute(states)`` takes an array of shape
``(..., width)`` (or a flat list/tuple of ints, one state) and returns a new array of the same shape in the
field's host dtype (``Field.dtype``: uint32 for the 31-bit fields, uint64 for Goldilocks). Inputs must be
canonical (below p): a hash's reference takes field elements, not integers, so a value at or above p is a
ValueError rather than something reduced silently.

Each permutation publishes its :class:`RoundStructure` and its count of *general* multiplies per call: the
multiplies a gateware core needs a full field multiplier for. S-boxes count by their addition chain
(x^3 = 2, x^7 = 4); a multiply by a small or power-of-two constant, which the gateware does with adds and
shifts, is not general; a linear layer's multiplies by arbitrary field constants are (the permutation says
how many in :attr:`Permutation.linear_multiplies`).

Permutations register a factory by name at import (:func:`register`); :func:`permutation` builds each one
once and caches it.
"""

from __future__ import annotations

import abc
import difflib
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from ..field import Field

__all__ = ["RoundStructure", "Permutation", "PERMUTATIONS", "permutation", "register", "addition_chain_length",
           "permutations_per_second"]


@lru_cache(maxsize=None)
def addition_chain_length(n: int) -> int:
    """The length of a shortest addition chain for n (multiplies to compute x^n from x): 2 for 3, 4 for 7.

    Found by iterative deepening over star-free chains (every step adds two earlier terms), which is exact
    for the small exponents S-boxes use."""
    if n < 1:
        raise ValueError(f"n: an addition chain needs n >= 1, got {n}")
    if n == 1:
        return 0

    def extend(chain: list[int], depth: int) -> bool:
        last = chain[-1]
        if last == n:
            return True
        if depth == 0 or last << depth < n:        # doubling every step is the fastest growth
            return False
        seen = set()
        for i in range(len(chain) - 1, -1, -1):
            for j in range(i, -1, -1):
                s = chain[i] + chain[j]
                if last < s <= n and s not in seen:
                    seen.add(s)
                    chain.append(s)
                    if extend(chain, depth - 1):
                        return True
                    chain.pop()
        return False

    depth = 1
    while not extend([1], depth):
        depth += 1
    return depth


@dataclass(frozen=True)
class RoundStructure:
    """The rounds of a permutation, as far as its cost is concerned.

    full_rounds:      rounds with an S-box on every element (Poseidon/Poseidon2 full or external rounds,
                      the total over both halves, e.g. 8 = 4 + 4)
    partial_rounds:   rounds with an S-box on ``partial_sboxes`` elements only (partial/internal rounds)
    sbox_degree:      d of the S-box x^d (7, 3)
    inverse_sbox:     True when each of the ``rounds`` also applies x^(1/d) to every element (Rescue)
    rounds:           Rescue-style rounds: each applies x^d and, with ``inverse_sbox``, x^(1/d) to every element
    partial_sboxes:   S-boxes per partial round (1 for Poseidon and Poseidon2)
    inverse_sbox_multiplies: general multiplies of one x^(1/d) by the addition chain the reference (or the
                      gateware) uses; 0 when there is no inverse S-box
    """

    full_rounds: int = 0
    partial_rounds: int = 0
    sbox_degree: int = 7
    inverse_sbox: bool = False
    rounds: int = 0
    partial_sboxes: int = 1
    inverse_sbox_multiplies: int = 0

    def __post_init__(self):
        if self.sbox_degree < 2:
            raise ValueError(f"sbox_degree: must be at least 2, got {self.sbox_degree}")
        for name in ("full_rounds", "partial_rounds", "rounds", "partial_sboxes", "inverse_sbox_multiplies"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must not be negative, got {getattr(self, name)}")
        if self.inverse_sbox_multiplies and not self.inverse_sbox:
            raise ValueError("inverse_sbox_multiplies: given without inverse_sbox=True")

    @property
    def sbox_multiplies(self) -> int:
        """General multiplies of one x^d S-box by a shortest addition chain (x^3 = 2, x^5 = 3, x^7 = 4)."""
        return addition_chain_length(self.sbox_degree)

    def sboxes(self, width: int) -> int:
        """Forward S-boxes (x^d) per permutation of a ``width``-element state."""
        return (self.full_rounds + self.rounds) * width + self.partial_rounds * self.partial_sboxes

    def inverse_sboxes(self, width: int) -> int:
        """Inverse S-boxes (x^(1/d)) per permutation."""
        return self.rounds * width if self.inverse_sbox else 0

    def sbox_general_multiplies(self, width: int) -> int:
        """General multiplies in the S-boxes of one permutation."""
        return (self.sboxes(width) * self.sbox_multiplies
                + self.inverse_sboxes(width) * self.inverse_sbox_multiplies)


class Permutation(abc.ABC):
    """A permutation of ``width`` elements of ``field`` (see the module docstring).

    Subclasses set ``name``, ``field``, ``width``, ``structure`` and ``linear_multiplies`` and implement
    :meth:`_permute`, which gets a fresh uint64 array of shape (n, width) holding canonical values (it may
    work in place) and returns a uint64 array of canonical values of the same shape."""

    name: str
    field: Field
    width: int
    structure: RoundStructure
    #: general multiplies per permutation in the linear layers (0 when they use only adds and shifts)
    linear_multiplies: int = 0

    @property
    def general_multiplies(self) -> int:
        """General multiplies per permutation: the S-boxes' addition chains plus the linear layers'."""
        return self.structure.sbox_general_multiplies(self.width) + self.linear_multiplies

    @abc.abstractmethod
    def _permute(self, states: np.ndarray) -> np.ndarray:
        """Permute the rows of a (n, width) uint64 array of canonical values."""

    def permute(self, states) -> np.ndarray:
        """The permutation of every state in ``states`` (shape (..., width)); a new array, the field's dtype."""
        a = self._as_states(states)
        flat = np.ascontiguousarray(a.reshape(-1, self.width), dtype=np.uint64).copy()
        out = self._permute(flat) if flat.shape[0] else flat
        return out.reshape(a.shape).astype(self.field.dtype)

    __call__ = permute

    def _as_states(self, states) -> np.ndarray:
        if isinstance(states, np.ndarray):
            if states.dtype.kind not in "ui":
                raise TypeError(f"states: expected an integer array, got dtype {states.dtype}")
            if states.dtype.kind == "i" and states.size and states.min() < 0:
                raise ValueError(f"states: negative value {int(states.min())}; field elements are 0 .. p-1")
            a = states.astype(np.uint64, copy=False)
        elif isinstance(states, (list, tuple)):
            a = self._from_lists(states)
        else:
            raise TypeError(f"states: expected an array or a list of ints, got {type(states).__name__}")
        if a.ndim == 0 or a.shape[-1] != self.width:
            raise ValueError(f"states: {self.name} permutes states of {self.width} elements, got shape {a.shape}")
        self.field.check_canonical(a, "states")
        return a

    def _from_lists(self, states) -> np.ndarray:
        """Nested lists/tuples of ints as uint64 (through object arrays: numpy would turn [2^63, 1] into
        floats and [1.5] into 1)."""
        try:
            obj = np.asarray(states, dtype=object)
        except ValueError as exc:
            raise ValueError(f"states: not a rectangular list of states ({exc})") from None
        flat = obj.reshape(-1).tolist()
        for v in flat:
            if isinstance(v, (list, tuple)):
                raise ValueError("states: not a rectangular list of states (rows of different lengths)")
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"states: expected field elements (ints), got {type(v).__name__} {v!r}")
            if not 0 <= int(v) < 1 << 64:
                raise ValueError(f"states: value {int(v)} is not a field element of {self.field.name} "
                                 f"(0 .. {self.field.p - 1})")
        return np.array([int(v) for v in flat], dtype=np.uint64).reshape(obj.shape)

    def __repr__(self) -> str:
        return f"<Permutation {self.name}: {self.field.name}, width {self.width}, {self.structure}>"


#: Every permutation's factory by name (filled by the modules of hw/model/hash/ at import).
PERMUTATIONS: dict[str, Callable[[], Permutation]] = {}


def register(name: str, factory: Callable[[], Permutation]) -> None:
    """Add ``factory`` under ``name``; a name registered twice is an error (two modules claiming it)."""
    if name in PERMUTATIONS and PERMUTATIONS[name] is not factory:
        raise ValueError(f"name: permutation {name!r} is registered twice")
    PERMUTATIONS[name] = factory


_BUILT: dict[str, Permutation] = {}


def permutation(name: str) -> Permutation:
    """The permutation registered as ``name`` (built once, then cached); unknown names are a ValueError."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a permutation name, got {type(name).__name__}")
    if name not in PERMUTATIONS:
        valid = sorted(PERMUTATIONS)
        close = difflib.get_close_matches(name, valid, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"name: unknown permutation {name!r} (valid: {', '.join(valid)}){hint}")
    if name not in _BUILT:
        perm = PERMUTATIONS[name]()
        if perm.name != name:
            raise ValueError(f"name: the factory registered as {name!r} built {perm.name!r}")
        _BUILT[name] = perm
    return _BUILT[name]


def permutations_per_second(perm: Permutation | str, states: int = 1 << 14, repeats: int = 3,
                            seed: int = 0, cpu: bool = False) -> float:
    """The model's speed: ``states`` random canonical states permuted in one call, best of ``repeats``
    (a benchmark figure for docs/performance.md, not a target the model must meet). ``cpu``: time this
    process's CPU (``time.process_time``) instead of the wall clock, the steadier figure on a shared machine
    (the model runs on one thread)."""
    if isinstance(perm, str):
        perm = permutation(perm)
    if states < 1 or repeats < 1:
        raise ValueError(f"states, repeats: must be at least 1, got {states}, {repeats}")
    clock = time.process_time if cpu else time.perf_counter
    rng = np.random.default_rng(seed)
    batch = (rng.integers(0, perm.field.p, size=(states, perm.width), dtype=np.uint64)).astype(perm.field.dtype)
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        perm.permute(batch)
        best = min(best, clock() - t0)
    return states / max(best, 1e-9)
