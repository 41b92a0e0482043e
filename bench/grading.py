"""Benchmark: `python -m autograder grade --jobs N` against plain sequential `nbgrader autograde` on one class.

Usage: python bench/grading.py [--students 30] [--jobs 2] [--assignments 01_positional_encoding ...]
Builds a scratch copy of the course, releases it, and hands in a class of `--students` made of the demo submissions
(perfect, partial, empty, broken, invalid JSON, in turn). Then, in one run on the same machine: plain nbgrader
(`nbgrader autograde <assignment> --force`, one process per assignment, every student in turn) and the course's
parallel grader (autograding only: feedback and export are left out of both timings), each on a gradebook without
submissions. Prints the wall times, their ratio, the time per graded notebook, and a markdown row for bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nbgrader.api import Gradebook, MissingEntry  # noqa: E402

from autograder.demo.submissions import STUDENTS, write_submission  # noqa: E402
from autograder.grading import GRADING_DIR, grade  # noqa: E402
from autograder.nbgrader_run import nbgrader  # noqa: E402
from autograder.paths import copy_course, notebook_path  # noqa: E402
from autograder.release import release  # noqa: E402
from course.about import NOTEBOOKS  # noqa: E402

def hand_in(root: Path, students: int, assignments: list[str]) -> list[str]:
    kinds = list(STUDENTS)
    ids = []
    for i in range(students):
        kind = kinds[i % len(kinds)]
        student = f"{kind}_{i:02d}"
        for assignment in assignments:
            write_submission(kind, notebook_path(root / "release", assignment), notebook_path(root / "source", assignment),
                             notebook_path(root / "submitted" / student, assignment))
        ids.append(student)
    return ids


def forget_grades(root: Path, students: list[str], assignments: list[str]) -> None:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for assignment in assignments:
            for student in students:
                try:
                    gb.remove_submission(assignment, student)
                except MissingEntry:
                    pass
    for folder in ("autograded", "feedback", GRADING_DIR):
        shutil.rmtree(root / folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--assignments", nargs="+", default=list(NOTEBOOKS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = copy_course(Path(scratch))
        print("releasing ...", flush=True)
        release(root, quiet=True)
        students = hand_in(root, args.students, args.assignments)
        notebooks = len(students) * len(args.assignments)

        print(f"plain nbgrader autograde, {notebooks} notebooks ...", flush=True)
        started = time.perf_counter()
        for assignment in args.assignments:
            nbgrader("autograde", assignment, "--force", root=root, quiet=True, check=False)
        plain = time.perf_counter() - started
        forget_grades(root, students, args.assignments)

        print(f"python -m autograder grade --jobs {args.jobs} ...", flush=True)
        started = time.perf_counter()
        grade(root, args.assignments, jobs=args.jobs, feedback=False, show_progress=False)
        ours = time.perf_counter() - started

    print(f"plain nbgrader: {plain:.0f} s ({plain / notebooks:.1f} s per notebook); "
          f"autograder grade --jobs {args.jobs}: {ours:.0f} s ({ours / notebooks:.1f} s per notebook); "
          f"ratio {plain / ours:.2f}")
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"| {args.students} students x {len(args.assignments)} notebooks | {machine} | {plain:.0f} s "
          f"({plain / notebooks:.1f} s/notebook) | {ours:.0f} s ({ours / notebooks:.1f} s/notebook), --jobs {args.jobs} | "
          f"{plain / ours:.2f} | {datetime.date.today()} |")


if __name__ == "__main__":
    main()
