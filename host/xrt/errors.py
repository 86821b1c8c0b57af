"""The named errors of the XRT backend, and the text of a refused start."""

from __future__ import annotations

import functools

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import lde_pairs
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.host.backend_base import DeviceError

__all__ = ["XrtError", "XrtUnavailable", "XclbinNotFound", "DeviceOpenFailed", "XclbinLoadFailed",
           "KernelNotFound", "IdentityMismatch", "BufferAllocFailed", "TransferFailed", "KernelTimeout",
           "KernelFailed", "KernelRefused", "KernelAxiError", "UnsupportedSize", "BadPointer",
           "lde_pair_refusal_text", "noting_errors"]


class XrtError(DeviceError):
    """Base of every error of the XRT backend."""


class XrtUnavailable(XrtError):
    """pyxrt cannot be imported (XRT not installed or its setup script not sourced)."""


class XclbinNotFound(XrtError, ValueError):
    """No xclbin file at the given (or default) path: nothing there, or a directory. A bad argument (a
    ValueError, exit 2 on the command line) as much as a device error."""


class DeviceOpenFailed(XrtError):
    """The card could not be opened."""


class XclbinLoadFailed(XrtError):
    """The xclbin could not be read or programmed onto the card."""


class KernelNotFound(XrtError):
    """The xclbin has no ``nantucket`` compute unit."""


class IdentityMismatch(XrtError):
    """The kernel on the card was built with other parameters (or is not a nantucket kernel)."""


class BufferAllocFailed(XrtError):
    """A device buffer could not be allocated (or mapped)."""


class TransferFailed(XrtError):
    """A host <-> device buffer sync failed."""


class KernelTimeout(XrtError):
    """The kernel did not finish within the timeout. ``waited``: seconds waited (None when a previous
    run's timeout is what stops this one); ``status``: the decoded STATUS word ("" if clear or
    unreadable)."""

    def __init__(self, message: str, waited: float | None = None, status: str = ""):
        super().__init__(message)
        self.waited = waited
        self.status = status


class KernelFailed(XrtError):
    """The kernel run ended in an error state or reported an error status."""


class KernelRefused(KernelFailed):
    """The kernel refused a start (STATUS.bad_size / bad_batch / bad_shift / bad_flags / bad_lde_pair /
    bad_align / bad_op): it
    finished at once and touched no memory; or the host saw that it would and sent nothing. ``reasons``:
    the STATUS field names."""

    def __init__(self, message: str, reasons: tuple[str, ...]):
        super().__init__(message)
        self.reasons = reasons

    @classmethod
    def from_status(cls, status: int, run: Run, params: BuildParams, by: str, bases=None) -> "KernelRefused":
        """The error of ``run`` refused with the STATUS bits ``status`` by ``by`` ("the host", "the kernel");
        ``bases``: the hbm_NN addresses sent (by channel), which a bad_align names."""
        texts, reasons = [], []
        for name, bit, text in (
                ("bad_size", R.STATUS_BAD_SIZE, f"rejected log_n = {run.log_n} (STATUS.bad_size): the build "
                 f"runs 2^{params.min_log_n} .. 2^{params.max_log_n}"),
                ("bad_batch", R.STATUS_BAD_BATCH, f"rejected batch = {run.batch} of 2^{run.log_n} points "
                 f"(STATUS.bad_batch): 1 <= B and B x 2^log_n <= 2^{params.max_log_n}"),
                ("bad_shift", R.STATUS_BAD_SHIFT, f"rejected coset_shift = {run.coset_shift} "
                 "(STATUS.bad_shift): 0 < g < p"),
                ("bad_flags", R.STATUS_BAD_FLAGS, f"rejected flags = 0x{run.flags:x} (STATUS.bad_flags): known "
                 f"bits 0x{R.FLAGS_KNOWN:x}"),
                ("bad_lde_pair", R.STATUS_BAD_LDE_PAIR, lde_pair_refusal_text(params, run.log_n, run.batch,
                                                                       run.input_log_m, run.chain_log_n)),
                ("bad_align", R.STATUS_BAD_ALIGN, align_refusal_text(params, bases)),
                ("bad_op", R.STATUS_BAD_OP, op_refusal_text(params, run))):
            if status & bit:
                reasons.append(name)
                texts.append(text)
        return cls(f"{by} refused the start: {'; '.join(texts)}; nothing ran, no memory was touched",
                   tuple(reasons))


