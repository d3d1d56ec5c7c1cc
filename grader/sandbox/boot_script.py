"""The file the sandbox's init runs: `python -I -u grader/sandbox/boot_script.py CONFIG` (grader.sandbox.spawn;
CONFIG is a grader.sandbox.boot_config.BootConfig as JSON). It only makes the grader importable and calls
grader.sandbox.boot.main: the start is followed by import, like any other code.

Isolated mode (-I) is what keeps the start safe, as the init runs as root beside the student's file: no
PYTHONPATH, no user site-packages, and neither the working directory nor this file's folder on sys.path. So
this puts exactly one folder first, the one holding this grader/, and imports nothing before it does.
"""

if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from grader.sandbox.boot import main

    main(sys.argv[1:])
