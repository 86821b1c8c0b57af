"""The register conformance sequence (sim/regmap_conformance.py) that the control slave's cocotb bench runs:
it passes on the reference decoder and catches the mistakes a hand-written decoder makes."""

import pytest

from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.sim.kernel_model import HbmModel, KernelModel
from nantucket.sim.regmap_conformance import check_conformance_sync, conformance_sequence

PARAMS = BuildParams(lanes=4, log_core=4, channels=8)


def _dut(cls=KernelModel, params=PARAMS, **kw):
    return cls(params, HbmModel(1), layout=None, hang=True, **kw)


def test_sequence_covers_every_register_and_never_starts():
    seq = conformance_sequence(PARAMS)
    rmap = R.RegisterMap(PARAMS)
    read = {a.offset for a in seq if a.op == "r"}
    assert {r.offset for r in rmap.registers} <= read
    assert not any(a.op == "w" and a.offset == R.CTRL for a in seq)
    words = [a.value for a in seq if a.op == "w" and rmap.register_at(a.offset) is not None
             and a.offset < R.ID_BASE and a.offset >= R.ARGS_BASE]
    assert len(set(words)) == len(words)                 # distinct, so aliasing shows


def test_sequence_reads_the_size_range():
    """The ID block's MIN_LOG_N / MAX_LOG_N words are read (so a decoder missing them fails), and the
    word after them is checked to read 0."""
    rmap = R.RegisterMap(PARAMS)
    read = {a.offset for a in conformance_sequence(PARAMS) if a.op == "r"}
    assert {rmap.id_offset("MIN_LOG_N"), rmap.id_offset("MAX_LOG_N"), rmap.id_offset("MAX_LOG_N") + 4} <= read


def test_reference_decoder_conforms():
    dut = _dut()
    assert check_conformance_sync(dut.read, dut.write, PARAMS) == []


class _AliasedHiWord(KernelModel):
    """A decoder that ignores address bit 2 in the argument range (hi word aliases lo word)."""
    def _fold(self, o):
        return o & ~4 if R.POINTER_BASE <= o < R.ID_BASE else o

    def read(self, o):
        return super().read(self._fold(o))

    def write(self, o, v):
        super().write(self._fold(o), v)


class _WideGier(KernelModel):
    def write(self, o, v):
        super().write(o, v)
        if o == R.GIER:
            self._gier = v                                # stores all 32 bits


@pytest.mark.parametrize("broken, expect", [
    (lambda: _dut(id_overrides={"LANES": 16}), "LANES"),
    (lambda: _dut(id_overrides={"MIN_LOG_N": PARAMS.max_log_n}), "MIN_LOG_N"),
    (lambda: _dut(id_overrides={"MAX_LOG_N": 0}), "MAX_LOG_N"),
    (lambda: _dut(params=BuildParams(lanes=4, log_core=4, channels=4)), "argument word"),
    (lambda: _dut(_AliasedHiWord), "argument word"),
    (lambda: _dut(_WideGier), "GIER"),
], ids=["wrong-id", "wrong-min-log-n", "wrong-max-log-n", "too-few-channels", "aliased-hi-word", "wide-gier"])
def test_broken_decoders_are_caught(broken, expect):
    dut = broken()
    problems = check_conformance_sync(dut.read, dut.write, PARAMS)
    assert problems and any(expect in p for p in problems)
