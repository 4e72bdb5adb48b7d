# Everything a developer or CI does, creating .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: demo test lint typecheck check bench mutation docs clean

$(INSTALLED): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "VectorStep needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(INSTALLED)

demo: $(INSTALLED)
	$(BIN)/vectorstep demo

test: $(INSTALLED)
	@scripts/ensure_chromium.sh
	$(BIN)/python -m pytest

lint: $(INSTALLED)
	$(BIN)/ruff check src tests benchmarks samples scripts
	$(BIN)/ruff format --check src tests benchmarks samples scripts
	$(BIN)/lint-imports
	$(BIN)/python scripts/check_module_size.py src

typecheck: $(INSTALLED)
	$(BIN)/mypy src

check: lint typecheck test

bench: $(INSTALLED)
	$(BIN)/python benchmarks/run_all.py

mutation: $(INSTALLED)
	$(BIN)/python scripts/mutation.py

# The key tables of docs/configuration.md, from the spec models' field descriptions.
docs: $(INSTALLED)
	$(BIN)/python scripts/gen_config_docs.py

clean:
	rm -rf $(VENV) mutants .mypy_cache .ruff_cache .pytest_cache
