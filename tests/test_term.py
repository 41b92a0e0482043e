"""An instructor's whole term, end to end, on real nbgrader commands and a real exchange directory.

Three students, each a real account of this machine with a home of its own (nbgrader's exchange knows a student
by the account's name), fetch and submit through the exchange; one submits again after the due date; one re-uploads
an unreadable file and then a good one. The instructor releases, collects (with `--update`), grades with
`python -m autograder grade`, grades a written answer by hand, changes a test cell's points and releases again,
grades again, releases feedback; the students fetch it. Nothing in a grade may be lost or misstated on the way.
"""
from __future__ import annotations

import csv
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.demo.submissions import MISTAKE_EDITS, answered, solution_sources
from autograder.grading.engine import GRADING_DIR
from autograder.hub.private_view import unreachable_folder
from autograder.grading.ledger import Ledger
from autograder.paths import SOURCE, notebook_path
from autograder.handins.preflight import nbgrader_metadata
from tests.conftest import copy_course, run_autograder

COURSE = "transformers-from-scratch"
MASKING, PE = "03_masking", "01_positional_encoding"


def points_of(assignment: str) -> float:
    """The points of the source notebook `assignment`: the sum over its graded cells, written answers included."""
    cells = nbformat.read(notebook_path(SOURCE, assignment), as_version=4).cells
    return sum(nbgrader_metadata(c).get("points", 0) for c in cells if nbgrader_metadata(c).get("grade"))


WRITTEN = "q3_mask_before_softmax"  # 03's written answer, 2 points, graded by hand
CHANGED = "hidden_causal_mask"  # the test cell whose points the instructor changes mid-term: 2 -> 3
COMMENT = "Right: the mask must act before softmax, or the weights no longer sum to one."
BIN = Path(sys.executable).parent


@dataclass
class Student:
    name: str
    home: Path

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """`nbgrader <args>` as this student: their own account, home and working directory."""
        return self.python("-m", "nbgrader", *args, check=check)

    def python(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
               "PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin"}
        result = subprocess.run(as_account(self.name, [sys.executable, *args]), cwd=self.home, env=env,
                                capture_output=True, text=True, timeout=300)
        assert not check or result.returncode == 0, f"{self.name}: {' '.join(args)}\n{result.stdout}\n{result.stderr}"
        return result

    def answer(self, assignment: str, source: Path, edits=None) -> None:
        """Fill in the fetched notebook of `assignment` in their home (`edits`: known mistakes made on the way)."""
        fetched = self.home / assignment / f"{assignment}.ipynb"
        notebook = answered(fetched, solution_sources(source), edits)
        nbformat.write(notebook, fetched)
        account = pwd.getpwnam(self.name)
        os.chown(fetched, account.pw_uid, account.pw_gid)


def as_account(name: str, argv: list[str]) -> list[str]:
    """`argv` run as the account `name`. Where this Python lives in a folder other accounts may not enter, the command
    runs in a mount namespace of its own in which that folder shows this Python and nothing else (the machine's own
    folder is untouched); a hub gives its students a Python they can run in the first place."""
    account = pwd.getpwnam(name)
    become = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups", "--", *argv]
    python = Path(sys.base_prefix).resolve()
    hidden = unreachable_folder(python / "bin")
    if hidden is None:
        return become
    reveal = ('set -e; stage=$(mktemp -d); mount --bind "$1" "$stage"; mount -t tmpfs -o mode=755 tmpfs "$2"; '
              'mkdir -p "$1"; mount --bind "$stage" "$1"; shift 2; exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", reveal, "sh", str(python), str(hidden),
            *become]


def _account(name: str, home: Path) -> Student:
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh", name], check=True)
    home.mkdir(parents=True)
    shutil.chown(home, name, pwd.getpwnam(name).pw_gid)
    return Student(name, home)


