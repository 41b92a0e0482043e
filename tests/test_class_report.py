"""The class report covers the whole term as the gradebook holds it, and a missing hand-in counts as missing.

Each test builds a small gradebook with nbgrader's own API (no autograde run) and writes the report from it."""
from __future__ import annotations

import csv
import warnings
from pathlib import Path

from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from autograder.results.report import score_histogram, write_report

# Assignment -> its graded code cells and their points (02_attention is handed in by nobody in these classes).
CELLS = {
    "01_positional_encoding": {"check_positional_encoding": 2, "hidden_positional_encoding": 4},
    "02_attention": {"check_attention": 3},
    "03_masking": {"check_causal_mask": 1, "hidden_causal_mask": 3},
}


def class_root(tmp_path: Path, handed_in: dict[tuple[str, str], float]) -> Path:
    """A course folder whose gradebook holds CELLS and, per (assignment, student), a submission that earned
    that fraction of every cell's points; students without a submission are in the gradebook all the same."""
    (tmp_path / "autograded").mkdir()
    students = sorted({student for _, student in handed_in} | {"absent_everywhere"})
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        for assignment, cells in CELLS.items():
            gb.add_assignment(assignment)
            gb.add_notebook(assignment, assignment)
            for cell, points in cells.items():
                gb.add_grade_cell(cell, assignment, assignment, max_score=points, cell_type="code")
        for student in students:
            gb.add_student(student)
        for (assignment, student), fraction in handed_in.items():
            with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush notice
                warnings.simplefilter("ignore", SAWarning)
                gb.add_submission(assignment, student)
            for cell, points in CELLS[assignment].items():
                gb.find_grade(cell, assignment, assignment, student).auto_score = fraction * points
        gb.db.commit()
    return tmp_path


def scores(root: Path) -> dict[str, dict[str, str]]:
    with open(root / "reports" / "scores.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def section(root: Path, title: str) -> str:
    report = (root / "reports" / "class_report.md").read_text()
    return report.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def graded(handed_in: dict[tuple[str, str], float]) -> dict[tuple[str, str], str]:
    """The reasons grading would pass for these submissions: nothing needs a look."""
    return {submission: "" for submission in handed_in}


def test_a_missing_hand_in_counts_as_missing_not_as_full_marks(tmp_path):
    handed_in = {("01_positional_encoding", "ada"): 1.0, ("01_positional_encoding", "bo"): 1.0,
                 ("03_masking", "bo"): 1.0}
    root = class_root(tmp_path, handed_in)
    write_report(root, graded(handed_in))
    ada = scores(root)["ada"]
    assert ada["01_positional_encoding"] == "6/6" and ada["03_masking"] == "missing", ada
    assert ada["of"] == "10" and float(ada["percent"]) == 60.0, ada
    assert ada["missing"] == "1" and scores(root)["bo"]["missing"] == "0"
    missing = section(root, "Missing hand-ins")
    assert "- ada / 03_masking" in missing and "- bo /" not in missing
    assert "- absent_everywhere / 01_positional_encoding" in missing
    assert scores(root)["absent_everywhere"]["percent"] == "0.0"


def test_the_report_covers_every_assignment_handed_in_whatever_was_graded_last(tmp_path):
    root = class_root(tmp_path, {("01_positional_encoding", "ada"): 1.0, ("03_masking", "bo"): 0.5})
    write_report(root, {("03_masking", "bo"): ""})  # only 03 graded in this run
    first_line = (root / "reports" / "class_report.md").read_text().split("\n\n", 2)[1]
    assert first_line == "3 students; notebooks 01_positional_encoding, 03_masking.", first_line
    assert scores(root)["ada"]["01_positional_encoding"] == "6/6" and scores(root)["bo"]["03_masking"] == "2/4"
    with open(root / "reports" / "exercise_pass_rates.csv") as f:
        rated = {row["assignment"] for row in csv.DictReader(f)}
    assert rated == {"01_positional_encoding", "03_masking"}


def test_an_assignment_nobody_handed_in_is_not_covered(tmp_path):
    handed_in = {("01_positional_encoding", "ada"): 1.0, ("03_masking", "ada"): 1.0}
    root = class_root(tmp_path, handed_in)
    write_report(root, graded(handed_in))
    assert "02_attention" not in (root / "reports" / "class_report.md").read_text()
    ada = scores(root)["ada"]
    assert "02_attention" not in ada and ada["of"] == "10" and ada["percent"] == "100.0", ada


def test_the_histogram_counts_whole_students(tmp_path):
    for percents in ([60.0, 100.0], [0.0, 60.0, 100.0], [55.0, 55.0, 55.0]):
        ax = score_histogram(percents, "a class").axes[0]
        ticks = ax.get_yticks()
        assert len(ticks) >= 2 and all(tick == int(tick) for tick in ticks), ticks
    handed_in = {("01_positional_encoding", "ada"): 1.0, ("03_masking", "bo"): 1.0}
    root = class_root(tmp_path, handed_in)
    write_report(root, graded(handed_in))
    assert (root / "reports" / "score_histogram.png").read_bytes().startswith(b"\x89PNG")


def test_a_late_penalty_shows_in_the_scores(tmp_path):
    handed_in = {("01_positional_encoding", "ada"): 1.0, ("03_masking", "ada"): 1.0,
                 ("01_positional_encoding", "bo"): 1.0}
    root = class_root(tmp_path, handed_in)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        late = gb.find_submission_notebook("01_positional_encoding", "01_positional_encoding", "ada")
        late.late_submission_penalty = 2.0
        gb.db.commit()
    write_report(root, graded(handed_in))
    assert scores(root)["ada"]["late penalty"] == "2" and scores(root)["bo"]["late penalty"] == "0"
