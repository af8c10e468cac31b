# Two entry points: `make demo` and `make test`. Both create .venv if missing and are idempotent.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# These machines have a local CPU wheel of torch 2.13.0; on a GPU machine, install torch your usual way
# first (into .venv) or run e.g. `make demo TORCH=torch`.
TORCH ?= torch==2.13.0
OUT ?= out

.PHONY: demo test install install-test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.torch: | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install "$(TORCH)"
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(PIP) install -e ".[test]"
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: install
	@mkdir -p $(OUT)
	$(VENV)/bin/featx extract data/demo.csv -o $(OUT)/demo.features.h5
	@echo "features: $(OUT)/demo.features.h5"

test: install-test
	$(PY) -m pytest -q

bench: install
	$(PIP) install -e ".[bench]"
	$(PY) bench/extract.py

clean:
	rm -rf $(OUT) .featx .pytest_cache
