"""Issue 59, rows 1 and 2: a written answer handed in again after it was graded waits for a person everywhere, and no
feedback page that can be released disagrees with the gradebook.

One student, ada, hands in 02_attention and 03_masking, graded end to end by real `python -m autograder grade` runs
(nbgrader autograde, generate_feedback, export), the written answers graded as formgrader grades them (its grade
handler's own writes, through nbgrader's Gradebook API):
- graded: both written answers graded 1 of 2, then a grading run (nothing regraded).
- formgrader: her 03 answer regraded 2 of 2, no run yet: 03's page says the old number.
- rewritten: she hands in 02 again with its written answer rewritten; `grade 02_attention` regrades it. nbgrader flags
  the answer for grading again and keeps its earlier mark (1).
- regraded: the new answer graded 2 of 2 in formgrader, then `grade` (nothing regraded).
Every output is read back after each step: the terminal table, reports/scores.csv, the class report, grades.csv, the
feedback pages, release-feedback, and the Canvas and Moodle exports (their real upload files).
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbgrader.api import Gradebook

from autograder.demo.submissions import write_submission
from autograder.lms.lti_push import score_for
from autograder.lms.marks import Mark
from autograder.paths import notebook_path
from autograder.results.scores import PENDING, PENDING_NOTE, score_of
from tests.conftest import copy_course, run_autograder

ATTENTION, MASKING = "02_attention", "03_masking"
WRITTEN = {ATTENTION: "q2_shapes_of_qkv", MASKING: "q3_mask_before_softmax"}  # each 2 points, graded by hand
REWRITTEN = "Q, K and V are (batch, length, d_k): I first wrote the wrong shapes, these are the right ones."
CANVAS = ("Student,ID,SIS User ID,SIS Login ID,Section,Attention (1101),Current Score\r\n"
          "    Points Possible,,,,,5.00,(read only)\r\n"
          '"Lovelace, Ada",5001,S5001,ada,Section A,,\r\n')
MOODLE = ("First name;Last name;Username;Assignment: 02 Attention (Real);Course total (Real)\n"
          "Ada;Lovelace;ada;-;-\n")
MOODLE_ITEM = "Assignment: 02 Attention (Real)"
EARLIER = "Handed in again after you graded them; the earlier mark counts until you grade the new answer:"


def formgrader_grades(root: Path, assignment: str, points: float) -> None:
    """What formgrader's grade handler writes when the instructor gives ada's written answer of `assignment` `points`
    (nbgrader.server_extensions.formgrader.apihandlers.GradeHandler.put)."""
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        grade = gb.find_grade(WRITTEN[assignment], assignment, assignment, "ada")
        grade.manual_score, grade.extra_credit = points, None
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gb.db.commit()


def page_of(root: Path, assignment: str) -> Path:
    return notebook_path(root / "feedback" / "ada", assignment).with_suffix(".html")


def outputs(root: Path, stdout: str = "") -> dict:
    """What an instructor or ada reads of her scores now: per output, assignment -> text."""
    found = {"stdout": stdout}
    lines = stdout.splitlines()
    header = next((line.split() for line in lines if line.startswith("student ")), [])
    row = next((re.split(r"\s{2,}", line.strip()) for line in lines if line.startswith("ada ")), [])
    found["table"] = {a: row[header.index(a[:2])] for a in (ATTENTION, MASKING) if header and row}
    with open(root / "reports" / "scores.csv") as f:
        found["scores"] = next(r for r in csv.DictReader(f) if r["student"] == "ada")
    with open(root / "grades.csv") as f:
        found["grades"] = {r["assignment"]: float(r["score"]) for r in csv.DictReader(f) if r["student_id"] == "ada"}
    found["report"] = (root / "reports" / "class_report.md").read_text()
    found["pages"] = {a: page_of(root, a).read_text() for a in (ATTENTION, MASKING)}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        found["score"] = {a: score_of(gb, a, "ada") for a in (ATTENTION, MASKING)}
        grade = gb.find_grade(WRITTEN[ATTENTION], ATTENTION, ATTENTION, "ada")
        found["nbgrader"] = (grade.needs_manual_grade, grade.manual_score)
    return found


def lms_exports(root: Path, tmp: Path, *args: str) -> dict:
    """`lms export canvas` and `lms export moodle --feedback` of 02_attention with `args`: their exit, words, upload."""
    (tmp / "canvas-export.csv").write_text(CANVAS, newline="")
    (tmp / "moodle-export.csv").write_text(MOODLE)
    found = {}
    for lms, options in (("canvas", ["--match", "sis-login", "--column", f"{ATTENTION}=1101"]),
                         ("moodle", ["--match", "username", "--identity", "username", "--feedback",
                                     "--column", f"{ATTENTION}={MOODLE_ITEM}", "--item-max", f"{ATTENTION}=5"])):
        upload = tmp / f"{lms}-upload.csv"
        upload.unlink(missing_ok=True)
        ran = run_autograder(root, "lms", "export", lms, ATTENTION, "--roster", str(tmp / f"{lms}-export.csv"),
                             "-o", str(upload), "--gradebook", str(root / "gradebook.db"), *options, *args)
        rows = (list(csv.DictReader(upload.open(encoding="utf-8-sig"), delimiter=";" if lms == "moodle" else ","))
                if upload.exists() else [])
        found[lms] = {"code": ran.returncode, "said": ran.stdout + ran.stderr,
                      "row": next((r for r in rows if "Points Possible" not in next(iter(r.values()))), None)}
    return found


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    base = tmp_path_factory.mktemp("rewritten")
    root = copy_course(base / "course")
    released = run_autograder(root, "release", ATTENTION, MASKING)
    assert released.returncode == 0, released.stderr[-3000:]
    for assignment in (ATTENTION, MASKING):
        write_submission("demo_perfect", notebook_path(root / "release", assignment),
                         notebook_path(root / "source", assignment),
                         notebook_path(root / "submitted" / "ada", assignment))

    def grade(*assignments: str) -> str:
        ran = run_autograder(root, "grade", *assignments, "--jobs", "2")
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        return ran.stdout

    runs = {}
    grade()
    formgrader_grades(root, ATTENTION, 1)
    formgrader_grades(root, MASKING, 1)
    runs["graded"] = outputs(root, grade())

    formgrader_grades(root, MASKING, 2)  # no grading run after it
    runs["formgrader"] = outputs(root)
    runs["formgrader"]["release"] = run_autograder(root, "release-feedback", MASKING)

    handed_in = notebook_path(root / "submitted" / "ada", ATTENTION)
    notebook = nbformat.read(handed_in, as_version=4)
    answer = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == WRITTEN[ATTENTION])
    answer.source = REWRITTEN
    nbformat.write(notebook, handed_in)
    runs["rewritten"] = outputs(root, grade(ATTENTION))
    runs["rewritten"]["release"] = run_autograder(root, "release-feedback", MASKING)
    runs["rewritten"]["lms"] = lms_exports(root, base)
    runs["rewritten"]["lms marked"] = lms_exports(root, base, "--pending", "mark")

    formgrader_grades(root, ATTENTION, 2)
    runs["regraded"] = outputs(root, grade())
    runs["regraded"]["lms"] = lms_exports(root, base)
    return root, runs


def heading_score(page: str) -> str:
    """The score in a feedback page's heading: `4 / 5`."""
    return re.search(r"\(Score: ([\d.]+ / [\d.]+)\)", page)[1]


