"""Task `divisibility`: DimensionMismatchError when d_model is not a multiple of n_heads."""

import pytest

from tests.feedback import fail

pytestmark = pytest.mark.task("divisibility")


@pytest.mark.points(2)
def test_mha_with_16_features_and_5_heads_raises_dimension_mismatch(submission):
    """MultiHeadAttention(d_model=16, n_heads=5) raises the lab's DimensionMismatchError."""
    try:
        submission.MultiHeadAttention(16, 5)
    except submission.DimensionMismatchError:
        return
    except NotImplementedError:
        raise
    except Exception as error:
        fail(f"MultiHeadAttention(16, 5) raised {type(error).__name__}, expected DimensionMismatchError "
             "(defined at the top of attention.py): raise that class, not ValueError or assert.")
    fail("MultiHeadAttention(16, 5) did not raise: 16 features cannot be split into 5 equal heads. "
         "Check d_model % n_heads in __init__ and raise DimensionMismatchError.")
