"""The whole kernel under AXI stalls, refresh and error responses, its status record, and a
constrained-random regression, register by register on the RTL in Verilator (sim/regression.py).

The 4-lane build is test_kernel.py's too (one Verilator build for both files).
"""

import os

import numpy as np
import pytest

from nantucket.hw.axi import RESP_DECERR, RESP_SLVERR
from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_ID_WORDS, RECORD_WORDS
from nantucket.hw.model.run import FLAG_COSET, FLAG_INVERSE, Run
from nantucket.sim.cosim import SimulatedKernel
from nantucket.sim.kernel_model import HbmModel
from nantucket.sim.regression import RegisterCard, TrialRun, regress

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

PARAMS = BuildParams(lanes=4, log_core=4, channels=4)
#: Random runs in `make test` (make soak runs more: scripts/soak.py).
REGRESSION_RUNS = int(os.environ.get("NANTUCKET_REGRESSION_RUNS", "200"))


@pytest.fixture(scope="module")
def card():
    kernel = SimulatedKernel(PARAMS, HbmModel(PARAMS.channels), HbmLayout(PARAMS), progress=lambda line: None)
    yield RegisterCard(kernel)
    kernel.close()


def _trial(run, *, stalls=True, refresh=True, seed=1):
    return TrialRun(run, refresh=refresh, stalls=stalls, data_seed=seed)


def test_every_mode_under_stalls_and_refresh(card):
    """Forward, inverse, coset, a batch, a chained output and a zero-extended input, each with random stalls
    on every AXI channel (AR, R, AW, W, B) and refresh windows, checked point by point and by the record."""
    p = PARAMS
    n = p.max_log_n
    m, t = n - 1, n
    runs = [Run(n), Run(n, FLAG_INVERSE), Run(n, FLAG_COSET, coset_shift=7),
            Run(n, FLAG_COSET | FLAG_INVERSE, coset_shift=(1 << 64) - (1 << 32)),
            Run(p.min_log_n, batch=R.RegisterMap(p).max_batch(p.min_log_n)),
            Run(m, FLAG_INVERSE, chain_log_n=t), Run(t, FLAG_COSET, coset_shift=3, input_log_m=m)]
    for seed, run in enumerate(runs):
        card.check(_trial(run, seed=seed))


def test_record_words_and_cycle_counts(card):
    """The record after a run: every word as the register map and the run say, SEQUENCE counting starts,
    pass cycles inside the total; after a refused start: its STATUS bits, zero cycles, no point written."""
    card.check(_trial(Run(PARAMS.max_log_n), stalls=False))
    rec = card.record()
    k = card.kernel
    for name in RECORD_ID_WORDS:
        assert rec[name] == k.read(card.rmap.id_offset(name)), name
    assert k.read(card.rmap.id_offset("FIELD")) == R.FIELD_CODES[PARAMS.field]      # the register only
    assert set(rec.words) == set(RECORD_WORDS)
    first = rec["SEQUENCE"]
    # the busy time the harness counts in NTT cycles covers both passes' NTT windows
    assert rec["PASS1_NTT_CYCLES"] + rec["PASS2_NTT_CYCLES"] <= k.last_ntt_cycles
    card.check(_trial(Run(PARAMS.max_log_n + 1)))                 # refused: bad_size
    rec = card.record()
    assert rec.status == R.STATUS_BAD_SIZE and rec["SEQUENCE"] == first + 1


def test_a_misaligned_base_is_refused_with_no_dma_pass(card):
    """Each hbm_NN base in turn off the DMA's longest burst (8 beats of 32 bytes: a burst from it would
    cross a 4 KiB boundary, which AXI4 forbids) by a low bit: the kernel finishes with STATUS.bad_align
    alone, writes no point and only its record (zero cycle words), and the next start with the bases
    aligned again runs right."""
    p = PARAMS
    bad_align, burst_bytes = 1 << 19, 8 * 32
    bases = [card.kernel.arg_words(R.pointer_arg(ch)) for ch in range(p.channels)]
    assert all(b % burst_bytes == 0 for b in bases)
    run = Run(p.max_log_n)
    for ch, base in enumerate(bases):
        for offset in (32, 1 << (ch % 8), burst_bytes - 32):
            for m in card.mem:
                m[:] = np.random.default_rng(ch).integers(0, 1 << 64, m.size, dtype=np.uint64)
            before = [m.copy() for m in card.mem]
            card.set_args(**{R.pointer_arg(ch): base + offset})
            status = card.start(_trial(run, seed=ch))
            assert status == bad_align, (ch, offset, hex(status))
            assert all(np.array_equal(a, b) for a, b in zip(before, card.mem)), f"hbm_{ch:02d} + {offset}: wrote points"
            rec = card.record()
            assert rec.status == bad_align and rec.describes(run), (ch, offset)
            assert all(rec[n] == 0 for n in RECORD_WORDS if n.endswith("_CYCLES")), (ch, offset)
            card.sequence = rec["SEQUENCE"]
        card.set_args(**{R.pointer_arg(ch): base})
    card.check(_trial(run, seed=99))


@pytest.mark.parametrize("direction", ["read", "write"])
def test_axi_errors_are_named_and_do_not_outlive_their_run(card, direction):
    """SLVERR / DECERR on every channel's reads or writes: the run finishes, STATUS and the record name the
    channel, the response and the direction; the next run without the fault is correct and clean."""
    p = PARAMS
    lay = HbmLayout(p)
    for ch in range(p.channels):
        resp = (RESP_SLVERR, RESP_DECERR)[ch % 2]
        if direction == "read":
            assert ch in lay.read_channels(1) + lay.read_channels(2)
            card.kernel.inject(ch, rresp=resp)
        else:
            card.kernel.inject(ch, bresp=resp)
        status = card.start(_trial(Run(p.max_log_n), seed=ch))
        card.kernel.inject(ch)
        fault = R.decode_status(status)
        assert fault["axi_error"] and fault["axi_resp"] == resp, fault
        assert fault["axi_write"] == (direction == "write") and fault["axi_channel"] == ch, fault
        rec = card.record()
        assert rec.status == status, (hex(rec.status), hex(status))
        card.sequence = rec["SEQUENCE"]
        card.check(_trial(Run(p.max_log_n, FLAG_INVERSE), seed=100 + ch))      # clean again


def test_random_regression(card):
    """REGRESSION_RUNS constrained-random starts (sim/regression.py) against the golden model; the seed
    is in the failure's message (reproduce with `make soak SEED=..`)."""
    seed = int(os.environ.get("NANTUCKET_REGRESSION_SEED", "2026"))
    counts = regress(card, REGRESSION_RUNS, seed)
    assert counts["runs"] == REGRESSION_RUNS
    # every kind of start was drawn
    for kind in ("refused", "chained", "extended", "batched", "coset", "stepped", "inverse", "stalled"):
        assert counts[kind] > 0, counts
