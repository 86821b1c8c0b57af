"""The whole kernel built for the 31-bit fields (BabyBear, KoalaBear), register by register on the RTL in
Verilator (sim/cosim.py, sim/regression.py): eight 32-bit points a 256-bit beat through the DMA, the HBM
layout and the engine, every mode of a small build, against the golden model in that field; the host's
identity check and the CLI on the sim card.

One Verilator build per field: BabyBear L8_k4_C4 (a 31-bit build needs at least 8 lanes, a unit of L
points filling whole beats of eight; the sim backend's smallest card for 2^8 points, so the CLI test reuses
it), KoalaBear L8_k5_C8 (more channels and a larger core; the CLI test names it).
"""

import numpy as np
import pytest

from nantucket.hw.model import ntt, regmap as R
from nantucket.hw.model import field as F
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import FLAG_COSET, FLAG_INVERSE, Run
from nantucket.sim.regression import edge_points, regress

from kernel_cards import check_identification, every_mode, fake_xrt, lde_on_card, register_card, trial

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

FIELDS = ("babybear", "koalabear")
#: The coset shift of these tests (any 0 < s < p is a valid shift; Plonky3 uses its generators 31 and 3).
SHIFT = 7


def params_of(field: str) -> BuildParams:
    return (BuildParams(lanes=8, log_core=4, channels=4, field=field) if field == "babybear" else
            BuildParams(lanes=8, log_core=5, channels=8, field=field))


@pytest.fixture(scope="module", params=FIELDS)
def card(request):
    yield from register_card(params_of(request.param))


def test_identification_names_the_field(card):
    check_identification(card)


def test_every_mode(card):
    """Forward, inverse, coset (shift 7 and the edge shift p - 1), inverse coset, the largest batch at the
    smallest size, a chained output and a zero-extended input, each under AXI stalls and HBM refresh, point
    by point against hw.model.ntt.transform(..., field=) (inputs mix in the field's edge values:
    sim/regression.edge_points) and by the status record."""
    p = card.params
    for seed, run in enumerate(every_mode(p, SHIFT)):
        card.check(trial(run, seed))


def test_edge_values_through_every_lane(card):
    """Every edge value of the field (0, 1, p-1, p-2, 2^15, 2^16, 2^30 and neighbours) at every position of
    a forward and an inverse transform: the kernel's output equals the golden model's."""
    p, field = card.params, card.params.prime_field
    n = p.max_log_n - 1                         # two transforms fill the build's buffers
    edges = edge_points(field.p)
    x = np.resize(edges, 1 << n)
    x = np.stack([x, np.roll(x, 1)])
    for flags in (0, FLAG_INVERSE):
        HbmLayout(p, n, 2).scatter_into(x.reshape(-1), card.mem, "input")
        assert card.start(trial(Run(n, flags, batch=2), 3)) == 0
        got = HbmLayout(p, n, 2).gather_from(card.mem, "output").reshape(2, -1)
        want = ntt.transform(x, inverse=bool(flags), field=field)
        assert np.array_equal(got, want), flags
    card.sequence = None                        # started outside card.check: its record count restarts


def test_low_degree_extension_on_the_card(card):
    """The LDE in two starts on one card: the inverse transform of 2^m evaluations written as the
    zero-extended input of a 2^n run (chain_log_n), then the forward coset transform reading it
    (input_log_m); against the golden model in the build's field, and unlike the same steps in the other
    31-bit field."""
    evaluations, got, n = lde_on_card(card, SHIFT)
    field = card.params.prime_field
    other = F.get("koalabear" if field.name == "babybear" else "babybear")
    assert np.any(got != ntt.transform(ntt.transform(evaluations % other.p, inverse=True, field=other),
                                       coset=SHIFT, size=1 << n, field=other))


def test_shift_check_and_random_regression(card):
    """A coset start with shift p is refused with bad_shift and touches nothing; then 30 constrained-random
    starts (sizes, batches, flags, shifts, chained and zero-extended, refused ones) in the build's field."""
    p = card.params
    refused = Run(p.max_log_n, FLAG_COSET, coset_shift=p.prime_field.p)
    assert refused.check(p) == R.STATUS_BAD_SHIFT
    card.check(trial(refused, 1))
    counts = regress(card, 30, seed=13)
    assert counts["runs"] == 30 and counts["coset"] > 0 and counts["inverse"] > 0


# -- the host: identity check through the ID block, and the CLI on the sim card -----------------------------

