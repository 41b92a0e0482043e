"""`python -m autograder lms export canvas|moodle` on roster files in each LMS's own export layout, the upload read
back as the LMS reads it (each rule says where the LMS defines it), on a class written with nbgrader's Gradebook API
(tests/lms_class.py: the demo class's students; no notebook is run)."""
from __future__ import annotations

import contextlib
import csv
import io
import re
import shutil
from pathlib import Path

import pytest

from autograder.cli import main
from nbgrader.api import Gradebook

from tests.lms_class import (A, B, DUE, EXPECTED, STUDENTS, class_gradebook, grade_written_answer, in_course,
                             late_by)

BOM = "\ufeff"
# Canvas: Grades > Export > Export Entire Gradebook, with Show Concluded Enrollments on: a byte order mark, the
# sortable name quoted when it holds a comma, the Points Possible row, read-only totals, a blank section, a student
# in two sections, Canvas's test student, and a concluded student who left before handing anything in.
CANVAS_EXPORT = BOM + (
    "Student,ID,SIS User ID,SIS Login ID,Section,Masking (1201),Attention Block (1202),Reading Quiz (1203),"
    "Current Points,Final Points,Current Score,Unposted Current Score,Final Score,Unposted Final Score\r\n"
    "    Points Possible,,,,,9.00,10.00,5.00,(read only),(read only),(read only),(read only),(read only),"
    "(read only)\r\n"
    '"Lovelace, Ada",5001,S5001,demo_perfect,TFS 2026 Section A,,,5.00,5.00,5.00,100.00,100.00,20.00,20.00\r\n'
    '"Doe, Jr., Jane",5002,S5002,demo_partial,TFS 2026 Section A,,,4.00,4.00,4.00,80.00,80.00,16.00,16.00\r\n'
    '"Ångström, Zoë",5003,,demo_empty,,,,,,,,,,\r\n'
    '"Roe, Eric",5004,S5004,demo_broken,TFS 2026 Section A and TFS 2026 Section B,,,3.00,3.00,3.00,60.00,60.00,'
    "12.00,12.00\r\n"
    '"Hopper, Grace",5005,S5005,demo_invalid,TFS 2026 Section B,,,,,,,,,\r\n'
    '"Student, Test",5999,,,TFS 2026 Section A,,,,,,,,,\r\n'
    '"Babbage, Charles",5006,S5006,cbabbage,TFS 2026 Section B,,,,,,,,,\r\n')
# Moodle: Grades > Export > Plain text file, separator semicolon (a German Excel's), user fields as ticked.
MOODLE_EXPORT = (
    "First name;Last name;ID number;Institution;Department;Email address;Username;Assignment: 03 Masking (Real);"
    "Assignment: 04 The attention block (Real);Quiz: Reading (Real);Course total (Real);"
    "Last downloaded from this course\n"
    "Ada;Lovelace;S5001;Uni;CS;ada@uni.example;demo_perfect;-;-;5,00;5,00;1764121200\n"
    'Jane;"Doe, Jr.";S5002;Uni;CS;jane@uni.example;demo_partial;-;-;4,00;4,00;1764121200\n'
    "Zoë;Ångström;;Uni;;zoe@uni.example;demo_empty;-;-;-;-;1764121200\n"
    "Eric;Roe;S5004;Uni;CS;eric@uni.example;demo_broken;-;-;3,00;3,00;1764121200\n"
    "Grace;Hopper;S5005;Uni;CS;grace@uni.example;demo_invalid;-;-;-;-;1764121200\n")
MOODLE_A = "Assignment: 03 Masking (Real)"
MOODLE_B = "Assignment: 04 The attention block (Real)"

# Moodle 3.x: Grades > Export > Plain text file, separator comma, feedback included: `Surname`, not `Last name`, and
# each item's feedback beside its grade, `Type: Name (Feedback)`; Eric's masking already graded in Moodle.
MOODLE_3_EXPORT = (
    "First name,Surname,Institution,Department,Email address,Assignment: 03 Masking (Real),"
    "Assignment: 03 Masking (Feedback),Quiz: Reading (Real),Quiz: Reading (Feedback),Course total (Real),"
    "Last downloaded from this course\n"
    "Ada,Lovelace,Uni,CS,ada@uni.example,-,,5.00,,5.00,1764121200\n"
    'Jane,"Doe, Jr.",Uni,CS,jane@uni.example,-,,4.00,,4.00,1764121200\n'
    "Zoë,Ångström,Uni,,zoe@uni.example,-,,-,,-,1764121200\n"
    "Eric,Roe,Uni,CS,eric@uni.example,6.00,Looked at in class,3.00,,9.00,1764121200\n"
    "Grace,Hopper,Uni,CS,grace@uni.example,-,,-,,-,1764121200\n"
    "Charles,Babbage,Uni,CS,charles@uni.example,-,,-,,-,1764121200\n")


