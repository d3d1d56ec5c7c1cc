from grader.entry import run

run("grader.cli", "grader error (not your code's fault)")
