"""Shared fixtures: a scratch copy of the course directory, so tests never touch the real gradebook."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import pytest
from filelock import FileLock

from autograder.paths import copy_course  # noqa: F401 (the tests' scratch copies)

def pytest_configure(config):
    """Under pytest-xdist each worker gets its share of the cores for PyTorch's threads, and so do the kernels and
    processes it starts: a worker with a thread per core beside another spends its time waiting for the other's."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        threads = max(1, len(os.sched_getaffinity(0)) // workers)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        torch.set_num_threads(threads)


def pytest_report_header(config):
    """Which of PyTorch's CPU kernels this run computes with (ATEN_CPU_CAPABILITY chooses them; tests/test_every_cpu.py
    reads this line from the run it starts)."""
    import torch

    return f"torch's CPU kernels: {torch.backends.cpu.get_cpu_capability()}"


# The slowest files first: pytest-xdist hands out whole files in this order, so no long one starts last while the
# other workers have nothing left to do. The first that reads the demo class builds it; those that read it only once
# the others are under way come later, so that no worker starts by waiting for it. "test_hub*" stands for every hub
# file (issue 41): each starts a JupyterHub and waits for its servers to come up, so they go early, where another
# worker's two-job grading runs can use a core a wait leaves idle, and none of them forms the tail of the run.
# jupyterhub-ltiauthenticator's own tests, run by tests/test_ltiauthenticator_upstream.py against the course's classes
collect_ignore = ["upstream_ltiauthenticator"]

SLOWEST_FIRST = ["test_wild_corpus", "test_adversarial", "test_term", "test_hub*", "test_on_submit", "test_mutants", "test_handin_links",
                 "test_one_number", "test_rewritten_answers", "test_source_notebooks", "test_every_cpu", "test_cluster", "test_grading",
                 "test_exchange_handins", "test_guides", "test_lms_collect", "test_feedback_page", "test_demo_class",
                 "test_release"]


def _rank(stem: str, ranks: dict[str, int]) -> int:
    """A file's place in SLOWEST_FIRST, by its name or a pattern there; after them all when it is in neither."""
    return ranks.get(stem, next((place for pattern, place in ranks.items() if fnmatch(stem, pattern)), len(ranks)))


def pytest_collection_modifyitems(config, items):
    rank = {name: place for place, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: _rank(item.path.stem, rank))  # a stable sort: the rest keep their order


def copy_class(class_root: Path, target: Path, *leave_out: str) -> Path:
    """A copy of a course directory in which a class was graded, without the folders `leave_out` at its top (its
    `grading/` ledger, say; never the package of that name, autograder/grading/)."""
    top = {str(class_root.resolve()), str(class_root)}
    shutil.copytree(class_root, target, ignore=lambda folder, names: [n for n in names if n in leave_out]
                    if str(folder) in top else [])
    return target


def run_autograder(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m autograder <args>` inside the copy at `root` (its own packages come first on sys.path)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="session")
def demo_class(tmp_path_factory, worker_id) -> tuple[Path, subprocess.CompletedProcess]:
    """A copy of the course in which `python -m autograder demo` has run (release, hand-in, grading). Tests only
    read it or copy it. It is built once per run: under pytest-xdist the first worker to ask builds it in the run's
    shared temporary folder while the others wait on its lock, then read it."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent  # the folder the workers' own temporary folders are in
    root, record = shared / "demo-course", shared / "demo-course.json"
    with FileLock(str(shared / "demo-course.lock")):
        if not record.exists():
            result = run_autograder(copy_course(root), "demo")
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
            record.write_text(json.dumps({"args": result.args, "returncode": result.returncode,
                                          "stdout": result.stdout, "stderr": result.stderr}))
    return root, subprocess.CompletedProcess(**json.loads(record.read_text()))
