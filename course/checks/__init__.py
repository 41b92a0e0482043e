"""The visible checks, one module per notebook. Each `check_<exercise>` prints a line per step and
fails with a message that says what was expected, what came out and, where it can, which known
mistake the output matches."""
from course.checks.positional_encoding import (
    check_positional_encoding,
    check_token_and_position_embedding,
    written_positional_encoding,
    written_token_and_position_embedding,
)

__all__ = [
    "check_positional_encoding", "check_token_and_position_embedding",
    "written_positional_encoding", "written_token_and_position_embedding",
]
