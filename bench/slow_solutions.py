"""What a correct but slow solution costs in each exercise's visible check and hidden test (issue 51, item 5).

For every correct variant of tests/mutants/<module>.py (loops, row-by-row decoding, Python lists) and for the
reference itself, it times the visible check `check_<exercise>(impl)` and the student's side of the hidden test,
`observe_<exercise>(impl)`: what a graded kernel runs (the reference's side runs once, in the grader's process, and
is not timed here). Each is timed `--repeat` times; the row gives the median, and whether the check and the hidden
test passed (a variant must pass both). One thread by default, as a job has when two are graded at once on 2 cores.

    .venv/bin/python bench/slow_solutions.py                         # every module, 3 runs each
    .venv/bin/python bench/slow_solutions.py --module transformer --exercise generate --repeat 5
    .venv/bin/python bench/slow_solutions.py --slowest 10            # only the 10 slowest rows

The load average (1 minute) before and after the whole run is printed with the table: on a shared machine it is
what the figures mean.

`--grade N` then grades N hand-ins of 05_transformer at once with the course's own grader (`python -m autograder
grade --jobs N`: sandbox, guard, nbgrader and its cell limit, one thread a job on 2 cores), each the source's
solutions with `--variant`'s generate in the generate cell: the notebook's time, its points, and the time of its
generate check and hidden-test cells, with the load while they ran. The class's load is two at once on 2 cores.

    .venv/bin/python bench/slow_solutions.py --module transformer --exercise generate --grade 2
    .venv/bin/python bench/slow_solutions.py --module transformer --exercise generate --grade 2 --cell-timeout 90
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from autograder.authoring.hidden.observe import compare, reference_objects, reference_observation  # noqa: E402
from course.about import NOTEBOOKS, snake_case  # noqa: E402
from tests.exercises import hidden_test, visible_check  # noqa: E402


def _silenced(call):
    """`call()`'s value, with its output discarded (the checks print a line per step, training a progress bar)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        return call()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _quiet(call):
    """Run `call()` with its output discarded; the failure's first line, or None."""
    try:
        _silenced(call)
        return None
    except Exception as exc:  # noqa: BLE001: a failure is a result of the bench
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _timed(call, repeat: int) -> tuple[float, str | None]:
    times, failure = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        failure = _quiet(call) or failure
        times.append(time.perf_counter() - start)
    return statistics.median(times), failure


def implementations(module: str, exercise: str | None):
    """(exercise, name, impl): the reference of each exercise, then the listing's correct variants."""
    listing = importlib.import_module(f"tests.mutants.{module}")
    exercises = [e for e in dict.fromkeys(e for e, _ in listing.MUTANTS + listing.VARIANTS)
                 if exercise in (None, e)]
    for e in exercises:
        test = hidden_test(module, e)
        ref = _silenced(lambda: reference_objects(test.observe, **test.reference_names))
        yield e, "(reference)", ref[0]
        for listed, impl in listing.VARIANTS:
            if listed == e:
                yield e, impl.__name__, impl


def measure(module: str, exercise: str, impl, repeat: int) -> dict:
    test = hidden_test(module, exercise)
    expected = _silenced(lambda: reference_observation(test))  # the grader's side, computed once and not timed
    check_s, check_failure = _timed(lambda: visible_check(exercise)(impl), repeat)
    seen = {}

    def observe():
        seen["values"] = test.observe(impl).values()

    hidden_s, hidden_failure = _timed(observe, repeat)
    if hidden_failure is None:
        hidden_failure = _quiet(lambda: compare(seen["values"], expected))
    return {"check_s": check_s, "hidden_s": hidden_s, "check": check_failure, "hidden": hidden_failure}


def load() -> float:
    return os.getloadavg()[0]


GRADED = "05_transformer"


def _seconds(cell) -> float | None:
    """How long a cell of an executed notebook ran, from the times nbclient records in its metadata."""
    times = cell.metadata.get("execution", {})
    try:
        started, ended = (datetime.datetime.fromisoformat(times[k].replace("Z", "+00:00"))
                          for k in ("iopub.execute_input", "shell.execute_reply"))
    except KeyError:
        return None
    return (ended - started).total_seconds()


def generate_cell(variant: str) -> str:
    """What a student with `variant` (a function of tests/mutants/transformer.py) writes in 05's generate cell."""
    impl = getattr(importlib.import_module("tests.mutants.transformer"), variant)
    return inspect.getsource(impl).replace(f"def {impl.__name__}(", "def generate(", 1)


