"""The engine registry: which gateware carries each operation of :mod:`hw.model.ops`.

One row per operation: its name (hw.model.ops) -> a factory ``(params, dma_options) -> engine`` of
:func:`hw.operation.engine_signature`. The kernel (hw/kernel.py) builds one engine for every operation a
build carries (``Operation.carried_by``), in the table's order; the first is the NTT, which every build
carries, and owns the HBM ports when no other engine's run is on (hw.operation.share_port). A new
on-card operation is its row in hw.model.ops, its engine and one row here (docs/architecture.md,
"Adding an on-card operation").
"""

from .model.ops import OPERATIONS, OP_NTT
from .model.params import BuildParams
from .ntt_operation import NttOperation

__all__ = ["ENGINES", "engines_for"]

def _commit_engine(params: BuildParams, dma_options):
    # the model side of the commitment (hw.model.ops, hw.model.commit_layout) is in; its gateware is not yet
    raise ValueError(f"params: commit={params.commit!r}: no on-card engine of this version serves commitment "
                     "schemes (the commitment's gateware is not built yet; the model backend commits on the "
                     "host: nantucket.commit)")


ENGINES = {
    "ntt": lambda params, dma_options: NttOperation(params, dma_options=dma_options),
    "commit": _commit_engine,
}


def engines_for(params: BuildParams, dma_options: dict | None = None) -> list:
    """[(Operation, engine)] for every operation a build of ``params`` carries, the NTT first. A build
    whose ``commit`` schemes no registered engine serves is a ValueError naming them."""
    from .model.ops import COMMIT_ENGINE_SCHEMES
    unserved = [s for s in params.commit if s not in COMMIT_ENGINE_SCHEMES]
    if unserved:
        raise ValueError(f"params: commit={tuple(unserved)!r}: no on-card engine serves these commitment "
                         "schemes (the model backend commits on the host: nantucket.commit)")
    out = []
    for op in OPERATIONS:
        if op.carried_by(params):
            if op.name not in ENGINES:
                raise ValueError(f"params: the build carries {op.name}, which no engine in hw/engines.py builds")
            out.append((op, ENGINES[op.name](params, dma_options)))
    assert out and out[0][0].code == OP_NTT, "the NTT engine comes first"
    return out
