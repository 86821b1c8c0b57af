"""nantucket: NTTs over every field of :data:`FIELD_NAMES` (goldilocks, goldilocks-plonky2, babybear,
koalabear) on the nantucket accelerator (one kernel build per field) or on the golden model.

    import numpy as np, nantucket
    x = np.arange(8, dtype=np.uint64)
    y = nantucket.ntt(x)                                  # the golden model on the CPU
    z = nantucket.ntt(x.astype(np.uint32), field="babybear")     # uint32 in, uint32 out
    with nantucket.open("sim") as dev:                    # or "model", "xrt"
        a = dev.asarray(x); dev.ntt(a, coset=7); y = a.numpy()

Reference: docs/api.md. The code lives in host/api/; this package is the name users import.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError, version as _version

from nantucket.hw.model.field import FIELD_NAMES, FIELDS, GENERATOR, P
from nantucket.host.backends import DeviceError

from nantucket.host.api import (ORDERS, BackendDevice, Device, DeviceArray, ModelDevice, intt, lde,  # noqa: F401
                                ntt, open)
from nantucket.host.api import SCHEMES, Commitment, CommitmentError, commit, verify  # noqa: F401

try:
    __version__ = _version("nantucket")
except _PackageNotFoundError:         # running from a checkout that was never installed
    __version__ = "unknown"

#: Each field's generator of its multiplicative group, by name (a coset shift; ``FIELDS[name].generator``):
#: GENERATOR and P are Goldilocks' (7 is no generator of BabyBear's group, whose is 31)
GENERATORS = {name: f.generator for name, f in FIELDS.items()}

#: The named device errors of a kernel run (all DeviceErrors), from nantucket.host.xrt when first used.
_KERNEL_ERRORS = ("KernelFailed", "KernelRefused", "KernelAxiError", "KernelTimeout")

__all__ = ["ntt", "intt", "lde", "open", "Device", "ModelDevice", "BackendDevice", "DeviceArray", "DeviceError",
           "ORDERS", "P", "GENERATOR", "GENERATORS", "FIELDS", "FIELD_NAMES", "__version__", *_KERNEL_ERRORS,
           "commit", "verify", "Commitment", "CommitmentError", "SCHEMES"]


def __getattr__(name):
    # the kernel's errors live with the XRT driver, which `import nantucket` does not load
    if name in _KERNEL_ERRORS:
        from nantucket.host.xrt import errors
        return getattr(errors, name)
    raise AttributeError(f"module 'nantucket' has no attribute {name!r}")
