"""grader.sandbox.cgroups against fake cgroup trees (this machine mounts cgroup v1 only: v2 is tested here only).

FakeKernel stands in for the kernel's side of the v2 files the module writes: a pid written to
cgroup.procs moves there, and cgroup.subtree_control refuses controllers (EBUSY) in a non-root group
that holds processes: the no-internal-processes rule."""

import errno
from pathlib import Path

import pytest

from grader.sandbox import cgroups

MB = 1024 * 1024


def fake_v2(root, own, pids, controllers="cpu memory pids"):
    """A unified hierarchy whose group `own` holds pids and may hand out controllers."""
    root.mkdir(exist_ok=True)
    for group in [root, *[root / part for part in _prefixes(own)]]:
        group.mkdir(exist_ok=True)
        (group / "cgroup.controllers").write_text(controllers + "\n")
        (group / "cgroup.subtree_control").write_text("")
        (group / "cgroup.procs").write_text("")
    (root / own.lstrip("/") / "cgroup.procs").write_text("".join(f"{pid}\n" for pid in pids))
    return root / own.lstrip("/")


def _prefixes(own):
    parts = [part for part in own.split("/") if part]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class FakeKernel:
    def __init__(self, root):
        self.root = root
        self.writes = []

    def write(self, path, value):
        path, value = Path(path), str(value)
        self.writes.append((path.relative_to(self.root).as_posix(), value))
        if path.name == "cgroup.procs":
            for procs in self.root.rglob("cgroup.procs"):
                procs.write_text("".join(f"{pid}\n" for pid in procs.read_text().split() if pid != value))
            path.write_text((path.read_text() if path.exists() else "") + value + "\n")
        elif path.name == "cgroup.subtree_control":
            if path.parent != self.root and (path.parent / "cgroup.procs").read_text().split():
                raise OSError(errno.EBUSY, "Device or resource busy")
            enabled = set(path.read_text().split()) | {word.lstrip("+") for word in value.split()}
            path.write_text(" ".join(sorted(enabled)))
        else:
            path.write_text(value)


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    fake = FakeKernel(tmp_path / "cgroup")
    monkeypatch.setattr(cgroups, "_write", fake.write)
    return fake


def test_the_version_is_read_from_the_tree(tmp_path):
    assert cgroups.version(tmp_path) is None
    (tmp_path / "memory").mkdir()
    assert cgroups.version(tmp_path) == 1
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    assert cgroups.version(tmp_path) == 2


def test_the_own_group_is_read_from_proc_self_cgroup():
    assert cgroups.own_group("0::/system.slice/runner.service\n") == "/system.slice/runner.service"
    assert cgroups.own_group("12:pids:/\n1:name=systemd:/x\n") == "/"
    assert cgroups.own_group("0::/\n") == "/"


def test_v2_limits_memory_without_swap_and_processes_in_one_group(kernel):
    fake_v2(kernel.root, "/", pids=[])
    [group] = cgroups.make("grader-sandbox-60001", 448 * MB, 64, root=kernel.root, own="/")
    assert group == kernel.root / "grader-sandbox-60001"
    assert (group / "memory.max").read_text() == str(448 * MB)
    assert (group / "memory.swap.max").read_text() == "0"
    assert (group / "pids.max").read_text() == "64"
    assert set((kernel.root / "cgroup.subtree_control").read_text().split()) >= {"memory", "pids"}


def test_v2_moves_the_graders_processes_into_a_leaf_before_handing_out_controllers(kernel):
    parent = fake_v2(kernel.root, "/system.slice/runner.service", pids=[101, 102])
    [group] = cgroups.make("grader-sandbox-60000", 512 * MB, 64, root=kernel.root, own="/system.slice/runner.service")
    assert group.parent == parent
    assert (parent / cgroups.LEAF / "cgroup.procs").read_text().split() == ["101", "102"]
    assert (parent / "cgroup.procs").read_text().split() == []
    assert set((parent / "cgroup.subtree_control").read_text().split()) == {"memory", "pids"}


def test_v2_a_grader_already_in_the_leaf_makes_its_groups_beside_the_leaf(kernel):
    parent = fake_v2(kernel.root, "/job", pids=[])
    (parent / "cgroup.subtree_control").write_text("memory pids")
    [group] = cgroups.make("grader-sandbox-60002", 512 * MB, 64, root=kernel.root, own="/job/" + cgroups.LEAF)
    assert group == parent / "grader-sandbox-60002"
    assert not [write for write in kernel.writes if write[0].endswith("subtree_control")]


def test_v2_without_a_memory_controller_to_hand_out_makes_no_group(kernel):
    fake_v2(kernel.root, "/job", pids=[7], controllers="cpu pids")
    assert cgroups.make("grader-sandbox-60003", 512 * MB, 64, root=kernel.root, own="/job") == []


def test_joining_writes_the_pid_into_each_group_and_remove_deletes_them(kernel):
    fake_v2(kernel.root, "/", pids=[])
    groups = cgroups.make("grader-sandbox-60004", 512 * MB, 64, root=kernel.root, own="/")
    cgroups.join(groups, 999999999)
    assert (groups[0] / "cgroup.procs").read_text().split() == ["999999999"]
    for path in groups[0].iterdir():  # cgroupfs has no files to delete; a fake tree does
        path.unlink()
    cgroups.remove(groups)
    assert not groups[0].exists()


def test_v1_gets_a_memory_and_a_pids_group(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "pids").mkdir()
    groups = cgroups.make("grader-sandbox-60005", 256 * MB, 32, root=tmp_path)
    assert groups == [tmp_path / "memory" / "grader-sandbox-60005", tmp_path / "pids" / "grader-sandbox-60005"]
    assert (groups[0] / "memory.limit_in_bytes").read_text() == str(256 * MB)
    assert (groups[1] / "pids.max").read_text() == "32"


def test_no_hierarchy_means_no_group(tmp_path):
    assert cgroups.make("grader-sandbox-60006", 256 * MB, 32, root=tmp_path) == []