def canvas_localized(text: str) -> str:
    """A Canvas export as Canvas writes it in a decimal-comma locale: semicolons between fields, `9,00`."""
    rows = list(csv.reader(io.StringIO(text.removeprefix(BOM), newline="")))
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=";", lineterminator="\r\n").writerows(
        [[cell.replace(".", ",") if cell.replace(".", "").isdigit() else cell for cell in row] for row in rows])
    return BOM + out.getvalue()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The class as graded (demo_broken's written answer not graded yet), and with it graded."""
    return {"pending": class_gradebook(tmp_path_factory, "pending.db"),
            "graded": grade_written_answer(class_gradebook(tmp_path_factory, "graded.db"))}


@pytest.fixture()
def gradebooks(built, tmp_path) -> dict[str, Path]:
    """`built`, each a course of this test's own: its gradebook, its late policy and the LMS columns it keeps."""
    found = {}
    for name, path in built.items():
        (tmp_path / f"course-{name}").mkdir()
        found[name] = in_course(Path(shutil.copy(path, tmp_path / f"course-{name}" / "gradebook.db")))
    return found


def export(tmp_path: Path, gradebook: Path, *args: str) -> tuple[int, str]:
    """`python -m autograder lms export ...` in this process: (exit status, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(["lms", "export", *args, "--gradebook", str(gradebook)])
        except SystemExit as stop:
            code, message = stop.code, stop.code
            if isinstance(message, str):
                out.write(message)
                code = 1
    return code, out.getvalue()


def canvas_reads(path: Path) -> dict:
    """The upload as Canvas's gradebook import reads it (Canvas guide "How do I import grades in the Gradebook?"):
    UTF-8, a byte order mark allowed; the identity columns end at `Section`; each later column is an assignment,
    `Name (id)` for one Canvas has, any other name a new assignment; the row whose first cell is `Points Possible`
    gives points, not a student; a student row is found by its ID; a blank cell changes nothing."""
    text = path.read_bytes().decode("utf-8").removeprefix(BOM)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header = rows[0]
    identity = header[:header.index("Section") + 1]
    assignments = header[len(identity):]
    points = [r for r in rows[1:] if r[0].strip() == "Points Possible"]
    students = {r[header.index("ID")]: dict(zip(header, r)) for r in rows[1:] if r[0].strip() != "Points Possible"}
    assert all(len(r) == len(header) for r in rows), "a row is not as long as the header"
    return {"identity": identity, "assignments": assignments, "points": dict(zip(header, points[0])) if points else {},
            "students": students}


def moodle_reads(path: Path, separator: str, identity: str) -> dict:
    """The upload as Moodle's CSV grade import reads it (Moodle docs "Grade import", grade/import/csv): UTF-8, the
    separator chosen on the form; the column mapped to `identity` finds the user; every other column is mapped to a
    grade item or its feedback; a blank cell leaves the grade as it is."""
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline=""), delimiter=separator))
    header = rows[0]
    assert not header[0].startswith(BOM)
    assert all(len(r) == len(header) for r in rows)
    return {"header": header, "users": {r[header.index(identity)]: dict(zip(header, r)) for r in rows[1:]}}


def test_canvas_upload_is_the_gradebook_in_canvas_layout(gradebooks, tmp_path):
    roster = tmp_path / "2026-11-26T0149_Grades-TFS_2026.csv"
    roster.write_text(CANVAS_EXPORT, encoding="utf-8", newline="")
    upload = tmp_path / "canvas-upload.csv"
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, B, "--roster", str(roster), "-o", str(upload),
                        "--match", "sis-login", "--column", f"{A}=1201", "--column", f"{B}=1202", "--allow-unmatched")
    assert code == 0, said
    read = canvas_reads(upload)
    assert read["identity"] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert read["assignments"] == ["Masking (1201)", "Attention Block (1202)"], "only the assignments named, each "\
        "in the column given: no total, no other column"
    assert read["points"]["Masking (1201)"] == "9.00" and read["points"]["Attention Block (1202)"] == "10.00"
    assert upload.read_bytes().startswith(BOM.encode()), "Canvas's own export has a byte order mark; so has this"
    ids = {sis: canvas_id for canvas_id, sis in [("5001", "demo_perfect"), ("5002", "demo_partial"),
                                                 ("5003", "demo_empty"), ("5004", "demo_broken"),
                                                 ("5005", "demo_invalid")]}
    for (student, assignment), total in EXPECTED.items():
        column = "Masking (1201)" if assignment == A else "Attention Block (1202)"
        got = read["students"][ids[student]][column]
        assert float(got) == (total + (1 if student == "demo_broken" and assignment == A else 0)), (student, got)
    assert read["students"]["5003"]["Attention Block (1202)"] == "", "a missing hand-in is blank: no change in Canvas"
    assert read["students"]["5002"]["Student"] == "Doe, Jr., Jane", "identity copied verbatim"
    assert read["students"]["5004"]["Section"] == "TFS 2026 Section A and TFS 2026 Section B"
    assert read["students"]["5003"]["Section"] == ""
    assert "5999" not in read["students"] and "5006" not in read["students"]
    assert "Student, Test" in said and "Babbage, Charles" in said, "the test student and the unmatched are named"


def test_canvas_stops_on_an_unmatched_student_and_names_both_sides(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(CANVAS_EXPORT.replace("demo_invalid", "ghopper"), encoding="utf-8", newline="")
    upload = tmp_path / "upload.csv"
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o", str(upload),
                        "--match", "sis-login")
    assert code != 0 and not upload.exists()
    assert "In the gradebook but not in the roster (by SIS Login ID): demo_invalid" in said
    assert "Hopper, Grace (ID 5005" in said and "Babbage, Charles (ID 5006" in said
    assert "--allow-unmatched" in said


def test_canvas_matches_by_name_with_commas_and_accents(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(CANVAS_EXPORT.replace("Masking (1201)", "Tokenizer (1201)"), encoding="utf-8", newline="")
    upload = tmp_path / "upload.csv"
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o", str(upload),
                        "--match", "name", "--allow-unmatched", "--missing", "zero", "--column", f"{A}=new")
    assert code == 0, said
    students = canvas_reads(upload)["students"]
    assert set(students) == {"5001", "5002", "5003", "5004", "5005"}
    assert students["5002"][A] == "3" and students["5003"][A] == "0"
    assert canvas_reads(upload)["points"][A] == "9", "a new column takes its points from the Points Possible row"
    roster.write_text(CANVAS_EXPORT.replace("Masking (1201)", f"{A} (1301)"), encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o", str(upload),
                        "--match", "name", "--allow-unmatched")
    assert code == 0 and f"{A} -> {A} (1301) (the assignment an earlier upload made for it)" in said, said
    assert canvas_reads(upload)["assignments"] == [f"{A} (1301)"], "found by its id from now on"


def test_pending_written_answers_are_refused_or_left_blank_keeping_a_score_canvas_holds(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(CANVAS_EXPORT.replace("Section B,,,3.00", "Section B,6.00,,3.00"), encoding="utf-8", newline="")
    upload = tmp_path / "upload.csv"
    args = ("canvas", A, "--roster", str(roster), "-o", str(upload), "--match", "sis-login", "--allow-unmatched",
            "--column", f"{A}=1201")
    code, said = export(tmp_path, gradebooks["pending"], *args)
    assert code != 0 and not upload.exists()
    assert "demo_broken / 03_masking: 1 written answer not graded yet" in said
    code, said = export(tmp_path, gradebooks["pending"], *args, "--pending", "blank")
    assert code == 0, said
    students = canvas_reads(upload)["students"]
    assert students["5004"]["Masking (1201)"] == "6.00", "the score Canvas holds is written back, not blanked"
    assert students["5001"]["Masking (1201)"] == "9" and students["5003"]["Masking (1201)"] == "0"
    assert "demo_broken / 03_masking: kept the LMS's score 6.00, written answers not graded yet" in said


def test_canvas_refuses_an_assignment_with_other_points(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(CANVAS_EXPORT, encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--match", "sis-login", "--allow-unmatched", "--column", f"{A}=1203")
    assert code != 0 and "out of 9 points here, but Canvas's Reading Quiz (1203) is out of 5.00" in said


def test_moodle_upload_semicolons_feedback_and_identity(gradebooks, tmp_path):
    roster = tmp_path / "TFS 2026 Grades.csv"
    roster.write_text(MOODLE_EXPORT, encoding="utf-8")
    upload = tmp_path / "moodle-upload.csv"
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, B, "--roster", str(roster), "-o", str(upload),
                        "--feedback", "--identity", "email", "--column", f"{A}={MOODLE_A}", "--column",
                        f"{B}={MOODLE_B}", "--item-max", f"{A}=9", "--item-max", f"{B}=10")
    assert code == 0, said
    read = moodle_reads(upload, ";", "Email address")
    assert read["header"] == ["Email address", MOODLE_A, "Assignment: 03 Masking (Feedback)", MOODLE_B,
                              "Assignment: 04 The attention block (Feedback)", "Last downloaded from this course"]
    by_mail = {STUDENTS[s][2]: s for s in STUDENTS}
    for (student, assignment), total in EXPECTED.items():
        row = read["users"][STUDENTS[student][2]]
        column = MOODLE_A if assignment == A else MOODLE_B
        assert float(row[column]) == total + (1 if student == "demo_broken" and assignment == A else 0)
    assert read["users"]["jane@uni.example"]["Assignment: 03 Masking (Feedback)"] == "3/9 (late: -2)"
    assert read["users"]["jane@uni.example"]["Last downloaded from this course"] == "1764121200"
    assert read["users"]["zoe@uni.example"][MOODLE_B] == "", "a missing hand-in is blank"
    assert set(read["users"]) == set(by_mail)


def test_moodle_refuses_an_item_out_of_other_points(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(MOODLE_EXPORT, encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--item-max", f"{A}=5", "--column", f"{A}={MOODLE_A}")
    assert code != 0
    assert f"03_masking is out of 9 points here, but the Moodle item {MOODLE_A} is out of 5" in said, said
    assert "set the item's Maximum grade to 9 in Moodle (Setup > Gradebook setup > Edit), then run this again with " \
        "--item-max 03_masking=9" in said, said


def test_moodle_needs_the_identity_column(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(MOODLE_EXPORT.replace("Username", "Phone"), encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--identity", "username")
    assert code != 0 and "has no column 'Username'" in said


def test_canvas_decimal_commas_are_read_checked_and_written(gradebooks, tmp_path_factory, tmp_path):
    """A Canvas export in a decimal-comma locale: Points Possible `10,00` against a 9-point notebook is refused (and
    the earlier upload removed); with `9,00` the upload keeps the semicolons and writes `2,5`."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "canvas-upload.csv"
    localized = canvas_localized(CANVAS_EXPORT)
    assert "Masking (1201);Attention Block (1202)" in localized and ";9,00;10,00;5,00;" in localized
    roster.write_text(localized.replace(";9,00;", ";10,00;"), encoding="utf-8", newline="")
    upload.write_text("an upload from an earlier run, with its old numbers")
    args = ("canvas", A, "--roster", str(roster), "-o", str(upload), "--match", "sis-login", "--allow-unmatched",
            "--column", f"{A}=1201")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0 and "out of 9 points here, but Canvas's Masking (1201) is out of 10,00" in said
    assert not upload.exists() and f"Removed the earlier upload {upload}" in said
    gradebook = class_gradebook(tmp_path_factory, "half-point.db")
    with Gradebook(f"sqlite:///{grade_written_answer(gradebook)}") as gb:  # 2.4 days late: 2.5 points off
        gb.find_submission(A, "demo_partial").timestamp = DUE + late_by(2.5)
        gb.find_submission_notebook(A, A, "demo_partial").late_submission_penalty = 2.5
        gb.db.commit()
    roster.write_text(localized, encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebook, *args)
    assert code == 0, said
    rows = list(csv.reader(io.StringIO(upload.read_text(encoding="utf-8-sig"), newline=""), delimiter=";"))
    assert rows[0][-1] == "Masking (1201)" and rows[1][-1] == "9,00"
    assert {row[3]: row[-1] for row in rows[2:]}["demo_partial"] == "2,5"


def test_a_match_rule_the_roster_cannot_read_is_named_with_one_that_can(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    rows = list(csv.reader(io.StringIO(CANVAS_EXPORT.removeprefix(BOM), newline="")))
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows([row[:2] + row[4:] for row in rows])  # no SIS columns
    roster.write_text(BOM + out.getvalue(), encoding="utf-8", newline="")
    for rule, column in (("sis-login", "'SIS Login ID'"), ("email", "'SIS Login ID'"), ("sis-id", "'SIS User ID'")):
        code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o",
                            str(tmp_path / "u.csv"), "--match", rule)
        assert code != 0 and f"--match {rule} reads the column {column}, which {roster} lacks" in said, said
        assert "its columns are: Student, ID, Section, Masking (1201)" in said
        assert "Use --match canvas-id or --match name" in said
    blank_sis = re.sub(r",S500\d,", ",,", CANVAS_EXPORT)  # Canvas's export for a course without SIS ids
    roster.write_text(blank_sis, encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--match", "sis-id")
    assert code != 0 and "reads the column 'SIS User ID' (every cell blank)" in said, said
    roster.write_text(MOODLE_3_EXPORT, encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--match", "username")
    assert code != 0 and "--match username reads the column 'Username'" in said
    assert "Use --match name or --match email" in said


def test_moodle_3_with_feedback_columns(gradebooks, tmp_path):
    """Moodle 3.x's `Surname`, its feedback columns beside each item, its `Last downloaded from this course`, and a
    grade Moodle holds for an answer not graded here yet."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "moodle-upload.csv"
    roster.write_text(MOODLE_3_EXPORT, encoding="utf-8")
    code, said = export(tmp_path, gradebooks["pending"], "moodle", A, "--roster", str(roster), "-o", str(upload),
                        "--feedback", "--pending", "blank", "--allow-unmatched", "--column", f"{A}={MOODLE_A}",
                        "--item-max", f"{A}=9")
    assert code == 0, said
    assert "In the roster but not in the gradebook (by full name" in said and "Charles Babbage (charles@" in said
    assert "03_masking -> Assignment: 03 Masking (Real)" in said
    read = moodle_reads(upload, ",", "Email address")
    assert read["header"] == ["Email address", "Assignment: 03 Masking (Real)", "Assignment: 03 Masking (Feedback)",
                              "Last downloaded from this course"], "as Moodle's import maps them by themselves"
    assert read["users"]["jane@uni.example"]["Assignment: 03 Masking (Real)"] == "3"
    assert read["users"]["jane@uni.example"]["Assignment: 03 Masking (Feedback)"] == "3/9 (late: -2)"
    eric = read["users"]["eric@uni.example"]
    assert eric["Assignment: 03 Masking (Real)"] == "6.00" and eric["Assignment: 03 Masking (Feedback)"] == \
        "Looked at in class", "a grade Moodle holds is written back, never erased by a blank"
    assert {u["Last downloaded from this course"] for u in read["users"].values()} == {"1764121200"}
    for given in ("Assignment: 03 Masking (Real)", "Assignment: 03 Masking (Feedback)", "03 Masking"):
        code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o", str(upload),
                            "--column", f"{A}={given}", "--allow-unmatched", "--item-max", f"{A}=9")
        assert code == 0 and "03_masking -> Assignment: 03 Masking (Real)" in said, (given, said)


def test_the_first_export_shows_the_column_and_the_course_keeps_it(gradebooks, tmp_path):
    """No column is picked before the instructor confirms it: the first export shows the assignment titled as the
    notebook and writes nothing; confirmed, its id is kept beside the gradebook and every later export uses it, a
    quiz that shares a word with the notebook never being a candidate."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "u.csv"
    roster.write_text(CANVAS_EXPORT.replace("Reading Quiz (1203)", "Masking Quiz (1204)"), encoding="utf-8",
                      newline="")
    args = ("canvas", A, "--roster", str(roster), "-o", str(upload), "--match", "sis-login", "--allow-unmatched")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0 and not upload.exists(), said
    assert "03_masking: Masking (1201) is titled as the notebook" in said, said
    assert "If that is right, run again with: --column 03_masking=1201" in said, said
    assert "1204" not in said.split("The Canvas export's columns")[0], "a title sharing a word is no candidate"
    kept = gradebooks["graded"].parent / "lms" / "columns.json"
    assert not kept.exists(), "nothing is kept before it is confirmed"
    code, said = export(tmp_path, gradebooks["graded"], *args, "--column", f"{A}=1201")
    assert code == 0 and f"03_masking -> Masking (1201) (confirmed now; kept in {kept} for the next exports)" in said
    assert canvas_reads(upload)["assignments"] == ["Masking (1201)"]
    roster.write_text(CANVAS_EXPORT.replace("Masking (1201)", "Notebook 03 (1201)"), encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code == 0 and "03_masking -> Notebook 03 (1201) (kept)" in said, "kept by its id, whatever its title"
    roster.write_text(CANVAS_EXPORT.replace("Masking (1201)", "Masking (1301)"), encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0 and "Canvas's assignment 1201 (Notebook 03), the column the course keeps for 03_masking, is " \
        "not in this export" in said, said


ATTENTION = "02_attention"


def with_attention(gradebook: Path) -> Path:
    """The class with notebook 02 (two code cells, 3 and 2 points), handed in by demo_perfect (5) and demo_partial
    (3.5), on time."""
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        gb.add_assignment(ATTENTION, duedate=DUE)
        gb.add_notebook(ATTENTION, ATTENTION)
        for name, points in (("check_attention", 3), ("hidden_attention", 2)):
            gb.add_grade_cell(name, ATTENTION, ATTENTION, max_score=points, cell_type="code")
        for student, points in (("demo_perfect", (3, 2)), ("demo_partial", (1.5, 2))):
            with gb.db.no_autoflush:
                gb.add_submission(ATTENTION, student, timestamp=DUE)
            for name, got in zip(("check_attention", "hidden_attention"), points):
                grade = gb.find_grade(name, ATTENTION, ATTENTION, student)
                grade.auto_score, grade.needs_manual_grade = got, False
        gb.db.commit()
    return gradebook


# A Canvas course where notebook 02's assignment is titled "Notebook 02", beside a Canvas-only quiz on
# self-attention with the same points, which the class has taken already.
CANVAS_QUIZ = BOM + (
    "Student,ID,SIS User ID,SIS Login ID,Section,Notebook 02 (40149),Self-attention quiz (40150),Current Points,"
    "Final Points,Current Score,Unposted Current Score,Final Score,Unposted Final Score\r\n"
    "    Points Possible,,,,,5.00,5.00,(read only),(read only),(read only),(read only),(read only),(read only)\r\n"
    '"Lovelace, Ada",5001,S5001,demo_perfect,TFS 2026 Section A,,4.00,4.00,4.00,80.00,80.00,80.00,80.00\r\n'
    '"Doe, Jr., Jane",5002,S5002,demo_partial,TFS 2026 Section A,,3.00,3.00,3.00,60.00,60.00,60.00,60.00\r\n')


def test_a_notebook_never_goes_to_a_quiz_that_shares_a_word(gradebooks, tmp_path):
    """Issue 48: `02_attention -> Self-attention quiz (40150)`, exit 0, the quiz's scores overwritten. Now nothing is
    written until 02's column is confirmed, the quiz is never proposed, and the quiz's column is not in the upload."""
    gradebook = with_attention(gradebooks["graded"])
    roster, upload = tmp_path / "grades.csv", tmp_path / "canvas-upload.csv"
    roster.write_text(CANVAS_QUIZ, encoding="utf-8", newline="")
    args = ("canvas", ATTENTION, "--roster", str(roster), "-o", str(upload), "--match", "sis-login",
            "--allow-unmatched")
    code, said = export(tmp_path, gradebook, *args)
    assert code != 0 and not upload.exists(), said
    assert "02_attention: no assignment is titled as the notebook (02_attention or 02 Attention or Attention): name " \
        "its assignment with --column 02_attention=ID, or make a new one with --column 02_attention=new" in said, said
    assert "40150" not in said.split("The Canvas export's columns")[0] and "run again with" not in said, said
    code, said = export(tmp_path, gradebook, *args, "--column", f"{ATTENTION}=40149")
    assert code == 0, said
    read = canvas_reads(upload)
    assert read["assignments"] == ["Notebook 02 (40149)"], "the quiz's column is not in the upload"
    assert read["students"]["5001"]["Notebook 02 (40149)"] == "5"
    assert read["students"]["5002"]["Notebook 02 (40149)"] == "3.5"


# Canvas with this course's own titles: 02's assignment titled exactly as the notebook's folder, 04's as its heading.
CANVAS_OWN_TITLES = BOM + (
    "Student,ID,SIS User ID,SIS Login ID,Section,02_attention (40151),The attention block (40152),Current Score\r\n"
    "    Points Possible,,,,,5.00,10.00,(read only)\r\n"
    '"Lovelace, Ada",5001,S5001,demo_perfect,TFS 2026 Section A,,,\r\n'
    '"Doe, Jr., Jane",5002,S5002,demo_partial,TFS 2026 Section A,,,\r\n')


def test_02_and_04_never_collide(gradebooks, tmp_path):
    """Issue 48: 02 "always collides with The attention block, even when the column is titled exactly 02_attention".
    Each notebook's candidate is the column titled as it, and the confirmed upload puts each in its own."""
    gradebook = with_attention(gradebooks["graded"])
    roster, upload = tmp_path / "grades.csv", tmp_path / "canvas-upload.csv"
    roster.write_text(CANVAS_OWN_TITLES, encoding="utf-8", newline="")
    args = ("canvas", ATTENTION, B, "--roster", str(roster), "-o", str(upload), "--match", "sis-login",
            "--allow-unmatched")
    code, said = export(tmp_path, gradebook, *args)
    assert code != 0, said
    assert "02_attention: 02_attention (40151) is titled as the notebook" in said, said
    assert "04_attention_block: The attention block (40152) is titled as the notebook" in said, said
    options = said.split("run again with: ")[1].split()
    assert options == ["--column", "02_attention=40151", "--column", "04_attention_block=40152"], said
    code, said = export(tmp_path, gradebook, *args, *options)
    assert code == 0, said
    students = canvas_reads(upload)["students"]
    assert (students["5001"]["02_attention (40151)"], students["5001"]["The attention block (40152)"]) == ("5", "10")
    assert (students["5002"]["02_attention (40151)"], students["5002"]["The attention block (40152)"]) == ("3.5", "7")
    roster.write_text(MOODLE_EXPORT.replace(MOODLE_A, "Assignment: 02 Attention (Real)"), encoding="utf-8")
    code, said = export(tmp_path, gradebook, "moodle", ATTENTION, B, "--roster", str(roster), "-o",
                        str(tmp_path / "moodle-upload.csv"), "--allow-unmatched")
    assert code != 0, said
    assert "02_attention: Assignment: 02 Attention (Real) is named as the notebook" in said, said
    assert f"04_attention_block: {MOODLE_B} is named as the notebook" in said, said


def test_the_moodle_maximum_is_known_before_a_grade_is_written(gradebooks, tmp_path):
    """Issue 48: a Moodle item out of 11, exported without --item-max, got 12 (Moodle cuts or refuses it). Moodle's
    export does not say an item's maximum: the first export asks for it, it is kept with the column, an item out of
    other points is refused, and so is a score above it (extra credit), never cut by Moodle."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "moodle-upload.csv"
    roster.write_text(MOODLE_EXPORT, encoding="utf-8")
    args = ("moodle", A, "--roster", str(roster), "-o", str(upload))
    code, said = export(tmp_path, gradebooks["graded"], *args, "--column", f"{A}={MOODLE_A}")
    assert code != 0 and not upload.exists(), said
    assert f"03_masking: Moodle's export does not say the maximum grade of {MOODLE_A}: give it once, --item-max " \
        "03_masking=<its Maximum grade in Moodle>" in said, said
    code, said = export(tmp_path, gradebooks["graded"], *args, "--column", f"{A}={MOODLE_A}", "--item-max", f"{A}=9")
    assert code == 0, said
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code == 0 and f"03_masking -> {MOODLE_A} (kept)" in said, "the column and its maximum are kept"
    code, said = export(tmp_path, gradebooks["graded"], *args, "--item-max", f"{A}=11")
    assert code != 0 and f"03_masking is out of 9 points here, but the Moodle item {MOODLE_A} is out of 11" in said
    with Gradebook(f"sqlite:///{gradebooks['graded']}") as gb:  # 1 point of extra credit: 10 of 9
        gb.find_grade("causal_mask_test", A, A, "demo_perfect").extra_credit = 1
        gb.db.commit()
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0 and not upload.exists(), said
    assert "03_masking: demo_perfect has 10, above the 9 points of the Moodle item" in said, said


MOODLE_CATEGORIES = (
    "First name,Last name,Email address,Assignment: 03 Masking (Real),Masking total (Real),Course total (Real)\n"
    "Ada,Lovelace,ada@uni.example,-,-,-\n"
    "Jane,Doe,jane@uni.example,-,-,-\n")


def test_a_moodle_total_or_percentage_is_never_a_target(gradebooks, tmp_path):
    """Issue 48: a category total was offered as the --column, and percentage columns silently became a new Moodle
    column. A total is never a candidate and is refused when named; percentages say how to export points."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "moodle-upload.csv"
    roster.write_text(MOODLE_CATEGORIES, encoding="utf-8")
    args = ("moodle", A, "--roster", str(roster), "-o", str(upload), "--allow-unmatched")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0, said
    assert f"03_masking: {MOODLE_A} is named as the notebook" in said, said
    assert "Masking total" not in said, "a category's total is neither proposed nor listed as a column"
    code, said = export(tmp_path, gradebooks["graded"], *args, "--column", f"{A}=Masking total (Real)",
                        "--item-max", f"{A}=9")
    assert code != 0 and "Masking total (Real) (from --column 03_masking=Masking total (Real)) is a total" in said
    roster.write_text(MOODLE_CATEGORIES.replace("(Real)", "(Percentage)"), encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0 and not upload.exists(), said
    assert "Not written: this Moodle export gives its grade items only as Assignment: 03 Masking (Percentage), not " \
        "in points, and Moodle's import reads only points: export the grades again with the grade export display " \
        "type Real (Export format options), and run this again." in said, said
    assert "a new Moodle column" not in said


def test_canvas_exports_in_every_layout_canvas_writes(gradebooks, tmp_path):
    """Canvas's `LastName`/`FirstName` layout (courses that show names split) is read; a header whose names were
    translated, which Canvas's own import refuses too, is named for what it is."""
    rows = list(csv.reader(io.StringIO(CANVAS_EXPORT.removeprefix(BOM), newline="")))
    split = [["LastName", "FirstName", *rows[0][1:]]]
    for row in rows[1:]:
        last, comma, first = row[0].rpartition(", ")
        split.append([last, first, *row[1:]] if comma else [row[0], "", *row[1:]])
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(split)
    roster, upload = tmp_path / "grades.csv", tmp_path / "canvas-upload.csv"
    roster.write_text(BOM + out.getvalue(), encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o", str(upload),
                        "--match", "name", "--column", f"{A}=1201", "--allow-unmatched")
    assert code == 0, said
    read = canvas_reads(upload)
    assert read["identity"] == ["LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert read["students"]["5002"]["Masking (1201)"] == "3" and read["students"]["5002"]["LastName"] == "Doe, Jr."
    assert "Student, Test (Canvas's test student)" in said and "Babbage, Charles" in said, said
    translated = CANVAS_EXPORT.replace("Student,ID,SIS User ID,SIS Login ID,Section",
                                       "Étudiant,ID,SIS User ID,SIS Login ID,Section de cours")
    roster.write_text(translated, encoding="utf-8", newline="")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", A, "--roster", str(roster), "-o", str(upload))
    assert code != 0, said
    assert "its first columns are Étudiant, ID, SIS User ID, SIS Login ID, Section de cours, Masking (1201), where " \
        "Canvas writes Student, ID, SIS User ID, SIS Login ID, Section in English whatever the course's language" in said
    assert "Download it again in Canvas from Grades > Export > Export Entire Gradebook" in said


def test_a_stale_late_penalty_never_leaves_the_course(gradebooks, tmp_path):
    """Issue 48: written answers graded in formgrader and an extension granted after grading, then `lms export`
    before `python -m autograder grade`: the upload had the late students' written-answer points under the `zero`
    policy, and the extended student's old penalty. Now the export refuses, naming the command; after it, every
    number is the gradebook's as it stands."""
    from autograder.results.extension import grant_extension
    from autograder.grading.engine import apply_late_policy
    gradebook = gradebooks["pending"]
    course = gradebook.parent
    (course / "nbgrader_config.py").write_text('c = get_config()\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    with Gradebook(f"sqlite:///{gradebook}") as gb:  # demo_broken handed in a day late
        gb.find_submission(A, "demo_broken").timestamp = DUE + late_by(1)
        gb.db.commit()
    apply_late_policy(course, [A])  # what the grading run did: late under `zero`, 0 points
    roster, upload = tmp_path / "grades.csv", tmp_path / "canvas-upload.csv"
    roster.write_text(CANVAS_EXPORT, encoding="utf-8", newline="")
    args = ("canvas", A, "--roster", str(roster), "-o", str(upload), "--match", "sis-login", "--allow-unmatched",
            "--column", f"{A}=1201", "--pending", "mark")
    code, said = export(tmp_path, gradebook, *args)
    assert code == 0 and canvas_reads(upload)["students"]["5004"]["Masking (1201)"] == "0", said

    grade_written_answer(gradebook)  # formgrader: demo_broken's written answer, 1 point
    grant_extension(gradebook, A, "demo_partial", days=3)  # demo_partial: on time now
    code, said = export(tmp_path, gradebook, *args)
    assert code != 0 and not upload.exists(), said
    assert "Nothing written: the gradebook's late penalties are not yet those of the grades as they stand" in said
    assert "demo_broken / 03_masking: late penalty 7 in the gradebook, 8 now" in said, said
    assert "demo_partial / 03_masking: late penalty 5 in the gradebook, 0 now" in said, said
    assert "Run `python -m autograder grade 03_masking`" in said, said

    apply_late_policy(course, [A])  # what `python -m autograder grade` does with nothing new handed in
    code, said = export(tmp_path, gradebook, *args)
    assert code == 0, said
    students = canvas_reads(upload)["students"]
    assert students["5004"]["Masking (1201)"] == "0", "late under `zero`: 0, written answer or not"
    assert students["5002"]["Masking (1201)"] == "5", "extended: on time, all 5 of her points"


def test_a_moodle_item_graded_on_a_scale_is_refused_naming_the_scale(gradebooks, tmp_path):
    """Issue 59: an item with a scale (its cells `Excellent`, `Good`) got 3.5 with exit 0. A column holding words
    takes no number: refused, naming the words and how to make the item take points."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "moodle-upload.csv"
    scaled = MOODLE_EXPORT.splitlines()
    scaled[1] = scaled[1].replace("demo_perfect;-;", "demo_perfect;Excellent;", 1)
    scaled[2] = scaled[2].replace("demo_partial;-;", "demo_partial;Good;", 1)
    roster.write_text("\n".join(scaled) + "\n", encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o", str(upload),
                        "--column", f"{A}={MOODLE_A}", "--item-max", f"{A}=9")
    assert code != 0 and not upload.exists(), said
    assert f"03_masking: the Moodle item {MOODLE_A} holds words (Excellent, Good), not points: it is graded on a " \
        "scale" in said, said
    assert "Grade type: Point" in said, said


def test_no_upload_with_no_student_matched(gradebooks, tmp_path):
    """Issue 59: `--allow-unmatched` with a `--match` rule that matches nobody wrote an upload of 0 students, exit 0.
    Refused, pointing at --match."""
    roster, upload = tmp_path / "grades.csv", tmp_path / "moodle-upload.csv"
    roster.write_text(MOODLE_EXPORT, encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o", str(upload),
                        "--column", f"{A}={MOODLE_A}", "--item-max", f"{A}=9", "--match", "idnumber",
                        "--allow-unmatched")
    assert code != 0 and not upload.exists(), said
    assert "Not written: --match idnumber (Moodle ID number) matches no student of the gradebook" in said, said
    assert "Choose the rule your students' nbgrader ids follow with --match: name, email, username, idnumber" in said


def test_an_item_out_of_nothing_is_refused_with_the_notebooks_points(gradebooks, tmp_path):
    """Issue 59: `--item-max 03_masking=0` was told to write the maximum "as a number"; it is one: the item must be
    out of more than 0, and the notebook's points say how many."""
    roster = tmp_path / "grades.csv"
    roster.write_text(MOODLE_EXPORT, encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--column", f"{A}={MOODLE_A}", "--item-max", f"{A}=0")
    assert code != 0, said
    assert "--item-max 03_masking=0: a grade item out of 0 takes no points; the item must be out of more than 0 " \
        "(03_masking is out of 9): --item-max 03_masking=9" in said, said
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--column", f"{A}={MOODLE_A}", "--item-max", f"{A}=nine")
    assert code != 0 and "write the grade item's Maximum grade as a number" in said, said
