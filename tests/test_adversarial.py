"""An adversarial class graded in one run with honest students: no attack earns a point, every submission gets a
grade and a reason, the honest ones keep their exact scores, and the run stays within its time bound."""
import json
import time
from pathlib import Path
from typing import NamedTuple

import nbformat
import psutil
import pytest
from nbgrader.api import Gradebook

from autograder.grading.engine import GRADING_DIR
from autograder.nbgrader_run import nbgrader
from autograder.grading.verify import OUTPUT_LIMIT
from autograder.grading.execute_in_a_job import UNBOXED_OPTION
from tests import adversarial
from tests.conftest import copy_class, run_autograder

CELL_SECONDS, NOTEBOOK_SECONDS = 15, 30  # low limits so the endless attacks end quickly


class Graded(NamedTuple):
    root: Path
    scores: dict  # student -> (score, max score)
    cells: dict  # student -> {graded cell: its score}
    reasons: dict  # student -> what the grade command printed for the instructor
    seconds: float
    count: int


@pytest.fixture(scope="module")
def attacked(demo_class, tmp_path_factory):
    demo_root, _ = demo_class
    root = tmp_path_factory.mktemp("adversarial") / "course"
    copy_class(demo_root, root, "submitted", "autograded", "feedback", GRADING_DIR)
    students = adversarial.hand_in(root)
    started = time.monotonic()
    result = run_autograder(root, "grade", adversarial.ASSIGNMENT, "--jobs", "2", "--cell-timeout", str(CELL_SECONDS),
                            "--notebook-timeout", str(NOTEBOOK_SECONDS))
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        submissions = {s: gb.find_submission(adversarial.ASSIGNMENT, s) for s in students}
        scores = {s: (sub.code_score, sub.max_code_score) for s, sub in submissions.items()}
        cells = {s: {g.name: g.score for nb in sub.notebooks for g in nb.grades if g.max_score}
                 for s, sub in submissions.items()}
    reasons = {}
    for line in result.stdout.splitlines():
        for s in students:
            if line.startswith(f"  {s} / {adversarial.ASSIGNMENT}: "):
                reasons[s] = line.split(": ", 1)[1]
    return Graded(root, scores, cells, reasons, seconds, len(students))


def test_honest_students_keep_their_exact_scores(attacked):
    scores = attacked.scores
    assert scores["honest_perfect"] == (9, 9)
    assert scores["honest_partial"] == (6, 9)


@pytest.mark.parametrize("attack", sorted(adversarial.ATTACKS) + ["renamed_notebook", "invalid_json"])
def test_no_attack_earns_a_point_and_each_has_a_reason(attacked, attack):
    scores, reasons = attacked.scores, attacked.reasons
    score, top = scores[attack]
    assert top == 9, f"{attack} changed the points available: {top}"
    assert score <= 6, f"{attack} earned {score} points; the same code honestly earns 6"
    if attack in adversarial.STRUCTURE or attack == "renamed_notebook":
        assert score == 6, f"{attack}: the restored notebook should earn exactly the honest 6 points, got {score}"
    assert reasons.get(attack), f"{attack} has no reason for the instructor"


def test_reasons_say_what_happened(attacked):
    reasons = attacked.reasons
    assert "handed in as my homework (final).ipynb" in reasons["renamed_notebook"]
    assert "appears 2 times" in reasons["duplicated_test_cell"]
    assert "was turned into markdown; restored" in reasons["retyped_test_cell"]
    assert "from 1 to 100; restored" in reasons["points_changed_to_100"]
    assert "was edited; the original restored" in reasons["test_source_replaced"]
    assert "'my_own_cell', which is not in the assignment" in reasons["relabelled_test_cell"]
    assert "is not valid JSON" in reasons["invalid_json"]
    assert f"after {NOTEBOOK_SECONDS} s" in reasons["sleeps_past_the_notebook_limit"]
    assert "MemoryError" in reasons["memory_bomb"]
    assert "tried to start other processes" in reasons["starts_background_processes"]
    assert "ended 3 process(es) the graded notebook left running" in reasons["forks_natively_past_the_guard"]
    assert "reassigns `torch.allclose`" in reasons["patches_allclose"]
    assert "reassigns `course.checks.compare.is_close`" in reasons["patches_the_course_checks"]
    assert "`check_positional_encoding`, which a check cell calls" in reasons["redefines_the_checks"]
    assert "cannot follow (`globals`)" in reasons["rebinds_checks_dynamically"]
    assert "tried to read the grader's files" in reasons["calls_the_reference"]
    assert "tried to read the grader's files" in reasons["reads_the_gradebook"]
    assert "gradebook.db" in reasons["reads_the_gradebook"]
    assert "tried to write outside its own folder" in reasons["writes_into_another_students_folder"]
    assert "tried to use the network" in reasons["uses_the_network"]
    assert "MB; it was removed" in reasons["huge_html_output"]


