"""The grading runtime: what ships to students and Gradescope (`python -m grader`), beside the lab it
grades (lab/, read by grader.lab)."""
