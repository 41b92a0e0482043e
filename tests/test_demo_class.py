"""The demo class, graded end to end by real nbgrader into gradebook.db, gets the scores it should."""
import csv

import pytest
from nbgrader.api import Gradebook

from autograder.demo.submissions import STUDENTS
from autograder.authoring.mistakes import for_exercise
from autograder.results.scores import PENDING, PENDING_NOTE
from course.about import NOTEBOOKS

# Graded cells the partial student fails: a known mistake in four exercises, one left unanswered.
PARTIAL_FAILS = {
    "check_token_and_position_embedding", "hidden_token_and_position_embedding",
    "check_attention", "hidden_attention",
    "check_causal_mask", "hidden_causal_mask",
    "check_masked_attention", "hidden_masked_attention",
    "check_evaluate", "hidden_evaluate",
    "check_train_model", "hidden_train_model",
}
# The mistakes the partial student made, which the feedback must name: (exercise, mistake id).
PARTIAL_NAMED = [("TokenAndPositionEmbedding", "unscaled_embedding"), ("attention", "softmax_over_queries"),
                 ("causal_mask", "diagonal_excluded"), ("evaluate", "same_position_targets"),
                 ("train_model", "clips_after_step")]


@pytest.fixture(scope="module")
def grades(demo_class):
    """`{(student, assignment): {grade_id: (auto_score, max_score)}}` read back from gradebook.db."""
    root, _ = demo_class
    table = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for assignment in NOTEBOOKS:
            for student in STUDENTS:
                submission = gb.find_submission(assignment, student)
                for notebook in submission.notebooks:
                    table[(student, assignment)] = {
                        g.name: (g.auto_score, g.max_score) for g in notebook.grades if g.cell_type == "code"}
    return table


def test_every_student_has_a_grade_row_for_every_notebook(grades):
    assert set(grades) == {(s, a) for s in STUDENTS for a in NOTEBOOKS}


@pytest.mark.parametrize("student", ["demo_perfect", "demo_broken"])
def test_solved_submissions_get_every_autograded_point(grades, student):
    for assignment in NOTEBOOKS:
        lost = {name for name, (score, top) in grades[(student, assignment)].items() if score != top}
        assert not lost, f"{student} lost points in {assignment}: {lost}"


@pytest.mark.parametrize("student", ["demo_empty", "demo_invalid"])
def test_unanswered_and_unreadable_submissions_get_zero(grades, student):
    for assignment in NOTEBOOKS:
        earned = {name: score for name, (score, _) in grades[(student, assignment)].items() if score}
        assert not earned, f"{student} earned points in {assignment}: {earned}"


def test_partial_submission_loses_exactly_the_points_of_its_mistakes(grades):
    for assignment in NOTEBOOKS:
        for name, (score, top) in grades[("demo_partial", assignment)].items():
            expected = 0 if name in PARTIAL_FAILS else top
            assert score == expected, f"{assignment} {name}: {score} points, expected {expected}"


def test_feedback_names_the_partial_students_mistakes(demo_class):
    root, _ = demo_class
    html = "".join(p.read_text() for p in (root / "feedback" / "demo_partial").rglob("*.html"))
    for exercise, mistake_id in PARTIAL_NAMED:
        (known,) = [m for m in for_exercise(exercise) if m.id == mistake_id]
        # nbconvert escapes HTML; the start of the message is plain text in every mistake here.
        assert known.message.split(":")[0] in html, f"the feedback does not name {mistake_id}"


