"""A stand-in for XRT's Python binding ``pyxrt``, for tests on machines without XRT or a card.

It implements the part of XRT's published stub (``src/python/pybind11/pyxrt.pyi``) that the host uses,
with the same names and calling conventions: ``device(index)``, ``device.load_xclbin``,
``xclbin(path)`` (``get_kernels``, ``get_mems``, ``get_uuid``, ``get_xsa_name``),
``kernel(device, uuid, name[, cu_access_mode])`` with ``group_id``, ``bo(device, nbytes, bo.normal,
group)`` with ``map``/``sync``/``address``/``size``/``read``/``write`` and ``copy`` (below; its device
memory is freed when the last reference goes, as XRT does; ``calls`` records ``bo(...)`` and ``free(...)``),
``run(kernel)`` with ``set_arg``/``start``/``wait``/``state`` (no ``abort``: the stub declares none), and
the ``xclBOSyncDirection`` and ``ert_cmd_state`` enums. Errors are raised as ``RuntimeError`` like
pybind11's translation of XRT's C++ exceptions.

Behind it sits :class:`sim.kernel_model.KernelModel`: ``run.start`` writes the arguments into the
control registers and sets ap_start, the way XRT's ap_ctrl_hs command does; ``run.wait`` polls ap_done.
Host memory and device memory are separate, so a missing ``bo.sync`` shows up as wrong data.

One extra, which the published pyxrt does NOT declare: ``kernel.read_register(offset)`` (C++
``xrt::kernel::read_register``), present unless ``read_register=False``; the adapter must work both
ways (without it the host learns how a run went from the kernel's status record alone). And
``bo.copy(src, size, src_offset, dst_offset)`` (C++ ``xrt::bo::copy``: device memory to device memory, the
host maps left alone; XRT's pybind11 module binds none), present unless ``bo_copy=False``: it moves no
bytes over the modelled link (``link_log`` gets an entry of 0 bytes with ``to_device`` None, ``copy_log``
the copy) and takes no modelled time.

Device faults (``fault=``): ``"axi-read"`` / ``"axi-write"`` make master ``fault_channel``'s reads / write
responses answer ``fault_resp`` (2 SLVERR, 3 DECERR) through the kernel's ``inject`` (KernelModel's, or the
simulated Verilog kernel's), so runs complete with STATUS.axi_error; ``"hang"`` is a kernel that never
finishes (``run.wait`` times out without asking the kernel). :meth:`FakePyxrt.set_fault` changes it later.

An "xclbin" for this module is a small JSON file written by :func:`write_xclbin` (kernel name and build
parameters). Usage::

    pyxrt = FakePyxrt()                                  # one isolated "machine" per instance
    write_xclbin(tmp_path / "nantucket.xclbin", BuildParams(lanes=2, log_core=3, channels=4))
    backend = XrtBackend(params, xclbin=path, pyxrt_module=pyxrt)
"""

from __future__ import annotations

import enum
import json
import collections
import threading
import time
import uuid as _uuid
from pathlib import Path

import numpy as np

from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.platform import PCIE_FROM_CARD_GBPS, PCIE_TO_CARD_GBPS
from .kernel_model import BANK_BYTES, HbmModel, KernelModel, MemoryFault

__all__ = ["FakePyxrt", "LinkTiming", "write_xclbin", "xclBOSyncDirection", "ert_cmd_state", "FAULTS"]

_FORMAT = "nantucket-fake-xclbin"
#: The device faults FakePyxrt injects (None: none).
FAULTS = (None, "axi-read", "axi-write", "hang")
#: HBM pseudo-channels on the card, whatever the build uses.
HBM_BANKS = 32


class xclBOSyncDirection(enum.IntEnum):
    XCL_BO_SYNC_BO_TO_DEVICE = 0
    XCL_BO_SYNC_BO_FROM_DEVICE = 1
    XCL_BO_SYNC_BO_GMIO_TO_AIE = 2
    XCL_BO_SYNC_BO_AIE_TO_GMIO = 3


