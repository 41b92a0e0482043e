"""Shared fixtures: a scratch copy of the course directory, so tests never touch the real gradebook."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.paths import copy_course  # noqa: F401 (the tests' scratch copies)

def run_autograder(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m autograder <args>` inside the copy at `root` (its own packages come first on sys.path)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="session")
def demo_class(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A copy of the course in which `python -m autograder demo` has run (release, hand-in, grading)."""
    root = copy_course(tmp_path_factory.mktemp("course"))
    result = run_autograder(root, "demo")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return root, result
