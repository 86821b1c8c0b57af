"""The kernel register map (hw/model/regmap.py) against the ap_ctrl_hs contract Vitis and XRT expect, written out here."""

import numpy as np
import pytest

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import DEFAULT, BuildParams

PARAMS = [BuildParams(), BuildParams(lanes=4, log_core=6, channels=8), BuildParams(lanes=2, log_core=3, channels=2)]


@pytest.fixture(params=PARAMS, ids=lambda p: p.tag())
def rmap(request):
    return R.RegisterMap(request.param)


def test_control_block_offsets_and_bits():
    # Values written out here are the ap_ctrl_hs contract (XRT polls these bits), not read back from the module.
    assert (R.CTRL, R.GIER, R.IP_IER, R.IP_ISR) == (0x00, 0x04, 0x08, 0x0C)
    assert (R.CTRL_AP_START, R.CTRL_AP_DONE, R.CTRL_AP_IDLE, R.CTRL_AP_READY) == (1, 2, 4, 8)
    assert R.ADDRESS_RANGE == 0x1000 and R.ID_BASE == 0x800
    assert R.MAGIC.to_bytes(4, "big") == b"NTKT"


def test_arguments_follow_the_pinned_layout(rmap):
    c = rmap.params.channels
    assert len(rmap.args) == 1 + c + 13
    log_n = rmap.args[0]
    assert (log_n.name, log_n.index, log_n.offset, log_n.size, log_n.address_qualifier) == ("log_n", 0, 0x10, 4, 0)
    assert log_n.port == "s_axi_control"
    for i in range(c):
        a = rmap.args[1 + i]
        assert a.name == f"hbm_{i:02d}" and a.index == i + 1 and a.channel == i
        assert a.offset == 0x18 + 8 * i and a.size == 8 and a.address_qualifier == 1
        assert a.port == f"m{i:02d}_axi"
        assert a.word_offsets == (0x18 + 8 * i, 0x1C + 8 * i)
    assert rmap.master_ports == tuple(f"m{i:02d}_axi" for i in range(c))
    # the transform arguments follow the pointers, each in its own 8-byte slot (written out here)
    after = 0x18 + 8 * c
    got = [(a.name, a.index, a.offset, a.size, a.c_type, a.address_qualifier, a.reset) for a in rmap.args[1 + c:]]
    assert got == [("flags", c + 1, after, 4, "uint", 0, 0), ("batch", c + 2, after + 8, 4, "uint", 0, 1),
                   ("coset_shift_lo", c + 3, after + 16, 4, "uint", 0, 0),
                   ("coset_shift_hi", c + 4, after + 24, 4, "uint", 0, 0),
                   ("input_log_m", c + 5, after + 32, 4, "uint", 0, 0),
                   ("chain_log_n", c + 6, after + 40, 4, "uint", 0, 0),
                   ("row_step_lo", c + 7, after + 48, 4, "uint", 0, 0),
                   ("row_step_hi", c + 8, after + 56, 4, "uint", 0, 0),
                   ("op", c + 9, after + 64, 4, "uint", 0, 0),
                   ("commit_log_rows", c + 10, after + 72, 4, "uint", 0, 0),
                   ("commit_columns", c + 11, after + 80, 4, "uint", 0, 0),
                   ("commit_scheme", c + 12, after + 88, 4, "uint", 0, 0),
                   ("status", c + 13, after + 96, 8, "uint*", 1, 0)]
    # the status record's pointer is served by master 0 (a buffer in HBM[0]); it is no point buffer
    status = rmap.args[-1]
    assert rmap.record_arg is status and status.port == "m00_axi" and status.is_pointer and not status.is_points
    assert status.word_offsets == (after + 96, after + 100) and status not in rmap.pointer_args
    assert [a.name for a in rmap.pointer_args] == [f"hbm_{i:02d}" for i in range(c)]
    assert rmap.register("batch").reset == 1
    assert [a.name for a in rmap.scalar_args] == ["log_n", "flags", "batch", "coset_shift_lo", "coset_shift_hi",
                                                    "input_log_m", "chain_log_n", "row_step_lo", "row_step_hi", "op",
                                                    "commit_log_rows", "commit_columns", "commit_scheme"]
    assert rmap.split_shift(0x1234_5678_9ABC_DEF0) == {"coset_shift_lo": 0x9ABC_DEF0, "coset_shift_hi": 0x1234_5678}


