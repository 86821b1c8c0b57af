"""One kernel run, as one typed value: :class:`Run`, and the one table of its arguments: :data:`RUN_ARGS`.

A run is what the scalar argument registers of one ``ap_start`` hold (the buffer addresses aside). Every
argument is one row of :data:`RUN_ARGS` (a :class:`RunArg`): its name, its register words (a 64-bit value
is two 32-bit words, ``<name>_lo`` and ``<name>_hi``: pyxrt's set_arg passes a C int), its reset value, its
documentation, the operations it belongs to (:mod:`hw.model.ops`), its check (the STATUS bits a bad value
earns) and its fields in the control slave's decoded struct (hw/run.py) with their values. Everything
else is derived from the table, the way Amaranth's ``data.StructLayout`` derives offsets and views from
one ``members`` table:

- the fields of :class:`Run`, in table order, with the resets as defaults (``log_n`` has none);
- :meth:`Run.words` / :meth:`Run.from_words`, :data:`SCALAR_ARGS` (the register order the
  :class:`hw.model.regmap.RegisterMap` lays out: the first row is argument 0 before the pointers, the rest
  follow them) and :data:`ARG_DOCS` (the register descriptions);
- :meth:`Run.check`: the OR of every row's check, plus STATUS.bad_op for an argument foreign to the run's
  operation that is not at its reset value;
- hw/run.py's ``run_layout`` (the gateware struct) and ``run_bits``.

A new 32-bit argument is one row here plus its consumer (docs/architecture.md, "Adding a run argument").

The arguments today: the operation ``op`` (:data:`hw.model.ops.OP_NTT`, the reset, or another the build
carries), the size ``log_n``, the ``flags`` (inverse, coset), the ``batch`` B, the ``coset_shift`` g, the
zero-extended input ``input_log_m``, the chained output ``chain_log_n`` and the coset's ``row_step`` s
(element r of a batch has the shift g x s^r; 0 or 1: every element g); the commitment's
``commit_log_rows`` k, ``commit_columns`` C and ``commit_scheme`` (:meth:`Run.commit`: a tree of 2^k leaves
over a 2^k x C matrix, docs/commit-engine.md). The alignment every ``hbm_NN`` base
needs is :func:`base_align_bytes`, which :meth:`Run.check` checks given the bases.

A ``Run`` holds register contents as they are, so it can describe a start the kernel refuses (an unknown
flag bit, a batch of 0); :meth:`Run.ntt` (also :meth:`Run.of`) builds an NTT run from what a caller means
(inverse=True, coset=g).
"""

from dataclasses import dataclass, field, make_dataclass
from typing import Callable

from .layout import BEAT_BYTES, MAX_BURST_BEATS, PAGE_BYTES, lde_pair_supported, points_per_beat
from .ops import (OP_COMMIT, OP_NTT, OPERATIONS, COMMIT_ENGINE_SCHEMES, SCHEME_CODES, carried_codes,
                  commit_scheme_of, operation)
from .params import BuildParams

__all__ = ["Run", "RunArg", "RUN_ARGS", "SCALAR_ARGS", "ARG_DOCS", "run_arg", "FLAG_INVERSE", "FLAG_COSET",
           "FLAGS_KNOWN", "STATUS_BAD_SIZE", "STATUS_BAD_BATCH", "STATUS_BAD_SHIFT", "STATUS_BAD_FLAGS",
           "STATUS_BAD_LDE_PAIR", "STATUS_BAD_ALIGN", "STATUS_BAD_OP", "STATUS_REJECTED", "max_batch",
           "coset_shift_ok", "BASE_ALIGN_BYTES", "base_align_bytes"]

#: Inverse transform: X_k = (1/N) sum_j x_j w^(-jk), the 1/N inside the kernel.
FLAG_INVERSE = 1 << 0
#: Coset transform with shift g = ``coset_shift``: forward X_k = sum_j x_j g^j w^(jk); with FLAG_INVERSE
#: x_j = g^(-j) (1/N) sum_k X_k w^(-jk).
FLAG_COSET = 1 << 1
FLAGS_KNOWN = FLAG_INVERSE | FLAG_COSET

