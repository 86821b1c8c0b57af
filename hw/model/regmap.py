"""The kernel's control register map: the ONE definition of every offset and bit the host, the Vitis
build inputs (kernel.xml) and the gateware's AXI4-Lite slave use.

``s_axi_control`` is a 32-bit AXI4-Lite slave with a 12-bit address space, laid out the way Vitis
expects of an ``ap_ctrl_hs`` RTL kernel:

==========  =============================================================================
0x00        CTRL: bit0 ap_start (host sets, the kernel clears when it accepts the start),
            bit1 ap_done (clear on read), bit2 ap_idle, bit3 ap_ready
0x04        GIER: bit0 global interrupt enable
0x08        IP_IER: bit0 enable the "done" interrupt
0x0C        IP_ISR: bit0 done (set by the kernel when IER.done is set; toggle-on-write)
0x10        argument 0 ``log_n``: 32-bit scalar (its 8-byte slot ends at 0x18, like Vitis HLS)
0x18 + 8*i  argument i+1 ``hbm_NN``: the 64-bit base address master ``mNN_axi`` works on, low word
            first (i = 0..C-1; C = BuildParams.channels)
A = 0x18+8C  the run's other arguments, one row of :data:`hw.model.run.RUN_ARGS` each, in its order: a
            32-bit scalar in an 8-byte slot like Vitis HLS, a 64-bit value as two such scalars
            (``<name>_lo``, ``<name>_hi``: pyxrt's set_arg passes a C int): ``flags`` (bit0 inverse,
            bit1 coset), ``batch`` (reset 1), ``coset_shift_lo/hi``, ``input_log_m``, ``chain_log_n``,
            ``row_step_lo/hi`` and ``op`` (the operation, hw.model.ops; reset 0, the NTT)
after them   ``status``: 64-bit pointer (master ``m00_axi``, so a buffer in HBM[0]) where the
            kernel writes its status record after every start (hw.model.record: STATUS, the
            identification words, the op's engine words), so a host that cannot read registers learns
            how the run went
0x800       identification block, read only: MAGIC, VERSION, LANES, LOG_CORE, CHANNELS, STATUS,
            MIN_LOG_N, MAX_LOG_N (the native sizes 2^MIN_LOG_N .. 2^MAX_LOG_N the kernel runs), FIELD
            (the prime field and root chain the kernel computes in: :data:`FIELD_CODES`), OPS (bit c: the
            build carries operation code c, hw.model.ops) and COMMIT (bit c: its commitment engine
            serves scheme code c, :data:`SCHEME_CODES`; 0: none)
==========  =============================================================================

Everything is generated from :class:`~hw.model.params.BuildParams`, so a 4-channel build has four
pointer arguments and its kernel.xml, register decoder and host agree without anybody editing a table.

A start is checked before anything moves (:meth:`hw.model.run.Run.check`, through
:meth:`RegisterMap.check_start`: the one definition the gateware's decoder and the host's model implement): an unsupported ``log_n`` (STATUS.bad_size), a batch
of 0 or one whose B x 2^log_n points exceed the buffers of the build's largest transform
(B * 2^log_n > 2^MAX_LOG_N, STATUS.bad_batch), a coset run whose shift is 0 or not below p
(STATUS.bad_shift, also a row_step other than 0 and 1 without the coset flag or not below p), a flag bit the kernel does not know (STATUS.bad_flags) or an ``input_log_m`` /
``chain_log_n`` pair of sizes the layout cannot place evenly (STATUS.bad_lde_pair,
:func:`hw.model.layout.lde_pair_supported`) or an ``hbm_NN`` base that is not a multiple of the DMA's
longest burst, so that a burst would cross a 4 KiB boundary (STATUS.bad_align,
:func:`hw.model.run.base_align_bytes`: 256 bytes) or an ``op`` the build does not carry (STATUS.bad_op) finishes at once and touches no point memory: it writes
only its status record (whose address is rounded down to the record, so that write is always legal).
"""

from dataclasses import dataclass

