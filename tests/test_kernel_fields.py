"""The whole kernel built for another field than the default, register by register on the RTL in Verilator
(sim/cosim.py, sim/regression.py): goldilocks-plonky2 (the Goldilocks prime with plonky2's root chain, whose
64th root is 8) through every mode of a small build, against the golden model in that field.

One Verilator build (L4_k4_C4, about a minute); the default field's kernel is tests/test_kernel_faults.py's.
"""

import numpy as np
import pytest

from nantucket.hw.model import ntt, regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import FLAG_COSET, Run
from nantucket.sim.regression import regress

from kernel_cards import check_identification, every_mode, fake_xrt, lde_on_card, register_card, trial

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

FIELD = "goldilocks-plonky2"
PARAMS = BuildParams(lanes=4, log_core=4, channels=4, field=FIELD)
#: The coset shift plonky2, Winterfell and ZisK use with this chain.
SHIFT = 7


@pytest.fixture(scope="module")
def card():
    yield from register_card(PARAMS)


def test_identification_names_the_field(card):
    """The FIELD word reads the build's field's code (not the default's), the rest of the ID block as ever."""
    assert R.FIELD_CODES[FIELD] != R.FIELD_CODES["goldilocks"]
    check_identification(card)


def test_every_mode(card):
    """Forward, inverse, coset (shift 7 and an edge shift), inverse coset, a batch at the smallest size, a
    chained output and a zero-extended input, each under AXI stalls and HBM refresh, point by point against
    hw.model.ntt.transform(..., field=goldilocks-plonky2) and by the status record (sim/regression.py)."""
    p = PARAMS
    for seed, run in enumerate(every_mode(p, SHIFT)):
        card.check(trial(run, seed))


def test_low_degree_extension_on_the_card(card):
    """The prover's LDE in two starts on one card, the data never leaving it: the inverse transform of 2^m
    evaluations written as the zero-extended input of a 2^n run (chain_log_n), then the forward coset
    transform with shift 7 reading it (input_log_m); against the golden model's inverse then coset transform
    in plonky2's chain, and not equal to the same two transforms in the default chain."""
    evaluations, got, n = lde_on_card(card, SHIFT)
    other = ntt.transform(ntt.transform(evaluations, inverse=True), coset=SHIFT, size=1 << n)
    assert not np.array_equal(got, other)


def test_shift_check_and_random_regression(card):
    """A coset start with shift p (the build's p) is refused with bad_shift and touches nothing; then 40
    constrained-random starts (sizes, batches, flags, shifts, chained and zero-extended, refused ones) in
    the build's field."""
    refused = Run(PARAMS.max_log_n, FLAG_COSET, coset_shift=PARAMS.prime_field.p)
    assert refused.check(PARAMS) == R.STATUS_BAD_SHIFT
    card.check(trial(refused, 1))              # STATUS as Run.check says, no point written
    counts = regress(card, 40, seed=11)
    assert counts["runs"] == 40 and counts["coset"] > 0 and counts["inverse"] > 0


# -- the host's identity check (host/xrt/identity.py) on the kernel model behind a fake pyxrt ----------------

def test_host_refuses_a_kernel_of_another_field(tmp_path):
    """Through the ID block: a goldilocks-plonky2 kernel opened for goldilocks (and the other way round) is
    an IdentityMismatch naming both fields; the report names the kernel's field; a FIELD
    code no field has is named. Without register access the self-test's known transform tells the chains
    apart. Without parameters the build is the one the ID block reports (its field included)."""
    from nantucket.host.xrt import IdentityMismatch
    small = BuildParams(lanes=4, log_core=3, channels=4)
    plonky2 = BuildParams(lanes=4, log_core=3, channels=4, field=FIELD)
    for host, card in ((small, plonky2), (plonky2, small)):
        with pytest.raises(IdentityMismatch, match=rf"computes in the {card.field} field, the host asked for "
                                                   rf"{host.field}$"):
            fake_xrt(tmp_path, host, card)
    be = fake_xrt(tmp_path, plonky2, plonky2)
    assert be.params == plonky2 and f"FIELD {R.FIELD_CODES[FIELD]} ({FIELD})" in be.report["Identity"]
    with pytest.raises(IdentityMismatch, match="FIELD reads 0"):
        fake_xrt(tmp_path, plonky2, plonky2, id_overrides={"FIELD": 0})
    with pytest.raises(ValueError, match=f"computes in {FIELD}, not goldilocks"):     # no params: the ID's
        fake_xrt(tmp_path, None, plonky2, field="goldilocks")
    assert fake_xrt(tmp_path, None, plonky2, field=FIELD).params == plonky2      # ... and its field is taken
    # without register reads the self-test's first status record names it (the record holds every ID word)
    with pytest.raises(IdentityMismatch, match=f"status record reports FIELD {R.FIELD_CODES[FIELD]}"):
        fake_xrt(tmp_path, small, plonky2, read_register=False)
    fake_xrt(tmp_path, plonky2, plonky2, read_register=False)         # its own field passes the self-test


def test_cli_runs_a_goldilocks_plonky2_pair_on_the_sim_card(tmp_path, capsys):
    """`nantucket points/run --field goldilocks-plonky2 --backend sim`: the smallest card for 2^8 points is
    built in that field (the same L4_k4_C4 build as above), and its output equals the expected file, which
    `points` computed with the model in that field; a goldilocks run of the same files does not match."""
    from nantucket.host.cli import main
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", "8", str(i), str(e), "--field", FIELD]) == 0
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--backend", "sim", "--field", FIELD]) == 0
    out = capsys.readouterr().out
    assert FIELD in out and "L4_k4_C4" in out
    assert main(["run", str(i), str(e), "--backend", "model"]) == 1          # the other chain's outputs differ
