"""Benchmark: where the time of grading one notebook goes, phase by phase.

Usage: python bench/grading_profile.py [--repeats 3] [--threads 1] [--assignments 01_positional_encoding ...]
Builds a scratch copy of the course, releases it and hands in the demo's perfect submission of every notebook.
Then grades each notebook `--repeats` times exactly as `python -m autograder grade` grades one job (a process forked
from a warm server, sandboxed, the kernel guarded, `--threads` math threads), with clocks around nbclient's kernel
start, every cell and the kernel's end, and around the grader's own verdicts; then times `nbgrader
generate_feedback` of that one notebook. Prints the median of each phase per notebook and the markdown table kept in
bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.grading.engine import autograde_process  # noqa: E402
from autograder.grading.gradebook_merge import snapshot, worker_gradebook  # noqa: E402
from autograder.grading.job import FAST_KERNEL_END, Job, autograde_argv, guard_policy  # noqa: E402
from autograder.nbgrader_run import environment, nbgrader  # noqa: E402
from autograder.paths import copy_course, notebook_path  # noqa: E402
from autograder.authoring.release import release  # noqa: E402
from autograder.grading.verify import prepare, verify  # noqa: E402
from bench import profiled_job  # noqa: E402
from bench.grading import hand_in  # noqa: E402
from course.about import NOTEBOOKS  # noqa: E402

PHASES = {
    "fork": "process start (forked from the warm server)",
    "startup": "nbgrader start-up and database, before the kernel",
    "kernel": "kernel start (a new Python, ipykernel, the guard)",
    "imports": "the set-up and import cells (`import torch`, course)",
    "student": "the student's solution cells",
    "checks": "visible checks and hidden tests (in the kernel)",
    "own": "the notebook's own cells (figures, training runs, demos)",
    "shutdown": "kernel shutdown",
    "save": "nbgrader after the kernel (save, gradebook)",
    "verdicts": "the grader's verdicts (out of the kernel)",
    "feedback": "feedback page (`nbgrader generate_feedback`, one notebook)",
}
NOTEBOOK_CELLS = ("imports", "student", "checks", "own")  # what executing the notebook costs


def profile_one(root: Path, template: Path, assignment: str, student: str, threads: int, scratch: Path,
                warm: bool) -> dict:
    """The seconds of each phase of grading `student`'s `assignment` once."""
    job = Job(assignment, student, "")
    job.database = worker_gradebook(template, scratch, assignment, student)
    records = job.database.with_suffix(".records")
    shutil.rmtree(records, ignore_errors=True)
    records.mkdir(parents=True)
    marks_path = scratch / "marks.jsonl"
    marks_path.unlink(missing_ok=True)
    argv = [arg for arg in autograde_argv(root, job) if warm or arg not in FAST_KERNEL_END]
    env = environment(threads, guard_policy(root, job, records))
    began = time.time()
    process = autograde_process.context().Process(
        target=profiled_job.run, args=(argv, str(root), env, str(records.with_suffix(".log")), 3072, str(marks_path), warm))
    process.start()
    process.join()
    ended = time.time()
    assert process.exitcode == 0, (records.with_suffix(".log")).read_text()[-2000:]
    verdicts_began = time.perf_counter()
    verify(notebook_path(root / "autograded" / student, assignment), assignment, student, records, job.database)
    verdicts = time.perf_counter() - verdicts_began
    marks = [json.loads(line) for line in marks_path.read_text().splitlines()]
    at = {m["mark"]: m["t"] for m in marks}  # the last of each name
    first = {}
    for m in marks:
        first.setdefault(m["mark"], m["t"])
    phases = dict.fromkeys(PHASES, 0.0)
    phases["fork"] = first["started"] - began
    phases["startup"] = first["kernel_begin"] - first["started"]
    phases["kernel"] = at["kernel_ready"] - first["kernel_begin"]
    for begin, end in zip([m for m in marks if m["mark"] == "cell_begin"], [m for m in marks if m["mark"] == "cell_end"]):
        phases[begin["category"]] += end["t"] - begin["t"]
    phases["shutdown"] = at["shutdown_end"] - first["shutdown_begin"]
    phases["save"] = ended - at["shutdown_end"]
    phases["verdicts"] = verdicts
    feedback_began = time.perf_counter()
    nbgrader("generate_feedback", assignment, f"--student={student}", "--force",
             f"--CourseDirectory.db_url=sqlite:///{job.database}", root=root, quiet=True)
    phases["feedback"] = time.perf_counter() - feedback_began
    phases["total"] = ended - began + verdicts
    return phases


def process_start() -> float:
    """A fresh Python importing nbgrader's application: what the warm server saves every job."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import nbgrader.apps.nbgraderapp"], check=True, env=environment())
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--assignments", nargs="+", default=list(NOTEBOOKS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        root = copy_course(scratch / "course")
        print("releasing ...", flush=True)
        release(root, quiet=True)
        [student] = hand_in(root, 1, args.assignments)
        template = snapshot(root / "gradebook.db", scratch / "template.db")
        prepare(args.assignments)
        began = time.perf_counter()
        server = autograde_process.context().Process(target=profiled_job.noop)
        server.start()
        server.join()
        server_start = time.perf_counter() - began
        fresh = statistics.median(process_start() for _ in range(args.repeats))
        table = {True: {}, False: {}}
        for assignment in args.assignments:
            runs = {True: [], False: []}
            for _ in range(args.repeats):  # warm and cold side by side
                for warm in (True, False):
                    runs[warm].append(profile_one(root, template, assignment, student, args.threads, scratch, warm))
            for warm in (True, False):
                table[warm][assignment] = {phase: statistics.median(run[phase] for run in runs[warm])
                                           for phase in runs[warm][0]}
            print(assignment, {k: round(v, 2) for k, v in table[True][assignment].items()}, flush=True)
    names = [a[:2] for a in args.assignments]
    print(f"\nThe grading server's start (once a run: nbgrader, torch and ipykernel imported): {server_start:.2f} s; "
          f"a fresh Python importing nbgrader (what plain nbgrader pays once per assignment): {fresh:.2f} s\n")
    print("| phase | " + " | ".join(names) + " | mean | mean, kernel started and ended as plain nbgrader does |")
    print("| --- |" + " --- |" * (len(names) + 2))
    for phase, label in [*PHASES.items(), ("total", "**one job, feedback excluded**")]:
        values = [table[True][a][phase] for a in args.assignments]
        cold = statistics.mean(table[False][a][phase] for a in args.assignments)
        print(f"| {label} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {statistics.mean(values):.2f} | "
              f"{cold:.2f} |")
    for warm in (True, False):
        cells = [sum(table[warm][a][p] for p in NOTEBOOK_CELLS) for a in args.assignments]
        rest = [table[warm][a]["total"] - c for a, c in zip(args.assignments, cells)]
        kernel = "warm kernel" if warm else "cold kernel"
        print(f"\n{kernel}: per notebook, mean {statistics.mean(cells):.2f} s executing the notebook's cells, "
              f"{statistics.mean(rest):.2f} s everything else")


if __name__ == "__main__":
    main()
