"""The hypothesis table (tests/support/hypotheses.py) and feedback.diagnose: a Likely cause is printed only
when exactly one known mistake explains the result, and never names another mistake than the one made."""

import pytest
import torch

from tests.support import hypotheses, inputs, oracle
from tests.support.feedback import assert_close, compare_pair, diagnose

Q, K, V = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=8, dv=5, salt=900)
BOOL = inputs.random_bool_mask(2, 3, 4, 6, salt=901)
BOOL[0, 1, 2] = False  # one fully blocked row
FLOAT = inputs.additive_mask(BOOL, salt=902)
Q64, K64, V64 = (x.double() for x in (Q, K, V))
SDPA_CALLS = {
    "plain": dict(q=Q, k=K, v=V),
    "bool mask": dict(q=Q, k=K, v=V, mask=BOOL),
    "float mask": dict(q=Q, k=K, v=V, mask=FLOAT),
    "causal, Tq < Tk": dict(q=Q, k=K, v=V, is_causal=True),
    "bool mask and causal": dict(q=Q, k=K, v=V, mask=BOOL, is_causal=True),
    "explicit scale": dict(q=Q, k=K, v=V, scale=0.37),
    "float64": dict(q=Q64, k=K64, v=V64, mask=BOOL),
}


def truth(call):
    return oracle.sdpa(call["q"], call["k"], call["v"], mask=call.get("mask"), is_causal=call.get("is_causal", False),
                       scale=call.get("scale"))


@pytest.mark.parametrize("name", list(SDPA_CALLS))
def test_each_sdpa_variant_is_named_as_itself_or_not_at_all(name):
    """Fed what a variant computes, diagnose names that variant or nothing: never another mistake."""
    call = SDPA_CALLS[name]
    expected = truth(call)
    mistakes = hypotheses.as_mistakes("sdpa", **call)
    named = 0
    for cause, result in hypotheses.results("sdpa", **call).items():
        line = diagnose(result.value, expected, mistakes)
        assert line is None or line.startswith(cause), f"{cause!r} was diagnosed as {line!r}"
        named += line is not None
    assert named >= len(mistakes) // 2, f"only {named} of {len(mistakes)} variants are told apart on {name}"


def test_each_mha_variant_is_named_as_itself_or_not_at_all():
    params = oracle.random_mha_params(16, seed=3)
    query, key = inputs.randn(2, 4, 16, salt=903), inputs.randn(2, 6, 16, salt=904)
    call = dict(params=params, n_heads=4, query=query, key=key, value=inputs.randn(2, 6, 16, salt=905))
    expected = oracle.mha(params, 4, call["query"], call["key"], call["value"])
    mistakes = hypotheses.as_mistakes("mha", **call)
    for cause, result in hypotheses.results("mha", **call).items():
        line = diagnose(result.value, expected, mistakes)
        assert line is None or line.startswith(cause), f"{cause!r} was diagnosed as {line!r}"


def test_the_line_gives_the_numbers():
    call = SDPA_CALLS["plain"]
    unscaled = oracle.sdpa(Q, K, V, scale=1.0)
    line = diagnose(unscaled, truth(call), hypotheses.as_mistakes("sdpa", **call))
    assert line.startswith("the dot products are not scaled") and "at most" in line and "correct result" in line


def test_two_mistakes_that_fit_equally_name_neither():
    expected = truth(SDPA_CALLS["plain"])
    same = oracle.sdpa(Q, K, V, scale=1.0)
    assert diagnose(same, expected, {"one explanation": same, "another explanation": same}) is None


def test_a_result_no_mistake_explains_is_not_diagnosed():
    call = SDPA_CALLS["bool mask"]
    noise = tuple(part + 0.3 * torch.randn(part.shape, generator=inputs.generator(906)) for part in truth(call))
    assert diagnose(noise, truth(call), hypotheses.as_mistakes("sdpa", **call)) is None


def test_a_constant_result_is_never_diagnosed():
    output, weights = truth(SDPA_CALLS["plain"])
    uniform = torch.full_like(weights, 1 / 6)
    mistakes = {"the scale is 0": (uniform @ V, uniform)}
    assert diagnose((uniform @ V, uniform), (output, weights), mistakes) is None


