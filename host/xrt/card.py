"""The card session of the XRT backend: :class:`Card`, one open card and everything held on it.

A Card owns the pyxrt handles (``xrt``, the adapter; ``device``; ``kernel``), the build the card holds
(``params``, ``rmap``, the layouts), the memory windows, the status buffer, and the parts that work on
them: ``runs`` (:class:`~host.xrt.runs.KernelRuns`: kernel calls and their status records),
``transfers`` (:class:`~host.xrt.transfers.Transfers`: buffers, the pool, points in and out) and
``scratch`` (:class:`~host.xrt.transfers.ScratchSets`: the buffer sets of the backend's own runs).
Those parts and the identification (host/xrt/identity.py) share the card through its public
attributes and methods only, and nothing of the backend's own state (its report, its run lists).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams

from . import identity
from .adapter import PyxrtAdapter
from .errors import XrtError
from .runs import KernelRuns
from .transfers import DeviceBuffers, ScratchSets, Transfers

__all__ = ["Card"]


class Card:
    """One card session through the pyxrt adapter ``xrt`` with the xclbin at ``xclbin_path``.

    Filled in by :meth:`open`: ``device`` and ``kernel`` (pyxrt's handles; None once closed), the build
    the card holds (:meth:`set_build`: ``params``, ``rmap``, the layouts of :meth:`layout_for`),
    ``windows`` ({memory group: (base, bytes)} of the xclbin's memory topology; empty: 256 MiB windows)
    and ``status_buffer`` (the one the kernel writes its status record into). ``timeout_s``: the kernel
    wait's limit in seconds (None: no limit); ``note(line)``: the device log. ``runs``, ``transfers``
    and ``scratch``: the parts working on the card (see the module)."""

    def __init__(self, xrt: PyxrtAdapter, xclbin_path: Path, note: Callable[[str], None],
                 timeout_s: float | None):
        self.xrt = xrt
        self.xclbin_path = xclbin_path
        self.note = note
        self.timeout_s = timeout_s
        self.device = None
        self.kernel = None
        self.params: BuildParams | None = None
        self.rmap: R.RegisterMap | None = None
        self.windows: dict[int, tuple[int, int]] = {}
        self.status_buffer = None
        self._layouts: dict[int, HbmLayout] = {}
        self.runs = KernelRuns(self)
        self.transfers = Transfers(self, self.runs)
        #: the buffer sets of the backend's own runs, each kept while it fits
        self.scratch = ScratchSets(self.new_buffers)

    def open(self, index: int, params: BuildParams | None, layout: HbmLayout | None,
             check_build: Callable[[BuildParams], None]) -> tuple[bool, str]:
        """Open device ``index``, load the xclbin, open the kernel and identify its build
        (:func:`identity.identify`; ``params`` the caller's, None: the card's), which ``check_build(built)``
        may refuse; then the build's layouts (``layout``: a caller's for runs of its size), the memory
        windows and the status buffer. Returns (whether the ID block was read, the report's "Identity"
        line); without the ID block the caller runs :func:`identity.self_test` next."""
        self.note(f"xrt: opening device {index}")
        self.device = self.xrt.open_device(index)
        self.note(f"xrt: loading {self.xclbin_path}")
        xb, uuid = self.xrt.load_xclbin(self.device, self.xclbin_path)
        self.kernel = self.xrt.open_kernel(self.device, uuid, R.KERNEL_NAME, self.xclbin_path)
        built, id_read, text = identity.identify(self, params, xb)
        check_build(built)
        self.set_build(built, layout)
        self.windows = self.xrt.memory_windows(xb)
        # one status buffer for every run: the kernel writes its status record there (hw.model.record)
        self.status_buffer = self.transfers.allocate_status()
        return id_read, text

    def set_build(self, params: BuildParams, layout: HbmLayout | None = None) -> None:
        """The build the card holds (and ``layout``, a caller's HbmLayout of that build, for runs of its
        size): its register map and layouts."""
        self.params = params
        self.rmap = R.RegisterMap(params)
        self._layouts = {}
        if layout is not None:
            if not isinstance(layout, HbmLayout) or layout.params != params:
                raise TypeError(f"layout: expected an HbmLayout of the {params.tag()} build")
            self._layouts[layout.log_n] = layout

    def layout_for(self, log_n: int) -> HbmLayout:
        """The HBM placement of a native run of 2^log_n points (built once per size)."""
        if log_n not in self._layouts:
            self._layouts[log_n] = HbmLayout(self.params, log_n)
        return self._layouts[log_n]

    def check_open(self) -> None:
        """XrtError once the card is closed."""
        if self.device is None:
            raise XrtError("the backend is closed")

    def new_buffers(self, layout: HbmLayout, batch: int = 1) -> DeviceBuffers:
        """A new buffer set (not from the pool) for ``batch`` transforms of ``layout``'s size."""
        self.check_open()
        return self.transfers.allocate(layout, batch)

    def free_buffers(self) -> None:
        """Free the scratch sets and the pool's idle ones."""
        self.scratch.release()
        self.transfers.pool.clear()

    def close(self, card_reset: bool = False) -> None:
        """Release buffers, kernel and device (in that order). The buffers of a run that timed out and may
        still be running are kept until the process exits instead, unless ``card_reset`` says the caller
        has reset or destroyed the card (nothing can write them any more)."""
        self.runs.release(card_reset)
        self.free_buffers()
        self.transfers.pool.close()     # sets of arrays released later are dropped, not kept
        # the status buffer is kept among a timed-out run's buffers; pyxrt frees a kernel and a device
        # with their last reference
        self.status_buffer = None
        self.kernel = None
        self.device = None
