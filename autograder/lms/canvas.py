"""Canvas's gradebook import, written from the instructor's own Canvas gradebook export.

Canvas's rules (Canvas guides, "How do I import grades in the Gradebook?" and "How do I export grades in the
Gradebook?"): the columns up to and including `Section` identify the student and are copied from the export as they
are; every column after `Section` is an assignment, named `Name (id)`, and a column Canvas does not know becomes a
new assignment; the row whose first cell is `Points Possible` gives each column's points (a new column takes them
from it); a blank cell changes nothing; the read-only totals are left out here, so the upload holds only the
assignments named.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.lms.csv_files import Table, number, read_number, read_table
from autograder.lms.marks import Mark, upload_cell
from autograder.lms.roster import Rule, name_key, only_named, plain, sortable, student_name

POINTS_POSSIBLE = "Points Possible"
TEST_STUDENT = "Student, Test"  # the Test Student Canvas adds to every course (student view)
COLUMN = re.compile(r"^(?P<name>.*) \((?P<id>\d+)\)$")

RULES = {
    "canvas-id": Rule("canvas-id", "Canvas user id (the ID column)", lambda row: row["ID"].strip(),
                      lambda s: s.id.strip(), (("ID",),)),
    "sis-login": Rule("sis-login", "SIS Login ID", lambda row: plain(row["SIS Login ID"]), lambda s: plain(s.id),
                      (("SIS Login ID",),)),
    "sis-id": Rule("sis-id", "SIS User ID", lambda row: plain(row["SIS User ID"]), lambda s: plain(s.id),
                   (("SIS User ID",),)),
    "email": Rule("email", "email (nbgrader's student table) as the SIS Login ID",
                  lambda row: plain(row["SIS Login ID"]), lambda s: plain(s.email or ""), (("SIS Login ID",),)),
    "name": Rule("name", "full name", lambda row: name_key(sortable(row["Student"])), student_name,
                 (("Student",),)),
}


@dataclass
class CanvasRoster:
    table: Table
    identity: list[str]  # the header up to and including Section
    points: list[str] | None  # the Points Possible row as exported
    students: list[dict[str, str]]
    rows: list[list[str]]  # the students' rows as exported, in the same order
    skipped: list[str]  # rows that are no student (the test student, posting-policy rows)

    def column(self, wanted: str, assignment: str) -> str | None:
        """The export's column for `assignment`: `wanted` is an assignment id (`12345`) or a whole header
        (`Masking (12345)`); with none, the one assignment whose title names the notebook (`Masking (1201)` for
        `03_masking`), else None (a new assignment)."""
        columns = self.table.header[len(self.identity):]
        if wanted:
            wanted_id = COLUMN.match(wanted)["id"] if COLUMN.match(wanted) else wanted.strip()
            hits = [c for c in columns if COLUMN.match(c) and COLUMN.match(c)["id"] == wanted_id]
            if not hits:
                raise SystemExit(f"The Canvas export has no assignment with id {wanted_id} (from --column "
                                 f"{assignment}={wanted}); its assignments are: "
                                 + "; ".join(c for c in columns if COLUMN.match(c)) + ". Name one of them, by its "
                                 "number in brackets, or leave --column out to make a new assignment.")
            return hits[0]
        titles = {c: COLUMN.match(c)["name"] for c in columns if COLUMN.match(c)}
        return only_named(titles, assignment, "Canvas", lambda header: COLUMN.match(header)["id"])

    def points_of(self, column: str) -> str:
        if self.points is None:
            return ""
        return self.points[self.table.header.index(column)].strip()

    def held(self, index: int, column: str | None) -> str:
        """The score Canvas holds in `column` for the student on roster row `index`, as exported."""
        return self.rows[index][self.table.header.index(column)].strip() if column else ""


def read_roster(path: Path) -> CanvasRoster:
    table = read_table(path)
    if "Section" not in table.header or table.header[:2] != ["Student", "ID"]:
        raise SystemExit(f"{path} is not a Canvas gradebook export: its first columns are "
                         f"{', '.join(table.header[:6])}, where Canvas writes Student, ID, SIS User ID, SIS Login ID, "
                         "Section. Download it in Canvas from Grades > Export > Export Entire Gradebook.")
    identity = table.header[:table.header.index("Section") + 1]
    points, students, rows, skipped = None, [], [], []
    for row in table.rows:
        first = row[0].strip()
        if first == POINTS_POSSIBLE:
            points = row
        elif first == TEST_STUDENT:
            skipped.append(f"{TEST_STUDENT} (Canvas's test student)")
        elif not first and not row[1].strip():
            skipped.append("a row with no student (" + ", ".join(c for c in row if c.strip())[:60] + ")")
        else:
            students.append(dict(zip(table.header, row)))
            rows.append(row)
    return CanvasRoster(table, identity, points, students, rows, skipped)


def shown(row: dict[str, str]) -> str:
    return f"{row['Student']} (ID {row['ID']}, section {row['Section'] or 'none'})"


def upload(roster: CanvasRoster, columns: dict[str, str | None], pairs: dict[str, int],
           marks: dict[tuple[str, str], Mark], missing: str, pending: str) -> tuple[Table, list[str]]:
    """The upload, in the export's separator and decimal mark: the identity columns and one column per assignment
    (the export's own, or a new one named for the assignment), the Points Possible row, and a row per matched
    student; with it a line for each score Canvas holds that a blank would have replaced, kept."""
    decimal = roster.table.decimal
    header = roster.identity + [columns[a] or a for a in columns]
    points_row = (roster.points[:len(roster.identity)] if roster.points
                  else [f"    {POINTS_POSSIBLE}"] + [""] * (len(roster.identity) - 1))
    any_mark = {a: next(m for (s, x), m in marks.items() if x == a) for a in columns}
    points_row = points_row + [roster.points_of(columns[a]) if columns[a] and roster.points_of(columns[a])
                               else number(any_mark[a].max_score, decimal) for a in columns]
    rows, kept = [points_row], []
    for student, index in sorted(pairs.items(), key=lambda pair: pair[1]):
        cells = []
        for assignment, column in columns.items():
            cell, note = upload_cell(marks[student, assignment], missing, pending, decimal, roster.held(index, column))
            cells.append(cell)
            kept += [note] if note else []
        rows.append(roster.rows[index][:len(roster.identity)] + cells)
    return Table(header, rows, roster.table.separator, roster.table.bom, decimal), kept


def points_problems(roster: CanvasRoster, columns: dict[str, str | None],
                    marks: dict[tuple[str, str], Mark]) -> list[str]:
    """Assignments whose Canvas points are not nbgrader's: the scores would land on the wrong scale."""
    problems = []
    for assignment, column in columns.items():
        top = next(m.max_score for (s, a), m in marks.items() if a == assignment)
        theirs = roster.points_of(column) if column else ""
        points = read_number(theirs)
        if theirs and points is None:
            problems.append(f"{assignment}: Canvas's {column} gives its points as {theirs!r}, not a number: export "
                            "the gradebook again from Canvas (Grades > Export) without opening it in a spreadsheet.")
        elif points is not None and abs(points - top) > 1e-9:
            problems.append(f"{assignment} is out of {top:g} points here, but Canvas's {column} is out of {theirs}: "
                            f"set its points to {top:g} in Canvas (Assignments > {COLUMN.match(column)['name']} > "
                            "Edit), export the gradebook again, and run this again.")
    return problems
