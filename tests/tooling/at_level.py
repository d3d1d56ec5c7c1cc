"""Run a command whose grader gets a weaker sandbox level than this root machine offers, to test it:
- "uid": root without namespaces (GRADER_SANDBOX=uid), as in a container without CAP_SYS_ADMIN;
- "user-namespace": an ordinary user (uid 65534), whose grader makes user namespaces.
Both start in a private mount namespace where the Python install, the repository and the temporary
directory are made reachable by other uids (the Python of this machine and of CI lives under a 0700
/root), in the same way the sandbox exposes them to its workers. At "uid", the repository's tests/ and
solutions/ are closed to other uids there, as an instructor must close them where uid is the best level
(batch and gradescope-run refuse to grade otherwise). Nothing outside the namespace changes.

    python -m tests.tooling.at_level LEVEL -- COMMAND...   (as root, from the repository)
"""

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.paths import REPO, Env
from grader.sandbox import linux

LEVELS = ("uid", "user-namespace")
ORDINARY_UID = 65534
PROBE = [sys.executable, "-c", "from grader.sandbox.isolation import level; print(level())"]


def argv(level: str, command: list) -> list:
    """The command line that runs command at level (from the repository, as root)."""
    return [shutil.which("unshare") or "unshare", "--mount", "--propagation", "private",
            sys.executable, "-m", "tests.tooling.at_level", "--inside", level, "--", *command]


def unavailable(level: str) -> str | None:
    """Why this machine cannot run a grader at level here; None when it can."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "setting up another level needs root on Linux"
    if not shutil.which("unshare"):
        return "util-linux's unshare is missing"
    try:
        found = subprocess.run(argv(level, PROBE), cwd=REPO, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as error:
        return f"the probe could not run: {error}"
    reported = found.stdout.strip().splitlines()[-1:] or [found.stderr.strip()[-300:]]
    return None if reported == [level] else f"a grader set up for {level!r} reports {reported[0]!r}"


def _needed():
    return [REPO.resolve(), Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(sys.base_prefix)),
            Path(tempfile.gettempdir()).resolve()]


def _expose(path, stage_root):
    """Make path traversable for another uid: an ancestor only root may enter (a 0700 /root holding the
    Python install) is covered by an empty tmpfs with path bound back into it."""
    parts = Path(path).parts
    for depth in range(1, len(parts)):
        ancestor = Path(*parts[:depth])
        if os.stat(ancestor).st_mode & stat.S_IXOTH:
            continue
        child = ancestor / parts[depth]
        stage = Path(tempfile.mkdtemp(dir=stage_root))
        linux.mount(str(child), str(stage), None, linux.MS_BIND | linux.MS_REC)
        linux.tmpfs(str(ancestor), 1, 0o755)
        os.mkdir(child)
        linux.mount(str(stage), str(child), None, linux.MS_MOVE)
        linux.remount_read_only(str(ancestor))
        linux.remount_read_only(str(child))
        os.rmdir(stage)


def _close(path, stage_root):
    """Close path to other uids without changing it: a 0700 tmpfs over it, its entries bound back inside."""
    stage = Path(tempfile.mkdtemp(dir=stage_root))
    linux.mount(str(path), str(stage), None, linux.MS_BIND | linux.MS_REC)
    linux.tmpfs(str(path), 1, 0o700)
    for entry in sorted(stage.iterdir()):
        if entry.is_dir():
            (path / entry.name).mkdir()
        else:
            (path / entry.name).touch()
        linux.mount(str(entry), str(path / entry.name), None, linux.MS_BIND | linux.MS_REC)
    linux.umount(str(stage), linux.MNT_DETACH)
    stage.rmdir()


def _inside(level, command):
    stage_root = Path(tempfile.mkdtemp(prefix="at-level-"))
    for path in _needed():
        _expose(str(path), stage_root)
    if level == "uid":
        for path in (REPO / "tests", REPO / "solutions"):
            _close(path, stage_root)
    stage_root.rmdir()
    env = dict(os.environ)
    if level == "uid":
        env[Env.SANDBOX] = "uid"
    else:
        env.pop(Env.SANDBOX, None)
        home = Path(tempfile.mkdtemp(prefix="at-level-home-"))
        os.chown(home, ORDINARY_UID, ORDINARY_UID)
        env.update(HOME=str(home), TMPDIR=str(home), USER="nobody", LOGNAME="nobody")
        os.setgroups([])
        os.setresgid(ORDINARY_UID, ORDINARY_UID, ORDINARY_UID)
        os.setresuid(ORDINARY_UID, ORDINARY_UID, ORDINARY_UID)
    env.update(PYTHONDONTWRITEBYTECODE="1")
    if level == "uid":
        os.execvpe(command[0], command, env)
    # then the home it was given goes (its owner may remove it); the command dies with this process, as it did
    # when it replaced it
    status = subprocess.call(command, env=env,
                             preexec_fn=lambda: linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL))
    shutil.rmtree(home, ignore_errors=True)
    sys.exit(status)


def main(args: list) -> int:
    inside = args[:1] == ["--inside"]
    args = args[1:] if inside else args
    if len(args) < 3 or args[0] not in LEVELS or args[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    level, command = args[0], args[2:]
    if inside:
        _inside(level, command)
    why = unavailable(level)
    if why:
        print(f"skipped: the {level} level cannot be tested on this machine: {why}")
        return 0
    return subprocess.run(argv(level, command), cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
