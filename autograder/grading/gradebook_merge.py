"""Copy one submission's autograded results from a worker's private gradebook into the class gradebook.

Each parallel `nbgrader autograde` writes into its own copy of the gradebook, so no two processes ever
write one SQLite file; the grading process alone merges the results into `gradebook.db`, one committed
transaction per submission. Only what autograde decides is copied: the autograded scores and comments, the
submission's time stamp and the late penalty nbgrader's LateSubmissionPlugin assigned to each notebook. What
the instructor wrote in the class gradebook (manual scores and comments, extra credit, due dates, extensions)
is kept.
"""
from __future__ import annotations

import shutil
import sqlite3
import warnings
from pathlib import Path

from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning


def snapshot(database: Path, target: Path) -> Path:
    """A consistent copy of the SQLite file `database` at `target` (SQLite's online backup)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    with sqlite3.connect(database) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    return target


def worker_gradebook(template: Path, folder: Path, assignment: str, student: str) -> Path:
    """A private gradebook for one autograde job, copied from the run's template."""
    path = folder / f"{assignment}--{student}.db"
    shutil.copyfile(template, path)
    return path


def merge_submission(source: Path, target: Gradebook, assignment: str, student: str) -> None:
    """Write the autograded scores and comments of (assignment, student) from `source` into `target`."""
    with Gradebook(f"sqlite:///{source}") as worker:
        submitted = worker.find_submission(assignment, student)
        found = worker.find_student(student)
        target.update_or_create_student(student, first_name=found.first_name, last_name=found.last_name,
                                        email=found.email)
        with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush notice
            warnings.simplefilter("ignore", SAWarning)
            target.update_or_create_submission(assignment, student, timestamp=submitted.timestamp)
        for notebook in submitted.notebooks:
            target.find_submission_notebook(notebook.name, assignment, student).late_submission_penalty = \
                notebook.late_submission_penalty
            for grade in notebook.grades:
                into = target.find_grade(grade.name, notebook.name, assignment, student)
                into.auto_score = grade.auto_score
                # nbgrader's own rule (SaveAutoGrades), on the class gradebook's grade: the job's copy may still
                # hold a manual score that the run has since dropped as stale (grading.stale_overrides).
                into.needs_manual_grade = into.manual_score is not None or into.auto_score is None
            for comment in notebook.comments:
                target.find_comment(comment.name, notebook.name, assignment, student).auto_comment = \
                    comment.auto_comment
        target.db.commit()
