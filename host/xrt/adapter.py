"""The one module that calls pyxrt (XRT's Python binding): :class:`PyxrtAdapter`.

Every call uses only what XRT's published stub ``pyxrt.pyi`` declares (device, xclbin, kernel, bo, run
and their methods, the ``xclBOSyncDirection`` and ``ert_cmd_state`` enums), except
``kernel.read_register`` (C++ ``xrt::kernel::read_register``, not bound by the published pyxrt) and
``bo.copy`` (C++ ``xrt::bo::copy(src, size, src_offset, dst_offset)``, a copy between two buffer objects
on the card: the card's DMA engine where the platform has one, else XRT's copy through the host inside
the driver; XRT's pybind11 module, src/python/pybind11/src/pyxrt.cpp, binds no ``copy`` on ``bo``), each
used only when the module offers it. Every failure of a call (pybind11 raises XRT's C++ exceptions as
RuntimeError) becomes the named :class:`~host.xrt.errors.XrtError` of what was being done, raised
``from`` the original exception.
"""

from __future__ import annotations

import numpy as np

from .errors import (BadPointer, BufferAllocFailed, DeviceOpenFailed, KernelFailed, KernelNotFound,
                     TransferFailed, XclbinLoadFailed, XrtError, XrtUnavailable)

__all__ = ["PyxrtAdapter", "import_pyxrt", "SETUP_HINT", "UNFINISHED"]

SETUP_HINT = "source /opt/xilinx/xrt/setup.sh"

#: Run states of a command that has not finished.
UNFINISHED = ("ERT_CMD_STATE_TIMEOUT", "ERT_CMD_STATE_NEW", "ERT_CMD_STATE_QUEUED",
              "ERT_CMD_STATE_SUBMITTED", "ERT_CMD_STATE_RUNNING")


def import_pyxrt():
    """``import pyxrt``, or XrtUnavailable with the line that fixes it."""
    try:
        import pyxrt
    except ImportError as e:
        raise XrtUnavailable(f"cannot import pyxrt, XRT's Python binding ({e}): {SETUP_HINT} "
                             "(it puts /opt/xilinx/xrt/python on PYTHONPATH) and run again") from e
    return pyxrt


class _Call:
    """``with _Call(ExcClass, "what"):`` turns an XRT exception into ExcClass(what: message)."""

    def __init__(self, exc: type[XrtError], what: str):
        self.exc, self.what = exc, what

    def __enter__(self):
        return self

    def __exit__(self, et, e, tb):
        if e is not None and not isinstance(e, XrtError) and isinstance(e, Exception):
            raise self.exc(f"{self.what}: {e}") from e
        return False


