"""Issue 27: one number per student and assignment in every output, no hand-in skipped, policy changes applied.

One small class of 03_masking, graded end to end twice (module-scoped, read by every test):
- alice: solved, handed in an hour before the due date; bob: solved, 81 s late; carol: known mistakes, handed in as
  `my masking.ipynb`; erin: notebook 02 handed in as 03 (refused); dave: a misspelled assignment folder; frank: the
  notebook directly in his student folder.
- first run: no due date, no penalty. Then the instructor grades alice's and bob's written answers, sets the due date
  and `penalty_method = "zero"`, and runs `grade` again with nothing new handed in.
Every output is read back after each run: the terminal table, reports/scores.csv, grades.csv (nbgrader export), the
class report's table and the feedback pages.
"""
from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from autograder.demo.submissions import write_submission
from autograder.grading.gradebook_merge import merge_submission
from autograder.grading.engine import misplaced, stale_overrides
from autograder.paths import notebook_path
from autograder.results.scores import PENDING, PENDING_MARK, PENDING_NOTE
from tests.conftest import copy_course, run_autograder

A, WRONG = "03_masking", "02_attention"
DUE = datetime(2026, 12, 4, 17, 0, 0, tzinfo=timezone.utc)
GRADED = ("alice", "bob", "carol", "erin")


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _outputs(root: Path, stdout: str) -> dict:
    """Every place an instructor or a student reads a score: (student -> text) per output."""
    table = {}
    for line in stdout.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if parts and parts[0] in GRADED and len(parts) >= 3:
            table[parts[0]] = parts[1]
    with open(root / "reports" / "scores.csv") as f:
        scores = {row["student"]: row for row in csv.DictReader(f)}
    with open(root / "grades.csv") as f:
        grades = {row["student_id"]: row for row in csv.DictReader(f) if row["assignment"] == A}
    report = (root / "reports" / "class_report.md").read_text()
    in_report = {cells[0]: cells[1] for cells in (
        [c.strip() for c in line.strip("|").split("|")] for line in report.split("## Scores", 1)[1].splitlines()
        if line.startswith("| ")) if cells[0] in GRADED}
    feedback = {}
    for student in GRADED:
        page = notebook_path(root / "feedback" / student, A).with_suffix(".html")
        found = re.search(r"\(Score: ([\d.]+) / ([\d.]+)\)", page.read_text()) if page.exists() else None
        feedback[student] = f"{float(found[1]):g}/{float(found[2]):g}" if found else None
    return {"stdout": stdout, "table": table, "scores": scores, "grades": grades, "report": report,
            "in_report": in_report, "feedback": feedback}


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("one-number"))
    released = run_autograder(root, "release", A)
    assert released.returncode == 0, released.stderr[-3000:]
    submitted = root / "submitted"

    def hand_in(target: Path, kind="demo_perfect", late=None, assignment=A):
        write_submission(kind, notebook_path(root / "release", assignment), notebook_path(root / "source", assignment),
                         target)
        if late is not None:
            (target.parent / "timestamp.txt").write_text(f"{DUE + timedelta(seconds=late):%Y-%m-%d %H:%M:%S.%f} UTC")

    hand_in(notebook_path(submitted / "alice", A), late=-3600)
    hand_in(notebook_path(submitted / "bob", A), late=81)
    hand_in(submitted / "carol" / A / "my masking.ipynb", kind="demo_partial")
    hand_in(notebook_path(submitted / "erin", A), assignment=WRONG)
    hand_in(submitted / "dave" / "3_masking" / f"{A}.ipynb")
    hand_in(submitted / "frank" / f"{A}.ipynb")
    handed_in = _tree(submitted)

    first = run_autograder(root, "grade", "--jobs", "2")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    runs = {"first": _outputs(root, first.stdout)}

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:  # what formgrader writes
        for student in ("alice", "bob"):
            for notebook in gb.find_submission(A, student).notebooks:
                for grade in notebook.grades:
                    if grade.cell_type == "markdown" and grade.max_score:
                        grade.manual_score, grade.needs_manual_grade = grade.max_score, False
        gb.db.commit()
    config = root / "nbgrader_config.py"
    config.write_text(config.read_text() + '\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    dated = subprocess.run([sys.executable, "-m", "nbgrader", "db", "assignment", "add", A,
                            f"--duedate={DUE:%Y-%m-%d %H:%M:%S} UTC"], cwd=root, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(root)})
    assert dated.returncode == 0, dated.stderr[-2000:]
    second = run_autograder(root, "grade", "--jobs", "2")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    runs["second"] = _outputs(root, second.stdout)

    # Issue 48: hal gets two days more before he hands in, then hands in a day late; gina hands in her partial
    # notebook two hours late, graded for the first time under `zero`; bob gets a day more after grading.
    runs["extended before"] = run_autograder(root, "extend", A, "--student", "hal", "--days", "2")
    hand_in(notebook_path(submitted / "hal", A), late=86400)
    hand_in(notebook_path(submitted / "gina", A), kind="demo_partial", late=7200)
    runs["extended after"] = run_autograder(root, "extend", A, "--student", "bob", "--days", "1")
    handed_in = _tree(submitted)
    third = run_autograder(root, "grade", "--jobs", "2")
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    runs["third"] = _outputs(root, third.stdout)
    return root, runs, handed_in