def test_host_refuses_a_kernel_of_the_other_31_bit_field(tmp_path):
    """BabyBear and KoalaBear kernels move the same 32-bit words; the ID block's FIELD word tells them apart
    (an IdentityMismatch naming both), and without register access the status record's FIELD word does."""
    from nantucket.host.xrt import IdentityMismatch
    baby, koala = (BuildParams(lanes=8, log_core=3, channels=4, field=f) for f in FIELDS)
    for host, kernel in ((baby, koala), (koala, baby)):
        with pytest.raises(IdentityMismatch, match=rf"computes in the {kernel.field} field, the host asked for "
                                                   rf"{host.field}$"):
            fake_xrt(tmp_path, host, kernel)
    assert fake_xrt(tmp_path, None, koala, field="koalabear").params == koala
    # without register reads the self-test's first status record names it (the record holds every ID word)
    with pytest.raises(IdentityMismatch, match=f"status record reports FIELD {R.FIELD_CODES['koalabear']}"):
        fake_xrt(tmp_path, baby, koala, read_register=False)
    fake_xrt(tmp_path, koala, koala, read_register=False)


@pytest.mark.parametrize("field, log_n, options", [
    ("babybear", 8, []), ("koalabear", 10, ["--lanes", "8", "--log-core", "5", "--channels", "8"])])
def test_cli_runs_a_31_bit_pair_on_the_sim_card(tmp_path, capsys, field, log_n, options):
    """`nantucket points/run --field F --backend sim`: the card is built in that field (BabyBear: the
    smallest for 2^8 points, L8_k4_C4; KoalaBear: `--lanes 8 --log-core 5 --channels 8`, the builds above)
    and its output equals the expected file, which `points` computed with the model in that field."""
    from nantucket.host.cli import main
    i, e = tmp_path / "in.txt", tmp_path / "exp.txt"
    assert main(["points", str(log_n), str(i), str(e), "--field", field]) == 0
    capsys.readouterr()
    assert main(["run", str(i), str(e), "--backend", "sim", "--field", field, *options]) == 0
    out = capsys.readouterr().out
    assert field in out and params_of(field).tag().removesuffix("_" + field) in out


@pytest.mark.parametrize("field", FIELDS)
def test_the_library_on_the_sim_card_in_a_31_bit_field(field):
    """`nantucket.open("sim", field=F, params=)` with the build above: its device arrays go through the
    kernel as uint32 (the sim card stages them in host memory: a run per call): forward then inverse, an
    inverse coset transform, a batch of three, and a blowup-4 LDE; every result equal to the model
    device's in the same field."""
    import nantucket
    f = F.get(field)
    rng = np.random.default_rng(7)
    n = params_of(field).max_log_n
    x = rng.integers(0, f.p, (3, 1 << n), dtype=np.uint32)
    x[0, :8] = edge_points(f.p)[:8]
    values = rng.integers(0, f.p, (2, 1 << (n - 2)), dtype=np.uint32)
    steps = []
    for backend in ("model", "sim"):
        options = {} if backend == "model" else {"params": params_of(field), "progress": lambda line: None}
        with nantucket.open(backend, field=field, **options) as dev:
            a = dev.asarray(x)
            dev.ntt(a)
            forward = a.numpy()
            dev.intt(a)
            back = a.numpy()
            coset = dev.ntt(x, coset=SHIFT, inverse=True)
            lde = dev.lde(values, blowup=4, shift=SHIFT)
            steps.append((forward, back, coset.numpy(), lde.numpy()))
    for (name, want), got in zip(zip(("forward", "round trip", "inverse coset", "lde"), steps[0]), steps[1]):
        assert got.dtype == np.uint32 and np.array_equal(got, want), name
    assert np.array_equal(steps[1][1], x)


@pytest.mark.parametrize("field", FIELDS)
def test_arrays_stay_on_an_xrt_card_in_a_31_bit_field(tmp_path, field):
    """On the xrt driver (the stand-in pyxrt, the register-level kernel model): a uint32 array placed on the
    card is transformed there in place, forward then inverse, with no host round trip, and a blowup-4 LDE
    chains its two runs on the card (the report says so); the results equal the model device's."""
    import nantucket
    from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin
    p, f = params_of(field), F.get(field)
    rng = np.random.default_rng(11)
    x = rng.integers(0, f.p, (2, 1 << p.max_log_n), dtype=np.uint32)
    values = rng.integers(0, f.p, (2, 1 << (p.max_log_n - 2)), dtype=np.uint32)
    with nantucket.open("model", field=field) as dev:
        want_forward = dev.ntt(x).numpy()
        want_lde = dev.lde(values, blowup=4, shift=SHIFT).numpy()
    fake = FakePyxrt()
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", p)
    with nantucket.open("xrt", params=p, xclbin=xclbin, pyxrt_module=fake, field=field, progress=False) as dev:
        a = dev.asarray(x)
        assert a.resident
        dev.ntt(a)
        assert np.array_equal(a.numpy(), want_forward)
        dev.intt(a)
        assert np.array_equal(a.numpy(), x) and dev.relayouts == 0
        lde = dev.lde(values, blowup=4, shift=SHIFT)
        assert "the LDE ran on the card" in dev.backend.report["Host work"]
        assert lde.dtype == np.uint32 and np.array_equal(lde.numpy(), want_lde)