class ert_cmd_state(enum.IntEnum):
    ERT_CMD_STATE_NEW = 1
    ERT_CMD_STATE_QUEUED = 2
    ERT_CMD_STATE_COMPLETED = 4
    ERT_CMD_STATE_ERROR = 5
    ERT_CMD_STATE_ABORT = 6
    ERT_CMD_STATE_SUBMITTED = 7
    ERT_CMD_STATE_TIMEOUT = 8
    ERT_CMD_STATE_NORESPONSE = 9
    ERT_CMD_STATE_SKERROR = 10
    ERT_CMD_STATE_SKCRASHED = 11


class LinkTiming:
    """The timing model of a card (off unless given to FakePyxrt): a ``bo.sync`` takes
    nbytes / rate (``to_card_gbps``, ``from_card_gbps``: by default the platform's link as measured,
    hw.model.platform: PCIe Gen3 x4, 3.24 GB/s to the card and 2.38 GB/s from it), each direction of each card's link one transfer at a time (the link
    is full duplex: the two directions overlap); a kernel run completes ``BuildParams.ideal_cycles(log_n)``
    x batch cycles at the build's projected ``ntt_mhz`` after its start, whatever the stand-in's own CPU
    time (the model computes at the start). ``scale`` multiplies every modelled time (a slower card,
    when the stand-in's own work would hide the model's times)."""

    def __init__(self, *, to_card_gbps: float = PCIE_TO_CARD_GBPS, from_card_gbps: float = PCIE_FROM_CARD_GBPS,
                 kernel: bool = True, scale: float = 1.0):
        for name, v in (("to_card_gbps", to_card_gbps), ("from_card_gbps", from_card_gbps), ("scale", scale)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0:
                raise ValueError(f"{name}: expected a positive number, got {v!r}")
        self.to_card_gbps, self.from_card_gbps = float(to_card_gbps), float(from_card_gbps)
        self.kernel, self.scale = bool(kernel), float(scale)

    def sync_seconds(self, nbytes: int, to_device: bool) -> float:
        rate = self.to_card_gbps if to_device else self.from_card_gbps
        return nbytes / (rate * 1e9) * self.scale

    def kernel_seconds(self, params: BuildParams, log_n: int, batch: int) -> float:
        if not self.kernel:
            return 0.0
        return params.ideal_cycles(log_n) * max(1, batch) / (params.ntt_mhz * 1e6) * self.scale

    def __repr__(self) -> str:
        return (f"LinkTiming(to_card_gbps={self.to_card_gbps:g}, from_card_gbps={self.from_card_gbps:g}, "
                f"kernel={self.kernel}, scale={self.scale:g})")


class _TimingOnlyKernel(KernelModel):
    """The register-level kernel without its transform (``FakePyxrt(compute=False)``): every start is
    decoded, checked and answered with a status record as usual, the points are left as they are.
    For benchmarks of the timing model only: the output is not the transform."""

    def _transform(self, run) -> None:
        pass


def _remake(knobs: dict) -> "FakePyxrt":
    return FakePyxrt(**knobs)


def write_xclbin(path, params: BuildParams, kernel_name: str = R.KERNEL_NAME) -> Path:
    """Write a fake xclbin describing a kernel built with ``params``."""
    path = Path(path)
    path.write_text(json.dumps({"format": _FORMAT, "kernel": kernel_name, "params": params.as_dict(),
                                "uuid": str(_uuid.uuid4()), "xsa": "xilinx_u55n_gen3x4_xdma_2_202110_1"}))
    return path


class FakePyxrt:
    """A module-like object with pyxrt's classes, bound to one simulated machine.

    Knobs (for tests): ``devices`` (how many cards), ``fault`` (None, "axi-read", "axi-write", "hang":
    see the module's docstring; ``fault_channel`` the HBM channel of an AXI fault, ``fault_resp`` its
    response code, 2 SLVERR or 3 DECERR, 1 EXOKAY), ``hang`` (True: the same as ``fault="hang"``),
    ``read_register`` (offer kernel.read_register), ``bo_copy`` (offer bo.copy), ``id_overrides`` (corrupt ID
    registers), ``bank_bytes`` (HBM pseudo-channel size), ``layout_factory`` (params -> the HbmLayout of the build's
    largest size; defaults to hw.model.layout.HbmLayout; the kernel model places every other size with
    ``HbmLayout(params, log_n)``), ``kernel_factory`` ((params, hbm, layout) -> the kernel behind the
    control registers; defaults to KernelModel; it needs ``inject(channel, rresp, bresp)`` for the AXI
    faults). After a run, ``machine.kernel_model`` and ``machine.hbm`` are the models.
    """

    XCL_BO_FLAGS_NONE = 0
    xclBOSyncDirection = xclBOSyncDirection
    ert_cmd_state = ert_cmd_state

    def __init__(self, *, devices: int = 1, fault: str | None = None, fault_channel: int = 0, fault_resp: int = 2,
                 hang: bool = False, read_register: bool = True, id_overrides: dict | None = None,
                 bank_bytes: int = BANK_BYTES, layout_factory=None, kernel_factory=None,
                 timing: LinkTiming | None = None, compute: bool = True, bo_copy: bool = True):
        if timing is not None and not isinstance(timing, LinkTiming):
            raise TypeError(f"timing: expected a LinkTiming or None, got {type(timing).__name__}")
        if not isinstance(compute, bool):
            raise TypeError(f"compute: expected True or False, got {type(compute).__name__} {compute!r}")
        # what pickling sends: a copy in another process (a Dask worker) is a new machine of the same knobs
        self._knobs = dict(devices=devices, fault=fault, fault_channel=fault_channel, fault_resp=fault_resp,
                           hang=hang, read_register=read_register, id_overrides=id_overrides,
                           bank_bytes=bank_bytes, timing=timing, compute=compute, bo_copy=bo_copy)
        self.timing, self.compute = timing, compute
        if not isinstance(hang, bool):
            raise TypeError(f"hang: expected True or False, got {type(hang).__name__} {hang!r}")
        if hang and fault not in (None, "hang"):
            raise ValueError(f"hang: True is fault='hang', which conflicts with fault={fault!r}")
        self.devices = devices
        self.fault, self.fault_channel, self.fault_resp = None, 0, 2
        self.set_fault("hang" if hang else fault, fault_channel, fault_resp)
        self.offers_read_register = read_register
        self.id_overrides = id_overrides or {}
        self.bank_bytes = bank_bytes
        self.layout_factory = layout_factory
        # (params, hbm, layout) -> an object with read(offset), write(offset, value): the seam where
        # the sim backend puts the simulated Verilog kernel instead of KernelModel (sim/cosim.py).
        kernel_class = KernelModel if compute else _TimingOnlyKernel
        self.kernel_factory = kernel_factory or (lambda params, hbm, layout: kernel_class(
            params, hbm, layout, hang=self.hang, id_overrides=self.id_overrides))
        # a hang of the default kernel is the model's own (accepts the start, never finishes); any other
        # kernel is left alone and the runs never complete
        self._own_kernel = kernel_factory is None
        self.kernel_model: KernelModel | None = None
        self.hbm: HbmModel | None = None
        self.calls: list[str] = []                         # what the adapter did, in order
        #: every sync over a card's link, (card, to_device, start, end, nbytes, address): start and end in
        #: time.monotonic() seconds (with a timing model modelled: the end is when the transfer is over on
        #: the link; without one both the moment of the sync), the bytes the sync moved and the device
        #: address of the buffer object (telling the status record's syncs from the points'); the latest 4096
        self.link_log: collections.deque = collections.deque(maxlen=4096)
        #: every bo.copy on a card, (card, source address, destination address, nbytes): the latest 4096
        self.copy_log: collections.deque = collections.deque(maxlen=4096)
        #: CPU seconds the stand-in spent on its own work (the copies between host maps and the modelled
        #: HBM, the kernel model's starts and waits), summed over threads: what a card does, not the host
        self.cpu_seconds = 0.0
        self._cpu_lock = threading.Lock()
        machine = self
        ns = {"_machine": machine}
        self.uuid = type("uuid", (_Uuid,), ns)
        self.device = type("device", (_Device,), ns)
        self.xclbin = type("xclbin", (_Xclbin,), ns)
        kernel_ns = dict(ns, cu_access_mode=_CuAccessMode, exclusive=_CuAccessMode.exclusive,
                         shared=_CuAccessMode.shared, none=_CuAccessMode.none)
        if read_register:
            kernel_ns["read_register"] = _Kernel._read_register
        self.kernel = type("kernel", (_Kernel,), kernel_ns)
        bo_ns = dict(ns, copy=_Bo._copy) if bo_copy else ns
        self.bo = type("bo", (_Bo,), dict(bo_ns, flags=_BoFlags, normal=_BoFlags.normal,
                                          cacheable=_BoFlags.cacheable, device_only=_BoFlags.device_only,
                                          host_only=_BoFlags.host_only, p2p=_BoFlags.p2p,
                                          svm=_BoFlags.svm))
        self.run = type("run", (_Run,), ns)

    def __reduce__(self):
        if self.layout_factory is not None or not self._own_kernel:
            raise TypeError("a FakePyxrt with a layout_factory or kernel_factory cannot be pickled")
        return _remake, (self._knobs,)

    @property
    def hang(self) -> bool:
        """Whether runs started from now on never finish (``fault="hang"``)."""
        return self.fault == "hang"

    def set_fault(self, fault: str | None = None, channel: int = 0, resp: int = 2) -> None:
        """Change the injected fault (see the class docstring); on a loaded kernel it applies from its next
        start. ``set_fault(None)`` removes it (a run that already hung stays hung: reopen the card)."""
        if fault not in FAULTS:
            raise ValueError(f"fault: expected one of {', '.join(map(repr, FAULTS))}, got {fault!r}")
        if not isinstance(channel, int) or isinstance(channel, bool) or not 0 <= channel <= 0x7F:
            raise ValueError(f"fault_channel: expected an HBM channel number 0..127, got {channel!r}")
        if not isinstance(resp, int) or isinstance(resp, bool) or resp not in (1, 2, 3):
            raise ValueError(f"fault_resp: expected an AXI error response 1 EXOKAY, 2 SLVERR or 3 DECERR, "
                             f"got {resp!r}")
        kernel = getattr(self, "kernel_model", None)
        if kernel is not None and self.fault in ("axi-read", "axi-write"):
            kernel.inject(self.fault_channel, 0, 0)
        self.fault, self.fault_channel, self.fault_resp = fault, channel, resp
        if kernel is not None:
            self._apply_fault(kernel)

    def _apply_fault(self, kernel) -> None:
        """Give a newly made (or already loaded) kernel the injected fault."""
        if self._own_kernel:
            kernel.hang = self.hang
        if self.fault in ("axi-read", "axi-write"):
            if not hasattr(kernel, "inject"):
                raise RuntimeError(f"fault={self.fault!r}: the kernel {type(kernel).__name__} has no "
                                   "inject(channel, rresp, bresp)")
            params = getattr(kernel, "params", None)
            if params is not None and self.fault_channel >= params.channels:
                raise RuntimeError(f"fault_channel: the {params.tag()} build has HBM channels "
                                   f"0..{params.channels - 1}, got {self.fault_channel}")
            read = self.fault == "axi-read"
            kernel.inject(self.fault_channel, rresp=self.fault_resp if read else 0,
                          bresp=0 if read else self.fault_resp)

    def _layout(self, params):
        if self.layout_factory is not None:
            return self.layout_factory(params)
        from nantucket.hw.model.layout import HbmLayout
        return HbmLayout(params)


    def _own_cpu(self, fn, *args):
        """fn(*args), its thread's CPU time added to :attr:`cpu_seconds`."""
        t0 = time.thread_time()
        try:
            return fn(*args)
        finally:
            spent = time.thread_time() - t0
            with self._cpu_lock:
                self.cpu_seconds += spent


class _CuAccessMode(enum.IntEnum):
    exclusive = 0
    shared = 1
    none = 2


class _BoFlags(enum.IntEnum):
    normal = 0
    cacheable = 1 << 24
    device_only = 1 << 28
    host_only = 1 << 29
    p2p = 1 << 30
    svm = 1 << 27


class _Uuid:
    _machine: FakePyxrt

    def __init__(self, text: str):
        self._text = str(text)

    def to_string(self) -> str:
        return self._text

    def __eq__(self, other):
        return isinstance(other, _Uuid) and other._text == self._text

    def __hash__(self):
        return hash(self._text)


class _Xclbin:
    _machine: FakePyxrt

    def __init__(self, path):
        path = Path(path)
        try:
            meta = json.loads(path.read_text())
        except FileNotFoundError:
            raise RuntimeError(f"No such file or directory: '{path}'") from None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise RuntimeError(f"Invalid xclbin '{path}'") from None
        if meta.get("format") != _FORMAT:
            raise RuntimeError(f"Invalid xclbin '{path}'")
        self.path = path
        self.meta = meta
        self.params = BuildParams(**meta["params"])

    def get_uuid(self):
        return self._machine.uuid(self.meta["uuid"])

    def get_xsa_name(self) -> str:
        return self.meta["xsa"]

    def get_kernels(self):
        return [_XclbinKernel(self.meta["kernel"], len(R.RegisterMap(self.params).args))]

    def get_mems(self):
        """The memory topology: HBM[i] at i * bank_bytes, index i = the group id of its arguments."""
        size = self._machine.bank_bytes
        return [_XclbinMem(f"HBM[{i}]", i * size, size // 1024, i) for i in range(HBM_BANKS)]


class _XclbinMem:
    def __init__(self, tag, base, size_kb, index):
        self._tag, self._base, self._size_kb, self._index = tag, base, size_kb, index

    def get_tag(self) -> str:
        return self._tag

    def get_base_address(self) -> int:
        return self._base

    def get_size_kb(self) -> int:
        return self._size_kb

    def get_used(self) -> bool:
        return True

    def get_index(self) -> int:
        return self._index


class _XclbinKernel:
    def __init__(self, name, num_args):
        self._name, self._num_args = name, num_args

    def get_name(self):
        return self._name

    def get_num_args(self):
        return self._num_args


class _Device:
    _machine: FakePyxrt

    def __init__(self, index=0):
        m = self._machine
        m.calls.append(f"device({index})")
        if not isinstance(index, int) or not 0 <= index < m.devices:
            raise RuntimeError(f"No such device: {index} ({m.devices} device(s) found)")
        self.index = index
        self.loaded: _Xclbin | None = None
        # each card its own HBM, kernel and link (the machine's hbm / kernel_model: the last loaded)
        self.hbm: HbmModel | None = None
        self.kernel_model = None
        self.lock = threading.Lock()                        # allocations from several threads
        self.deferred_frees: list = []                     # buffers dropped while the lock was held
        self._link_lock = threading.Lock()
        self._link_free = {True: 0.0, False: 0.0}         # when each direction's last transfer ends

    def free_deferred(self) -> None:
        """Free the buffers dropped while an allocation held the lock (call holding it)."""
        while self.deferred_frees:
            address, size = self.deferred_frees.pop()
            self.hbm.free(address)
            self._machine.calls.append(f"free({size}, group {self.hbm.bank_of(address)})")

    def transfer(self, to_device: bool, seconds: float, move=None, nbytes: int = 0, address: int = 0) -> None:
        """Take ``seconds`` of the link in one direction, after the transfers already on it: returns when
        this one is over (sleeps are batched: below a millisecond the debt is carried to a later transfer,
        as the OS sleeps no shorter). ``move()``, the stand-in's own copy of the bytes (a card's DMA
        engine's work, not the host's), runs within that time: before the sleep, not after it."""
        with self._link_lock:
            now = time.monotonic()
            start = max(now, self._link_free[to_device])
            end = self._link_free[to_device] = start + seconds
            self._machine.link_log.append((self.index, to_device, start, end, nbytes, address))
        if move is not None:
            self._machine._own_cpu(move)
        left = end - time.monotonic()
        if left > 1e-3:
            time.sleep(left)

    def load_xclbin(self, xb):
        m = self._machine
        if isinstance(xb, (str, Path)):
            xb = m.xclbin(xb)
        m.calls.append(f"load_xclbin({xb.path.name})")
        self.loaded = xb
        self.hbm = m.hbm = HbmModel(HBM_BANKS, m.bank_bytes)
        self.kernel_model = m.kernel_model = m.kernel_factory(xb.params, m.hbm, m._layout(xb.params))
        m._apply_fault(m.kernel_model)
        return xb.get_uuid()

    def get_xclbin_uuid(self):
        if self.loaded is None:
            raise RuntimeError("No xclbin loaded")
        return self.loaded.get_uuid()


class _Kernel:
    _machine: FakePyxrt

    def __init__(self, device, uuid, name, mode=_CuAccessMode.shared):
        m = self._machine
        m.calls.append(f"kernel({name})")
        if device.loaded is None or device.loaded.get_uuid() != uuid:
            raise RuntimeError("No such xclbin loaded on the device")
        if name != device.loaded.meta["kernel"]:
            raise RuntimeError(f"No compute units matching '{name}'")
        self.device = device
        self.name = name
        self.mode = mode
        self.params = device.loaded.params
        self.rmap = R.RegisterMap(self.params)

    def group_id(self, argno: int) -> int:
        if not 0 <= argno < len(self.rmap.args):
            raise RuntimeError(f"Invalid kernel argument index {argno}")
        a = self.rmap.args[argno]
        if not a.is_pointer:
            raise RuntimeError(f"Argument {argno} ({a.name}) is not a global memory argument")
        # sp=nantucket_1.mNN_axi:HBM[NN]; the status record's pointer is served by m00_axi, so HBM[0]
        return a.channel if a.is_points else 0

    def _read_register(self, offset: int) -> int:
        # xrt::kernel::read_register needs exclusive access to the compute unit.
        if self.mode != _CuAccessMode.exclusive:
            raise RuntimeError("read_register requires exclusive access to the compute unit")
        self._machine.calls.append(f"read_register(0x{offset:x})")
        return self.device.kernel_model.read(offset)


class _Bo:
    _machine: FakePyxrt

    def __init__(self, device, nbytes, flags, group):
        m = self._machine
        m.calls.append(f"bo({nbytes}, group {group})")
        if device.loaded is None:
            raise RuntimeError("No xclbin loaded")
        self._hbm = None
        self._device = device
        try:
            with device.lock:
                device.free_deferred()
                self._address = device.hbm.allocate(int(group), int(nbytes))
        except MemoryFault as e:
            raise RuntimeError(f"bad_alloc: {e}") from None
        self._hbm = device.hbm
        self._size = int(nbytes)
        self._host = np.zeros(self._size, dtype=np.uint8)

    def __del__(self):
        # XRT frees a buffer object's device memory when the last reference to it goes.
        hbm, self._hbm = getattr(self, "_hbm", None), None
        if hbm is not None:
            try:
                # the garbage collector may run this inside an allocation (of this thread, holding the
                # lock) or while another thread allocates: then the next allocation frees it
                device = self._device
                if not device.lock.acquire(blocking=False):
                    device.deferred_frees.append((self._address, self._size))
                    return
                try:
                    device.free_deferred()
                    hbm.free(self._address)
                finally:
                    device.lock.release()
                self._machine.calls.append(f"free({self._size}, group {hbm.bank_of(self._address)})")
            except Exception:           # interpreter shutdown: nothing left to give back to
                pass

    def map(self):
        return memoryview(self._host)

    def size(self) -> int:
        return self._size

    def address(self) -> int:
        return self._address

    def write(self, buf, seek: int) -> None:
        data = np.frombuffer(memoryview(buf).cast("B"), dtype=np.uint8)
        self._host[seek:seek + data.size] = data

    def read(self, size: int, skip: int):
        return self._host[skip:skip + size].view(np.int8).copy()

    def sync(self, direction, size: int | None = None, offset: int = 0) -> None:
        size = self._size - offset if size is None else size
        if not (0 <= offset and size >= 0 and offset + size <= self._size):
            raise RuntimeError(f"sync: range {offset}+{size} outside a {self._size}-byte buffer")
        m = self._machine
        m.calls.append(f"sync({xclBOSyncDirection(direction).name}, group {self._hbm.bank_of(self._address)})")
        if direction not in (xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE, xclBOSyncDirection.XCL_BO_SYNC_BO_FROM_DEVICE):
            raise RuntimeError(f"sync: unsupported direction {direction!r}")
        to_device = direction == xclBOSyncDirection.XCL_BO_SYNC_BO_TO_DEVICE
        dev, host = self._hbm.view(self._address + offset, size), self._host[offset:offset + size]

        def move():
            np.copyto(dev if to_device else host, host if to_device else dev)
        if m.timing is None:
            m._own_cpu(move)
            now = time.monotonic()
            with self._device._link_lock:
                m.link_log.append((self._device.index, to_device, now, now, size, self._address))
        else:                   # the copy is the DMA's: within the link's modelled time
            self._device.transfer(to_device, m.timing.sync_seconds(size, to_device), move, size, self._address)


    def _copy(self, src, size: int, src_offset: int = 0, dst_offset: int = 0) -> None:
        # xrt::bo::copy: throws for a size of 0 or a range outside either buffer
        if not isinstance(src, _Bo) or src._device is not self._device:
            raise RuntimeError("copy: the source is not a buffer object of this device")
        if size <= 0 or min(src_offset, dst_offset) < 0 or src_offset + size > src._size or \
                dst_offset + size > self._size:
            raise RuntimeError(f"copy: {size} bytes from {src_offset} of a {src._size}-byte buffer to {dst_offset} "
                               f"of a {self._size}-byte buffer: out of bounds")
        m = self._machine
        m.calls.append(f"copy(group {src._hbm.bank_of(src._address)} -> group {self._hbm.bank_of(self._address)})")
        dev, data = self._hbm.view(self._address + dst_offset, size), self._hbm.view(src._address + src_offset, size)
        m._own_cpu(lambda: np.copyto(dev, data.copy()))
        now = time.monotonic()
        with self._device._link_lock:
            m.copy_log.append((self._device.index, src._address + src_offset, self._address + dst_offset, size))
            m.link_log.append((self._device.index, None, now, now, 0, self._address))


class _Run:
    _machine: FakePyxrt

    def __init__(self, kernel):
        self.kernel = kernel
        self._args: dict[int, object] = {}
        self._state = ert_cmd_state.ERT_CMD_STATE_NEW
        self._hung = False          # started under fault="hang": it never completes
        self._done_at = 0.0         # with a timing model: when the modelled run is over

    def set_arg(self, index: int, value) -> None:
        rmap = self.kernel.rmap
        if not 0 <= index < len(rmap.args):
            raise RuntimeError(f"Invalid kernel argument index {index}")
        a = rmap.args[index]
        if isinstance(value, _Bo):
            if not a.is_pointer:
                raise RuntimeError(f"Argument {index} ({a.name}) is a scalar, got a buffer")
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -(1 << 31) <= value < 1 << 31:       # pybind11 casts to a C int
                raise TypeError(f"set_arg(): incompatible function arguments ({value} is not a C int)")
            if a.is_pointer:
                raise RuntimeError(f"Argument {index} ({a.name}) is a global memory argument")
        else:
            raise TypeError(f"set_arg(): incompatible function arguments ({type(value).__name__})")
        self._args[index] = value
        self._machine.calls.append(f"set_arg({index})")

    def start(self) -> None:
        self._machine._own_cpu(self._start)

    def _start(self) -> None:
        km = self.kernel.device.kernel_model
        t0 = time.monotonic()
        self._machine.calls.append("start")
        if not km.read(R.CTRL) & R.CTRL_AP_IDLE:
            raise RuntimeError("compute unit is busy")
        for a in self.kernel.rmap.args:                 # what ERT does for ap_ctrl_hs
            v = self._args.get(a.index, 0)
            v = v.address() if isinstance(v, _Bo) else v & 0xFFFF_FFFF
            for i, off in enumerate(a.word_offsets):
                km.write(off, (v >> (32 * i)) & 0xFFFF_FFFF)
        km.write(R.CTRL, R.CTRL_AP_START)
        timing = self._machine.timing
        if timing is not None:
            words = {a.name: self._args.get(a.index, 0) for a in self.kernel.rmap.args if not a.is_pointer}
            log_n, batch = int(words.get("log_n", 0)) & 0xFF, int(words.get("batch", 1) or 1)
            self._done_at = t0 + timing.kernel_seconds(self.kernel.params, log_n, batch)
        self._state = ert_cmd_state.ERT_CMD_STATE_SUBMITTED
        self._hung = self._machine.hang

    def wait(self, timeout_ms: int = 0):
        return self._machine._own_cpu(self._wait, timeout_ms)

    def _wait(self, timeout_ms: int):
        self._machine.calls.append(f"wait({timeout_ms})")
        if self._state == ert_cmd_state.ERT_CMD_STATE_COMPLETED:
            return self._state
        km = self.kernel.device.kernel_model
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            early = self._done_at - time.monotonic()
            if early > 0 and not self._hung and (timeout_ms == 0 or self._done_at <= deadline):
                time.sleep(early)                   # the modelled run is not over yet
            if self.state() == ert_cmd_state.ERT_CMD_STATE_COMPLETED:
                return self._state
            if timeout_ms == 0:
                raise RuntimeError("fake_pyxrt: wait() without a timeout on a kernel that never finishes")
            # Like XRT, a wait times out only when its time is up; a simulated kernel that spent its
            # cycle budget (``hung``) cannot change any more, so waiting longer would only waste time.
            left = deadline - time.monotonic()
            if left <= 0 or (not self._hung and getattr(km, "hung", False)):
                return ert_cmd_state.ERT_CMD_STATE_TIMEOUT
            time.sleep(min(left, 0.02))

    def state(self):
        """The current state: a submitted run whose kernel has since raised ap_done is COMPLETED (a hung
        one never is, whatever its kernel does)."""
        if (self._state == ert_cmd_state.ERT_CMD_STATE_SUBMITTED and not self._hung
                and time.monotonic() >= self._done_at):
            if self.kernel.device.kernel_model.read(R.CTRL) & R.CTRL_AP_DONE:
                self._state = ert_cmd_state.ERT_CMD_STATE_COMPLETED
        return self._state
