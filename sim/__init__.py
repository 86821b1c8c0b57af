"""nantucket.sim: the simulated card: Verilator builds, HBM models, cocotb benches (the repository's sim/ folder)."""

# pyproject.toml installs this folder as nantucket.sim only. Imported as a top-level `sim` (a checkout
# on sys.path), its modules would load a second time beside nantucket.sim's, with distinct classes.
if __name__ != "nantucket.sim":
    raise ImportError(f"import nantucket.sim, not {__name__}: the sim/ folder is installed as nantucket.sim "
                      "(pip install -e . or make setup)")
