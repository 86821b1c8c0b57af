"""A run in gateware: the fields of :class:`hw.model.run.Run` as one Amaranth struct.

The control slave has checked the start (``Run.check``) and decoded it once (the flags into ``inverse`` and
``coset``, an ``input_log_m`` equal to ``log_n`` into 0: an input of all 2^log_n points is the plain run),
each argument as its row of :data:`hw.model.run.RUN_ARGS` says (``struct``, ``decode``), so every field
has its narrow width: the sizes fit ``params.max_log_n``, the batch
``2^(max_log_n - min_log_n)``. The control outputs it as one port, the kernel latches it whole at the start,
hands it to the DMA in one statement and crosses it into the engine's clock as one value (hw/kernel.py).

:func:`run_bits` and :func:`run_fields` are the struct's bits and back, for benches that drive or read a
``run`` port.
"""

from amaranth.lib import data

from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import RUN_ARGS, Run

__all__ = ["run_layout", "lane_run_layout", "connect_run", "run_bits", "run_fields"]


def run_layout(params: BuildParams) -> data.StructLayout:
    """The struct of an accepted run for a build of ``params``: every row of
    :data:`hw.model.run.RUN_ARGS` gives its fields (``RunArg.struct_fields``), in table order."""
    return data.StructLayout({name: shape for a in RUN_ARGS for name, shape in a.struct_fields(params).items()})


def lane_run_layout(log_core: int) -> data.StructLayout:
    """The fields of a run a lane of 2^log_core points reads (hw/lane.py): ``log_n`` (its output scale's
    N = 2^n, 0..2k), ``inverse`` and ``coset``, named as in :func:`run_layout`."""
    return data.StructLayout({"log_n": range(2 * log_core + 1), "inverse": 1, "coset": 1})


def connect_run(target: data.View, run: data.View) -> list:
    """Assignments of every field of ``target`` (a view of :func:`run_layout` or of a sub-layout such as
    :func:`lane_run_layout`) from the field of the same name of ``run``: a field added to both layouts
    reaches the block without being named here."""
    return [target[name].eq(run[name]) for name, _ in target.shape()]


def run_bits(params: BuildParams, run: Run) -> int:
    """The bits of :func:`run_layout` for ``run``, decoded as the control slave decodes it. A run the
    build refuses has no struct: ValueError."""
    if not isinstance(params, BuildParams):
        raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
    if not isinstance(run, Run):
        raise TypeError(f"run: expected Run, got {type(run).__name__}")
    refused = run.check(params)
    if refused:
        raise ValueError(f"run: refused by the build (STATUS bits {refused:#x}): {run}")
    layout = run_layout(params)
    names = {name for name, _ in layout}
    fields = {name: value for a in RUN_ARGS for name, value in a.decoded(run).items() if name in names}
    return layout.const(fields).as_value().value


def run_fields(params: BuildParams, bits: int) -> dict[str, int]:
    """Each field of :func:`run_layout` in ``bits`` (an int of the struct's width), by name."""
    if not isinstance(params, BuildParams):
        raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
    layout = run_layout(params)
    if not isinstance(bits, int) or not 0 <= bits < 1 << layout.size:
        raise ValueError(f"bits: expected an int in 0..2^{layout.size}-1, got {bits!r}")
    return {name: (bits >> field.offset) & ((1 << field.width) - 1) for name, field in layout}
