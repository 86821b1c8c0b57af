"""The HBM layout model: a bijection per buffer, consistent with the engine's pass schedule, sequential
per channel where the DMA streams, 4 KiB-safe bursts, and balanced channel use at the default build; in
Goldilocks (four 64-bit points a 256-bit beat) and in the 31-bit fields (eight 32-bit words a beat)."""

import numpy as np
import pytest

from nantucket.hw.model.layout import BEAT_BYTES, PAGE_BYTES, HbmLayout
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.schedule import pass_schedule

CASES = [
    BuildParams(lanes=16, log_core=4, channels=2),
    BuildParams(lanes=16, log_core=4, channels=32),
    BuildParams(lanes=4, log_core=4, channels=4),
    BuildParams(lanes=8, log_core=5, channels=8),
    BuildParams(lanes=16, log_core=6, channels=32),
    BuildParams(lanes=16, log_core=7, channels=4),
    BuildParams(lanes=16, log_core=8, channels=32),
    # 31-bit fields: a unit of 8 lanes is one beat of eight words, of 16 lanes two
    BuildParams(lanes=8, log_core=4, channels=4, field="babybear"),
    BuildParams(lanes=8, log_core=5, channels=2, field="koalabear"),
    BuildParams(lanes=16, log_core=6, channels=32, field="babybear"),
]
IDS = [p.tag() for p in CASES]
#: every run-time size of every build (the build's largest size is the layout's default)
SIZED = [(p, n) for p in CASES for n in range(p.min_log_n, p.max_log_n + 1)]
SIZED_IDS = [f"{p.tag()}-n{n}" for p, n in SIZED]
#: batches of B back-to-back transforms: small and large sizes, one and several channels, odd B
BATCHED = [(CASES[0], 8, 2), (CASES[1], 8, 3), (CASES[2], 8, 3), (CASES[3], 7, 2), (CASES[3], 10, 3),
           (CASES[4], 9, 3), (CASES[5], 11, 2), (CASES[6], 8, 5), (CASES[7], 6, 3), (CASES[8], 8, 3),
           (CASES[9], 9, 2)]
#: every size with B = 1, then the batches
SIZED_B = [(p, n, 1) for p, n in SIZED] + BATCHED
SIZED_B_IDS = SIZED_IDS + [f"{p.tag()}-n{n}-B{b}" for p, n, b in BATCHED]


def _points(lay, seed):
    """Random point words for ``lay``: any word of the field's point width (64 or 32 bits)."""
    return np.random.default_rng(seed).integers(0, 1 << (8 * lay.point_bytes), lay.n_points, dtype=lay.point_dtype)


@pytest.mark.parametrize("params, log_n", SIZED, ids=SIZED_IDS)
@pytest.mark.parametrize("buffer", ["input", "state", "output"])
def test_every_point_placed_once(params, log_n, buffer):
    lay = HbmLayout(params, log_n)
    ch, off = lay.place(buffer)
    assert set(np.unique(ch)) == set(lay.buffer_channels(buffer))
    assert off.min() >= 0 and off.max() < lay.channel_bytes and np.all(off % lay.point_bytes == 0)
    key = ch * lay.channel_bytes + off
    assert np.unique(key).size == lay.n_points
    # each channel holds exactly channel_bytes of the buffer
    assert np.all(np.bincount(ch)[lay.buffer_channels(buffer)] == lay.points_per_channel)


@pytest.mark.parametrize("params, log_n", SIZED, ids=SIZED_IDS)
def test_scatter_gather_round_trip(params, log_n):
    lay = HbmLayout(params, log_n)
    x = _points(lay, 1)
    for buffer in ("input", "state", "output"):
        bufs = lay.scatter(x, buffer)
        assert len(bufs) == params.channels and all(b.nbytes == lay.channel_bytes for b in bufs)
        unused = set(range(params.channels)) - set(lay.buffer_channels(buffer))
        assert all(not bufs[c].any() for c in unused)
        assert np.array_equal(lay.gather(bufs, buffer), x)
    # the output overwrites the input in place: same channels, same bytes
    assert lay.buffer_channels("input") == lay.buffer_channels("output")
    for buffer in ("input", "output"):
        ch, off = lay.place(buffer)
        assert len(set(zip(ch.tolist(), off.tolist()))) == lay.n_points      # one place per point
    assert sorted(zip(*[a.tolist() for a in lay.place("input")])) == \
        sorted(zip(*[a.tolist() for a in lay.place("output")]))


