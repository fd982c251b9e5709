# Two entry points for newcomers: `make quickstart` and `make test`. Both create the venv on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: quickstart test test-fast bench clean-venv

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: an open range would pull several GB of CUDA wheels.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

quickstart: $(STAMP)
	$(VENV)/bin/coding-framework evaluate --benchmark humaneval --canonical --results runs/humaneval_canonical.jsonl

test: $(STAMP)
	$(VENV)/bin/pytest

test-fast: $(STAMP)
	$(VENV)/bin/pytest -m "not slow and not integration"

clean-venv:
	rm -rf $(VENV)
