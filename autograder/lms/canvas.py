"""Canvas's gradebook import, written from the instructor's own Canvas gradebook export.

Canvas's rules (Canvas guides, "How do I import grades in the Gradebook?" and "How do I export grades in the
Gradebook?"; lib/gradebook_exporter.rb and lib/gradebook_importer.rb in Canvas's source): the columns up to and
including `Section` identify the student (`Student`, or `LastName` and `FirstName` where the course shows names
split, then `ID`, `SIS User ID`, `SIS Login ID`, and `Integration ID` and `Root Account` where the account has them),
written in English whatever the course's language, and are copied from the export as they are; custom columns
follow; every column named `Name (id)` is an assignment, found by its id; any other name is an assignment found by
its whole title, or a new one; the row whose first cell holds `Points Possible` gives each column's points (a new
column takes them from it); a `Manual Posting` (or `Muted`) row says nothing of a student; the totals (`Current
Score`, ...) are read-only and never imported; a blank cell changes nothing. Which assignment is a notebook's is the
instructor's to say, once (autograder.lms.columns).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.lms.columns import NEW, Question, Target, titled_as, titles
from autograder.lms.csv_files import Table, number, read_number, read_table
from autograder.lms.marks import Mark, upload_cell
from autograder.lms.roster import Rule, name_key, plain, sortable, student_name

POINTS_POSSIBLE = "Points Possible"
TEST_STUDENT = "Student, Test"  # the Test Student Canvas adds to every course (student view)
COLUMN = re.compile(r"^(?P<name>.*) \((?P<id>\d+)\)$")
# Canvas's own names for the identity columns, whatever the course's language (gradebook_exporter.rb)
IDENTITY = ("Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Root Account",
            "Section")
# Columns Canvas's import never reads as an assignment: a name holding one of these (gradebook_importer.rb)
NOT_IMPORTED = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points", "Final Grade",
                "Override Score", "Override Grade", "Override Status")
POSTING = re.compile(r"^\s*(Muted|Manual Posting.*)?\s*$", re.I)  # the row Canvas adds for manually posted grades


def full_name(row: dict[str, str]) -> str:
    """The student's name as the export writes it: `Student` (`Last, First`), or `FirstName` and `LastName`."""
    if "Student" in row:
        return name_key(sortable(row["Student"]))
    return name_key(f"{row.get('FirstName', '')} {row.get('LastName', '')}")

RULES = {
    "canvas-id": Rule("canvas-id", "Canvas user id (the ID column)", lambda row: row["ID"].strip(),
                      lambda s: s.id.strip(), (("ID",),)),
    "sis-login": Rule("sis-login", "SIS Login ID", lambda row: plain(row["SIS Login ID"]), lambda s: plain(s.id),
                      (("SIS Login ID",),)),
    "sis-id": Rule("sis-id", "SIS User ID", lambda row: plain(row["SIS User ID"]), lambda s: plain(s.id),
                   (("SIS User ID",),)),
    "email": Rule("email", "email (nbgrader's student table) as the SIS Login ID",
                  lambda row: plain(row["SIS Login ID"]), lambda s: plain(s.email or ""), (("SIS Login ID",),)),
    "name": Rule("name", "full name", full_name, student_name, (("Student", "LastName"),)),
}


