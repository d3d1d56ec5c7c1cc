"""RED TEAM (appended to the reference, its functions replacing the reference's): crafted_error_reply_kills_pytest.py

What: any of the scan bypasses gives full Python in the worker (here the storage .type() import,
see storage_type_import.py). The worker's error replies are built by Worker.describe() in the same process,
so the file replaces it with one whose "code" field is an int. The test process trusts that field:
grader.plugin.explain() calls remote['code'].strip() inside the pytest_runtest_makereport hook, which
raises AttributeError inside pytest's own hook machinery (INTERNALERROR): pytest stops, the remaining
tests report nothing, and at a sandboxed level grader.run raises GraderError DIED_UNDER_THE_GRADER
("it was killed from outside ... grade again"): exit 2, no report, blamed on the machine.
The first call that raises is attention_scores with a wrong input (every suite has such a test);
here attention_scores raises on every call to make it immediate. The reference's other functions stay.

Observed (grade --suite all): scan [], exit code 2, no report; the grader printed "grader error (not your
code's fault): the test process ended before it reported 21 of 103 tests, and the student's code cannot
reach it at this isolation: it was killed from outside (the out-of-memory killer of a loaded host, say);
grade again".
"""

import torch


def _load(dotted):
    name = dotted
    try:
        torch.UntypedStorage(0).type(name)
    except AttributeError as error:
        return error.obj


_worker_class = _load("grader.sandbox.worker.Worker")
_honest_describe = _worker_class.describe


def _describe(self, error):
    reply = _honest_describe(self, error)
    reply["line"] = 1
    reply["code"] = 1
    return reply


_worker_class.describe = _describe


def attention_scores(q, k, scale=None):
    raise ValueError("any error will do")
