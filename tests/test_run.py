"""The run descriptor (hw.model.run.Run): the argument words of a start and back, what a caller means
(inverse, coset) as flag bits, the register order the register map builds from it, and its refusals; and
its gateware struct's bits (hw.run)."""

import dataclasses
import random

import pytest

from nantucket.hw.model import regmap as R
from nantucket.hw.model.layout import lde_pair_supported
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import FLAG_COSET, FLAG_INVERSE, SCALAR_ARGS, Run
from nantucket.hw.run import run_bits, run_fields, run_layout

P = 2**64 - 2**32 + 1


def test_words_round_trip():
    rng = random.Random(3)
    for _ in range(500):
        run = Run(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(64),
                  rng.getrandbits(32), rng.getrandbits(32))
        words = run.words()
        assert all(0 <= w < 2**32 for w in words.values())
        assert words["coset_shift_lo"] + (words["coset_shift_hi"] << 32) == run.coset_shift
        assert Run.from_words(words) == run


def test_of_sets_the_flags_a_caller_means():
    assert Run.of(10) == Run(10, 0, 1, 0, 0, 0)
    assert Run.of(10, inverse=True).flags == FLAG_INVERSE
    run = Run.of(12, inverse=True, coset=7, batch=4, input_log_m=10, chain_log_n=14)
    assert run.flags == FLAG_INVERSE | FLAG_COSET and run.coset == 7 and run.inverse
    assert (run.batch, run.input_log_m, run.chain_log_n, run.coset_shift) == (4, 10, 14, 7)
    assert Run(12, FLAG_INVERSE, coset_shift=9).coset is None       # a shift without the flag is no coset


def test_the_register_map_places_the_run_words_as_vitis_hls_would():
    """log_n at 0x10, the C pointers from 0x18, then the run's words in SCALAR_ARGS order in 8-byte slots
    from 0x18 + 8C (the layout written out in the register map's table), with their reset values."""
    for channels in (2, 4, 32):
        rmap = R.RegisterMap(BuildParams(lanes=4, log_core=6, channels=channels))
        scalars = [a for a in rmap.scalar_args if a.name != "log_n"]
        assert [a.name for a in scalars] == [name for name, _ in SCALAR_ARGS]
        assert [a.offset for a in scalars] == [0x18 + 8 * channels + 8 * i for i in range(len(SCALAR_ARGS))]
        assert rmap.arg("log_n").offset == 0x10 and rmap.arg("batch").reset == 1
        assert set(Run.of(8).words()) == {a.name for a in rmap.scalar_args}


@pytest.mark.parametrize("field, value", [("log_n", -1), ("flags", 2**32), ("batch", True), ("input_log_m", 1.0),
                                          ("coset_shift", 2**64), ("chain_log_n", "8")])
def test_refuses_values_no_register_holds(field, value):
    with pytest.raises(ValueError, match=field):
        Run(**{"log_n": 8, field: value})
    with pytest.raises(KeyError, match="batch"):
        Run.from_words({k: v for k, v in Run.of(8).words().items() if k != "batch"})


def test_check_matches_the_rules_for_a_small_build():
    """Refusals against the rules written out (the register map's own test covers every size pair)."""
    p = BuildParams(lanes=4, log_core=4, channels=4)
    lo, hi = p.min_log_n, p.max_log_n
    assert Run.of(hi).check(p) == 0 and Run.of(lo, batch=1 << (hi - lo), coset=P - 1).check(p) == 0
    assert Run.of(hi + 1).check(p) == R.STATUS_BAD_SIZE
    assert Run.of(hi, batch=0, coset=P).check(p) == R.STATUS_BAD_BATCH | R.STATUS_BAD_SHIFT
    assert Run(hi, flags=4).check(p) == R.STATUS_BAD_FLAGS
    assert Run.of(hi - 1, chain_log_n=hi, batch=2).check(p) == R.STATUS_BAD_LDE_PAIR