def test_feedback_shows_no_hidden_test_source(demo_class):
    root, _ = demo_class
    pages = list((root / "feedback").rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "autograder.authoring.hidden" not in text, page
    partial = (root / "feedback" / "demo_partial" / "02_attention" / "02_attention.html").read_text()
    assert "HiddenTestFailed" in partial, "a failed hidden test should still say what went wrong"


def test_broken_and_invalid_submissions_have_a_clear_reason(demo_class):
    root, result = demo_class
    with open(root / "reports" / "demo_scores.csv") as f:
        reasons = {(r["student"], r["assignment"]): r["reason"] for r in csv.DictReader(f)}
    for assignment in NOTEBOOKS:
        assert reasons[("demo_invalid", assignment)].startswith(f"{assignment}.ipynb is not valid JSON")
        broken = reasons[("demo_broken", assignment)]
        assert broken.endswith("cell 1 raised NameError: name 'scratch_result' is not defined"), broken
        assert "was deleted or relabelled; restored from the assignment" in broken, "preflight reports the deleted cell"
        assert reasons[("demo_perfect", assignment)] == ""
    assert "Needs a look:" in result.stdout and "demo_invalid" in result.stdout


def test_the_demo_score_file_gives_the_one_number(demo_class):
    """reports/demo_scores.csv: grades.csv's score and max_score (written answers included), the written answers
    not graded yet counted; the terminal says the same, marked once."""
    root, result = demo_class
    with open(root / "reports" / "demo_scores.csv") as f:
        rows = {(r["student"], r["assignment"]): r for r in csv.DictReader(f)}
    with open(root / "grades.csv") as f:
        exported = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    assert set(rows) == set(exported)
    for key, row in rows.items():
        assert (float(row["score"]), float(row["max_score"])) == (float(exported[key]["score"]),
                                                                  float(exported[key]["max_score"])), (key, row)
    assert int(rows[("demo_perfect", "03_masking")]["written_answers_not_graded"]) > 0
    assert float(rows[("demo_perfect", "03_masking")]["max_score"]) > 9, "the written answers' points are counted"
    assert PENDING_NOTE in result.stdout and f"({PENDING})" not in result.stdout, result.stdout[-3000:]


def test_score_table_and_export_are_written(demo_class):
    root, result = demo_class
    top = sum(1 for _ in NOTEBOOKS)
    assert "demo_perfect" in result.stdout and "total" in result.stdout
    with open(root / "grades.csv") as f:
        exported = list(csv.DictReader(f))
    assert len(exported) == len(STUDENTS) * top, "nbgrader export lacks rows"


def test_earlier_mistakes_cost_points_once(grades):
    """demo_partial got 02 and 03 wrong; the later notebooks lose nothing for that (07's own mistake aside)."""
    later = list(NOTEBOOKS)[list(NOTEBOOKS).index("03_masking") + 1:]
    assert later, "no notebook after 03 to prove it"
    for assignment in later:
        lost = {name for name, (score, top) in grades[("demo_partial", assignment)].items() if score != top}
        assert not lost - PARTIAL_FAILS, f"{assignment}: points lost for earlier mistakes: {lost - PARTIAL_FAILS}"


def test_class_report_counts_exercises_mistakes_and_flags(demo_class):
    root, _ = demo_class
    reports = root / "reports"
    with open(reports / "exercise_pass_rates.csv") as f:
        rates = {(r["assignment"], r["graded cell"]): (int(r["passed"]), int(r["graded"])) for r in csv.DictReader(f)}
    assert rates[("02_attention", "check_attention")] == (2, len(STUDENTS)), "perfect and broken pass; the rest fail"
    assert rates[("01_positional_encoding", "check_positional_encoding")] == (3, len(STUDENTS))
    with open(reports / "named_mistakes.csv") as f:
        named = {r["mistake"]: int(r["times named"]) for r in csv.DictReader(f)}
    for exercise, mistake_id in PARTIAL_NAMED:
        assert named.get(f"{exercise}: {mistake_id}", 0) >= 1, f"{mistake_id} is not counted"
    summary = (reports / "class_report.md").read_text()
    assert "demo_invalid / 01_positional_encoding: 01_positional_encoding.ipynb is not valid JSON" in summary
    assert (reports / "score_histogram.png").read_bytes().startswith(b"\x89PNG")
