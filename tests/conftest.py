"""Suite-wide pytest hooks: the environment the tests run in, and the order the test files run in.

Environment: importing a test module must not change how the rest of the suite builds. The long-run
tools set ``NANTUCKET_SIM_OPT=-O2`` (compile the models for speed) in their ``main()``; a tool that set it
at import once made every xdist worker, which imports every test module while collecting, compile every
Verilator model of the suite at -O2 (twice the build time of -O0, the runner's default for short bench
runs). Whatever collection changes in ``os.environ`` is put back before the first test, so a module that
sets a default at import again costs nothing.

`make test` runs two xdist workers with ``--dist loadfile --no-loadscope-reorder``: each file stays on one
worker (its module fixtures, a simulated card among them, start once), and the workers take the files in
collection order. Collected in name order, the files that take minutes (kernel builds and runs) would
come last and leave one worker running them alone at the end; here the files are sorted by their cost,
the longest first (longest-processing-time-first scheduling), so the two workers finish together.

``FILE_SECONDS`` is each file's time in a cold `make test` on the 2-core machine (Verilator builds
included; a build shared by several files is counted in the file that usually builds it), from
``--durations`` of measured runs (2026-12-02). A file missing from the table counts as ``DEFAULT_SECONDS``; refresh
the entries when a file's cost changes by minutes. The order changes no result, only the wall time.
"""

from __future__ import annotations

import os

import pytest

#: Seconds per test file in a cold `make test` (see the module docstring).
FILE_SECONDS: dict[str, float] = {
    "test_engine.py": 400, "test_kernel_faults.py": 220, "test_vitis.py": 220, "test_dma.py": 220,
    "test_kernel.py": 200, "test_control.py": 180, "test_kernel_fields.py": 150, "test_butterfly.py": 150,
    "test_twiddles.py": 150, "test_kernel_fields31.py": 150, "test_control_checks.py": 110,
    "test_lane.py": 120, "test_api_shapes.py": 120, "test_crossings.py": 110, "test_runner.py": 100,
    "test_arith.py": 80, "test_async_fifo.py": 80, "test_coset.py": 90, "test_axi_faults.py": 80,
    "test_sizes_rtl.py": 60, "test_large.py": 60, "test_api_hardening.py": 60, "test_cli_rtl.py": 50,
    "test_kernel_rtl.py": 50, "test_shared.py": 45, "test_runner_cache.py": 45, "test_record_writer.py": 45,
    "test_api.py": 40, "test_api_lde.py": 25, "test_timing_estimate.py": 5, "test_permutation_engine.py": 90,
    "test_warm_start.py": 40, "test_formal.py": 150, "test_commit_blocks.py": 90,
    "test_projection_report.py": 40, "test_cycle_projection.py": 30, "test_execute.py": 30,
    "test_commit_device.py": 30, "test_cli_commit.py": 15, "test_dma_clock_ratio.py": 15,
}
#: What a file not in the table is taken to cost.
DEFAULT_SECONDS = 5.0

#: os.environ as it was before collection.
_ENV_BEFORE = pytest.StashKey[dict]()


def pytest_configure(config):
    config.stash[_ENV_BEFORE] = dict(os.environ)


def pytest_collection_finish(session):
    """Undo what importing the test modules did to the environment (see the module docstring)."""
    before = session.config.stash.get(_ENV_BEFORE, None)
    if before is None:
        return
    for name in set(os.environ) - set(before):
        del os.environ[name]
    for name, value in before.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def file_cost(path: str) -> float:
    """The table's seconds for a test file given by its node id's path (``tests/test_x.py``)."""
    return FILE_SECONDS.get(path.rsplit("/", 1)[-1], DEFAULT_SECONDS)


def pytest_collection_modifyitems(session, config, items):
    """The longest files first, each file's tests in their own order (a stable sort: the order is the
    same on every xdist worker, which the scheduler requires)."""
    order = {}
    for item in items:
        order.setdefault(item.nodeid.split("::", 1)[0], len(order))
    items.sort(key=lambda item: (-file_cost(item.nodeid.split("::", 1)[0]), order[item.nodeid.split("::", 1)[0]]))
