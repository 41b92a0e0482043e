"""`python -m autograder lms export canvas|moodle` on roster files in each LMS's own export layout, the upload read
back as the LMS reads it (each rule says where the LMS defines it), on a class written with nbgrader's Gradebook API
(tests/lms_class.py: the demo class's students; no notebook is run)."""
from __future__ import annotations

import contextlib
import csv
import io
import re
from pathlib import Path

import pytest

from autograder.cli import main
from nbgrader.api import Gradebook

from tests.lms_class import A, B, EXPECTED, STUDENTS, class_gradebook, grade_written_answer

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
    "Quiz: Reading (Real);Course total (Real);Last downloaded from this course\n"
    "Ada;Lovelace;S5001;Uni;CS;ada@uni.example;demo_perfect;-;5,00;5,00;1764121200\n"
    'Jane;"Doe, Jr.";S5002;Uni;CS;jane@uni.example;demo_partial;-;4,00;4,00;1764121200\n'
    "Zoë;Ångström;;Uni;;zoe@uni.example;demo_empty;-;-;-;1764121200\n"
    "Eric;Roe;S5004;Uni;CS;eric@uni.example;demo_broken;-;3,00;3,00;1764121200\n"
    "Grace;Hopper;S5005;Uni;CS;grace@uni.example;demo_invalid;-;-;-;1764121200\n")

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
def gradebooks(tmp_path_factory) -> dict[str, Path]:
    """The class as graded (demo_broken's written answer not graded yet), and with it graded."""
    return {"pending": class_gradebook(tmp_path_factory, "pending.db"),
            "graded": grade_written_answer(class_gradebook(tmp_path_factory, "graded.db"))}


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
    students = {r[1]: dict(zip(header, r)) for r in rows[1:] if r[0].strip() != "Points Possible"}
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
                        "--match", "sis-login", "--column", f"{A}=1201", "--allow-unmatched")
    assert code == 0, said
    read = canvas_reads(upload)
    assert read["identity"] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert read["assignments"] == ["Masking (1201)", "Attention Block (1202)"], "only the assignments named, "\
        "04_attention_block in the assignment whose title names it: no total, no other column"
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
                        "--match", "name", "--allow-unmatched", "--missing", "zero")
    assert code == 0, said
    students = canvas_reads(upload)["students"]
    assert set(students) == {"5001", "5002", "5003", "5004", "5005"}
    assert students["5002"][A] == "3" and students["5003"][A] == "0"
    assert canvas_reads(upload)["points"][A] == "9", "a new column takes its points from the Points Possible row"


def test_pending_written_answers_are_refused_or_left_blank_keeping_a_score_canvas_holds(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(CANVAS_EXPORT.replace("Section B,,,3.00", "Section B,6.00,,3.00"), encoding="utf-8", newline="")
    upload = tmp_path / "upload.csv"
    args = ("canvas", A, "--roster", str(roster), "-o", str(upload), "--match", "sis-login", "--allow-unmatched")
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
                        "--feedback", "--identity", "email")
    assert code == 0, said
    read = moodle_reads(upload, ";", "Email address")
    assert read["header"] == ["Email address", "Assignment: 03 Masking (Real)", "Assignment: 03 Masking (Feedback)",
                              B, f"{B} (Feedback)", "Last downloaded from this course"]
    by_mail = {STUDENTS[s][2]: s for s in STUDENTS}
    for (student, assignment), total in EXPECTED.items():
        row = read["users"][STUDENTS[student][2]]
        column = "Assignment: 03 Masking (Real)" if assignment == A else B
        assert float(row[column]) == total + (1 if student == "demo_broken" and assignment == A else 0)
    assert read["users"]["jane@uni.example"]["Assignment: 03 Masking (Feedback)"] == "3/9 (late: -2)"
    assert read["users"]["jane@uni.example"]["Last downloaded from this course"] == "1764121200"
    assert read["users"]["zoe@uni.example"][B] == "", "a missing hand-in is blank"
    assert set(read["users"]) == set(by_mail)


def test_moodle_refuses_scores_above_the_items_maximum(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(MOODLE_EXPORT, encoding="utf-8")
    code, said = export(tmp_path, gradebooks["graded"], "moodle", A, "--roster", str(roster), "-o",
                        str(tmp_path / "u.csv"), "--item-max", f"{A}=5")
    assert code != 0
    assert "demo_perfect has 9, demo_broken has 8, above the Moodle item's maximum 5" in said
    assert "set the item's Maximum grade to 9 in Moodle" in said


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
    args = ("canvas", A, "--roster", str(roster), "-o", str(upload), "--match", "sis-login", "--allow-unmatched")
    code, said = export(tmp_path, gradebooks["graded"], *args)
    assert code != 0 and "out of 9 points here, but Canvas's Masking (1201) is out of 10,00" in said
    assert not upload.exists() and f"Removed the earlier upload {upload}" in said
    gradebook = class_gradebook(tmp_path_factory, "half-point.db")
    with Gradebook(f"sqlite:///{grade_written_answer(gradebook)}") as gb:
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
                        "--feedback", "--pending", "blank", "--allow-unmatched")
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
                            "--column", f"{A}={given}", "--allow-unmatched")
        assert code == 0 and "03_masking -> Assignment: 03 Masking (Real)" in said, (given, said)


def test_canvas_finds_the_assignment_named_like_the_notebook_or_asks(gradebooks, tmp_path):
    roster = tmp_path / "grades.csv"
    roster.write_text(CANVAS_EXPORT, encoding="utf-8", newline="")
    args = (A, "--roster", str(roster), "-o", str(tmp_path / "u.csv"), "--match", "sis-login", "--allow-unmatched")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", *args)
    assert code == 0 and "03_masking -> Masking (1201)" in said, said
    roster.write_text(CANVAS_EXPORT.replace("Reading Quiz (1203)", "Masking Quiz (1204)"), encoding="utf-8",
                      newline="")
    code, said = export(tmp_path, gradebooks["graded"], "canvas", *args)
    assert code != 0 and "2 Canvas columns are named like 03_masking: Masking (1201); Masking Quiz (1204)" in said
    assert "--column 03_masking=1201 or --column 03_masking=1204" in said
