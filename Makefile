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

# The demo: extract every layer of the embedded model once, probe several label columns, plot each.
# A label's probe is skipped when its results are newer than the features file (delete them to redo).
DEMO_LABELS ?= sentiment number tense mood length_bucket
DEMO_FEATURES := $(OUT)/demo.features.h5
FEATX := $(VENV)/bin/featx

demo: install
	@mkdir -p $(OUT)
	$(FEATX) extract data/demo.csv -o $(DEMO_FEATURES)
	@set -e; for label in $(DEMO_LABELS); do \
	  results=$(OUT)/demo.features.$$label.probe.csv; \
	  if [ -f "$$results" ] && [ "$$results" -nt $(DEMO_FEATURES) ]; then \
	    echo "featx probe --label $$label: up to date ($$results)"; \
	  else \
	    echo "$(FEATX) probe $(DEMO_FEATURES) --label $$label --layer all"; \
	    $(FEATX) probe $(DEMO_FEATURES) --label $$label --layer all; \
	  fi; \
	done
	$(FEATX) plot $(foreach label,$(DEMO_LABELS),$(OUT)/demo.features.$(label).probe.csv) --compare $(OUT)/demo.labels.png
	@echo ""
	@echo "features: $(DEMO_FEATURES)"
	@echo "results:  $(OUT)/demo.features.<label>.probe.csv and .json for: $(DEMO_LABELS)"
	@echo "figures:  $(OUT)/demo.features.<label>.probe.png and .svg; all labels together: $(OUT)/demo.labels.png"
	@echo "notebook: notebooks/layerwise.ipynb reads these files (.venv/bin/pip install jupyterlab; .venv/bin/jupyter lab notebooks/)"

test: install-test
	$(PY) -m pytest -q

bench: install
	$(PIP) install -e ".[bench]"
	$(PY) bench/extract.py

clean:
	rm -rf $(OUT) .featx .pytest_cache