def test_hand_ins_are_read_only_to_the_grader(klass):
    """Nothing under submitted/ is written: carol's renamed notebook is graded from a copy, and its note stays."""
    root, runs, handed_in = klass
    assert _tree(root / "submitted") == handed_in, "the grader changed submitted/"
    for run in ("first", "second"):
        note = "carol / 03_masking: handed in as my masking.ipynb; graded as 03_masking.ipynb"
        assert note in runs[run]["stdout"], run


def _same_everywhere(run: dict) -> dict[str, str]:
    """Each graded student's score, asserted equal in every output; returns it."""
    found = {}
    for student in GRADED:
        row = run["grades"][student]
        exported = f"{float(row['score']):g}/{float(row['max_score']):g}"
        table, scores, report = run["table"][student], run["scores"][student][A], run["in_report"][student]
        assert table == report == scores.replace(f"; {PENDING})", ")*").replace(f" ({PENDING})", "*"), \
            (student, table, scores, report)
        assert table.split(" ", 1)[0].removesuffix(PENDING_MARK) == exported, (student, table, exported)
        assert run["feedback"][student] == exported, (student, run["feedback"][student], exported)
        assert float(run["scores"][student]["score"]) == float(row["score"]), (student, run["scores"][student], row)
        found[student] = table
    return found


def test_every_output_gives_the_same_number(klass):
    _, runs, _ = klass
    first, second = _same_everywhere(runs["first"]), _same_everywhere(runs["second"])
    assert first["alice"] == "9/11*", first
    assert runs["first"]["stdout"].count(PENDING_NOTE) == 1 and PENDING not in runs["first"]["stdout"].replace(
        PENDING_NOTE, ""), "the table says it once, below"
    assert first["erin"].startswith("0/11"), first
    # After the written answers were graded and the policy set: alice has all 11; bob is late under "zero": 0.
    assert second["alice"] == "11/11", second
    assert second["bob"] == "0/11 (late: -11)", second
    assert second["carol"] == first["carol"]
    assert float(runs["second"]["grades"]["bob"]["late_submission_penalty"]) == 11.0


def test_a_policy_set_after_grading_is_applied_and_said(klass):
    _, runs, _ = klass
    out = runs["second"]["stdout"]
    assert "Recomputed" in out and "bob / 03_masking: late penalty 0 -> 11 (1 min 21 s late;" in out, out[-3000:]
    assert "alice / 03_masking: late penalty" not in out, "alice handed in on time"


def test_no_hand_in_falls_through(klass):
    _, runs, _ = klass
    out = runs["first"]["stdout"]
    assert "submitted/dave/3_masking/: no assignment is named 3_masking" in out and \
        "rename the folder to submitted/dave/03_masking/" in out, out[-3000:]
    assert "submitted/frank/03_masking.ipynb: a file directly in the student's folder" in out, out[-3000:]
    missing = runs["first"]["report"].split("## Missing hand-ins", 1)[1].split("\n## ", 1)[0]
    assert "- dave / 03_masking" in missing and "- frank / 03_masking" in missing, missing
    assert "submitted/dave/3_masking/" in runs["first"]["report"], "the report lists it too"
    assert runs["first"]["scores"]["dave"][A] == "missing"
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("dave ", "frank "))}
    assert rows == {"dave": ["missing", "0/11", "0.0"], "frank": ["missing", "0/11", "0.0"]}, out[:1500]
    assert "3 graded, 0 skipped as unchanged since the last run, 1 refused" in out, out[-1500:]
    again = runs["second"]["stdout"]
    # issue 48: erin's refusal, kept from the first run and listed under Needs a look, is counted as refused
    assert "0 graded, 3 skipped as unchanged since the last run, 1 refused" in again, again[-1500:]
    assert "erin / 03_masking: this is notebook 02_attention" in again.split("Needs a look:")[1], again[-1500:]


