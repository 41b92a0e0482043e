"""Run nbgrader's own commands with this environment's tools on PATH, under a wall-clock limit.

nbgrader starts `alembic` as a subprocess for the gradebook, so the virtual environment's `bin/`
must be on PATH even when Python was started by its full path.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from autograder.paths import ROOT


class NbgraderTimeout(RuntimeError):
    """An nbgrader command ran past its wall-clock limit and was stopped with its whole process group."""


GUARD_SITE = Path(__file__).parent / "guard" / "site"  # its sitecustomize installs the guard in kernels


def environment(threads: int | None = None, guard: dict | None = None) -> dict[str, str]:
    """This environment for nbgrader's processes; with `threads`, the kernels' math libraries use that many;
    with `guard` (see autograder.guard.policy), every kernel starts under that policy."""
    env = dict(os.environ)
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
             timeout: float | None = None, threads: int | None = None, sandbox_memory_mb: int | None = None,
             guard: dict | None = None) -> subprocess.CompletedProcess:
    """`nbgrader <args> --CourseDirectory.root=<root>`, run from `root` so it reads its nbgrader_config.py.

    With `timeout`, the command and every process it started (kernels included) are killed once it
    runs longer, and `NbgraderTimeout` is raised. `threads` caps the math threads of its kernels (parallel jobs
    should not each take every core). With `sandbox_memory_mb`, it runs under `autograder.sandbox`: nothing it
    starts outlives it, each of its processes may allocate at most that much memory, and it has no network.
    With `guard`, its kernels run under that policy (autograder.guard).
    """
    command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}"]
    if sandbox_memory_mb is not None:
        command = [sys.executable, "-m", "autograder.sandbox", "--memory-mb", str(sandbox_memory_mb), "--no-network",
                   "--", *command]
    pipe = subprocess.PIPE if quiet else None
    with subprocess.Popen(command, cwd=root, env=environment(threads, guard), text=True, stdout=pipe, stderr=pipe,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            if sandbox_memory_mb is not None:  # the sandbox ends what escaped the process group (the kernel's session)
                process.terminate()
                try:
                    process.communicate(timeout=15)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.communicate()
            raise NbgraderTimeout(f"`nbgrader {' '.join(args)}` ran longer than {timeout:g} s and was stopped") from None
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if check and result.returncode != 0:
        detail = (result.stderr or "")[-3000:] if quiet else ""
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed with exit code {result.returncode}\n{detail}")
    return result
