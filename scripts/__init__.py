"""nantucket.tools: what the Makefile calls that is not a library (benchmarks, reports, pictures, the Vitis
driver), each run as ``python -m nantucket.tools.NAME`` (the repository's scripts/ folder).

The tools that write into the checkout's docs/ (docs/performance.md, docs/build.md, docs/coverage.md,
docs/img/) find it through :func:`nantucket.tools.perfdoc.checkout`; installed without a checkout (a
wheel), they print what they would have written instead (docs/build.md, "The tools").
"""

# pyproject.toml installs this folder as nantucket.tools only. Imported as a top-level `scripts` (a
# checkout on sys.path), its modules would load a second time beside nantucket.tools', with distinct state.
if __name__ != "nantucket.tools":
    raise ImportError(f"import nantucket.tools, not {__name__}: the scripts/ folder is installed as nantucket.tools "
                      "(pip install -e . or make setup)")
