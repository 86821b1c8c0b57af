"""What every on-card operation's engine looks like to the kernel, and the mux that shares the HBM ports.

An *engine* carries one operation of :mod:`hw.model.ops` (the NTT's: hw/ntt_operation.py). The kernel
(hw/kernel.py) holds one per operation the build carries (hw/engines.py), hands a start to the engine
that owns the run's ``op`` and gives it every ``m_axi`` port for the run: engines never run at once.
Every engine is a component of :func:`engine_signature` in the ``dma`` domain (ap_clk, the HBM ports' and
the control's clock; an engine may run its own arithmetic in the ``ntt`` domain, ap_clk_2, crossing as
the NTT does):

- ``start`` (In 1): one cycle, the start of a run of this engine (the control has accepted it);
- ``run`` (In ``hw.run.run_layout``): the run, latched by the kernel at the start, held until ``done``;
- ``args`` (In ``hw.run.run_layout``): the control's decoded argument registers (frozen from a start to
  its done, written between runs): set-up that may begin as soon as the host writes an argument;
- ``base`` (In ``ArrayLayout(64, C)``): the ``hbm_NN`` base addresses;
- ``m_axi`` (Out, C AXI4 masters): its HBM access, through the kernel's :func:`share_port`;
- ``done`` (Out 1): one cycle: every write response of the run is in and ``words`` / ``result`` hold;
- ``fault`` (Out ``hw.axi.fault_layout(C)``): an AXI error response this cycle;
- ``words`` (Out ``ArrayLayout(32, ENGINE_WORDS)``): its status record words
  (``Operation.status_words``, in order; the rest 0), read when ``done``;
- ``result`` (Out: ``address`` 64, ``bytes`` 32): where it wrote results that do not fit the record
  (RESULT_* of hw.model.record), 0 for none.
"""

from amaranth.hdl import Mux
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .axi import fault_layout
from .model.ops import ENGINE_WORDS
from .model.params import BuildParams
from .run import run_layout

__all__ = ["RESULT_LAYOUT", "engine_signature", "share_port"]

#: An engine's ``result`` port.
RESULT_LAYOUT = data.StructLayout({"address": 64, "bytes": 32})


def engine_signature(params: BuildParams, axi: wiring.Signature) -> wiring.Signature:
    """The ports of every engine of a build of ``params`` whose masters have signature ``axi``."""
    return wiring.Signature({
        "start": In(1), "run": In(run_layout(params)), "args": In(run_layout(params)),
        "base": In(data.ArrayLayout(64, params.channels)),
        "m_axi": Out(axi).array(params.channels),
        "done": Out(1), "fault": Out(fault_layout(params.channels)),
        "words": Out(data.ArrayLayout(32, ENGINE_WORDS)), "result": Out(RESULT_LAYOUT),
    })


def share_port(m, port, default, lenders) -> None:
    """Drive ``port`` (an AXI4 master interface of the kernel) from the interface ``default`` and, while
    one of ``lenders``' selects is high, from that lender: ``lenders`` is a list of (interface, select),
    each interface with all or some of ``port``'s members (the record writer has only the write half).
    The selects must be one-hot or zero. Outputs come from the selected source; inputs reach every source,
    a ``valid`` or ``ready`` only the selected one's, so no source sees a handshake meant for another. With
    no lenders this is wires: a one-engine build's port is its engine's, as before the mux."""
    for name, member in port.signature.members.items():
        outer = getattr(port, name)
        mine = [(getattr(src, name), sel) for src, sel in lenders if name in src.signature.members]
        inner = getattr(default, name)
        if member.flow == Out:
            value = inner
            for sig, sel in mine:
                value = Mux(sel, sig, value)
            m.d.comb += outer.eq(value)
            continue
        gated = name.endswith(("valid", "ready"))
        lent = 0
        for sig, sel in mine:
            m.d.comb += sig.eq(outer & sel if gated else outer)
            lent = lent | sel
        m.d.comb += inner.eq(outer & ~lent if gated and mine else outer)
