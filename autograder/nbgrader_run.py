"""Run nbgrader's own commands with this environment's tools on PATH.

nbgrader starts `alembic` as a subprocess for the gradebook, so the virtual environment's `bin/`
must be on PATH even when Python was started by its full path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autograder.box.box import without_secrets
from autograder.paths import GUARD_SITE, ROOT


def environment(threads: int | None = None, guard: dict | None = None) -> dict[str, str]:
    """This environment for nbgrader's processes; with `threads`, the kernels' math libraries use that many;
    with `guard` (see autograder.grading.guard.policy), every kernel starts under that policy (GUARD_SITE)."""
    env = without_secrets(os.environ)  # what nbgrader runs may be a hand-in: it sees no token of the grader's
    if threads is not None:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    paths = [str(ROOT), env.get("PYTHONPATH", "")]
    env.pop("COURSE_GRADING_GUARD", None)
    if guard is not None:
        paths.insert(0, str(GUARD_SITE))
        env["COURSE_GRADING_GUARD"] = json.dumps(guard)
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def nbgrader(*args: str, root: Path = ROOT, check: bool = True, quiet: bool = False,
             threads: int | None = None) -> subprocess.CompletedProcess:
    """`nbgrader <args> --CourseDirectory.root=<root>`, run from `root` so it reads its nbgrader_config.py.
    `threads` caps the math threads of its kernels. (Grading a class runs nbgrader differently: see
    autograder.grading.autograde_process.)"""
    command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}"]
    pipe = subprocess.PIPE if quiet else None
    result = subprocess.run(command, cwd=root, env=environment(threads), text=True, stdout=pipe, stderr=pipe)
    if check and result.returncode != 0:
        detail = (result.stderr or "")[-3000:] if quiet else ""
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed with exit code {result.returncode}\n{detail}")
    return result
