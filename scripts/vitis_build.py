#!/usr/bin/env python3
"""Vitis build driver called by scripts/vitis.mk (`make build`, `make build-inputs`).

Writes every generated input (kernel Verilog, kernel.xml, package_xo.tcl, connectivity.cfg, build.sh)
to build/<target>/, then runs vivado (package_xo), v++ --link and, for hw_emu, emconfigutil. Stops
with one line when a tool or the platform is missing. All the logic lives in hw/flow/vitis.py.
"""

import sys

from nantucket.hw.flow.vitis import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
