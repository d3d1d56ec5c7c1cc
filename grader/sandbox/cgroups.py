"""A memory and a process limit on one worker's whole process tree, through the kernel's cgroups.

cgroup v1 (one hierarchy per controller: ROOT/memory, ROOT/pids) gets a group in each controller.
cgroup v2 (one unified hierarchy, ROOT/cgroup.controllers; GitHub's ubuntu runners, Docker and
Gradescope on recent kernels) gets one group beside the grader's own: memory.max, memory.swap.max,
pids.max. v2 lets a group hand controllers to its children (cgroup.subtree_control) only when no
process lives in it (the no-internal-processes rule, which spares the root): when the grader's group
holds processes, they are moved into a leaf group under it first, so the sandbox groups become its
siblings. A delegated subtree (systemd's Delegate=, a container's own cgroup namespace) works the same
way. Everything here is best effort: where no group can be made, make() returns [] and the rlimits
alone cap the worker.

`root` is a parameter everywhere so that tests can run this against a fake directory tree.
"""

import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
LEAF = "grader-leaf"  # where the grader's own processes go when its v2 group must hand out controllers
CONTROLLERS = ("memory", "pids")


def version(root: Path = ROOT) -> int | None:
    """2 for a unified hierarchy, 1 for per-controller hierarchies, None when neither is mounted."""
    if (root / "cgroup.controllers").exists():
        return 2
    if any((root / controller).is_dir() for controller in CONTROLLERS):
        return 1
    return None


def own_group(proc_cgroup: str | None = None) -> str:
    """This process's v2 group as /proc/self/cgroup names it ("0::/system.slice/x.service" -> that path)."""
    text = proc_cgroup if proc_cgroup is not None else Path("/proc/self/cgroup").read_text()
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:] or "/"
    return "/"


def make(name: str, memory_bytes: int, processes: int, root: Path = ROOT, own: str | None = None) -> list:
    """Groups named name that cap memory (swap included) and processes; [] where none can be made."""
    found = version(root)
    if found == 2:
        group = _make_v2(name, memory_bytes, processes, root, own_group() if own is None else own)
        return [group] if group else []
    if found == 1:
        return _make_v1(name, memory_bytes, processes, root)
    return []


def join(groups: list, pid: int = 0) -> None:
    """Move pid (0: the calling process) into every group; its children are born there."""
    for group in groups:
        _write(Path(group) / "cgroup.procs", pid)


def remove(groups: list) -> None:
    """Kill whatever still runs in the groups, then delete them."""
    for group in map(Path, groups):
        for _ in range(50):
            _kill_members(group)
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


def _make_v1(name, memory_bytes, processes, root):
    settings = {"memory": {"memory.limit_in_bytes": memory_bytes, "memory.memsw.limit_in_bytes": memory_bytes},
                "pids": {"pids.max": processes}}
    made = []
    for controller, values in settings.items():
        group = _fresh(root / controller / name)
        if group is None:
            continue
        made.append(group)
        for key, value in values.items():
            _try_write(group / key, value)
    return made


def _make_v2(name, memory_bytes, processes, root, own):
    parent = root / own.lstrip("/")
    if parent.name == LEAF:  # a grader started inside the leaf of another: the same parent
        parent = parent.parent
    if not _hand_out_controllers(parent):
        return None
    group = _fresh(parent / name)
    if group is None:
        return None
    for key, value in (("memory.max", memory_bytes), ("memory.swap.max", 0), ("pids.max", processes)):
        _try_write(group / key, value)
    return group


def _hand_out_controllers(parent):
    """Enable memory and pids for parent's children, moving parent's processes into a leaf if the kernel
    refuses because they live in parent (the no-internal-processes rule; the root is exempt)."""
    wanted = [c for c in CONTROLLERS if c not in _words(parent / "cgroup.subtree_control")]
    if not wanted:
        return True
    if not set(wanted) <= set(_words(parent / "cgroup.controllers")):
        return False
    enable = " ".join(f"+{c}" for c in wanted)
    try:
        _write(parent / "cgroup.subtree_control", enable)
        return True
    except OSError:
        pass
    try:
        leaf = parent / LEAF
        leaf.mkdir(exist_ok=True)
        for pid in _words(parent / "cgroup.procs"):
            _try_write(leaf / "cgroup.procs", pid)
        _write(parent / "cgroup.subtree_control", enable)
    except OSError:
        return False
    return True


def _fresh(group):
    """group, made anew (a stale one of an earlier run is emptied and removed first); None on failure."""
    try:
        if group.exists():
            remove([group])
        group.mkdir()
    except OSError:
        return None
    return group


def _kill_members(group):
    if (group / "cgroup.kill").exists():
        _try_write(group / "cgroup.kill", 1)
    for pid in _words(group / "cgroup.procs"):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def _words(path):
    try:
        return path.read_text().split()
    except OSError:
        return []


def _write(path, value):
    """One write() of value (cgroup files take one pid or one setting per write)."""
    with open(path, "w") as handle:
        handle.write(str(value))


def _try_write(path, value):
    try:
        _write(path, value)
    except OSError:
        pass
