# Two commands on a fresh machine: `make run` (the tutor) and `make test` (the test suite).
PYTHON ?= python3
VENV ?= .venv
# CPU build by default; on a GPU machine: make TORCH_SPEC=torch run
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test gpu-test clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/infprof-tutor

# Then the fairness and runner tests again, every run forked by one warm harness (tutor.warm).
WARM_TESTS := tests/test_anticheat.py tests/test_comparators_out_of_reach.py tests/test_runner.py tests/test_quick_check.py

# One test process a core (pytest-xdist): the suite's time is its subprocess runs, each on one core.
TEST_WORKERS ?= auto

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --warm $(WARM_TESTS)

gpu-test: $(STAMP)
	$(BIN)/python -m pytest -q -m gpu

clean:
	rm -rf $(VENV)
