"""The file the unsandboxed worker runs (the "none" level, where no init comes before it):
`python -I -u grader/sandbox/worker_script.py FD IMPL WARM BUDGET_MB` (grader.sandbox.spawn). As boot_script.py
does for the init, it only puts the folder that holds this grader/ first on sys.path (isolated mode put neither
the working directory nor this folder there) and calls grader.sandbox.worker.main.
"""

if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from grader.sandbox.worker import main

    main(sys.argv[1:])