def test_a_softmax_without_the_max_subtracted_is_named_on_large_scores():
    scores = 100.0 + 40.0 * inputs.randn(2, 3, 5, 7, salt=907)
    naive = scores.exp() / scores.exp().sum(-1, keepdim=True)
    line = diagnose(naive, oracle.softmax_weights(scores), hypotheses.as_mistakes("weights", scores=scores))
    assert line is not None and "without subtracting" in line


def test_adding_a_variant_is_one_decorated_function():
    before = len(hypotheses.VARIANTS["merge_heads"])

    @hypotheses.variant("merge_heads", "a test variant")
    def merge_doubled(x):
        return hypotheses.merge_without_transpose(x) * 2

    try:
        x = inputs.randn(2, 3, 4, 5, salt=908)
        assert "a test variant" in hypotheses.results("merge_heads", x=x)
    finally:
        hypotheses.VARIANTS["merge_heads"].pop()
    assert len(hypotheses.VARIANTS["merge_heads"]) == before


def test_nan_in_the_result_makes_no_mistake_far_closer():
    """Against a result with NaN the truth is infinitely far: that is no evidence for a mistake 0.3 away."""
    output, weights = truth(SDPA_CALLS["plain"])
    got = (output, weights.clone().index_fill_(-1, torch.tensor([0]), float("nan")))
    near = (output, weights + 0.3)
    assert diagnose(got, (output, weights), {"a mistake 0.3 away": near}) is None


def _failure(got, expected, blocked) -> str:
    from tests.support.feedback import assert_close

    with pytest.raises(BaseException) as failure:
        assert_close(got, expected, "weights", hint="the fully blocked rows' fix", blocked=blocked)
    return str(failure.value)


def test_a_wrong_row_with_allowed_keys_gets_the_evidence_not_the_blocked_row_hint():
    """softmax over dim=-2 in the branch that handles fully blocked rows: the wrong rows have allowed keys,
    so the hint says what their sums show (1 down the columns), not how to fix blocked rows."""
    scores = inputs.randn(1, 1, 4, 4, salt=3)
    allowed = torch.ones(1, 1, 4, 4, dtype=torch.bool)
    allowed[0, 0, 3] = False
    blocked = ~allowed.any(-1, keepdim=True)
    expected = oracle.softmax_weights(scores, allowed)
    got = torch.softmax(scores.masked_fill(blocked, 0.0), dim=-2).masked_fill(blocked, 0.0)
    message = _failure(got, expected, blocked)
    assert "this row has allowed keys" in message and "dim=-1" in message
    assert "the fully blocked rows' fix" not in message


def test_a_wrong_fully_blocked_row_keeps_the_tests_own_hint():
    scores = inputs.randn(1, 1, 4, 4, salt=3)
    allowed = torch.ones(1, 1, 4, 4, dtype=torch.bool)
    allowed[0, 0, 3] = False
    blocked = ~allowed.any(-1, keepdim=True)
    expected = oracle.softmax_weights(scores, allowed)
    got = expected.clone()
    got[0, 0, 3] = 0.25  # uniform instead of zeros: only the blocked row is wrong
    assert "the fully blocked rows' fix" in _failure(got, expected, blocked)


def never_read():
    raise AssertionError("a passing check read the mistakes")


def test_a_passing_check_never_computes_the_mistakes():
    """The variants cost time (and some of them calls to the submission): only a failing check reads them."""
    expected = truth(SDPA_CALLS["plain"])
    assert_close(expected[1], expected[1], "weights", mistakes=hypotheses.Mistakes(never_read))
    compare_pair(expected, expected, "sdpa", hypotheses.Mistakes(never_read))


def test_a_failing_check_computes_the_mistakes_and_names_one():
    call = SDPA_CALLS["plain"]
    unscaled = hypotheses.results("sdpa", **call)
    mistakes = hypotheses.as_mistakes("sdpa", **call)
    cause, wrong = next((cause, r.value) for cause, r in unscaled.items() if "scale" in cause)
    with pytest.raises(pytest.fail.Exception, match="Likely cause"):
        compare_pair(wrong, truth(call), "sdpa", mistakes)


def test_mistakes_merged_with_more_stay_unread_until_used():
    merged = hypotheses.Mistakes(never_read) | {"another": 1}
    assert isinstance(merged, hypotheses.Mistakes)
    assert dict(hypotheses.Mistakes(lambda: {"one": 0}) | {"another": 1}) == {"one": 0, "another": 1}
