"""One `nbgrader autograde` in a fresh process forked from a warm server that has nbgrader imported already.

Importing nbgrader costs about two seconds; a class of 200 students and 7 notebooks would pay it 1,400 times.
A forkserver (Python's `multiprocessing`) imports it once; each grading job is a process forked from it, so
every notebook still gets a process of its own: in a network namespace of its own with only loopback
(autograder.box.job_namespace), a child subreaper that ends everything the notebook started, and a memory cap. Its
output goes to a log file the grader reads.

The notebook's kernel runs in a box of its own (autograder.box): the job starts it before nbgrader, and the kernel's
process goes into it. The server also imports torch and ipykernel, and each job forks its notebook's kernel from
itself before nbgrader starts (autograder.grading.warm_kernel): a kernel ready in a fraction of a second instead of
a fresh Python importing torch. After nbgrader, the job reads the box's recordings out (capped, as data) and ends
the box, and with it everything still running inside.

The grading run's other nbgrader commands, which run no notebook (generate_feedback, export), fork from the same
server (`command`), unsandboxed: two seconds of imports saved each, and one per assignment.
"""
from __future__ import annotations

import math
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config

from autograder.box.box import Box, Limits as BoxLimits, secrets_put_away
from autograder.box.job_namespace import isolate_network
from autograder.box.view import View
from autograder.box.who import BoxUnavailable, identity, take_slot
from autograder.grading import execute_in_a_job, sandbox, warm_kernel

BOX_FAILED = 75  # a job's exit code when its box could not be made (EX_TEMPFAIL: the machine's fault, try again)
BUDGET_SPENT = "OutOfGradingTime"  # the error a cell shows when a notebook's budget stopped it (Budget)
# Past a notebook's budget, each cell after the one stopped may take up to LATE_CELL_SECONDS (the course's hidden tests
# of a whole notebook take 6.5 s at most on a quiet machine, 06's).
LATE_CELL_SECONDS = 10

_context = None


def context():
    """The forkserver context, its server importing nbgrader the first time a job starts."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(["autograder.grading.autograde_process", "nbgrader.apps.nbgraderapp",
                                         "autograder.grading.warm_server", *warm_kernel.PRELOAD])
        with secrets_put_away():  # every job and kernel is forked from the server: it starts without the grader's
            multiprocessing.forkserver.ensure_running()
    return _context


@dataclass
class Finished:
    returncode: int | None  # None: stopped at the time limit
    log: str  # what nbgrader and the sandbox printed


@dataclass(frozen=True)
class BoxPlan:
    """The box a job's notebook runs in: what it shows and what it may use."""
    view: View
    limits: BoxLimits


class Budget:
    """nbclient's `timeout_func` for a notebook with a time budget (grading at submission): each cell may run until
    the budget, counted from the job's start, is spent; the cell running then is interrupted (the course's
    `interrupt_on_timeout`) and shows BUDGET_SPENT, and each cell after it gets `late_cell_seconds`, so that the
    hidden tests still test what the notebook had defined: it is graded as it stands. Never more than the course's
    own cell limit, `cell_seconds`."""

    def __init__(self, seconds: float, started: float, cell_seconds: float, late_cell_seconds: float):
        self.deadline = started + seconds  # time.monotonic()'s
        self.cell_seconds, self.late_cell_seconds = cell_seconds, late_cell_seconds

    def __call__(self, cell) -> int:
        left = self.deadline - time.monotonic()
        # nbclient takes whole seconds, and reads 0 as no limit at all
        return max(1, math.ceil(min(self.cell_seconds, left if left > 0 else self.late_cell_seconds)))


def budget_config(seconds: float, started: float) -> Config:
    """The nbgrader settings that give a notebook `seconds` in all from `started` (Budget), with the error its stopped
    cell shows."""
    from autograder.grading.execute_timeouts import EXECUTE_TIMEOUTS
    config = Config()
    config.Execute.timeout_func = Budget(seconds, started, EXECUTE_TIMEOUTS["timeout"], LATE_CELL_SECONDS)
    config.Execute.error_on_timeout = {
        "ename": BUDGET_SPENT, "evalue": f"this cell was stopped: grading at submission gives a notebook {seconds:g} s",
        "traceback": [f"{BUDGET_SPENT}: this cell was still running when the notebook's {seconds:g} s of grading at "
                      "submission ran out, so it was stopped and the notebook graded as it stands"]}
    return config


