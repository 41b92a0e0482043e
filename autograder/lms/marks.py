"""What goes to the LMS for one student and assignment: nbgrader's score after the late penalty (`score_of`), and
whether it may go: never a score whose late penalty is stale (`refuse_stale`), never one above the LMS's maximum
(`maximum_problems`), and not handed in or written answers not graded yet (`Score.waiting`: never graded, or handed
in again after they were) only as the instructor says."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook

from autograder.lms.csv_files import number
from autograder.results.scores import PENDING, Score, refuse_stale, score_of


@dataclass(frozen=True)
class Mark:
    student: str
    assignment: str
    max_score: float
    score: Score | None  # None: nothing handed in

    @property
    def pending(self) -> int:
        return self.score.pending if self.score else 0

    def value(self, missing: str = "blank") -> float | None:
        """The number to write: the score, 0 for a missing hand-in when `missing` is "zero", else None (blank)."""
        if self.score is None:
            return 0.0 if missing == "zero" else None
        return self.score.total

    def note(self) -> str:
        """What the LMS's comment or feedback says beside the number."""
        if self.score is None:
            return "not handed in"
        return self.score.text()


def upload_cell(mark: Mark, missing: str, pending: str, decimal: str, held: str) -> tuple[str, str]:
    """The cell to write for `mark`, and a line when it keeps `held`, the score the LMS holds (the roster's cell):
    a blank would erase it (Moodle's import reads a blank as no grade), so the LMS's own score is written back."""
    value = None if mark.pending and pending == "blank" else mark.value(missing)
    if value is not None or not held:
        return number(value, decimal), ""
    why = f"{PENDING} (--pending blank)" if mark.score else "not handed in (--missing blank)"
    return held, f"{mark.student} / {mark.assignment}: kept the LMS's score {held}, {why}"


def assignment_max(gb: Gradebook, assignment: str) -> float:
    return float(gb.find_assignment(assignment).max_score or 0.0)


def marks_of(gb: Gradebook, assignments: list[str], course: Path, nothing: str) -> dict[tuple[str, str], Mark]:
    """(student id, assignment) -> Mark for every student in the gradebook and every assignment named; stops (saying
    `nothing`, what the command then did not do) when a late penalty is not that of the grades as they stand in
    the course at `course` (autograder.results.scores.refuse_stale)."""
    known = {a.name for a in gb.assignments}
    unknown = [a for a in assignments if a not in known]
    if unknown:
        raise SystemExit(f"The gradebook has no assignment {', '.join(unknown)}: it has "
                         f"{', '.join(sorted(known)) or 'none yet'}. Grade it first (python -m autograder grade "
                         f"{unknown[0]}), or check the name.")
    refuse_stale(gb, assignments, course, nothing)
    marks = {}
    for assignment in assignments:
        top = assignment_max(gb, assignment)
        for student in gb.students:
            marks[student.id, assignment] = Mark(student.id, assignment, top, score_of(gb, assignment, student.id))
    return marks


def pending_lines(marks: dict[tuple[str, str], Mark]) -> list[str]:
    """`bob / 03_masking: 1 written answer not graded yet`, with `(earlier answer: 1/2)` for one handed in again after
    it was graded (its earlier mark is in the score so far): the hand-ins whose score is not final."""
    return [f"{m.student} / {m.assignment}: {m.score.pending_text()}" for m in marks.values() if m.pending]


def refuse_pending(marks: dict[tuple[str, str], Mark], pending: str, choices: str) -> None:
    """Stop when written answers wait for grading and the instructor did not say what to do with them; `choices`
    says what the command's --pending offers instead."""
    lines = pending_lines(marks)
    if lines and pending == "refuse":
        raise SystemExit("Nothing sent or written: these hand-ins have written answers not graded yet, so their score "
                         "is not final:\n" + "\n".join(f"  {line}" for line in lines) + "\nGrade them in formgrader "
                         f"(then python -m autograder grade again), or run again with {choices}.")


def maximum_problems(assignment: str, where: str, maximum: float | None, marks: dict[tuple[str, str], Mark],
                     fix: str, written: str = "") -> list[str]:
    """Why `assignment`'s scores may not go to `where`, out of `maximum` in the LMS (None: unknown, said by the
    caller; `written`: that maximum as the LMS's file writes it, `10,00`): another scale than the notebook's (the LMS
    would read 9 of 11 as 9 of its own points), or a score above it (nbgrader's extra credit), which an LMS cuts or
    refuses. `fix`: what to change in the LMS."""
    if maximum is None:
        return []
    mine = [m for (s, a), m in marks.items() if a == assignment]
    top = mine[0].max_score if mine else 0.0
    if abs(maximum - top) > 1e-9:
        return [f"{assignment} is out of {top:g} points here, but {where} is out of {written or f'{maximum:g}'}: "
                f"{fix}"]
    over = [m for m in mine if (m.value("zero") or 0.0) > maximum + 1e-9]
    if over:
        return [f"{assignment}: " + ", ".join(f"{m.student} has {m.value():g}" for m in over) + f", above the "
                f"{maximum:g} points of {where} (extra credit in formgrader?). The LMS would cut or refuse such a "
                "score, so nothing is written: take the extra credit off in formgrader, grade again, and run this "
                "again."]
    return []