# The STATUS bits of a refused start (hw.model.regmap places them in the STATUS word; each: the kernel
# finishes at once and touches no point memory, writing only its status record; cleared by the next start).
STATUS_BAD_SIZE = 1 << 0        # log_n outside the build's native sizes
STATUS_BAD_BATCH = 1 << 15      # batch = 0, or batch * 2^log_n > 2^MAX_LOG_N
STATUS_BAD_SHIFT = 1 << 16      # coset flag with coset_shift = 0 or >= p; a row_step > 1 without it or >= p
STATUS_BAD_FLAGS = 1 << 17      # a flags bit outside FLAGS_KNOWN
STATUS_BAD_LDE_PAIR = 1 << 18   # input_log_m or chain_log_n a size pair the layout cannot place evenly
STATUS_BAD_ALIGN = 1 << 19      # an hbm_NN base not a multiple of base_align_bytes: a burst would cross 4 KiB
STATUS_BAD_OP = 1 << 20         # an op the build does not carry, or an argument foreign to the op not at reset
STATUS_REJECTED = (STATUS_BAD_SIZE | STATUS_BAD_BATCH | STATUS_BAD_SHIFT | STATUS_BAD_FLAGS | STATUS_BAD_LDE_PAIR
                   | STATUS_BAD_ALIGN | STATUS_BAD_OP)

#: The longest burst the DMA issues, in bytes: MAX_BURST_BEATS beats of BEAT_BYTES (every sequential
#: stream: reads, pass-2 writes). Every burst of a run starts at a multiple of its own length (a power of
#: two) from its channel's base, so a base that is a multiple of the longest one keeps every burst inside
#: one 4 KiB page (AXI4 forbids a burst crossing PAGE_BYTES), whatever the run.
BASE_ALIGN_BYTES = MAX_BURST_BEATS * BEAT_BYTES
assert PAGE_BYTES % BASE_ALIGN_BYTES == 0

_WORD = (1 << 32) - 1


def coset_shift_ok(g: int, p: int) -> bool:
    """The coset rule: a shift g, as the 64-bit register or a caller gives it, is a nonzero field element
    below the modulus p, 0 < g < p (not reduced: g = p would be the shift 0, which has no coset). The
    one statement of the rule: :meth:`Run.check` (the kernel's refusal, which the control slave decodes
    in gateware), the host's transform plan, the library's and the command line's argument checks all ask
    it, each wording its own error."""
    return 0 < g < p


def base_align_bytes(params: BuildParams) -> int:
    """What every ``hbm_NN`` base of a start must be a multiple of, else STATUS.bad_align: the longest
    burst of any run, :data:`BASE_ALIGN_BYTES` or the build's unit of L points (pass 1 writes each unit as
    one burst) when that is longer. The ``status`` pointer needs nothing: the record writer rounds it down
    to its record, one burst that cannot cross a page."""
    unit_bytes = params.lanes // points_per_beat(params) * BEAT_BYTES
    align = max(BASE_ALIGN_BYTES, unit_bytes)
    assert PAGE_BYTES % align == 0, f"a burst of {align} bytes would cross a page"
    return align


def max_batch(params: BuildParams, log_n: int | None = None) -> int:
    """The largest batch of 2^log_n points: B x 2^log_n must fit the buffers of the largest size (without
    log_n: of the smallest size, the largest batch any start may have)."""
    return 1 << (params.max_log_n - (params.min_log_n if log_n is None else log_n))


@dataclass(frozen=True)
class RunArg:
    """One argument of a run (a row of :data:`RUN_ARGS`).

    name:    the argument (a field of :class:`Run`; a 64-bit one is the register words ``<name>_lo``,
             ``<name>_hi``)
    doc:     what it holds (the register map's description of its words)
    bits:    32 or 64
    reset:   the register's value after reset (and the Run field's default); None: a Run must give it
             (the register resets to 0)
    ops:     the operations it belongs to (hw.model.ops names): another op's start must leave it at reset
    check:   (run, params) -> the STATUS bits the value earns (0: fine); None: every value runs
    struct:  params -> {field: shape} of its fields in the control's decoded struct (hw/run.py; a shape is
             a width or a range); None: one field of its own name, as wide as the register
    decode:  run -> {field: value} of those fields for an accepted run; None: {name: the value}
    """
    name: str
    doc: str
    bits: int = 32
    reset: int | None = 0
    ops: frozenset = frozenset({"ntt"})
    check: Callable | None = None
    struct: Callable | None = None
    decode: Callable | None = None

    @property
    def words(self) -> tuple[str, ...]:
        """Its 32-bit register words, low first."""
        return (self.name,) if self.bits == 32 else (f"{self.name}_lo", f"{self.name}_hi")

    @property
    def reset_value(self) -> int:
        return self.reset or 0

    def struct_fields(self, params: BuildParams) -> dict:
        return self.struct(params) if self.struct else {self.name: self.bits}

    def decoded(self, run) -> dict:
        return self.decode(run) if self.decode else {self.name: getattr(run, self.name)}


