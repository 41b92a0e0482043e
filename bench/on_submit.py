"""From Submit to a result the student can read, on a real class hub (issue 51, item 5).

One hub (tests/hub.py's, with grading at submission on, `--jobs` notebooks graded at once); for each class size
(`--students`, e.g. 1 10 30) that many students hand in a correct 03_masking at the same moment, each as their own
Unix account with `nbgrader submit` (what the Assignment List's Submit runs in their server; the servers themselves
are not started, so that the figures are the grading's). For each hand-in: the seconds from the end of its submit to
its result in the service's queue (graded, its points and feedback page ready; JupyterLab's notice polls every
10 s and shows it within that much more). p50, p95 and the slowest per class size, and the service's own
breakdown of a round.

Beside them, the hand loop for the same class: on a copy of the course directory once the service graded it, the
instructor's commands after Collect (`python -m autograder grade 03_masking --jobs J` and `release-feedback`), with
every grade removed first: the time from the last Submit to feedback released, left out the instructor's own
reaction time.

    sudo .venv/bin/python bench/on_submit.py --students 1 10 30       # as root: the hub makes Unix accounts
    sudo .venv/bin/python bench/on_submit.py --students 10 --jobs 1

Prints a Markdown table for bench/README.md with the machine, the cores and the load before and after.
"""
from __future__ import annotations

import argparse
import os
import platform
import pwd
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nbformat  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402

from autograder.demo.submissions import answered, solution_sources  # noqa: E402
from autograder.hub.accounts import ClassAccounts  # noqa: E402
from autograder.on_submit.service import QUEUE  # noqa: E402
from autograder.paths import RELEASE, SOURCE, notebook_path  # noqa: E402
from tests.hub import as_student, running_hub  # noqa: E402

A = "03_masking"


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def prepare(hub, names: list[str], notebook: nbformat.NotebookNode) -> dict[str, Path]:
    """Each student's account and home with 03 fetched and answered (not timed)."""
    homes = {}
    for name in names:
        home = hub.homes / name
        ClassAccounts(hub).account(name, home)
        fetched = as_student(hub, name, "nbgrader", "fetch_assignment", A, "--course", hub.course_id, cwd=home)
        said = fetched.communicate()[0]
        assert fetched.returncode == 0, said
        path = home / hub.course_id / A / f"{A}.ipynb"
        nbformat.write(notebook, path)
        account = pwd.getpwnam(name)
        os.chown(path, account.pw_uid, account.pw_gid)
        homes[name] = home
    return homes


def results(hub) -> dict[str, tuple[str, float, float, str]]:
    """student -> (state, arrived, finished, score) of their latest hand-in in the service's queue."""
    path = hub.course_dir / QUEUE
    if not path.exists():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as db:
        rows = db.execute("SELECT student, state, arrived, finished, shown FROM handins ORDER BY arrived").fetchall()
    return {student: (state, arrived, finished, shown) for student, state, arrived, finished, shown in rows}


def submit_all(hub, homes: dict[str, Path], timeout: float) -> dict[str, float]:
    """Every student submits at once; seconds from the end of each one's submit to its result in the queue."""
    started = {name: as_student(hub, name, "nbgrader", "submit", A, "--course", hub.course_id, cwd=home)
               for name, home in homes.items()}
    submitted = {}
    while len(submitted) < len(started):
        for name, process in started.items():
            if name not in submitted and process.poll() is not None:
                assert process.returncode == 0, process.stdout.read()
                submitted[name] = time.time()
        time.sleep(0.05)
    deadline, took = time.monotonic() + timeout, {}
    while len(took) < len(homes) and time.monotonic() < deadline:
        for name, (state, arrived, finished, shown) in results(hub).items():
            if name in homes and name not in took and state in ("graded", "refused"):
                assert state == "graded" and '"9/11' in shown, (name, state, shown)
                took[name] = finished - submitted[name]
        time.sleep(0.2)
    assert len(took) == len(homes), f"not graded in {timeout:.0f} s: {sorted(set(homes) - set(took))}"
    return took


def hand_loop(hub, jobs: int) -> tuple[float, float]:
    """The instructor's grade and release-feedback on a copy of the course directory with every grade removed:
    (grade seconds, release seconds)."""
    copy = Path(tempfile.mkdtemp(prefix="hand-loop-")) / "course"
    shutil.copytree(hub.course_dir, copy, ignore=shutil.ignore_patterns("autograded", "feedback", "on-submit"))
    shutil.rmtree(copy / "grading", ignore_errors=True)
    with Gradebook(f"sqlite:///{copy / 'gradebook.db'}") as gb:
        for submission in list(gb.find_assignment(A).submissions):
            gb.remove_submission(A, submission.student.id)
    env = {**os.environ, "PYTHONPATH": str(copy), "JUPYTER_CONFIG_PATH": str(hub.grader_config)}
    began = time.monotonic()
    graded = subprocess.run([sys.executable, "-m", "autograder", "grade", A, "--jobs", str(jobs)], cwd=copy, env=env,
                            capture_output=True, text=True)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    middle = time.monotonic()
    released = subprocess.run([sys.executable, "-m", "autograder", "release-feedback", A], cwd=copy, env=env,
                              capture_output=True, text=True)
    end = time.monotonic()
    shutil.rmtree(copy.parent, ignore_errors=True)
    assert released.returncode == 0, released.stdout[-2000:] + released.stderr[-2000:]
    return middle - began, end - middle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[1, 10, 30])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="the hub's grading_jobs (default: one per core, as the hub's)")
    parser.add_argument("--no-hand-loop", action="store_true")
    args = parser.parse_args()
    notebook = answered(notebook_path(RELEASE, A), solution_sources(notebook_path(SOURCE, A)))
    total = sum(args.students)
    names = [f"b{n:02d}" for n in range(total)]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; load before {load()}", flush=True)
    rows = []
    with running_hub("bench", [], [], [A], on_submit={}, grading_jobs=args.jobs, home_mb=0) as hub:
        homes = prepare(hub, names, notebook)
        start = 0
        for count in args.students:
            group = {name: homes[name] for name in names[start:start + count]}
            start += count
            took = sorted(submit_all(hub, group, timeout=120 + 60 * count).values())
            p95 = took[min(len(took) - 1, round(0.95 * (len(took) - 1)))]
            hand = hand_loop(hub, args.jobs) if not args.no_hand_loop and count == max(args.students) else None
            rows.append((count, statistics.median(took), p95, took[-1], load(), hand))
            print(f"{count} at once: p50 {rows[-1][1]:.1f} s, p95 {p95:.1f} s, slowest {took[-1]:.1f} s "
                  f"(load {load()})", flush=True)
    print(f"\nload after {load()}\n")
    print("| students submitting at once | Submit to result: p50 | p95 | slowest | load (1, 5, 15 min) after |")
    print("| --- | --- | --- | --- | --- |")
    for count, p50, p95, slowest, after, hand in rows:
        print(f"| {count} | {p50:.1f} s | {p95:.1f} s | {slowest:.1f} s | {after} |")
    for count, p50, p95, slowest, after, hand in rows:
        if hand:
            print(f"\nThe hand loop, every hand-in of the class ({total}; jobs {args.jobs}): grade {hand[0]:.1f} s, "
                  f"release-feedback {hand[1]:.1f} s, {hand[0] + hand[1]:.1f} s in all after Collect.")


if __name__ == "__main__":
    main()
