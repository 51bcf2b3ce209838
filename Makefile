# The two set-up commands of README.md: `make demo` (install + main job) and `make test`.
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install demo test bench

install:
	$(PIP) install -q torch==2.13.0          # the CPU wheel on this disk: install before anything pulls torch
	$(PIP) install -q -e '.[test]'

# The main job: mutate three problems, measure them with the kill matrix, score the published
# checkers, harden a checker and write out/demo/report.md with plots (about 3 minutes here).
demo: install
	$(PYTHON) -m mutagym harden --quick --out out/demo

test: install
	$(PYTHON) -m pytest -q -p no:cacheprovider -n 2

bench: install
	$(PYTHON) benchmarks/bench_runtime.py
