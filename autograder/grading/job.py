"""One grading job: one student's notebook of one assignment, autograded by nbgrader in a sandboxed process of its
own into a private gradebook, its hidden tests judged by the grader (autograder.grading.verify). The engine
(autograder.grading.engine) runs jobs here; the Dask path (autograder.grading.cluster) runs the same jobs on workers.

    Job            what is graded, and what grading it found (its reason, notes, time)
    Limits         a notebook's time and memory, a cell's time; `at_submission`: those of grading at submission
    autograde_one  run one job: nbgrader autograde under the guard, then the grader's verdict
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

import course
from autograder.box.box import Limits as BoxLimits
from autograder.box.view import View
from autograder.grading import autograde_process
from autograder.grading.autograde_process import BOX_FAILED, BUDGET_SPENT, KERNEL_LINE, BoxPlan
from autograder.grading.guard.policy import kernel_files, policy_for
from autograder.grading.warm_kernel import interpreter_paths
from autograder.grading.verify import verify
from autograder.handins.handin import HandIn
from autograder.nbgrader_run import environment
from autograder.paths import PACKAGE, notebook_path
from course.about import NOTEBOOKS


# Wall-clock limit for grading one notebook of one student (each cell also has its own timeout in
# nbgrader_config.py). Past it, the notebook's nbgrader process and kernel are killed.
NOTEBOOK_TIME_LIMIT = 900


# Memory each process of one notebook's grading may allocate; past it an allocation fails in that kernel alone.
MEMORY_LIMIT_MB = 3072


# After the last cell the kernel is killed, not asked to exit: a Python that imported torch takes 1.5 s to tear
# itself down, and the job's sandbox ends whatever the kernel leaves anyway.
FAST_KERNEL_END = ["--Execute.shutdown_kernel=immediate"]


# Ends the reason of a grade the grader itself failed to make (not the student's doing): the next run grades it again.
TRY_AGAIN = "the next grading run tries again"


def first_error(path: Path) -> str:
    """The first error an autograded notebook shows outside the graded test cells, and whether output was cut,
    as a readable reason ("" when neither)."""
    if not path.exists():
        return ""
    notebook = nbformat.read(path, as_version=4)
    error = truncated = ""
    for index, cell in enumerate(notebook.cells, start=1):
        graded = cell.metadata.get("nbgrader", {}).get("grade", False)
        outputs = cell.get("outputs", []) if cell.cell_type == "code" else []
        stopped = any(output.get("ename") == BUDGET_SPENT for output in outputs)  # said by out_of_budget
        for output in outputs:
            if not error and output.output_type == "error" and not graded and not stopped:
                error = f"cell {index} raised {output.ename}: {output.evalue[:200]}"
            if not truncated and "... Output truncated ..." in output.get("text", ""):
                truncated = f"cell {index} printed more than the output limit; its output was truncated"
    return "; ".join(reason for reason in (error, truncated) if reason)


def out_of_budget(path: Path, budget_seconds: float) -> list[str]:
    """What the budget stopped in the autograded notebook at `path`, as a note (none when nothing)."""
    if not path.exists():
        return []
    notebook = nbformat.read(path, as_version=4)
    stopped = [index for index, cell in enumerate(notebook.cells, start=1) if cell.cell_type == "code"
               and any(output.get("ename") == BUDGET_SPENT for output in cell.get("outputs", []))]
    if not stopped:
        return []
    later = f" (and {len(stopped) - 1} cell(s) after it)" if len(stopped) > 1 else ""
    return [f"cell {stopped[0]}{later} was still running when the notebook's {budget_seconds:g} s of grading at "
            "submission ran out: it was stopped there and the notebook graded as it stands"]


@dataclass
class Job:
    """One `nbgrader autograde` of one student's notebook, in its own process and private gradebook."""
    assignment: str
    student: str
    sha256: str
    release: str = ""  # the assignment's release_fingerprint (autograder.grading.ledger)
    database: Path | None = None
    reason: str = ""  # why it could not be graded; "" when it was
    notes: list[str] = field(default_factory=list)  # what preflight and the grader's checks found
    seconds: float = 0.0
    network: str = ""  # why student code could reach the network, if the machine did not let the sandbox cut it
    # Where nbgrader reads the hand-in (its submitted directory): on this machine a staged copy of its real files
    # (autograder.handins.handin.stage); None: the course root's submitted/ (a cluster worker's scratch root)
    submitted: Path | None = None
    points_before: dict | None = None  # each graded cell's points when it was last graded (the ledger's)
    handed_in: Path | None = None  # the copy of the hand-in's folder that preflight checked (None: submitted/'s)
    hand: HandIn | None = None  # the hand-in graded (autograder.handins.handin): its time, secret and notebooks

    def summary(self, root: Path) -> str:
        """Everything the instructor should read about this submission, "" when nothing."""
        found = self.reason or first_error(notebook_path(root / "autograded" / self.student, self.assignment))
        return "; ".join(self.notes + ([found] if found else []))


