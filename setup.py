"""The package list for pyproject.toml's package-dir mapping: nantucket, and every package under the
folders hw/, host/ and sim/ under its installed name (hw/model -> nantucket.hw.model)."""

from setuptools import find_packages, setup

FOLDERS = ("hw", "host", "sim")

setup(packages=["nantucket"] + [f"nantucket.{name}" for name in find_packages(include=[f"{f}*" for f in FOLDERS])
                                if name.split(".")[0] in FOLDERS])