@dataclass
class CanvasRoster:
    table: Table
    identity: list[str]  # the header up to and including Section
    points: list[str] | None  # the Points Possible row as exported
    students: list[dict[str, str]]
    rows: list[list[str]]  # the students' rows as exported, in the same order
    skipped: list[str]  # rows that are no student (the test student, posting-policy rows)

    def assignments(self) -> dict[str, re.Match]:
        """The export's assignment columns (`Masking (1201)`), each with its title and id."""
        return {c: COLUMN.match(c) for c in self.table.header[len(self.identity):] if COLUMN.match(c)}

    def target(self, assignment: str, given: str | None, kept: dict) -> Target | Question:
        """Where `assignment`'s grades go: the column `given` with --column (an id, a whole header, or `new`), else
        the one the course keeps; else a Question showing the columns titled as the notebook."""
        found = self.assignments()
        by_id = {m["id"]: c for c, m in found.items()}
        if given is not None:
            if given.strip().casefold() == NEW:
                return self._new(assignment, "confirmed now")
            wanted = COLUMN.match(given.strip())["id"] if COLUMN.match(given.strip()) else given.strip()
            if wanted not in by_id:
                raise SystemExit(f"The Canvas export has no assignment with id {wanted} (from --column "
                                 f"{assignment}={given}); its assignments are: " + ("; ".join(found) or "none")
                                 + ". Name one of them by its number in brackets, or write --column "
                                 f"{assignment}=new for a new assignment.")
            return self._existing(by_id[wanted], "confirmed now")
        if kept.get("id"):
            if kept["id"] in by_id:
                return self._existing(by_id[kept["id"]], "kept")
            raise SystemExit(f"Not written: Canvas's assignment {kept['id']} ({kept.get('title', '')}), the column the "
                             f"course keeps for {assignment}, is not in this export (deleted in Canvas, or the export "
                             "of another course?). Its assignments are: " + ("; ".join(found) or "none")
                             + f". Name {assignment}'s with --column {assignment}=ID, or {assignment}=new.")
        if kept.get(NEW):
            made = [c for c, m in found.items() if m["name"] == kept[NEW]]
            if len(made) == 1:
                return self._existing(made[0], "the assignment an earlier upload made for it")
            if not made:
                return self._new(assignment, "kept: not in Canvas yet")
            raise SystemExit(f"Not written: {len(made)} Canvas assignments are titled {kept[NEW]!r}, the new column "
                             f"an earlier upload made for {assignment}: " + "; ".join(made) + ". Say which with "
                             + " or ".join(f"--column {assignment}={found[c]['id']}" for c in made) + ".")
        candidates = [c for c, m in found.items() if titled_as(m["name"], assignment)]
        if len(candidates) == 1:
            return Question(f"{assignment}: {candidates[0]} is titled as the notebook",
                            f"--column {assignment}={found[candidates[0]]['id']}")
        if candidates:
            return Question(f"{assignment}: {len(candidates)} assignments are titled as the notebook, "
                            + "; ".join(candidates) + ": say which with "
                            + " or ".join(f"--column {assignment}={found[c]['id']}" for c in candidates), "")
        return Question(f"{assignment}: no assignment is titled as the notebook ({' or '.join(titles(assignment))}): "
                        f"name its assignment with --column {assignment}=ID, or make a new one with --column "
                        f"{assignment}=new", "")

    def _existing(self, column: str, how: str) -> Target:
        held = [name for name in NOT_IMPORTED if name in column]
        if held:
            raise SystemExit(f"Not written: Canvas's import skips a column whose name holds {held[0]!r}, as it does "
                             f"its totals, so {column} would take no grade: rename that assignment in Canvas, "
                             "export the gradebook again, and run this again.")
        found = COLUMN.match(column)
        return Target(column, column, {"id": found["id"], "title": found["name"]},
                      read_number(self.points_of(column)), how=how)

    def _new(self, assignment: str, how: str) -> Target:
        """A new column named as the notebook; Canvas's import would put it in an assignment of that exact title."""
        same = [c for c, m in self.assignments().items() if m["name"] == assignment]
        if same:
            raise SystemExit(f"Not written: Canvas has an assignment titled {assignment} already ({same[0]}), and its "
                             f"import puts a column {assignment} in it. If it is the notebook's, run again with "
                             f"--column {assignment}={COLUMN.match(same[0])['id']}.")
        return Target(assignment, f"a new Canvas assignment {assignment!r}", {NEW: assignment}, None, new=True,
                      how=how)

    def points_of(self, column: str) -> str:
        if self.points is None:
            return ""
        return self.points[self.table.header.index(column)].strip()

    def held(self, index: int, column: str | None) -> str:
        """The score Canvas holds in `column` for the student on roster row `index`, as exported."""
        return self.rows[index][self.table.header.index(column)].strip() if column else ""


