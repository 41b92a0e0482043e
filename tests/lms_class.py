"""A small graded class for the LMS tests, written with nbgrader's own Gradebook API (no notebook is run): the demo
class's students with their names and emails, two assignments with code and written answers, a due date, a late
hand-in whose penalty is the course's late policy's (a late-submission plugin in the nbgrader_config.py beside the
gradebook, as the instructor guide describes), a missing hand-in and written answers not graded yet."""
from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from nbgrader.api import Gradebook
from sqlalchemy import text

# student id -> (first name, last name, email); the ids are the demo class's (autograder/demo/submissions.py)
STUDENTS = {
    "demo_perfect": ("Ada", "Lovelace", "ada@uni.example"),
    "demo_partial": ("Jane", "Doe, Jr.", "jane@uni.example"),
    "demo_empty": ("Zoë", "Ångström", "zoe@uni.example"),
    "demo_broken": ("Eric", "Roe", "eric@uni.example"),
    "demo_invalid": ("Grace", "Hopper", "grace@uni.example"),
}
A, B = "03_masking", "04_attention_block"
# assignment -> grade cells (name, points, "code" or "markdown")
CELLS = {A: [("causal_mask_test", 4, "code"), ("padding_mask_test", 3, "code"), ("q_masks", 2, "markdown")],
         B: [("mha_test", 6, "code"), ("layernorm_test", 4, "code")]}
DUE = datetime(2026, 12, 4, 17, 0)  # both assignments' due date (UTC)
# The course's late policy: half a point per started half day late (nbgrader's LateSubmissionPlugin, subclassed in
# nbgrader_config.py as the instructor guide says)
CONFIG = """import math

from nbgrader.plugins import LateSubmissionPlugin


class HalfPointPerHalfDay(LateSubmissionPlugin):
    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return math.ceil(total_seconds_late / 43200) / 2


c = get_config()
c.AssignLatePenalties.plugin_class = HalfPointPerHalfDay
"""


def late_by(penalty: float) -> timedelta:
    """How late a hand-in is that the policy charges `penalty` (a little less than penalty * 24 h)."""
    return timedelta(hours=penalty * 24 - 1)


# (student, assignment) -> points per cell (None: written answer not graded yet), late penalty; absent: not handed in
HANDED_IN = {
    ("demo_perfect", A): ([4, 3, 2], 0.0), ("demo_perfect", B): ([6, 4], 0.0),
    ("demo_partial", A): ([4, 0, 1], 2.0), ("demo_partial", B): ([3, 4], 0.0),
    ("demo_empty", A): ([0, 0, 0], 0.0),
    ("demo_broken", A): ([4, 3, None], 0.0), ("demo_broken", B): ([6, 0], 0.0),
    ("demo_invalid", A): ([0, 0, 0], 0.0), ("demo_invalid", B): ([0, 0], 0.0),
}
# what score_of gives (total after the penalty), worked out by hand
EXPECTED = {("demo_perfect", A): 9, ("demo_perfect", B): 10, ("demo_partial", A): 3, ("demo_partial", B): 7,
            ("demo_empty", A): 0, ("demo_broken", A): 7, ("demo_broken", B): 6, ("demo_invalid", A): 0,
            ("demo_invalid", B): 0}


def build_gradebook(path: Path) -> Path:
    """The class in a fresh gradebook at `path`."""
    with Gradebook(f"sqlite:///{path}") as gb:
        gb.db.execute(text("PRAGMA synchronous=OFF"))  # a scratch file: no need to wait for the disk at each commit
        for assignment, cells in CELLS.items():
            gb.add_assignment(assignment, duedate=DUE)
            gb.add_notebook(assignment, assignment)
            for name, points, kind in cells:
                gb.add_grade_cell(name, assignment, assignment, max_score=points, cell_type=kind)
                if kind == "markdown":
                    gb.add_solution_cell(name, assignment, assignment)
        for student, (first, last, email) in STUDENTS.items():
            gb.add_student(student, first_name=first, last_name=last, email=email)
        for (student, assignment), (points, penalty) in HANDED_IN.items():
            handed_in = DUE + late_by(penalty) if penalty else DUE - timedelta(hours=2)
            with gb.db.no_autoflush:  # nbgrader's add_submission otherwise warns (SAWarning) as it builds the rows
                gb.add_submission(assignment, student, timestamp=handed_in)
            for (name, _, kind), got in zip(CELLS[assignment], points):
                grade = gb.find_grade(name, assignment, assignment, student)
                if kind == "markdown":
                    grade.needs_manual_grade, grade.manual_score = got is None, got
                else:
                    grade.auto_score, grade.needs_manual_grade = got, False
            gb.find_submission_notebook(assignment, assignment, student).late_submission_penalty = penalty
        gb.db.commit()
    return path


def grade_written_answer(path: Path) -> Path:
    """What formgrader writes when the instructor gives demo_broken's written answer its 1 point."""
    with Gradebook(f"sqlite:///{path}") as gb:
        grade = gb.find_grade("q_masks", A, A, "demo_broken")
        grade.manual_score, grade.needs_manual_grade = 1, False
        gb.db.commit()
    return path


def class_gradebook(tmp_path_factory, name: str) -> Path:
    """A copy of the class, named `name`, in a folder of its own with the course's nbgrader_config.py (its late
    policy); the class is built once per test session."""
    built = tmp_path_factory.getbasetemp() / "lms-class.db"
    if not built.exists():
        build_gradebook(built)
    return in_course(Path(shutil.copy(built, tmp_path_factory.mktemp("lms-class") / name)))


def in_course(gradebook: Path) -> Path:
    """`gradebook`, with the course's nbgrader_config.py beside it (its late policy)."""
    (gradebook.parent / "nbgrader_config.py").write_text(CONFIG)
    return gradebook
