"""Grading and instructor tooling for lab 03, "Attention from Scratch" (run as `python -m grader`)."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
