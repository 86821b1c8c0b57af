"""The host's layout step (host/hbm_io.py) against the layout model's own placement
(hw.model.layout.HbmLayout.scatter / gather): every row's region holds what the model places for that row,
whatever the dtype of the rows (the field's point words, or uint64 rows of a 31-bit field), their strides
and the batch (one np.put per row up to PUT_MAX_ROWS rows, one assignment per channel past it)."""

import numpy as np
import pytest

from nantucket.host import hbm_io
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import BuildParams

BUILDS = [BuildParams(lanes=4, log_core=3, channels=4),
          BuildParams(lanes=8, log_core=4, channels=4, field="babybear")]


def buffers(layout, batch):
    return {ch: np.zeros(layout.channel_bytes * batch, dtype=np.uint8) for ch in range(layout.channels)}


@pytest.mark.parametrize("params", BUILDS, ids=lambda p: p.tag())
@pytest.mark.parametrize("batch", [1, 3, hbm_io.PUT_MAX_ROWS + 2])
@pytest.mark.parametrize("reverse", [False, True], ids=["natural", "reversed"])
def test_rows_land_where_the_layout_model_places_them_and_come_back(params, batch, reverse):
    field = params.prime_field
    layout = HbmLayout(params, params.max_log_n - 1)
    n = layout.n_points
    rows = np.random.default_rng(batch).integers(0, field.p, (batch, n), dtype=np.uint64)
    order = np.arange(n) if not reverse else np.array([int(f"{i:0{layout.log_n}b}"[::-1], 2) for i in range(n)])
    for given in (rows.astype(field.dtype), rows, np.asfortranarray(rows.astype(field.dtype))):
        bufs = buffers(layout, batch)
        hbm_io.scatter_rows(layout, given, bufs, reverse=reverse)
        for e in (0, batch - 1):
            want = layout.scatter(rows[e][order].astype(field.dtype))       # the model: natural order in
            for ch in layout.buffer_channels("input"):
                region = bufs[ch].reshape(batch, -1)[e].view(layout.point_dtype)
                assert np.array_equal(region, want[ch]), (given.dtype, e, ch)
        # the output placement, read back: the model's gather of the same words
        out_bufs = buffers(layout, batch)
        for e in range(batch):
            placed = layout.scatter(rows[e].astype(field.dtype), "output")
            for ch in layout.buffer_channels("output"):
                out_bufs[ch].reshape(batch, -1)[e].view(layout.point_dtype)[:] = placed[ch]
        got = hbm_io.gather_rows(layout, out_bufs, batch, reverse=reverse)
        assert got.dtype == layout.point_dtype and np.array_equal(got, rows[:, order].astype(field.dtype))
        into = np.zeros((n, batch), dtype=np.uint64).T                    # strided, another dtype
        hbm_io.gather_rows(layout, out_bufs, batch, reverse=reverse, out=into)
        assert np.array_equal(into, rows[:, order])
