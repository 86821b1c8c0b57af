"""The whole kernel on the simulated card: the host's XRT driver against the RTL in Verilator.

One simulator per build configuration (module-scoped), several runs each: every kind of input, back to
back without reset, a rejected size, the register map and the done interrupt, a reset mid-run.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from nantucket.hw.model import ntt, regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_BYTES, StatusRecord
from nantucket.host.backends import DeviceError
from nantucket.host.workloads import KINDS, make_points
from nantucket.host.sim_backend import SimBackend
from nantucket.hw.flow.runner import REPO_ROOT

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

# The 8-lane build is test_sizes_rtl.py's too (one Verilator build for both files). It is in make test-full:
# its units of two beats are make test's in tests/test_dma.py (16 lanes) and its 8 lanes and odd k in
# tests/test_kernel_fields31.py (KoalaBear's L8_k5_C8); make test's time is near its limit.
CONFIGS = [BuildParams(lanes=4, log_core=4, channels=4), BuildParams(lanes=8, log_core=5, channels=8)]
CARDS = [pytest.param(p, id=p.tag(), marks=[pytest.mark.full] if p.lanes == 8 else []) for p in CONFIGS]


@pytest.fixture(scope="module", params=CARDS)
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
    x = make_points(p.log_n - 2, "random", 11)       # native: the kernel runs log_n = 2k - 2
    assert np.array_equal(card.run(x), ntt.ntt(x))
    assert card.kernel_log_n == p.log_n - 2
    y = make_points(p.log_n, "random", 12)
    assert np.array_equal(card.run(y, inverse=True), ntt.intt(y))
    z = make_points(p.min_log_n - 1, "linear", 13)   # below the native range: zero-padded by the host
    assert np.array_equal(card.run(z), ntt.ntt(z))
    assert card.kernel_log_n == p.min_log_n


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


def _point_buffers(k):
    """Every device buffer but the status record's (which a refused start writes, and nothing else)."""
    record = k.arg_words(R.RECORD_ARG)
    return {a: b for a, b in k.hbm.buffers().items() if a != record}


def _record(k) -> StatusRecord:
    return StatusRecord.from_bytes(k.hbm.view(k.arg_words(R.RECORD_ARG), RECORD_BYTES, bank=0))


def test_bad_size_is_rejected_without_touching_memory(card):
    p = card.params_for(0)
    k = card.kernel
    before = {a: b.copy() for a, b in _point_buffers(k).items()}
    for log_n in (p.max_log_n + 1, p.min_log_n - 1):  # outside the native range
        k.write(R.ARGS_BASE, log_n)
        k.write(R.CTRL, R.CTRL_AP_START)
        ctrl = k.read(R.CTRL)
        assert ctrl & R.CTRL_AP_DONE and ctrl & R.CTRL_AP_IDLE, log_n
        assert k.read(R.RegisterMap(p).id_offset("STATUS")) & R.STATUS_BAD_SIZE, log_n
        assert _record(k).status == k.read(R.RegisterMap(p).id_offset("STATUS"))    # what it wrote instead
        for a, b in _point_buffers(k).items():
            assert np.array_equal(b, before[a]), f"buffer at 0x{a:x} was written by a run of log_n = {log_n}"
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


_SIM_RUN = """
import sys, time
import numpy as np
from nantucket.hw.model import ntt
from nantucket.hw.model.params import BuildParams
from nantucket.host.sim_backend import SimBackend
# CONFIGS[0]'s build, which this file's other tests compile too (no build of its own)
b = SimBackend(BuildParams(lanes=4, log_core=4, channels=4), progress=lambda line: None)
x = np.arange(256, dtype=np.uint64)
assert np.array_equal(b.run(x), ntt.ntt(x))
print("ran", flush=True)
if sys.argv[1] == "hang":
    time.sleep(600)
b.close()
"""


def _live_parents() -> dict[int, int]:
    """pid -> parent pid of every process that is not a zombie."""
    parent = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if fields[0] != "Z":
            parent[int(entry)] = int(fields[1])
    return parent


def _descendants(root: int) -> set[int]:
    parent = _live_parents()
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        todo.extend(kids)
    return out


