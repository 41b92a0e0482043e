"""What the box costs (issue 57): a box's own time, and grading with it beside grading before it, in one run.

Usage: sudo .venv/bin/python bench/box.py [--before REVISION] [--students 10] [--jobs 2] [--rounds 2] [--boxes 30]
                                          [--on-submit]

1. The box alone (this tree): `--boxes` times, in a fresh single-threaded process as a grading job is, a box
   started (bubblewrap), gone into from a forked child that drops its privileges and records a file, that file read
   out and the box ended; the median and the slowest of each step, wall and CPU.
2. Grading a class with and without it: `bench/grading.py`'s class (`--students` made of the demo submissions in
   turn, every notebook) released and graded by `autograder.grading.engine.grade(..., feedback=False)` in a scratch
   copy of each tree, this one and REVISION's (exported with `git archive`), alternately `--rounds` times each:
   the grading's wall seconds, and the CPU seconds of the whole run (its release and hand-ins, the same in both,
   included: its grading server exits with it), their medians and the ratios.
3. With `--on-submit` (root; a hub): each tree's own `bench/on_submit.py --students 1 10` in turn, their tables.
4. With `--attacks`: tests/box_attacks.py's hand-in (issue 57's table in C-level form, inside a correct 02) graded
   by each tree's `python -m autograder grade` in a scratch class: each attack's outcome side by side, and the
   hand-in's points. What the attacks leave in the machine's /tmp and /dev/shm is removed after.

Prints Markdown for bench/README.md with the machine and the load before and after each run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_BOX = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path
from autograder.box.box import Box, go_in
from autograder.box.job_namespace import isolate_network
from autograder.box.view import View
from autograder.box.who import identity, take_slot
slot = take_slot(identity())
assert isolate_network(slot) is None
steps = {}
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
wall, used = time.perf_counter(), cpu()
box = Box.start(View(read_only=(sys.prefix, sys.base_prefix), work="/run/box/bench-work",
                     records="/run/box/bench-records"), slot)
steps["start"] = (time.perf_counter() - wall, cpu() - used)
wall, used = time.perf_counter(), cpu()
child = os.fork()
if child == 0:
    go_in(box.entry)
    Path("/run/box/bench-records/done").write_text("1")
    os._exit(0)
os.waitpid(child, 0)
steps["go in"] = (time.perf_counter() - wall, cpu() - used)
wall, used = time.perf_counter(), cpu()
with tempfile.TemporaryDirectory() as out:
    box.collect(Path(out))
    assert (Path(out) / "done").exists()
steps["read out"] = (time.perf_counter() - wall, cpu() - used)
wall, used = time.perf_counter(), cpu()
box.end()
steps["end"] = (time.perf_counter() - wall, cpu() - used)
print(json.dumps(steps))
"""

GRADE_A_CLASS = r"""
import importlib.util, json, sys, tempfile, time
from pathlib import Path
tree, students, jobs = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
spec = importlib.util.spec_from_file_location("bench_grading", tree / "bench" / "grading.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
with tempfile.TemporaryDirectory() as scratch:
    root = bench.copy_course(Path(scratch))
    bench.release(root, quiet=True)
    names = bench.hand_in(root, students, list(bench.NOTEBOOKS))
    started = time.perf_counter()
    outcomes = bench.grade(root, list(bench.NOTEBOOKS), jobs=jobs, feedback=False, show_progress=False)
    seconds = time.perf_counter() - started
    points = sorted((o.student, o.assignment, o.score) for o in outcomes)
print(json.dumps({"seconds": seconds, "notebooks": len(names) * len(bench.NOTEBOOKS), "points": points}))
"""


ATTACK_A_CLASS = r"""
import json, sys
from pathlib import Path
from autograder.authoring.release import release
from autograder.demo.submissions import write_submission
from autograder.paths import copy_course, notebook_path
sys.path.insert(0, sys.argv[2])  # this checkout, for the attack
from tests.box_attacks import hand_in_attack
root, A = copy_course(Path(sys.argv[1])), "02_attention"
release(root, assignments=[A], quiet=True)
release_nb, source_nb = notebook_path(root / "release", A), notebook_path(root / "source", A)
write_submission("demo_perfect", release_nb, source_nb, notebook_path(root / "submitted" / "gus", A))
targets = {"root": str(root), "classmate": str(notebook_path(root / "submitted" / "gus", A)),
           "queue": str(root / "on-submit" / "queue.sqlite"), "inbound": str(root / "inbound"), "self": "mallory"}
hand_in_attack(release_nb, source_nb, notebook_path(root / "submitted" / "mallory", A), targets)
from autograder.on_submit.queue import HandedIn, Queue
Queue(root / "on-submit" / "queue.sqlite").add(HandedIn(folder="gus+02_attention+x", student="gus", assignment=A,
                                                        handed_in="x", arrived=1.0, state="graded", score=3.0))
"""


