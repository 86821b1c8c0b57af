"""nantucket.host: point files, device backends, the library API and the CLI (the repository's host/ folder)."""

# pyproject.toml installs this folder as nantucket.host only. Imported as a top-level `host` (a checkout
# on sys.path), its modules would load a second time beside nantucket.host's, with distinct classes.
if __name__ != "nantucket.host":
    raise ImportError(f"import nantucket.host, not {__name__}: the host/ folder is installed as nantucket.host "
                      "(pip install -e . or make setup)")