@pytest.mark.parametrize("params, log_n", SIZED, ids=SIZED_IDS)
@pytest.mark.parametrize("buffer", ["input", "state", "output"])
def test_scatter_and_gather_put_every_point_where_place_says(params, log_n, buffer):
    """The host's fast paths (unit tables, row gathers) against the per-point definition."""
    lay = HbmLayout(params, log_n)
    x = _points(lay, 3)
    mem = lay.scatter(x, buffer)
    ch, off = lay.place(buffer)
    assert np.array_equal(np.stack(mem)[ch, off // lay.point_bytes], x)
    views = {c: np.full(lay.points_per_channel, 7, dtype=lay.point_dtype) for c in range(params.channels)}
    lay.scatter_into(x, views, buffer)
    assert all(np.array_equal(views[c], mem[c]) for c in lay.buffer_channels(buffer))
    assert all((views[c] == 7).all() for c in set(range(params.channels)) - set(lay.buffer_channels(buffer)))
    assert np.array_equal(lay.gather_from(views, buffer), x)


BEARS = [p for p in CASES if p.prime_field.point_bits == 32]


@pytest.mark.parametrize("params", BEARS, ids=[p.tag() for p in BEARS])
@pytest.mark.parametrize("buffer", ["input", "state", "output"])
def test_31bit_channel_bytes_hold_eight_points_a_beat(params, buffer):
    """A 31-bit field's channel, byte by byte, as the DMA sees it: 256-bit beats at 32-byte steps, each
    holding 8 consecutive points of one unit as 32-bit little-endian words, point j of the beat at bytes
    4j .. 4j + 3 (the beat's lowest address first). Built here from point_place's (channel, beat, point
    of the beat) alone and compared with the bytes scatter writes, then read back as beats."""
    from nantucket.hw.points import unpack_beat
    lay = HbmLayout(params, params.max_log_n, 2)
    assert (lay.points_per_beat, lay.point_bytes, lay.point_dtype) == (8, 4, np.uint32)
    assert lay.unit_beats == params.lanes // 8 and lay.channel_bytes == lay.beats_per_channel * BEAT_BYTES
    x = _points(lay, 7)
    x[:4] = [params.prime_field.p - 1, 0xFFFF_FFFF, 1 << 31, 0]       # the word's every bit travels
    want = {c: bytearray(lay.channel_bytes) for c in lay.buffer_channels(buffer)}
    index = np.arange(lay.n_points)
    chans, beats, slots = (np.asarray(a) for a in lay.point_place(buffer, index))
    for i, c, b, j in zip(index.tolist(), chans.tolist(), beats.tolist(), slots.tolist()):
        assert 0 <= j < 8
        want[c][BEAT_BYTES * b + 4 * j:BEAT_BYTES * b + 4 * j + 4] = int(x[i]).to_bytes(4, "little")
    mem = lay.scatter(x, buffer)
    for c, raw in want.items():
        assert mem[c].tobytes() == bytes(raw), f"channel {c}"
    # every beat: 8 consecutive indices of one row, the first a multiple of 8, in lane order
    beat_of = chans.astype(np.int64) * lay.beats_per_channel + beats
    order = np.lexsort((slots, beat_of))
    first = index[order].reshape(-1, 8)
    assert np.all(first[:, 0] % 8 == 0) and np.all(np.diff(first, axis=1) == 1)
    # the beats as the HBM models hold them: 256-bit words, the field's words lowest first
    c = lay.buffer_channels(buffer)[-1]
    words = [int.from_bytes(mem[c].tobytes()[BEAT_BYTES * b:BEAT_BYTES * (b + 1)], "little")
             for b in range(lay.beats_per_channel)]
    assert np.array_equal(np.array([w for v in words for w in unpack_beat(v, params.prime_field)],
                                   dtype=np.uint32), mem[c])


@pytest.mark.parametrize("field", ["babybear", "koalabear"])
def test_31bit_scatter_gather_round_trip_through_bytes(field):
    """A 31-bit layout scatters into byte buffers (as a card's mapped memory is) and gathers back every word
    of every buffer, batches too; uint64 points below 2^32 are taken as words (a field's values as the
    host holds them), and the channel arrays are the point words of ``scatter``."""
    params = BuildParams(lanes=16, log_core=5, channels=4, field=field)
    for log_n, batch in ((10, 1), (8, 3)):
        lay = HbmLayout(params, log_n, batch)
        x = _points(lay, log_n)
        x[:3] = [params.prime_field.p - 1, 0xFFFF_FFFF, 0]
        for buffer in ("input", "state", "output"):
            raw = [np.full(lay.channel_bytes, 0xA5, dtype=np.uint8) for _ in range(params.channels)]
            lay.scatter_into(x.astype(np.uint64), raw, buffer)
            words = lay.scatter(x, buffer)
            for c in range(params.channels):
                if c in lay.buffer_channels(buffer):
                    assert raw[c].tobytes() == words[c].tobytes(), (log_n, batch, buffer, c)
                else:
                    assert (raw[c] == 0xA5).all() and not words[c].any()
            back = lay.gather_from(raw, buffer)
            assert back.dtype == np.uint32 and np.array_equal(back, x), (log_n, batch, buffer)
            assert np.array_equal(lay.gather(words, buffer), x)


@pytest.mark.parametrize("params", CASES, ids=IDS)
def test_pass_channel_sets(params):
    lay = HbmLayout(params)
    for p in (1, 2):
        r, w = set(lay.read_channels(p)), set(lay.write_channels(p))
        assert not r & w and r | w == set(range(params.channels))
    assert lay.read_channels(1) == lay.write_channels(2)
    assert lay.read_channels(2) == lay.write_channels(1)
    assert all(c % 2 == 0 for c in lay.read_channels(1))


def _units(lay, buffer, idx):
    """idx[..., L] global indices one engine cycle moves as x0 (or x1) of all lanes -> (channel, first beat),
    asserting they form exactly one unit: one channel, consecutive points starting on a beat boundary."""
    ch, off = lay.place(buffer, idx)
    pt = off // lay.point_bytes
    assert np.all(ch == ch[..., :1])
    assert np.all(pt == pt[..., :1] + np.arange(idx.shape[-1]))
    assert np.all(pt[..., 0] % (lay.unit_points) == 0)
    return ch[..., 0], pt[..., 0] // lay.points_per_beat


def _assert_sequential_per_channel(chans, beats, lay, channel_set):
    chans, beats = chans.reshape(-1), beats.reshape(-1)
    assert set(np.unique(chans)) == set(channel_set)
    for c in channel_set:
        seq = beats[chans == c]
        assert np.array_equal(seq, np.arange(seq.size) * lay.unit_beats), f"channel {c} not sequential"
        assert seq.size * lay.unit_beats == lay.beats_per_channel


@pytest.mark.parametrize("params, log_n, batch", SIZED_B, ids=SIZED_B_IDS)
def test_schedule_reads_and_pass2_writes_are_sequential_units(params, log_n, batch):
    lay = HbmLayout(params, log_n, batch)
    for p, buffer in ((1, "input"), (2, "state")):
        reads, _ = pass_schedule(params, p, log_n, batch)                    # [g, t, l, j]
        both = np.stack([_units(lay, buffer, reads[..., j]) for j in (0, 1)], axis=-1)  # [2, g, t, j]
        ch, beat = both[0], both[1]
        # cycle order: round, cycle, then unit A (x0) before unit B (x1)
        _assert_sequential_per_channel(ch, beat, lay, lay.read_channels(p))
        cu = lay.cycle_units(p, "read")
        assert np.array_equal(cu[:, 0], ch.reshape(-1)) and np.array_equal(cu[:, 1], beat.reshape(-1))
    _, writes = pass_schedule(params, 2, log_n, batch)
    both = np.stack([_units(lay, "output", writes[..., j]) for j in (0, 1)], axis=-1)
    _assert_sequential_per_channel(both[0], both[1], lay, lay.write_channels(2))
    cu = lay.cycle_units(2, "write")
    assert np.array_equal(cu[:, 0], both[0].reshape(-1)) and np.array_equal(cu[:, 1], both[1].reshape(-1))


@pytest.mark.parametrize("params, log_n, batch", SIZED_B, ids=SIZED_B_IDS)
def test_pass1_writes_are_whole_units_after_corner_turn(params, log_n, batch):
    """Every L/2 engine cycles of pass 1 emit an L x L block: L complete state units, one per lane."""
    lay = HbmLayout(params, log_n, batch)
    lanes = params.lanes
    _, writes = pass_schedule(params, 1, log_n, batch)                       # [g, t, l, 2]
    g, t = writes.shape[:2]
    blocks = writes.reshape(g, t // (lanes // 2), lanes // 2, lanes, 2)   # [g, b, t', l, j]
    per_lane = blocks.transpose(0, 1, 3, 2, 4).reshape(g, t // (lanes // 2), lanes, lanes)  # [g, b, l, L]
    ch, beat = _units(lay, "state", per_lane)
    cu = lay.cycle_units(1, "write")
    assert np.array_equal(cu[:, 0], ch.reshape(-1)) and np.array_equal(cu[:, 1], beat.reshape(-1))
    # each unit written exactly once
    key = ch.reshape(-1).astype(np.int64) * lay.beats_per_channel + beat.reshape(-1)
    assert np.unique(key).size == key.size == lay.n_points // lanes


@pytest.mark.parametrize("params, log_n, batch", SIZED_B, ids=SIZED_B_IDS)
def test_bursts_cover_each_channel_and_never_cross_4k(params, log_n, batch):
    lay = HbmLayout(params, log_n, batch)
    for p in (1, 2):
        for d in ("read", "write"):
            bursts = lay.bursts(p, d)
            chans = lay.read_channels(p) if d == "read" else lay.write_channels(p)
            assert sorted(bursts) == sorted(chans)
            for c, bl in bursts.items():
                covered = np.zeros(lay.beats_per_channel, dtype=int)
                for first, n in bl:
                    assert 1 <= n <= 8 and first % n == 0
                    start, end = first * BEAT_BYTES, (first + n) * BEAT_BYTES - 1
                    assert start // PAGE_BYTES == end // PAGE_BYTES
                    covered[first:first + n] += 1
                assert np.all(covered == 1)


@pytest.mark.parametrize("field", ["goldilocks", "babybear"])
def test_default_build_balance(field):
    """k = 12, L = 16, C = 32: pass-2 reads visit all 16 channels in every 8 cycles; each pass-1 round's
    16 rows go to 16 distinct channels; units per channel are equal in every window of 8 cycles."""
    lay = HbmLayout(BuildParams(field=field))
    word = 8 if field == "goldilocks" else 4           # bytes of a point in HBM
    r = lay.group
    for p, d in ((1, "read"), (2, "read"), (2, "write")):
        ch = lay.cycle_units(p, d)[:, 0]
        windows = ch.reshape(-1, r)                           # R units = R/2 engine cycles
        assert np.all(np.sort(windows, axis=1) == np.sort(windows[:1], axis=1))
    ch = lay.cycle_units(1, "write")[:, 0].reshape(-1, lay.unit_points)   # one block of L/2 cycles
    assert np.all(np.sort(ch, axis=1) == np.array(lay.write_channels(1)))
    assert lay.burst_beats == 8 and lay.unit_beats == 16 * word // BEAT_BYTES
    assert lay.hbm_bytes_per_transform() == 4 * 2**24 * word


def test_parameter_errors():
    with pytest.raises(TypeError, match="params"):
        HbmLayout({"lanes": 16})
    with pytest.raises(ValueError, match="lanes"):
        HbmLayout(BuildParams(lanes=2, log_core=4, channels=4))
    for field in ("babybear", "koalabear"):        # a unit of 4 32-bit words is half a beat
        with pytest.raises(ValueError, match=rf"lanes: the HBM layout of {field} needs at least 8 lanes.*got 4"):
            HbmLayout(BuildParams(lanes=4, log_core=4, channels=4, field=field))
    bear = HbmLayout(BuildParams(lanes=8, log_core=4, channels=4, field="babybear"))
    for bad in ([1 << 32], [-1]):                  # no such 32-bit word: refused, not cut to one
        with pytest.raises(ValueError, match="points: a babybear point is a 32-bit word"):
            bear.scatter(np.resize(np.array(bad), bear.n_points))
    with pytest.raises(ValueError, match="channels"):
        HbmLayout(BuildParams(lanes=4, log_core=3, channels=32))
    lay = HbmLayout(BuildParams(lanes=4, log_core=4, channels=4))
    with pytest.raises(ValueError, match="pass_index"):
        lay.read_channels(3)
    with pytest.raises(ValueError, match="buffer"):
        lay.place("bogus")
    with pytest.raises(ValueError, match="points"):
        lay.scatter(np.zeros(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="log_n"):
        HbmLayout(BuildParams(lanes=4, log_core=4, channels=4), 3)
    with pytest.raises(ValueError, match="log_n"):
        HbmLayout(BuildParams(lanes=4, log_core=4, channels=4), 9)
    for bad in (0, -1, 1.0, True):
        with pytest.raises(ValueError, match="batch"):
            HbmLayout(BuildParams(lanes=4, log_core=4, channels=4), 8, bad)
    with pytest.raises(ValueError, match="points"):       # B*N points, not N
        HbmLayout(BuildParams(lanes=4, log_core=4, channels=4), 8, 2).scatter(np.zeros(256, dtype=np.uint64))


def test_largest_size_is_the_default_layout():
    """An explicit log_n = 2k places every point exactly where the default layout does."""
    params = BuildParams(lanes=8, log_core=5, channels=8)
    for buffer in ("input", "state", "output"):
        a, b = HbmLayout(params).place(buffer), HbmLayout(params, 10).place(buffer)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("log_n", [8, 9, 10, 11])
def test_smaller_sizes_use_smaller_buffers(log_n):
    """2^n points take 2^n / R points in each channel, not the build's maximum."""
    lay = HbmLayout(BuildParams(lanes=4, log_core=6, channels=8), log_n)
    assert lay.n_points == 1 << log_n and lay.points_per_channel == (1 << log_n) // 4
    ch, off = lay.place("input")
    assert off.max() < lay.channel_bytes


@pytest.mark.parametrize("k", range(2, 13))
def test_slot_of_row_is_the_lane_input_position(k):
    """The shift/mask slot formula against the schedule's lane input order (an independent table)."""
    from nantucket.hw.model.schedule import lane_input_order
    lay = HbmLayout(BuildParams(lanes=4, log_core=k, channels=2))
    order = lane_input_order(k).reshape(-1)
    rows = np.arange(1 << k)
    assert np.array_equal(lay.slot_of_row("state", order), rows)
    assert [lay.slot_of_row("input", int(r)) for r in order] == list(range(1 << k))


@pytest.mark.parametrize("params, log_n", SIZED, ids=SIZED_IDS)
def test_formulas_agree_on_ints_arrays_and_amaranth_values(params, log_n):
    """point_place gives the same answer on Python ints, numpy arrays and Amaranth Values."""
    from amaranth.hdl import Const, Module
    from amaranth.sim import Simulator
    lay = HbmLayout(params, log_n)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, lay.n_points, 64)
    got = {}

    async def bench(ctx):
        for buffer in ("input", "state", "output"):
            got[buffer] = [tuple(ctx.get(v) for v in lay.point_place(buffer, Const(int(i), log_n)))
                           for i in idx]

    sim = Simulator(Module())
    sim.add_testbench(bench)
    sim.run()
    for buffer in ("input", "state", "output"):
        arr = np.stack(lay.point_place(buffer, idx), axis=1).tolist()
        ints = [tuple(int(v) for v in lay.point_place(buffer, int(i))) for i in idx]
        assert [tuple(r) for r in arr] == ints == got[buffer], buffer
        ch, off = lay.place(buffer, idx)
        assert np.array_equal(ch, np.array([t[0] for t in ints]))
        assert np.array_equal(off, np.array([(lay.points_per_beat * t[1] + t[2]) * lay.point_bytes for t in ints]))


@pytest.mark.parametrize("params", [BuildParams(lanes=4, log_core=9, channels=8),
                                    BuildParams(lanes=8, log_core=9, channels=8, field="koalabear")],
                         ids=lambda p: p.tag())
def test_large_moves_on_threads_put_every_point_where_place_says(params):
    """From 2^18 points the host's scatter and gather split the channels over threads."""
    lay = HbmLayout(params)
    x = _points(lay, 4)
    views = {c: np.zeros(lay.points_per_channel, dtype=lay.point_dtype) for c in range(params.channels)}
    lay.scatter_into(x, views, "input")
    ch, off = lay.place("input")
    assert np.array_equal(np.stack([views[c] for c in range(params.channels)])[ch, off // lay.point_bytes], x)
    assert np.array_equal(lay.gather_from(views, "input"), x)


@pytest.mark.parametrize("params, log_n, batch", BATCHED, ids=SIZED_B_IDS[len(SIZED):])
@pytest.mark.parametrize("buffer", ["input", "state", "output"])
def test_batch_element_is_the_single_placement_moved_by_its_region(params, log_n, batch, buffer):
    """Every index of B*N placed once; element e's points sit exactly where a single transform's do,
    e regions of N/R points further into the same channel (computed from the single layout, not the
    batch's own formula)."""
    one, lay = HbmLayout(params, log_n), HbmLayout(params, log_n, batch)
    n, per_channel = 1 << log_n, (1 << log_n) // (params.channels // 2)
    word = params.prime_field.point_bits // 8
    assert lay.n_points == batch * n and lay.points_per_channel == batch * per_channel
    assert lay.channel_bytes == batch * one.channel_bytes and lay.element_beats == one.beats_per_channel
    ch, off = lay.place(buffer)
    ch1, off1 = one.place(buffer)
    element = np.arange(batch * n) // n
    assert np.array_equal(ch, np.tile(ch1, batch))
    assert np.array_equal(off, np.tile(off1, batch) + element * per_channel * word)
    assert np.unique(ch * lay.channel_bytes + off).size == batch * n
    assert off.max() < lay.channel_bytes


@pytest.mark.parametrize("params, log_n, batch", BATCHED, ids=SIZED_B_IDS[len(SIZED):])
def test_batch_scatter_gather_round_trip(params, log_n, batch):
    """The host's fast paths (one element's unit table, offset per element) against place, both ways."""
    lay = HbmLayout(params, log_n, batch)
    x = _points(lay, 5)
    for buffer in ("input", "state", "output"):
        mem = lay.scatter(x, buffer)
        ch, off = lay.place(buffer)
        assert np.array_equal(np.stack(mem)[ch, off // lay.point_bytes], x)
        assert np.array_equal(lay.gather(mem, buffer), x)
        # the unit table lists every unit of the batch where place puts its first point
        table = lay.unit_table(buffer)
        for c, units in table.items():
            assert np.array_equal(np.stack(mem)[c].reshape(-1, params.lanes), x.reshape(-1, params.lanes)[units])


def test_batch_moves_on_threads():
    """A batch large enough for the threaded path (2^18 points) round-trips through place's positions."""
    params = BuildParams(lanes=4, log_core=6, channels=8)
    lay = HbmLayout(params, 12, 64)
    x = np.random.default_rng(6).integers(0, 2**64, lay.n_points, dtype=np.uint64)
    views = {c: np.zeros(lay.points_per_channel, dtype=np.uint64) for c in range(params.channels)}
    lay.scatter_into(x, views, "state")
    ch, off = lay.place("state")
    assert np.array_equal(np.stack([views[c] for c in range(params.channels)])[ch, off // 8], x)
    assert np.array_equal(lay.gather_from(views, "state"), x)


# -- zero-extended inputs and chained runs -------------------------------------------------------------

@pytest.mark.parametrize("frame", range(1, 13))
def test_lane_row_inverts_lane_slot_and_is_the_schedule_order(frame):
    from nantucket.hw.model.layout import lane_row, lane_slot
    from nantucket.hw.model.schedule import lane_input_order
    slots = np.arange(1 << frame)
    assert np.array_equal(lane_slot(lane_row(slots, frame), frame), slots)
    if frame >= 2:
        order = lane_input_order(frame)          # cycle t reads rows order[t] = (row of slot 2t, 2t+1)
        assert [tuple(int(r) for r in lane_row(np.array([2 * t, 2 * t + 1]), frame)) for t in range(len(order))] \
            == [tuple(int(r) for r in pair) for pair in order]


@pytest.mark.parametrize("params", CASES[2:], ids=IDS[2:])
def test_zero_slot_mask_marks_exactly_the_units_past_the_input(params):
    """A unit of a zero-extended input is zero iff its slot has a bit of zero_slot_mask, checked against
    the index the placement gives each unit (the first point of unit (row, block) is row * 2^n2 + L*block)."""
    from nantucket.hw.model.layout import zero_slot_mask
    for n in range(params.min_log_n, params.max_log_n + 1):
        lay = HbmLayout(params, n)
        rows = np.arange(1 << lay.rows_log("input"))
        slots = lay.slot_of_row("input", rows)
        for m in range(n // 2, n + 1):
            zero = (slots & zero_slot_mask(n, m)) != 0
            assert np.array_equal(zero, (rows << (n // 2)) >= (1 << m)), (n, m)
            assert np.array_equal(lay.zero_units(m).reshape(len(rows), -1).any(axis=1), zero)


@pytest.mark.parametrize("params", CASES[2:], ids=IDS[2:])
def test_output_as_input_is_the_larger_runs_input_placement(params):
    """Output point i of element e of a 2^m run, written for a 2^n run, lands where the 2^n layout places
    input point e*2^n + i; every such place is distinct, and each channel gets as many as the others."""
    from nantucket.hw.model.layout import lde_pairs
    pairs = sorted(lde_pairs(params))
    assert pairs, params
    for m, n in pairs:
        batch = 2 if n < params.max_log_n else 1
        src, dst = HbmLayout(params, m, batch), HbmLayout(params, n, batch)
        ch, off = src.output_as_input(n)
        e, i = np.divmod(np.arange(batch << m), 1 << m)
        want = dst.place("input", e * (1 << n) + i)
        assert np.array_equal(ch, want[0]) and np.array_equal(off, want[1])
        assert len(set(zip(ch.tolist(), off.tolist()))) == ch.size
        counts = np.bincount(ch // 2, minlength=dst.group)
        assert counts.min() == counts.max()
    with pytest.raises(ValueError, match="log_n"):
        HbmLayout(params, params.max_log_n).output_as_input(params.max_log_n + 1)


@pytest.mark.parametrize("params", CASES[2:] + [BuildParams()], ids=IDS[2:] + ["default"])
def test_same_size_and_blowup_two_always_chain(params):
    """The two chains the host relies on at every size (a resident array's next transform, blowup-2 LDE)
    fill every channel equally, which the count in lde_pairs decides."""
    from nantucket.hw.model.layout import lde_pairs
    pairs = lde_pairs(params)
    for n in range(params.min_log_n, params.max_log_n + 1):
        assert (n, n) in pairs
        if n < params.max_log_n:
            assert (n, n + 1) in pairs