def _instructor(root: Path, *args: str) -> subprocess.CompletedProcess:
    """A plain nbgrader command of the instructor's, in the course directory."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(root))
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"nbgrader {' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result


def _grade(root: Path, *assignments: str) -> subprocess.CompletedProcess:
    result = run_autograder(root, "grade", *assignments, "--jobs", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result


def _grades_csv(root: Path) -> dict[tuple[str, str], dict]:
    with open(root / "grades.csv") as f:
        return {(row["assignment"], row["student_id"]): row for row in csv.DictReader(f)}


def _ledger_count(root: Path) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for line in (root / GRADING_DIR / "ledger.jsonl").read_text().splitlines():
        entry = json.loads(line)
        key = (entry["assignment"], entry["student"])
        counts[key] = counts.get(key, 0) + 1
    return counts


@dataclass
class Term:
    root: Path
    students: dict[str, Student]
    snapshots: dict[str, dict]  # what the gradebook, export and ledger said after each grading round
    outputs: dict[str, str]  # what each grading round printed


def _snapshot(root: Path) -> dict:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        submissions = {}
        for student in gb.students:
            for submission in student.submissions:
                written = gb.find_grade(WRITTEN, MASKING, MASKING, student.id) if submission.assignment.name == MASKING \
                    else None
                submissions[(submission.assignment.name, student.id)] = {
                    "code": submission.code_score, "max_code": submission.max_code_score,
                    "penalty": submission.late_submission_penalty, "score": submission.score,
                    "written": None if written is None else written.manual_score,
                    "comment": None if written is None else
                    gb.find_comment(WRITTEN, MASKING, MASKING, student.id).manual_comment,
                }
    entries = Ledger(root / GRADING_DIR / "ledger.jsonl").entries()
    with open(root / "reports" / "scores.csv") as f:
        scores = {row["student"]: row for row in csv.DictReader(f)}
    return {"gradebook": submissions, "export": _grades_csv(root), "ledger": _ledger_count(root),
            "reasons": {key: entry.reason for key, entry in entries.items()}, "scores": scores,
            "report": (root / "reports" / "class_report.md").read_text()}


def _change_points(root: Path, cell: str, points: int) -> None:
    path = notebook_path(root / "source", MASKING)
    notebook = nbformat.read(path, as_version=4)
    for found in notebook.cells:
        if found.metadata.get("nbgrader", {}).get("grade_id") == cell:
            found.metadata.nbgrader["points"] = points
    nbformat.write(notebook, path)


@pytest.fixture(scope="module")
def term():
    if os.geteuid() != 0:
        pytest.skip("the term needs three student accounts, and creating accounts needs root (useradd)")
    base = Path(tempfile.mkdtemp(prefix="term-"))
    base.chmod(0o755)  # the students reach their homes and the exchange through it
    names = ["tfs_alice", "tfs_bob", "tfs_carol"]
    try:
        root = copy_course(base / "course")
        exchange = base / "exchange"
        exchange.mkdir()
        exchange.chmod(0o777)  # as nbgrader asks of an exchange: everyone may write
        with open(root / "nbgrader_config.py", "a") as config:
            config.write(f"\nc.Exchange.root = {str(exchange)!r}\nc.LateSubmissionPlugin.penalty_method = 'zero'\n")
        students = {name.removeprefix("tfs_"): _account(name, base / "home" / name) for name in names}
        probe = students["alice"].python("-c", "import nbgrader", check=False)
        if probe.returncode != 0:
            pytest.skip(f"a student account cannot run this environment's nbgrader here: {probe.stderr[-500:]}")
        for student in students.values():
            (student.home / ".jupyter").mkdir()
            (student.home / ".jupyter" / "nbgrader_config.py").write_text(
                f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\nc.CourseDirectory.course_id = {COURSE!r}\n")
            shutil.chown(student.home / ".jupyter", student.name)
            shutil.chown(student.home / ".jupyter" / "nbgrader_config.py", student.name)
        alice, bob, carol = students["alice"], students["bob"], students["carol"]
        source = {a: notebook_path(root / "source", a) for a in (PE, MASKING)}
        snapshots, outputs = {}, {}

        released = run_autograder(root, "release", PE, MASKING)
        assert released.returncode == 0, released.stderr[-3000:]
        for assignment in (PE, MASKING):
            _instructor(root, "release_assignment", assignment)

        # Everyone hands in 03 on time; carol never hands in 01; bob's 03 has a known mistake.
        for student in (alice, bob, carol):
            student.run("fetch_assignment", MASKING)
            student.answer(MASKING, source[MASKING], MISTAKE_EDITS if student is bob else None)
            student.run("submit", MASKING)
        for student in (alice, bob):
            student.run("fetch_assignment", PE)
            student.answer(PE, source[PE])
            student.run("submit", PE)
        _instructor(root, "collect", PE)
        _instructor(root, "collect", MASKING)
        outputs["first"] = _grade(root).stdout
        snapshots["first"] = _snapshot(root)

        # The instructor grades carol's written answer by hand (what formgrader writes), and sets the due date.
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            grade = gb.find_grade(WRITTEN, MASKING, MASKING, carol.name)
            grade.manual_score, grade.needs_manual_grade = 2.0, False
            gb.find_comment(WRITTEN, MASKING, MASKING, carol.name).manual_comment = COMMENT
            gb.db.commit()
        due = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        _instructor(root, "db", "assignment", "add", MASKING, f"--duedate={due}")

        # Bob fixes his mistake and submits again, after the due date; collect without --update misses it.
        bob.answer(MASKING, source[MASKING])
        bob.run("submit", MASKING)
        before = (root / "submitted" / bob.name / MASKING / "timestamp.txt").read_text()
        _instructor(root, "collect", MASKING)
        snapshots["collect without --update"] = {
            "timestamp changed": (root / "submitted" / bob.name / MASKING / "timestamp.txt").read_text() != before}
        _instructor(root, "collect", "--update", MASKING)
        # Carol re-uploads through the learning platform: an unreadable file, copied in beside her first hand-in.
        # A Mac zip's metadata folder lands in submitted/ too.
        carol_folder = root / "submitted" / carol.name / MASKING
        text = notebook_path(root / "release", MASKING).read_text()
        (carol_folder / f"{MASKING}-1.ipynb").write_text(text[: len(text) // 2])
        (root / "submitted" / "__MACOSX" / MASKING).mkdir(parents=True)
        (root / "submitted" / "__MACOSX" / MASKING / f"._{MASKING}.ipynb").write_bytes(b"\x00\x05\x16\x07")
        outputs["second"] = _grade(root, MASKING).stdout
        snapshots["second"] = _snapshot(root)

        # Carol's good re-upload; the instructor makes one test cell worth 3 points instead of 2 and releases again.
        shutil.copyfile(notebook_path(root / "submitted" / alice.name, MASKING), carol_folder / f"{MASKING}-2.ipynb")
        _change_points(root, CHANGED, 3)
        released = run_autograder(root, "release", MASKING)
        assert released.returncode == 0, released.stderr[-3000:]
        _instructor(root, "release_assignment", "--force", MASKING)
        outputs["third"] = _grade(root).stdout
        snapshots["third"] = _snapshot(root)

        _instructor(root, "release_feedback", MASKING)
        for student in (alice, bob):
            student.run("fetch_feedback", MASKING)
        yield Term(root, students, snapshots, outputs)
    finally:
        for name in names:
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_the_late_penalty_is_in_the_gradebook_and_the_export(term):
    bob = term.students["bob"].name
    first, second = term.snapshots["first"], term.snapshots["second"]
    assert first["gradebook"][(MASKING, bob)]["penalty"] == 0, "on time, no penalty"
    assert term.snapshots["collect without --update"]["timestamp changed"] is False, \
        "without --update, collect keeps the hand-in it has: the guide must say so"
    late = second["gradebook"][(MASKING, bob)]
    assert late["code"] > first["gradebook"][(MASKING, bob)]["code"], "the late resubmission was graded"
    assert late["penalty"] == late["code"] > 0, "'zero': the penalty takes every point of a late hand-in"
    row = second["export"][(MASKING, bob)]
    assert float(row["late_submission_penalty"]) == late["code"] and float(row["score"]) == 0
    final = term.snapshots["third"]
    assert final["gradebook"][(MASKING, bob)]["penalty"] == final["gradebook"][(MASKING, bob)]["code"], \
        "a regrade keeps the penalty"


def test_only_what_changed_is_graded_again(term):
    alice, bob = term.students["alice"].name, term.students["bob"].name
    first, second = term.snapshots["first"]["ledger"], term.snapshots["second"]["ledger"]
    assert second[(MASKING, alice)] == first[(MASKING, alice)] == 1, "an unchanged hand-in is not graded again"
    assert second[(MASKING, bob)] == 2, "a collected resubmission is graded again"
    assert second[(PE, alice)] == 1


def test_changed_points_are_regraded_without_a_false_flag(term):
    alice = term.students["alice"].name
    first, final = term.snapshots["first"], term.snapshots["third"]
    assert first["gradebook"][(MASKING, alice)]["code"] == first["gradebook"][(MASKING, alice)]["max_code"] == 9
    assert final["gradebook"][(MASKING, alice)]["code"] == final["gradebook"][(MASKING, alice)]["max_code"] == 10, \
        "after the new release a perfect hand-in earns the new points"
    assert float(final["export"][(MASKING, alice)]["raw_score"]) == 10
    assert final["ledger"][(MASKING, alice)] == 2 and final["ledger"][(PE, alice)] == 1, \
        "the changed assignment is regraded, the other one is not"
    for (assignment, student), reason in final["reasons"].items():
        assert "points of" not in reason and "was edited" not in reason, \
            f"{student} / {assignment}: a cell as an earlier release gave it is flagged as the student's change: {reason}"


def test_manual_grades_and_comments_survive_an_invalid_re_upload_and_a_regrade(term):
    carol = term.students["carol"].name
    invalid, final = term.snapshots["second"], term.snapshots["third"]
    reason = invalid["reasons"][(MASKING, carol)]
    assert "handed in again as 03_masking-1.ipynb" in reason and "is not valid JSON" in reason, reason
    assert invalid["gradebook"][(MASKING, carol)]["code"] == 0, "the unreadable re-upload is graded, not shadowed"
    assert invalid["gradebook"][(MASKING, carol)]["written"] == 2.0, "the manual grade survives an invalid re-upload"
    assert invalid["gradebook"][(MASKING, carol)]["comment"] == COMMENT
    assert not list((term.root / "submitted" / carol / MASKING).glob("*.earlier*")), \
        "her first hand-in stays as it was: the grader writes nothing under submitted/ (issue 27.4)"
    carol_final = final["gradebook"][(MASKING, carol)]
    assert carol_final["code"] == carol_final["max_code"] == 10, "the good re-upload is graded"
    assert carol_final["written"] == 2.0 and carol_final["comment"] == COMMENT, "the manual grade survives a regrade"
    assert float(final["export"][(MASKING, carol)]["raw_score"]) == 12


def test_stray_folders_are_no_students(term):
    assert "skipped submitted/__MACOSX (a Mac's zip metadata): not a student" in term.outputs["second"]
    with Gradebook(f"sqlite:///{term.root / 'gradebook.db'}") as gb:
        assert sorted(s.id for s in gb.students) == sorted(s.name for s in term.students.values())
    assert {student for _, student in _grades_csv(term.root)} == {s.name for s in term.students.values()}


def test_the_students_fetch_their_feedback(term):
    """Feedback of the last grading, with the new points (10 of code and 2 written, not yet graded) and bob's penalty."""
    pages = {}
    for who in ("alice", "bob"):
        found = list((term.students[who].home / MASKING / "feedback").glob(f"*/{MASKING}.html"))
        assert len(found) == 1, f"{who} fetched no feedback"
        pages[who] = found[0].read_text()
    assert f"{MASKING} (Score: 10 / 12)" in pages["alice"], "a score as every output writes it (issue 48)"
    assert "Late submission penalty (Score: -10)" in pages["bob"]