def answer_label(page: str, cell: str) -> str:
    """What the page says of the written answer `cell` in its list of cells and above the answer."""
    soup = BeautifulSoup(page, "html.parser")
    listed = soup.find("a", href=f"#{cell}").parent.get_text(" ")
    above = soup.find("a", attrs={"name": cell}).find_next("div", class_="panel-heading").get_text(" ")
    return " ".join(f"{listed} | {above}".split())


def test_nbgrader_flags_the_rewritten_answer_and_keeps_its_earlier_mark(klass):
    """The premise, nbgrader's own behaviour: what formgrader lists as needing grading."""
    _, runs = klass
    assert runs["graded"]["nbgrader"] == (False, 1.0)
    assert runs["rewritten"]["nbgrader"] == (True, 1.0)
    assert runs["rewritten"]["grades"][ATTENTION] == 4.0, "grades.csv (nbgrader export) counts the earlier mark"


def test_a_rewritten_answer_is_pending_in_the_table_and_the_reports(klass):
    _, runs = klass
    before, after = runs["graded"], runs["rewritten"]
    assert before["table"][ATTENTION] == "4/5" and before["scores"][ATTENTION] == "4/5", before["stdout"][-2000:]
    assert after["table"][ATTENTION] == "4/5*", after["stdout"][-2000:]
    assert PENDING_NOTE in after["stdout"] and EARLIER in after["stdout"], after["stdout"][-2000:]
    assert f"    ada / {ATTENTION}: earlier answer: 1/2" in after["stdout"].splitlines(), after["stdout"][-2000:]
    assert after["scores"][ATTENTION] == f"4/5 ({PENDING}; earlier answer: 1/2)", after["scores"]
    assert after["scores"]["written answers not graded"] == "1", after["scores"]
    assert "| ada | 4/5* | 11/11 | 15/16* |" in after["report"], after["report"]
    assert f"- ada / {ATTENTION}: earlier answer: 1/2" in after["report"], after["report"]


