# The two set-up commands of README.md: `make demo` (install + main job) and `make test`.
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install demo test bench

install:
	$(PIP) install -q torch==2.13.0          # the CPU wheel on this disk: install before anything pulls torch
	$(PIP) install -q -e '.[test]'

DEMO_PROBLEMS := relu,softmax,layernorm

# The main job as far as it exists: verify the catalog's kernels, build the mutant pool, and
# measure it with the kill matrix (issue 6's `harden` will take its place).
demo: install
	$(PYTHON) -m mutagym verify --problems $(DEMO_PROBLEMS),rmsnorm
	$(PYTHON) -m mutagym mutate --problems $(DEMO_PROBLEMS) --out out/demo
	$(PYTHON) -m mutagym killmatrix --problems $(DEMO_PROBLEMS) --pool out/demo/mutants.parquet \
		--out out/demo/killmatrix --presets official,remainder

test: install
	$(PYTHON) -m pytest -q -p no:cacheprovider -n 2

bench: install
	$(PYTHON) benchmarks/bench_runtime.py
