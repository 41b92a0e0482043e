"""One grading job with clocks around nbclient's kernel start, cells and kernel end (bench/grading_profile.py).

Kept apart and light: the forked job imports this module, and its import time must not count as the job's.
"""
from __future__ import annotations

import json
import time

from autograder.grading import autograde_process


def _category(cell: dict) -> str:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    name = meta.get("grade_id", "")
    if name in ("setup", "imports") or name.startswith("carryover"):
        return "imports"
    if meta.get("solution"):
        return "student"
    if meta.get("grade"):
        return "checks"
    return "own"


def noop() -> None:
    """A job that does nothing: starts the grading server."""


def run(argv, root, env, log_path, memory_mb, marks_path, warm=True):
    """In the forked job: put clocks around nbclient's kernel start, cells and end, then grade as the grader does
    (with `warm` False: with a kernel started cold, as plain nbgrader starts it)."""
    from nbclient import NotebookClient
    from nbclient.util import run_sync

    def mark(name: str, **extra) -> None:
        with open(marks_path, "a") as marks:
            marks.write(json.dumps({"mark": name, "t": time.time(), **extra}) + "\n")

    mark("started")

    def timed(method, before, after):  # nbclient's sync methods wrap the async ones once, at class creation
        original = getattr(NotebookClient, method)

        async def wrapper(self, *args, **kwargs):
            mark(before, **({"category": _category(args[0])} if method == "async_execute_cell" else {}))
            try:
                return await original(self, *args, **kwargs)
            finally:
                mark(after)
        setattr(NotebookClient, method, wrapper)
        setattr(NotebookClient, method.replace("async_", ""), run_sync(wrapper))

    timed("async_start_new_kernel", "kernel_begin", "kernel_launched")
    timed("async_start_new_kernel_client", "client_begin", "kernel_ready")
    timed("async_execute_cell", "cell_begin", "cell_end")
    timed("_async_cleanup_kernel", "shutdown_begin", "shutdown_end")
    if not warm:
        from autograder.grading import warm_kernel

        warm_kernel.fork_waiting_kernel = lambda: None
    autograde_process._run(argv, root, env, log_path, memory_mb)
