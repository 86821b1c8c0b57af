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
BACKEND ?= model
RUN_DIR := $(BUILD)/run

.PHONY: setup test run points bench clean distclean help

help:
	@echo "make setup   create .venv from the pinned requirements (only when missing or changed)"
	@echo "make test    the whole test suite (models, block benches, end to end, CLI)"
	@echo "make run     generate a 2^$(LOG_N) point pair and check it on the $(BACKEND) backend"
	@echo "make points  only generate the point pair (LOG_N, KIND, SEED)"
	@echo "make bench   measure and write docs/performance.md"

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

test: $(STAMP)
	$(VENV)/bin/pytest -q tests

points: $(STAMP)
	@mkdir -p $(RUN_DIR)
	$(NANTUCKET) points $(LOG_N) $(RUN_DIR)/in_$(LOG_N)_$(KIND).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND).txt --kind $(KIND) --seed $(SEED)

run: points
	$(NANTUCKET) run $(RUN_DIR)/in_$(LOG_N)_$(KIND).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND).txt --backend $(BACKEND)

bench: $(STAMP)
	$(PY) scripts/bench_model.py
	$(PY) sim/bench_dma.py

clean:
	rm -rf $(BUILD) sim_build .pytest_cache

distclean: clean
	rm -rf $(VENV) *.egg-info

# Vitis build targets (build, build-inputs, clean-build): see docs/build.md
include scripts/vitis.mk
