"""`python -m autograder extend`: a student's extension of an assignment's due date, in nbgrader's gradebook.

nbgrader keeps extensions (`Gradebook.grant_extension`) with a student's hand-in, and has no command for them. The
extension moves that student's due date; every `python -m autograder grade` run works the late penalty out again
from it (`autograder.grading.engine.apply_late_policy`), so granting one after grading needs no regrading. An extension for
a student who has not handed in yet waits in `extensions.json` beside the gradebook; the grading run that first
grades their hand-in gives it to nbgrader (`grant_waiting_extensions`) before it works the penalty out.
"""
from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.results.scores import duration

WAITING = "extensions.json"  # beside the gradebook: assignment -> student -> {"days": ..., "hours": ...}


def waiting_file(database: Path) -> Path:
    return Path(database).parent / WAITING


def _waiting(path: Path) -> dict[str, dict[str, dict[str, float]]]:
    try:
        return json.loads(path.read_text()) if path.exists() else {}
    except json.JSONDecodeError:
        raise SystemExit(f"{path} is not the JSON `python -m autograder extend` writes: move it aside, then give the "
                         "extensions it held again.") from None


def _keep(path: Path, waiting: dict) -> None:
    waiting = {assignment: students for assignment, students in waiting.items() if students}
    if not waiting:
        path.unlink(missing_ok=True)
        return
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(json.dumps(waiting, indent=1, sort_keys=True) + "\n")
    os.replace(fresh, path)


def grant_extension(database: Path, assignment: str, student: str, days: float = 0, hours: float = 0) -> str:
    """Give `student` `days` and `hours` more for `assignment` (0 and 0: take an extension back, as nbgrader does;
    a new one replaces the old); return what the instructor reads."""
    with Gradebook(f"sqlite:///{database}") as gb:
        try:
            due = gb.find_assignment(assignment).duedate
        except MissingEntry:
            raise SystemExit(f"The gradebook has no assignment {assignment}: release it first "
                             f"(python -m autograder release {assignment}).") from None
        try:
            gb.find_submission(assignment, student)
        except MissingEntry:
            known = any(s.id == student for s in gb.students)
            return _wait(database, assignment, student, days, hours, due, known)
        gb.grant_extension(assignment, student, days=days, hours=hours)
        submission = gb.find_submission(assignment, student)
        extension, due = submission.extension, submission.duedate
    if extension is None:
        return f"{student} / {assignment}: no extension; due {due or 'never'}."
    return (f"{student} / {assignment}: extended by {duration(extension.total_seconds())}; due {due or 'never'} "
            f"(UTC). Run `python -m autograder grade {assignment}` to work the late penalty out again.")


def _wait(database: Path, assignment: str, student: str, days: float, hours: float, due, known: bool) -> str:
    """An extension for a student who has not handed in `assignment` yet, kept until their hand-in is graded."""
    path = waiting_file(database)
    waiting = _waiting(path)
    more = timedelta(days=days, hours=hours)
    if more:
        waiting.setdefault(assignment, {})[student] = {"days": days, "hours": hours}
    else:
        waiting.get(assignment, {}).pop(student, None)
    _keep(path, waiting)
    if not more:
        return f"{student} / {assignment}: no extension; due {due or 'never'}."
    return (f"{student} / {assignment}: extended by {duration(more.total_seconds())}; due "
            + (f"{due + more} (UTC)" if due else "whenever you set the due date, plus that")
            + f". {student} has not handed it in yet: the extension waits in {path.name} and counts from the first "
            "grading of their hand-in."
            + ("" if known else f" ({student} is not in the gradebook yet: if that is not their id, take it back "
                                f"with `python -m autograder extend {assignment} --student {student} --days 0`.)"))


def grant_waiting_extensions(database: Path) -> list[str]:
    """Give nbgrader every waiting extension whose student's hand-in is in the gradebook now; return a line each."""
    path = waiting_file(database)
    waiting = _waiting(path)
    if not waiting:
        return []
    granted = []
    with Gradebook(f"sqlite:///{database}") as gb:
        for assignment, students in waiting.items():
            for student, more in list(students.items()):
                try:
                    gb.find_submission(assignment, student)
                except MissingEntry:
                    continue
                gb.grant_extension(assignment, student, days=more.get("days", 0), hours=more.get("hours", 0))
                del students[student]
                granted.append(f"{student} / {assignment}: the extension you gave before the hand-in counts now; due "
                               f"{gb.find_submission(assignment, student).duedate or 'never'}")
    _keep(path, waiting)
    return granted


def due_date(database: Path, assignment: str, student: str):
    """When `student`'s `assignment` is due (UTC, naive as nbgrader keeps it), their extension included, a granted
    one or one waiting for their first hand-in; None when the assignment has no due date."""
    with Gradebook(f"sqlite:///{database}") as gb:
        try:
            due = gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None
        try:
            submission = gb.find_submission(assignment, student)
            return submission.duedate
        except MissingEntry:
            pass
    more = _waiting(waiting_file(database)).get(assignment, {}).get(student)
    if due is None or not more:
        return due
    return due + timedelta(days=more.get("days", 0), hours=more.get("hours", 0))
