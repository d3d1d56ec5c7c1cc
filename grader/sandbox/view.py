"""The worker's file system as an allow-list: a new, empty root holding only what the worker needs.

`plan()` (in the grader) describes the view as data; `build()` (in the sandbox's init, root in new
mount and PID namespaces) makes it: an empty tmpfs becomes the root, each allowed path is bound into it
read-only at its own path, and the old root is detached. What the view holds, and nothing else:

- the Python install the worker runs (the venv, its base interpreter, and every folder on the worker's
  sys.path) and the system libraries;
- the grader's own package (`grader/` alone, not the checkout around it);
- /proc of the sandbox's own PID namespace, /dev/null, zero, random and urandom;
- an empty scratch folder (a private tmpfs per worker: HOME, TMPDIR, cwd and the copy of the student's file).

Where an allowed folder holds a secret (the checkout, the student's or the class's folder), the secret is
covered by an empty tmpfs. The view does not depend on TMPDIR, the current directory or where the
checkout lies: the new root is mounted on a fresh folder that no allowed path contains.
"""

import functools
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader.lab import LAB
from grader.paths import GRADER
from grader.sandbox import linux


def system_paths() -> tuple[str, ...]:
    """The system's shared libraries (the interpreter's and torch's dependencies) and what the loader and
    torch's CPU detection read: the multiarch folders where the system has them (Debian, Ubuntu)."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    libraries = (f"/lib/{multiarch}", f"/usr/lib/{multiarch}", "/lib64") if multiarch else \
        ("/lib", "/lib64", "/usr/lib", "/usr/lib64")
    return (*libraries, "/etc/ld.so.cache", "/sys/devices/system/cpu")


DEVICES = ("null", "zero", "random", "urandom")
SCRATCH = "/scratch"
HOME = "home"  # the worker's home, HOME, TMPDIR and cwd, in its scratch
MOUNT_BASES = ("/dev/shm", "/run", "/tmp", "/var/tmp")


@dataclass(frozen=True)
class View:
    """What the worker sees. Every path is absolute and resolved."""

    read_only: tuple[str, ...]  # host paths the worker reads, at the same path
    links: tuple[tuple[str, str], ...]  # (path, target) symbolic links recreated in the view (/lib -> usr/lib)
    covered: tuple[str, ...]  # folders inside read_only paths that stay empty
    scratch: str = SCRATCH  # in the view: the worker's private tmpfs

    def to_json(self) -> dict:
        return {"read_only": list(self.read_only), "links": [list(link) for link in self.links],
                "covered": list(self.covered), "scratch": self.scratch}

    @classmethod
    def from_json(cls, data: dict) -> "View":
        return cls(tuple(data["read_only"]), tuple((a, b) for a, b in data["links"]), tuple(data["covered"]),
                   data["scratch"])


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@functools.cache
def interpreter_paths() -> tuple[str, ...]:
    """The folders and archives on the worker's sys.path (this interpreter, started isolated as the worker is),
    site-packages and what .pth files add to it included: a venv whose packages live elsewhere still imports."""
    shown = subprocess.run([sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if shown.returncode != 0:
        return ()
    return tuple(path for path in json.loads(shown.stdout) if path and os.path.exists(path))


def _links_on_the_way(path: Path) -> list[tuple[str, str]]:
    """The symbolic links met while resolving path (/lib/x86_64-linux-gnu: /lib -> usr/lib), as (link, target)."""
    links = []
    current = Path("/")
    for part in path.parts[1:]:
        candidate = current / part
        if candidate.is_symlink():
            links.append((str(candidate), os.readlink(candidate)))
            candidate = candidate.resolve()
        current = candidate
    return links


def worker_reads() -> tuple[Path, ...]:
    """What a worker reads besides its interpreter: grader/, which it imports, and the lab's description (lab/,
    public: it ships to every student), whose files the guard reads (grader.sandbox.exposure.needed)."""
    return GRADER, LAB.folder


def plan(reads: Iterable[Path], secrets: Iterable[str | Path] = (), system: Iterable[str] | None = None) -> View:
    """The view for a worker that runs this interpreter and reads the folders in reads; secrets stay hidden."""
    wanted: list[Path] = []
    links: list[tuple[str, str]] = []
    for name in (sys.prefix, sys.base_prefix, *map(str, reads), *interpreter_paths(),
                 *(system_paths() if system is None else system)):
        path = Path(os.path.abspath(name))
        if not os.path.exists(path):
            continue
        links += _links_on_the_way(path)
        wanted.append(path.resolve())
    wanted = sorted(set(wanted), key=lambda p: (len(p.parts), str(p)))
    read_only = [p for p in wanted if not any(other != p and _inside(p, other) for other in wanted)]
    hidden = {Path(s).resolve() for s in secrets if os.path.isdir(s)}
    covered = sorted(str(s) for s in hidden if any(_inside(s, r) and s != r for r in read_only))
    kept_links = sorted({(link, target) for link, target in links
                         if not any(_inside(Path(link), r) for r in read_only)})
    return View(tuple(map(str, read_only)), tuple(kept_links), tuple(covered))


def mount_point(view: View, bases: Iterable[str] = MOUNT_BASES) -> str:
    """A fresh empty folder to mount the new root on, outside every path the view binds (whatever TMPDIR says)."""
    allowed = [Path(p) for p in view.read_only]
    for base in (*bases, tempfile.gettempdir()):
        folder = Path(base)
        if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK) and not any(_inside(folder, a) for a in allowed):
            return tempfile.mkdtemp(prefix="grader-root-", dir=folder)
    raise OSError("no folder outside the Python install to mount the sandbox's root on (tried "
                  f"{', '.join(bases)} and TMPDIR)")


# -- inside the sandbox (root in new mount and PID namespaces) ------------------------------------------

def _bind(source: str, target: str) -> None:
    if os.path.isdir(source):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        open(target, "a").close()
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    linux.remount_read_only(target)


def build(view: View, root: str) -> None:
    """Make view the file system of this mount namespace, with root (an empty folder) as its new root."""
    os.umask(0o022)  # the folders made here must be enterable by the worker's uid, whatever the caller's umask
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.tmpfs(root, 4, 0o755)
    steps = [(path, "bind") for path in view.read_only] + [(path, "cover") for path in view.covered]
    for path, kind in sorted(steps, key=lambda step: len(Path(step[0]).parts)):
        if kind == "bind":
            _bind(path, root + path)
        else:
            linux.tmpfs(root + path, 1, 0o755)
    for path, target in view.links:
        os.makedirs(os.path.dirname(root + path), mode=0o755, exist_ok=True)
        os.symlink(target, root + path)
    for device in DEVICES:
        _bind(f"/dev/{device}", f"{root}/dev/{device}")
    os.makedirs(root + "/proc", mode=0o555)
    linux.mount("/proc", root + "/proc", None, linux.MS_BIND | linux.MS_REC)
    os.makedirs(root + view.scratch, mode=0o755)
    os.chdir(root)
    linux.pivot_root(".", ".")
    linux.umount(".", linux.MNT_DETACH)
    os.chdir("/")
    for path in ("/", *view.covered):
        linux.remount_read_only(path)


def mount_scratch(view: View, size_mb: int) -> Path:
    """A fresh private tmpfs at the view's scratch folder (one per worker)."""
    linux.tmpfs(view.scratch, size_mb, 0o755)
    return Path(view.scratch)
