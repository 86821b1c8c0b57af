"""One kernel run, as one typed value: :class:`Run`.

A run is what the scalar argument registers of one ``ap_start`` hold (the buffer addresses aside): the
size ``log_n``, the ``flags`` (inverse, coset), the ``batch`` B, the ``coset_shift`` g, the zero-extended
input ``input_log_m``, the chained output ``chain_log_n`` and the coset's ``row_step`` s (element r of a
batch has the shift g x s^r; 0 or 1: every element g). This module is the one definition of those
values: their argument words and register order (:data:`SCALAR_ARGS`, from which
:class:`hw.model.regmap.RegisterMap` builds its arguments), the flag bits, and which runs a kernel of a
build accepts (:meth:`Run.check`, the STATUS bits of a refusal, which the control slave decodes in
gateware and the host's driver and kernel model check before a start), and the alignment every ``hbm_NN``
base needs (:data:`BASE_ALIGN_BYTES`, which :meth:`Run.check` checks given the bases).

A ``Run`` holds register contents as they are, so it can describe a start the kernel refuses (an unknown
flag bit, a batch of 0); :meth:`Run.of` builds one from what a caller means (inverse=True, coset=g).
"""

from dataclasses import dataclass

from .layout import BEAT_BYTES, MAX_BURST_BEATS, PAGE_BYTES, lde_pair_supported, points_per_beat
from .params import BuildParams

__all__ = ["Run", "SCALAR_ARGS", "FLAG_INVERSE", "FLAG_COSET", "FLAGS_KNOWN", "STATUS_BAD_SIZE",
           "STATUS_BAD_BATCH", "STATUS_BAD_SHIFT", "STATUS_BAD_FLAGS", "STATUS_BAD_LDE_PAIR", "STATUS_BAD_ALIGN", "STATUS_REJECTED", "ARG_DOCS",
           "max_batch", "coset_shift_ok", "BASE_ALIGN_BYTES", "base_align_bytes"]

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
STATUS_REJECTED = (STATUS_BAD_SIZE | STATUS_BAD_BATCH | STATUS_BAD_SHIFT | STATUS_BAD_FLAGS | STATUS_BAD_LDE_PAIR
                   | STATUS_BAD_ALIGN)

#: The longest burst the DMA issues, in bytes: MAX_BURST_BEATS beats of BEAT_BYTES (every sequential
#: stream: reads, pass-2 writes). Every burst of a run starts at a multiple of its own length (a power of
#: two) from its channel's base, so a base that is a multiple of the longest one keeps every burst inside
#: one 4 KiB page (AXI4 forbids a burst crossing PAGE_BYTES), whatever the run.
BASE_ALIGN_BYTES = MAX_BURST_BEATS * BEAT_BYTES
assert PAGE_BYTES % BASE_ALIGN_BYTES == 0

#: The scalar argument words after the buffer pointers, in register order: (name, reset value). ``log_n``
#: is argument 0, before the pointers; the 64-bit shift is two 32-bit words (pyxrt's set_arg passes a C
#: int). A new run field is one entry here and one field of :class:`Run`.
SCALAR_ARGS = (("flags", 0), ("batch", 1), ("coset_shift_lo", 0), ("coset_shift_hi", 0), ("input_log_m", 0),
               ("chain_log_n", 0), ("row_step_lo", 0), ("row_step_hi", 0))

