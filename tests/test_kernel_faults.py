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