def grade_at_once(students: int, variant: str, cell_timeout: float | None) -> list[dict]:
    """Grade `students` hand-ins of 05 at once, each the source's solutions with `variant`'s generate (a function of
    tests/mutants/transformer.py, "reference" for the source's own), with the course's grader: one row each."""
    import nbformat

    from autograder.authoring.release import release
    from autograder.demo.submissions import answered, solution_sources
    from autograder.grading.engine import grade
    from autograder.grading.job import Limits
    from autograder.paths import copy_course, notebook_path
    from bench.run_notebook import LoadSampler

    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        root = copy_course(Path(scratch))
        release(root, quiet=True, assignments=[GRADED])
        solutions = solution_sources(notebook_path(root / "source", GRADED))
        if variant != "reference":
            solutions["generate"] = generate_cell(variant)
        names = [f"slow_{i}" for i in range(students)]
        for name in names:
            handed_in = notebook_path(root / "submitted" / name, GRADED)
            handed_in.parent.mkdir(parents=True)
            nbformat.write(answered(notebook_path(root / "release", GRADED), solutions), handed_in)
        with LoadSampler() as sampler:
            started = time.perf_counter()
            outcomes = grade(root, [GRADED], jobs=students, feedback=False, show_progress=False,
                             limits=Limits(cell_timeout))
            ended = time.perf_counter()
        for outcome in sorted(outcomes, key=lambda o: o.student):
            graded = nbformat.read(notebook_path(root / "autograded" / outcome.student, GRADED), as_version=4)
            cells = {c.metadata.get("nbgrader", {}).get("grade_id"): _seconds(c) for c in graded.cells}
            rows.append({"student": outcome.student, "notebook_s": outcome.seconds, "score": outcome.score,
                         "max_score": outcome.max_score, "reason": outcome.reason,
                         "check_s": cells.get("check_generate"), "hidden_s": cells.get("hidden_generate"),
                         "load": sampler.between(started, ended)})
    return rows


def print_grading(rows: list[dict], students: int, variant: str, cell_timeout: float | None) -> None:
    from autograder.grading.execute_timeouts import EXECUTE_TIMEOUTS
    from autograder.grading.job import NOTEBOOK_TIME_LIMIT

    limit = cell_timeout if cell_timeout is not None else EXECUTE_TIMEOUTS["timeout"]
    print()
    print(f"{GRADED} graded {students} at once (python -m autograder grade --jobs {students}), generate: {variant}; "
          f"cell limit {limit:g} s, notebook limit {NOTEBOOK_TIME_LIMIT} s")
    print()
    print("| hand-in | notebook (s) | check_generate cell (s) | hidden_generate cell (s) | points | load | reason |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        cell = lambda s: "-" if s is None else f"{s:.1f}"  # noqa: E731
        print(f"| {r['student']} | {r['notebook_s']:.1f} | {cell(r['check_s'])} | {cell(r['hidden_s'])} | "
              f"{r['score']:g} / {r['max_score']:g} | {r['load']} | {r['reason'] or '-'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", choices=list(NOTEBOOKS.values()), action="append",
                        help="a notebook's module (repeatable; default: all)")
    parser.add_argument("--exercise", help="one exercise, as the listings name it (generate, attention, ...)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each check and hidden test (the median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: two jobs on 2 cores)")
    parser.add_argument("--slowest", type=int, help="print only the N slowest rows (by check + hidden test)")
    parser.add_argument("--grade", type=int, metavar="N", help=f"then grade N hand-ins of {GRADED} at once")
    parser.add_argument("--variant", default="generate_row_by_row_variant",
                        help="the generate those hand-ins carry: a function of tests/mutants/transformer.py, or "
                             "'reference' (default: generate_row_by_row_variant)")
    parser.add_argument("--cell-timeout", type=float, help="the grader's limit per cell (default: the course's)")
    parser.add_argument("--no-table", action="store_true", help="skip the table: only --grade")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not args.no_table:
        table(args)
    if args.grade:
        print_grading(grade_at_once(args.grade, args.variant, args.cell_timeout), args.grade, args.variant,
                      args.cell_timeout)


def table(args) -> None:
    before = load()
    rows = []
    for module in args.module or list(NOTEBOOKS.values()):
        for exercise, name, impl in implementations(module, args.exercise):
            result = measure(module, exercise, impl, args.repeat)
            rows.append((module, exercise, name, result))
            verdict = "pass" if not result["check"] and not result["hidden"] else \
                f"FAILS: {result['check'] or result['hidden']}"
            print(f"  {module}.{exercise} {name}: check {result['check_s']:.2f} s, hidden "
                  f"{result['hidden_s']:.2f} s, {verdict}", file=sys.stderr, flush=True)
    after = load()
    if args.slowest:
        rows = sorted(rows, key=lambda r: -(r[3]["check_s"] + r[3]["hidden_s"]))[:args.slowest]
    print(f"{platform.machine()} ({os.cpu_count()} cores), torch {torch.__version__}, {args.threads} thread(s), "
          f"median of {args.repeat}, load average (1 min) {before:.1f} before and {after:.1f} after")
    print()
    print("| exercise | implementation | check (s) | hidden test (s) | both (s) | passes both |")
    print("| --- | --- | --- | --- | --- | --- |")
    for module, exercise, name, r in rows:
        passes = "yes" if not r["check"] and not r["hidden"] else "**no**"
        print(f"| {module}.{exercise} | {name} | {r['check_s']:.2f} | {r['hidden_s']:.2f} | "
              f"{r['check_s'] + r['hidden_s']:.2f} | {passes} |")


if __name__ == "__main__":
    main()
