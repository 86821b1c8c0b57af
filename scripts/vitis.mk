# Vitis targets, included by the top-level Makefile (owner: build/host engineer, issue 8).
#
#   make build TARGET=hw|hw_emu [PLATFORM=...] [LANES=16 LOG_CORE=12 CHANNELS=32]
#       generated inputs -> build/$(TARGET)/, then vivado package_xo, v++ --link (and emconfigutil
#       for hw_emu) -> build/$(TARGET)/nantucket.xclbin. Stops with one line if a tool is missing.
#   make build-inputs TARGET=...   only the generated inputs (no Xilinx tool needed)
#   make clean-build TARGET=...    remove build/$(TARGET)
#
# See docs/build.md.

TARGET ?= hw
PLATFORM ?= xilinx_u55n_gen3x4_xdma_2_202110_1
LANES ?= 16
LOG_CORE ?= 12
CHANNELS ?= 32
VITIS_PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
VITIS_FLAGS = --target $(TARGET) --platform $(PLATFORM) --lanes $(LANES) --log-core $(LOG_CORE) \
              --channels $(CHANNELS)

.PHONY: build build-inputs clean-build

build:
	$(VITIS_PYTHON) scripts/vitis_build.py $(VITIS_FLAGS)

build-inputs:
	$(VITIS_PYTHON) scripts/vitis_build.py $(VITIS_FLAGS) --inputs-only

clean-build:
	rm -rf build/$(TARGET)
