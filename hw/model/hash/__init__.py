"""The golden model's hash permutations (Poseidon2, Poseidon, Rescue Prime), behind one interface.

:mod:`.permutation` defines :class:`Permutation`, :class:`RoundStructure` and the registry; each hash's
module registers its permutations by name when it is imported, which this package does below, so
``permutation("poseidon2-babybear-16")`` works after ``import nantucket.hw.model.hash``.
"""

from .permutation import PERMUTATIONS, Permutation, RoundStructure, permutation, register

__all__ = ["PERMUTATIONS", "Permutation", "RoundStructure", "permutation", "register"]

# Each hash module registers its names at import.
from . import poseidon2  # noqa: E402,F401  (registers poseidon2-*)
from . import poseidon  # noqa: E402,F401  (registers poseidon-goldilocks-12)
from . import rescue  # noqa: E402,F401  (registers rp64-256)
