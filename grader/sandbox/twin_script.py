"""The file a twin start runs (grader.sandbox.twin): `python -I -u grader/sandbox/twin_script.py CONFIG LOG_FD
CONTROL_FD`. As boot_script.py does for the init, it only puts the folder that holds this grader/ first on
sys.path (isolated mode put neither the working directory nor this folder there) and calls
grader.sandbox.twin.main.
"""

if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from grader.sandbox.twin import main

    main(sys.argv[1:])
