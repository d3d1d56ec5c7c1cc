from grader.entry import run

run("instructor.cli", "grader error")