@dataclass(frozen=True)
class Limits:
    cell_seconds: float | None = None  # None: nbgrader_config.py's Execute.timeout
    notebook_seconds: float = NOTEBOOK_TIME_LIMIT
    # Grading at submission's time for one notebook (autograder.on_submit.policy, budget_seconds; None: no budget):
    # the cell running when it is spent is stopped and the notebook graded as it stands (autograde_process.Budget).
    budget_seconds: float | None = None
    memory_mb: int = MEMORY_LIMIT_MB  # per process of one autograde (its kernel included), under autograder.grading.sandbox
    # Each notebook's kernel in a box of its own (autograder.box). False only where the instructor chose to grade
    # without one (`--student-code-runs-as-me`): then the kernel runs as the grader, the guard its only fence.
    boxed: bool = True


# Past a notebook's budget, the cells after the one stopped get LATE_CELL_SECONDS each (autograde_process), and all of
# them together BUDGET_GRACE: only a kernel that ignores the interrupt needs it all, and the notebook is ended then.
BUDGET_GRACE = 60


def at_submission(budget_seconds: float, boxed: bool = True) -> Limits:
    """The limits of grading at submission: the notebook's budget, and past it BUDGET_GRACE for the cells after the
    one it stopped (their hidden tests still test what was written), then the notebook is ended."""
    return Limits(notebook_seconds=min(NOTEBOOK_TIME_LIMIT, budget_seconds + BUDGET_GRACE),
                  budget_seconds=budget_seconds, boxed=boxed)


PROCESSES_PER_BOX = 256  # a kernel, its threads and what it starts, at once


def box_plan(root: Path, job: Job, records: Path, policy: dict, limits: Limits, threads: int) -> BoxPlan:
    """The box of `job`'s kernel: it sees the Python environment, the student package and the files of the grader's
    package a kernel reads (the guard's `kernel_files`), and its hand-in; it writes only its own folder (the
    autograded one's path) and its records, both in memory; it may use the job's memory, PROCESSES_PER_BOX tasks, and
    the notebook's time limit in CPU seconds for each of its threads."""
    hand_in = (job.submitted or root / "submitted") / job.student / job.assignment
    shown = [*environment_paths(root), str(Path(course.__file__).resolve().parent),
             *(str(path) for path in kernel_files(PACKAGE.resolve(), policy["preload"]))]
    view = View(tuple(shown), work=policy["handed_in"], records=os.path.realpath(records),
                hand_in=os.path.realpath(hand_in))
    return BoxPlan(view, BoxLimits(memory_mb=limits.memory_mb, processes=PROCESSES_PER_BOX,
                                   cpu_seconds=int(limits.notebook_seconds * max(1, threads)) + 60))


def environment_paths(root: Path) -> list[str]:
    """The Python environment a kernel imports from: the environment and the installation it was made from, and any
    other folder on its module path that holds none of the course (a user's site-packages); never a folder that holds
    the course directory or the grader's package (a `.pth` file's repository root, the course root itself)."""
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    keep_out = {os.path.realpath(root), os.path.realpath(PACKAGE.parent)}
    shown = set(prefixes)
    for path in map(os.path.realpath, interpreter_paths()):
        if any(path == prefix or path.startswith(prefix + os.sep) for prefix in prefixes):
            continue
        if any(out == path or out.startswith(path.rstrip(os.sep) + os.sep) or path.startswith(out + os.sep)
               for out in keep_out) or os.path.isdir(os.path.join(path, "autograder")):
            continue
        shown.add(path)
    return sorted(shown)


def guard_policy(root: Path, job: Job, records: Path) -> dict:
    """The guard for `job`'s kernel: the earlier notebooks' references are loaded for carry-over, its own never."""
    earlier = [f"autograder.authoring.reference.{module}" for assignment, module in NOTEBOOKS.items() if assignment < job.assignment]
    return policy_for(root.resolve(), PACKAGE.resolve(), job.assignment, job.student, records, earlier)


def autograde_argv(root: Path, job: Job, limits: Limits = Limits()) -> list[str]:
    """nbgrader's arguments for autograding `job` into its private gradebook, `job.database`."""
    extra = [] if limits.cell_seconds is None else [f"--Execute.timeout={limits.cell_seconds:g}"]
    if job.submitted is not None:
        extra.append(f"--CourseDirectory.submitted_directory={job.submitted}")
    return ["autograde", job.assignment, f"--student={job.student}", "--force", *FAST_KERNEL_END,
            f"--CourseDirectory.db_url=sqlite:///{job.database}", *extra, f"--CourseDirectory.root={root}"]


