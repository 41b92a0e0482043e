"""Moodle's CSV grade import (Grades > Import > CSV file), written from the instructor's own Moodle grade export.

Moodle's rules (Moodle docs, "Grade import" and "Grade export"; grade/import/csv in Moodle's source): the import
reads UTF-8 text with the separator chosen on its form (comma, semicolon, tab or colon); one column identifies the
user, mapped on the import screen to email address, username or ID number ("Identify user by"); each other column
is mapped to a grade item or to its feedback, or ignored: a column `X (Real)` is mapped to the item shown as `X`, and
`X (Feedback)` to its feedback, by themselves; a blank cell or `-` is no grade (it erases one the gradebook holds);
a number is read with the decimal point or the site language's decimal mark; a grade above the item's maximum is
refused; with a `Last downloaded from this course` column, a grade changed in Moodle since that time stops the
import rather than being overwritten. The export names each grade item's column `Type: Name (Real)` (and, with
feedback, `Type: Name (Feedback)`) and each user field by its label: Moodle 4 writes `Last name`, Moodle 3
`Surname`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import re

from autograder.lms.csv_files import Table, read_table
from autograder.lms.marks import Mark, upload_cell
from autograder.lms.roster import Rule, only_named, plain, student_name, name_key

IDENTITIES = {"email": "Email address", "username": "Username", "idnumber": "ID number"}
FIRST_NAME, LAST_NAMES = "First name", ("Last name", "Surname")  # Moodle 4's label, Moodle 3's
GRADE = re.compile(r"^(?P<shown>.+) \(Real\)$")  # a grade item's column, `Assignment: 03 Masking (Real)`
COURSE_TOTAL = "Course total"
TIME_EXPORTED = "Last downloaded from this course"  # Moodle's guard against overwriting newer grades
NO_GRADE = "-"


def feedback_column(grade_column: str) -> str:
    """The feedback column Moodle's export writes, and its import maps to the item's feedback by itself."""
    found = GRADE.match(grade_column)
    return f"{found['shown'] if found else grade_column} (Feedback)"


def last_name(row: dict[str, str]) -> str:
    return next((row[label] for label in LAST_NAMES if label in row), "")


def full_name(row: dict[str, str]) -> str:
    return name_key(f"{row.get(FIRST_NAME, '')} {last_name(row)}")


RULES = {
    "name": Rule("name", "full name (First name and Last name; Moodle's zip names folders so)", full_name,
                 student_name, ((FIRST_NAME,), LAST_NAMES)),
    "email": Rule("email", "email address (nbgrader's student table)", lambda row: plain(row["Email address"]),
                  lambda s: plain(s.email or ""), (("Email address",),)),
    "username": Rule("username", "Moodle username", lambda row: plain(row["Username"]), lambda s: plain(s.id),
                     (("Username",),)),
    "idnumber": Rule("idnumber", "Moodle ID number", lambda row: plain(row["ID number"]), lambda s: plain(s.id),
                     (("ID number",),)),
}


@dataclass
class MoodleRoster:
    table: Table
    students: list[dict[str, str]]

    def column(self, wanted: str, assignment: str) -> str | None:
        """The export's grade column for `assignment`: `wanted` is its whole header or the item's name (a feedback
        column's header names its item too); with none, the one item whose name names the notebook, else None."""
        items = {c: GRADE.match(c)["shown"] for c in self.table.header
                 if GRADE.match(c) and not c.startswith(COURSE_TOTAL)}
        names = {c: shown.split(": ", 1)[-1] for c, shown in items.items()}
        if not wanted:
            return only_named(names, assignment, "Moodle", lambda column: f'"{column}"')
        target = GRADE.match(wanted)["shown"] if GRADE.match(wanted) else wanted.removesuffix(" (Feedback)")
        hits = [c for c in items if plain(items[c]) == plain(target) or name_key(names[c]) == name_key(target)]
        if len(hits) != 1:
            raise SystemExit(f"The Moodle export has {'no' if not hits else 'more than one'} grade item {wanted!r} "
                             f"(from --column {assignment}={wanted}); its grade items are: "
                             f"{'; '.join(items) or 'none'}. Name one of them by its whole header, or leave --column "
                             "out to make a new grade item on the import screen.")
        return hits[0]

    def held(self, index: int, column: str | None) -> str:
        """What Moodle holds in `column` for the student on roster row `index`, as exported; blank for no grade."""
        value = self.students[index].get(column, "").strip() if column else ""
        return "" if value == NO_GRADE else value


def read_roster(path: Path, identity: str) -> MoodleRoster:
    table = read_table(path)
    label = IDENTITIES[identity]
    if label not in table.header:
        raise SystemExit(f"{path} has no column {label!r} (--identity {identity}); its columns are "
                         f"{', '.join(table.header[:8])}. Export the grades again in Moodle (Grades > Export > "
                         f"Plain text file) with the user field {label} ticked, or choose another --identity.")
    students = [dict(zip(table.header, row)) for row in table.rows]
    return MoodleRoster(table, students)


def shown(row: dict[str, str]) -> str:
    name = f"{row.get(FIRST_NAME, '')} {last_name(row)}".strip()
    return f"{name or '(no name)'} ({row.get('Email address') or row.get('Username') or row.get('ID number', '')})"


def upload(roster: MoodleRoster, identity: str, columns: dict[str, str | None], pairs: dict[str, int],
           marks: dict[tuple[str, str], Mark], missing: str, pending: str,
           feedback: bool) -> tuple[Table, list[str]]:
    """The identity column, then per assignment its grade column (and its feedback column, named as Moodle's export
    names it), the export's `Last downloaded from this course` when it has one, and a row per matched student, in
    the export's separator and decimal mark; with it a line for each grade Moodle holds that a blank would have
    erased, kept."""
    label = IDENTITIES[identity]
    guard = [TIME_EXPORTED] if TIME_EXPORTED in roster.table.header else []
    header = [label]
    for assignment, column in columns.items():
        header += [column or assignment] + ([feedback_column(column or assignment)] if feedback else [])
    rows, kept = [], []
    for student, index in sorted(pairs.items(), key=lambda pair: pair[1]):
        row = roster.students[index]
        cells = [row[label]]
        for assignment, column in columns.items():
            mark = marks[student, assignment]
            cell, note = upload_cell(mark, missing, pending, roster.table.decimal, roster.held(index, column))
            cells.append(cell)
            if feedback:
                untouched = note or (mark.pending and pending == "blank")
                cells.append(roster.held(index, column and feedback_column(column)) if untouched else mark.note())
            kept += [note] if note else []
        rows.append(cells + [row[g] for g in guard])
    return Table(header + guard, rows, roster.table.separator, bom=False, decimal=roster.table.decimal), kept


def maximum_problems(columns: dict[str, str | None], maxima: dict[str, float],
                     marks: dict[tuple[str, str], Mark]) -> list[str]:
    """Scores Moodle would refuse: above the grade item's maximum (given with --item-max)."""
    problems = []
    for assignment, top in maxima.items():
        over = [m for (s, a), m in marks.items() if a == assignment and (m.value("zero") or 0) > top]
        if over:
            problems.append(f"{assignment}: {', '.join(f'{m.student} has {m.value():g}' for m in over)}, above the "
                            f"Moodle item's maximum {top:g} (--item-max); the assignment is out of "
                            f"{over[0].max_score:g} here: set the item's Maximum grade to {over[0].max_score:g} in "
                            "Moodle (Setup > Gradebook setup > Edit), then export and run this again.")
    return problems
