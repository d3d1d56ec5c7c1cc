# Attention from Scratch (lab 03). Students: `make install`, then `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
IMPL ?= assignment
SUITE ?= all
FORMAT ?= summary
TORCH_VERSION := 2.13.0
# torch comes from PyTorch's CPU index ONLY (--index-url, never --extra-index-url: with two indexes pip may take
# PyPI's torch, on Linux a multi-GB CUDA build), in a step of its own; then grader.cpu_torch stops the install
# if a CUDA build got in anyway.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# On Linux the pin names the local version too (2.13.0+cpu): an index or find-links folder in your pip configuration
# can offer 2.13.0+cu128, which pip prefers to +cpu for the plain pin. macOS wheels carry no local version.
TORCH_SPEC := torch==$(TORCH_VERSION)$(if $(filter Linux,$(shell uname -s)),+cpu)
TORCH_PIP_OPTIONS ?= --retries 3 --timeout 30
# requirements.txt is what grading needs; requirements-notebook.txt adds the notebook's; -dev the instructors'.
REQUIREMENTS ?= $(firstword $(wildcard requirements-dev.txt requirements-notebook.txt) requirements.txt)

.PHONY: help install test grade clean

help:
	@echo "make install          create .venv with the CPU build of torch and the requirements"
	@echo "make test             public tests on assignment/attention.py, with a points table"
	@echo "make test IMPL=DIR    the same for another folder holding an attention.py"
	@echo "make grade            every suite present (SUITE=public|hidden|all, FORMAT=summary|json|gradescope|classroom)"

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	@$(PY) -m pip install $(TORCH_PIP_OPTIONS) --index-url $(TORCH_INDEX) "$(TORCH_SPEC)" || { \
	  echo "make install: $(TORCH_SPEC) could not be installed from $(TORCH_INDEX) (PyTorch's CPU index):" \
	       "check your connection or set TORCH_INDEX=URL of a mirror of it; nothing else was installed" >&2; exit 1; }
	$(PY) -m grader.cpu_torch
	$(PY) -m pip install -r $(REQUIREMENTS)

# Points lost are what the table is for, not a failure of make (exit 1 would print "make: *** Error 1", which reads
# as a crash); a grader error (exit 2) still fails. CI and Classroom call the grader and keep its exit status.
test: $(PY)
	@$(PY) -m grader grade --suite public --impl "$(IMPL)" || [ $$? -eq 1 ]

grade: $(PY)
	$(PY) -m grader grade --suite $(SUITE) --impl "$(IMPL)" --format $(FORMAT)

clean:
	rm -rf dist .pytest_cache grades.csv grades-reports
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

# --- instructors and CI (not in the student template) ---------------------------------------------
# gradings at a time in `make mutants`: one per core
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: install-host check lint stubs tooling sandbox-user reference-full-marks stubs-zero mutants notebook figures bench bench-grade student gradescope

# A Dask grading host (or scheduler) in one command: the venv, then grader/ and instructor/ importable from any
# folder (dask worker starts anywhere) while still reading this checkout's tests/ (docs/instructors.md).
install-host: install
	$(PY) -m pip install --no-deps -e .

# The steps two at a time: tooling beside the others in turn, so that no core waits while a one-core step
# (lint, sandbox-user, a single grade) runs; each step's output is printed whole when it ends. The notebook runs
# against the reference inside tooling (tests/tooling/test_notebook.py), so `make notebook` is not repeated here.
# reference-full-marks and stubs-zero are for instructors at a glance: in CI their grades are tooling's
# test_gradescope (cold, every suite, on the path Gradescope runs) and make mutants (warm, split by suite).
CHECKS := lint tooling sandbox-user mutants
# Inside check, one pytest worker and one mutants grading more than the cores: many tooling tests wait (on a
# timeout, a child process, a server's start), and the extra one fills those waits.
CHECK_JOBS = $(shell echo $$(( $(JOBS) + 1 )))
# (--output-sync needs GNU make 4; macOS's make 3.81 interleaves the lines instead)
check:
	$(MAKE) --jobs=2 $(if $(filter 3.%,$(MAKE_VERSION)),,--output-sync=target) $(CHECKS) JOBS=$(CHECK_JOBS)

stubs: $(PY)
	$(PY) -m instructor stubs

# ruff (.ruff.toml) and mypy (.mypy.ini) over grader/ and instructor/
lint: $(PY)
	$(PY) -m ruff check grader instructor
	$(PY) -m mypy

# --durations: where CI's time goes, in every CI log (the slowest 25 tests); -n: one pytest worker per core (in
# check, one more), a file's tests on one worker, so that its module fixtures (a batch of the fresh corpus, a
# checkout) are made once
tooling: $(PY)
	$(PY) -m pytest tests/tooling -q -p no:cacheprovider --durations=25 -n $(JOBS) --dist loadfile

# The attacks whose outcome the sandbox level changes (marked each_level: the view, other processes, files,
# limits), again as an ordinary user (uid 65534), whose grader gets the user-namespace level (run as root); the
# guard's and the meters' run inside the worker the same at every level and are graded once, by `tooling`.
# Where this machine cannot give that level it prints why and passes.
ATTACK_TESTS := tests/tooling/test_attacks_on_*.py tests/tooling/test_from_scratch_rule.py
sandbox-user: $(PY)
	PYTHONDONTWRITEBYTECODE=1 $(PY) -m tests.tooling.at_level user-namespace -- $(PY) -m pytest $(ATTACK_TESTS) -m each_level -q -p no:cacheprovider

reference-full-marks: $(PY)
	$(PY) -m grader grade --suite all --impl solutions --verbose

stubs-zero: $(PY)
	$(PY) -m grader grade --suite all --impl assignment --expect zero > /dev/null

# make mutants ONLY="zeros scores_missing_scale" grades only those mutants and degenerates (no floors)
mutants: $(PY)
	$(PY) -m instructor mutants --suite both --jobs $(JOBS) $(if $(ONLY),--only $(ONLY))

notebook: $(PY)
	$(PY) -m instructor notebook run --impl solutions

figures: $(PY)
	$(PY) -m instructor figures --impl solutions --out docs/figures

bench: $(PY)
	$(PY) -m instructor bench

# GITHUB_REPO=OWNER/NAME: the public template repository the Colab links open (release refuses without it).
student: $(PY)
	rm -rf dist/student-solutions
	$(PY) -m instructor release dist/student --solutions-out dist/student-solutions $(if $(GITHUB_REPO),--github $(GITHUB_REPO))

gradescope: $(PY)
	$(PY) -m instructor gradescope dist/gradescope

bench-grade: $(PY)
	$(PY) -m instructor bench-grade $(if $(AGAINST),--against "$(AGAINST)")
