"""One grading at a time in a course directory: `python -m autograder grade` in a terminal and grading at submission
(autograder.on_submit) share `submitted/`, the gradebook and grading/'s work folders, which a second run would clear
under the first. The lock is `grading/grade.lock` (flock: the kernel frees it when its process dies, `kill -9`
included); it holds who took it, so that the one who waits is told whom for. Within one thread it is re-entrant."""
from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK = Path("grading") / "grade.lock"  # under the course root

_held: dict[tuple[Path, int], int] = {}  # the locks this process's threads hold: (root, thread) -> depth
_guard = threading.Lock()


@contextlib.contextmanager
def grading_lock(root: Path, who: str, say: Callable[[str], None] = print) -> Iterator[None]:
    """Hold the course directory `root` for grading as `who` (said to anyone who waits), waiting while someone else
    grades there; `say` tells the wait once."""
    root = root.resolve()
    key = (root, threading.get_ident())
    with _guard:
        if key in _held:
            _held[key] += 1
            mine = False
        else:
            mine = True
    if not mine:
        try:
            yield
        finally:
            with _guard:
                _held[key] -= 1
        return
    path = root / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 500, 0).decode(errors="replace").strip() or "another grading"
            say(f"waiting: {holder} is grading in {root}; this starts when it is done")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{who} (process {os.getpid()}, since {time.strftime('%H:%M:%S')})".encode(), 0)
        with _guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _guard:
                del _held[key]
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing frees the flock
