"""Benchmark: `course.progress()` over a solved course, as a student's kernel first runs it and then again.

Writes the demo's perfect student's seven notebooks into a scratch folder, then in this one fresh process times
`check_notebooks` twice (the first call pays torch's lazy imports and the fixtures' loading) and prints each call's
total, its three slowest exercises and the load, as rows of bench/README.md's table.

    .venv/bin/python bench/progress.py [--threads N]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch

from autograder.demo.submissions import write_submission
from autograder.paths import RELEASE, SOURCE, notebook_path
from course.about import NOTEBOOKS
from course.progress import PASSED, check_notebooks


def solved_course(folder: Path) -> None:
    for assignment in NOTEBOOKS:
        target = notebook_path(folder, assignment)
        write_submission("demo_perfect", notebook_path(RELEASE, assignment), notebook_path(SOURCE, assignment), target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's own)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        solved_course(folder)
        os.chdir(folder / list(NOTEBOOKS)[-1])
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
              f"kernels {torch.backends.cpu.get_cpu_capability()}")
        print("| call | load before | total | slowest three checks |")
        print("| --- | --- | --- | --- |")
        for call in ("first", "second"):
            load = os.getloadavg()[0]
            started = time.perf_counter()
            results = check_notebooks(bar=False)
            total = time.perf_counter() - started
            checks = sorted((e for r in results for e in r.exercises), key=lambda e: -e.seconds)
            if not all(e.status == PASSED for e in checks):
                raise SystemExit("a check of the solved course did not pass: " +
                                 ", ".join(e.exercise for e in checks if e.status != PASSED))
            slowest = ", ".join(f"`{e.exercise}` {e.seconds:.1f} s" for e in checks[:3])
            print(f"| {call} | {load:.1f} | {total:.1f} s | {slowest} |")


if __name__ == "__main__":
    main()
