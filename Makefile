# Two entry points: `make demo` and `make test`. Both create .venv if missing and are idempotent.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
# These machines have a local CPU wheel of torch 2.13.0; on a GPU machine, install torch your usual way
# first (into .venv) or run e.g. `make demo TORCH=torch`.
TORCH ?= torch==2.13.0
OUT ?= out

.PHONY: demo test test-fast lint docs install install-test bench clean browser report-check dist

$(PY):
	$(PYTHON) -m venv $(VENV)

# Packages go in through uv (PyPI's pip-compatible installer, written in Rust) when it can be installed: it
# resolves the same versions from the same sources as pip (scripts/uv_options.py hands it pip's find-links,
# indexes and constraints), in parallel. Where uv is missing or fails, pip installs; `make install-test UV=` uses
# pip alone. Nothing is byte-compiled at install time: compiling every installed module (torch's, every one of
# transformers' 560 model families', the test folders') took 23 of a fresh `make install-test`'s 34 s on 2 cores
# (10.5 s without). Instead the demo and the tests run with PYTHONDONTWRITEBYTECODE cleared (below), so each
# module a process imports is compiled once, by the first process that needs it, and cached in the venv and in
# the checkout's git-ignored __pycache__ folders; with it set, every process that imports torch would compile
# it again (9.9 s of CPU instead of 4.2).
UV_VERSION ?= 0.13.9
UV ?= $(VENV)/bin/uv
install-with = { [ -n "$(UV)" ] && [ -x "$(UV)" ] && $(UV) pip install -q --python $(PY) $$($(PY) scripts/uv_options.py) $(1); } \
	|| $(PIP) install $(1)

$(VENV)/bin/uv: | $(PY)
	$(PIP) install "uv==$(UV_VERSION)" || echo "could not install uv: pip installs the packages"

$(VENV)/.torch: | $(PY) $(UV)
	$(PY) -c "import torch" 2>/dev/null || $(call install-with,"$(TORCH)")
	touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(call install-with,-e .)
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(call install-with,-e ".[test]")
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# The demo: extract every layer of the embedded model once, probe several label columns, plot each, probe the
# sentiment of a random-init copy of the model (the layer-wise notebook's comparison); then
# save the sentiment probe chosen on the training rows and apply it to two new texts (standard input in,
# standard output out). A label's probe (and the bundle) is skipped when newer than the features file.
DEMO_LABELS ?= sentiment number tense mood length_bucket
DEMO_FEATURES := $(OUT)/demo.features.h5
DEMO_BUNDLE := $(OUT)/sentiment.featx
# The random-init baseline of the sentiment probe: what notebooks/layerwise.ipynb compares the model with.
DEMO_RANDOM := $(OUT)/demo.random.h5
DEMO_RANDOM_RESULTS := $(OUT)/demo.random.sentiment.probe.csv
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
	@if [ -f $(DEMO_RANDOM_RESULTS) ] && [ $(DEMO_RANDOM_RESULTS) -nt $(DEMO_FEATURES) ]; then \
	  echo "random-init baseline: up to date ($(DEMO_RANDOM_RESULTS))"; \
	else \
	  echo "$(FEATX) extract data/demo.csv --random-init -o $(DEMO_RANDOM) (the notebook's comparison)"; \
	  $(FEATX) extract data/demo.csv --random-init -q -o $(DEMO_RANDOM); \
	  $(FEATX) probe $(DEMO_RANDOM) --label sentiment --layer all -o $(DEMO_RANDOM_RESULTS:.csv=); \
	fi
	@if [ -f $(DEMO_BUNDLE)/manifest.json ] && [ $(DEMO_BUNDLE)/manifest.json -nt $(DEMO_FEATURES) ]; then \
	  echo "featx fit --label sentiment: up to date ($(DEMO_BUNDLE))"; \
	else \
	  echo "$(FEATX) fit $(DEMO_FEATURES) --label sentiment -q --overwrite -o $(DEMO_BUNDLE)"; \
	  $(FEATX) fit $(DEMO_FEATURES) --label sentiment -q --overwrite -o $(DEMO_BUNDLE); \
	fi
	printf 'text\nThe critics loved the new film.\nThe waiter was not friendly.\n' \
	  | $(FEATX) predict $(DEMO_BUNDLE) - -o - -q
	@echo ""
	@echo "features: $(DEMO_FEATURES)"
	@echo "results:  $(OUT)/demo.features.<label>.probe.csv and .json for: $(DEMO_LABELS)"
	@echo "figures:  $(OUT)/demo.features.<label>.probe.png and .svg; all labels together: $(OUT)/demo.labels.png"
	@echo "probe:    $(DEMO_BUNDLE) (featx predict $(DEMO_BUNDLE) new.csv -o predictions.csv; featx.load in Python)"
	@echo "notebooks: notebooks/layerwise.ipynb reads these files, notebooks/deploy.ipynb the probe (.venv/bin/pip install jupyterlab; .venv/bin/jupyter lab notebooks/)"

