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

from autograder.lms.csv_files import Table, number, read_table
from autograder.lms.marks import Mark
from autograder.lms.roster import Rule, name_key, plain, sortable, student_name

POINTS_POSSIBLE = "Points Possible"
TEST_STUDENT = "Student, Test"  # the Test Student Canvas adds to every course (student view)
COLUMN = re.compile(r"^(?P<name>.*) \((?P<id>\d+)\)$")

RULES = {
    "canvas-id": Rule("canvas-id", "Canvas user id (the ID column)", lambda row: row["ID"].strip(),
                      lambda s: s.id.strip()),
    "sis-login": Rule("sis-login", "SIS Login ID", lambda row: plain(row["SIS Login ID"]), lambda s: plain(s.id)),
    "sis-id": Rule("sis-id", "SIS User ID", lambda row: plain(row["SIS User ID"]), lambda s: plain(s.id)),
    "email": Rule("email", "email (nbgrader's student table) as the SIS Login ID",
                  lambda row: plain(row["SIS Login ID"]), lambda s: plain(s.email or "")),
    "name": Rule("name", "full name", lambda row: name_key(sortable(row["Student"])), student_name),
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
        (`Masking (12345)`); with none, a column named like the assignment."""
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
        hits = [c for c in columns if COLUMN.match(c) and name_key(COLUMN.match(c)["name"]) == name_key(assignment)]
        return hits[0] if len(hits) == 1 else None

    def points_of(self, column: str) -> str:
        if self.points is None:
            return ""
        return self.points[self.table.header.index(column)].strip()


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
           marks: dict[tuple[str, str], Mark], missing: str, pending: str) -> Table:
    """The upload: the identity columns and one column per assignment (the export's own, or a new one named for the
    assignment), the Points Possible row, and a row per matched student."""
    header = roster.identity + [columns[a] or a for a in columns]
    points_row = (roster.points[:len(roster.identity)] if roster.points
                  else [f"    {POINTS_POSSIBLE}"] + [""] * (len(roster.identity) - 1))
    any_mark = {a: next(m for (s, x), m in marks.items() if x == a) for a in columns}
    points_row = points_row + [roster.points_of(columns[a]) if columns[a] and roster.points_of(columns[a])
                               else number(any_mark[a].max_score) for a in columns]
    rows = [points_row]
    for student, index in sorted(pairs.items(), key=lambda pair: pair[1]):
        cells = []
        for assignment in columns:
            mark = marks[student, assignment]
            cells.append("" if mark.pending and pending == "blank" else number(mark.value(missing)))
        rows.append(roster.rows[index][:len(roster.identity)] + cells)
    return Table(header, rows, roster.table.separator, roster.table.bom)


def points_problems(roster: CanvasRoster, columns: dict[str, str | None],
                    marks: dict[tuple[str, str], Mark]) -> list[str]:
    """Assignments whose Canvas points are not nbgrader's: the scores would land on the wrong scale."""
    problems = []
    for assignment, column in columns.items():
        top = next(m.max_score for (s, a), m in marks.items() if a == assignment)
        theirs = roster.points_of(column) if column else ""
        try:
            differs = theirs and abs(float(theirs) - top) > 1e-9
        except ValueError:
            differs = False
        if differs:
            problems.append(f"{assignment} is out of {top:g} points here, but Canvas's {column} is out of {theirs}: "
                            f"set its points to {top:g} in Canvas (Assignments > {COLUMN.match(column)['name']} > "
                            "Edit), export the gradebook again, and run this again.")
    return problems
