"""Grade what is in `submitted/` with nbgrader, and make sure every submission ends with a grade.

nbgrader stays the system of record: `autograde`, `generate_feedback` and `export` do the work and
`gradebook.db` holds the result. Around them: a submission nbgrader cannot read (invalid JSON, say)
still gets a zero grade row and a readable reason, and no submission stops the others.
"""
from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy.exc import SAWarning

from autograder.nbgrader_run import NbgraderTimeout, nbgrader
from autograder.paths import notebook_path


# Wall-clock limit for grading one notebook of one student (each cell also has its own timeout in
# nbgrader_config.py). Past it, the notebook's nbgrader process and kernel are killed.
NOTEBOOK_TIME_LIMIT = 900


@dataclass
class Outcome:
    student: str
    assignment: str
    score: float  # autograded points
    max_score: float  # autograded points available
    written: float  # points of the written answers, graded by hand in formgrader
    reason: str  # "" when nothing needs the instructor's attention
    seconds: float = 0.0  # wall time of its `nbgrader autograde`


def gradebook(root: Path) -> Gradebook:
    return Gradebook(f"sqlite:///{root / 'gradebook.db'}")


def students_in(root: Path) -> list[str]:
    submitted = root / "submitted"
    return sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.exists() else []


def unreadable_reason(path: Path) -> str:
    """Why nbgrader cannot grade the notebook at `path`, or "" when it can."""
    if not path.exists():
        return f"no notebook named {path.name} was handed in"
    try:
        json.loads(path.read_text())
        nbformat.validate(nbformat.read(path, as_version=4))
    except json.JSONDecodeError as exc:
        return f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}): graded 0; ask for a new upload"
    except Exception as exc:  # noqa: BLE001: nbformat's validation errors vary by version
        return f"{path.name} is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]}): graded 0"
    return ""


def first_error(path: Path) -> str:
    """The first error an autograded notebook shows, outside the graded test cells, as a readable reason."""
    if not path.exists():
        return ""
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("grade"):
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                return f"cell {index} raised {output.ename}: {output.evalue[:200]}"
    return ""


def record_zero(root: Path, assignment: str, student: str, reason: str) -> None:
    """A zero grade row, with the reason as the autograder's comment, for a submission nbgrader could not grade."""
    with gradebook(root) as gb:
        gb.update_or_create_student(student)
        try:
            gb.remove_submission(assignment, student)
        except MissingEntry:
            pass
        with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush notice
            warnings.simplefilter("ignore", SAWarning)
            submission = gb.add_submission(assignment, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0
            for comment in notebook.comments:
                comment.auto_comment = reason
        gb.db.commit()


def grade(root: Path, assignments: list[str], quiet: bool = True) -> list[Outcome]:
    """Autograde every submission of `assignments` under `root`, then feedback and export."""
    outcomes, seconds = [], {}
    for assignment in assignments:
        reasons = {s: unreadable_reason(notebook_path(root / "submitted" / s, assignment))
                      for s in students_in(root) if (root / "submitted" / s / assignment).exists()}
        # One student per call: a submission nbgrader rejects cannot take the others down with it.
        for student, reason in reasons.items():
            if not reason:
                started = time.perf_counter()
                try:
                    result = nbgrader("autograde", assignment, f"--student={student}", "--force", root=root,
                                      check=False, quiet=quiet, timeout=NOTEBOOK_TIME_LIMIT)
                except NbgraderTimeout:
                    reasons[student] = (f"grading stopped after {NOTEBOOK_TIME_LIMIT} s, the limit for a whole "
                                           "notebook (an endless loop, or training far too long?): graded 0")
                    continue
                finally:
                    seconds[(student, assignment)] = time.perf_counter() - started
                if result.returncode != 0:
                    reasons[student] = "nbgrader could not grade it: " + _last_error_line(result.stderr)
        for student, reason in reasons.items():
            if reason:
                record_zero(root, assignment, student, reason)
        nbgrader("generate_feedback", assignment, "--force", root=root, quiet=quiet, check=False)
        with gradebook(root) as gb:
            for student, reason in reasons.items():
                submission = gb.find_submission(assignment, student)
                reason = reason or first_error(notebook_path(root / "autograded" / student, assignment))
                outcomes.append(Outcome(student, assignment, submission.code_score, submission.max_code_score,
                                        submission.max_written_score, reason, seconds.get((student, assignment), 0.0)))
    nbgrader("export", f"--to={root / 'grades.csv'}", root=root, quiet=quiet)
    return outcomes


def _last_error_line(stderr: str | None) -> str:
    lines = [l for l in (stderr or "").splitlines() if l.strip()]
    errors = [l for l in lines if "Error" in l or "error" in l]
    return (errors or lines or ["no message"])[-1][-300:]