def test_the_class_report_counts_a_missing_hand_in_as_missing(term):
    """Carol never handed in 01. The second round graded 03 alone; the report still covers the whole term."""
    carol = term.students["carol"].name
    for round_ in ("second", "third"):
        scores, report = term.snapshots[round_]["scores"], term.snapshots[round_]["report"]
        assert scores[carol][PE] == "missing" and scores[carol]["missing"] == "1", round_
        assert f"- {carol} / {PE}" in report.split("## Missing hand-ins", 1)[1].split("\n## ", 1)[0], round_
        assert PE in report.splitlines()[2] and MASKING in report.splitlines()[2], f"{round_}: {report.splitlines()[2]}"
    final = term.snapshots["third"]["scores"][carol]
    masking = points_of(MASKING) + 1  # 11 in the source, 12 once the term has made CHANGED worth 3 instead of 2
    pe = points_of(PE)  # every graded cell of 01, its written answers too
    # carol handed 03 in again after her written answer was graded: nbgrader asks for it again (issue 59), and its
    # earlier mark, kept, counts until then
    assert final[MASKING] == f"12/{masking:g} (written answers not graded yet; earlier answer: 2/2)" and \
        final["of"] == f"{masking + pe:g}", final
    assert float(final["percent"]) == round(100 * 12 / (masking + pe), 1), (
        f"a perfect 03 (10 autograded, 2 written graded by hand) and a missing 01 ({pe:g}) is 12 of "
        f"{masking + pe:g} points, not 100%")


