"""An adversarial class graded in one run with honest students: no attack earns a point, every submission gets a
grade and a reason, the honest ones keep their exact scores, and the run stays within its time bound."""
import shutil
import time

import psutil
import pytest
from nbgrader.api import Gradebook

from autograder.grading import GRADING_DIR
from tests import adversarial
from tests.conftest import run_autograder

CELL_SECONDS, NOTEBOOK_SECONDS = 15, 30  # low limits so the endless attacks end quickly


@pytest.fixture(scope="module")
def attacked(demo_class, tmp_path_factory):
    demo_root, _ = demo_class
    root = tmp_path_factory.mktemp("adversarial") / "course"
    shutil.copytree(demo_root, root, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback", GRADING_DIR))
    students = adversarial.hand_in(root)
    started = time.monotonic()
    result = run_autograder(root, "grade", adversarial.ASSIGNMENT, "--jobs", "2", "--cell-timeout", str(CELL_SECONDS),
                            "--notebook-timeout", str(NOTEBOOK_SECONDS))
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {s: (gb.find_submission(adversarial.ASSIGNMENT, s).code_score,
                      gb.find_submission(adversarial.ASSIGNMENT, s).max_code_score) for s in students}
    reasons = {}
    for line in result.stdout.splitlines():
        for s in students:
            if line.startswith(f"  {s} / {adversarial.ASSIGNMENT}: "):
                reasons[s] = line.split(": ", 1)[1]
    return scores, reasons, seconds, len(students)


def test_honest_students_keep_their_exact_scores(attacked):
    scores, _, _, _ = attacked
    assert scores["honest_perfect"] == (6, 6)
    assert scores["honest_partial"] == (3, 6)


@pytest.mark.parametrize("attack", sorted(adversarial.ATTACKS) + ["renamed_notebook", "invalid_json"])
def test_no_attack_earns_a_point_and_each_has_a_reason(attacked, attack):
    scores, reasons, _, _ = attacked
    score, top = scores[attack]
    assert top == 6, f"{attack} changed the points available: {top}"
    assert score <= 3, f"{attack} earned {score} points; the same code honestly earns 3"
    if attack in adversarial.STRUCTURE or attack == "renamed_notebook":
        assert score == 3, f"{attack}: the restored notebook should earn exactly the honest 3 points, got {score}"
    assert reasons.get(attack), f"{attack} has no reason for the instructor"


def test_reasons_say_what_happened(attacked):
    _, reasons, _, _ = attacked
    assert "handed in as my homework (final).ipynb" in reasons["renamed_notebook"]
    assert "appears 2 times" in reasons["duplicated_test_cell"]
    assert "was turned into markdown; restored" in reasons["retyped_test_cell"]
    assert "from 1 to 100; restored" in reasons["points_changed_to_100"]
    assert "was edited; the original restored" in reasons["test_source_replaced"]
    assert "'my_own_cell', which is not in the assignment" in reasons["relabelled_test_cell"]
    assert "is not valid JSON" in reasons["invalid_json"]
    assert f"after {NOTEBOOK_SECONDS} s" in reasons["sleeps_past_the_notebook_limit"]
    assert "MemoryError" in reasons["memory_bomb"]
    assert "ended 3 process(es) the graded notebook left running" in reasons["starts_background_processes"]


def test_nothing_a_notebook_started_outlives_its_grading(attacked):
    left = [p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
            if adversarial.MARKER in " ".join(p.info["cmdline"] or [])]
    assert not left, f"processes started by a graded notebook are still running: {left}"


def test_the_run_ends_within_its_bound(attacked):
    _, _, seconds, count = attacked
    # Two jobs at a time, each notebook under NOTEBOOK_SECONDS plus nbgrader's start, then feedback and export.
    assert seconds < count / 2 * (NOTEBOOK_SECONDS + 30) + 120