# Two pytest-xdist workers (these machines have 2 cores; `make test WORKERS=0` runs in one process). Session
# fixtures are built once per worker; tests of one xdist_group (e.g. the torchrun ones) share a worker.
WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(WORKERS) --dist loadgroup

# PYTHONDONTWRITEBYTECODE cleared (see the install note above): besides the installed packages, the suite's
# workers then read cached, assertion-rewritten test modules at collection (7.6 s of CPU instead of 12.9 each)
# and featx's own modules compiled once.
demo test test-fast report-check: export PYTHONDONTWRITEBYTECODE :=

# The gates, lint (ruff, mypy) and docs (mkdocs), run beside the suite rather than before it: the suite leaves
# part of the two cores idle while its tests wait on child processes, Chromium and Ray, and the gates fill it.
# Their output (each target's kept together, -O) is shown after the suite's; make test fails if either failed.
test: install-test browser
	@gates=$$(mktemp); trap 'rm -f "$$gates"' EXIT; \
	$(MAKE) --no-print-directory -j2 -Otarget lint docs > "$$gates" 2>&1 & pid=$$!; \
	suite=0; $(PYTEST) || suite=$$?; \
	lint=0; wait $$pid || lint=$$?; cat "$$gates"; \
	if [ $$lint -ne 0 ]; then echo "make test: the gates failed (lint or docs, above)"; fi; \
	[ $$suite -eq 0 ] && [ $$lint -eq 0 ]

# The documentation site (mkdocs.yml): built into site/ with --strict, so a broken link, a missing page or a
# page left out of the nav fails; make test runs it, so CI does. Then the built site is checked to work
# offline: any script, stylesheet or font fetched from another host fails (scripts/check_site.py).
docs: install-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	$(PY) scripts/check_site.py site

# The gates CI runs through `make test`: lint, format and types (seconds). .pre-commit-config.yaml runs the same.
LINT_PATHS := featx tests bench scripts
lint: install-test
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy featx

# The quick run: every test but the slow ones (child processes, torchrun, headless Chromium, MiniLM, and any test
# that takes more than about a second of CPU with its fixtures: pyproject.toml's `slow` marker).
test-fast: install-test
	$(PYTEST) -m "not slow"

# The report tests load the HTML report in headless Chromium. Installs Debian's chromium once when no
# chromium binary is found (as root, or through passwordless sudo); without one those tests are skipped.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "no chromium found: installing Debian's chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi; \
	  if [ "$$SUDO" = none ]; then echo "warning: not root and no sudo: the browser tests will be skipped"; \
	  else $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null \
	    || echo "warning: could not install chromium: the browser tests will be skipped"; fi; }

# The report of the demo's sentiment run in headless Chromium; keeps the screenshot and PDF in out/report-check/.
report-check: install-test browser
	@mkdir -p $(OUT)/report-check
	FEATX_REPORT_CHECK_DIR=$(OUT)/report-check $(PY) -m pytest -q tests/report/html/test_report_browser.py -rs
	@echo "screenshot: $(OUT)/report-check/report-screenshot.png; PDF: $(OUT)/report-check/report.pdf"

# The release files: the sdist, and the wheel python -m build makes from it, in $(DIST)/. The wheel ships
# featx/ only; tests/test_dist.py installs it into a clean venv and runs the demo with it. Where make installed
# uv, build fills its isolated build environments with uv, given pip's sources as UV_* variables
# (scripts/uv_options.py --env): 2.7 s of CPU instead of 4.6 for the two environments (sdist, then wheel).
DIST ?= dist
dist: $(VENV)/.installed-release
	rm -f $(DIST)/featx-*.tar.gz $(DIST)/featx-*.whl
	@if [ -n "$(UV)" ] && [ -x "$(UV)" ]; then \
	  echo "$(PY) -m build --installer uv --quiet --outdir $(DIST) ."; \
	  set -a; eval "$$($(PY) scripts/uv_options.py --env)"; set +a; \
	  $(PY) -m build --installer uv --quiet --outdir $(DIST) .; \
	else echo "$(PY) -m build --quiet --outdir $(DIST) ."; $(PY) -m build --quiet --outdir $(DIST) .; fi
	@ls -l $(DIST)/featx-*

$(VENV)/.installed-release: pyproject.toml $(VENV)/.installed
	$(PIP) install -e ".[release]"
	touch $@

bench: install
	$(PIP) install -e ".[bench]"
	$(PY) bench/extract.py

clean:
	rm -rf $(OUT) .featx .pytest_cache site
