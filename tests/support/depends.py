"""Dependent failures say what to fix first: a task that builds on another (scores and weights -> sdpa -> mha ->
efficiency, decoding) fails "because `attention_scores` does" when that one is wrong, instead of with a message
of its own that blames the wrong code.

Every suite file imports the autouse fixture `builds_on`; feedback.fail asks first_fix(message). The functions
a test builds on are checked only when it fails, once per submission, on small inputs of their own.
A test module may set BUILDS_ON = {test name: (task ids)} for tests that use less than their task does.
"""

import pytest

from tests.support import inputs, oracle

# What each task's functions call, most basic first (checked in this order, each with its own upstream first).
UPSTREAM = {
    "sdpa": ("scores", "softmax_weights"),
    "mha": ("heads", "sdpa"),
    "efficiency": ("sdpa", "mha"),
    "kv_cache": ("heads", "sdpa", "mha"),
}
FUNCTIONS = {
    "scores": "`attention_scores`",
    "softmax_weights": "`attention_weights`",
    "sdpa": "`scaled_dot_product_attention`",
    "heads": "`split_heads` or `merge_heads`",
    "mha": "`MultiHeadAttention`",
}
FIRST_FIX = "fails because"

_current: dict = {}
_verdicts: dict = {}


@pytest.fixture(autouse=True)
def builds_on(request, submission):
    """Remember, for feedback.fail, the task of the running test, what it builds on, and the submission."""
    marker = request.node.get_closest_marker("task")
    task = marker.args[0] if marker else None
    special = getattr(request.module, "BUILDS_ON", {})
    upstream = special.get(request.node.originalname or request.node.name, UPSTREAM.get(task, ()))
    _current.update(task=task, upstream=upstream, submission=submission)
    yield
    _current.clear()


def submission_file():
    """The path of the running test's attention.py, as this process sees it (None outside a graded test)."""
    submission = _current.get("submission")
    return getattr(submission, "impl_file", None) if submission is not None else None


def first_fix(message):
    """message, or "fails because `f` does: fix that first" when a function the running test builds on is wrong."""
    if message.startswith(FIRST_FIX):
        return message.split("\nLikely cause:")[0]  # a caller's cause for a failure that is not its own
    upstream = _current.get("upstream")
    if not upstream or _current.get("checking"):
        return message
    culprit = _first_broken(_current["submission"], upstream)
    if culprit is None:
        return message
    return (f"{FIRST_FIX} {FUNCTIONS[culprit]} does: fix that first (the `{culprit}` rows show what is wrong). "
            f"This test checks `{_current['task']}`, which builds on it; its own finding would blame the wrong code.")


def _first_broken(submission, tasks):
    for task in tasks:
        below = _first_broken(submission, UPSTREAM.get(task, ()))
        if below is not None:
            return below
        if not works(submission, task):
            return task
    return None


def works(submission, task):
    """True when the task's functions give torch's results on small inputs (cached per submission)."""
    key = (id(submission), task)
    if key not in _verdicts:
        _current["checking"] = True
        try:
            _verdicts[key] = bool(CHECKS[task](submission))
        except Exception:  # raised, not implemented, wrong structure: it does not work
            _verdicts[key] = False
        finally:
            _current.pop("checking", None)
    return _verdicts[key]


def _close(got, expected):
    from tests.support.feedback import close

    if isinstance(expected, (tuple, list)):
        return (isinstance(got, (tuple, list)) and len(got) == len(expected)
                and all(_close(g, e) for g, e in zip(got, expected)))
    return close(got, expected)


def _scores(submission):
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=11, salt=900)
    q2, k2, _ = inputs.qkv(lead=(), q_len=6, k_len=3, d=13, salt=901)
    return (_close(submission.attention_scores(q, k), oracle.scores(q, k))
            and _close(submission.attention_scores(q2, k2, 0.5), oracle.scores(q2, k2, 0.5)))


def _weights(submission):
    scores = inputs.randn(2, 3, 5, 7, salt=902)
    allowed = inputs.random_bool_mask(2, 3, 5, 7, salt=903)
    allowed[0, 1, 2] = False
    additive = inputs.additive_mask(allowed, salt=904)
    return all(_close(submission.attention_weights(scores, *mask), oracle.softmax_weights(scores, *mask))
               for mask in ((), (allowed,), (additive,)))


def _sdpa(submission):
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=11, dv=6, salt=905)
    allowed = inputs.random_bool_mask(5, 7, salt=906)
    cases = ({}, {"mask": allowed}, {"is_causal": True}, {"mask": inputs.additive_mask(allowed, salt=907)})
    return all(_close(submission.scaled_dot_product_attention(q, k, v, **case), oracle.sdpa(q, k, v, **case))
               for case in cases)


def _heads(submission):
    x = inputs.randn(2, 5, 12, salt=908)
    heads = inputs.randn(2, 3, 5, 4, salt=909)
    return (_close(submission.split_heads(x, 3), oracle.split_heads(x, 3))
            and _close(submission.merge_heads(heads), oracle.merge_heads(heads)))


def _mha(submission):
    from tests.support import mha

    module, params = mha.build(submission, 12, 3, seed=910)
    x = inputs.randn(2, 5, 12, salt=911)
    return _close(tuple(module(x)), tuple(oracle.mha(params, 3, x)))


CHECKS = {"scores": _scores, "softmax_weights": _weights, "sdpa": _sdpa, "heads": _heads, "mha": _mha}
assert set(CHECKS) >= {task for tasks in UPSTREAM.values() for task in tasks}
