"""The kernel's operations: what a start may ask the card to do, one row each.

A kernel carries one or more *operations*: the NTT (every build) and, later, on-card engines for other
work of a prover (a Merkle commitment). A start names its operation in the ``op`` argument
(:mod:`hw.model.run`); the kernel's sequencer hands the run to the engine that owns that op (hw/kernel.py,
hw/engines.py), and the engine's own words go into the status record (:mod:`hw.model.record`). This
module is the one table of them: each :class:`Operation` has

- ``name`` and ``code`` (the value of the ``op`` argument; codes are never reused; bit ``code`` of the
  identification word OPS says a build carries it),
- ``status_words``: the names of the engine's words in the record's engine area, in order (at most
  :data:`ENGINE_WORDS`),
- ``placement``: the class that says where the operation's buffers live in HBM (the NTT's:
  :class:`hw.model.layout.HbmLayout`),
- ``model``: the bit-exact result of a run on its logical input (the NTT's: :func:`ntt_run`),
- ``carried_by``: whether a build of given :class:`~hw.model.params.BuildParams` carries it.

A run's arguments say which operations they belong to (:data:`hw.model.run.RUN_ARGS`), so the register set
is the union of every operation's arguments (Vitis' kernel.xml needs one fixed list).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .params import BuildParams

__all__ = ["Operation", "OPERATIONS", "OP_NTT", "ENGINE_WORDS", "operation", "operation_named", "ops_mask",
           "carried_codes", "ntt_run", "OP_COMMIT", "COMMIT_ENGINE_SCHEMES", "SCHEME_CODES", "commit_run",
           "commit_scheme_of"]

#: Words of the status record an engine may fill (hw.model.record: ENGINE_0 ..).
ENGINE_WORDS = 13


@dataclass(frozen=True)
class Operation:
    """One operation a kernel may carry (see the module docstring)."""
    name: str
    code: int
    doc: str
    status_words: tuple[str, ...]
    placement: Callable
    model: Callable
    carried_by: Callable[[BuildParams], bool]

    def __post_init__(self):
        if len(self.status_words) > ENGINE_WORDS:
            raise ValueError(f"status_words: an engine has {ENGINE_WORDS} record words, {self.name} names "
                             f"{len(self.status_words)}")


def ntt_run(params: BuildParams, run, x: np.ndarray) -> np.ndarray:
    """The NTT operation's result: the ``run``'s transforms of ``x`` (shape ``(batch, 2^log_n)``, the
    input buffer as the kernel reads it: a zero-extended input's tail is never read, so it counts as 0),
    as ``(batch, 2^log_n)`` canonical values: inverse, coset and each element's row-step shift as the run
    says. Where the output goes (plain or as the input of a chained run) is the placement's business."""
    from . import ntt as ntt_model
    field = params.prime_field
    x = np.array(x, dtype=np.uint64).reshape(run.batch, 1 << run.log_n)
    if run.input_log_m:
        x[:, 1 << run.input_log_m:] = 0
    if run.steps_rows:
        return np.stack([ntt_model.transform(x[r], inverse=run.inverse, coset=g, field=field)
                         for r, g in enumerate(run.element_shifts(field.p))])
    return ntt_model.transform(x, inverse=run.inverse, coset=run.coset, field=field).reshape(run.batch, -1)


def _ntt_placement(params: BuildParams, run):
    from .layout import HbmLayout
    return HbmLayout(params, run.log_n, run.batch)


#: code 0 is the NTT, so the ``op`` argument's reset value runs what every kernel runs.
OP_NTT = 0
#: code 1: the Merkle commitment of a matrix's rows (leaf sponge and tree in one start).
OP_COMMIT = 1

#: The commitment schemes by code: the commit run's ``commit_scheme`` argument and bit ``code`` of the
#: identification word COMMIT (hw.model.regmap) for each scheme (hw.model.commit.SCHEMES) the build's
#: commitment engine serves (``BuildParams.commit``). Codes are never reused.
SCHEME_CODES = {"plonky3-babybear-16": 0, "plonky3-babybear-24": 1, "plonky3-koalabear-16": 2,
                "plonky3-koalabear-24": 3, "plonky3-goldilocks": 4, "plonky2": 5, "winterfell-rp64": 6}

#: The schemes the on-card commitment engine serves: Plonky3's over the 31-bit fields (a digest is one beat).
COMMIT_ENGINE_SCHEMES = ("plonky3-babybear-16", "plonky3-babybear-24", "plonky3-koalabear-16",
                         "plonky3-koalabear-24")


def commit_scheme_of(run) -> str | None:
    """The scheme name of a commit run's ``commit_scheme`` code (:data:`SCHEME_CODES`), or None."""
    return next((name for name, code in SCHEME_CODES.items() if code == run.commit_scheme), None)


def commit_run(params: BuildParams, run, matrix: np.ndarray) -> list[np.ndarray]:
    """The commitment operation's result: every layer of the ``run``'s scheme's Merkle tree over the rows
    of ``matrix`` (shape ``(2^commit_log_rows, commit_columns)``, its rows in natural order as the NTT
    wrote them): leaf L hashes natural row rev(L) (Plonky3 commits the LDE bit-reversed), the leaf
    digests' layer first, the root's (one digest) last. Where each layer goes is the placement's."""
    from .commit_layout import bit_reverse
    from .commit.schemes import scheme
    name = commit_scheme_of(run)
    if name not in params.commit or name not in COMMIT_ENGINE_SCHEMES:
        raise ValueError(f"run: commit_scheme {run.commit_scheme} is not a scheme this build commits "
                         f"({', '.join(params.commit) or 'none'})")
    n, m = run.commit_log_rows, np.asarray(matrix, dtype=np.uint64)
    if m.shape != (1 << n, run.commit_columns):
        raise ValueError(f"matrix: expected shape {(1 << n, run.commit_columns)}, got {m.shape}")
    leaves = m[[bit_reverse(r, n) for r in range(1 << n)]]
    return scheme(name).tree.build([leaves])


def _commit_placement(params: BuildParams, run):
    from .commit_layout import CommitLayout
    return CommitLayout(params, run.commit_log_rows, run.commit_columns)


def _carries_commit(params: BuildParams) -> bool:
    return any(s in COMMIT_ENGINE_SCHEMES for s in params.commit)

OPERATIONS: tuple[Operation, ...] = (
    Operation("ntt", OP_NTT, "the NTT engine: forward or inverse, coset, batches, zero-extended input, chained "
              "output (every build)",
              ("PASS1_DMA_CYCLES", "PASS1_NTT_CYCLES", "PASS2_DMA_CYCLES", "PASS2_NTT_CYCLES"),
              _ntt_placement, ntt_run, lambda params: True),
    Operation("commit", OP_COMMIT, "the commitment engine: a Plonky3 Merkle tree (leaf sponge and every layer) "
              "over the rows of a matrix in HBM, every layer and the root written beside it (builds whose "
              "commit schemes include a 31-bit Plonky3 one)",
              ("READ_CYCLES", "HASH_CYCLES", "WRITE_CYCLES", "LEAVES", "PERMUTATIONS"),
              _commit_placement, commit_run, _carries_commit),
)
assert len({o.code for o in OPERATIONS}) == len({o.name for o in OPERATIONS}) == len(OPERATIONS)
assert all(0 <= o.code < 32 for o in OPERATIONS)


def operation(code: int) -> Operation | None:
    """The operation whose ``op`` code is ``code`` (any register value), or None."""
    return next((o for o in OPERATIONS if o.code == code), None)


def operation_named(name: str) -> Operation:
    """The operation called ``name``; a ValueError naming the known ones."""
    for o in OPERATIONS:
        if o.name == name:
            return o
    raise ValueError(f"op: no operation {name!r} (known: {', '.join(o.name for o in OPERATIONS)})")


def carried_codes(params: BuildParams) -> tuple[int, ...]:
    """The ``op`` codes a kernel built with ``params`` runs (every other code: STATUS.bad_op)."""
    return tuple(o.code for o in OPERATIONS if o.carried_by(params))


def ops_mask(params: BuildParams) -> int:
    """The identification word OPS of a build: bit ``code`` set for every operation it carries."""
    return sum(1 << c for c in carried_codes(params))