def test_run_struct_bits_of_accepted_runs():
    """hw.run.run_bits packs an accepted run as the control slave decodes it (flags apart, an input of all
    2^log_n points as 0), each field at the offset and width hw.run.run_layout gives; run_fields reads it
    back."""
    p = BuildParams(lanes=4, log_core=4, channels=4)
    widths = {name: field.width for name, field in run_layout(p)}
    assert widths == {"log_n": p.max_log_n.bit_length(), "inverse": 1, "coset": 1,
                      "batch": (1 << (p.max_log_n - p.min_log_n)).bit_length(), "coset_shift": 64,
                      "input_log_m": p.max_log_n.bit_length(), "chain_log_n": p.max_log_n.bit_length(),
                      "row_step": 64, "op": 1}
    rng = random.Random(5)
    sizes = range(p.min_log_n, p.max_log_n + 1)
    for _ in range(300):
        n = rng.choice(sizes)
        log_m = rng.choice([0] + [m for m in sizes if lde_pair_supported(p, m, n)])
        t = rng.choice([0] + [t for t in sizes if lde_pair_supported(p, n, t)])
        batch = rng.randint(1, 1 << (p.max_log_n - max(n, t)))
        inverse, coset = rng.random() < 0.5, rng.choice([None, rng.randint(1, P - 1)])
        step = rng.choice([0, 1, rng.randint(2, P - 1)]) if coset is not None else rng.choice([0, 1])
        run = Run.of(n, inverse=inverse, coset=coset, batch=batch, input_log_m=log_m, chain_log_n=t, row_step=step)
        want = {"log_n": n, "inverse": int(inverse), "coset": int(coset is not None), "batch": batch,
                "coset_shift": coset or 0, "input_log_m": 0 if log_m == n else log_m, "chain_log_n": t,
                "row_step": step if step > 1 else 0, "op": 0}
        bits = run_bits(p, run)
        assert run_fields(p, bits) == want
        # the packing, independently: each field at the running offset, in layout order
        packed, offset = 0, 0
        for name in ("log_n", "inverse", "coset", "batch", "coset_shift", "input_log_m", "chain_log_n", "row_step", "op"):
            packed |= want[name] << offset
            offset += widths[name]
        assert bits == packed


def test_run_struct_bits_refuse_what_the_kernel_refuses():
    p = BuildParams(lanes=4, log_core=4, channels=4)
    for run in (Run(p.max_log_n + 1), Run(p.min_log_n, batch=0), Run(p.min_log_n, flags=4),
                Run.of(p.min_log_n, coset=P)):
        with pytest.raises(ValueError, match="refused"):
            run_bits(p, run)
    with pytest.raises(TypeError, match="run"):
        run_bits(p, {"log_n": p.min_log_n})
    with pytest.raises(TypeError, match="params"):
        run_bits(None, Run(p.min_log_n))
    with pytest.raises(ValueError, match="bits"):
        run_fields(p, -1)


def test_run_arguments_come_from_one_table():
    """Every use of a run's arguments is derived from RUN_ARGS: Run's fields and defaults, the register
    words and their order, the docs, the struct's fields (each row's own), and the ops a row belongs to."""
    from nantucket.hw.model.run import ARG_DOCS, RUN_ARGS
    assert [f.name for f in dataclasses.fields(Run)] == [a.name for a in RUN_ARGS]
    assert [name for name, _ in SCALAR_ARGS] == [w for a in RUN_ARGS[1:] for w in a.words]
    assert Run(8) == Run(8, **{a.name: a.reset for a in RUN_ARGS[1:]})
    assert {w for a in RUN_ARGS for w in a.words} | {"status"} == set(ARG_DOCS)
    p = BuildParams(lanes=4, log_core=4, channels=4)
    assert [name for name, _ in run_layout(p)] == [f for a in RUN_ARGS for f in a.struct_fields(p)]
    for a in RUN_ARGS:          # a 64-bit argument round-trips through its two words
        if a.bits == 64:
            value = (0x1234_5678 << 32) | 0x9ABC_DEF0
            assert Run.from_words(dict(Run(8).words(), **{a.words[0]: value & 0xFFFF_FFFF,
                                                          a.words[1]: value >> 32})) == Run(8, **{a.name: value})
    with pytest.raises(ValueError, match="op: expected a 32-bit"):
        Run(8, op=1 << 32)


def test_op_refusals(monkeypatch):
    """An op no operation has, or one the build does not carry, is STATUS.bad_op (and only the op's own
    rows are checked: an unknown op is refused for its op, whatever the other arguments); an argument
    foreign to the run's op that is not at its reset value is bad_op too."""
    from nantucket.hw.model import ops, run as run_module
    p = BuildParams(lanes=4, log_core=4, channels=4)
    assert ops.carried_codes(p) == (ops.OP_NTT,) and ops.ops_mask(p) == 1
    assert Run.of(8).op == ops.OP_NTT == 0 and Run.of(8).check(p) == 0
    for op in (1, 2, 31, 1 << 31):
        assert Run(8, op=op).check(p) == R.STATUS_BAD_OP
    assert Run(99, op=5).check(p) == R.STATUS_BAD_OP | R.STATUS_BAD_SIZE
    # an operation that takes none of the NTT's arguments: a run with any of them off reset is refused
    other = ops.Operation("other", 0, "a test operation", (), None, None, lambda params: True)
    monkeypatch.setattr(run_module, "operation", lambda code: other)
    run = Run.of(8, batch=2, coset=3)
    assert run.foreign_args() == ("log_n", "flags", "batch", "coset_shift")
    assert run.check(p) & R.STATUS_BAD_OP
    assert Run(0).foreign_args() == ()
