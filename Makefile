# Two entry points for a fresh machine (Python >= 3.11, pip):
#   make run    install into .venv, run the default suite, build results/report.html
#   make test   install into .venv (with test tools), lint (ruff), run the whole test suite (CORES workers)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CORES  ?= 2

.PHONY: run test install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, by exact version: on a CPU-only machine this takes the CPU wheel
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/snakemake --cores $(CORES)
	$(BIN)/snakemake --report results/report.html
	@echo "tables: results/tables/  plots: results/plots/  report: results/report.html"

# -n $(CORES): one pytest-xdist worker per core; --dist loadscope sends each test module whole to one
# worker (a module-scoped workflow run, shared by the tests that read it, runs once);
# --no-loadscope-reorder keeps the collection order, in which tests/conftest.py puts the longest first
test: install
	$(BIN)/ruff check .
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -q -n $(CORES) --dist loadscope --no-loadscope-reorder

clean:
	rm -rf results resources .snakemake
