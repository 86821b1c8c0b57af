"""The coset rule, 0 < g < p (hw.model.run.coset_shift_ok, its one statement), at its edges 0, 1, p - 1
and p in every field, and through every caller with the error each gives: the kernel's refusal
(Run.check: STATUS.bad_shift), the host's transform plan (ValueError naming ``coset``), the library's
argument check (ValueError naming the argument; TypeError for a non-int), and the command line's
(UsageError naming --coset for the build's field; argparse's type error against the largest p).

The expected verdicts are written out here from the rule's statement (a nonzero element below p), not
taken from the code under test."""

import argparse

import pytest

from nantucket.host.api import checks as C
from nantucket.host.cli_args import UsageError, check_coset, coset_arg
from nantucket.host.kernel_plan import plan_transform
from nantucket.hw.model import field as F
from nantucket.hw.model.field import GOLDILOCKS
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.run import FLAG_COSET, STATUS_BAD_SHIFT, Run, coset_shift_ok

FIELDS = sorted(F.FIELDS)


def _edges(p: int) -> list[tuple[int, bool]]:
    """(g, whether it is a coset shift of the field of modulus p) at the rule's edges."""
    return [(0, False), (1, True), (p - 1, True), (p, False), (p + 1, False)]


@pytest.mark.parametrize("name", FIELDS)
def test_the_rule_at_its_edges(name):
    p = F.FIELDS[name].p
    for g, ok in _edges(p):
        assert coset_shift_ok(g, p) is ok, (name, g)


@pytest.mark.parametrize("name", FIELDS)
def test_the_kernel_refuses_a_shift_outside_the_rule(name):
    params = BuildParams(lanes=4, log_core=4, channels=4, field=name)
    p = params.prime_field.p
    for g, ok in _edges(p):
        bad = Run(params.min_log_n, FLAG_COSET, 1, g).check(params)
        assert bad == (0 if ok else STATUS_BAD_SHIFT), (name, g)
        # without the coset flag the shift register is not looked at
        assert Run(params.min_log_n, 0, 1, g).check(params) == 0


@pytest.mark.parametrize("name", FIELDS)
def test_the_plan_names_the_coset(name):
    field = F.FIELDS[name]
    for g, ok in _edges(field.p):
        if ok:
            assert plan_transform(16, 4, False, g, "nn", field=field).coset == g
        else:
            with pytest.raises(ValueError, match=rf"^coset: the shift must satisfy 0 < g < p \(the {name} modulus "
                                                 rf"p = {field.p}\), got {g}$"):
                plan_transform(16, 4, False, g, "nn", field=field)


@pytest.mark.parametrize("name", FIELDS)
def test_the_library_names_its_argument(name):
    field = F.FIELDS[name]
    for g, ok in _edges(field.p):
        for arg in ("coset", "shift"):
            if ok:
                assert C.check_shift(g, arg, field) == g
            else:
                with pytest.raises(ValueError, match=rf"^{arg}: the shift must satisfy 0 < g < p \(the {name} "
                                                     rf"modulus p = {field.p}\), got {g}$"):
                    C.check_shift(g, arg, field)
    with pytest.raises(TypeError, match="^coset: expected an int shift"):
        C.check_shift(1.0, "coset", field)


@pytest.mark.parametrize("name", FIELDS)
def test_the_command_line_names_coset(name):
    field = F.FIELDS[name]
    for g, ok in _edges(field.p):
        if ok:
            check_coset(g, field)
        else:
            with pytest.raises(UsageError, match=rf"^--coset: the shift must satisfy 0 < g < p = {field.p} "
                                                 rf"\({name}\), got {g}$"):
                check_coset(g, field)
    check_coset(None, field)                  # no --coset


def test_the_command_line_type_takes_the_largest_field():
    p = GOLDILOCKS.p
    assert max(f.p for f in F.FIELDS.values()) == p
    for g, ok in _edges(p):
        for text in (str(g), hex(g)):
            if ok:
                assert coset_arg(text) == g
            else:
                with pytest.raises(argparse.ArgumentTypeError, match=rf"^the shift must satisfy 0 < g < p = "
                                                                     rf"2\^64 - 2\^32 \+ 1, got {text}$"):
                    coset_arg(text)