from .layout import lde_pair_supported
from .params import BuildParams
from .ops import OPERATIONS, SCHEME_CODES, ops_mask
from .run import (ARG_DOCS, FLAG_COSET, FLAG_INVERSE, FLAGS_KNOWN, SCALAR_ARGS, STATUS_BAD_ALIGN,
                  STATUS_BAD_BATCH, STATUS_BAD_LDE_PAIR, STATUS_BAD_FLAGS, STATUS_BAD_OP, STATUS_BAD_SHIFT,
                  STATUS_BAD_SIZE, STATUS_REJECTED, Run, base_align_bytes, max_batch)

__all__ = [
    "KERNEL_NAME", "CONTROL_PORT", "ADDRESS_BITS", "ADDRESS_RANGE", "DATA_BITS", "MASTER_DATA_BITS",
    "CTRL", "GIER", "IP_IER", "IP_ISR", "ARGS_BASE", "POINTER_BASE", "ID_BASE", "RECORD_ARG",
    "CTRL_AP_START", "CTRL_AP_DONE", "CTRL_AP_IDLE", "CTRL_AP_READY", "GIER_ENABLE", "IER_DONE",
    "ISR_DONE", "MAGIC", "VERSION", "FIELD_CODES", "field_code", "field_of_code", "SCHEME_CODES", "commit_mask",
    "STATUS_BAD_SIZE", "STATUS_BAD_OP",
    "STATUS_AXI_ERROR", "STATUS_AXI_RESP_SHIFT",
    "STATUS_AXI_RESP_MASK", "STATUS_AXI_WRITE", "STATUS_AXI_CHANNEL_SHIFT", "STATUS_AXI_CHANNEL_MASK",
    "AXI_RESP_NAMES", "decode_status", "ID_REGISTERS", "FLAG_INVERSE", "FLAG_COSET", "FLAGS_KNOWN",
    "STATUS_BAD_BATCH", "STATUS_BAD_SHIFT", "STATUS_BAD_FLAGS", "STATUS_BAD_LDE_PAIR", "STATUS_BAD_ALIGN", "STATUS_REJECTED",
    "base_align_bytes", "master_port", "pointer_arg", "BitField", "Register", "KernelArg", "RegisterMap", "Run",
]

#: Vitis kernel name: the top Verilog module, the xclbin's kernel and the link's ``nk=`` all use it.
KERNEL_NAME = "nantucket"
#: The AXI4-Lite control slave's interface name (Vitis infers it from the port prefix).
CONTROL_PORT = "s_axi_control"
ADDRESS_BITS = 12
ADDRESS_RANGE = 1 << ADDRESS_BITS
#: Width of every control register (AXI4-Lite data bus).
DATA_BITS = 32
#: Data width of each ``mNN_axi`` master: one 256-bit HBM beat = 4 points (hw.model.layout).
MASTER_DATA_BITS = 256

# -- the ap_ctrl_hs block --------------------------------------------------------------------------
CTRL = 0x00
GIER = 0x04
IP_IER = 0x08
IP_ISR = 0x0C
ARGS_BASE = 0x10
#: The 32-bit log_n scalar takes an 8-byte slot, so the first pointer starts here.
POINTER_BASE = 0x18
#: Bytes per 64-bit pointer argument (two 32-bit words, low word first).
POINTER_BYTES = 8
#: The pointer argument of the status record (hw.model.record), after every scalar.
RECORD_ARG = "status"

CTRL_AP_START = 1 << 0
CTRL_AP_DONE = 1 << 1
CTRL_AP_IDLE = 1 << 2
CTRL_AP_READY = 1 << 3
GIER_ENABLE = 1 << 0
IER_DONE = 1 << 0
ISR_DONE = 1 << 0

# -- identification block --------------------------------------------------------------------------
ID_BASE = 0x800
#: "NTKT" in ASCII.
MAGIC = 0x4E54_4B54
#: Bumped whenever this register map changes incompatibly (2: the flags, batch and coset_shift arguments;
#: 3: input_log_m and chain_log_n; 4: the status argument and record; 5: the FIELD identification word;
#: 6: the row_step argument, which moves the status pointer; 7: the op argument, the OPS and COMMIT
#: identification words, STATUS.bad_op and the status record's second layout). A new refusal bit in a STATUS
#: bit that read 0 (bad_align, bit 19) is not a bump: no offset or argument moves, and a host that followed
#: the rules before (every base aligned) never sees it.
VERSION = 7

