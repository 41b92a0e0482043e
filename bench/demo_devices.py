"""The demo class graded twice on one machine, its notebooks on the GPU and then on the CPU, side by side (issue 53).

Usage: python bench/demo_devices.py [--jobs N] [--out FOLDER]

Runs `python -m autograder demo --jobs N` with the machine's GPU visible, then again with `CUDA_VISIBLE_DEVICES=`
(the same CPU cores, no GPU), timing each. After each run it keeps the score table (`reports/demo_scores.csv`),
every graded cell's points from the gradebook and the device each autograded notebook's set-up cell reported.
Then it prints one markdown table of both runs, the wall times, and every difference: a score, a reason, a cell's
points or the first line of a failing cell's error. It exits 1 when the two runs disagree or the GPU run's
notebooks did not run on a GPU, so a run on the device machine says at once whether grading is device-blind.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVICE_LINE = re.compile(r"device: (GPU \([^)]*\)|CPU)")  # the set-up cell's line (course.notebook_setup)
COMPARED = ("score", "max_score", "late_penalty", "written_answers_not_graded", "reason")


@dataclass
class Run:
    """One grading of the demo class: its wall time and what every output says."""
    name: str
    seconds: float
    rows: dict[tuple[str, str], dict[str, str]]  # (student, assignment) -> demo_scores.csv's row
    cells: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (student, assignment, cell) -> points
    errors: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (student, assignment, cell) -> error
    devices: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, assignment) -> device reported


def read_scores(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(newline="") as f:
        return {(row["student"], row["assignment"]): row for row in csv.DictReader(f)}


def read_cells(gradebook: Path) -> dict[tuple[str, str, str], str]:
    """Every graded cell's points, as the gradebook holds them."""
    from nbgrader.api import Gradebook

    cells = {}
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        for assignment in gb.assignments:
            for submission in gb.assignment_submissions(assignment.name):
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        cells[submission.student.id, assignment.name, grade.name] = f"{grade.score:g}"
    return cells


def read_notebooks(autograded: Path) -> tuple[dict, dict]:
    """From the autograded notebooks: the first line of each failing graded cell's error, and the device the
    set-up cell reported."""
    import nbformat

    errors, devices = {}, {}
    for path in sorted(autograded.glob("*/*/*.ipynb")):
        student, assignment = path.parts[-3], path.parts[-2]
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            outputs = cell.get("outputs", [])
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            for output in outputs:
                if output.get("output_type") == "error" and grade_id:
                    errors[student, assignment, grade_id] = f"{output['ename']}: {output['evalue']}".splitlines()[0]
                text = output.get("text", "")
                found = DEVICE_LINE.search(text)
                if found and (student, assignment) not in devices:
                    devices[student, assignment] = found.group(1)
    return errors, devices


def grade_demo(name: str, jobs: int, env: dict[str, str], keep: Path) -> Run:
    """`python -m autograder demo` in `env`, timed; what it wrote is copied under `keep`/`name`."""
    started = time.perf_counter()
    log = keep / f"demo-{name}.log"
    with log.open("w") as out:
        code = subprocess.call([sys.executable, "-m", "autograder", "demo", "--jobs", str(jobs)], cwd=ROOT, env=env,
                               stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    if code != 0:
        sys.exit(f"the demo on {name} failed (exit {code}): see {log}")
    shutil.copy(ROOT / "reports" / "demo_scores.csv", keep / f"demo_scores-{name}.csv")
    errors, devices = read_notebooks(ROOT / "autograded")
    return Run(name, seconds, read_scores(ROOT / "reports" / "demo_scores.csv"), read_cells(ROOT / "gradebook.db"),
               errors, devices)


def differences(a: Run, b: Run) -> list[str]:
    """Every place where the two runs disagree, one line each; empty when they agree."""
    found = []
    for key in sorted(set(a.rows) | set(b.rows)):
        row_a, row_b = a.rows.get(key), b.rows.get(key)
        if row_a is None or row_b is None:
            found.append(f"{'/'.join(key)}: graded on {a.name if row_a else b.name} only")
            continue
        found += [f"{'/'.join(key)}: {column} {row_a[column]!r} on {a.name}, {row_b[column]!r} on {b.name}"
                  for column in COMPARED if row_a[column] != row_b[column]]
    for what, table_a, table_b in (("points", a.cells, b.cells), ("error", a.errors, b.errors)):
        for key in sorted(set(table_a) | set(table_b)):
            if table_a.get(key) != table_b.get(key):
                found.append(f"{'/'.join(key)}: {what} {table_a.get(key)!r} on {a.name}, {table_b.get(key)!r} on "
                             f"{b.name}")
    return found


def side_by_side(a: Run, b: Run) -> str:
    """A markdown table of both runs, a row per hand-in."""
    lines = [f"| student | assignment | score ({a.name}) | score ({b.name}) | reason ({a.name}) | reason ({b.name}) "
             f"| set-up cell's device ({a.name} / {b.name}) | autograde s ({a.name} / {b.name}) |",
             "|---|---|---|---|---|---|---|---|"]
    for key in sorted(set(a.rows) | set(b.rows), key=lambda k: list(a.rows).index(k) if k in a.rows else 0):
        row_a, row_b = a.rows.get(key, {}), b.rows.get(key, {})
        score = lambda row: f"{row.get('score', '-')} / {row.get('max_score', '-')}"  # noqa: E731
        lines.append(f"| {key[0]} | {key[1]} | {score(row_a)} | {score(row_b)} | {row_a.get('reason') or '-'} | "
                     f"{row_b.get('reason') or '-'} | {a.devices.get(key, '-')} / {b.devices.get(key, '-')} | "
                     f"{row_a.get('autograde_seconds', '-')} / {row_b.get('autograde_seconds', '-')} |")
    return "\n".join(lines)


def on_the_gpu(run: Run) -> list[str]:
    """The hand-ins whose notebook ran but whose set-up cell did not report a GPU."""
    return [f"{'/'.join(key)}: {device}" for key, device in sorted(run.devices.items()) if not device.startswith("GPU")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=ROOT / "device-results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    if not torch.cuda.is_available():
        sys.exit("no GPU here: this bench compares grading on a GPU with grading on the same machine's CPU")
    gpu_name = torch.cuda.get_device_name(0)
    gpu = grade_demo("cuda", args.jobs, dict(os.environ), args.out)
    cpu = grade_demo("cpu", args.jobs, {**os.environ, "CUDA_VISIBLE_DEVICES": ""}, args.out)
    found, not_on_gpu = differences(gpu, cpu), on_the_gpu(gpu)
    print(side_by_side(gpu, cpu))
    print()
    print(f"{gpu_name}, {os.cpu_count()} CPU cores, torch {torch.__version__}, --jobs {args.jobs}: "
          f"`python -m autograder demo` {gpu.seconds:.1f} s with the GPU, {cpu.seconds:.1f} s with the GPU hidden "
          f"(ratio {gpu.seconds / cpu.seconds:.2f}); {len(gpu.cells)} graded cells compared")
    print(f"{len(found)} differences" + "".join(f"\n  {line}" for line in found))
    print(f"{len(not_on_gpu)} notebooks of the GPU run not on the GPU" + "".join(f"\n  {n}" for n in not_on_gpu))
    (args.out / "demo_devices.json").write_text(json.dumps(
        {"gpu": gpu_name, "seconds": {"cuda": gpu.seconds, "cpu": cpu.seconds}, "differences": found,
         "not_on_gpu": not_on_gpu}, indent=1))
    sys.exit(1 if found or not_on_gpu else 0)


if __name__ == "__main__":
    main()
