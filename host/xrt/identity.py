"""Which kernel is on the card: the ID registers when this pyxrt reads registers, else the xclbin's
metadata and a self-test (whose status records carry the identification words too).

XRT's C++ ``xrt::kernel::read_register`` is not bound by XRT's published pyxrt (its pyxrt.pyi declares
no register access); when a module offers it the ID block (MAGIC, VERSION, LANES, LOG_CORE, CHANNELS,
MIN_LOG_N, MAX_LOG_N, FIELD, OPS, COMMIT) is read with exclusive CU access; a kernel built for another field
than the host asked for (FIELD), or carrying other operations (OPS) or commitment schemes (COMMIT), is an
:class:`IdentityMismatch` naming both. Otherwise the xclbin's metadata (kernel name and
argument count, which only tells the channel count) is checked and then one self-test transform of a
known input at the largest size 2^(2k) (the impulse at index 1, whose transform is the powers of w_N, all
distinct, and differ between root chains: another field's kernel fails it) must come back exact, and a start with log_n = 2k + 1 must leave memory untouched: a kernel
built with other lanes or k rejects a size, transforms one this build rejects, or places the points
elsewhere, and is reported as :class:`IdentityMismatch` before any user data runs.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.ops import ops_mask
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run

from .errors import IdentityMismatch, KernelFailed, KernelRefused, KernelTimeout

__all__ = ["identify", "self_test", "sidecar_path", "sidecar_params"]

#: ID registers that report the kernel's native log_n range (read and checked when the register map has them).
_RANGE_IDS = ("MIN_LOG_N", "MAX_LOG_N")


def sidecar_path(xclbin: Path) -> Path:
    return xclbin.parent / "build_params.json"


def sidecar_params(xclbin: Path) -> BuildParams | None:
    """The parameters in the build_params.json that the Vitis flow (hw/flow/vitis.py) writes beside the
    xclbin, or None (absent or unreadable): a hint only, the self-test decides."""
    try:
        return BuildParams(**json.loads(sidecar_path(xclbin).read_text())["params"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def identify(card, params: BuildParams | None, xb) -> tuple[BuildParams, bool, str]:
    """(the build parameters of the kernel on ``card`` (a :class:`~host.xrt.card.Card` with its device and
    kernel open; ``xb`` its xclbin), whether its ID block was read, the report's "Identity" line). Without
    the ID block the caller runs :func:`self_test` next."""
    path = card.xclbin_path
    if card.xrt.reads_registers(card.kernel):
        offsets = [R.ID_BASE + 4 * i for i in range(len(R.ID_REGISTERS))]
        words = card.xrt.read_registers(card.kernel, offsets, IdentityMismatch, "reading the identification registers")
        params, text = _identify_by_id(path, params, dict(zip(R.ID_REGISTERS, words)))
        return params, True, text
    sidecar = sidecar_params(path)
    if params is None:
        params = sidecar if sidecar is not None else BuildParams()
    kernels = card.xrt.kernel_arg_counts(xb, IdentityMismatch, f"xclbin {path}: reading its kernel list")
    want_args = len(R.RegisterMap(params).args)
    if kernels.get(R.KERNEL_NAME) != want_args:
        raise IdentityMismatch(f"xclbin {path}: kernel '{R.KERNEL_NAME}' has {kernels.get(R.KERNEL_NAME)} "
                               f"arguments, a {params.tag()} build has {want_args}")
    return params, False, (f"xclbin metadata ({want_args} arguments) and a self-test transform of "
                           "a known input; this pyxrt cannot read registers")


def _identify_by_id(path: Path, params: BuildParams | None, ids: dict[str, int]) -> tuple[BuildParams, str]:
    """The build of the kernel whose ID block reads ``ids`` and the report's "Identity" line."""
    if ids["MAGIC"] != R.MAGIC:
        raise IdentityMismatch(f"xclbin {path}: MAGIC reads 0x{ids['MAGIC']:08x}, "
                               f"not 0x{R.MAGIC:08x}: not a nantucket kernel")
    if ids["VERSION"] != R.VERSION:
        raise IdentityMismatch(f"xclbin {path}: register map version "
                               f"{ids['VERSION']}, this host speaks version {R.VERSION}")
    got = {"lanes": ids["LANES"], "log_core": ids["LOG_CORE"], "channels": ids["CHANNELS"]}
    kernel_field = R.field_of_code(ids["FIELD"])
    if kernel_field is None:
        raise IdentityMismatch(f"xclbin {path}: FIELD reads {ids['FIELD']}, a code no field has "
                               f"({', '.join(f'{c} {n}' for n, c in R.FIELD_CODES.items())})")
    schemes = tuple(name for name, code in R.SCHEME_CODES.items() if ids["COMMIT"] >> code & 1)
    if params is None:
        try:
            params = BuildParams(**got, field=kernel_field, commit=schemes)
        except (TypeError, ValueError) as e:
            raise IdentityMismatch(f"xclbin {path}: ID block reports {got}, field {kernel_field}: {e}") from e
    if kernel_field != params.field:
        raise IdentityMismatch(f"xclbin {path}: the kernel computes in the {kernel_field} field, the host "
                               f"asked for {params.field}")
    want = {"lanes": params.lanes, "log_core": params.log_core, "channels": params.channels}
    if got != want:
        raise IdentityMismatch(f"xclbin {path}: the kernel was built with {got}, expected {want}")
    _check_operations(path, params, ids, schemes)
    # The native sizes the ID block reports must be the build's: the host runs every size in that range
    # natively, so a kernel that rejects some of them (one from before run-time sizes reads 0) is refused.
    for name, value in zip(_RANGE_IDS, (params.min_log_n, params.max_log_n)):
        if name in ids and ids[name] != value:
            raise IdentityMismatch(f"xclbin {path}: {name} reads {ids[name]}, but a "
                                   f"{params.tag()} build transforms 2^{params.min_log_n} .. "
                                   f"2^{params.max_log_n} points natively (a kernel built before "
                                   "run-time sizes? rebuild the xclbin)")
    return params, (f"ID block: MAGIC 0x{ids['MAGIC']:08X} VERSION {ids['VERSION']} "
                    f"LANES {ids['LANES']} LOG_CORE {ids['LOG_CORE']} CHANNELS {ids['CHANNELS']}"
                    + "".join(f" {name} {ids[name]}" for name in _RANGE_IDS if name in ids)
                    + f" FIELD {ids['FIELD']} ({kernel_field}) OPS {ids['OPS']:#x} COMMIT {ids['COMMIT']:#x}")


def _check_operations(path: Path, params: BuildParams, ids: dict[str, int], schemes: tuple) -> None:
    """The operations (OPS) and commitment schemes (COMMIT) of the kernel must be the build's."""
    want_ops = ops_mask(params)
    if ids["OPS"] != want_ops:
        raise IdentityMismatch(f"xclbin {path}: OPS reads {ids['OPS']:#x}, a {params.tag()} build carries "
                               f"{want_ops:#x} (operation codes: hw.model.ops)")
    if set(schemes) != set(params.commit):
        raise IdentityMismatch(f"xclbin {path}: the kernel commits with {list(schemes) or 'no scheme'}, the host "
                               f"asked for {list(params.commit) or 'none'}")


def self_test(be) -> None:
    """Without the ID block, two runs on the backend ``be`` (an XrtBackend: its ``run``, ``close`` and
    ``forget_runs``, and its card session ``be.card``: a scratch set and ``runs.start_and_wait``, which
    skips the host's check of the start) name a kernel built with other lanes or k before user data runs
    (the argument count only tells the channel count):

    1. the impulse at index 1 at the largest size 2^(2k) (its NTT is w_N^k, N distinct values) must
       come back exact: a kernel with other lanes places the points elsewhere, one with a smaller k
       rejects the size;
    2. a start with log_n = 2k + 1 must leave memory untouched (STATUS.bad_size): a kernel with a
       larger k transforms that size, and every size it shares with this build it places and
       transforms exactly as this build would, so step 1 cannot tell it. Not needed at k = 12.

    A kernel that writes its status record names its LANES, LOG_CORE and CHANNELS there already (runs.py
    checks them after every run), so step 1 fails on another build's record before its points are
    compared; the steps stay for what a record cannot prove (the placement, the sizes)."""
    native = be.params.n_points
    x = np.zeros(native, dtype=np.uint64)
    x[1] = 1
    field = be.params.prime_field          # the root chain differs between fields sharing a p
    want = field.powers(field.root_of_unity(native), native)
    tag, path = be.params.tag(), be.xclbin_path
    sidecar = sidecar_params(path)
    hint = ("pass the parameters the xclbin was built with" if sidecar is None else
            f"{sidecar_path(path)} says {sidecar.tag()}")
    try:
        bad = int(np.count_nonzero(be.run(x) != want))
        changed = 0 if bad else _larger_size_probe(be.card)
    except IdentityMismatch as e:          # the run's status record names another build
        be.close()
        raise IdentityMismatch(f"xclbin {path}: the kernel is not a {tag} build: {e} (this pyxrt cannot "
                               f"read the ID registers; {hint})") from e
    except (KernelTimeout, KernelFailed) as e:
        be.close()                         # keeps the buffers if the run may still be going
        raise IdentityMismatch(f"xclbin {path}: a self-test transform of a known input did "
                               f"not complete ({e}); is the kernel built for {tag}?") from e
    if bad:
        be.close()
        raise IdentityMismatch(f"xclbin {path}: the kernel is not a {tag} "
                               f"build: a self-test transform of a known input came back with {bad} of "
                               f"{native} points wrong (this pyxrt cannot read the ID registers; {hint})")
    if changed:
        be.close()
        raise IdentityMismatch(f"xclbin {path}: the kernel is not a {tag} build: it "
                               f"transformed 2^{be.params.max_log_n + 1} points, which a {tag} build "
                               f"rejects (built with a larger k? this pyxrt cannot read the ID "
                               f"registers; {hint})")
    be.forget_runs()                        # the report and the run lists speak of the user's runs


def _larger_size_probe(card) -> int:
    """Start a run of 2^(2k+1) points, which this build rejects without touching memory, in buffers
    large enough for a kernel that does transform it, on ``card`` (a :class:`~host.xrt.card.Card`); returns
    how many words of them changed (0 also at k = 12, where no build transforms more)."""
    p = card.params
    if p.log_core >= 12:
        return 0
    layout = HbmLayout(replace(p, log_core=p.log_core + 1), p.max_log_n + 1)
    bufs = card.scratch.get(layout)
    pattern = np.uint64(0x0123_4567_89AB_CDEF)   # any transform of it differs (its X[0] is N x it)
    for ch, view in bufs.views.items():
        view[:] = pattern
        card.xrt.sync(bufs.bos[ch], True, layout.channel_bytes, f"{R.pointer_arg(ch)}: sync to device")
    try:
        card.runs.start_and_wait(bufs, Run(layout.log_n))  # not execute(): the host would refuse the size
    except KernelRefused as e:          # what a kernel of this build does; its memory is checked next
        if e.reasons != ("bad_size",):
            raise
    changed = 0
    for ch, view in bufs.views.items():
        card.xrt.sync(bufs.bos[ch], False, layout.channel_bytes, f"{R.pointer_arg(ch)}: sync from device")
        changed += int(np.count_nonzero(view != pattern))
    del bufs
    card.free_buffers()
    return changed
