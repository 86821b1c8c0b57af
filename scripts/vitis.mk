# Vitis targets, included by the top-level Makefile. See docs/build.md.
#
#   make build TARGET=hw|hw_emu [PLATFORM=...] [FIELD=goldilocks] [LANES= LOG_CORE=12 CHANNELS=32]
#              (LANES defaults to the field's default build's: 16, or 32 in a 31-bit field)
#              [VITIS_FLAGS="extra v++ --link flags"] [VITIS_CFG="extra.cfg ..."] [SLR_PLAN=1] [PROFILE=1]
#       generated inputs -> $(VITIS_OUT) (build/$(TARGET)), then vivado package_xo, v++ --link (and
#       emconfigutil for hw_emu) -> $(VITIS_OUT)/nantucket.xclbin. Stops with one line if a tool is missing.
#   make build-inputs ...      only the generated inputs (no Xilinx tool needed)
#   make run TARGET=hw|hw_emu  the host on that xclbin (top-level Makefile; XCL_EMULATION_MODE for hw_emu)
#   make clean-build TARGET=.. remove $(VITIS_OUT); make clean-xclbin removes build/hw and build/hw_emu

TARGET ?= hw
PLATFORM ?= xilinx_u55n_gen3x4_xdma_2_202110_1
LANES ?=
LOG_CORE ?= 12
CHANNELS ?= 32
VITIS_FLAGS ?=
VITIS_CFG ?=
SLR_PLAN ?=
PROFILE ?=
VITIS_OUT ?= $(BUILD)/$(TARGET)
VITIS_PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
# The driver's arguments; VITIS_FLAGS (the user's v++ flags) travel inside one quoted argument.
VITIS_BUILD_ARGS = --target $(TARGET) --platform $(PLATFORM) --field $(FIELD) $(if $(LANES),--lanes $(LANES)) --log-core $(LOG_CORE) \
    --channels $(CHANNELS) --out-dir $(VITIS_OUT) --vpp-flags '$(subst ','\'',$(VITIS_FLAGS))' \
    $(foreach c,$(VITIS_CFG),--config $(c)) $(if $(filter 1 yes true,$(SLR_PLAN)),--slr-plan) \
    $(if $(filter 1 yes true,$(PROFILE)),--profile)

.PHONY: build build-inputs clean-build clean-xclbin

build:
	$(VITIS_PYTHON) -m nantucket.tools.vitis_build $(VITIS_BUILD_ARGS)

build-inputs:
	$(VITIS_PYTHON) -m nantucket.tools.vitis_build $(VITIS_BUILD_ARGS) --inputs-only

clean-build:
	rm -rf $(VITIS_OUT)

clean-xclbin:
	rm -rf $(BUILD)/hw $(BUILD)/hw_emu
