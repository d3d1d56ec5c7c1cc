"""Task `divisibility` (hidden): split_heads raises too, the message, valid head counts, a ValueError subclass."""

import re

import pytest

from tests import inputs
from tests.feedback import fail

pytestmark = pytest.mark.task("divisibility")


def raised_dimension_mismatch(submission, make, text):
    """The DimensionMismatchError that make() raises; fails the test if it raises anything else or nothing."""
    try:
        make()
    except submission.DimensionMismatchError as error:
        return error
    except NotImplementedError:
        raise
    except Exception as error:
        fail(f"{text} raised {type(error).__name__}: {error}; expected DimensionMismatchError (defined at the "
             "top of attention.py): raise that class, not ValueError or assert.")
    fail(f"{text} did not raise: 16 features cannot be split into 5 equal heads. "
         "Check d_model % n_heads and raise DimensionMismatchError.")


@pytest.mark.points(1)
def test_split_heads_with_16_features_and_5_heads_raises_dimension_mismatch(submission):
    """split_heads(x [B, T, 16], 5) raises the lab's DimensionMismatchError."""
    x = inputs.randn(2, 3, 16, salt=170)
    raised_dimension_mismatch(submission, lambda: submission.split_heads(x, 5), "split_heads(x [2, 3, 16], 5)")


@pytest.mark.points(1)
def test_dimension_mismatch_message_names_d_model_and_n_heads(submission):
    """The DimensionMismatchError message names both d_model (16) and n_heads (5)."""
    x = inputs.randn(2, 3, 16, salt=171)
    for make, text in ((lambda: submission.MultiHeadAttention(16, 5), "MultiHeadAttention(16, 5)"),
                       (lambda: submission.split_heads(x, 5), "split_heads(x [2, 3, 16], 5)")):
        message = str(raised_dimension_mismatch(submission, make, text))
        numbers = re.findall(r"\d+", message)
        missing = [name for name, value in (("d_model=16", "16"), ("n_heads=5", "5")) if value not in numbers]
        if missing:
            fail(f"{text} raised DimensionMismatchError({message!r}), which does not name "
                 f"{' and '.join(missing)}.\nHint: say what does not divide, e.g. "
                 "f\"d_model={d_model} is not divisible by n_heads={n_heads}\".")


@pytest.mark.points(1)
def test_valid_head_counts_construct_and_the_error_is_a_value_error(submission):
    """MultiHeadAttention(16, 4) and (16, 16) construct; (16, 5)'s DimensionMismatchError is a ValueError."""
    for n_heads in (4, 16):
        try:
            submission.MultiHeadAttention(16, n_heads)
        except NotImplementedError:
            raise
        except Exception as error:
            fail(f"MultiHeadAttention(16, {n_heads}) raised {type(error).__name__}: {error}, but {n_heads} heads "
                 f"of {16 // n_heads} features each split 16 evenly.\nHint: raise only when d_model % n_heads != 0.")
    try:
        submission.MultiHeadAttention(16, 5)
    except ValueError as error:
        if not isinstance(error, submission.DimensionMismatchError):
            fail(f"MultiHeadAttention(16, 5) raised a plain {type(error).__name__}: {error}; expected "
                 "DimensionMismatchError (a ValueError subclass defined at the top of attention.py).")
        return
    except NotImplementedError:
        raise
    except Exception as error:
        fail(f"MultiHeadAttention(16, 5) raised {type(error).__name__}, which `except ValueError` does not catch.\n"
             "Hint: keep `class DimensionMismatchError(ValueError)` as given, and raise it.")
    fail("MultiHeadAttention(16, 5) did not raise: 16 features cannot be split into 5 equal heads.")
