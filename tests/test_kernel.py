"""The whole kernel on the simulated card: the host's XRT driver against the RTL in Verilator.

One simulator per build configuration (module-scoped), several runs each: every kind of input, back to
back without reset, a rejected size, the register map and the done interrupt, a reset mid-run.
"""

import numpy as np
import pytest

from hw.model import ntt, regmap as R
from hw.model.params import BuildParams
from host.workloads import KINDS, make_points
from sim.backend import SimBackend

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

CONFIGS = [BuildParams(lanes=4, log_core=4, channels=4), BuildParams(lanes=8, log_core=6, channels=8)]


@pytest.fixture(scope="module", params=CONFIGS, ids=[p.tag() for p in CONFIGS])
def card(request):
    backend = SimBackend(request.param, progress=lambda line: None)
    backend.open(request.param)
    yield backend
    backend.close()


def test_every_kind(card):
    p = card.params_for(0)
    for seed, kind in enumerate(KINDS):
        x = make_points(p.log_n, kind, seed)
        y = card.run(x)
        assert np.array_equal(y, ntt.ntt(x)), f"{kind}: the kernel's result differs from the golden model"
    cycles = card.kernel.last_ntt_cycles
    assert 2 * p.cycles_per_pass < cycles < 8 * 2 * p.cycles_per_pass + 20000


def test_smaller_size_and_inverse(card):
    p = card.params_for(0)
    x = make_points(p.log_n - 2, "random", 11)       # zero-padded by the host driver
    assert np.array_equal(card.run(x), ntt.ntt(x))
    y = make_points(p.log_n, "random", 12)
    assert np.array_equal(card.run(y, inverse=True), ntt.intt(y))


def test_registers_and_interrupt(card):
    p = card.params_for(0)
    k = card.kernel
    rmap = R.RegisterMap(p)
    for name, value in rmap.id_values.items():
        assert k.read(rmap.id_offset(name)) == value, name
    assert k.read(R.CTRL) & R.CTRL_AP_IDLE
    # enable the done interrupt and run once through the driver
    k.write(R.GIER, 1)
    k.write(R.IP_IER, R.IER_DONE)
    x = make_points(p.log_n, "random", 21)
    assert np.array_equal(card.run(x), ntt.ntt(x))
    assert k.read(R.IP_ISR) & R.ISR_DONE
    assert k.interrupt
    k.write(R.IP_ISR, R.ISR_DONE)                     # toggle-on-write clears it
    assert not k.read(R.IP_ISR) & R.ISR_DONE and not k.interrupt
    k.write(R.GIER, 0)
    k.write(R.IP_IER, 0)


def test_bad_size_is_rejected_without_touching_memory(card):
    p = card.params_for(0)
    k = card.kernel
    before = {a: b.copy() for a, b in k.hbm.buffers().items()}
    k.write(R.ARGS_BASE, p.log_n - 2)                 # not the native size
    k.write(R.CTRL, R.CTRL_AP_START)
    ctrl = k.read(R.CTRL)
    assert ctrl & R.CTRL_AP_DONE and ctrl & R.CTRL_AP_IDLE
    assert k.read(R.RegisterMap(p).id_offset("STATUS")) & R.STATUS_BAD_SIZE
    for a, b in k.hbm.buffers().items():
        assert np.array_equal(b, before[a]), f"buffer at 0x{a:x} was written by a rejected run"
    # the next good run clears the error
    x = make_points(p.log_n, "random", 31)
    assert np.array_equal(card.run(x), ntt.ntt(x))
    assert not k.read(R.RegisterMap(p).id_offset("STATUS")) & R.STATUS_BAD_SIZE


def test_start_while_busy_is_ignored_and_reset_mid_run(card):
    p = card.params_for(0)
    k = card.kernel
    x = make_points(p.log_n, "random", 41)
    # a run through the driver leaves valid pointers in the argument registers
    assert np.array_equal(card.run(x), ntt.ntt(x))
    k.write(R.ARGS_BASE, p.log_n)
    k.write(R.CTRL, R.CTRL_AP_START)
    k.step(64)                                        # a few cycles in: the kernel is busy
    assert not k.read_raw(R.CTRL) & R.CTRL_AP_IDLE
    k.write_raw(R.CTRL, R.CTRL_AP_START)              # ignored while busy
    k.reset()                                         # kernel and memory models together
    assert k.read(R.CTRL) & R.CTRL_AP_IDLE
    y = make_points(p.log_n, "random", 42)
    assert np.array_equal(card.run(y), ntt.ntt(y))