def _size_ok(run, params) -> bool:
    return params.min_log_n <= run.log_n <= params.max_log_n


def _check_log_n(run, params):
    return 0 if _size_ok(run, params) else STATUS_BAD_SIZE


def _check_batch(run, params):
    bad = run.batch < 1 or (_size_ok(run, params) and run.batch > max_batch(params, run.log_n))
    return STATUS_BAD_BATCH if bad else 0


def _check_shift(run, params):
    bad = run.flags & FLAG_COSET and not coset_shift_ok(run.coset_shift, params.prime_field.p)
    return STATUS_BAD_SHIFT if bad else 0


def _check_step(run, params):
    bad = run.steps_rows and not (run.flags & FLAG_COSET and run.row_step < params.prime_field.p)
    return STATUS_BAD_SHIFT if bad else 0


def _check_flags(run, params):
    return STATUS_BAD_FLAGS if run.flags & ~FLAGS_KNOWN else 0


def _check_input(run, params):
    bad = (_size_ok(run, params) and run.input_log_m
           and not lde_pair_supported(params, run.input_log_m, run.log_n))
    return STATUS_BAD_LDE_PAIR if bad else 0


def _check_chain(run, params):
    bad = _size_ok(run, params) and run.chain_log_n and not (
        lde_pair_supported(params, run.log_n, run.chain_log_n) and 1 <= run.batch <= max_batch(params, run.chain_log_n))
    return STATUS_BAD_LDE_PAIR if bad else 0


def _check_op(run, params):
    return 0 if run.op in carried_codes(params) else STATUS_BAD_OP


def _check_commit_rows(run, params):
    return 0 if 1 <= run.commit_log_rows <= params.max_log_n else STATUS_BAD_SIZE


def _check_commit_columns(run, params):
    fits = run.commit_columns << min(run.commit_log_rows, 64) <= 1 << params.max_log_n
    return 0 if run.commit_columns >= 1 and fits else STATUS_BAD_BATCH


def _check_commit_scheme(run, params):
    name = commit_scheme_of(run)
    return 0 if name in params.commit and name in COMMIT_ENGINE_SCHEMES else STATUS_BAD_OP


def _commit_struct(params, **fields):
    """A commit argument's struct fields: none in a build without the commitment engine (its registers
    exist, the register set being every op's, but its control decodes nothing of them)."""
    return fields if OP_COMMIT in carried_codes(params) else {}


def _size(params):
    return range(params.max_log_n + 1)


_ALL_OPS = frozenset(o.name for o in OPERATIONS)