def _children_cpu() -> float:
    import resource
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def export(revision: str, into: Path) -> Path:
    """REVISION's tree, with a copy of this checkout's installed proxy and notice (not in git), for its hub."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for built in ("deploy/proxy/node_modules", "deploy/grade-notice/labextension"):
        if (ROOT / built).exists() and not (into / built).exists():  # copied: the hub's private view hides links out
            shutil.copytree(ROOT / built, into / built, symlinks=True)
    return into


def in_tree(tree: Path, *argv: str, timeout: float = 7200) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=timeout)


def box_alone(count: int) -> None:
    print(f"\n### The box alone: {count} boxes, one at a time\n")
    runs = []
    for _ in range(count):
        done = in_tree(ROOT, "-c", ONE_BOX, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("| step | wall: median | slowest | CPU: median |")
    print("| --- | --- | --- | --- |")
    for step in runs[0]:
        walls, cpus = [run[step][0] for run in runs], [run[step][1] for run in runs]
        print(f"| {step} | {statistics.median(walls) * 1000:.1f} ms | {max(walls) * 1000:.1f} ms | "
              f"{statistics.median(cpus) * 1000:.1f} ms |")
    total = [sum(run[step][0] for step in run) for run in runs]
    print(f"| all | {statistics.median(total) * 1000:.1f} ms | {max(total) * 1000:.1f} ms | |")


def grading(trees: dict[str, Path], students: int, jobs: int, rounds: int) -> None:
    print(f"\n### Grading {students} students x every notebook, --jobs {jobs}, {rounds} rounds each, alternately\n")
    found: dict[str, list[dict]] = {name: [] for name in trees}
    print("| round | tree | wall | CPU | per notebook | load before / after |")
    print("| --- | --- | --- | --- | --- | --- |")
    for number in range(1, rounds + 1):
        for name, tree in trees.items():
            before, used = load(), _children_cpu()
            done = in_tree(tree, "-c", GRADE_A_CLASS, str(tree), str(students), str(jobs))
            assert done.returncode == 0, done.stderr[-3000:]
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["cpu"] = _children_cpu() - used  # the whole run's: its grading server exits with it
            found[name].append(result)
            print(f"| {number} | {name} | {result['seconds']:.1f} s | {result['cpu']:.1f} s | "
                  f"{result['seconds'] / result['notebooks']:.2f} s | {before} / {load()} |", flush=True)
    medians = {name: (statistics.median(r["seconds"] for r in runs), statistics.median(r["cpu"] for r in runs))
               for name, runs in found.items()}
    first, *rest = trees
    for name in rest:
        print(f"\nmedian wall {medians[name][0]:.1f} s ({name}) against {medians[first][0]:.1f} s ({first}): "
              f"{medians[first][0] / medians[name][0]:.3f}; CPU {medians[name][1]:.1f} s against "
              f"{medians[first][1]:.1f} s: {medians[first][1] / medians[name][1]:.3f}")
        same = found[name][0]["points"] == found[first][0]["points"]
        print(f"every notebook's points the same in both: {same}")


def attacks(trees: dict[str, Path]) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.box_attacks import ATTACKS, TOKEN, outcomes
    print("\n### The attacks of issue 57, graded as root by each tree's `python -m autograder grade 02_attention`\n")
    found = {}
    for name, tree in trees.items():
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / "course"
            made = in_tree(tree, "-c", ATTACK_A_CLASS, str(root), str(ROOT))
            assert made.returncode == 0, made.stderr[-3000:]
            graded = in_tree(root, "-m", "autograder", "grade", "02_attention", "--jobs", "1")
            said = graded.stdout + graded.stderr
            notebook = root / "autograded" / "mallory" / "02_attention" / "02_attention.ipynb"
            found[name] = outcomes(notebook) if notebook.exists() else {}
            points = next((line.split()[1] for line in said.splitlines() if line.startswith("mallory ")), "?")
            found[name]["points"] = f"02: {points}"
            found[name]["sitecustomize.py in the course directory"] = str((root / "sitecustomize.py").exists())
        for left in (Path(f"/tmp/{TOKEN}"), Path(f"/dev/shm/{TOKEN}")):
            found[name][f"{left} left behind"] = str(left.exists())
            left.unlink(missing_ok=True)
    names = list(trees)
    print("| attack | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for attack in [*ATTACKS, "points", "sitecustomize.py in the course directory", f"/tmp/{TOKEN} left behind",
                   f"/dev/shm/{TOKEN} left behind"]:
        cells = [found[name].get(attack, "(did not run)").replace("|", "/")[:140] for name in names]
        print(f"| {attack} | " + " | ".join(cells) + " |")


def on_submit(trees: dict[str, Path]) -> None:
    print("\n### Grading at submission, each tree's bench/on_submit.py --students 1 10\n")
    for name, tree in trees.items():
        before = load()
        done = in_tree(tree, "bench/on_submit.py", "--students", "1", "10")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        table = [line for line in done.stdout.splitlines() if line.startswith("|")]
        print(f"{name} (load before {before}, after {load()}):\n" + "\n".join(table) + "\n", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REVISION", help="the revision to compare with (before the box)")
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--boxes", type=int, default=30)
    parser.add_argument("--on-submit", action="store_true")
    parser.add_argument("--attacks", action="store_true")
    parser.add_argument("--no-grading", action="store_true", help="leave the class's grading out")
    args = parser.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"{platform.machine()} ({cpu}), {os.cpu_count()} cores, as uid {os.geteuid()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load()}")
    box_alone(args.boxes)
    if not args.before:
        return
    with tempfile.TemporaryDirectory() as scratch:
        before = export(args.before, Path(scratch) / "before")
        trees = {f"before ({args.before})": before, "with the box": ROOT}
        if args.attacks:
            attacks(trees)
        if not args.no_grading:
            grading(trees, args.students, args.jobs, args.rounds)
        if args.on_submit:
            on_submit(trees)


if __name__ == "__main__":
    main()
