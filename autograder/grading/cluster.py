"""Grade on a Dask cluster: each (student, notebook) is one task on the cluster's workers.

No filesystem is shared with the grader. A task carries the handed-in notebook's bytes, those of every file beside
it (timestamp.txt, which nbgrader's late penalty reads, and whatever the student handed in with the notebook: a
module of their own, data; never a link, nor what it points at: autograder.handins.handin), and the bytes of the
gradebook its private copy starts from; on the worker it
runs through the same `autograde_one` as a local job (sandbox, guard, the grader's own verdicts) inside a scratch
course root of that worker process's own, a copy of the course the worker has installed. It returns the
autograded notebook's bytes, its private gradebook's bytes, the notes, the reason, the network line and the
seconds. The grader process alone writes them: gradebook.db, autograded/ and the ledger (autograder.grading.engine).

A worker that dies mid-task loses nothing: the scheduler gives the task to another worker. A task that finally
fails (`KilledWorker` after the scheduler's allowed failures, or any exception) comes back as a job with a
reason, which the grader records as a zero with that reason; the next grading run tries it again.

A Dask nanny starts its worker as a daemonic process, and Python forbids a daemonic process children; grading
starts each job from a forkserver (autograder.grading.autograde_process), so the task clears that flag in its worker
process. That is safe: every job process asks the kernel to end it when its parent dies (autograder.grading.sandbox).
Workers may therefore run with their nanny (the default, which restarts a worker that died) or with --no-nanny.
"""
from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from nbgrader.coursedir import CourseDirectory

from autograder.handins import handin
from autograder.grading.job import TRY_AGAIN, Job, Limits, autograde_one
from autograder.paths import copy_course, notebook_path

CONNECT_SECONDS = 10  # how long the grader tries to reach the scheduler before it gives up
# A file beside a notebook larger than this stays with the grader: nbgrader's submit and collect leave such files
# behind too (CourseDirectory.max_file_size, in kilobytes).
MAX_FILE_BYTES = 1000 * CourseDirectory.class_traits()["max_file_size"].default_value

_scratch: Path | None = None
_scratch_lock = threading.Lock()


def connect(address: str):
    """A `distributed.Client` of the scheduler at `address`; SystemExit with what to do when none answers."""
    from distributed import Client
    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # the failure is said once, below
    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SystemExit(f"No Dask scheduler answered at {address} within {CONNECT_SECONDS} s ({exc}).\n"
                         "Start one (`dask scheduler`) and its workers (`dask worker ADDRESS`), check the address "
                         "it printed, or grade on this machine: leave out --scheduler. See docs/instructor-guide.md, "
                         "section 7.") from None


def how_workers_box(client) -> dict[str, str]:
    """Each worker's address -> how it boxes a notebook (autograder.box.check, run there), or "cannot: <why>"."""
    return client.run(_how_this_machine_boxes)


def _how_this_machine_boxes() -> str:
    from autograder.box.check import check
    from autograder.box.who import BoxUnavailable
    try:
        return check().who.kind
    except BoxUnavailable as why:
        return f"cannot: {why}"


def refuse_workers_that_cannot_box(boxing: dict[str, str]) -> None:
    """SystemExit naming the workers of `boxing` (how_workers_box) that cannot box a notebook, before anything is
    graded: their every job would be graded 0."""
    unable = {worker: how for worker, how in sorted(boxing.items()) if how.startswith("cannot: ")}
    if unable:
        raise SystemExit("Grading boxes each hand-in on the worker that grades it, and these workers cannot make a "
                         "box: " + "; ".join(f"{worker} ({how.removeprefix('cannot: ')})"
                                             for worker, how in unable.items())
                         + ". Install bubblewrap there (apt install bubblewrap) and let the worker's account make user "
                         "namespaces, or run those workers as root; `python -m autograder.box.check` on each machine "
                         "says how it boxes. See docs/instructor-guide.md, Security.")


def scratch_root() -> Path:
    """This worker process's own course root, a copy of its installed course made on first use (never the
    grader's: the grader's files do not exist here)."""
    global _scratch
    with _scratch_lock:
        if _scratch is None:
            _scratch = copy_course(Path(tempfile.mkdtemp(prefix="autograder-worker-")))
            atexit.register(shutil.rmtree, _scratch, True)
            multiprocessing.current_process()._config["daemon"] = False  # see the module's docstring
        return _scratch