def test_make_clean_keeps_the_grades_and_new_term_deletes_nothing(tmp_path):
    """`make clean` removes only what grading makes again; `make new-term` moves a whole term aside."""
    shutil.copy(Path(__file__).parent.parent / "Makefile", tmp_path / "Makefile")
    term_files = ["gradebook.db", "grades.csv", "submitted/alice/03_masking/03_masking.ipynb",
                  "downloaded/03_masking/archive/canvas.zip", "autograded/alice/03_masking/03_masking.ipynb",
                  "feedback/alice/03_masking/03_masking.html", "reports/class_report.md", "grading/ledger.jsonl",
                  "extensions.json"]
    for name in term_files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    subprocess.run(["make", "clean"], cwd=tmp_path, check=True, capture_output=True)
    kept = {name for name in term_files if (tmp_path / name).exists()}
    assert kept == {"gradebook.db", "submitted/alice/03_masking/03_masking.ipynb",
                    "downloaded/03_masking/archive/canvas.zip", "extensions.json"}, \
        "make clean keeps grades, extensions and hand-ins, only those"

    for name in term_files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    exchange = tmp_path / "exchange"  # the term's hand-ins, releases and feedback in nbgrader's exchange layout
    course = exchange / COURSE
    exchanged = [f"inbound/alice+{MASKING}+2026-12-04 16:59:00.000000 UTC+abc/{MASKING}.ipynb",
                 f"outbound/{MASKING}/{MASKING}.ipynb", "feedback/0123abcd.html"]
    for name in exchanged:
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(name)
    (course / "inbound").chmod(0o733)  # as nbgrader release_assignment leaves it: every student may submit
    (tmp_path / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = {COURSE!r}\nc.Exchange.root = {str(exchange)!r}\n")
    # lms/: last term's rosters, uploads, kept columns and pushes go (issue 48); the LTI tool's registration stays
    last_terms = ["canvas-export.csv", "canvas-upload.csv", "moodle-export.csv", "moodle-upload.csv", "columns.json",
                  "lti-sent.json"]
    registered = ["lti.toml", "lti-private-key.pem", "lti-keyset.json"]
    for name in last_terms + registered:
        (tmp_path / "lms").mkdir(exist_ok=True)
        (tmp_path / "lms" / name).write_text(name)
    moved = subprocess.run(["make", "new-term", f"PY={sys.executable}"], cwd=tmp_path, check=True,
                           capture_output=True, text=True)
    assert "nothing was deleted" in moved.stdout
    archives = list((tmp_path / "archive").iterdir())
    assert len(archives) == 1
    for name in term_files:
        assert not (tmp_path / name).exists() and (archives[0] / name).read_text() == name, name
    for name in exchanged:
        assert (archives[0] / "exchange" / COURSE / name).read_text() == name, f"{name}: {moved.stdout}"
    assert [list((course / folder).iterdir()) for folder in ("inbound", "outbound", "feedback")] == [[], [], []], \
        "the new term's nbgrader collect would bring last term's hand-ins back"
    assert (course / "inbound").stat().st_mode & 0o777 == 0o733, "students can still submit"
    assert sorted(p.name for p in (tmp_path / "lms").iterdir()) == sorted(registered), moved.stdout
    for name in last_terms:
        assert (archives[0] / "lms" / name).read_text() == name, f"{name}: {moved.stdout}"
    assert "write the new course's lineitems_url and memberships_url into" in moved.stdout, moved.stdout