def test_a_rewritten_answer_is_pending_on_the_feedback_page(klass):
    _, runs = klass
    before, after = runs["graded"]["pages"][ATTENTION], runs["rewritten"]["pages"][ATTENTION]
    assert "Score: 1 / 2" in answer_label(before, WRITTEN[ATTENTION]) and 'id="pending"' not in before
    assert heading_score(after) == "4 / 5", "the page's score is grades.csv's"
    label = answer_label(after, WRITTEN[ATTENTION])
    assert "not graded yet; earlier answer: 1 / 2" in label and "Not graded yet; earlier answer: 1 / 2" in label, label
    assert "Score: 1 / 2" not in label, label
    note = BeautifulSoup(after, "html.parser").find(id="pending").get_text(" ")
    assert " ".join(note.split()) == (
        f"{PENDING.capitalize()} (1 of them): you handed it in again after it was graded, so the score counts the "
        "earlier answer’s mark (1 / 2) until your instructor grades the new one."), note


def test_a_rewritten_answer_is_refused_by_the_lms_exports_until_graded(klass):
    _, runs = klass
    refused = runs["rewritten"]["lms"]
    for lms in ("canvas", "moodle"):
        assert refused[lms]["code"] != 0 and refused[lms]["row"] is None, (lms, refused[lms]["said"][-2000:])
        assert f"ada / {ATTENTION}: 1 written answer not graded yet (earlier answer: 1/2)" in refused[lms]["said"], \
            refused[lms]["said"][-2000:]
    marked = runs["rewritten"]["lms marked"]
    assert marked["canvas"]["code"] == 0 and float(marked["canvas"]["row"]["Attention (1101)"]) == 4, marked["canvas"]
    assert "Exported with the score so far (--pending mark)" in marked["canvas"]["said"], marked["canvas"]["said"]
    assert marked["moodle"]["row"]["Assignment: 02 Attention (Feedback)"] == \
        f"4/5 ({PENDING}; earlier answer: 1/2)", marked["moodle"]["row"]
    graded = runs["regraded"]["lms"]
    assert graded["canvas"]["code"] == 0 and float(graded["canvas"]["row"]["Attention (1101)"]) == 5, graded["canvas"]


def test_the_lti_push_sends_a_rewritten_answer_as_pending_manual(klass):
    root, runs = klass
    score = runs["rewritten"]["score"][ATTENTION]
    sent = score_for(Mark("ada", ATTENTION, 5.0, score), "lms-user-1", "blank", comment=True)
    assert sent["gradingProgress"] == "PendingManual" and sent["scoreGiven"] == 4, sent
    assert sent["comment"] == f"4/5 ({PENDING}; earlier answer: 1/2)", sent
    again = score_for(Mark("ada", ATTENTION, 5.0, runs["regraded"]["score"][ATTENTION]), "lms-user-1", "blank", True)
    assert again["gradingProgress"] == "FullyGraded" and again["scoreGiven"] == 5, again


def test_once_graded_again_nothing_is_pending(klass):
    _, runs = klass
    done = runs["regraded"]
    assert done["nbgrader"] == (False, 2.0)
    assert done["table"][ATTENTION] == "5/5" and done["scores"][ATTENTION] == "5/5", done["stdout"][-2000:]
    assert EARLIER not in done["stdout"] and "earlier answer" not in done["report"]
    assert heading_score(done["pages"][ATTENTION]) == "5 / 5" and 'id="pending"' not in done["pages"][ATTENTION]
    assert "Score: 2 / 2" in answer_label(done["pages"][ATTENTION], WRITTEN[ATTENTION])


def test_a_page_the_gradebook_no_longer_matches_is_not_released(klass):
    """Her 03 answer graded again in formgrader, no run since: 03's page still says 10 / 11, so release-feedback
    sends nothing and names the command that writes it anew."""
    root, runs = klass
    assert heading_score(runs["formgrader"]["pages"][MASKING]) == "10 / 11"
    assert runs["formgrader"]["score"][MASKING].text() == "11/11"
    refused = runs["formgrader"]["release"]
    assert refused.returncode != 0, refused.stdout + refused.stderr
    said = refused.stdout + refused.stderr
    assert f"feedback/ada/{MASKING}/{MASKING}.html: it says 10/11, the gradebook 11/11" in said, said
    assert f"Run `python -m autograder grade {MASKING}`" in said, said
    assert "send these pages yourself" not in said, "a stale page is not listed to send by hand either"


def test_a_run_of_another_assignment_writes_the_changed_page_anew(klass):
    """`grade 02_attention` after 03's answer was graded again: 03's page says what grades.csv, scores.csv, the report
    and the table say, and release-feedback goes on to the pages it can send."""
    _, runs = klass
    after = runs["rewritten"]
    assert after["grades"][MASKING] == 11.0 and after["scores"][MASKING] == after["table"][MASKING] == "11/11"
    assert heading_score(after["pages"][MASKING]) == "11 / 11", "the page of the assignment not graded in this run"
    assert "Score: 2 / 2" in answer_label(after["pages"][MASKING], WRITTEN[MASKING])
    released = after["release"]
    said = released.stdout + released.stderr
    assert released.returncode == 0 and "no longer say" not in said, said
    assert f"feedback/ada/{MASKING}/{MASKING}.html (no timestamp.txt or submission_secret.txt)" in said, said
