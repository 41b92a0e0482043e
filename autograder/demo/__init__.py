"""`python -m autograder demo`: release the course, hand in a demo class, grade it with nbgrader, print the scores."""
from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

from autograder.box.check import check
from autograder.box.who import BoxUnavailable
from autograder.demo.submissions import STUDENTS, write_submission
from autograder.grading.engine import GRADING_DIR, Outcome, grade
from autograder.grading.job import Limits
from autograder.paths import ROOT, notebook_path
from autograder.authoring.release import release
from autograder.results.report import needs_a_look, read_term, score_table
from course.about import NOTEBOOKS


def hand_in(root: Path) -> None:
    """Fresh `submitted/<student>/<assignment>/` folders for every demo student and notebook (and a fresh ledger, so
    that every one is graded again)."""
    shutil.rmtree(root / GRADING_DIR, ignore_errors=True)
    for student in STUDENTS:
        for folder in ("submitted", "autograded", "feedback"):
            shutil.rmtree(root / folder / student, ignore_errors=True)
        for assignment in NOTEBOOKS:
            write_submission(student, notebook_path(root / "release", assignment),
                             notebook_path(root / "source", assignment),
                             notebook_path(root / "submitted" / student, assignment))


def write_csv(outcomes: list[Outcome], path: Path) -> None:
    """A row per hand-in: its score as every output gives it (autograder.results.scores: `max_score` includes the written
    answers, `score` is less the late penalty), the written answers not graded yet, the reason and grading time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "score", "max_score", "late_penalty", "written_answers_not_graded",
                         "reason", "autograde_seconds"])
        for o in outcomes:
            writer.writerow([o.student, o.assignment, f"{o.points.total:g}", f"{o.points.max_score:g}",
                             f"{o.points.penalty:g}", o.points.pending, o.reason, f"{o.seconds:.1f}"])


def run_demo(root: Path = ROOT, quiet: bool = True, jobs: int | None = None) -> list[Outcome]:
    print("Building the release with nbgrader generate_assignment ...")
    release(root, quiet=quiet)
    print(f"Handing in {len(STUDENTS)} demo submissions: " + ", ".join(f"{s} ({what})" for s, what in STUDENTS.items()))
    hand_in(root)
    jobs = jobs or os.cpu_count() or 1
    print(f"Grading with `python -m autograder grade --jobs {jobs}` (nbgrader autograde, generate_feedback, export) ...")
    try:
        print(f"Each notebook runs {check().describe()}.")
        boxed = True
    except BoxUnavailable as why:
        print(f"This machine cannot box a notebook ({why}): the demo grades its own hand-ins, which the course wrote, "
              "without one. A class's hand-ins need it: docs/instructor-guide.md, Security.")
        boxed = False
    outcomes = grade(root, list(NOTEBOOKS), jobs=jobs, quiet=quiet, limits=Limits(boxed=boxed))
    outcomes.sort(key=lambda o: (list(STUDENTS).index(o.student), list(NOTEBOOKS).index(o.assignment)))
    write_csv(outcomes, root / "reports" / "demo_scores.csv")
    print()
    print(score_table(read_term(root / "gradebook.db"), needs_a_look(outcomes)))
    print()
    print(f"Gradebook:   {root / 'gradebook.db'}")
    print(f"Grades CSV:  {root / 'grades.csv'}  (nbgrader export)")
    print(f"Score table: {root / 'reports' / 'demo_scores.csv'}")
    print(f"Class report: {root / 'reports' / 'class_report.md'} (pass rates, named mistakes, histogram)")
    print(f"Feedback:    {root / 'feedback'}/<student>/<assignment>/<notebook>.html")
    return outcomes