def autograde_one(root: Path, job: Job, threads: int, limits: Limits = Limits()) -> Job:
    """Run nbgrader autograde for one (assignment, student) into `job.database`, its kernel guarded and boxed, then
    judge what its hidden tests recorded (autograder.grading.verify); record why it failed, if it did."""
    started = time.perf_counter()
    records = job.database.with_suffix(".records")
    shutil.rmtree(records, ignore_errors=True)
    records.mkdir(parents=True)
    argv = autograde_argv(root, job, limits)
    try:
        policy = guard_policy(root, job, records)
        plan = box_plan(root, job, records, policy, limits, threads) if limits.boxed else None
        finished = autograde_process.autograde(argv, root, environment(threads, policy), records.with_suffix(".log"),
                                               limits.memory_mb, limits.notebook_seconds, plan,
                                               budget=limits.budget_seconds)
        trusted = [line for line in finished.log.splitlines() if not line.startswith(KERNEL_LINE)]
        if finished.returncode is None and limits.budget_seconds:
            job.reason = (f"grading stopped {limits.notebook_seconds - limits.budget_seconds:g} s after the notebook's "
                          f"{limits.budget_seconds:g} s of grading at submission ran out (its code did not stop when "
                          "asked to): graded 0")
        elif finished.returncode is None:
            job.reason = (f"grading stopped after {limits.notebook_seconds:g} s, the limit for a whole notebook (an "
                          "endless loop, or training far too long?): graded 0")
        elif finished.returncode == BOX_FAILED:
            said = next((line for line in trusted if line.startswith("box: could not")), "box: could not make it")
            job.reason = f"{said.removeprefix('box: ')}: graded 0 for now; {TRY_AGAIN}"
        elif finished.returncode != 0:
            job.reason = _why_nbgrader_failed(finished.log)
        sandbox = [line.removeprefix("sandbox: ") for line in trusted if line.startswith("sandbox: ")]
        job.notes += [line for line in sandbox if line.startswith("ended ")]
        job.network = next((line for line in sandbox if line.startswith("the network")), "")
        if not job.reason and limits.budget_seconds:
            job.notes += out_of_budget(notebook_path(root / "autograded" / job.student, job.assignment),
                                       limits.budget_seconds)
        if not job.reason:
            job.notes += verify(notebook_path(root / "autograded" / job.student, job.assignment), job.assignment,
                                job.student, records, job.database)
    except Exception as exc:  # noqa: BLE001: a verdict the grader cannot reach must not count the kernel's word
        job.reason = f"the grader could not verify it ({type(exc).__name__}: {exc}); graded 0; {TRY_AGAIN}"
    records.with_suffix(".log").unlink(missing_ok=True)
    shutil.rmtree(records, ignore_errors=True)
    job.seconds = time.perf_counter() - started
    return job


KERNEL_DID_NOT_START = "Kernel died before replying to kernel_info"


RAISED = re.compile(r"^[\w.]+(Error|Exception): ", re.M)  # a line that is an exception, as a traceback ends


def _why_nbgrader_failed(log: str) -> str:
    """The reason for a notebook nbgrader could not grade, from its log. A kernel that died before it answered
    ran none of the hand-in's code: the grading machine is at fault, so the reason quotes the kernel's own error
    (the lines a boxed kernel printed, KERNEL_LINE; unboxed, what the log held before nbgrader's error) and the next
    run grades the notebook again. Only nbgrader's own lines can be its reason otherwise: a kernel's never are."""
    trusted = "\n".join(line for line in log.splitlines() if not line.startswith(KERNEL_LINE))
    last = _last_error_line(trusted)
    if KERNEL_DID_NOT_START not in last:
        return "nbgrader could not grade it: " + last
    kernel = "\n".join(line.removeprefix(KERNEL_LINE) for line in log.splitlines() if line.startswith(KERNEL_LINE))
    before = kernel or trusted.split(KERNEL_DID_NOT_START, 1)[0]
    kernel_error = _last_error_line(before) if RAISED.search(before) else "it printed no error"
    return (f"the notebook's kernel died as it started, before any of the hand-in ran ({kernel_error}): a fault "
            f"of the grading machine, not of the hand-in; graded 0 for now; {TRY_AGAIN}")


def _last_error_line(stderr: str | None) -> str:
    lines = [l.strip() for l in (stderr or "").splitlines() if l.strip()]
    raised = [l for l in lines if RAISED.match(l)]  # the exception itself, if shown
    errors = [l for l in lines if "Error" in l or "error" in l]
    return (raised or errors or lines or ["no message"])[-1][-300:]