def test_registers_are_word_aligned_disjoint_and_in_range(rmap):
    offsets = [r.offset for r in rmap.registers]
    assert len(set(offsets)) == len(offsets)
    assert all(o % 4 == 0 and 0 <= o < R.ADDRESS_RANGE for o in offsets)
    # Every argument word is a register, nothing overlaps the ID block.
    for a in rmap.args:
        for w in a.word_offsets:
            assert rmap.register_at(w) is not None and w < R.ID_BASE
    for r in rmap.registers:
        for f in r.fields:
            assert f.mask < 1 << 32


def _native_range(p: BuildParams) -> tuple[int, int]:
    """The issue-13 rule, computed here: both passes need 2^floor(n/2) >= max(4, L, C/2) (DMA units of L
    points, C/2 rows per column block), up to the full 2^(2k)."""
    need = max(4, p.lanes, p.channels // 2)
    return min([n for n in range(1, 2 * p.log_core + 1) if 1 << (n // 2) >= need] + [2 * p.log_core]), 2 * p.log_core


def test_native_range_written_out():
    # the three PARAMS builds by hand: L16 C32 needs 16 = 2^(8/2) rows, L4 C8 and L2 C2 need 4 = 2^(4/2)
    assert [_native_range(p) for p in PARAMS] == [(8, 24), (4, 12), (4, 6)]


def test_field_codes():
    """Every field preset has its own nonzero FIELD code (0 is what a kernel without the word reads), the
    code names it back, and a build's FIELD word is its field's code; the register's doc lists them."""
    from nantucket.hw.model.field import FIELD_NAMES
    assert sorted(R.FIELD_CODES) == sorted(FIELD_NAMES)
    codes = list(R.FIELD_CODES.values())
    assert len(set(codes)) == len(codes) and 0 not in codes
    for name in FIELD_NAMES:
        assert R.field_of_code(R.field_code(name)) == name
        params = BuildParams(lanes=4, log_core=4, channels=4, field=name)
        word = R.RegisterMap(params).id_values["FIELD"]
        assert word == R.FIELD_CODES[name] and f"{word} {name}" in R.RegisterMap(params).register("FIELD").doc
    assert R.field_of_code(0) is None and R.field_of_code(max(codes) + 1) is None
    assert R.RegisterMap(BuildParams(field="goldilocks-plonky2")).id_values["FIELD"] != \
        R.RegisterMap(BuildParams()).id_values["FIELD"]
    with pytest.raises(ValueError, match="field"):
        R.field_code("goldilock")


def test_identification_block(rmap):
    p = rmap.params
    lo, hi = _native_range(p)
    expect = {"MAGIC": 0x4E544B54, "VERSION": R.VERSION, "LANES": p.lanes, "LOG_CORE": p.log_core,
              "CHANNELS": p.channels, "MIN_LOG_N": lo, "MAX_LOG_N": hi, "FIELD": R.FIELD_CODES[p.field],
              "OPS": 1, "COMMIT": 0}
    assert rmap.id_values == expect
    # the words before MIN_LOG_N keep the offsets hosts already read; the range follows STATUS, FIELD last
    names = ["MAGIC", "VERSION", "LANES", "LOG_CORE", "CHANNELS", "STATUS", "MIN_LOG_N", "MAX_LOG_N", "FIELD",
             "OPS", "COMMIT"]
    assert list(R.ID_REGISTERS) == names
    for i, name in enumerate(names):
        assert rmap.id_offset(name) == 0x800 + 4 * i
        reg = rmap.register(name)
        assert reg.offset == 0x800 + 4 * i and reg.access == "ro"
        if name != "STATUS":
            assert reg.reset == expect[name]
    assert rmap.register("STATUS").fields[0].mask == R.STATUS_BAD_SIZE == 1
    assert rmap.register_at(0x800 + 4 * len(names)) is None


def test_supported_sizes_are_the_native_range(rmap):
    lo, hi = _native_range(rmap.params)
    assert rmap.supported_log_n == tuple(range(lo, hi + 1))
    for log_n in (lo, hi, (lo + hi) // 2):
        assert rmap.log_n_supported(log_n)
    for log_n in (0, lo - 1, hi + 1, 1 << 31, (1 << 32) - 1, 256 + lo, (1 << 31) | hi):
        assert not rmap.log_n_supported(log_n), log_n


def test_lookups_and_pointer_split():
    rmap = R.RegisterMap(BuildParams(channels=4, lanes=4, log_core=4))
    assert rmap.arg("hbm_03").offset == 0x30
    assert rmap.register("hbm_03_hi").offset == 0x34
    assert rmap.register_at(0x14) is None          # the pad after log_n's slot
    with pytest.raises(KeyError, match="name"):
        rmap.arg("hbm_04")
    with pytest.raises(KeyError, match="name"):
        rmap.register("nope")
    assert R.RegisterMap.split_pointer(0x1234_5678_9ABC_DEF0) == (0x9ABC_DEF0, 0x1234_5678)
    with pytest.raises(ValueError, match="address"):
        R.RegisterMap.split_pointer(1 << 64)


def test_bad_parameters_are_named():
    with pytest.raises(TypeError, match="params"):
        R.RegisterMap({"lanes": 16})
    with pytest.raises(ValueError, match="channel"):
        R.master_port(100)


def test_status_fields(rmap):
    """STATUS: bad_size bit 0, axi_error bit 1, axi_resp bits 3:2, axi_write bit 4, axi_channel bits 14:8;
    the constants, the BitFields and decode_status agree and no field overlaps another."""
    fields = {f.name: f for f in rmap.register("STATUS").fields}
    assert {n: (f.lsb, f.width) for n, f in fields.items()} == {
        "bad_size": (0, 1), "axi_error": (1, 1), "axi_resp": (2, 2), "axi_write": (4, 1), "axi_channel": (8, 7),
        "bad_batch": (15, 1), "bad_shift": (16, 1), "bad_flags": (17, 1), "bad_lde_pair": (18, 1),
        "bad_align": (19, 1), "bad_op": (20, 1)}
    assert (R.STATUS_BAD_SIZE, R.STATUS_AXI_ERROR, R.STATUS_AXI_RESP_MASK, R.STATUS_AXI_WRITE,
            R.STATUS_AXI_CHANNEL_MASK) == (0x1, 0x2, 0xC, 0x10, 0x7F00)
    assert (R.STATUS_BAD_BATCH, R.STATUS_BAD_SHIFT, R.STATUS_BAD_FLAGS, R.STATUS_BAD_LDE_PAIR, R.STATUS_BAD_ALIGN,
            R.STATUS_BAD_OP) == (1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20)
    masks = [f.mask for f in fields.values()]
    assert sum(masks) == R.STATUS_BAD_SIZE | R.STATUS_AXI_ERROR | R.STATUS_AXI_RESP_MASK | R.STATUS_AXI_WRITE \
        | R.STATUS_AXI_CHANNEL_MASK | R.STATUS_BAD_BATCH | R.STATUS_BAD_SHIFT | R.STATUS_BAD_FLAGS \
        | R.STATUS_BAD_LDE_PAIR | R.STATUS_BAD_ALIGN | R.STATUS_BAD_OP
    assert R.STATUS_REJECTED & R.STATUS_BAD_ALIGN
    assert R.decode_status(R.STATUS_BAD_ALIGN) == {"bad_size": False, "axi_error": False, "bad_align": True}
    assert rmap.params.channels <= 1 << fields["axi_channel"].width
    assert R.decode_status(0) == {"bad_size": False, "axi_error": False}
    assert R.decode_status(0x2 | (3 << 2) | 0x10 | (31 << 8)) == {
        "bad_size": False, "axi_error": True, "axi_resp": 3, "axi_resp_name": "DECERR", "axi_write": True,
        "axi_channel": 31}


def test_check_start_names_every_reason(rmap):
    """The start checks, against the rules written out: size range, 1 <= B <= 2^(2k - n), a coset shift in
    1..p-1, no unknown flag bit; several reasons at once are all reported."""
    p = rmap.params
    lo, hi = p.min_log_n, p.max_log_n
    prime = (1 << 64) - (1 << 32) + 1
    assert rmap.check_start(hi) == 0 and rmap.check_start(lo, batch=1 << (hi - lo)) == 0
    assert rmap.check_start(lo, batch=(1 << (hi - lo)) + 1) == R.STATUS_BAD_BATCH
    assert rmap.check_start(hi, batch=0) == R.STATUS_BAD_BATCH
    assert rmap.check_start(hi, batch=2) == R.STATUS_BAD_BATCH
    assert rmap.check_start(hi + 1) == R.STATUS_BAD_SIZE
    assert rmap.check_start(hi + 1, batch=0) == R.STATUS_BAD_SIZE | R.STATUS_BAD_BATCH
    for g, ok in ((0, False), (1, True), (7, True), (prime - 1, True), (prime, False), ((1 << 64) - 1, False)):
        assert rmap.check_start(hi, R.FLAG_COSET, 1, g) == (0 if ok else R.STATUS_BAD_SHIFT), g
        assert rmap.check_start(hi, R.FLAG_COSET | R.FLAG_INVERSE, 1, g) == (0 if ok else R.STATUS_BAD_SHIFT), g
        assert rmap.check_start(hi, R.FLAG_INVERSE, 1, g) == 0, g          # the shift matters only for a coset
    for bit in range(2, 32):
        assert rmap.check_start(hi, 1 << bit) == R.STATUS_BAD_FLAGS, bit
    assert R.decode_status(R.STATUS_BAD_BATCH | R.STATUS_BAD_SHIFT | R.STATUS_BAD_FLAGS) == {
        "bad_size": False, "axi_error": False, "bad_batch": True, "bad_shift": True, "bad_flags": True}


def test_check_start_refuses_a_base_a_burst_would_cross_a_page_from(rmap):
    """STATUS.bad_align: every hbm_NN base a multiple of the longest DMA burst (8 beats of 32 bytes, written
    out here from the AXI facts: AXI4 bursts must not cross 4 KiB), each base alone misaligned by every
    low bit; without bases the check is not made; it comes with every other reason found."""
    p = rmap.params
    lanes_bytes = p.lanes * p.prime_field.point_bits // 8          # pass 1 writes a unit of L points at once
    assert rmap.base_align == max(8 * 32, lanes_bytes) and 4096 % rmap.base_align == 0
    hi, align = p.max_log_n, rmap.base_align
    good = [ch * (256 << 20) + 3 * 4096 + align for ch in range(p.channels)]
    assert rmap.check_start(hi, bases=good) == 0 and rmap.check_start(hi) == 0
    for ch in range(p.channels):
        for bit in range(align.bit_length() - 1):
            bad = list(good)
            bad[ch] += 1 << bit
            assert rmap.check_start(hi, bases=bad) == R.STATUS_BAD_ALIGN, (ch, bit)
            assert rmap.check_start(hi, batch=0, bases=bad) == R.STATUS_BAD_ALIGN | R.STATUS_BAD_BATCH
        assert rmap.check_start(hi, bases=[b + (4096 if c == ch else 0) for c, b in enumerate(good)]) == 0
    assert R.Run(hi).check(p, good[:-1] + [good[-1] + 32]) == R.STATUS_BAD_ALIGN


def _even_channels(params, log_m, log_n):
    """An independent count: the first 2^log_m points of a 2^log_n-point input, as units, per logical
    channel of HbmLayout's input placement; equal counts and whole rows is what the kernel needs."""
    if params.lanes < 4:
        return False                # no HBM layout (a unit must fill whole beats): no extension at all
    lay = HbmLayout(params, log_n)
    first = np.arange(0, 1 << log_m, params.lanes)
    chans = lay.place("input", first)[0]
    counts = np.bincount(chans // 2, minlength=lay.group)
    return counts.min() == counts.max() and log_m >= log_n // 2


def test_check_start_lde_arguments(rmap):
    """input_log_m (zero-extended input) and chain_log_n (output written as a larger run's input): 0 is
    off; otherwise the pair of sizes must be native, whole rows and spread evenly over the channels, and
    a chained batch must fit the buffers of the larger size."""
    p = rmap.params
    lo, hi = p.min_log_n, p.max_log_n
    for n in range(lo, hi + 1):
        assert rmap.check_start(n, input_log_m=0, chain_log_n=0) == 0
        for m in range(0, 32):
            even = lo <= m <= n and _even_channels(p, m, n)
            assert rmap.check_start(n, input_log_m=m) == (0 if m == 0 or even else R.STATUS_BAD_LDE_PAIR), (n, m)
            assert rmap.check_start(m, chain_log_n=n) == (0 if even else (
                R.STATUS_BAD_SIZE if not lo <= m <= hi else R.STATUS_BAD_LDE_PAIR)), (m, n)
    # blowup 2 is always placeable; a chained batch must fit 2^hi points
    if p.lanes < 4:
        return
    assert rmap.check_start(hi - 1, chain_log_n=hi) == 0
    assert rmap.check_start(hi - 1, batch=2, chain_log_n=hi) == R.STATUS_BAD_LDE_PAIR
    assert rmap.check_start(lo, batch=1 << (hi - lo - 1), chain_log_n=lo + 1) == 0
    assert rmap.check_start(hi, chain_log_n=hi + 1) == R.STATUS_BAD_LDE_PAIR
    assert R.decode_status(R.STATUS_BAD_LDE_PAIR)["bad_lde_pair"] is True


def test_the_documented_register_table_is_the_register_map():
    """docs/build.md's register table is what scripts/regmap_doc.py writes from this module (rerun
    `make diagrams` after a change), and it names every register of the default build."""
    from pathlib import Path
    from nantucket.tools import regmap_doc as doc
    repo = Path(__file__).resolve().parent.parent
    text = (repo / "docs" / "build.md").read_text()
    assert doc.section() in text
    rmap = R.RegisterMap(DEFAULT)
    table = doc.section()
    for reg in rmap.registers:
        if not reg.name.startswith("hbm_"):
            assert f"| 0x{reg.offset:03X} | {reg.name} |" in table, reg.name
    assert f"| 0x{rmap.id_offset('VERSION'):03X} | VERSION | ro | {R.VERSION:#x} |" in table


def test_ops_and_commit_identification():
    """OPS has bit c for every operation code the build carries (the NTT, code 0, always); COMMIT bit c for
    every scheme of BuildParams.commit by its never-reused code, which every scheme of the model has."""
    from nantucket.hw.model.commit import SCHEME_NAMES
    assert set(R.SCHEME_CODES) == set(SCHEME_NAMES) and len(set(R.SCHEME_CODES.values())) == len(SCHEME_NAMES)
    assert R.RegisterMap(BuildParams()).id_values["OPS"] == 1 << 0
    baby = BuildParams(field="babybear", commit=("plonky3-babybear-24", "plonky3-babybear-16"))
    assert R.RegisterMap(baby).id_values["COMMIT"] == 0b11
    assert baby.tag() == "L16_k12_C32_babybear_plonky3-babybear-24+plonky3-babybear-16"
    assert BuildParams(field="babybear", commit="plonky3-babybear-16").commit == ("plonky3-babybear-16",)
    assert R.decode_status(R.STATUS_BAD_OP) == {"bad_size": False, "axi_error": False, "bad_op": True}
    with pytest.raises(ValueError, match="koalabear"):
        BuildParams(field="babybear", commit="plonky3-koalabear-16")
    with pytest.raises(ValueError, match="unknown scheme"):
        BuildParams(commit="plonky9")
    with pytest.raises(TypeError, match="commit"):
        BuildParams(commit=5)
