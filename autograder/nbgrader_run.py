"""Run nbgrader's own commands with this environment's tools on PATH.

nbgrader starts `alembic` as a subprocess for the gradebook, so the virtual environment's `bin/`
must be on PATH even when Python was started by its full path.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from autograder.paths import ROOT


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return env


def nbgrader(*args: str, root: Path = ROOT, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    """`nbgrader <args> --CourseDirectory.root=<root>`, run from `root` so it reads its nbgrader_config.py."""
    command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}"]
    result = subprocess.run(command, cwd=root, env=environment(), text=True,
                            capture_output=quiet)
    if check and result.returncode != 0:
        detail = (result.stderr or "")[-3000:] if quiet else ""
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed with exit code {result.returncode}\n{detail}")
    return result