def _run(argv: list[str], root: str, env: dict[str, str], log_path: str, memory_mb: int,
         plan: BoxPlan | None, budget: float | None = None) -> None:
    """In the forked process: become the sandbox, start the notebook's box (`plan`; None: no box, the kernel runs as
    this account), then run nbgrader with `argv` (with `budget`, a notebook's seconds in all: Budget)."""
    started = time.monotonic()
    _enter(root, env, log_path)
    box, slot = None, None
    if plan is not None:
        try:
            slot = take_slot(identity())
        except BoxUnavailable as why:
            print(f"box: could not make the notebook's box ({why})", file=sys.stderr)
            os._exit(BOX_FAILED)
    why_not = isolate_network(slot)
    if why_not:
        if plan is not None:
            print(f"box: could not make the notebook's box (no network namespace of its own: {why_not})",
                  file=sys.stderr)
            os._exit(BOX_FAILED)
        print(f"sandbox: the network stays reachable ({why_not})", file=sys.stderr)
    sandbox.become_subreaper()
    sandbox.cap_memory(memory_mb)

    def stop(signum, frame):
        sandbox.kill_descendants()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    sandbox.end_with_parent()  # the forkserver ends with the grading run; this job, and all it started, with it
    if plan is not None:
        try:
            box = Box.start(plan.view, slot, plan.limits)
        except BoxUnavailable as why:
            print(f"box: could not make the notebook's box ({why})", file=sys.stderr)
            os._exit(BOX_FAILED)
        for note in box.notes:
            print(note, file=sys.stderr)
    warm_kernel.fork_waiting_kernel(box.entry if box else None)  # now, while this process has one thread
    execute_in_a_job.entered_job()  # the course directory's nbgrader runs a hand-in only in a job such as this
    try:
        code = _launch_nbgrader(argv, budget_config(budget, started) if budget else None)
    finally:
        warm_kernel.discard()
        ended = 0
        if box is not None:
            box.collect(Path(plan.view.records))
            for line in box.kernel_log().splitlines():
                print(f"{KERNEL_LINE}{line}", file=sys.stderr)
            ended = box.end()
        ended += sandbox.kill_descendants()
        if ended:
            print(f"sandbox: ended {ended} process(es) the graded notebook left running", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


KERNEL_LINE = "kernel| "  # starts each line the boxed kernel itself printed (not its cells' output), in the job's log


def _launch_nbgrader(argv: list[str], config: Config | None = None) -> int:
    """nbgrader's command line with `argv` (and `config` under the course's nbgrader_config.py: settings no command
    line can give), in this process; its exit code (1 for an uncaught error, printed)."""
    try:
        from nbgrader.apps.nbgraderapp import NbGraderApp
        NbGraderApp.launch_instance(argv=argv, **({"config": config} if config else {}))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except BaseException as error:  # noqa: BLE001: reported through the log and the exit code
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


def _enter(root: str, env: dict[str, str], log_path: str) -> None:
    """In a forked process: write to the log, with `env` as the environment, in `root`."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(root)


def _run_command(argv: list[str], root: str, env: dict[str, str], log_path: str) -> None:
    """In the forked process: run nbgrader with `argv`, as its command line would, and exit with its code."""
    _enter(root, env, log_path)
    try:
        code = _launch_nbgrader(argv)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def command(argv: list[str], root: Path, env: dict[str, str], log_path: Path) -> Finished:
    """Run `nbgrader <argv>`, a command that runs no student code (generate_feedback, export), in a process forked
    from the server, and wait for it."""
    process = context().Process(target=_run_command, args=(argv, str(root), env, str(log_path)), daemon=False)
    process.start()
    process.join()
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    log_path.unlink(missing_ok=True)
    return Finished(process.exitcode, log)


def autograde(argv: list[str], root: Path, env: dict[str, str], log_path: Path, memory_mb: int,
              timeout: float, plan: BoxPlan | None, budget: float | None = None) -> Finished:
    """Run `nbgrader <argv>` in a forked, sandboxed process, its notebook's kernel in the box `plan` describes (None:
    no box); with `budget`, the notebook is graded as it stands once that many seconds are spent (Budget); stop it
    and all it started after `timeout` seconds."""
    process = context().Process(target=_run, args=(argv, str(root), env, str(log_path), memory_mb, plan, budget),
                                daemon=False)
    process.start()
    process.join(timeout)
    returncode = process.exitcode
    if process.is_alive():
        process.terminate()  # its SIGTERM handler ends every process the notebook started
        process.join(15)
        if process.is_alive():
            process.kill()
            process.join()
        returncode = None
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    return Finished(returncode, log)
