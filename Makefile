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

# Every test, each harness run forked from a warm harness of the test process where it can be (tutor.warm: no
# torch import a run); the fairness and runner tests twice in the same pass, the second time every run started
# cold, as without one.
COLD_TESTS := tests/test_anticheat.py,tests/test_comparators_out_of_reach.py,tests/test_runner.py,tests/test_quick_check.py,tests/test_also_cold.py

# Three test processes on two cores (pytest-xdist): some of a test's time is waiting, on its runs' subprocesses and
# on the time limits its tests reach on purpose, and both cores stay busy; a fourth process kept them no busier and
# made the suite 6% more CPU (on a fresh clone of 33ad7c3: 618 core-seconds of the machine, 5 min 12 s, against 577-580
# and 5 min 2-4 s with three). Two tests handed out at a time (--maxschedchunk): in xdist's larger first batches
# one process was left with a file of 10-second tests while the others ran dry (its last test ended 35-42 s after
# theirs; 2-7 s with two).
TEST_WORKERS ?= 3

# Bytecode written, whatever the machine's environment says (this one sets PYTHONDONTWRITEBYTECODE): without it every
# test process compiled the tutor's and the tests' sources again as it collected (`pytest --collect-only`: 7.9
# core-seconds against 4.8).
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --maxschedchunk 2 --warm-when-ready --also-cold $(COLD_TESTS)

gpu-test: $(STAMP)
	$(BIN)/python -m pytest -q -m gpu

clean:
	rm -rf $(VENV)
