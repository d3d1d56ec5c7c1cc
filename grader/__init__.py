"""The grading runtime of lab 03, "Attention from Scratch": what ships to students and Gradescope
(`python -m grader`)."""
