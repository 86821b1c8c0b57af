"""Several cards as one device: open(backend, devices=...) splits batches by rows over its cards."""


import numpy as np
import pytest

import nantucket
from nantucket.hw.model.params import BuildParams
from nantucket.host.api.multi import CardError, MultiArray
from nantucket.sim.fake_pyxrt import FakePyxrt, LinkTiming, write_xclbin

SMALL = BuildParams(lanes=4, log_core=3, channels=4)            # native 2^4 .. 2^6


def rand(shape, seed):
    return np.random.default_rng(seed).integers(0, nantucket.P, shape, dtype=np.uint64)


def open_cards(tmp_path, devices=(0, 1), cards=2, **knobs):
    fake = FakePyxrt(devices=cards, **knobs)
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    return fake, nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=fake, timeout_s=5.0,
                                progress=False, devices=list(devices))


def test_model_cards_split_a_batch_by_rows_and_give_the_rows_back_in_order():
    x, v = rand((5, 256), 1), rand((3, 32), 2)
    with nantucket.open("model", devices=2) as dev, nantucket.open("model") as ref:
        a = dev.asarray(x)
        assert isinstance(a, MultiArray) and a.shape == (5, 256)
        assert [c.transfers["to-device"] for c in dev.cards] == [3 * 256 * 8, 2 * 256 * 8]
        dev.ntt(a, coset=5, order="nr")
        assert np.array_equal(a.numpy(), nantucket.ntt(x, coset=5, order="nr"))
        dev.intt(a, coset=5, order="rn")
        assert np.array_equal(a.numpy(wait=False).result(), x)
        assert np.array_equal(dev.lde(v, 4, 7).numpy(), ref.lde(v, 4, 7).numpy())
        # single rows go to the cards in turn
        before = [c.transfers["to-device"] for c in dev.cards]
        futs = [dev.ntt(row, wait=False) for row in x[:4]]
        assert [f.result().numpy().tolist() for f in futs] == nantucket.ntt(x[:4]).tolist()
        grown = [c.transfers["to-device"] - b for c, b in zip(dev.cards, before)]
        assert grown == [2 * 256 * 8, 2 * 256 * 8]


@pytest.mark.parametrize("order", ["nr", "rr", "rn"])
def test_lde_order_and_coefficients_over_cards(order):
    """lde's order and return_coeffs on two model cards: the evaluations as one device gives them, the
    coefficients (natural order) the inverse of the values in their order, joined back by rows, by columns
    with axis=0, of a 1-D polynomial, and of a MultiArray already on the cards (wait=False: a future of
    the pair)."""
    v = rand((5, 32), 4)
    coeffs = nantucket.intt(v, order=order[0] + "n")
    with nantucket.open("model", devices=2) as dev, nantucket.open("model") as ref:
        want = ref.lde(v, 4, 7, order=order).numpy()
        a, c = dev.lde(v, 4, 7, order=order, return_coeffs=True)
        assert isinstance(a, MultiArray) and a.shape == (5, 128) and len(a.parts) == 2
        assert np.array_equal(a.numpy(), want) and np.array_equal(c, coeffs)
        a, c = dev.lde(v.T, 4, 7, order=order, return_coeffs=True, axis=0)
        assert a.axis == 0 and np.array_equal(a.numpy(), want.T) and np.array_equal(c, coeffs.T)
        a, c = dev.lde(v[2], 4, 7, order=order, return_coeffs=True)
        assert np.array_equal(a.numpy(), want[2]) and np.array_equal(c, coeffs[2])
        held = dev.asarray(v)
        fut = dev.lde(held, 4, 7, order=order, return_coeffs=True, wait=False)
        a, c = fut.result()
        assert np.array_equal(a.numpy(), want) and np.array_equal(c, coeffs)
        assert np.array_equal(dev.lde(held, 4, 7, order=order).numpy(), want)      # the array alone
        with pytest.raises(TypeError, match="^return_coeffs: expected True or False"):
            dev.lde(v, 4, 7, return_coeffs="yes")
        with pytest.raises(ValueError, match="^order"):
            dev.lde(v, 4, 7, order="xx")


def test_lde_coefficients_on_xrt_cards(tmp_path):
    """The LDE chained on each stand-in card (2^4 -> 2^6 on the tiny build) with its coefficients brought
    back, in the bit-reversed output order a Merkle tree takes."""
    v = rand((4, 16), 5)
    fake, dev = open_cards(tmp_path)
    with dev, nantucket.open("model") as ref:
        a, c = dev.lde(v, 4, 3, order="nr", return_coeffs=True)
        assert np.array_equal(a.numpy(), ref.lde(v, 4, 3, order="nr").numpy())
        assert np.array_equal(c, nantucket.intt(v))
        assert all(len(card.backend.kernel_runs) > 0 for card in dev.cards)


