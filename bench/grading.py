"""Benchmark: `python -m autograder grade --jobs N` against plain sequential `nbgrader autograde` on one class.

Usage: python bench/grading.py [--students 30] [--jobs 2] [--assignments 01_positional_encoding ...] [--no-plain]
                               [--dask]
Builds a scratch copy of the course, releases it, and hands in a class of `--students` made of the demo submissions
(perfect, partial, empty, broken, invalid JSON, in turn). Then, in one run on the same machine: plain nbgrader
(`nbgrader autograde <assignment> --force`, one process per assignment, every student in turn) and the course's
parallel grader (autograding only: feedback and export are left out of both timings), each on a gradebook without
submissions. Prints the wall times, their ratio, the time per graded notebook, and a markdown row for bench/README.md.
With --dask, the same class is then graded once more with `--scheduler` on a Dask scheduler and two workers
started on this machine (one thread each, each in its own copy of the course), and the row gives that time and
its ratio to `--jobs N`: what the engine costs. --no-plain leaves plain nbgrader out.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nbgrader.api import Gradebook, MissingEntry  # noqa: E402

from autograder.demo.submissions import STUDENTS, write_submission  # noqa: E402
from autograder.grading.engine import GRADING_DIR, grade  # noqa: E402
# nbgrader's own autograde refuses in the course directory: the bench runs it unboxed, as the baseline it measures
from autograder.grading.execute_in_a_job import UNBOXED_OPTION  # noqa: E402
from autograder.nbgrader_run import nbgrader  # noqa: E402
from autograder.paths import copy_course, notebook_path  # noqa: E402
from autograder.authoring.release import release  # noqa: E402
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


@contextlib.contextmanager
def local_cluster(folder: Path, workers: int = 2):
    """The address of a Dask scheduler with `workers` workers (one thread each, each in its own copy of the
    course), all started as separate processes here and all ended on leaving."""
    started = []

    def start(*command: str, cwd: Path) -> None:
        log = (folder / f"{len(started)}.log").open("w")
        started.append(subprocess.Popen([sys.executable, "-m", *command], cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                        env=dict(os.environ, PYTHONPATH=str(cwd)), start_new_session=True))
    try:
        start("distributed.cli.dask_scheduler", "--port", "0", "--dashboard-address", ":0", "--scheduler-file",
              str(folder / "scheduler.json"), cwd=folder)
        while not (folder / "scheduler.json").exists():
            time.sleep(0.2)
        address = json.loads((folder / "scheduler.json").read_text())["address"]
        for i in range(workers):
            scratch = copy_course(folder / f"worker-{i}")
            start("distributed.cli.dask_worker", address, "--nthreads", "1", "--dashboard-address", ":0",
                  "--local-directory", str(scratch / "dask"), cwd=scratch)
        from distributed import Client
        with Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--assignments", nargs="+", default=list(NOTEBOOKS))
    parser.add_argument("--no-plain", action="store_true", help="leave plain nbgrader out")
    parser.add_argument("--dask", action="store_true", help="also grade on a Dask scheduler with two local workers")
    args = parser.parse_args()
    plain = dask = None
    with tempfile.TemporaryDirectory() as scratch:
        root = copy_course(Path(scratch))
        print("releasing ...", flush=True)
        release(root, quiet=True)
        students = hand_in(root, args.students, args.assignments)
        notebooks = len(students) * len(args.assignments)

        if not args.no_plain:
            print(f"plain nbgrader autograde, {notebooks} notebooks ...", flush=True)
            started = time.perf_counter()
            for assignment in args.assignments:
                nbgrader("autograde", assignment, "--force", UNBOXED_OPTION, root=root, quiet=True, check=False)
            plain = time.perf_counter() - started
            forget_grades(root, students, args.assignments)

        print(f"python -m autograder grade --jobs {args.jobs} ...", flush=True)
        started = time.perf_counter()
        grade(root, args.assignments, jobs=args.jobs, feedback=False, show_progress=False)
        ours = time.perf_counter() - started

        if args.dask:
            forget_grades(root, students, args.assignments)
            (Path(scratch) / "dask").mkdir()
            with local_cluster(Path(scratch) / "dask") as address:
                print(f"python -m autograder grade --scheduler {address} (2 local workers) ...", flush=True)
                started = time.perf_counter()
                grade(root, args.assignments, feedback=False, show_progress=False, scheduler=address)
                dask = time.perf_counter() - started

    def per(seconds: float) -> str:
        return f"{seconds:.0f} s ({seconds / notebooks:.1f} s/notebook)"
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    if plain is not None:
        print(f"plain nbgrader: {per(plain)}; autograder grade --jobs {args.jobs}: {per(ours)}; ratio {plain / ours:.2f}")
        print(f"| {args.students} students x {len(args.assignments)} notebooks | {machine} | {per(plain)} | {per(ours)}, "
              f"--jobs {args.jobs} | {plain / ours:.2f} | {datetime.date.today()} |")
    if dask is not None:
        print(f"--jobs {args.jobs}: {per(ours)}; --scheduler, 2 local workers: {per(dask)}; Dask / local {dask / ours:.2f}")
        print(f"| {args.students} students x {len(args.assignments)} notebooks | {machine} | {per(ours)} | {per(dask)} | "
              f"{dask / ours:.2f} | {datetime.date.today()} |")


if __name__ == "__main__":
    main()