#: Every argument of a run, in register order after the pointers (the first row, ``log_n``, is argument
#: 0, before them) and in the order of :class:`Run`'s fields.
RUN_ARGS: tuple[RunArg, ...] = (
    RunArg("log_n", "n: N = 2^n points per transform (the build's native sizes; others set STATUS.bad_size)",
           reset=None, check=_check_log_n, struct=lambda p: {"log_n": _size(p)}),
    RunArg("flags", "bit 0 inverse (1/N inside the kernel), bit 1 coset; any other bit sets STATUS.bad_flags",
           check=_check_flags, struct=lambda p: {"inverse": 1, "coset": 1},
           decode=lambda r: {"inverse": int(r.inverse), "coset": int(r.coset is not None)}),
    RunArg("batch", "B: transforms of N points back to back, 1 .. 2^(MAX_LOG_N - n)", reset=1,
           check=_check_batch, struct=lambda p: {"batch": range(max_batch(p) + 1)}),
    RunArg("coset_shift", "the coset shift g (0 < g < p with the coset flag)", bits=64, check=_check_shift),
    RunArg("input_log_m", "m: the input holds only each transform's first 2^m points (zero-extended); 0: all",
           check=_check_input, struct=lambda p: {"input_log_m": _size(p)},
           decode=lambda r: {"input_log_m": 0 if r.input_log_m == r.log_n else r.input_log_m}),
    RunArg("chain_log_n", "t: the output is written as the zero-extended input of a 2^t-point run; 0: plain "
           "output", check=_check_chain, struct=lambda p: {"chain_log_n": _size(p)}),
    RunArg("row_step", "the coset's row step s: element r of the batch has the shift g x s^r (0 or 1: every "
           "element g; else the coset flag and s < p, or STATUS.bad_shift)", bits=64, check=_check_step,
           decode=lambda r: {"row_step": r.row_step if r.steps_rows else 0}),
    RunArg("op", "the operation: " + "; ".join(f"{o.code} {o.name}" for o in OPERATIONS)
           + " (one the build does not carry, or an argument of another op not at its reset value, sets "
           "STATUS.bad_op; the identification word OPS lists the build's)", reset=OP_NTT, ops=_ALL_OPS,
           check=_check_op, struct=lambda p: {"op": max(1, max(o.code for o in OPERATIONS).bit_length())}),
    RunArg("commit_log_rows", "the commitment's k: a tree of 2^k leaves over a matrix of 2^k rows (1 .. "
           "MAX_LOG_N, else STATUS.bad_size)", ops=frozenset({"commit"}), check=_check_commit_rows,
           struct=lambda p: _commit_struct(p, commit_log_rows=_size(p))),
    RunArg("commit_columns", "the commitment's C: columns of the matrix, each 2^k points as the NTT wrote them; "
           "1 .. 2^(MAX_LOG_N - k), else STATUS.bad_batch", ops=frozenset({"commit"}), check=_check_commit_columns,
           struct=lambda p: _commit_struct(p, commit_columns=range((1 << (p.max_log_n - 1)) + 1))),
    RunArg("commit_scheme", "the commitment's scheme code (the identification word COMMIT's bit; one the build "
           "does not commit sets STATUS.bad_op)", ops=frozenset({"commit"}), check=_check_commit_scheme,
           struct=lambda p: _commit_struct(p, commit_scheme=3)),
)
assert RUN_ARGS[0].name == "log_n" and len({a.name for a in RUN_ARGS}) == len(RUN_ARGS)
assert all(a.ops <= _ALL_OPS and a.bits in (32, 64) for a in RUN_ARGS)

#: The scalar argument words after the buffer pointers, in register order: (word name, reset value).
SCALAR_ARGS = tuple((word, (a.reset_value >> 32 * i) & _WORD) for a in RUN_ARGS[1:] for i, word in enumerate(a.words))

#: What each argument word of a run holds (the register map's descriptions), and the ``status`` pointer.
ARG_DOCS = dict(
    {word: (a.doc if a.bits == 32 else f"{a.doc}, bits {'31..0' if i == 0 else '63..32'}")
     for a in RUN_ARGS for i, word in enumerate(a.words)},
    status="where the kernel writes its status record after every start (a buffer in HBM[0], rounded down to "
           "the record's size; hw.model.record)")


def run_arg(name: str) -> RunArg:
    """The row of argument ``name``."""
    for a in RUN_ARGS:
        if a.name == name:
            return a
    raise KeyError(f"name: no run argument {name!r}")