def test_the_split_arrays_share_their_base():
    """MultiArray (and ClusterArray, tests/test_dask.py) are host.api.split.SplitArray: their properties,
    no implicit conversion, a repr naming the holders, numpy's keywords checked under their own name."""
    from nantucket.host.api.split import SplitArray
    x = rand((3, 64), 6)
    with nantucket.open("model", devices=2) as dev:
        a = dev.asarray(x)
        assert isinstance(a, SplitArray)
        assert (a.shape, a.ndim, a.size, len(a), a.axis, a.ext, a.dtype) == ((3, 64), 2, 192, 3, 1, None, np.uint64)
        with pytest.raises(TypeError, match="^a MultiArray lives on its cards: call .numpy()"):
            np.asarray(a)
        assert repr(a) == "MultiArray(shape=(3, 64), dtype=uint64, cards=[0, 1])"
        with pytest.raises(TypeError, match="^MultiArray.numpy: unknown keyword 'copy'"):
            a.numpy(copy=False)


def test_xrt_cards_each_run_their_part_and_a_failing_card_is_named(tmp_path):
    x = rand((4, 64), 3)
    fake, dev = open_cards(tmp_path)
    with dev:
        assert np.array_equal(dev.ntt(x).numpy(), nantucket.ntt(x))
        # two rows a card, and this build takes 2^6 points a call: two calls on each card
        assert [len(c.backend.kernel_runs) for c in dev.cards] == [2, 2]
        fake.set_fault("axi-read", 2)                  # the card loaded last: device 1
        with pytest.raises(CardError, match=r"^card 1 of 2 \(xrt device 1\): HBM channel 2") as e:
            dev.ntt(x)
        assert isinstance(e.value.cause, nantucket.KernelAxiError) and e.value.card == 1


def test_two_cards_run_at_the_same_time_on_the_timing_model(tmp_path):
    """8 columns, two a call, on two stand-in cards, each with its own link (timing model slowed so each
    sync takes milliseconds): both cards move points, and a transfer on card 0 runs while one in the same
    direction runs on card 1 (the stand-in's link log, modelled intervals: one link could not). Judged on
    the modelled timeline, not on wall-clock ratios."""
    x = rand((8, 64), 4)
    fake, dev = open_cards(tmp_path, [0, 1], timing=LinkTiming(scale=200000))
    with dev:
        dev.ntt(x[:2]).numpy()
        start = len(fake.link_log)
        futs = [dev.numpy(dev.ntt(x[i:i + 2], wait=False), wait=False) for i in range(0, 8, 2)]
        out = np.concatenate([f.result() for f in futs])
        log = list(fake.link_log)[start:]
    assert np.array_equal(out, nantucket.ntt(x))
    assert {card for card, *_ in log} == {0, 1}
    both = [(a, b) for a in log if a[0] == 0 for b in log if b[0] == 1
            if a[1] == b[1] and a[2] < b[3] and b[2] < a[3]]
    assert both, "no transfer on card 0 overlapped one on card 1"


@pytest.mark.parametrize("devices, error, message", [
    (0, ValueError, "devices: expected a count of cards >= 1, got 0"),
    ([-1], ValueError, "devices: card indices are ints >= 0, got -1"),
    ([0, 0], ValueError, r"devices: card indices must be distinct, got \[0, 0\]"),
    ([], ValueError, "devices: expected at least one card index"),
    ("2", TypeError, "devices: expected a count of cards"),
    (True, TypeError, "devices: expected a count of cards"),
    ([0.5], TypeError, "devices: card indices are ints"),
])
def test_bad_devices_are_one_line_errors(tmp_path, devices, error, message):
    xclbin = write_xclbin(tmp_path / "nantucket.xclbin", SMALL)
    with pytest.raises(error, match=f"^{message}"):
        nantucket.open("xrt", params=SMALL, xclbin=xclbin, pyxrt_module=FakePyxrt(devices=2), devices=devices)


def test_devices_keyword_conflicts_and_lists_off_xrt():
    with pytest.raises(ValueError, match="^devices: a list of card indices is for xrt; model takes a count"):
        nantucket.open("model", devices=[0, 1])
    with pytest.raises(ValueError, match="^devices: give device= .* or devices= .*, not both"):
        nantucket.open("xrt", devices=[0, 1], device=0, pyxrt_module=FakePyxrt())
    with pytest.raises(TypeError, match="unknown keyword 'devics'"):
        nantucket.open("model", devics=2)