def read_roster(path: Path) -> CanvasRoster:
    table = read_table(path)
    header = table.header
    names = ["Student"] if header[:1] == ["Student"] else ["LastName", "FirstName"]
    if header[:len(names) + 1] != names + ["ID"] or "Section" not in header:
        english = ", ".join(IDENTITY[:1] + IDENTITY[3:6] + IDENTITY[-1:])
        changed = any(name in header for name in IDENTITY) or any(COLUMN.match(c) for c in header)
        raise SystemExit(f"{path} is not a Canvas gradebook export as Canvas writes it: its first columns are "
                         f"{', '.join(header[:6])}, where Canvas writes {english}"
                         + (" in English whatever the course's language, and its import reads only those names. It "
                            "was changed after the download (translated, or saved from a spreadsheet)?"
                            if changed else ".")
                         + " Download it again in Canvas from Grades > Export > Export Entire Gradebook and give it "
                         "unopened.")
    identity = header[:header.index("Section") + 1]
    points, students, rows, skipped = None, [], [], []
    for row in table.rows:
        record = dict(zip(header, row))
        first = row[0].strip()
        if POINTS_POSSIBLE in first:
            points = row
        elif full_name(record) == name_key(sortable(TEST_STUDENT)):
            skipped.append(f"{TEST_STUDENT} (Canvas's test student)")
        elif not row[len(names)].strip() and all(POSTING.match(cell) for cell in row):
            continue  # the Manual Posting row: no student
        elif not row[len(names)].strip():
            skipped.append("a row with no Canvas ID (" + ", ".join(c for c in row if c.strip())[:60] + ")")
        else:
            students.append(record)
            rows.append(row)
    return CanvasRoster(table, identity, points, students, rows, skipped)


def shown(row: dict[str, str]) -> str:
    name = row["Student"] if "Student" in row else f"{row.get('LastName', '')}, {row.get('FirstName', '')}"
    return f"{name} (ID {row['ID']}, section {row['Section'] or 'none'})"


def upload(roster: CanvasRoster, targets: dict[str, Target], pairs: dict[str, int],
           marks: dict[tuple[str, str], Mark], missing: str, pending: str) -> tuple[Table, list[str]]:
    """The upload, in the export's separator and decimal mark: the identity columns and one column per assignment
    (its target: the export's own, or a new one named for the assignment), the Points Possible row, and a row per
    matched student; with it a line for each score Canvas holds that a blank would have replaced, kept."""
    decimal = roster.table.decimal
    header = roster.identity + [t.header for t in targets.values()]
    points_row = (roster.points[:len(roster.identity)] if roster.points
                  else [f"    {POINTS_POSSIBLE}"] + [""] * (len(roster.identity) - 1))
    any_mark = {a: next(m for (s, x), m in marks.items() if x == a) for a in targets}
    points_row = points_row + [number(any_mark[a].max_score, decimal) if t.new else roster.points_of(t.header)
                               for a, t in targets.items()]
    rows, kept = [points_row], []
    for student, index in sorted(pairs.items(), key=lambda pair: pair[1]):
        cells = []
        for assignment, target in targets.items():
            held = "" if target.new else roster.held(index, target.header)
            cell, note = upload_cell(marks[student, assignment], missing, pending, decimal, held)
            cells.append(cell)
            kept += [note] if note else []
        rows.append(roster.rows[index][:len(roster.identity)] + cells)
    return Table(header, rows, roster.table.separator, roster.table.bom, decimal), kept


def points_problem(roster: CanvasRoster, assignment: str, target: Target) -> str:
    """Why Canvas's points for `target` cannot be read ("" when they can): a new column takes the notebook's."""
    if target.new or target.maximum is not None:
        return ""
    theirs = roster.points_of(target.header)
    if theirs:
        return (f"{assignment}: Canvas's {target.header} gives its points as {theirs!r}, not a number: export the "
                "gradebook again from Canvas (Grades > Export) without opening it in a spreadsheet.")
    return (f"{assignment}: Canvas's export gives no points for {target.header}, so a score could land on any scale: "
            f"give it the notebook's points in Canvas (Assignments > {COLUMN.match(target.header)['name']} > Edit), "
            "export the gradebook again, and run this again.")


def fix_points(target: Target, top: float) -> str:
    """What to change in Canvas when its points are not the notebook's."""
    return (f"set its points to {top:g} in Canvas (Assignments > {target.keep.get('title', target.header)} > Edit), "
            "export the gradebook again, and run this again.")
