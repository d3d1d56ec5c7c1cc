"""What the meters measure (the operation counter, the multiply-add and memory meters) cannot be dodged: a loop
hidden from the counter, a full matrix hidden from the memory meter or filled in by slices, Python loops over
floats, foreign memory, and games played with the counts themselves earn nothing the code does not."""

import pytest

from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from tests.tooling.conftest import same_at_every_level
from tests.tooling.misbehaving import (
    ATTACKS,
    HIDING_FROM_THE_COUNTER,
    REFERENCE,
    at_import,
    grade_submission,
    redteam_submission,
)

needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")
UNTOUCHED_TASKS = ("scores", "causal_mask", "softmax_weights", "heads", "divisibility")
HIDDEN_LOOPS = [name for name in HIDING_FROM_THE_COUNTER if name.startswith("looped_sdpa")]

PYTHON_LOOPS = at_import(REFERENCE, '''
import math as _math
def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    weights = attention_weights(attention_scores(q, k, scale), mask) if not is_causal else None
    if weights is None:
        scores = attention_scores(q, k, scale)
        allowed = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        weights = attention_weights(scores.masked_fill(~allowed, float("-inf")), mask)
    rows, values = weights.reshape(-1, weights.shape[-2], weights.shape[-1]).tolist(), \\
        v.reshape(-1, v.shape[-2], v.shape[-1]).tolist()
    out = [[[sum(w * vv[j][c] for j, w in enumerate(row)) for c in range(len(vv[0]) if vv else 0)]
            for row in mat] for mat, vv in zip(rows, values)]
    output = torch.tensor(out, dtype=q.dtype).reshape(*q.shape[:-1], v.shape[-1])
    return output, weights
''')

FILLED_BUFFER = at_import(REFERENCE, '''
_BUFFER = torch.empty(16 * 1024 * 1024)
def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    q_len, k_len = q.size(-2), k.size(-2)
    scores = _BUFFER[: q.shape[:-1].numel() * k_len].view(*q.shape[:-1], k_len)
    for start in range(0, q_len, block_size):
        rows = slice(start, start + block_size)
        torch.sum(q[..., rows, None, :] * k[..., None, :, :], dim=-1, out=scores[..., rows, :])
    scores.mul_(scale)
    if is_causal:
        for start in range(0, q_len, block_size):
            piece = scores[..., start:start + block_size, :]
            cols = torch.arange(k_len)
            piece.masked_fill_(cols > torch.arange(start, start + piece.size(-2)).unsqueeze(-1), float("-inf"))
    return attention_weights(scores, mask) @ v
''')


def full(report, task_ids):
    return all(report.tasks[task].score == report.tasks[task].max_score for task in task_ids)


def counter_messages(report, task):
    return [test.message for test in report.tests if test.task == task and not test.passed]


def says_the_counter_was_dodged(message):
    return "the grader refused it" in message and ("dispatch" in message or "operation counter" in message)


@same_at_every_level
@pytest.mark.parametrize("name", HIDDEN_LOOPS)
def test_a_loop_hidden_from_the_operation_counter_earns_no_efficiency_points(attacked_class, name):
    report = attacked_class[name]
    assert report.tasks["efficiency"].score == 0
    messages = counter_messages(report, "efficiency")
    assert messages and all(says_the_counter_was_dodged(message) for message in messages), messages
    assert any(flag.kind is FlagKind.SANDBOX for flag in report.flags), report.flags
    assert full(report, UNTOUCHED_TASKS)


@same_at_every_level
def test_a_full_matrix_hidden_from_the_memory_meter_earns_no_tiled_points(attacked_class):
    report = attacked_class["full_matrix_tiled_python_key_excluded"]
    assert report.tasks["tiled"].score == 0
    messages = counter_messages(report, "tiled")
    assert messages and all(says_the_counter_was_dodged(message) for message in messages), messages
    assert full(report, (*UNTOUCHED_TASKS, "sdpa", "mha", "efficiency"))


