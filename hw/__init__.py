"""nantucket.hw: the Amaranth gateware and, in model/, its golden model (the repository's hw/ folder)."""

# pyproject.toml installs this folder as nantucket.hw only. Imported as a top-level `hw` (a checkout
# on sys.path), its modules would load a second time beside nantucket.hw's, with distinct classes.
if __name__ != "nantucket.hw":
    raise ImportError(f"import nantucket.hw, not {__name__}: the hw/ folder is installed as nantucket.hw "
                      "(pip install -e . or make setup)")
