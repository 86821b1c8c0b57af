"""What the host computes around the kernel (host/kernel_plan.py) in every field: a size below the
build's smallest native one (zero-padded, every (N/n)-th output kept, an inverse scaled back by N/n, an
inverse coset's g^(-j)) and a kernel built without the inverse or the coset. Every product the host
makes must be in the build's field; in BabyBear and KoalaBear they were Goldilocks products, so the
inverse of a padded size (the sim card's 16-point columns on a 2^6 build) came back wrong, with values
>= p.

Checked against the transforms' sums on Python ints (tests/field_reference.py): the plan's prepare and
finish around a kernel computed from those sums too, and the xrt driver on the stand-in card
(sim.fake_pyxrt, its register-level kernel model) for the same requests.
"""

import itertools

import numpy as np
import pytest

import nantucket
from nantucket.host.kernel_plan import KERNEL_TRANSFORMS, plan_transform
from nantucket.hw.model import field as F
from nantucket.hw.model.params import BuildParams
from nantucket.sim.fake_pyxrt import FakePyxrt, write_xclbin

from field_reference import NAMES, SPEC, naive

REQUESTS = [(False, None, "nn"), (True, None, "nn"), (False, 7, "nr"), (True, 7, "rn"), (True, 5, "rr")]
COMPUTES = [KERNEL_TRANSFORMS, frozenset({"coset", "batch"}), frozenset({"inverse", "batch"}), frozenset({"batch"})]


def rows_of(field: str, shape, seed: int) -> np.ndarray:
    p = SPEC[field][0]
    x = np.random.default_rng(seed).integers(0, p, shape, dtype=np.uint64)
    x.reshape(-1)[:2] = (p - 1, 0)
    return x


def want_rows(x: np.ndarray, field: str, inverse, coset, order) -> list[list[int]]:
    return [naive(row, field, inverse=inverse, coset=coset, order=order) for row in x]


@pytest.mark.parametrize("field", NAMES)
def test_the_plan_around_a_kernel_computes_in_the_build_s_field(field):
    """prepare, the kernel's own transform (natural order, at its size, its flags) and finish give the
    transform asked for: rows of 2^2 points padded to a 2^4 kernel and native 2^4 rows, each request,
    each set of what the kernel computes."""
    f = F.get(field)
    for (log_n, n), computes, (inverse, coset, order) in itertools.product(
            [(4, 4), (4, 16)], COMPUTES, REQUESTS):
        x = rows_of(field, (2, n), seed=n + len(computes))
        plan = plan_transform(n, log_n, inverse, coset, order, computes, f)
        staged = plan.prepare(x)
        run = plan.run(staged.shape[0])
        # the layout step: the orders the host leaves to the placement (the kernel itself runs natural)
        into = "r" if plan.layout_reverse_in else "n"
        out_of = "r" if plan.layout_reverse_out else "n"
        kernel = np.array([naive(row, field, inverse=plan.kernel_inverse, order=into + out_of,
                                 coset=coset if plan.kernel_coset else None) for row in staged.tolist()],
                          dtype=np.uint64)
        got = plan.finish(kernel)
        assert got.tolist() == want_rows(x, field, inverse, coset, order), (n, sorted(computes), run.flags,
                                                                            inverse, coset, order)


def test_a_coset_shift_is_checked_against_the_plan_s_field():
    babybear = F.get("babybear")
    with pytest.raises(ValueError, match=r"^coset: the shift must satisfy 0 < g < p \(the babybear modulus"):
        plan_transform(16, 4, False, babybear.p, "nn", field=babybear)


@pytest.mark.parametrize("field", ["babybear", "koalabear", "goldilocks"])
def test_xrt_below_the_native_sizes_and_without_the_inverse_or_coset(tmp_path, field):
    """The xrt driver on the stand-in card: 16-point rows on a build whose smallest native size is 2^6
    (2^4 in Goldilocks: 4-point rows there), and native rows on a kernel without the inverse or the
    coset; every request the sums' result, every value below p."""
    p = (BuildParams(lanes=4, log_core=3, channels=4) if field == "goldilocks"
         else BuildParams(lanes=8, log_core=4, channels=4, field=field))
    small = 1 << (p.min_log_n - 2)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", p)
    for computes, n in [(KERNEL_TRANSFORMS, small)] + [(c, 1 << p.min_log_n) for c in COMPUTES[1:]]:
        x = rows_of(field, (3, n), seed=n).astype(F.get(field).dtype)
        with nantucket.open("xrt", params=p, xclbin=xclbin, pyxrt_module=FakePyxrt(), field=field,
                            timeout_s=5.0, progress=False, kernel_computes=computes) as dev:
            for inverse, coset, order in REQUESTS:
                got = dev.ntt(x, inverse=inverse, coset=coset, order=order).numpy()
                assert got.tolist() == want_rows(x, field, inverse, coset, order), (
                    n, sorted(computes), inverse, coset, order, dev.backend.report.get("Host work"))
