# Attention from Scratch (lab 03). Students: `make install`, then `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
IMPL ?= assignment
SUITE ?= all
FORMAT ?= summary
JOBS ?= 2
TORCH_VERSION := 2.13.0
# CPU-only wheels; pip also looks on PyPI for everything else.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
REQUIREMENTS := $(if $(wildcard requirements-dev.txt),requirements-dev.txt,requirements.txt)

.PHONY: help install test grade check stubs stubs-check tooling reference-full-marks stubs-zero mutants \
        notebook figures bench student gradescope clean

help:
	@echo "make install            create .venv with the CPU build of torch and the requirements"
	@echo "make test               public tests on assignment/attention.py, with a points table"
	@echo "make test IMPL=DIR      the same for another folder holding an attention.py"
	@echo "make grade              public + hidden suites (SUITE=public|hidden|all, FORMAT=summary|json|...)"
	@echo "make check              what CI runs: every suite on the reference, stubs, tooling, mutants"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

install: $(PY)
	$(PY) -m pip install --retries 1 --timeout 20 --extra-index-url $(TORCH_INDEX) torch==$(TORCH_VERSION)
	$(PY) -m pip install -r $(REQUIREMENTS)

test: $(PY)
	$(PY) -m grader grade --suite public --impl $(IMPL)

grade: $(PY)
	$(PY) -m grader grade --suite $(SUITE) --impl $(IMPL) --format $(FORMAT)

stubs: $(PY)
	$(PY) -m grader stubs

# --- instructors and CI ---------------------------------------------------------------------------

check: tooling reference-full-marks stubs-zero mutants notebook

tooling: $(PY)
	$(PY) -m pytest tests/tooling -q -p no:cacheprovider

reference-full-marks: $(PY)
	$(PY) -m grader grade --suite all --impl solutions --verbose

stubs-zero: $(PY)
	$(PY) -m grader grade --suite all --impl assignment --expect zero > /dev/null

mutants: $(PY)
	$(PY) -m grader.mutants --suite both --jobs $(JOBS)

notebook: $(PY)
	$(PY) -m grader.notebook run --impl solutions

figures: $(PY)
	$(PY) -m grader.figures --impl solutions --out docs/figures

bench: $(PY)
	$(PY) -m grader.bench

student: $(PY)
	$(PY) -m grader release dist/student

gradescope: $(PY)
	$(PY) -m grader gradescope dist/gradescope

clean:
	rm -rf dist .pytest_cache grades.csv grades-reports
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +
