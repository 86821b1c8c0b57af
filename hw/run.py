"""A run in gateware: the fields of :class:`hw.model.run.Run` as one Amaranth struct.

The control slave has checked the start (``Run.check``), so every field has its narrow width: the sizes
fit ``params.max_log_n``, the batch ``2^(max_log_n - min_log_n)``, and the flags are two bits. The kernel
latches one run at the start and crosses it into the engine's clock as one value (hw/kernel.py).
"""

from amaranth.lib import data

from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import max_batch

__all__ = ["run_layout", "lane_run_layout", "connect_run"]


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


def lane_run_layout(log_core: int) -> data.StructLayout:
    """The fields of a run a lane of 2^log_core points reads (hw/lane.py): ``log_n`` (its output scale's
    N = 2^n, 0..2k), ``inverse`` and ``coset``, named as in :func:`run_layout`."""
    return data.StructLayout({"log_n": range(2 * log_core + 1), "inverse": 1, "coset": 1})


def connect_run(target: data.View, run: data.View) -> list:
    """Assignments of every field of ``target`` (a view of :func:`run_layout` or of a sub-layout such as
    :func:`lane_run_layout`) from the field of the same name of ``run``: a field added to both layouts
    reaches the block without being named here."""
    return [target[name].eq(run[name]) for name, _ in target.shape()]
