"""Instructors' tools for lab 03: authoring, publishing, regrading and quality checks (`python -m instructor`).
Never shipped."""
