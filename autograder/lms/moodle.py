"""Moodle's CSV grade import (Grades > Import > CSV file), written from the instructor's own Moodle grade export.

Moodle's rules (Moodle docs, "Grade import" and "Grade export"): the import reads UTF-8 text with the separator
chosen on its form (comma, semicolon, tab or colon); one column identifies the user, mapped on the import screen to
email address, username or ID number ("Identify user by"); each other column is mapped to a grade item or to its
feedback, or ignored; a blank cell leaves the grade as it is; a grade above the item's maximum is refused. The
export names each grade item's column `Type: Name (Real)` and each user field by its label.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.lms.csv_files import Table, number, read_table
from autograder.lms.marks import Mark
from autograder.lms.roster import Rule, name_key, plain, student_name

IDENTITIES = {"email": "Email address", "username": "Username", "idnumber": "ID number"}
NAMES = ("First name", "Last name")


def full_name(row: dict[str, str]) -> str:
    return name_key(f"{row.get('First name', '')} {row.get('Last name', '')}")


RULES = {
    "name": Rule("name", "full name (First name and Last name; Moodle's zip names folders so)", full_name,
                 student_name),
    "email": Rule("email", "email address (nbgrader's student table)", lambda row: plain(row["Email address"]),
                  lambda s: plain(s.email or "")),
    "username": Rule("username", "Moodle username", lambda row: plain(row["Username"]), lambda s: plain(s.id)),
    "idnumber": Rule("idnumber", "Moodle ID number", lambda row: plain(row["ID number"]), lambda s: plain(s.id)),
}


@dataclass
class MoodleRoster:
    table: Table
    students: list[dict[str, str]]

    def column(self, wanted: str, assignment: str) -> str | None:
        """The export's grade column for `assignment`: `wanted` is its whole header or the item's name; with none,
        the item named like the assignment."""
        items = [c for c in self.table.header if c.endswith(")") and ": " in c]
        names = {c: c.split(": ", 1)[1].rsplit(" (", 1)[0] for c in items}
        target = wanted or assignment
        hits = [c for c in items if plain(c) == plain(target) or name_key(names[c]) == name_key(target)]
        if wanted and not hits:
            raise SystemExit(f"The Moodle export has no grade item {wanted!r} (from --column {assignment}={wanted});"
                             f" its grade items are: {'; '.join(items) or 'none'}. Name one of them, or leave "
                             "--column out to make a new grade item on the import screen.")
        return hits[0] if len(hits) == 1 else None


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
    name = " ".join(row.get(n, "") for n in NAMES).strip()
    return f"{name or '(no name)'} ({row.get('Email address') or row.get('Username') or row.get('ID number', '')})"


def upload(roster: MoodleRoster, identity: str, columns: dict[str, str | None], pairs: dict[str, int],
           marks: dict[tuple[str, str], Mark], missing: str, pending: str, feedback: bool) -> Table:
    """The identity column, then per assignment its grade column (and its feedback column), a row per matched
    student, in the export's separator."""
    label = IDENTITIES[identity]
    header = [label]
    for assignment, column in columns.items():
        header.append(column or assignment)
        if feedback:
            header.append(f"Feedback: {column or assignment}")
    rows = []
    for student, index in sorted(pairs.items(), key=lambda pair: pair[1]):
        cells = [roster.students[index][label]]
        for assignment in columns:
            mark = marks[student, assignment]
            held = mark.pending and pending == "blank"
            cells.append("" if held else number(mark.value(missing)))
            if feedback:
                cells.append("" if held else mark.note())
        rows.append(cells)
    return Table(header, rows, roster.table.separator, bom=False)


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