#: The FIELD identification word: the code of each field preset (hw.model.field.FIELDS) a kernel may be built
#: for. Codes are never reused; 0 is no field (what a kernel from before version 5 reads at FIELD's offset).
FIELD_CODES = {"goldilocks": 1, "goldilocks-plonky2": 2, "babybear": 3, "koalabear": 4}
# The COMMIT identification word: bit ``code`` for each scheme of hw.model.ops.SCHEME_CODES (re-exported).

# -- the ``flags`` argument and the refused-start bits: hw/model/run.py (re-exported here) -------------
#: STATUS bits 1..14: the first AXI error response (RRESP/BRESP other than OKAY) any HBM master got in
#: the last run. axi_error (bit 1) says one came; the other fields describe the first one and are 0
#: without it. All are cleared by the next accepted start; later errors of the same run leave them.
STATUS_AXI_ERROR = 1 << 1
STATUS_AXI_RESP_SHIFT = 2
STATUS_AXI_RESP_MASK = 0b11 << STATUS_AXI_RESP_SHIFT       # the response code: 2 SLVERR, 3 DECERR
STATUS_AXI_WRITE = 1 << 4                                   # 1: a write response (B), 0: read data (R)
STATUS_AXI_CHANNEL_SHIFT = 8
STATUS_AXI_CHANNEL_MASK = 0x7F << STATUS_AXI_CHANNEL_SHIFT  # HBM channel NN of master mNN_axi
AXI_RESP_NAMES = {0: "OKAY", 1: "EXOKAY", 2: "SLVERR", 3: "DECERR"}
#: Names of the identification words, in address order from ID_BASE (4 bytes each). MIN_LOG_N and
#: MAX_LOG_N (BuildParams.min_log_n / max_log_n: the log_n range the kernel accepts) follow STATUS,
#: so the older words keep their offsets; a host that does not know them is unaffected.
ID_REGISTERS = ("MAGIC", "VERSION", "LANES", "LOG_CORE", "CHANNELS", "STATUS", "MIN_LOG_N", "MAX_LOG_N", "FIELD",
                "OPS", "COMMIT")

_ID_DOCS = {
    "MIN_LOG_N": "identification: the smallest log_n a start accepts (2^MIN_LOG_N points)",
    "MAX_LOG_N": "identification: the largest log_n a start accepts (2^MAX_LOG_N points, = 2 * LOG_CORE)",
    "FIELD": "identification: the prime field and root chain the kernel computes in ("
             + ", ".join(f"{code} {name}" for name, code in FIELD_CODES.items()) + ")",
    "OPS": "identification: bit c set for every operation code c the build carries (the op argument: "
           + ", ".join(f"{o.code} {o.name}" for o in OPERATIONS) + ")",
    "COMMIT": "identification: bit c set for every commitment scheme code c the build's commitment engine "
              "serves (" + ", ".join(f"{c} {name}" for name, c in SCHEME_CODES.items()) + "); 0: none",
}


def field_code(name) -> int:
    """The FIELD word of a kernel built for field ``name`` (a preset name or a Field)."""
    from .field import get as get_field
    return FIELD_CODES[get_field(name).name]


def field_of_code(code: int) -> str | None:
    """The field preset a FIELD word names, or None for a code no preset has."""
    return next((name for name, c in FIELD_CODES.items() if c == code), None)


def commit_mask(params: BuildParams) -> int:
    """The COMMIT word of a build: bit ``SCHEME_CODES[s]`` for each scheme s of ``params.commit``."""
    return sum(1 << SCHEME_CODES[name] for name in params.commit)


