"""Moodle's CSV grade import (Grades > Import > CSV file), written from the instructor's own Moodle grade export.

Moodle's rules (Moodle docs, "Grade import" and "Grade export"; grade/import/csv in Moodle's source): the import
reads UTF-8 text with the separator chosen on its form (comma, semicolon, tab or colon); one column identifies the
user, mapped on the import screen to email address, username or ID number ("Identify user by"); each other column
is mapped to a grade item or to its feedback, or ignored: a column `X (Real)` is mapped to the item shown as `X`, and
`X (Feedback)` to its feedback, by themselves; a blank cell or `-` is no grade (it erases one the gradebook holds);
a number is read with the decimal point or the site language's decimal mark; a grade above the item's maximum is
refused; a column mapped to "new grade item" becomes an item out of 100; with a `Last downloaded from this course`
column, a grade changed in Moodle since that time stops the
import rather than being overwritten. The export names each grade item's column `Type: Name (Real)` (a manual item: `Name (Real)`; `(Percentage)`
or `(Letter)` for the other display types it offers; with feedback, `Type: Name (Feedback)`), a category's total
`Category total (Real)` and the course's `Course total (Real)` (grade/export/lib.php, `format_column_name`), and each
user field by its label: Moodle 4 writes `Last name`, Moodle 3 `Surname`. It does not say an item's maximum grade:
the instructor says it, once (`--item-max`, kept with the column: autograder.lms.columns).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import re

from autograder.lms.columns import NEW, Question, Target, key, titled_as, titles
from autograder.lms.csv_files import Table, read_number, read_table
from autograder.lms.marks import Mark, upload_cell
from autograder.lms.roster import Rule, plain, student_name, name_key

IDENTITIES = {"email": "Email address", "username": "Username", "idnumber": "ID number"}
FIRST_NAME, LAST_NAMES = "First name", ("Last name", "Surname")  # Moodle 4's label, Moodle 3's
GRADE = re.compile(r"^(?P<shown>.+) \((?P<display>Real|Percentage|Letter)\)$")  # `Assignment: 03 Masking (Real)`
POINTS = "Real"  # the display type that is points: the only one Moodle's import reads as a grade
COURSE_TOTAL = "Course total"
NEW_ITEM_MAXIMUM = 100.0  # what Moodle's import makes a "new grade item" out of (grade_item's default grademax)


def is_total(shown: str) -> bool:
    """A course's or category's total (`Course total`, `Notebooks total`, Moodle 3.0's `Category total`): Moodle
    works it out from the items, and takes no grade for it."""
    return shown == COURSE_TOTAL or shown.endswith(" total")


def item_name(shown: str) -> str:
    """A grade item's name without its activity type: `Assignment: 03 Masking` gives `03 Masking`."""
    return shown.split(": ", 1)[-1]
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

    def graded(self) -> dict[str, re.Match]:
        """Every grade column of the export (items and totals, in each display type), with its name and type."""
        return {c: GRADE.match(c) for c in self.table.header if GRADE.match(c)}

    def items(self) -> list[str]:
        """The columns a grade may go to: each grade item's, in points (`(Real)`), never a total."""
        return [c for c, m in self.graded().items() if m["display"] == POINTS and not is_total(m["shown"])]

    def target(self, assignment: str, given: str | None, kept: dict, maximum: float | None) -> Target | Question:
        """Where `assignment`'s grades go: the grade item `given` with --column (its header, with or without its
        type and `(Real)`), else the one the course keeps; else a Question showing the items named as the notebook.
        `maximum`: the item's maximum given with --item-max now (else the one kept, else unknown)."""
        items = self.items()
        if given is not None:
            if given.strip().casefold() == NEW:
                raise SystemExit(f"Not written: Moodle's import makes a new grade item out of "
                                 f"{NEW_ITEM_MAXIMUM:g}, whatever the notebook's points: add the grade item {assignment} "
                                 "in Moodle first (Setup > Gradebook setup > Add grade item, Maximum grade: the "
                                 "notebook's points), export the grades again, and name it with --column.")
            return self._item(assignment, given, maximum, kept, "confirmed now")
        if kept.get("column"):
            if kept["column"] in items:
                return self._target(kept["column"], maximum, kept, "kept")
            raise SystemExit(f"Not written: the grade item {kept['column']!r}, the column the course keeps for "
                             f"{assignment}, is not in this export (renamed or deleted in Moodle, not ticked on the "
                             "export form, or exported as a percentage?). Its grade items are: "
                             + ("; ".join(items) or "none") + f". Name {assignment}'s with --column.")
        candidates = [c for c in items if titled_as(item_name(self.graded()[c]["shown"]), assignment)
                      or titled_as(self.graded()[c]["shown"], assignment)]
        need_max = maximum is None
        if len(candidates) == 1:
            return Question(f"{assignment}: {candidates[0]} is named as the notebook",
                            f'--column {assignment}="{candidates[0]}"'
                            + (f" --item-max {assignment}=<its Maximum grade in Moodle>" if need_max else ""))
        if candidates:
            return Question(f"{assignment}: {len(candidates)} grade items are named as the notebook, "
                            + "; ".join(candidates) + ": say which with --column and its whole header", "")
        return Question(f"{assignment}: no grade item is named as the notebook ({' or '.join(titles(assignment))}): "
                        f"name its grade item with --column {assignment}=\"HEADER\", its header in the export (Moodle "
                        "makes a new item out of 100: add it in Moodle first)", "")

    def _item(self, assignment: str, given: str, maximum: float | None, kept: dict, how: str) -> Target:
        """The one grade column `given` names, refused when it is a total or not in points."""
        graded = self.graded()
        text = given.strip().removesuffix(" (Feedback)")
        name = GRADE.match(text)["shown"] if GRADE.match(text) else text
        hits = [c for c, m in graded.items() if c == text or plain(m["shown"]) == plain(name)
                or key(item_name(m["shown"])) == key(name)]
        items = self.items()
        points = [c for c in hits if c in items]
        if len(points) == 1:
            return self._target(points[0], maximum, kept, how)
        totals = [c for c in hits if is_total(graded[c]["shown"])]
        if totals:
            raise SystemExit(f"Not written: {totals[0]} (from --column {assignment}={given}) is a total, which Moodle "
                             "works out from its grade items and takes no grade for. Name the notebook's grade item "
                             "itself; the export's grade items are: " + ("; ".join(items) or "none") + ".")
        if hits and not points:
            raise SystemExit(f"Not written: this export gives {given} as {', '.join(hits)}, which Moodle's import "
                             "does not read as points. Export the grades again with the grade export display type "
                             "Real (Export format options), and run this again.")
        raise SystemExit(f"The Moodle export has {'no' if not points else 'more than one'} grade item {given!r} "
                         f"(from --column {assignment}={given}); its grade items are: {'; '.join(items) or 'none'}. "
                         "Name one of them by its whole header.")

    def _target(self, column: str, maximum: float | None, kept: dict, how: str) -> Target:
        """The grade item `column`, out of `maximum` (given now), else of the maximum kept for that column."""
        if maximum is None and kept.get("column") == column:
            maximum = kept.get("maximum")
        return Target(column, column, {"column": column, **({"maximum": maximum} if maximum is not None else {})},
                      maximum, how=how)

    def not_in_points(self) -> list[str]:
        """The export's grade items given only as a percentage or a letter (no `(Real)` column beside them)."""
        graded = self.graded()
        real = {m["shown"] for m in graded.values() if m["display"] == POINTS}
        return [c for c, m in graded.items() if m["shown"] not in real and not is_total(m["shown"])]

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


def upload(roster: MoodleRoster, identity: str, targets: dict[str, Target], pairs: dict[str, int],
           marks: dict[tuple[str, str], Mark], missing: str, pending: str,
           feedback: bool) -> tuple[Table, list[str]]:
    """The identity column, then per assignment its grade item's column (and its feedback column, named as Moodle's
    export names it), the export's `Last downloaded from this course` when it has one, and a row per matched student,
    in the export's separator and decimal mark; with it a line for each grade Moodle holds that a blank would have
    erased, kept."""
    label = IDENTITIES[identity]
    guard = [TIME_EXPORTED] if TIME_EXPORTED in roster.table.header else []
    header = [label]
    for target in targets.values():
        header += [target.header] + ([feedback_column(target.header)] if feedback else [])
    rows, kept = [], []
    for student, index in sorted(pairs.items(), key=lambda pair: pair[1]):
        row = roster.students[index]
        cells = [row[label]]
        for assignment, target in targets.items():
            mark = marks[student, assignment]
            cell, note = upload_cell(mark, missing, pending, roster.table.decimal, roster.held(index, target.header))
            cells.append(cell)
            if feedback:
                untouched = note or (mark.pending and pending == "blank")
                cells.append(roster.held(index, feedback_column(target.header)) if untouched else mark.note())
            kept += [note] if note else []
        rows.append(cells + [row[g] for g in guard])
    return Table(header + guard, rows, roster.table.separator, bom=False, decimal=roster.table.decimal), kept


def scale_problem(roster: MoodleRoster, assignment: str, target: Target) -> str:
    """Why `target`'s grade item takes no points ("" when it does): a scale's item (its grade type Scale) is exported
    with the scale's words (`Excellent`, `Good`) in its `(Real)` column, and Moodle's import maps a number to no word
    of it."""
    if target.new:
        return ""
    words = sorted({cell for index in range(len(roster.students))
                    if (cell := roster.held(index, target.header)) and read_number(cell) is None})
    if not words:
        return ""
    return (f"{assignment}: the Moodle item {target.header} holds words ({', '.join(words[:4])}), not points: it is "
            "graded on a scale, and a scale takes no number. Give it the grade type Point in Moodle (Setup > "
            f"Gradebook setup > Edit > Grade type: Point, Maximum grade: the notebook's points), export the grades "
            "again, and run this again; or name another item with --column.")


def maximum_unknown(assignment: str, target: Target) -> str:
    """Why a grade item's maximum is needed ("" when it is known)."""
    if target.maximum is not None:
        return ""
    return (f"{assignment}: Moodle's export does not say the maximum grade of {target.header}: give it once, "
            f"--item-max {assignment}=<its Maximum grade in Moodle> (Setup > Gradebook setup); the course keeps it "
            "with the column.")


def fix_maximum(assignment: str, top: float) -> str:
    return (f"set the item's Maximum grade to {top:g} in Moodle (Setup > Gradebook setup > Edit), then run this "
            f"again with --item-max {assignment}={top:g}.")