class _RunMethods:
    """What every :class:`Run` does (its fields come from :data:`RUN_ARGS`)."""

    def __post_init__(self):
        for a in RUN_ARGS:
            value = getattr(self, a.name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << a.bits:
                raise ValueError(f"{a.name}: expected a {a.bits}-bit register value (an int in 0..2^{a.bits}-1), "
                                 f"got {value!r}")

    @classmethod
    def ntt(cls, log_n: int, *, inverse: bool = False, coset: int | None = None, batch: int = 1,
            input_log_m: int = 0, chain_log_n: int = 0, row_step: int | None = None) -> "Run":
        """The NTT run a caller means: inverse, a coset shift g (None: no coset), batch, padded input and
        chain, the coset's row step s (None: every element g)."""
        flags = (FLAG_INVERSE if inverse else 0) | (FLAG_COSET if coset is not None else 0)
        return cls(log_n, flags=flags, batch=batch, coset_shift=coset or 0, input_log_m=input_log_m,
                   chain_log_n=chain_log_n, row_step=row_step or 0, op=OP_NTT)

    of = ntt

    @classmethod
    def commit(cls, log_rows: int, columns: int, scheme: str) -> "Run":
        """The commitment run a caller means: the Merkle tree of ``scheme`` over the 2^log_rows rows of a
        matrix of ``columns`` columns (hw.model.commit_layout places it)."""
        if scheme not in SCHEME_CODES:
            raise ValueError(f"scheme: no scheme {scheme!r} (known: {', '.join(SCHEME_CODES)})")
        return cls(0, commit_log_rows=log_rows, commit_columns=columns, commit_scheme=SCHEME_CODES[scheme],
                   op=OP_COMMIT)

    @property
    def operation(self):
        """The :class:`hw.model.ops.Operation` of ``op`` (None: a code no operation has)."""
        return operation(self.op)

    @property
    def inverse(self) -> bool:
        return bool(self.flags & FLAG_INVERSE)

    @property
    def coset(self) -> int | None:
        """The coset shift g of a coset run, else None."""
        return self.coset_shift if self.flags & FLAG_COSET else None

    @property
    def steps_rows(self) -> bool:
        """Whether the elements of the batch have different shifts (``row_step`` not 0 or 1)."""
        return self.row_step > 1

    def element_shifts(self, p: int) -> list[int] | None:
        """The coset shift of every element of the batch, g x s^r mod p (None without the coset flag)."""
        g = self.coset
        if g is None:
            return None
        s = self.row_step % p if self.steps_rows else 1
        out, cur = [], g % p
        for _ in range(max(self.batch, 1)):
            out.append(cur)
            cur = cur * s % p
        return out

    def foreign_args(self) -> tuple[str, ...]:
        """The arguments that do not belong to this run's operation and are not at their reset value."""
        op = self.operation
        if op is None:
            return ()
        return tuple(a.name for a in RUN_ARGS
                     if op.name not in a.ops and getattr(self, a.name) != a.reset_value)

    def check(self, params: BuildParams, bases=None) -> int:
        """The STATUS bits a kernel built with ``params`` refuses this start with; 0 when it runs. Every
        reason is reported, not only the first (each row's check of :data:`RUN_ARGS` that belongs to the
        op, and STATUS.bad_op for an argument foreign to it). ``bases``: the ``hbm_NN`` base addresses
        (every channel's), each a multiple of :func:`base_align_bytes` or STATUS.bad_align; None: not
        checked (a Run holds no addresses)."""
        bad = 0
        if bases is not None and any(int(b) % base_align_bytes(params) for b in bases):
            bad |= STATUS_BAD_ALIGN
        # an op the build does not carry (or a code no operation has) has its rows checked as the NTT's,
        # the reset op's, as the control slave checks them
        op = self.operation
        checked = op.name if op is not None and self.op in carried_codes(params) else "ntt"
        for a in RUN_ARGS:
            if a.check is not None and checked in a.ops:
                bad |= a.check(self, params)
        if self.foreign_args():
            bad |= STATUS_BAD_OP
        return bad

    def words(self) -> dict[str, int]:
        """Every scalar argument's 32-bit word, by register word name (``log_n`` and :data:`SCALAR_ARGS`)."""
        out = {}
        for a in RUN_ARGS:
            value = getattr(self, a.name)
            out.update({word: (value >> 32 * i) & _WORD for i, word in enumerate(a.words)})
        return out

    @classmethod
    def from_words(cls, words: dict[str, int]) -> "Run":
        """The run whose argument words are ``words`` (every name of :meth:`words`; a missing one is a
        KeyError naming it)."""
        missing = [w for a in RUN_ARGS for w in a.words if w not in words]
        if missing:
            raise KeyError(f"words: no value for {', '.join(missing)}")
        return cls(**{a.name: sum(words[w] << 32 * i for i, w in enumerate(a.words)) for a in RUN_ARGS})


def _run_fields():
    return [(a.name, int) if a.reset is None else (a.name, int, field(default=a.reset)) for a in RUN_ARGS]


Run = make_dataclass("Run", _run_fields(), bases=(_RunMethods,), frozen=True, namespace={"__module__": __name__})
Run.__doc__ = ("""The scalar arguments of one kernel start, as register contents: one field per row of
    :data:`RUN_ARGS`, in its order (""" + ", ".join(a.name for a in RUN_ARGS) + """). See the module docstring;
    :meth:`ntt` builds an NTT run from what a caller means.""")