def decode_status(word: int) -> dict:
    """The fields of a STATUS word: bad_size, axi_error and (with axi_error) axi_resp, axi_resp_name,
    axi_write and axi_channel."""
    out = {"bad_size": bool(word & STATUS_BAD_SIZE), "axi_error": bool(word & STATUS_AXI_ERROR)}
    for name, bit in (("bad_batch", STATUS_BAD_BATCH), ("bad_shift", STATUS_BAD_SHIFT), ("bad_flags", STATUS_BAD_FLAGS),
                      ("bad_lde_pair", STATUS_BAD_LDE_PAIR), ("bad_align", STATUS_BAD_ALIGN),
                      ("bad_op", STATUS_BAD_OP)):
        if word & bit:
            out[name] = True
    if out["axi_error"]:
        resp = (word & STATUS_AXI_RESP_MASK) >> STATUS_AXI_RESP_SHIFT
        out.update(axi_resp=resp, axi_resp_name=AXI_RESP_NAMES[resp], axi_write=bool(word & STATUS_AXI_WRITE),
                   axi_channel=(word & STATUS_AXI_CHANNEL_MASK) >> STATUS_AXI_CHANNEL_SHIFT)
    return out


def master_port(channel: int) -> str:
    """The AXI4 master interface serving HBM channel ``channel``: ``m00_axi`` .. ``m31_axi``."""
    if not isinstance(channel, int) or not 0 <= channel < 100:
        raise ValueError(f"channel: expected 0..99, got {channel!r}")
    return f"m{channel:02d}_axi"


def pointer_arg(channel: int) -> str:
    """The kernel argument holding channel ``channel``'s base address: ``hbm_00`` .. ``hbm_31``."""
    if not isinstance(channel, int) or not 0 <= channel < 100:
        raise ValueError(f"channel: expected 0..99, got {channel!r}")
    return f"hbm_{channel:02d}"


