"""The package list for pyproject.toml's package-dir mapping: nantucket, and every package under the
folders hw/, host/, sim/ and scripts/ under its installed name (hw/model -> nantucket.hw.model,
scripts -> nantucket.tools)."""

from setuptools import find_packages, setup

#: folder -> the package it installs as (pyproject.toml's package-dir says the same)
FOLDERS = {"hw": "nantucket.hw", "host": "nantucket.host", "sim": "nantucket.sim", "scripts": "nantucket.tools"}

setup(packages=["nantucket"] + [".".join([FOLDERS[name.split(".")[0]], *name.split(".")[1:]])
                                for name in find_packages(include=[f"{f}*" for f in FOLDERS])
                                if name.split(".")[0] in FOLDERS])
