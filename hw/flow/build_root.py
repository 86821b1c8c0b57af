"""Where nantucket writes what it builds (simulator builds, lint files, Vitis outputs): :func:`build_base`.

- ``NANTUCKET_BUILD_DIR``, when set and not empty: that folder;
- in a source checkout (the package's folders sit beside the repository's pyproject.toml: an editable
  install, or Python run in the repository): ``<repository>/build``, where the Makefile and the tests
  look for it;
- otherwise (installed from a wheel: the package lives in site-packages, which is no place for build
  outputs and may be read-only): the per-user cache, ``$XDG_CACHE_HOME/nantucket``, or
  ``~/.cache/nantucket`` when XDG_CACHE_HOME is unset or not absolute (the XDG base directory rule).

:func:`cache_base` is where builds shared by every checkout of this user live (the Verilator models, keyed
by a digest of their Verilog and recipe): ``NANTUCKET_CACHE_DIR`` when set and not empty, else the same
per-user folder, ``$XDG_CACHE_HOME/nantucket`` or ``~/.cache/nantucket``. ``make clean`` leaves it alone.

:func:`writable_build_base` is the build folder after checking that this process can write there
(:class:`BuildDirUnwritable` otherwise, a ValueError naming the folder and why).

Standard library only: the host backends import this without loading the HDL.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path
from typing import Mapping

__all__ = ["BUILD_DIR_ENV", "CACHE_DIR_ENV", "PACKAGE_PARENT", "checkout_root", "build_base", "cache_base",
           "writable_build_base", "BuildDirUnwritable"]

#: Environment variable naming the build folder (the one that holds sim/, lint/, hw/, hw_emu/ ...).
BUILD_DIR_ENV = "NANTUCKET_BUILD_DIR"
#: Environment variable naming the per-user cache folder (the one that holds verilator/<digest>).
CACHE_DIR_ENV = "NANTUCKET_CACHE_DIR"
#: The folder holding hw/, host/ and sim/: the repository in a checkout, site-packages/nantucket installed.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]


def checkout_root(package_parent: Path = PACKAGE_PARENT) -> Path | None:
    """``package_parent`` when it is the nantucket repository (its pyproject.toml names the project
    nantucket), else None. A wheel carries no pyproject.toml, so an installed package is never taken
    for a checkout, whatever its site-packages folder is called."""
    try:
        project = tomllib.loads((package_parent / "pyproject.toml").read_text()).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return package_parent if project.get("name") == "nantucket" else None


def build_base(environ: Mapping[str, str] | None = None, package_parent: Path = PACKAGE_PARENT) -> Path:
    """The build folder (absolute), chosen as the module docstring says."""
    env = os.environ if environ is None else environ
    if env.get(BUILD_DIR_ENV):
        return Path(env[BUILD_DIR_ENV]).expanduser().resolve()
    repo = checkout_root(package_parent)
    if repo is not None:
        return repo / "build"
    return _user_cache(env)


def cache_base(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user cache folder (absolute), chosen as the module docstring says."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_DIR_ENV):
        return Path(env[CACHE_DIR_ENV]).expanduser().resolve()
    return _user_cache(env)


def _user_cache(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/nantucket``, or ``~/.cache/nantucket`` when XDG_CACHE_HOME is unset or relative."""
    cache = env.get("XDG_CACHE_HOME", "")
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return (Path(cache) if os.path.isabs(cache) else home / ".cache") / "nantucket"


class BuildDirUnwritable(ValueError):
    """The build folder cannot be created or written (a setting to change, not a device fault)."""


def writable_build_base(environ: Mapping[str, str] | None = None,
                        package_parent: Path = PACKAGE_PARENT) -> Path:
    """:func:`build_base`, created if missing, after writing and removing a probe file in it; raises
    BuildDirUnwritable naming the folder (and NANTUCKET_BUILD_DIR when that chose it) and the reason."""
    env = os.environ if environ is None else environ
    base = build_base(env, package_parent)
    try:
        base.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=base, prefix=".nantucket-probe-"):
            pass
    except OSError as e:
        why = e.strerror or str(e)
        if env.get(BUILD_DIR_ENV):
            raise BuildDirUnwritable(f"{BUILD_DIR_ENV}={env[BUILD_DIR_ENV]}: cannot write the build folder "
                                     f"{base} ({why}); point {BUILD_DIR_ENV} at a writable folder") from e
        raise BuildDirUnwritable(f"build folder {base}: cannot write there ({why}); set {BUILD_DIR_ENV} to "
                                 "a writable folder") from e
    return base