def grade_task(job: Job, notebook: bytes, beside: dict[str, bytes], template: bytes, limits: Limits) -> dict:
    """On a worker: autograde `job` from the handed-in `notebook` and the files `beside` it (path within the
    hand-in's folder -> bytes), its private gradebook starting as `template`. Returns {"notebook": the autograded
    notebook's bytes or None, "gradebook": the private gradebook's bytes, "notes", "reason", "network", "seconds"}."""
    from distributed import get_worker
    root = scratch_root()
    handed_in = notebook_path(root / "submitted" / job.student, job.assignment)
    autograded = notebook_path(root / "autograded" / job.student, job.assignment)
    shutil.rmtree(handed_in.parent, ignore_errors=True)
    shutil.rmtree(autograded.parent, ignore_errors=True)
    handed_in.parent.mkdir(parents=True)
    handed_in.write_bytes(notebook)
    for name, data in beside.items():
        (handed_in.parent / name).parent.mkdir(parents=True, exist_ok=True)
        (handed_in.parent / name).write_bytes(data)
    job.database = root / "grading" / "jobs" / f"{job.assignment}--{job.student}.db"
    job.database.parent.mkdir(parents=True, exist_ok=True)
    job.database.write_bytes(template)
    threads = max(1, (os.cpu_count() or 1) // max(1, get_worker().state.nthreads))
    try:
        autograde_one(root, job, threads, limits)
        return {"notebook": autograded.read_bytes() if autograded.exists() else None,
                "gradebook": job.database.read_bytes(), "notes": job.notes, "reason": job.reason,
                "network": job.network, "seconds": job.seconds}
    finally:
        job.database.unlink(missing_ok=True)
        shutil.rmtree(handed_in.parent, ignore_errors=True)
        shutil.rmtree(autograded.parent, ignore_errors=True)


def run_on_cluster(client, root: Path, todo: list[Job], template: Path, limits: Limits) -> Iterator[Job]:
    """Grade `todo` as tasks on `client`'s cluster; yield each job, in the grader, as its task ends: its autograded
    notebook written under root/autograded and its private gradebook under the template's folder (`job.database`),
    or, if the task failed, with the reason. Keeps about two tasks per worker thread in flight, so the scheduler
    never holds the whole class's notebooks. Closes `client` when done."""
    from distributed import as_completed
    try:
        shared = client.scatter(template.read_bytes(), broadcast=True) if todo else None
        waiting = list(reversed(todo))
        running = as_completed(loop=client.loop)
        jobs = {}
        while waiting or jobs:
            while waiting and len(jobs) < max(8, 2 * sum(client.nthreads().values())):
                job = waiting.pop()
                try:
                    handed_in = _handed_in(root, job)
                except (OSError, ValueError) as exc:  # changed or unreadable since preflight: this hand-in alone
                    job.reason = f"its files could not be read ({exc}); graded 0; {TRY_AGAIN}"
                    yield job
                    continue
                future = client.submit(grade_task, job, *handed_in, shared, limits, pure=False,
                                       key=f"grade-{job.assignment}-{job.student}-{os.urandom(4).hex()}")
                jobs[future.key] = job
                running.add(future)
            if not jobs:
                continue
            future = next(running)
            yield _collect(root, jobs.pop(future.key), future, template.parent)
    finally:
        client.close()


def _handed_in(root: Path, job: Job) -> tuple[bytes, dict[str, bytes]]:
    """The bytes of `job`'s handed-in notebook under root/submitted, and of every other file in its folder and the
    folders below, by path within it: on the worker nbgrader copies them beside the notebook by its own rules, as
    it does here. A link is never sent, nor read (the grader noted it already: autograder.grading.engine, .handin); a file
    over MAX_FILE_BYTES is not sent, with a note on `job` for the instructor."""
    notebook = (job.handed_in / f"{job.assignment}.ipynb" if job.handed_in is not None
                else notebook_path(root / "submitted" / job.student, job.assignment))  # preflight's copy (issue 27.4)
    beside = {}
    for name in handin.real_files(notebook.parent)[0]:
        path = notebook.parent / name
        if path == notebook:
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            job.notes.append(f"{name}, handed in beside the notebook, is larger than nbgrader's max_file_size "
                             f"({MAX_FILE_BYTES // 10 ** 6} MB): it was not sent to the cluster")
        else:
            beside[name] = path.read_bytes()
    if not handin.is_real_file(notebook):  # preflight gave it a reason: it never gets here
        raise ValueError(f"{notebook} is no file handed in (a link, or missing)")
    return notebook.read_bytes(), beside


def _collect(root: Path, job: Job, future, workspace: Path) -> Job:
    """`job` as its finished task left it: the autograded notebook and the private gradebook written here, or,
    when the task failed (its worker died too often, an exception), the reason."""
    try:
        result = future.result()
    except Exception as exc:  # noqa: BLE001: any failure of the task is this submission's reason, never a crash
        job.reason = f"the cluster could not grade it ({type(exc).__name__}: {str(exc)[:200]}); graded 0; {TRY_AGAIN}"
        return job
    autograded = notebook_path(root / "autograded" / job.student, job.assignment)
    shutil.rmtree(autograded.parent, ignore_errors=True)  # as nbgrader's --force does
    if result["notebook"] is not None:
        autograded.parent.mkdir(parents=True, exist_ok=True)
        autograded.write_bytes(result["notebook"])
        folder = job.handed_in or notebook_path(root / "submitted" / job.student, job.assignment).parent
        timestamp = folder / handin.TIMESTAMP
        if handin.is_real_file(timestamp):
            shutil.copyfile(timestamp, autograded.parent / handin.TIMESTAMP)
    job.database = workspace / f"{job.assignment}--{job.student}.db"
    job.database.write_bytes(result["gradebook"])
    job.notes, job.reason, job.network, job.seconds = (result["notes"], result["reason"], result["network"],
                                                       result["seconds"])
    return job
