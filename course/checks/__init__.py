"""The visible checks, one module per notebook. Each `check_<exercise>` prints a line per step and
fails with a message that says what was expected, what came out and, where it can, which known
mistake the output matches. Each `written_<exercise>` only confirms the exercise is written (the
visible part of its hidden-test cell)."""
from course.checks.attention import check_attention, written_attention
from course.checks.masking import (
    check_causal_mask,
    check_masked_attention,
    check_padding_mask,
    written_causal_mask,
    written_masked_attention,
    written_padding_mask,
)
from course.checks.positional_encoding import (
    check_positional_encoding,
    check_token_and_position_embedding,
    written_positional_encoding,
    written_token_and_position_embedding,
)

__all__ = [
    "check_positional_encoding", "check_token_and_position_embedding",
    "written_positional_encoding", "written_token_and_position_embedding",
    "check_attention", "written_attention",
    "check_causal_mask", "check_padding_mask", "check_masked_attention",
    "written_causal_mask", "written_padding_mask", "written_masked_attention",
]
