"""`python -m autograder extend`: a student's extension of an assignment's due date, in nbgrader's gradebook.

nbgrader keeps extensions (`Gradebook.grant_extension`) but has no command for them. The extension moves that
student's due date; every `python -m autograder grade` run works the late penalty out again from it
(`autograder.grading.apply_late_policy`), so granting one after grading needs no regrading.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.scores import duration


def grant_extension(database: Path, assignment: str, student: str, days: float = 0, hours: float = 0) -> str:
    """Give `student` `days` and `hours` more for `assignment` (0 and 0: take an extension back, as nbgrader does;
    a new one replaces the old); return what the instructor reads."""
    with Gradebook(f"sqlite:///{database}") as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise SystemExit(f"The gradebook has no assignment {assignment}: release it first "
                             f"(python -m autograder release {assignment}).") from None
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            raise SystemExit(f"{student} has no graded hand-in of {assignment} yet, and nbgrader keeps an extension "
                             f"with the hand-in: grade it first (python -m autograder grade {assignment}), then run "
                             "this again.") from None
        gb.grant_extension(assignment, student, days=days, hours=hours)
        submission = gb.find_submission(assignment, student)
        extension, due = submission.extension, submission.duedate
    if extension is None:
        return f"{student} / {assignment}: no extension; due {due or 'never'}."
    return (f"{student} / {assignment}: extended by {duration(extension.total_seconds())}; due {due or 'never'} "
            f"(UTC). Run `python -m autograder grade {assignment}` to work the late penalty out again.")
