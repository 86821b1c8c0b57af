"""The library API behind the public ``nantucket`` package: one-call transforms (:mod:`.calls`),
devices with device-resident arrays (:mod:`.device`; on a card the points stay in the kernel's buffers,
:mod:`.resident`), argument checks (:mod:`.checks`) and the model device's orders/coset/LDE steps around a
natural-order NTT (:mod:`.transforms`). Reference: docs/api.md.
"""

from .checks import ORDERS
from .commit import SCHEMES, Commitment, CommitmentError, commit, verify
from .commit_device import CommitCalls
from .calls import intt, lde, ntt
from .device import BackendDevice, Device, DeviceArray, ModelDevice
from .futures import DeviceFuture
from .opening import open

__all__ = ["ntt", "intt", "lde", "open", "Device", "ModelDevice", "BackendDevice", "DeviceArray", "DeviceFuture", "ORDERS",
           "commit", "verify", "Commitment", "CommitmentError", "SCHEMES", "CommitCalls"]