@needs_namespaces
def test_python_loops_over_tolist_floats_earn_no_efficiency_points(tmp_path):
    report = grade_submission(tmp_path, "loops", PYTHON_LOOPS, tasks=("sdpa", "efficiency"))
    assert report.tasks["sdpa"].score > 0  # the values are right (but for an edge case of the attack's own)
    assert report.tasks["efficiency"].score == 0


def points_in_every_suite(root, name: str, source: str, task: str) -> float:
    """The points of source in task over every suite, graded on that task's test files alone (its tests read no
    other task): a Python loop over floats is slow in every other file, and proves nothing there."""
    from grader.grade import grade
    from tests.tooling.small_checkout import small_tests, task_files

    suites = ("public", "hidden")
    tests_dir = small_tests(root / f"{name}-tests", task_files((task,), suites))
    (root / name).mkdir()
    (root / name / "attention.py").write_text(source)
    return sum(grade(root / name, suite, tests_dir=tests_dir).tasks[task].score for suite in suites)


@needs_namespaces
def test_python_loops_over_tolist_earn_what_plain_loops_earn(tmp_path):
    # the loop control's efficiency: one shape-free test
    assert points_in_every_suite(tmp_path, "tolist_loops", redteam_submission("tolist_loops"), "efficiency") <= 1


@needs_namespaces
def test_a_full_score_matrix_filled_into_a_buffer_by_slices_earns_no_tiled_memory_point(tmp_path):
    report = grade_submission(tmp_path, "buffer", FILLED_BUFFER, tasks=("tiled",))
    memory = [t for t in report.tests if t.name == "test_tiled_never_creates_a_tq_by_tk_matrix"]
    assert memory and memory[0].score == 0
    assert report.tasks["tiled"].score < report.tasks["tiled"].max_score


@needs_namespaces
def test_torch_frombuffer_is_refused(tmp_path):
    source = at_import(REFERENCE, "_shared = torch.frombuffer(bytearray(1024), dtype=torch.float32)")
    report = grade_submission(tmp_path, "frombuffer", source)
    assert report.score == 0


@pytest.fixture(scope="module")
def meter_games(tmp_path_factory):
    """{"games": tasks, "straight": tasks}: the meter games (redteam/meter_games.py), and the same code played
    straight."""
    root = tmp_path_factory.mktemp("meter_games")
    source = (ATTACKS / "meter_games.py").read_text()
    return {name: grade_submission(root, name, text, "all").tasks
            for name, text in (("games", source), ("straight", source.replace("GAMES = True", "GAMES = False")))}


@needs_namespaces
def test_meter_games_gain_nothing_where_the_meters_see_every_product(meter_games):
    """A decode step that re-projects the prefix through conv1d and expanded products is counted like the
    matmuls it replaces."""
    assert meter_games["games"]["kv_cache"].score <= meter_games["straight"]["kv_cache"].score


@needs_namespaces
@pytest.mark.xfail(strict=True, reason="open (docs/grading.md): an operation count padded to the same number at "
                                       "every shape, and a non-causal call inflated so that the causal one looks "
                                       "small, still pass the efficiency and tiled-skip tests")
def test_meter_games_gain_nothing_in_efficiency_and_tiled(meter_games):
    games, straight = meter_games["games"], meter_games["straight"]
    assert games["efficiency"].score <= straight["efficiency"].score
    assert games["tiled"].score <= straight["tiled"].score


def test_code_run_while_a_tensor_prints_is_counted(tmp_path):
    """A Tensor subclass's is_nested property, which torch's printer reads first, ran the file's Python loops
    and a full score matrix while the counter was paused for printing: 100/100 (redteam/printer_pause.py,
    which passes the scan). A tensor prints uncounted only where torch's own classes do all of it."""
    source = redteam_submission("printer_pause")
    report = grade_submission(tmp_path, "printer_pause", source, "public", tasks=("efficiency", "tiled"))
    assert report.tasks["efficiency"].score < report.tasks["efficiency"].max_score
    assert report.tasks["tiled"].score < report.tasks["tiled"].max_score
