"""`python -m autograder demo`: release the course, hand in a demo class, grade it with nbgrader, print the scores."""
from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

from autograder.demo.submissions import STUDENTS, write_submission
from autograder.grading import GRADING_DIR, Outcome, grade
from autograder.paths import ROOT, notebook_path
from autograder.release import release
from autograder.scores import PENDING
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


def score_table(outcomes: list[Outcome]) -> str:
    """One row per student, one column per notebook (`score/max`), then the reasons to look at."""
    assignments = list(dict.fromkeys(o.assignment for o in outcomes))
    students = list(dict.fromkeys(o.student for o in outcomes))
    cell = {(o.student, o.assignment): o.points.text() for o in outcomes}
    header = ["student"] + [a.split("_", 1)[0] for a in assignments] + ["total"]
    rows = [header]
    for s in students:
        mine = [o.points for o in outcomes if o.student == s]
        total, top = sum(p.total for p in mine), sum(p.max_score for p in mine)
        pending = " (" + PENDING + ")" if any(p.pending for p in mine) else ""
        rows.append([s] + [cell.get((s, a), "-") for a in assignments] + [f"{total:g}/{top:g}{pending}"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"  {o.student} / {o.assignment}: {o.reason}" for o in outcomes if o.reason]
    lines.insert(0, "Scores: autograded and manual points (written answers once graded in formgrader), less the late "
                    "penalty; the same numbers as grades.csv, reports/scores.csv and the feedback.")
    if notes:
        lines += ["", "Needs a look:"] + notes
    return "\n".join(lines)


def write_csv(outcomes: list[Outcome], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "score", "max_score", "reason", "autograde_seconds"])
        for o in outcomes:
            writer.writerow([o.student, o.assignment, o.score, o.max_score, o.reason, f"{o.seconds:.1f}"])


def run_demo(root: Path = ROOT, quiet: bool = True, jobs: int | None = None) -> list[Outcome]:
    print("Building the release with nbgrader generate_assignment ...")
    release(root, quiet=quiet)
    print(f"Handing in {len(STUDENTS)} demo submissions: " + ", ".join(f"{s} ({what})" for s, what in STUDENTS.items()))
    hand_in(root)
    jobs = jobs or os.cpu_count() or 1
    print(f"Grading with `python -m autograder grade --jobs {jobs}` (nbgrader autograde, generate_feedback, export) ...")
    outcomes = grade(root, list(NOTEBOOKS), jobs=jobs, quiet=quiet)
    outcomes.sort(key=lambda o: (list(STUDENTS).index(o.student), list(NOTEBOOKS).index(o.assignment)))
    write_csv(outcomes, root / "reports" / "demo_scores.csv")
    written = sum(o.written for o in outcomes if o.student == outcomes[0].student)
    print()
    print(f"Points per student and notebook (of them, {written:g} points of written answers a student "
          "wait for manual grading in formgrader):")
    print(score_table(outcomes))
    print()
    print(f"Gradebook:   {root / 'gradebook.db'}")
    print(f"Grades CSV:  {root / 'grades.csv'}  (nbgrader export)")
    print(f"Score table: {root / 'reports' / 'demo_scores.csv'}")
    print(f"Class report: {root / 'reports' / 'class_report.md'} (pass rates, named mistakes, histogram)")
    print(f"Feedback:    {root / 'feedback'}/<student>/<assignment>/<notebook>.html")
    return outcomes
