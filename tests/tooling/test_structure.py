"""How a run is started stays visible: parameters are passed, never written into the environment, and what the
grader hands its pytest child is one typed value (grader.handover)."""

import ast
import json
from pathlib import Path

import pytest

from grader.handover import Handover
from grader.paths import GRADER, INSTRUCTOR, Env
from grader.records import TestMeta, TestRecord
from grader.report import Status
from grader.sandbox.policy import Limits

ENVIRON_WRITERS = {"update", "pop", "clear", "setdefault", "popitem", "__setitem__", "__delitem__"}


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ" and \
        isinstance(node.value, ast.Name) and node.value.id == "os"


def environ_writes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets):
            found.append(f"{path}:{node.lineno}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ENVIRON_WRITERS and _is_environ(node.func.value):
                found.append(f"{path}:{node.lineno}")
            if node.func.attr in ("putenv", "unsetenv") and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "os":
                found.append(f"{path}:{node.lineno}")
    return found


def python_files() -> list[Path]:
    return sorted(p for root in (GRADER, INSTRUCTOR) for p in root.rglob("*.py") if "__pycache__" not in p.parts)


# The one exception, with its reason: the twin's pytest child sets its own environment once, as its first act after
# the fork that made its worker, because the Python it grew from started with the worker's (grader.sandbox.twin).
NEW_PROCESS_ENVIRONMENT = GRADER / "sandbox" / "twin.py"


def test_no_module_of_the_grader_or_the_instructor_tools_writes_the_environment():
    writes = [hit for path in python_files() if path != NEW_PROCESS_ENVIRONMENT for hit in environ_writes(path)]
    assert writes == []
    assert len(environ_writes(NEW_PROCESS_ENVIRONMENT)) == 2  # clear(), then update() with the child's own


def test_the_environment_scan_sees_each_kind_of_write(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nos.environ['A'] = '1'\nos.environ.update(B='2')\ndel os.environ['A']\n"
                      "os.putenv('C', '3')\nos.environ.get('D')\n")
    assert sorted(int(hit.rsplit(":", 1)[1]) for hit in environ_writes(sample)) == [2, 3, 4, 5]


def test_no_module_keeps_a_registry_of_the_active_server():
    for path in python_files():
        tree = ast.parse(path.read_text())
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert not names & {"active", "current"}, path


def test_a_handover_survives_the_environment_it_travels_in():
    handover = Handover(key_fd=5, report_fd=6, worker_fd=7, worker_pid=4242, worker_log="/tmp/w.log",
                        limits=Limits(call_seconds=2.5), hide=("/class", "/other"), level="namespaces")
    assert Handover.from_environ(handover.to_environ()) == handover


def test_a_collect_only_handover_names_no_descriptor_and_starts_no_worker():
    environ = Handover(collect_only=True).to_environ()
    assert environ == {Env.COLLECT_ONLY: "1"}
    assert Handover.from_environ(environ).collect_only


def test_renumbering_changes_the_descriptors_and_nothing_else():
    handover = Handover(key_fd=5, report_fd=6, worker_pid=9, level="uid")
    moved = handover.renumbered({"key_fd": 11, "report_fd": 12})
    assert (moved.key_fd, moved.report_fd, moved.worker_fd) == (11, 12, None)
    assert (moved.worker_pid, moved.level) == (9, "uid")


def test_renumbering_refuses_a_descriptor_missing_or_extra():
    handover = Handover(key_fd=5, report_fd=6)
    with pytest.raises(ValueError, match="descriptors"):
        handover.renumbered({"key_fd": 11})
    with pytest.raises(ValueError, match="descriptors"):
        handover.renumbered({"key_fd": 11, "report_fd": 12, "worker_fd": 13})


def test_a_plain_pytest_run_gets_the_default_limits_with_the_overrides_of_its_environment():
    handover = Handover.from_environ({Env.CALL_TIMEOUT: "9"})
    assert handover.limits == Limits(call_seconds=9.0)
    assert (handover.report_fd, handover.key_fd, handover.level) == (None, None, None)


def test_a_collected_test_and_its_result_travel_as_typed_records():
    meta = TestMeta(id="tests/public/test_sdpa.py::test_x", name="test_x", task="sdpa", points=2.0, suite="public",
                    doc="checks x", file="tests/public/test_sdpa.py", line=12)
    record = TestRecord(meta.id, Status.NOT_IMPLEMENTED, "sdpa: not implemented yet", 0.5, ["flag"], "printed")
    assert TestMeta.from_json(json.loads(json.dumps(meta.to_json()))) == meta
    assert TestRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_a_stub_left_as_given_travels_as_its_own_status_not_as_words_in_the_message():
    record = TestRecord("t", Status.NOT_IMPLEMENTED, "anything at all")
    assert record.to_json()["status"] == "not_implemented"
    assert TestRecord.from_json(record.to_json()).status is Status.NOT_IMPLEMENTED


def test_a_record_missing_a_field_is_refused_whole():
    with pytest.raises(KeyError):
        TestMeta.from_json({"id": "t", "name": "t", "task": "sdpa", "suite": "public"})


def instructor_imports(path: Path) -> set[str]:
    """The instructor modules path imports, at its top or inside a function (instructor.warm.x counts as warm)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] if node.module != "instructor" else [f"instructor.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found |= {name.split(".")[1] for name in names if name.startswith("instructor.")}
    return found


def test_the_instructor_modules_import_each_other_one_way_only():
    """No circle (batch -> cluster -> preflight, and each of them and lms -> gradebook, never back), lazy
    imports included: a module of the circle could not be read, moved or tested without the others."""
    graph = {path.stem: instructor_imports(path) - {path.stem} for path in INSTRUCTOR.glob("*.py")}
    graph |= {path.name: set() for path in INSTRUCTOR.iterdir() if (path / "__init__.py").is_file()}

    def circle_from(start, path):
        for name in sorted(graph.get(path[-1], ())):
            if name == start:
                return [*path, start]
            if name not in path and (found := circle_from(start, [*path, name])):
                return found
        return None

    circles = [found for start in sorted(graph) if (found := circle_from(start, [start]))]
    assert circles == [], " -> ".join(circles[0])
    assert "batch" not in graph["lms"] | graph["cluster"] | graph["preflight"]


def test_the_sandboxs_boot_config_survives_its_command_line():
    """spawn writes the init's config, boot reads it: one typed value, one pair of functions."""
    from grader.sandbox.boot_config import BootConfig
    from grader.sandbox.view import View

    view = View(read_only=("/usr",), links=(("/lib", "usr/lib"),), covered=("/usr/secret",))
    config = BootConfig(fd=7, level="namespaces", uid=60003, limits=Limits(call_seconds=2.5), warm="public",
                        impl="/class/ada/attention.py", cgroups=("/sys/fs/cgroup/a",), view=view, root="/run/x")
    assert BootConfig.from_json(config.to_json()) == config
    assert set(json.loads(config.to_json())) == {"impl", "fd", "level", "uid", "limits", "cgroups", "warm", "view",
                                                 "root", "scratch"}


@pytest.mark.parametrize("script", ["boot", "worker"])
def test_a_workers_start_imports_this_checkouts_grader_whatever_the_folder_and_environment(tmp_path, script):
    """The worker's command lines run grader/sandbox/boot_script.py (the init) or worker_script.py (no sandbox) in
    isolated mode: a grader package in the working folder or on PYTHONPATH (a student's folder could hold one) is
    never what they import."""
    import subprocess
    import sys

    from grader.sandbox.boot import START_FAILED
    from grader.sandbox.spawn import BOOT_SCRIPT, WORKER_SCRIPT

    decoy = tmp_path / "grader" / "sandbox"
    decoy.mkdir(parents=True)
    for module in (decoy.parent / "__init__.py", decoy / "__init__.py", decoy / "boot.py", decoy / "worker.py"):
        module.write_text("print('decoy imported')\n")
    path, code, said = {"boot": (BOOT_SCRIPT, START_FAILED, "sandbox: could not be built"),
                        "worker": (WORKER_SCRIPT, 1, "ValueError")}[script]
    done = subprocess.run([sys.executable, "-I", "-u", str(path), "not a config"], cwd=tmp_path,
                          env={"PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert "decoy" not in done.stdout + done.stderr
    assert said in done.stderr


def test_the_checked_level_travels_in_a_variable_of_its_own_never_in_the_users(monkeypatch):
    """GRADER_SANDBOX means only what the user said (off, or a weaker level). The level the grader checked reaches
    its pytest child as GRADER_HANDOVER_LEVEL, and one left in the grader's own environment is scrubbed first."""
    from grader.run import child_env

    assert Handover(level="namespaces").to_environ() == {Env.HANDOVER_LEVEL: "namespaces"}
    assert Handover.from_environ({Env.SANDBOX: "uid"}).level is None
    monkeypatch.setenv(Env.SANDBOX, "off")
    monkeypatch.setenv(Env.HANDOVER_LEVEL, "namespaces")
    environ = child_env()
    assert environ[Env.SANDBOX] == "off" and Env.HANDOVER_LEVEL not in environ
