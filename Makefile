# Two entry points: `make demo` (set up, run the bundled example) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	# Bytecode once, even where PYTHONDONTWRITEBYTECODE is set: every start reads it.
	$(BIN)/python -m compileall -q src
	touch $@

# The demo needs the core install and pytest (its verify command) only; pip shows progress.
$(BIN)/.core: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@echo "make demo: installing tidegate (core: the engine and the CLI) and pytest"
	$(BIN)/pip install --disable-pip-version-check --progress-bar on -e . 'pytest>=8,<10'
	$(BIN)/python -m compileall -q src
	touch $@

demo: $(BIN)/.core
	bash examples/demo.sh

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/lint-imports --no-cache

typecheck: $(BIN)/.installed
	$(BIN)/mypy

# One worker per core, at most 4 (most tests wait on their own subprocesses); a file's
# tests share a worker, so a module's fixture is built once. PYTEST_WORKERS=0: in-process.
PYTEST_WORKERS ?= auto
unit: $(BIN)/.installed
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --maxprocesses 4 --dist loadfile

test: lint typecheck unit

bench: $(BIN)/.installed
	$(BIN)/python bench/transaction.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
