"""The kernel register map (hw/model/regmap.py) against the contract pinned in shared/DESIGN.md."""

import pytest

from hw.model import regmap as R
from hw.model.params import BuildParams

PARAMS = [BuildParams(), BuildParams(lanes=4, log_core=6, channels=8), BuildParams(lanes=2, log_core=3, channels=2)]


@pytest.fixture(params=PARAMS, ids=lambda p: p.tag())
def rmap(request):
    return R.RegisterMap(request.param)


def test_control_block_offsets_and_bits():
    # Values written out here are the pinned contract of DESIGN.md, not read back from the module.
    assert (R.CTRL, R.GIER, R.IP_IER, R.IP_ISR) == (0x00, 0x04, 0x08, 0x0C)
    assert (R.CTRL_AP_START, R.CTRL_AP_DONE, R.CTRL_AP_IDLE, R.CTRL_AP_READY) == (1, 2, 4, 8)
    assert R.ADDRESS_RANGE == 0x1000 and R.ID_BASE == 0x800
    assert R.MAGIC.to_bytes(4, "big") == b"NTKT"


def test_arguments_follow_the_pinned_layout(rmap):
    c = rmap.params.channels
    assert len(rmap.args) == 1 + c
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


def test_identification_block(rmap):
    p = rmap.params
    expect = {"MAGIC": 0x4E544B54, "VERSION": R.VERSION, "LANES": p.lanes, "LOG_CORE": p.log_core,
              "CHANNELS": p.channels}
    assert rmap.id_values == expect
    for i, name in enumerate(["MAGIC", "VERSION", "LANES", "LOG_CORE", "CHANNELS", "STATUS"]):
        assert rmap.id_offset(name) == 0x800 + 4 * i
        reg = rmap.register(name)
        assert reg.offset == 0x800 + 4 * i and reg.access == "ro"
        if name != "STATUS":
            assert reg.reset == expect[name]
    assert rmap.register("STATUS").fields[0].mask == R.STATUS_BAD_SIZE == 1


def test_supported_sizes_are_the_native_transform(rmap):
    assert rmap.supported_log_n == (2 * rmap.params.log_core,)


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
