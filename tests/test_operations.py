"""The kernel's operations seam: the operation table (hw.model.ops), the engine registry (hw/engines.py),
the NTT engine's model, and the HBM port mux every engine and the record writer share (hw/operation.py)."""

import random

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nantucket.hw.engines import ENGINES, engines_for
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.ops import OPERATIONS, OP_NTT, ntt_run, operation, operation_named
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import Run
from nantucket.hw.operation import share_port

SMALL = BuildParams(lanes=4, log_core=3, channels=2)


def test_every_operation_has_an_engine_and_the_ntt_comes_first():
    assert OPERATIONS[0].code == OP_NTT == 0 and operation(0).name == "ntt" and operation(7) is None
    assert {o.name for o in OPERATIONS} == set(ENGINES)
    engines = engines_for(SMALL)
    assert [op.name for op, _ in engines] == ["ntt"]
    ntt = engines[0][1]
    assert ntt.operation is operation_named("ntt") and len(ntt.words) >= len(ntt.operation.status_words)
    with pytest.raises(ValueError, match="no operation 'merkle'"):
        operation_named("merkle")


def test_a_build_that_commits_names_what_no_engine_serves():
    """BuildParams.commit is accepted by the model (tag, identity), but no engine of this version serves it:
    the kernel says so instead of building a kernel without it (a scheme outside the engine's, by name)."""
    params = BuildParams(lanes=8, log_core=3, channels=2, field="babybear", commit="plonky3-babybear-16")
    with pytest.raises(ValueError, match="plonky3-babybear-16.*no on-card engine"):
        engines_for(params)
    with pytest.raises(ValueError, match="plonky3-goldilocks.*no on-card engine"):
        engines_for(BuildParams(lanes=4, log_core=3, channels=2, commit="plonky3-goldilocks"))


def test_the_ntt_operations_model_is_the_transform_of_each_element():
    """ntt_run against the O(N^2) definition: inverse, coset, zero-extended input, row steps."""
    field = SMALL.prime_field
    rng = np.random.default_rng(3)
    for run in (Run.ntt(5, batch=2), Run.ntt(4, inverse=True, coset=7), Run.ntt(5, input_log_m=3, coset=3),
                Run.ntt(4, coset=5, batch=3, row_step=11)):
        x = rng.integers(0, field.p, size=(run.batch, 1 << run.log_n), dtype=np.uint64)
        got = ntt_run(SMALL, run, x)
        padded = x.copy()
        if run.input_log_m:
            padded[:, 1 << run.input_log_m:] = 0
        shifts = run.element_shifts(field.p) or [None] * run.batch
        want = [ntt_model.transform_naive(padded[r], inverse=run.inverse, coset=g, field=field)[0]
                for r, g in enumerate(shifts)]
        assert np.array_equal(got, np.array(want, dtype=np.uint64)), run


class _Port(wiring.Signature):
    """A small stand-in for an AXI4 master: outputs (valid, data) and inputs (ready, resp)."""

    def __init__(self, with_data=True):
        members = {"xvalid": Out(1), "xready": In(1), "resp": In(2)}
        if with_data:
            members["data"] = Out(8)
        super().__init__(members)


def test_share_port_gives_the_selected_source_the_port_and_only_it_the_handshakes():
    """Outputs from the selected lender (else the default), inputs to every source, valid/ready only to the
    selected one; a lender without a member leaves it to the default (the record writer has no read
    half)."""
    m = Module()
    port = _Port().create()
    default, lend_a, lend_b = _Port().flip().create(), _Port().flip().create(), _Port(False).flip().create()
    sel_a, sel_b = Signal(), Signal()
    share_port(m, port, default, [(lend_a, sel_a), (lend_b, sel_b)])
    sim = Simulator(m)
    rng = random.Random(1)

    async def bench(ctx):
        for _ in range(200):
            which = rng.choice([None, "a", "b"])
            ctx.set(sel_a, which == "a")
            ctx.set(sel_b, which == "b")
            for src in (default, lend_a, lend_b):
                ctx.set(src.xvalid, rng.getrandbits(1))
            for src in (default, lend_a):
                ctx.set(src.data, rng.getrandbits(8))
            ready, resp = rng.getrandbits(1), rng.getrandbits(2)
            ctx.set(port.xready, ready)
            ctx.set(port.resp, resp)
            owner = {None: default, "a": lend_a, "b": lend_b}[which]
            assert ctx.get(port.xvalid) == ctx.get(owner.xvalid)
            assert ctx.get(port.data) == ctx.get((lend_a if which == "a" else default).data)
            for name, src in (("default", default), ("a", lend_a), ("b", lend_b)):
                assert ctx.get(src.xready) == (ready if src is owner else 0), name
                assert ctx.get(src.resp) == resp, name
    sim.add_testbench(bench)
    sim.run()


def test_the_ntt_engine_has_a_catalog_entry():
    """`make synth COMPONENT=ntt_operation` and the timing estimate see the NTT's engine like any block."""
    from nantucket.hw.flow import catalog
    from nantucket.hw.ntt_operation import NttOperation
    assert isinstance(catalog.build("ntt_operation", lanes=4, log_core=3, channels=2), NttOperation)


@pytest.mark.full           # 45 s of Verilog and lint; the kernel's own lint (tests/test_kernel_rtl.py) covers it in make test
def test_the_ntt_engine_lints_on_its_own():
    from nantucket.hw.flow import catalog
    from nantucket.hw.flow.runner import lint_verilog
    text = catalog.emit_verilog("ntt_operation", lanes=4, log_core=3, channels=2)
    assert "module ntt_operation" in text
    lint_verilog(text, "ntt_operation", waive=("CASEINCOMPLETE",))
