"""A permutation's description for the gateware, read from the golden model's hash descriptions.

:func:`spec_of` turns a registered permutation of hw/model/hash/ into a :class:`PermutationSpec`: the field,
the width, an optional input linear layer (Poseidon2's external layer before the first round), and the
rounds in order, each a :class:`Round` of one kind made of :class:`SubRound` steps:

    ark_before  add the round's constants (ARK) first
    sbox        "forward" (x^d by an addition chain) or "inverse" (Rescue's x^(1/7) chain)
    sbox_mask   the elements the S-box is applied to (all of them in a full round, element 0 in a partial one)
    linear      the name of the linear layer that follows (a key of ``PermutationSpec.linear``)
    ark_after   add constants after the linear layer (Rescue)

Kinds: Poseidon2 "external" and "internal", plonky2's Poseidon "full" and "partial", Rescue "rescue" (a
forward and an inverse S-box half-round). The linear layers are :class:`hw.permutation.linear.LinearSpec`s
(small integer matrices over terms): Poseidon2's 4 x 4-chunk external matrix, its internal 1 + diag(V)
with V by :func:`hw.model.hash.poseidon2.shift_add_form` (adds, shifts, modular halvings, no multiplier),
plonky2's and Rescue's MDS matrices of small constants. Constants are canonical field values; a 31-bit
field's core works in Montgomery form (``montgomery``), which the core converts at its ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from nantucket.hw.model.hash import permutation as model_permutation
from nantucket.hw.model.hash import poseidon_constants as PC
from nantucket.hw.model.hash import rescue_constants as RC
from nantucket.hw.model.hash.poseidon import mds_matrix
from nantucket.hw.model.hash.poseidon2 import NAMES as POSEIDON2_NAMES, shift_add_form
from nantucket.hw.model.hash.poseidon2_constants import POSEIDON2_CONSTANTS
from nantucket.hw.model.hash.rescue import INV_SBOX_CHAIN
from nantucket.hw.permutation.linear import LinearSpec

__all__ = ["SubRound", "Round", "PermutationSpec", "spec_of", "HASHES", "M4"]

#: Poseidon2's 4 x 4 external block (Plonky3 MDSMat4), rows of y = M4 x.
M4 = ((2, 3, 1, 1), (1, 2, 3, 1), (1, 1, 2, 3), (3, 1, 1, 2))


@dataclass(frozen=True)
class SubRound:
    ark_before: bool
    sbox: str                    # "forward" | "inverse"
    sbox_mask: frozenset
    linear: str
    ark_after: bool = False


@dataclass(frozen=True)
class Round:
    kind: str
    steps: tuple                 # SubRound per step
    constants: tuple             # per step: a width-tuple of canonical constants (or None without ARK)


@dataclass(frozen=True)
class PermutationSpec:
    name: str
    field: object
    width: int
    sbox_degree: int
    inverse_chain: tuple         # Rescue's INV_SBOX_CHAIN, () otherwise
    linear: dict                 # name -> LinearSpec
    input_linear: str | None     # a linear layer applied once before the rounds
    rounds: tuple                # Round, in order

    @property
    def montgomery(self) -> bool:
        """The 31-bit fields multiply in Montgomery form (hw.mont_reduce): the core works in it."""
        return self.field.width < 64


def _external_matrix(width: int) -> tuple:
    """Plonky3's mds_light_permutation as a matrix: M4 on each chunk, then each position's sum over chunks:
    block (i, j) is 2 M4 on the diagonal, M4 elsewhere."""
    rows = []
    for i in range(width):
        rows.append(tuple(M4[i % 4][j % 4] * (2 if i // 4 == j // 4 else 1) for j in range(width)))
    return tuple(rows)


def _internal_spec(field, diag) -> LinearSpec:
    """y_i = sum(x) + V_i x_i, V_i = sign c 2^e: the term V_i x_i as c 2^max(e, 0) times x_i halved -e
    times, negated (p - value) when the sign is negative."""
    width = len(diag)
    terms = [(j, 0, False) for j in range(width)]
    rows = []
    for i, v in enumerate(diag):
        form = shift_add_form(field, int(v))
        if form is None:
            raise ValueError(f"diag: V_{i} = {v} is not +-c 2^e; it needs a general multiplier")
        sign, c, e = form
        terms.append((i, max(-e, 0), sign < 0))
        rows.append({**{j: 1 for j in range(width)}, width + i: c << max(e, 0)})
    return LinearSpec(field, width, tuple(terms), tuple(rows))


def _matrix_spec(field, matrix) -> LinearSpec:
    width = len(matrix)
    rows = tuple({j: int(c) for j, c in enumerate(row) if int(c)} for row in matrix)
    return LinearSpec(field, width, tuple((j, 0, False) for j in range(width)), rows)


def _poseidon2(name: str) -> PermutationSpec:
    field_name, width = POSEIDON2_NAMES[name]
    c = POSEIDON2_CONSTANTS[(field_name, width)]
    perm = model_permutation(name)
    everything = frozenset(range(width))
    ext = SubRound(True, "forward", everything, "external")
    inner = SubRound(True, "forward", frozenset({0}), "internal")
    rounds = [Round("external", (ext,), (tuple(rc),)) for rc in c["external_initial"]]
    rounds += [Round("internal", (inner,), ((rc,) + (0,) * (width - 1),)) for rc in c["internal"]]
    rounds += [Round("external", (ext,), (tuple(rc),)) for rc in c["external_terminal"]]
    linear = {"external": _matrix_spec(perm.field, _external_matrix(width)),
              "internal": _internal_spec(perm.field, c["diag"])}
    return PermutationSpec(name, perm.field, width, c["sbox_degree"], (), linear, "external", tuple(rounds))


def _poseidon(name: str) -> PermutationSpec:
    perm = model_permutation(name)
    width = perm.width
    half, partial = PC.HALF_N_FULL_ROUNDS, PC.N_PARTIAL_ROUNDS
    everything = frozenset(range(width))
    full = SubRound(True, "forward", everything, "mds")
    part = SubRound(True, "forward", frozenset({0}), "mds")
    rc = PC.ALL_ROUND_CONSTANTS
    rounds = []
    for r in range(2 * half + partial):
        step = part if half <= r < half + partial else full
        rounds.append(Round("partial" if step is part else "full", (step,),
                            (tuple(rc[width * r: width * (r + 1)]),)))
    linear = {"mds": _matrix_spec(perm.field, mds_matrix().tolist())}
    return PermutationSpec(name, perm.field, width, perm.structure.sbox_degree, (), linear, None, tuple(rounds))


def _rescue(name: str) -> PermutationSpec:
    perm = model_permutation(name)
    width = perm.width
    everything = frozenset(range(width))
    steps = (SubRound(False, "forward", everything, "mds", True), SubRound(False, "inverse", everything, "mds", True))
    rounds = tuple(Round("rescue", steps, (tuple(RC.ARK1[r]), tuple(RC.ARK2[r]))) for r in range(RC.NUM_ROUNDS))
    linear = {"mds": _matrix_spec(perm.field, RC.MDS)}
    return PermutationSpec(name, perm.field, width, RC.ALPHA, INV_SBOX_CHAIN, linear, None, rounds)


#: the hashes the generator builds, by the golden model's registry name
HASHES = {**{n: _poseidon2 for n in sorted(POSEIDON2_NAMES)}, "poseidon-goldilocks-12": _poseidon,
          "rp64-256": _rescue}


def spec_of(name: str) -> PermutationSpec:
    """The gateware description of the golden model's permutation ``name`` (a ValueError for one the
    generator does not build)."""
    if name not in HASHES:
        raise ValueError(f"hash: the permutation engine builds {', '.join(HASHES)}; got {name!r}")
    return HASHES[name](name)
