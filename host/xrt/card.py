"""The open card, as the parts of the XRT backend see it: :class:`Card`.

:class:`~host.xrt.runs.KernelRuns`, :class:`~host.xrt.transfers.Transfers` and
:func:`host.xrt.identity.identify` take a Card, not the backend: what they may use of an open card is
its attributes, and nothing of the backend's own state (its report, its runs, its scratch buffers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams

from .adapter import PyxrtAdapter

__all__ = ["Card"]


class Card:
    """One card opened through the pyxrt adapter ``xrt`` with the xclbin at ``xclbin_path``.

    Filled in as the backend opens it: ``device`` and ``kernel`` (pyxrt's handles; None once closed),
    the build the card holds (:meth:`set_build`: ``params``, ``rmap``, the layouts of :meth:`layout_for`),
    ``windows`` ({memory group: (base, bytes)} of the xclbin's memory topology; empty: 256 MiB windows)
    and ``status_buffer`` (the one the kernel writes its status record into). ``timeout_s``: the kernel
    wait's limit in seconds (None: no limit); ``note(line)``: the device log."""

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

    def close(self) -> None:
        """Forget the handles (pyxrt frees a kernel and a device with their last reference)."""
        self.status_buffer = None
        self.kernel = None
        self.device = None
