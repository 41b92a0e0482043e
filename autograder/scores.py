"""A student's score for an assignment: the one number every output gives (issue 27.1).

The terminal table of `python -m autograder grade`, `reports/scores.csv`, the class report and the feedback pages all
read it from `score_of`, and it is nbgrader's own arithmetic, so `grades.csv` (`nbgrader export`) gives the same
number: the autograded points, with every manual override and written answer graded in formgrader in their place
(nbgrader's `Submission.score`), less the late penalty (`late_submission_penalty`), never below 0. What nbgrader
cannot say in one number, written answers not graded yet, is said beside it wherever the number is shown.
"""
from __future__ import annotations

from dataclasses import dataclass

from nbgrader.api import Gradebook, MissingEntry

PENDING = "written answers not graded yet"


@dataclass(frozen=True)
class Score:
    total: float  # what the student has: raw less the late penalty, at least 0 (grades.csv's `score`)
    max_score: float  # the assignment's points, written answers included (grades.csv's `max_score`)
    raw: float  # autograded and manual points before the penalty (grades.csv's `raw_score`)
    penalty: float  # the late penalty (grades.csv's `late_submission_penalty`)
    autograded: float  # the code cells' points as they count (a manual override in place of the autograder's)
    written: float  # the written answers' points graded so far
    pending: int  # written answers that still need grading by hand

    def text(self) -> str:
        """`9/11`, `0/11 (late: -9)`, `9/11 (written answers not graded yet)`."""
        notes = ([f"late: -{self.penalty:g}"] if self.penalty else []) + ([PENDING] if self.pending else [])
        return f"{self.total:g}/{self.max_score:g}" + (f" ({'; '.join(notes)})" if notes else "")


def score_of(gb: Gradebook, assignment: str, student: str) -> Score | None:
    """`student`'s score for `assignment` as `gb` holds it; None when nothing was handed in."""
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        return None
    penalty = float(submission.late_submission_penalty or 0.0)
    raw = float(submission.score or 0.0)
    pending = sum(1 for notebook in submission.notebooks for grade in notebook.grades
                  if grade.cell_type == "markdown" and grade.needs_manual_grade and grade.manual_score is None)
    return Score(total=max(0.0, raw - penalty), max_score=float(submission.max_score or 0.0), raw=raw, penalty=penalty,
                 autograded=float(submission.code_score or 0.0), written=float(submission.written_score or 0.0),
                 pending=pending)


def missing(gb: Gradebook, assignment: str) -> Score:
    """What a hand-in that is missing counts: 0 of the assignment's points (as `nbgrader export` counts it)."""
    top = float(gb.find_assignment(assignment).max_score or 0.0)
    return Score(0.0, top, 0.0, 0.0, 0.0, 0.0, 0)