def test_no_graded_output_is_larger_than_the_limit(attacked):
    for path in (attacked.root / "autograded").glob("*/*/*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        sizes = [len(json.dumps(o)) for c in notebook.cells for o in c.get("outputs", [])]
        assert max(sizes, default=0) <= OUTPUT_LIMIT, path


def test_tampering_costs_the_checks_after_it_and_gains_no_hidden_point(attacked):
    """The honest partial earns check 1 + hidden 2 for each of its two right exercises; tampering voids the visible
    checks it touches, and the hidden tests, judged in the grader's process, give exactly what the code earns: the
    wrong exercise still fails. Redefining two checks by name leaves offset_rotation's check alone: its point stays."""
    attacks = ("redefines_the_checks", "patches_allclose", "patches_the_course_checks", "rebinds_checks_dynamically")
    assert {a: attacked.scores[a] for a in attacks} == {**dict.fromkeys(attacks, (4, 9)), "redefines_the_checks": (5, 9)}


def test_the_attacks_earn_points_where_nothing_guards(attacked, tmp_path):
    """The control: graded by plain `nbgrader autograde`, with tests and student code in one unguarded kernel, the
    same submissions earn points they did not: what stops them above is the guard and the grader's own verdict."""
    root = tmp_path / "course"
    copy_class(attacked.root, root, "autograded", "feedback", GRADING_DIR)
    unfair = ("patches_allclose", "redefines_the_checks", "calls_the_reference")
    for student in unfair:
        nbgrader("autograde", adversarial.ASSIGNMENT, f"--student={student}", "--force", UNBOXED_OPTION, root=root,
                 quiet=True)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        earned = {s: gb.find_submission(adversarial.ASSIGNMENT, s).code_score for s in unfair}
    assert all(score > 3 for score in earned.values()), earned


def test_nbgrader_s_own_autograde_refuses_to_run_a_hand_in_outside_a_grading_job(attacked, tmp_path):
    """Plain `nbgrader autograde` (formgrader's Autograde button runs the same converter) would run the hand-in's code
    as whoever runs it, unboxed: in the course directory it refuses before the first cell, says what to run instead,
    and writes no grade; only the flag that names the risk runs it."""
    root = tmp_path / "course"
    copy_class(attacked.root, root, "autograded", "feedback", GRADING_DIR)
    student = "patches_allclose"
    refused = nbgrader("autograde", adversarial.ASSIGNMENT, f"--student={student}", "--force", root=root, check=False,
                       quiet=True)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said[-3000:]
    assert "NotInAGradingJob" in said and f"python -m autograder grade {adversarial.ASSIGNMENT}" in said, said[-3000:]
    assert not list((root / "autograded").glob(f"{student}/{adversarial.ASSIGNMENT}/*.ipynb")), "it autograded"
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:  # the boxed run's grade stays
        submission = gb.find_submission(adversarial.ASSIGNMENT, student)
        assert (submission.code_score, submission.max_code_score) == attacked.scores[student]


def test_nothing_a_notebook_started_outlives_its_grading(attacked):
    left = [p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
            if adversarial.MARKER in " ".join(p.info["cmdline"] or [])]
    assert not left, f"processes started by a graded notebook are still running: {left}"


def test_the_run_ends_within_its_bound(attacked):
    seconds, count = attacked.seconds, attacked.count
    # Two jobs at a time, each notebook under NOTEBOOK_SECONDS plus nbgrader's start, then feedback and export.
    assert seconds < count / 2 * (NOTEBOOK_SECONDS + 30) + 120


def test_the_class_report_flags_tampering_and_blocked_attempts(attacked):
    report = (attacked.root / "reports" / "class_report.md").read_text()
    flagged = report.split("## Tampering and blocked attempts", 1)[1].split("\n## ", 1)[0]
    for attack in ("redefines_the_checks", "patches_allclose", "patches_the_course_checks", "rebinds_checks_dynamically",
                   "calls_the_reference", "reads_the_gradebook", "writes_into_another_students_folder",
                   "uses_the_network", "starts_background_processes"):
        assert f"- {attack} / {adversarial.ASSIGNMENT}: " in flagged, attack
    assert "\n- honest_" not in flagged, "an honest submission was flagged"


WRONG_EXERCISE = "token_and_position_embedding"  # the partial solution's wrong layer, which each rebinding covers up


def _report_section(root: Path, title: str) -> str:
    report = (root / "reports" / "class_report.md").read_text()
    return report.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("spelling", sorted(adversarial.REBINDINGS) + sorted(adversarial.PAST_THE_SCAN))
def test_a_run_time_rebinding_gains_no_point_and_the_report_names_it(attacked, spelling):
    """Each spelling makes the wrong layer pass its visible check in the kernel (before the grader's own verdict was
    needed, 10 of them earned that point); graded, neither its check nor its hidden test earns anything, no point
    beyond the honest partial's 3, and the class report names the line."""
    cells = attacked.cells[spelling]
    assert cells[f"check_{WRONG_EXERCISE}"] == 0 and cells[f"hidden_{WRONG_EXERCISE}"] == 0, cells
    assert attacked.scores[spelling][0] <= attacked.scores["honest_partial"][0], attacked.scores[spelling]
    _, named = {**adversarial.REBINDINGS, **adversarial.PAST_THE_SCAN}[spelling]
    flagged = [line for line in _report_section(attacked.root, "Tampering and blocked attempts").splitlines()
               if line.startswith(f"- {spelling} / {adversarial.ASSIGNMENT}: ")]
    assert any(named in line for line in flagged), flagged


@pytest.mark.parametrize("spelling", sorted(adversarial.PAST_THE_SCAN))
def test_a_rebinding_the_scan_cannot_see_is_stopped_by_the_graders_own_verdict(attacked, spelling):
    """The scan only calls it suspect, so nothing voids the checks after it: the right exercise keeps its check,
    the wrong one's check passed in the kernel and is not counted, and the cell and the report say why."""
    cells = attacked.cells[spelling]
    assert cells["check_positional_encoding"] == 1 and cells[f"check_{WRONG_EXERCISE}"] == 0, cells
    graded = nbformat.read(attacked.root / "autograded" / spelling / adversarial.ASSIGNMENT /
                           f"{adversarial.ASSIGNMENT}.ipynb", as_version=4)
    check = next(c for c in graded.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"check_{WRONG_EXERCISE}")
    shown = " ".join(o.get("evalue", "") for o in check.outputs)
    assert f"not counted: the grader's own test of `{WRONG_EXERCISE}` found it wrong" in shown, shown
    contradicted = _report_section(attacked.root, "Checks passed in the notebook that the grader's own tests")
    assert f"- {spelling} / {adversarial.ASSIGNMENT}: check_{WRONG_EXERCISE} passed in the notebook" in contradicted
    assert "- honest_" not in contradicted


def test_every_visible_check_has_a_hidden_test_to_confirm_it():
    """A check's point needs the grader's verdict on the hidden test of its exercise (autograder.grading.verify): every
    `check_X` cell of every notebook has its `hidden_X` cell, judged by a hidden test the grader holds."""
    from autograder.paths import ROOT, notebook_path
    from autograder.grading.verify import hidden_tests
    from course.about import NOTEBOOKS

    for assignment in NOTEBOOKS:
        notebook = nbformat.read(notebook_path(ROOT / "source", assignment), as_version=4)
        ids = {c.metadata.get("nbgrader", {}).get("grade_id", "") for c in notebook.cells}
        judged = {test.observe.__name__.removeprefix("observe_") for test in hidden_tests(assignment)}
        checked = {grade_id.removeprefix("check_") for grade_id in ids if grade_id.startswith("check_")}
        assert checked and checked <= judged and all(f"hidden_{x}" in ids for x in checked), (assignment, checked - judged)