#: What each argument word of a run holds (the register map's descriptions are built from these).
ARG_DOCS = {
    "log_n": "n: N = 2^n points per transform (the build's native sizes; others set STATUS.bad_size)",
    "flags": "bit 0 inverse (1/N inside the kernel), bit 1 coset; any other bit sets STATUS.bad_flags",
    "batch": "B: transforms of N points back to back, 1 .. 2^(MAX_LOG_N - n)",
    "coset_shift_lo": "the coset shift g, bits 31..0 (0 < g < p with the coset flag)",
    "coset_shift_hi": "the coset shift g, bits 63..32",
    "input_log_m": "m: the input holds only each transform's first 2^m points (zero-extended); 0: all",
    "chain_log_n": "t: the output is written as the zero-extended input of a 2^t-point run; 0: plain output",
    "row_step_lo": "the coset's row step s, bits 31..0: element r of the batch has the shift g x s^r (0 or 1: "
                   "every element g; else the coset flag and s < p, or STATUS.bad_shift)",
    "row_step_hi": "the coset's row step s, bits 63..32",
    "status": "where the kernel writes its status record after every start (a buffer in HBM[0], rounded "
              "down to 64 bytes; hw.model.record)",
}

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
    to its 64-byte record, one burst that cannot cross a page."""
    unit_bytes = params.lanes // points_per_beat(params) * BEAT_BYTES
    align = max(BASE_ALIGN_BYTES, unit_bytes)
    assert PAGE_BYTES % align == 0, f"a burst of {align} bytes would cross a page"
    return align


def max_batch(params: BuildParams, log_n: int | None = None) -> int:
    """The largest batch of 2^log_n points: B x 2^log_n must fit the buffers of the largest size (without
    log_n: of the smallest size, the largest batch any start may have)."""
    return 1 << (params.max_log_n - (params.min_log_n if log_n is None else log_n))


@dataclass(frozen=True)
class Run:
    """The scalar arguments of one kernel start, as register contents (see the module docstring).

    log_n: N = 2^log_n points per transform; flags: FLAG_INVERSE | FLAG_COSET (other bits are refused);
    batch: B transforms back to back; coset_shift: g of a coset run (0 < g < p); input_log_m: m, the
    input holds only each transform's first 2^m points (0: all); chain_log_n: t, the output is written as
    the zero-extended input of a 2^t-point run (0: the plain output placement); row_step: s, element r of
    the batch is a coset transform with the shift coset_shift x s^r (0 or 1: every element coset_shift;
    another value needs the coset flag and s < p).
    """

    log_n: int
    flags: int = 0
    batch: int = 1
    coset_shift: int = 0
    input_log_m: int = 0
    chain_log_n: int = 0
    row_step: int = 0

    def __post_init__(self):
        for name in ("log_n", "flags", "batch", "input_log_m", "chain_log_n"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _WORD:
                raise ValueError(f"{name}: expected a 32-bit register value (an int in 0..2^32-1), got {value!r}")
        for name in ("coset_shift", "row_step"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 64:
                raise ValueError(f"{name}: expected a 64-bit register value, got {value!r}")

    @classmethod
    def of(cls, log_n: int, *, inverse: bool = False, coset: int | None = None, batch: int = 1,
           input_log_m: int = 0, chain_log_n: int = 0, row_step: int | None = None) -> "Run":
        """The run a caller means: inverse, a coset shift g (None: no coset), batch, padded input and chain,
        the coset's row step s (None: every element g)."""
        flags = (FLAG_INVERSE if inverse else 0) | (FLAG_COSET if coset is not None else 0)
        return cls(log_n, flags, batch, coset or 0, input_log_m, chain_log_n, row_step or 0)

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

    def check(self, params: BuildParams, bases=None) -> int:
        """The STATUS bits a kernel built with ``params`` refuses this start with; 0 when it runs. Every
        reason is reported, not only the first; the padded input and chain only with a native ``log_n``.
        ``bases``: the ``hbm_NN`` base addresses (every channel's: every run uses them all), each a
        multiple of :func:`base_align_bytes` or STATUS.bad_align; None: not checked (a Run holds no
        addresses)."""
        bad = 0
        if bases is not None and any(int(b) % base_align_bytes(params) for b in bases):
            bad |= STATUS_BAD_ALIGN
        size_ok = params.min_log_n <= self.log_n <= params.max_log_n
        if not size_ok:
            bad |= STATUS_BAD_SIZE
        if self.batch < 1 or (size_ok and self.batch > max_batch(params, self.log_n)):
            bad |= STATUS_BAD_BATCH
        if self.flags & FLAG_COSET and not coset_shift_ok(self.coset_shift, params.prime_field.p):
            bad |= STATUS_BAD_SHIFT
        if self.steps_rows and not (self.flags & FLAG_COSET and self.row_step < params.prime_field.p):
            bad |= STATUS_BAD_SHIFT
        if self.flags & ~FLAGS_KNOWN:
            bad |= STATUS_BAD_FLAGS
        if size_ok and self.input_log_m and not lde_pair_supported(params, self.input_log_m, self.log_n):
            bad |= STATUS_BAD_LDE_PAIR
        if size_ok and self.chain_log_n and not (
                lde_pair_supported(params, self.log_n, self.chain_log_n)
                and 1 <= self.batch <= max_batch(params, self.chain_log_n)):
            bad |= STATUS_BAD_LDE_PAIR
        return bad

    def words(self) -> dict[str, int]:
        """Every scalar argument's 32-bit word, by argument name: ``log_n`` and :data:`SCALAR_ARGS`."""
        return {"log_n": self.log_n, "flags": self.flags, "batch": self.batch,
                "coset_shift_lo": self.coset_shift & _WORD, "coset_shift_hi": self.coset_shift >> 32,
                "input_log_m": self.input_log_m, "chain_log_n": self.chain_log_n,
                "row_step_lo": self.row_step & _WORD, "row_step_hi": self.row_step >> 32}

    @classmethod
    def from_words(cls, words: dict[str, int]) -> "Run":
        """The run whose argument words are ``words`` (every name of :meth:`words`; a missing one is a
        KeyError naming it)."""
        missing = [n for n in ("log_n",) + tuple(name for name, _ in SCALAR_ARGS) if n not in words]
        if missing:
            raise KeyError(f"words: no value for {', '.join(missing)}")
        return cls(words["log_n"], words["flags"], words["batch"],
                   words["coset_shift_lo"] | words["coset_shift_hi"] << 32, words["input_log_m"],
                   words["chain_log_n"], words["row_step_lo"] | words["row_step_hi"] << 32)