class PyxrtAdapter:
    """pyxrt's calls, each as the backend needs it. ``module``: pyxrt, or a stand-in with its surface
    (:class:`sim.fake_pyxrt.FakePyxrt`)."""

    def __init__(self, module):
        self.module = module

    # -- device, xclbin, kernel ---------------------------------------------------------------------

    def open_device(self, index: int):
        with _Call(DeviceOpenFailed, f"device {index}: cannot open"):
            return self.module.device(index)

    def load_xclbin(self, device, path) -> tuple[object, object]:
        """(the xclbin object, its uuid on ``device``) of the xclbin at ``path``, programmed."""
        with _Call(XclbinLoadFailed, f"xclbin {path}: cannot load"):
            xb = self.module.xclbin(str(path))
            return xb, device.load_xclbin(xb)

    def open_kernel(self, device, uuid, name: str, path):
        """The kernel ``name``, with exclusive CU access where the module has it (needed to read
        registers)."""
        with _Call(KernelNotFound, f"xclbin {path}: no usable '{name}' kernel"):
            mode = getattr(getattr(self.module.kernel, "cu_access_mode", None), "exclusive", None)
            if mode is not None:
                return self.module.kernel(device, uuid, name, mode)
            return self.module.kernel(device, uuid, name)

    def kernel_arg_counts(self, xb, exc: type[XrtError], what: str) -> dict[str, int]:
        """{kernel name: argument count} from the xclbin's metadata."""
        with _Call(exc, what):
            return {k.get_name(): k.get_num_args() for k in xb.get_kernels()}

    @staticmethod
    def memory_windows(xb) -> dict[int, tuple[int, int]]:
        """{memory group: (base address, bytes)} from the xclbin's memory topology; empty if it has none."""
        windows = {}
        try:
            for m in xb.get_mems():
                windows[int(m.get_index())] = (int(m.get_base_address()), int(m.get_size_kb()) * 1024)
        except (AttributeError, RuntimeError, TypeError):
            return {}
        return windows

    @staticmethod
    def reads_registers(kernel) -> bool:
        """Whether this pyxrt binds ``kernel.read_register`` (the published one does not)."""
        return getattr(kernel, "read_register", None) is not None

    def read_registers(self, kernel, offsets, exc: type[XrtError], what: str) -> list[int]:
        with _Call(exc, what):
            return [int(kernel.read_register(offset)) for offset in offsets]

    # -- buffers ------------------------------------------------------------------------------------

    def allocate(self, device, kernel, arg_index: int, nbytes: int, what: str) -> tuple[object, np.ndarray, int]:
        """(bo, its host map as uint64 words, its memory group): ``nbytes`` on the bank of kernel argument
        ``arg_index``."""
        with _Call(BufferAllocFailed, what):
            group = kernel.group_id(arg_index)
            bo = self.module.bo(device, nbytes, self.module.bo.normal, group)
            return bo, np.frombuffer(bo.map(), dtype=np.uint64), group

    def sync(self, bo, to_device: bool, nbytes: int, what: str, offset: int = 0) -> None:
        """Sync ``nbytes`` of ``bo`` from byte ``offset`` (default the first) to (or from) the device."""
        sync = self.module.xclBOSyncDirection
        direction = sync.XCL_BO_SYNC_BO_TO_DEVICE if to_device else sync.XCL_BO_SYNC_BO_FROM_DEVICE
        with _Call(TransferFailed, what):
            bo.sync(direction, nbytes, offset)

    @staticmethod
    def copies_on_card(bo) -> bool:
        """Whether this pyxrt's buffer objects have ``copy`` (C++ ``xrt::bo::copy``; the published pyxrt
        binds none): a copy between buffers that moves no bytes over the host's link."""
        return callable(getattr(bo, "copy", None))

    def copy(self, dst, src, nbytes: int, src_offset: int, dst_offset: int, what: str) -> None:
        """``nbytes`` of ``src`` from byte ``src_offset`` into ``dst`` from byte ``dst_offset``, device
        memory to device memory (``dst.copy(src, nbytes, src_offset, dst_offset)``; needs
        :meth:`copies_on_card`); the host maps are left as they were."""
        with _Call(TransferFailed, what):
            dst.copy(src, nbytes, src_offset, dst_offset)

    def span(self, bo, what: str) -> tuple[int, int]:
        """(device address, bytes) of ``bo``."""
        with _Call(BadPointer, what):
            return int(bo.address()), int(bo.size())

    # -- runs ---------------------------------------------------------------------------------------

    def start(self, kernel, args) -> object:
        """A started run of ``kernel`` with ``args``: (argument index, value) pairs, in index order, each
        a bo or a C int."""
        with _Call(KernelFailed, "starting the kernel"):
            run = self.module.run(kernel)
            for index, value in args:
                run.set_arg(index, value)
            run.start()
            return run

    def wait(self, run, timeout_ms: int) -> tuple[bool, str]:
        """(whether ``run`` completed, its state's name) after waiting up to ``timeout_ms`` (0: no limit)."""
        with _Call(KernelFailed, "waiting for the kernel"):
            state = run.wait(timeout_ms)
        return state == self.module.ert_cmd_state.ERT_CMD_STATE_COMPLETED, getattr(state, "name", str(state))

    def state_name(self, run, what: str) -> str:
        with _Call(KernelFailed, what):
            state = run.state()
        return getattr(state, "name", str(state))
