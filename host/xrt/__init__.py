"""The XRT backend: a nantucket kernel on an Alveo card through pyxrt (XRT's Python binding).

Modules: ``adapter`` (:class:`~host.xrt.adapter.PyxrtAdapter`, the one place that calls pyxrt; every
XRT failure becomes a named :class:`XrtError` raised ``from`` the original exception), ``errors`` (those
errors), ``card`` (:class:`~host.xrt.card.Card`: the open card, all the next three see of it),
``transfers`` (:class:`DeviceBuffers`, and moving points in and out through the layout step), ``runs``
(one :class:`hw.model.run.Run` started and waited for, and a run's stream of calls), ``identity`` (which
kernel is on the card), ``large_run`` (a size past one call, the four-step) and ``backend``
(:class:`XrtBackend`, which composes them).

:class:`XrtBackend` opens a card, loads ``nantucket.xclbin``, checks the kernel's identification
registers against the build parameters, allocates the status buffer (the kernel's ``status`` argument,
on master m00_axi's bank) and then, per transform: allocates one buffer per HBM channel with
``kernel.group_id``, sized for the run (kept while the size stays the same), scatters the points with
the shared :class:`hw.model.layout.HbmLayout` of the run's size, syncs the input channels to the device,
clears the status buffer, sets the arguments of :class:`hw.model.regmap.RegisterMap` (the run's
:meth:`Run.words` in register order), starts, waits with a timeout, reads back and checks the kernel's
status record (hw.model.record), syncs the output channels back and gathers. ``timings`` holds the three
phases (``to-device``, ``kernel``, ``from-device``) in seconds.

How a run went comes from the status record, which XRT's published pyxrt can read (``bo.sync``,
``bo.map``); it cannot read registers. A run that finished without writing it (a half-finished run) is
:class:`KernelFailed`; a record naming another build :class:`IdentityMismatch`; one of another start
:class:`KernelFailed`; its STATUS refusal bits :class:`KernelRefused`; an AXI error response an HBM master
got :class:`KernelAxiError` (channel, response, read or write). Where this pyxrt reads registers, STATUS
must agree with the record. When the record carries the kernel's own cycle counts, ``report`` has
"Measured cycles" and "Measured time" and ``kernel_measured`` the numbers.

Sizes and transforms (the kernel computes, per call, B transforms of N = 2^log_n points back to back,
forward or inverse with the 1/N inside, with or without a coset shift g, natively for every log_n from
``params.min_log_n`` to ``params.max_log_n`` = 2k, chosen per call by its arguments):

- n = 2^m points with m in that range run natively (``log_n = m``), in buffers of B x N points per
  channel region (element e of the batch at byte e * channel_bytes of every channel);
- a smaller power of two n = N / r, N = 2^min_log_n, is zero-padded to N: the padded transform evaluates
  the same polynomial at the N-th roots of unity, and w_n = w_N^r, so X_n[k] = X_N[r*k];
- a batch larger than the kernel takes (B x N > 2^MAX_LOG_N) is split into calls of the largest B that
  fits; input and output orders are part of the host's layout step (host/hbm_io.py), never kernel time;
- what a kernel does not compute (``kernel_computes``) the host does around it (host/kernel_plan.py,
  which gives the :class:`Run` of each kernel call).

A start the kernel would refuse (:meth:`Run.check`) is :class:`KernelRefused` before anything is sent;
one the kernel refuses (STATUS.bad_size / bad_batch / bad_shift / bad_flags / bad_lde_pair / bad_align /
bad_op: an op the build does not carry) is
the same error naming each STATUS reason and the argument. ``report["Kernel size"]``, ``report["Kernel calls"]``
and ``kernel_log_n`` say what the kernel ran in the last run; ``kernel_runs`` lists every call.

Device-resident data: :meth:`XrtBackend.allocate` gives a :class:`DeviceBuffers` set of its own,
:meth:`~XrtBackend.upload` / :meth:`~XrtBackend.download` move points in and out through the layout
step, :meth:`~XrtBackend.execute` runs the kernel on such a set in place (host/api/resident.py); a
run's ``chain_log_n`` = t writes the output as the zero-extended input of a 2^t-point run and its
``input_log_m`` = m reads an input of only 2^m points per row (placed by
:meth:`~XrtBackend.upload_padded` or by a chained run), so transforms chain on the card without a
host round trip (hw.model.layout: ``lde_pair_supported``, ``HbmLayout.output_as_input``).

Pointer arguments are checked before every start (:class:`BadPointer`): each buffer is aligned to the
32-byte beat and to the longest DMA burst (so no AXI burst crosses a 4 KiB boundary), lies inside the
HBM pseudo-channel its master is wired to (the xclbin's memory topology, or 256 MiB windows), is large
enough, and overlaps no other buffer; the kernel refuses a base off the longest burst itself too
(STATUS.bad_align). A run that times out cannot be aborted (runs.py).
"""

from nantucket.host.backend_base import DeviceError

from .adapter import SETUP_HINT, import_pyxrt
from .backend import XrtBackend, default_xclbin
from .errors import (BadPointer, BufferAllocFailed, DeviceOpenFailed, IdentityMismatch, KernelAxiError,
                     KernelFailed, KernelNotFound, KernelRefused, KernelTimeout, TransferFailed, UnsupportedSize,
                     XclbinLoadFailed, XclbinNotFound, XrtError, XrtUnavailable, lde_pair_refusal_text)
from .runs import c_int, kernel_calls_text, kernel_size_text
from .transfers import PROGRESS_MIN_POINTS, DeviceBuffers

__all__ = [
    "XrtBackend", "XrtError", "XrtUnavailable", "XclbinNotFound", "DeviceOpenFailed", "XclbinLoadFailed",
    "KernelNotFound", "IdentityMismatch", "BufferAllocFailed", "TransferFailed", "KernelTimeout",
    "KernelFailed", "KernelRefused", "KernelAxiError", "UnsupportedSize", "BadPointer", "DeviceBuffers",
    "import_pyxrt", "default_xclbin", "kernel_size_text", "kernel_calls_text", "c_int", "lde_pair_refusal_text",
    "SETUP_HINT", "PROGRESS_MIN_POINTS", "DeviceError",
]