def test_killed_sim_run_leaves_no_processes_or_scratch_dirs():
    """kill -9 of a process with an open simulated card: the simulator dies with it, and the next start
    removes its nantucket-cosim-*/nantucket-sim-* directories."""
    tmp = tempfile.mkdtemp(prefix="nt-", dir="/tmp")      # short: the simulator's socket lives there
    env = dict(os.environ, TMPDIR=tmp)
    try:
        proc = subprocess.Popen([sys.executable, "-c", _SIM_RUN, "hang"], cwd=REPO_ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            for line in proc.stdout:                  # (the old runner let the simulator print here)
                if line.strip() == "ran":
                    break
            else:
                pytest.fail(f"the first run ended (exit {proc.wait()}) before transforming")
            tree = _descendants(proc.pid)
            assert {p.split("-")[1] for p in os.listdir(tmp)} == {"cosim", "sim"}
        finally:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + 5
        while tree & set(_live_parents()) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = tree & set(_live_parents())
        assert not left, f"processes of the killed run still alive: {left}"
        subprocess.run([sys.executable, "-c", _SIM_RUN, "close"], cwd=REPO_ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        assert os.listdir(tmp) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_timeout_says_how_long_and_a_retry_on_the_same_backend_is_right():
    """A run that spends the simulated kernel's cycle budget: the error says the time it took and the
    budget; the same backend object then transforms correctly (a fresh simulated card)."""
    p = CONFIGS[0]
    card = SimBackend(p, progress=lambda line: None)
    try:
        card.open(p)
        card.kernel.cycle_budget = 200                    # far less than one transform takes
        with pytest.raises(DeviceError, match=r"did not finish.* budget of 200 NTT cycles, simulated in "
                                              r"\d+\.\d s"):
            card.run(make_points(p.log_n, "random", 51))
        y = make_points(p.log_n, "random", 52)
        assert np.array_equal(card.run(y), ntt.ntt(y))
    finally:
        card.close()


def test_sizes_and_builds_the_simulated_card_cannot_run_are_refused_not_raised():
    """supports() is how the CLI refuses bad input (exit 2): it must answer, never raise."""
    assert SimBackend().supports(1 << 25) is None             # a four-step over k = 12 calls (host/large.py)
    assert "roots of unity up to 2^27" in SimBackend(field="babybear").supports(1 << 28)
    assert "at least 4 lanes" in SimBackend(BuildParams(lanes=2, log_core=3, channels=4)).supports(64)
    assert SimBackend().supports(1 << 24) is None


def test_the_cycle_budget_follows_the_size_of_each_run():
    """8 x the ideal cycles of the run's size + 2^16, so a small run that hangs is caught in a small
    budget; a set cycle_budget holds for every run; a rejected size gets 2^16."""
    from types import SimpleNamespace
    from nantucket.sim.cosim import SimulatedKernel
    p = BuildParams(lanes=16, log_core=12, channels=32)
    kernel = SimpleNamespace(params=p, cycle_budget=None)
    for log_n in (p.min_log_n, 18, p.max_log_n):
        ideal = 2 * (1 << log_n) // 32                    # two passes, 32 points per NTT cycle
        assert SimulatedKernel.budget_for(kernel, log_n) == 8 * ideal + (1 << 16)
    assert SimulatedKernel.budget_for(kernel, p.max_log_n + 1) == 1 << 16
    kernel.cycle_budget = 200
    assert SimulatedKernel.budget_for(kernel, 18) == 200


def _transform(card, x, **kw):
    got = np.asarray(card.run(x, **kw), dtype=np.uint64)
    want = ntt.transform(x, **kw)
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert bad.size == 0, f"{kw} on {np.shape(x)}: {bad.size} points differ, first at {bad[0]}"
    return card.kernel.last_ntt_cycles


def test_the_kernel_computes_inverse_and_coset(card):
    """Inverse (1/N inside), forward and inverse coset computed by the kernel (the driver sets the flags
    and the shift; the host does no arithmetic on the points), at the largest, an odd and the smallest
    native size, shifts at the field's edges, every input kind. (Cycle counts: exact in the engine benches,
    where no HBM refresh moves them; measured by make bench-transforms.)"""
    p = card.params_for(0)
    prime = (1 << 64) - (1 << 32) + 1
    shifts = [7, prime - 1, 1 << 32, (1 << 63) + 5, 1]
    sizes = [p.max_log_n, p.max_log_n - 1, p.min_log_n]
    for i, n in enumerate(sizes):
        x = make_points(n, KINDS[i % len(KINDS)], 50 + i)
        for kw in ({}, {"inverse": True}):
            cycles = _transform(card, x, **kw)
            assert p.ideal_cycles(n) <= cycles < 4 * p.ideal_cycles(n) + 5000, (n, kw, cycles)
        for j, g in enumerate(shifts[i:i + 2]):
            y = make_points(n, KINDS[(i + j + 1) % len(KINDS)], 60 + 2 * i + j)
            for inv in (False, True):
                cycles = _transform(card, y, inverse=inv, coset=g)
                assert p.ideal_cycles(n) <= cycles < 4 * p.ideal_cycles(n) + 5000, (n, g, inv, cycles)


def test_refused_arguments_touch_no_memory(card):
    """A start with batch 0, a batch beyond the buffers, a coset shift of 0 or >= p, or an unknown flag
    finishes at once with exactly the STATUS bits RegisterMap.check_start names; no HBM byte changes."""
    p = card.params_for(0)
    k = card.kernel
    rmap = R.RegisterMap(p)
    status = rmap.id_offset("STATUS")
    prime = (1 << 64) - (1 << 32) + 1
    before = {a: b.copy() for a, b in _point_buffers(k).items()}
    cases = [(p.max_log_n, 0, 0, 0), (p.max_log_n, 0, 2, 0), (p.min_log_n, 0, rmap.max_batch(p.min_log_n) + 1, 0),
             (p.max_log_n, R.FLAG_COSET, 1, 0), (p.max_log_n, R.FLAG_COSET | R.FLAG_INVERSE, 1, prime),
             (p.max_log_n, 1 << 5, 1, 0), (p.max_log_n + 1, R.FLAG_COSET | 1 << 9, 0, (1 << 64) - 1)]
    for log_n, flags, batch, shift in cases:
        want = rmap.check_start(log_n, flags, batch, shift)
        assert want, (log_n, flags, batch, shift)
        k.write(rmap.arg("log_n").offset, log_n)
        k.write(rmap.arg("flags").offset, flags)
        k.write(rmap.arg("batch").offset, batch)
        for name, value in rmap.split_shift(shift).items():
            k.write(rmap.arg(name).offset, value)
        k.write(R.CTRL, R.CTRL_AP_START)
        ctrl = k.read(R.CTRL)
        assert ctrl & R.CTRL_AP_DONE and ctrl & R.CTRL_AP_IDLE, (log_n, flags, batch, shift)
        assert k.read(status) == want, (log_n, flags, batch, shift)
        assert _record(k).status == k.read(R.RegisterMap(p).id_offset("STATUS"))    # what it wrote instead
        for a, b in _point_buffers(k).items():
            assert np.array_equal(b, before[a]), f"buffer at 0x{a:x} written by a refused start {flags, batch, shift}"
    x = make_points(p.log_n, "random", 71)            # the driver writes every argument again
    assert np.array_equal(card.run(x), ntt.ntt(x))
    assert k.read(status) == 0


def test_batches_in_one_kernel_call(card):
    """B transforms of N points in one kernel call, the rows of every input kind mixed, forward, inverse and
    coset; a batch larger than the kernel takes (B x N > 2^2k) is split by the driver into the fewest calls;
    a batch of B takes less than B single runs (the pipeline stays full between its elements)."""
    p = card.params_for(0)
    n = p.min_log_n
    top = R.RegisterMap(p).max_batch(n)
    for b, kw in ((3, {}), (top, {"inverse": True}), (2, {"coset": 7}), (top + 2, {"inverse": True, "coset": 11})):
        x = np.stack([make_points(n, KINDS[e % len(KINDS)], 80 + e) for e in range(b)])
        card._device.kernel_runs.clear()
        _transform(card, x, **kw)
        calls = card._device.kernel_runs
        assert [c[1] for c in calls] == ([top, b - top] if b > top else [b]), (b, calls)
    single = _transform(card, make_points(n, "random", 90))
    x = np.stack([make_points(n, "random", 91 + e) for e in range(4)])
    assert _transform(card, x) < 4 * single


def test_a_row_step_costs_a_chain_job_where_a_word_is_new(card):
    """A coset call with a row step (element r's shift g s^r; each element checked against the golden
    model) against the same call on a shift the coset block has kept (hw/coset/): a new step s, or a new
    shift as every next call of a four-step has (g s^r0, r0 its first row), costs the chain job for it and
    at most the step's two table sets and the element stalls the block publishes more; the same s and
    shift again cost no chain job."""
    from nantucket.hw.coset import CosetFactors
    p = card.params_for(0)
    prime, g, s = (1 << 64) - (1 << 32) + 1, 7, 12345
    factors = CosetFactors(p, {f: 0 for f in range(2, p.log_core + 1)})
    # HBM refresh off for these calls: its windows run on the model's own clock, whatever the call, and move
    # a call by up to a window a pass (144 NTT cycles at 450 / 450 MHz), so four of them, two calls of two
    # passes, would cover the chain job itself (1,039 cycles at L8_k5) and the bounds below could not tell
    # a chain job from none. Without refresh or stalls a call's cycles repeat, but for the DMA's clock
    # crossing (slack), and the chain job starts when the new shift is written, so the register writes
    # after it hide part of it (``hidden``: about 40 cycles here) before the call's cycles are counted.
    card.kernel.traffic(refresh=False, stalls=False)
    slack, hidden = 8, 64
    tables = factors.new_word_cycles(p.log_core) - factors.chain_cycles     # the shift's and the step's sets
    try:
        for log_n, batch in ((p.max_log_n, 1), (p.max_log_n - 2, 4)):
            x = np.stack([make_points(log_n, KINDS[e % len(KINDS)], 120 + e) for e in range(batch)])
            stalls = batch * factors.step_stall_cycles(p.log_core, log_n)
            _transform(card, x, coset=g)
            kept = _transform(card, x, coset=g)                  # a plain call on a shift the block has kept
            step = s + log_n
            for shift, new in ((g, True), (g, False), (g * pow(step, 4, prime) % prime, True)):
                got = np.asarray(card.run(x, coset=shift, row_step=step), dtype=np.uint64)
                for r in range(batch):
                    want = ntt.transform(x[r], coset=shift * pow(step, r, prime) % prime)
                    assert np.array_equal(got[r], want), (log_n, shift, r)
                extra = card.kernel.last_ntt_cycles - kept
                least = factors.chain_cycles if new else 0
                assert least - hidden - slack <= extra <= least + tables + stalls + slack, (log_n, batch, shift, new, kept, extra)
                assert (extra > tables + stalls + slack) == new     # the bounds tell a chain job from none
    finally:
        card.kernel.traffic(refresh=True, stalls=False)     # the fixture's card, as opened


def _channels(k, p):
    """The hbm_NN buffers as uint64 arrays (the driver's, at the pointer arguments' addresses)."""
    return [k.hbm.view(k.arg_words(R.pointer_arg(ch)), HbmLayout(p).channel_bytes, bank=ch).view(np.uint64)
            for ch in range(p.channels)]


def test_chained_runs_and_zero_extended_input_stay_on_the_card(card):
    """A low-degree extension without a host round trip, register by register on the RTL: an inverse of
    2^m points written (chain_log_n = t) as the zero-extended input of a 2^t-point coset run, which reads it
    with input_log_m = m; the words the second run must take as zeros hold garbage. A transform whose output
    is chained into its own size's input placement is transformed again straight from there. A batch of
    two chains the same way. Every result against the golden model on a zero-extended copy made here."""
    p = card.params_for(0)
    k, rmap = card.kernel, R.RegisterMap(p)
    card.run(make_points(p.max_log_n, "random", 100))          # the driver's largest buffers and pointers
    mem = _channels(k, p)
    rng = np.random.default_rng(5)
    prime = (1 << 64) - (1 << 32) + 1
    plans = [(p.max_log_n - 1, p.max_log_n, 1, 7), (p.max_log_n - 2, p.max_log_n - 1, 2, prime - 1)]
    for m, t, batch, g in plans:
        assert rmap.lde_pair_ok(m, t)
        x = np.stack([make_points(m, KINDS[e % len(KINDS)], 110 + e) for e in range(batch)])
        small, large = HbmLayout(p, m, batch), HbmLayout(p, t, batch)
        for ch in range(p.channels):
            mem[ch][:] = rng.integers(0, 1 << 64, mem[ch].size, dtype=np.uint64)    # garbage everywhere
        small.scatter_into(x.reshape(-1), mem, "input")
        k.set_args(log_n=m, batch=batch, flags=R.FLAG_INVERSE, chain_log_n=t, input_log_m=0)
        assert k.start_and_wait() == 0
        coeffs = ntt.transform(x, inverse=True)
        got = large.gather_from(mem, "input").reshape(batch, -1)
        assert np.array_equal(got[:, :1 << m], coeffs), (m, t, "chained output")
        k.set_args(log_n=t, flags=R.FLAG_COSET, chain_log_n=0, input_log_m=m, **rmap.split_shift(g))
        assert k.start_and_wait() == 0
        padded = np.concatenate([coeffs, np.zeros((batch, (1 << t) - (1 << m)), dtype=np.uint64)], axis=1)
        want = ntt.transform(padded, coset=g)
        assert np.array_equal(large.gather_from(mem, "output").reshape(batch, -1), want), (m, t, g)
    # the same size: forward, output chained into the input placement, forward again from there
    n = p.max_log_n - 1
    x = make_points(n, "random", 120)
    lay = HbmLayout(p, n)
    lay.scatter_into(x, mem, "input")
    k.set_args(log_n=n, batch=1, flags=0, input_log_m=0, chain_log_n=n)
    assert k.start_and_wait() == 0
    assert np.array_equal(lay.gather_from(mem, "input"), ntt.ntt(x))
    k.set_args(chain_log_n=0)
    assert k.start_and_wait() == 0
    assert np.array_equal(lay.gather_from(mem, "output"), ntt.ntt(ntt.ntt(x)))
    assert np.array_equal(card.run(x), ntt.ntt(x))             # the driver's next run is unaffected


def test_unplaceable_lde_pairs_are_refused_without_touching_memory(card):
    """input_log_m / chain_log_n pairs outside the build's LDE pairs (or a chained batch past the
    buffers) finish at once with STATUS.bad_lde_pair; no HBM byte changes."""
    p = card.params_for(0)
    k, rmap = card.kernel, R.RegisterMap(p)
    card.run(make_points(p.max_log_n, "random", 130))
    before = {a: b.copy() for a, b in _point_buffers(k).items()}
    cases = [(p.max_log_n, 0, p.max_log_n + 1, 1), (p.max_log_n - 1, 0, p.max_log_n, 2),
             (p.max_log_n, p.max_log_n + 1, 0, 1), (p.min_log_n, p.min_log_n - 1, 0, 1),
             (p.max_log_n, 1, 0, 1)]
    for log_n, log_m, chain, batch in cases:
        want = rmap.check_start(log_n, 0, batch, 0, log_m, chain)
        assert want & R.STATUS_BAD_LDE_PAIR, (log_n, log_m, chain, batch)
        k.set_args(log_n=log_n, batch=batch, flags=0, input_log_m=log_m, chain_log_n=chain)
        assert k.start_and_wait() == want
        assert _record(k).status == k.read(R.RegisterMap(p).id_offset("STATUS"))    # what it wrote instead
        for a, b in _point_buffers(k).items():
            assert np.array_equal(b, before[a]), f"buffer at 0x{a:x} written by a refused start"
    k.set_args(input_log_m=0, chain_log_n=0, batch=1)


@pytest.mark.parametrize("fault", ["axi-read", "axi-write"])
def test_axi_fault_reaches_the_driver_through_the_record(card, fault):
    """An error response injected into one HBM channel model of the RTL: the driver (which reads the
    status record, not a register) raises KernelAxiError naming that channel and the direction; the next
    run without the fault is correct (tests/test_status_record.py: the same without read_register)."""
    from nantucket.host.xrt.errors import KernelAxiError
    p = card.params_for(0)
    machine = card.machine
    channel = p.channels - 1
    x = make_points(p.log_n, "random", 140)
    machine.set_fault(fault, channel=channel, resp=3)
    try:
        with pytest.raises(KernelAxiError) as err:
            card.run(x)
    finally:
        machine.set_fault(None)
    e = err.value
    assert e.channel == channel and e.write == (fault == "axi-write") and e.resp_name == "DECERR", e
    assert f"channel {channel}" in str(e) and "\n" not in str(e)
    assert np.array_equal(card.run(x), ntt.ntt(x))