class KernelAxiError(KernelFailed):
    """An HBM master of the kernel got an AXI error response during the run (STATUS.axi_error: the first
    one the control slave latched). The run finished, but its output is not valid. ``channel``: the HBM
    channel (master ``mNN_axi``); ``resp``: the response code, ``resp_name`` its name (SLVERR, DECERR,
    EXOKAY); ``write``: True for a write response (B), False for read data (R)."""

    def __init__(self, message: str, channel: int, resp: int, write: bool):
        super().__init__(message)
        self.channel, self.resp, self.resp_name, self.write = channel, resp, R.AXI_RESP_NAMES[resp], write

    @classmethod
    def from_status(cls, status: int, note: str = "") -> "KernelAxiError":
        """The error of a STATUS word with axi_error set; ``note`` ends the message (the decoded STATUS)."""
        fault = R.decode_status(status)
        channel, write = fault["axi_channel"], fault["axi_write"]
        return cls(f"HBM channel {channel} answered {fault['axi_resp_name']} to a {'write' if write else 'read'} "
                   f"of the kernel (master {R.master_port(channel)}); the run finished but its output is not "
                   f"valid{note}", channel, fault["axi_resp"], write)


def op_refusal_text(params: BuildParams, run: Run) -> str:
    """Why a start gets STATUS.bad_op: the op the build does not carry, or the arguments foreign to it."""
    from nantucket.hw.model.ops import OPERATIONS, carried_codes
    carried = ", ".join(f"{o.code} {o.name}" for o in OPERATIONS if o.code in carried_codes(params))
    foreign = run.foreign_args()
    if foreign and run.op in carried_codes(params):
        return (f"rejected {', '.join(foreign)} (STATUS.bad_op): not arguments of op {run.op}, which needs them at "
                "their reset values")
    return f"rejected op = {run.op} (STATUS.bad_op): the {params.tag()} build carries {carried}"


def _sizes_text(logs) -> str:
    return ", ".join(f"2^{v}" for v in sorted(logs)) or "none"


def align_refusal_text(params: BuildParams, bases=None) -> str:
    """Why a start gets STATUS.bad_align, naming each misaligned hbm_NN base of ``bases`` (by channel;
    None: the argument unnamed) and the alignment the DMA's bursts need."""
    align = R.base_align_bytes(params)
    bad = [f"{R.pointer_arg(ch)} = 0x{b:x}" for ch, b in enumerate(bases or ()) if b % align]
    return (f"rejected {', '.join(bad) if bad else 'an hbm_NN base'} (STATUS.bad_align): every base must be a "
            f"multiple of {align} bytes, the DMA's longest burst, so that no burst crosses a 4 KiB boundary")


def lde_pair_refusal_text(params: BuildParams, log_n: int, batch: int, input_log_m: int, chain_log_n: int) -> str:
    """Why a start's ``input_log_m`` / ``chain_log_n`` get STATUS.bad_lde_pair, naming the argument and the
    sizes this build accepts with ``log_n`` (hw.model.layout.lde_pairs)."""
    rmap = R.RegisterMap(params)
    pairs = lde_pairs(params)
    parts = []
    if input_log_m and not rmap.lde_pair_ok(input_log_m, log_n):
        parts.append(f"rejected input_log_m = {input_log_m} with log_n = {log_n} (STATUS.bad_lde_pair): a "
                     f"2^{log_n}-point run of the {params.tag()} build takes zero-extended inputs of "
                     f"{_sizes_text(m for m, n in pairs if n == log_n)} points")
    if chain_log_n and not rmap.lde_pair_ok(log_n, chain_log_n):
        parts.append(f"rejected chain_log_n = {chain_log_n} after log_n = {log_n} (STATUS.bad_lde_pair): the "
                     f"output of a 2^{log_n}-point run of the {params.tag()} build can be written as the "
                     f"input of {_sizes_text(n for m, n in pairs if m == log_n)}-point runs")
    elif chain_log_n and not 1 <= batch <= rmap.max_batch(chain_log_n):
        parts.append(f"rejected chain_log_n = {chain_log_n} with batch = {batch} (STATUS.bad_lde_pair): B x "
                     f"2^chain_log_n <= 2^{params.max_log_n}")
    return "; ".join(parts) or (f"rejected input_log_m = {input_log_m} / chain_log_n = {chain_log_n} with "
                                f"log_n = {log_n} (STATUS.bad_lde_pair)")


class UnsupportedSize(XrtError):
    """The transform size cannot be run on this kernel."""


class BadPointer(XrtError):
    """A buffer given to the kernel breaks the beat/burst alignment, leaves its HBM channel, is too
    small, or overlaps another buffer."""


def noting_errors(method):
    """An XrtError leaving ``method`` (of an object with ``_note(line)``: the backend's device log) is
    first written to that log, once however many noting methods it crosses."""
    @functools.wraps(method)
    def noting(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except XrtError as e:
            if not getattr(e, "noted", False):
                e.noted = True
                self._note(f"xrt: error: {e}")
            raise
    return noting
