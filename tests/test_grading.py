"""`python -m autograder grade`: parallel jobs merged into one sound gradebook, and a killed run that resumes."""
import dataclasses
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

from nbgrader.api import Gradebook

from autograder.demo.submissions import STUDENTS
from autograder.grading.engine import GRADING_DIR
from autograder.grading.job import TRY_AGAIN, _why_nbgrader_failed
from autograder.grading.ledger import Ledger
from course.about import NOTEBOOKS
from tests.conftest import copy_class, copy_course, run_autograder

RESUMED = ["01_positional_encoding", "02_attention"]


def _scores(root, assignments) -> dict:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return {(a, s, g.notebook.name, g.name): (g.auto_score, g.needs_manual_grade)
                for a in assignments for s in STUDENTS
                for notebook in gb.find_submission(a, s).notebooks for g in notebook.grades}


def _complete_lines(path) -> list[tuple[str, str]]:
    """(assignment, student) of each whole ledger line (a line cut short by the kill is not one)."""
    pairs = []
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        pairs.append((entry["assignment"], entry["student"]))
    return pairs


def test_parallel_grading_leaves_a_sound_gradebook(demo_class):
    root, result = demo_class
    assert "--jobs" in result.stdout, "the demo grades through the parallel command"
    with sqlite3.connect(root / "gradebook.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert not (root / GRADING_DIR / "jobs").exists(), "private gradebooks are removed after the run"
    assert len(Ledger(root / GRADING_DIR / "ledger.jsonl").entries()) == len(STUDENTS) * len(NOTEBOOKS)


def test_a_killed_run_resumes_and_ends_with_the_same_gradebook(demo_class, tmp_path):
    demo_root, _ = demo_class
    root = tmp_path / "course"
    copy_class(demo_root, root, "autograded", "feedback", GRADING_DIR)
    expected = _scores(demo_root, RESUMED)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for assignment in RESUMED:
            for student in STUDENTS:
                gb.remove_submission(assignment, student)

    ledger = root / GRADING_DIR / "ledger.jsonl"
    env = dict(os.environ, PYTHONPATH=str(root))
    first = subprocess.Popen([sys.executable, "-m", "autograder", "grade", *RESUMED, "--jobs", "2"], cwd=root,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and first.poll() is None:
        if ledger.exists() and len(Ledger(ledger).entries()) >= 4:
            break
        time.sleep(0.2)
    assert first.poll() is None, "the first run ended before it could be killed"
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    finished_before = set(Ledger(ledger).entries())
    assert 4 <= len(finished_before) < len(RESUMED) * len(STUDENTS)

    second = run_autograder(root, "grade", *RESUMED, "--jobs", "2")
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-3000:]
    graded = _complete_lines(ledger)
    assert set(graded) == {(a, s) for a in RESUMED for s in STUDENTS}, "every submission is graded"
    twice = {pair for pair in graded if graded.count(pair) > 1}
    assert not twice & finished_before, f"finished before the kill, graded again: {twice & finished_before}"
    assert _scores(root, RESUMED) == expected, "the resumed gradebook differs from an uninterrupted run's"
    with sqlite3.connect(root / "gradebook.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_second_run_grades_nothing_again(demo_class, tmp_path):
    demo_root, _ = demo_class
    root = tmp_path / "course"
    shutil.copytree(demo_root, root)
    before = (root / GRADING_DIR / "ledger.jsonl").read_text()
    again = run_autograder(root, "grade", "01_positional_encoding", "--jobs", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (root / GRADING_DIR / "ledger.jsonl").read_text() == before, "a finished grade was graded again"
    assert "demo_perfect" in again.stdout


def test_grading_without_a_release_or_submissions_says_what_to_do(tmp_path):
    root = copy_course(tmp_path / "course")
    before = run_autograder(root, "grade")
    assert before.returncode != 0 and "release the assignments first" in before.stderr
    (root / "gradebook.db").touch()
    empty = run_autograder(root, "grade")
    assert empty.returncode != 0 and "Nothing is handed in" in empty.stderr
    unknown = run_autograder(root, "grade", "08_nothing")
    assert unknown.returncode != 0 and "No assignment 08_nothing" in unknown.stderr


def test_a_grade_the_grader_failed_to_make_is_tried_again(demo_class, tmp_path):
    """A zero the grader gave because it failed itself (a verdict it could not reach, a task the cluster gave up on)
    is no grade: the next run grades that submission again, and only that one."""
    demo_root, _ = demo_class
    root = tmp_path / "course"
    shutil.copytree(demo_root, root)
    ledger = root / GRADING_DIR / "ledger.jsonl"
    failed = Ledger(ledger).entries()[("01_positional_encoding", "demo_perfect")]
    Ledger(ledger).append(dataclasses.replace(failed, reason=f"the cluster could not grade it (KilledWorker: ...); "
                                                             f"graded 0; {TRY_AGAIN}"))
    before = _complete_lines(ledger)
    again = run_autograder(root, "grade", "01_positional_encoding", "--jobs", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert _complete_lines(ledger)[len(before):] == [("01_positional_encoding", "demo_perfect")]
    assert TRY_AGAIN not in Ledger(ledger).entries()[("01_positional_encoding", "demo_perfect")].reason


KERNEL_LOG = """[AutogradeApp | INFO] Autograding /course/autograded/alice/01/01.ipynb
Traceback (most recent call last):
  File "/course/autograder/grading/warm_kernel.py", line 128, in _become_kernel
ValueError: Key backend: 'module://matplotlib_inline.backend_inline' is not a valid value for backend
[AutogradeApp | ERROR] Error occurred while starting new kernel client for kernel 7: Kernel died before replying to kernel_info
RuntimeError: Kernel died before replying to kernel_info
"""


def test_a_kernel_that_never_started_is_the_machines_fault_and_graded_again():
    reason = _why_nbgrader_failed(KERNEL_LOG)
    assert "ValueError: Key backend" in reason, "the kernel's own error, not only nbgrader's"
    assert "before any of the hand-in ran" in reason and reason.endswith(TRY_AGAIN)
    silent = _why_nbgrader_failed(KERNEL_LOG.replace("ValueError", "Warning"))
    assert "it printed no error" in silent and silent.endswith(TRY_AGAIN)
    other = _why_nbgrader_failed("[AutogradeApp | ERROR] boom\nnbformat.reader.NotJSONError: Notebook does not appear to be JSON")
    assert other == "nbgrader could not grade it: nbformat.reader.NotJSONError: Notebook does not appear to be JSON"