@dataclass(frozen=True)
class BitField:
    """Bits [lsb, lsb + width) of a register. access: "rw", "ro", "rc" (clear on read),
    "tow" (toggle on write), "sc" (host sets, hardware clears)."""
    name: str
    lsb: int
    width: int
    access: str
    doc: str = ""

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    """One 32-bit word of the control space."""
    name: str
    offset: int
    access: str                 # of the word as a whole: "rw", "ro", "mixed"
    doc: str
    fields: tuple[BitField, ...] = ()
    reset: int = 0


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument as kernel.xml and ``xrt::run::set_arg`` see it.

    index is the argument id (set_arg's first parameter), offset/size its place in the control space,
    port the interface it belongs to (``s_axi_control`` for scalars, ``mNN_axi`` for pointers).
    """
    name: str
    index: int
    offset: int
    size: int
    port: str
    c_type: str
    channel: int | None = None          # point buffers: which HBM channel / master
    reset: int = 0                      # the register's value after reset (scalars)

    @property
    def is_pointer(self) -> bool:
        """A global memory pointer (a point buffer or the status record), as kernel.xml declares it."""
        return self.c_type.endswith("*")

    @property
    def is_points(self) -> bool:
        """A point buffer: ``hbm_NN``, the base address master ``mNN_axi`` works on."""
        return self.channel is not None

    @property
    def address_qualifier(self) -> int:
        """kernel.xml addressQualifier: 0 scalar, 1 global memory pointer."""
        return 1 if self.is_pointer else 0

    @property
    def word_offsets(self) -> tuple[int, ...]:
        """Offsets of the 32-bit words the argument occupies, low word first."""
        return tuple(self.offset + 4 * w for w in range(self.size // 4))


class RegisterMap:
    """The control space of a kernel built with ``params``.

    Properties: ``params``, ``args`` (all kernel arguments, by index), ``pointer_args``, ``registers``
    (every 32-bit word, by offset), ``master_ports``, ``id_values`` (what the identification block
    must read), ``supported_log_n``. Lookups: :meth:`arg`, :meth:`register`, :meth:`register_at`,
    :meth:`id_offset`, :meth:`log_n_supported`.
    """

    def __init__(self, params: BuildParams):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        self._params = params
        args = [KernelArg("log_n", 0, ARGS_BASE, 4, CONTROL_PORT, "uint")]
        for ch in range(params.channels):
            args.append(KernelArg(pointer_arg(ch), 1 + ch, POINTER_BASE + POINTER_BYTES * ch,
                                  POINTER_BYTES, master_port(ch), "ulong*", channel=ch))
        # the run's other scalars (hw/model/run.py), each a 32-bit word in an 8-byte slot, as Vitis HLS
        after = POINTER_BASE + POINTER_BYTES * params.channels
        args += [KernelArg(name, 1 + params.channels + i, after + 8 * i, 4, CONTROL_PORT, "uint", reset=reset)
                 for i, (name, reset) in enumerate(SCALAR_ARGS)]
        # the status record's address, last (hw.model.record), served by master 0
        args.append(KernelArg(RECORD_ARG, len(args), after + 8 * len(SCALAR_ARGS), POINTER_BYTES, master_port(0),
                              "uint*"))
        self._args = tuple(args)
        self._registers = self._build_registers()
        self._by_offset = {r.offset: r for r in self._registers}
        self._by_name = {r.name: r for r in self._registers}
        if len(self._by_offset) != len(self._registers) or len(self._by_name) != len(self._registers):
            raise AssertionError("register map has overlapping registers")
        end = max(a.offset + a.size for a in self._args)
        if end > ID_BASE:
            raise ValueError(f"params: {params.channels} channels need arguments up to 0x{end:x}, "
                             f"past the identification block at 0x{ID_BASE:x}")

    def _build_registers(self) -> tuple[Register, ...]:
        regs = [
            Register("CTRL", CTRL, "mixed", "ap_ctrl_hs control and status", (
                BitField("ap_start", 0, 1, "sc", "host writes 1 to start; cleared when the kernel "
                         "accepts the start (ap_ready)"),
                BitField("ap_done", 1, 1, "rc", "the run finished; cleared when CTRL is read"),
                BitField("ap_idle", 2, 1, "ro", "no run in progress"),
                BitField("ap_ready", 3, 1, "ro", "the kernel accepted the start (pulse)"),
            ), reset=CTRL_AP_IDLE),
            Register("GIER", GIER, "rw", "global interrupt enable",
                     (BitField("enable", 0, 1, "rw"),)),
            Register("IP_IER", IP_IER, "rw", "interrupt enable",
                     (BitField("done", 0, 1, "rw"),)),
            Register("IP_ISR", IP_ISR, "mixed", "interrupt status",
                     (BitField("done", 0, 1, "tow", "set at the end of a run when IP_IER.done is "
                               "set; writing 1 toggles it"),)),
        ]
        for a in self._args:
            if a.size == 4:
                regs.append(Register(a.name, a.offset, "rw", f"argument {a.index}: {ARG_DOCS[a.name]}",
                                     reset=a.reset))
            elif not a.is_points:
                regs.append(Register(f"{a.name}_lo", a.offset, "rw", f"argument {a.index}: {a.name}, bits 31..0: "
                                     f"{ARG_DOCS[a.name]}"))
                regs.append(Register(f"{a.name}_hi", a.offset + 4, "rw",
                                     f"argument {a.index}: {a.name}, bits 63..32"))
            else:
                regs.append(Register(f"{a.name}_lo", a.offset, "rw",
                                     f"argument {a.index}: {a.name}, bits 31..0"))
                regs.append(Register(f"{a.name}_hi", a.offset + 4, "rw",
                                     f"argument {a.index}: {a.name}, bits 63..32"))
        ids = self.id_values
        for i, name in enumerate(ID_REGISTERS):
            if name == "STATUS":
                regs.append(Register(name, ID_BASE + 4 * i, "ro", "status of the last start", (
                    BitField("bad_size", 0, 1, "ro", "the last start had an unsupported log_n (the "
                             "kernel finished at once, writing only its status record); cleared by the next "
                             "good start"),
                    BitField("axi_error", 1, 1, "ro", "an HBM master got an AXI response other than "
                             "OKAY (RRESP or BRESP) during the last run; the run still finished, its "
                             "data is not to be trusted; cleared by the next accepted start"),
                    BitField("axi_resp", 2, 2, "ro", "the first error's response code (2 SLVERR, "
                             "3 DECERR, 1 EXOKAY); 0 without axi_error"),
                    BitField("axi_write", 4, 1, "ro", "the first error was a write response (B); 0: "
                             "read data (R)"),
                    BitField("axi_channel", 8, 7, "ro", "HBM channel NN (master mNN_axi, argument "
                             "hbm_NN) of the first error"),
                    BitField("bad_batch", 15, 1, "ro", "the last start had batch = 0 or batch * 2^log_n > "
                             "2^MAX_LOG_N (finished at once, points untouched)"),
                    BitField("bad_shift", 16, 1, "ro", "the last start asked for a coset with coset_shift "
                             "0 or >= p, or a row_step other than 0 and 1 without the coset flag or >= p "
                             "(finished at once, points untouched)"),
                    BitField("bad_flags", 17, 1, "ro", "the last start set a flags bit the kernel does not "
                             "know (finished at once, points untouched)"),
                    BitField("bad_lde_pair", 18, 1, "ro", "the last start had an input_log_m or chain_log_n "
                             "that the layout cannot place evenly with log_n (or chain_log_n with a batch "
                             "past the buffers; finished at once, points untouched)"),
                    BitField("bad_align", 19, 1, "ro", "the last start had an hbm_NN base that is not a "
                             f"multiple of {base_align_bytes(self._params)} bytes, the DMA's longest burst, so "
                             "a burst would cross a 4 KiB boundary (finished at once, points untouched)"),
                    BitField("bad_op", 20, 1, "ro", "the last start's op names an operation the build does not "
                             "carry (OPS), or an argument of another operation was not at its reset value "
                             "(finished at once, points untouched)"),
                )))
            else:
                regs.append(Register(name, ID_BASE + 4 * i, "ro", _ID_DOCS.get(name, f"identification: {name}"),
                                     reset=ids[name]))
        return tuple(sorted(regs, key=lambda r: r.offset))

    # -- properties --------------------------------------------------------------------------------

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def args(self) -> tuple[KernelArg, ...]:
        return self._args

    @property
    def pointer_args(self) -> tuple[KernelArg, ...]:
        """The point buffers ``hbm_NN``, one per channel (the status pointer is :attr:`record_arg`)."""
        return tuple(a for a in self._args if a.is_points)

    @property
    def record_arg(self) -> KernelArg:
        """The ``status`` pointer: where the kernel writes its status record (hw.model.record)."""
        return self.arg(RECORD_ARG)

    @property
    def scalar_args(self) -> tuple[KernelArg, ...]:
        return tuple(a for a in self._args if not a.is_pointer)

    @staticmethod
    def split_shift(shift: int) -> dict[str, int]:
        """The coset_shift_lo / coset_shift_hi argument values of a 64-bit shift g."""
        if not 0 <= shift < 1 << 64:
            raise ValueError(f"shift: expected a 64-bit unsigned value, got {shift}")
        return {"coset_shift_lo": shift & 0xFFFF_FFFF, "coset_shift_hi": shift >> 32}

    @property
    def registers(self) -> tuple[Register, ...]:
        return self._registers

    @property
    def master_ports(self) -> tuple[str, ...]:
        return tuple(a.port for a in self.pointer_args)

    @property
    def id_values(self) -> dict[str, int]:
        """The identification words a kernel built with these parameters returns (STATUS excluded)."""
        p = self._params
        return {"MAGIC": MAGIC, "VERSION": VERSION, "LANES": p.lanes, "LOG_CORE": p.log_core,
                "CHANNELS": p.channels, "MIN_LOG_N": p.min_log_n, "MAX_LOG_N": p.max_log_n,
                "FIELD": field_code(p.field), "OPS": ops_mask(p), "COMMIT": commit_mask(p)}

    @property
    def supported_log_n(self) -> tuple[int, ...]:
        """log_n values the kernel accepts: every native size, ``params.min_log_n`` .. ``params.max_log_n``
        (= 2k; the two passes transform 2^ceil(n/2) and 2^floor(n/2) points). Any other value sets
        STATUS.bad_size; hosts transform smaller sizes by zero-padding to 2^min_log_n."""
        return tuple(range(self._params.min_log_n, self._params.max_log_n + 1))

    def log_n_supported(self, log_n: int) -> bool:
        """Whether a start with this ``log_n`` (any 32-bit register value) runs, else done + bad_size."""
        return self._params.min_log_n <= log_n <= self._params.max_log_n

    def max_batch(self, log_n: int) -> int:
        """The largest ``batch`` a start of this (supported) ``log_n`` accepts: the B x 2^log_n points
        must fit the buffers of the build's largest transform, 2^MAX_LOG_N points."""
        return max_batch(self._params, log_n)

    def lde_pair_ok(self, log_m: int, log_n: int) -> bool:
        """Whether a 2^log_n-point run may take a zero-extended input of 2^log_m points per transform
        (``input_log_m``), and a 2^log_m-point run write its output as such an input (``chain_log_n``)."""
        return lde_pair_supported(self._params, log_m, log_n)

    @property
    def base_align(self) -> int:
        """What every ``hbm_NN`` base must be a multiple of (else STATUS.bad_align): the DMA's longest burst
        (:func:`hw.model.run.base_align_bytes`)."""
        return base_align_bytes(self._params)

    def check_start(self, log_n: int, *args: int, bases=None, **fields: int) -> int:
        """The STATUS bits a start with these argument values (register contents, in the order and with
        the names of :class:`Run`'s fields) gets refused with; 0 when it runs. Every reason found is
        reported, not only the first. ``input_log_m`` and ``chain_log_n`` are 0 when unused; checked only
        with a supported ``log_n``. :meth:`Run.check` of the same values is the one definition, so a new
        run field needs nothing here; an unknown keyword is Run's TypeError. ``bases``: the ``hbm_NN``
        addresses (None: alignment not checked)."""
        return Run(log_n, *args, **fields).check(self._params, bases)

    # -- lookups -----------------------------------------------------------------------------------

    def arg(self, name: str) -> KernelArg:
        for a in self._args:
            if a.name == name:
                return a
        raise KeyError(f"name: no kernel argument {name!r}")

    def register(self, name: str) -> Register:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"name: no register {name!r}") from None

    def register_at(self, offset: int) -> Register | None:
        """The register at byte offset ``offset`` (word aligned), or None for an unmapped word."""
        return self._by_offset.get(offset)

    def id_offset(self, name: str) -> int:
        if name not in ID_REGISTERS:
            raise KeyError(f"name: no identification register {name!r}")
        return ID_BASE + 4 * ID_REGISTERS.index(name)

    @staticmethod
    def split_pointer(address: int) -> tuple[int, int]:
        """(low word, high word) of a 64-bit address, the order the words sit in the control space."""
        if not 0 <= address < 1 << 64:
            raise ValueError(f"address: expected a 64-bit unsigned value, got {address}")
        return address & 0xFFFF_FFFF, address >> 32

    def markdown_table(self) -> str:
        """The register map as a Markdown table (docs/build.md holds it for the default build): every
        word with its access, reset value and fields; the C pointer arguments as one row."""
        rows = ["| offset | register | access | reset | contents |", "|---|---|---|---|---|"]
        pointers = self.pointer_args
        for r in self._registers:
            if pointers and r.name == f"{pointers[0].name}_lo":
                last = pointers[-1]
                rows.append(f"| 0x{POINTER_BASE:02X} + 8 i, + 4 | hbm_ii_lo, hbm_ii_hi | rw | 0x0 | arguments 1 .. "
                            f"{last.index}: the 64-bit base address master `mii_axi` works on, low word first "
                            f"(i = 0 .. {len(pointers) - 1}; up to 0x{last.offset + 7:X}) |")
                continue
            if any(r.name in (f"{a.name}_lo", f"{a.name}_hi") for a in pointers):
                continue
            fields = "; ".join(f"bit{'s' if f.width > 1 else ''} {f.lsb}{f'..{f.lsb + f.width - 1}' if f.width > 1 else ''}"
                               f" {f.name} ({f.access}){': ' + f.doc if f.doc else ''}" for f in r.fields)
            text = r.doc + (f". {fields}" if fields else "")
            rows.append(f"| 0x{r.offset:03X} | {r.name} | {r.access} | {r.reset:#x} | {text} |")
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"RegisterMap({self._params.tag()}, {len(self._args)} args)"