def test_a_refused_notebook_gets_a_feedback_page_saying_why(klass):
    root, _, _ = klass
    page = notebook_path(root / "feedback" / "erin", A).with_suffix(".html").read_text()
    assert "this is notebook 02_attention, not 03_masking" in page and "(Score: 0 / 11)" in page
    # issue 48: nbgrader's own pages wrote `11.0 / 11.0` beside the refusal's `0 / 11`; both write a score alike
    alice = notebook_path(root / "feedback" / "alice", A).with_suffix(".html").read_text()
    assert "(Score: 11 / 11)" in alice and not re.search(r"Score: [\d.]+\.0 /", alice), alice[:3000]


def test_formgrader_lists_a_refused_hand_in_as_graded_with_its_zero(klass):
    """Issue 48: formgrader showed a refused hand-in as `needs autograding`, 0.0 / 0.0. It reads what nbgrader's API
    gives it: graded, 0 of the assignment's 11 points."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    root, _, _ = klass
    erin = NbGraderAPI(CourseDirectory(root=str(root))).get_submission(A, "erin")
    assert erin["autograded"] and (erin["score"], erin["max_score"]) == (0.0, 11.0), erin
    stand_in = notebook_path(root / "autograded" / "erin", A).read_text()
    assert "could not be graded" in stand_in and "this is notebook 02_attention, not 03_masking" in stand_in


def test_an_extension_before_the_hand_in_and_a_first_grading_say_only_what_changed(klass):
    """Issue 48: an extension for a student who has not handed in was refused; the first grading of a late partial
    hand-in printed `Recomputed ...: late penalty 5 -> 3` though nothing had changed; an extension that made a hand-in
    on time read `late penalty 11 -> 0 (0 s late ...)`."""
    _, runs, _ = klass
    before = runs["extended before"]
    assert before.returncode == 0, before.stdout + before.stderr
    assert "hal / 03_masking: extended by 2 days; due 2026-12-06 17:00:00 (UTC). hal has not handed it in yet" in \
        before.stdout, before.stdout
    out = runs["third"]["stdout"]
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("gina ", "hal "))}
    assert rows["hal"][0] == "9/11*", "a day late, with two days more: on time, no penalty"
    assert rows["gina"][:2] == ["0/11", "(late:"], "late under `zero`: 0, her penalty made once"
    assert "gina / 03_masking: late penalty" not in out and "hal / 03_masking: late penalty" not in out, \
        "graded for the first time: nothing was recomputed"
    assert "bob / 03_masking: late penalty 11 -> 0 (on time; due 2026-12-05 17:00:00 with an extension of 1 day, " \
        "under LateSubmissionPlugin zero)" in out, out[-3000:]
    assert "2 graded, 3 skipped as unchanged since the last run, 1 refused" in out, out[-1500:]


def test_feedback_reaches_every_student_the_exchange_can_reach(klass, tmp_path):
    root, _, _ = klass
    exchange = tmp_path / "exchange"
    exchange.mkdir()  # nbgrader's exchange root exists before any release
    config = root / "nbgrader_config.py"
    before = config.read_text()
    (root / "feedback" / "alice" / A / "submission_secret.txt").write_text("secret")  # as nbgrader submit leaves it
    (root / "feedback" / "alice" / A / "timestamp.txt").write_text(f"{DUE:%Y-%m-%d %H:%M:%S.%f} UTC")
    try:
        config.write_text(before + f"\nc.Exchange.root = {str(exchange)!r}\n")
        released = run_autograder(root, "release-feedback", A)
    finally:
        config.write_text(before)
    assert released.returncode == 0, released.stdout[-2000:] + released.stderr[-2000:]
    assert len(list((exchange / "transformers-from-scratch" / "feedback").glob("*.html"))) == 1
    assert "released through the exchange for 1 students (alice)" in released.stdout, released.stdout
    for student in ("carol", "erin"):  # copied in by hand: neither file
        assert f"feedback/{student}/{A}/{A}.html (no timestamp.txt or submission_secret.txt)" in released.stdout, \
            released.stdout
    # bob's time came with his hand-in (timestamp.txt), the secret did not: the page names only what it lacks
    assert f"feedback/bob/{A}/{A}.html (no submission_secret.txt)" in released.stdout, released.stdout


def test_a_stale_override_is_dropped_and_a_valid_one_kept(tmp_path):
    """A manual override made against other points: full marks of the old points, or more than the new ones, is
    dropped (the autograder's score counts); any other is kept. The instructor is told either way."""
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        gb.add_assignment(A)
        gb.add_notebook(A, A)
        for cell in ("check_a", "check_b", "check_c"):
            gb.add_grade_cell(cell, A, A, max_score=2, cell_type="code")
        gb.add_student("alice")
        with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush notice
            warnings.simplefilter("ignore", SAWarning)
            gb.add_submission(A, "alice")
        for cell, manual in (("check_a", 1.0), ("check_b", 1.0), ("check_c", 2.0)):
            grade = gb.find_grade(cell, A, A, "alice")
            grade.auto_score, grade.manual_score = 2.0, manual
        gb.db.commit()
        # check_a was worth 1 (full marks given), check_b worth 3 (1 of 3 given), check_c's points did not change.
        notes = stale_overrides(gb, A, "alice", {"check_a": 1.0, "check_b": 3.0, "check_c": 2.0})
        scores = {cell: gb.find_grade(cell, A, A, "alice").manual_score for cell in ("check_a", "check_b", "check_c")}
    assert scores == {"check_a": None, "check_b": 1.0, "check_c": 2.0}, scores
    assert any("'check_a' dropped" in note for note in notes) and any("'check_b' kept" in note for note in notes)
    assert len(notes) == 2, notes

    # The job graded a copy made before the drop, where nbgrader flagged every overridden cell for review; once
    # merged, only the overrides still there ask for a look in formgrader.
    job = tmp_path / "job.db"
    shutil.copyfile(tmp_path / "gradebook.db", job)
    with Gradebook(f"sqlite:///{job}") as gb:
        for cell in ("check_a", "check_b", "check_c"):
            grade = gb.find_grade(cell, A, A, "alice")
            grade.manual_score, grade.needs_manual_grade = 1.0, True
        gb.db.commit()
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        merge_submission(job, gb, A, "alice")
        flagged = {cell: gb.find_grade(cell, A, A, "alice").needs_manual_grade
                   for cell in ("check_a", "check_b", "check_c")}
    assert flagged == {"check_a": False, "check_b": True, "check_c": True}, flagged


def test_everything_under_submitted_that_is_no_hand_in_is_listed_with_what_to_do(tmp_path):
    submitted = tmp_path / "submitted"
    for path in ("dave/3_masking/03_masking.ipynb", "gus/masking/x.ipynb", "hal/zzz/a.ipynb",
                 "alice/03_masking/a.ipynb", "frank/03_masking.ipynb", "03_masking.ipynb", "__MACOSX/03_masking/._x"):
        (submitted / path).parent.mkdir(parents=True, exist_ok=True)
        (submitted / path).write_text("{}")
    (submitted / "ivy").mkdir()
    found = "\n".join(misplaced(tmp_path, ["02_attention", A]))
    for expected in ("submitted/dave/3_masking/: no assignment is named 3_masking, not graded; if it is 03_masking, "
                     "rename the folder to submitted/dave/03_masking/",
                     "submitted/gus/masking/: no assignment is named masking",
                     "submitted/hal/zzz/: no assignment is named zzz, not graded; the assignments are 02_attention, "
                     "03_masking",
                     "submitted/frank/03_masking.ipynb: a file directly in the student's folder, not graded; move it "
                     "into submitted/frank/03_masking/ as 03_masking.ipynb",
                     "submitted/03_masking.ipynb: a file directly in submitted/",
                     "submitted/ivy: an empty student folder"):
        assert expected in found, found
    assert "alice" not in found and "__MACOSX" not in found, found


def test_nothing_handed_in_says_so_and_fails(tmp_path):
    """Only zip metadata under submitted/ (the glob finds `__MACOSX/03_masking`): no empty table and exit 0."""
    root = copy_course(tmp_path / "course")
    (root / "gradebook.db").touch()
    (root / "submitted" / "__MACOSX" / A).mkdir(parents=True)
    result = run_autograder(root, "grade")
    assert result.returncode != 0 and "Nothing is handed in" in result.stderr, result.stdout + result.stderr[-2000:]
