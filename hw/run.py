"""A run in gateware: the fields of :class:`hw.model.run.Run` as one Amaranth struct.

The control slave has checked the start (``Run.check``), so every field has its narrow width: the sizes
fit ``params.max_log_n``, the batch ``2^(max_log_n - min_log_n)``, and the flags are two bits. The kernel
latches one run at the start and crosses it into the engine's clock as one value (hw/kernel.py).
"""

from amaranth.lib import data

from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import max_batch

__all__ = ["run_layout"]


def run_layout(params: BuildParams) -> data.StructLayout:
    """The struct of an accepted run for a build of ``params``."""
    size = range(params.max_log_n + 1)
    return data.StructLayout({
        "log_n": size,
        "inverse": 1,
        "coset": 1,
        "batch": range(max_batch(params) + 1),
        "coset_shift": 64,
        "input_log_m": size,
        "chain_log_n": size,
    })
