"""A student's score for an assignment: the one number every output gives (issue 27.1).

The terminal table of `python -m autograder grade`, `reports/scores.csv`, the class report and the feedback pages all
read it from `score_of`, and it is nbgrader's own arithmetic, so `grades.csv` (`nbgrader export`) gives the same
number: the autograded points, with every manual override and written answer graded in formgrader in their place
(nbgrader's `Submission.score`), less the late penalty (`late_submission_penalty`), never below 0. What nbgrader
cannot say in one number, written answers not graded yet, is said beside it wherever the number is shown.

A written answer is not graded yet when nbgrader asks for it to be graded by hand (`Grade.needs_manual_grade`, what
formgrader lists as needing grading), whether it was never graded (it counts 0) or was handed in again after it was:
nbgrader then keeps the earlier answer's mark, which counts until a person grades the new answer, and every output
names it as the earlier answer's (`earlier answer: 1/2`). `waiting_answers` is that one definition: the tables, the
reports, the feedback pages, the LMS exports and pushes all read it through `Score.waiting`.

The late penalty is nbgrader's own computation (`late_policy`, `penalty_now`): `python -m autograder grade` stores it
in the gradebook at every run. What changes it without a grading run (a written answer graded in formgrader under a
policy that takes a share of the points, an extension, a due date, the policy itself) leaves the stored penalty
stale until the next run: `stale_penalties` finds it, and no output that leaves the course uses such a number.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

PENDING = "written answers not graded yet"
PENDING_MARK = "*"  # a table's short form of PENDING, said once below the table (`PENDING_NOTE`)
PENDING_NOTE = f"{PENDING_MARK} {PENDING}: they count 0 until you grade them (instructor guide, section 4)."
# Below PENDING_NOTE when an answer was handed in again after it was graded, then a line per such hand-in
EARLIER_NOTE = "  Handed in again after you graded them; the earlier mark counts until you grade the new answer:"
# Below a table with a late penalty in it: formgrader, nbgrader's own page, cannot show the penalty
LATE_NOTE = "(late: -N): the late penalty, taken off everywhere; formgrader alone shows the points before it."


@dataclass(frozen=True)
class Waiting:
    """A written answer that needs grading by hand (nbgrader's `needs_manual_grade`)."""
    cell: str  # its grade id
    notebook: str
    max_score: float
    earlier: float | None  # the mark of the answer handed in before it, counted until it is graded; None: never graded


def earlier_text(waiting: tuple[Waiting, ...]) -> str:
    """`earlier answer: 1/2`, `earlier answers: 1/2, 2/2`; "" when no waiting answer had a mark."""
    marks = [f"{w.earlier:g}/{w.max_score:g}" for w in waiting if w.earlier is not None]
    return f"earlier answer{'s' if len(marks) > 1 else ''}: {', '.join(marks)}" if marks else ""


@dataclass(frozen=True)
class Score:
    total: float  # what the student has: raw less the late penalty, at least 0 (grades.csv's `score`)
    max_score: float  # the assignment's points, written answers included (grades.csv's `max_score`)
    raw: float  # autograded and manual points before the penalty (grades.csv's `raw_score`)
    penalty: float  # the late penalty (grades.csv's `late_submission_penalty`)
    autograded: float  # the code cells' points as they count (a manual override in place of the autograder's)
    written: float  # the written answers' points as they count (an earlier answer's mark included)
    waiting: tuple[Waiting, ...] = ()  # written answers that need grading by hand (`waiting_answers`)

    @property
    def pending(self) -> int:
        """How many written answers need grading by hand."""
        return len(self.waiting)

    @property
    def earlier(self) -> str:
        """`earlier answer: 1/2` while an answer handed in again after it was graded waits; else ""."""
        return earlier_text(self.waiting)

    def text(self) -> str:
        """`9/11`, `0/11 (late: -9)`, `9/11 (written answers not graded yet)`, `4/5 (written answers not graded yet;
        earlier answer: 1/2)`."""
        notes = (([f"late: -{self.penalty:g}"] if self.penalty else []) + ([PENDING] if self.pending else [])
                 + ([self.earlier] if self.earlier else []))
        return f"{self.total:g}/{self.max_score:g}" + (f" ({'; '.join(notes)})" if notes else "")

    def pending_text(self) -> str:
        """`1 written answer not graded yet`, `1 written answer not graded yet (earlier answer: 1/2)`."""
        return pending_count(self.pending) + (f" ({self.earlier})" if self.earlier else "")

    def cell(self) -> str:
        """The same for a table: `9/11`, `0/11 (late: -9)`, `9/11*` (`PENDING_MARK`, said once below the table)."""
        late = f" (late: -{self.penalty:g})" if self.penalty else ""
        return f"{self.total:g}/{self.max_score:g}{late}" + (PENDING_MARK if self.pending else "")


def score_of(gb: Gradebook, assignment: str, student: str) -> Score | None:
    """`student`'s score for `assignment` as `gb` holds it; None when nothing was handed in."""
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        return None
    penalty = float(submission.late_submission_penalty or 0.0)
    raw = float(submission.score or 0.0)
    return Score(total=max(0.0, raw - penalty), max_score=float(submission.max_score or 0.0), raw=raw, penalty=penalty,
                 autograded=float(submission.code_score or 0.0), written=float(submission.written_score or 0.0),
                 waiting=waiting_answers(submission))


def waiting_answers(submission) -> tuple[Waiting, ...]:
    """The written answers of `submission` (nbgrader's SubmittedAssignment) that a person has to grade: those nbgrader
    flags for manual grading, as formgrader lists them. One handed in again after it was graded keeps the earlier
    answer's mark in nbgrader (`manual_score`), and nbgrader's score counts it: it is the earlier answer's."""
    return tuple(Waiting(grade.name, notebook.name, float(grade.max_score or 0.0),
                         None if grade.manual_score is None else float(grade.manual_score))
                 for notebook in submission.notebooks for grade in notebook.grades
                 if grade.cell_type == "markdown" and grade.needs_manual_grade)


def missing(gb: Gradebook, assignment: str) -> Score:
    """What a hand-in that is missing counts: 0 of the assignment's points (as `nbgrader export` counts it)."""
    top = float(gb.find_assignment(assignment).max_score or 0.0)
    return Score(0.0, top, 0.0, 0.0, 0.0, 0.0)


def earlier_lines(scores: dict[tuple[str, str], Score]) -> list[str]:
    """`alice / 02_attention: earlier answer: 1/2` for each (student, assignment) whose written answer, handed in
    again after it was graded, waits to be graded again (below a table, after EARLIER_NOTE)."""
    return [f"{student} / {assignment}: {score.earlier}" for (student, assignment), score in sorted(scores.items())
            if score is not None and score.earlier]


def pending_count(count: int) -> str:
    """`1 written answer not graded yet`, `2 written answers not graded yet`."""
    return f"{count} {PENDING.replace('answers', 'answer', 1) if count == 1 else PENDING}"


def duration(seconds: float) -> str:
    """A length of time as a person reads it (how late, an extension): `47 s`, `12 min`, `3 h 12 min`, `2 days 4 h`."""
    seconds = round(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} day{'' if days == 1 else 's'}" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    if minutes:
        return f"{minutes} min" + (f" {secs} s" if secs and minutes < 10 else "")
    return f"{secs} s"


def late_policy(course: Path):
    """nbgrader's AssignLatePenalties as `course`'s nbgrader_config.py sets it now (its plugin, its penalty method);
    nbgrader's default, no penalty, for a course without that file."""
    from nbgrader.preprocessors import AssignLatePenalties
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader
    course = Path(course)
    config = (PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
              if (course / "nbgrader_config.py").is_file() else Config())
    assigner = AssignLatePenalties(config=config)
    assigner.init_plugin()
    return assigner


def policy_name(assigner) -> str:
    """`LateSubmissionPlugin zero`: the plugin and its penalty method, as the instructor configured them."""
    plugin = assigner.plugin_inst
    return type(plugin).__name__ + (f" {plugin.penalty_method}" if hasattr(plugin, "penalty_method") else "")


def penalty_now(assigner, submission, notebook) -> float | None:
    """The late penalty of `notebook` (of `submission`) as nbgrader's plugin gives it now: from the due date with the
    student's extension, the hand-in's time and the notebook's points as they stand, manual grades included (what
    nbgrader's AssignLatePenalties does as it autogrades). None: not late."""
    late = submission.total_seconds_late
    if late <= 0:
        return None
    penalty = assigner.plugin_inst.late_submission_penalty(submission.student.id, notebook.score, late)
    return None if penalty is None else float(assigner._check_late_penalty(notebook, penalty))


def stale_penalties(gb: Gradebook, assignments: list[str], assigner) -> list[str]:
    """`bob / 03_masking: late penalty 0 in the gradebook, 11 now`, for every hand-in of `assignments` whose stored
    penalty is not what the policy gives now."""
    found = []
    for assignment in assignments:
        try:
            submissions = gb.find_assignment(assignment).submissions
        except MissingEntry:
            continue
        for submission in submissions:
            held = sum(float(n.late_submission_penalty or 0.0) for n in submission.notebooks)
            now = sum(penalty_now(assigner, submission, n) or 0.0 for n in submission.notebooks)
            if abs(held - now) > 1e-9:
                found.append(f"{submission.student.id} / {assignment}: late penalty {held:g} in the gradebook, "
                             f"{now:g} now")
    return sorted(found)


def refuse_stale(gb: Gradebook, assignments: list[str], course: Path, nothing: str) -> None:
    """Stop, saying what to run, when a late penalty in the gradebook is not the one of the grades as they stand now
    (`nothing`: what the command then did not do, "Nothing written")."""
    stale = stale_penalties(gb, assignments, late_policy(course))
    if stale:
        raise SystemExit(f"{nothing}: the gradebook's late penalties are not yet those of the grades as they stand "
                         "(written answers graded, an extension, a due date or the late policy changed since the "
                         "last grading run):\n" + "\n".join(f"  {line}" for line in stale)
                         + f"\nRun `python -m autograder grade {' '.join(assignments)}` (it regrades nothing "
                         "unchanged; it works the penalties out again and writes grades.csv, the reports and the "
                         "feedback anew), then run this again.")
