#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image (Ubuntu 22.04, as root).
set -euo pipefail
cd /autograder/source
apt-get update -q
apt-get install -y -q python3.11 python3.11-venv
python3.11 -m venv .venv
# CPU-only torch (about 200 MB) from PyTorch's CPU index alone, in its own step: the CUDA build from PyPI
# would not fit Gradescope's image comfortably. The local version (+cpu) keeps an index that offers +cu1xx from
# winning; grader.cpu_torch stops the build if a CUDA torch got in anyway.
.venv/bin/pip install --quiet --retries 3 --timeout 30 --index-url https://download.pytorch.org/whl/cpu 'torch==2.13.0+cpu'
.venv/bin/python -m grader.cpu_torch
# What grading needs, nothing for the notebook (requirements-notebook.txt).
.venv/bin/pip install --quiet -r requirements.txt
# Gradescope's container has no namespaces: the worker that runs student code sees this machine's files as its
# own uid does. Close everything here to it but what it needs (grader/, the venv; grader/sandbox/exposure.py):
# gradescope-run refuses to grade while a worker's uid can read the tests.
.venv/bin/python -m grader.sandbox.exposure
