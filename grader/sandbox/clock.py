"""The clock timeouts run on: wall time less the time the worker's threads spent waiting for a CPU.

CPU time alone lets code that sleeps or blocks run for as long as a wall bound allows; wall time alone times a
correct call out when other processes keep the worker off the CPU. The kernel counts, per thread, the time it
sat runnable in a run queue (Linux /proc/PID/task/TID/schedstat, second field, in nanoseconds): what is left of
the wall time once that is taken away is time the submission ran, slept or blocked, which is its own doing.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NS = 1e-9
Waits = dict[tuple[int, int], float]  # (pid, tid) -> seconds that thread waited for a CPU since it started


def _thread_wait(pid: int, tid: int) -> float | None:
    try:
        return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1]) * NS
    except (OSError, ValueError, IndexError):
        return None


def tree_waits(process: Any) -> Waits | None:
    """Each thread's run-queue wait, for process and every descendant; None where the kernel does not say
    (no /proc, no schedstat, no pid): timeouts then count plain wall time."""
    pid = getattr(process, "pid", None)
    if pid is None or _thread_wait(pid, pid) is None:
        return None
    waits: Waits = {}
    pending, seen = [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:  # it ended meanwhile
            continue
        for task in tasks:
            wait = _thread_wait(current, int(task))
            if wait is not None:
                waits[current, int(task)] = wait
            try:
                pending += map(int, Path(f"/proc/{current}/task/{task}/children").read_text().split())
            except (OSError, ValueError):
                continue
    return waits


def charged(wall: float, before: Mapping[tuple[int, int], float] | None,
            after: Mapping[tuple[int, int], float] | None) -> float:
    """The seconds a request is charged: wall less the longest run-queue wait any one thread of the worker's
    tree had meanwhile (a thread that started meanwhile waited all of its wait then). The longest and not the
    sum: threads wait side by side, so summing them would take away more time than passed. Never below 0,
    never above wall; plain wall without both readings."""
    if before is None or after is None:
        return wall
    waited = max((after[key] - before.get(key, 0.0) for key in after), default=0.0)
    return min(wall, max(0.0, wall - waited))
