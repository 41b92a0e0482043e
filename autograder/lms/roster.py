"""Who in the LMS is who in nbgrader: one rule, chosen by the instructor, turns an LMS row and an nbgrader student
into the same key; anyone without a partner on the other side, or sharing a key, is listed.

nbgrader's student id is whatever collecting made it: the Canvas user id (zip_collect from Canvas), the full name
(zip_collect from Moodle), or a login (the exchange); its student table may add a first and last name and an
email (`nbgrader db student add`). The rules compare those with the LMS's columns.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable

from nbgrader.api import Student


def name_key(text: str) -> str:
    """A full name as both sides write it: spaces collapsed, Moodle's zip's `_` for a space, accents kept, case
    folded."""
    text = unicodedata.normalize("NFC", text).replace("_", " ")
    return re.sub(r"\s+", " ", text).strip().casefold()


def sortable(text: str) -> str:
    """Canvas's `Last, First` (`Doe, Jr., Jane`: the last comma splits) as `First Last`."""
    last, comma, first = text.rpartition(",")
    return f"{first} {last}" if comma else text


def plain(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip().casefold()


@dataclass(frozen=True)
class Rule:
    """`lms` reads an LMS row's key; `ours` an nbgrader student's; `columns` are the roster columns `lms` reads, each
    a tuple of the names it may have (Moodle 4's `Last name` is Moodle 3's `Surname`)."""
    name: str
    says: str
    lms: Callable[[dict[str, str]], str]
    ours: Callable[[Student], str]
    columns: tuple[tuple[str, ...], ...] = ()


def lacking(rule: Rule, header: list[str], rows: list[dict[str, str]]) -> list[str]:
    """The columns `rule` reads that the roster lacks, or has with every cell blank."""
    found = []
    for names in rule.columns:
        present = [n for n in names if n in header]
        if not any(any(row.get(n, "").strip() for row in rows) for n in present):
            found.append(" or ".join(repr(n) for n in names) + (" (every cell blank)" if present else ""))
    return found


def refuse_unreadable_rule(rule: Rule, rules: dict[str, Rule], roster: str, header: list[str],
                           rows: list[dict[str, str]]) -> None:
    """Stop, saying what the roster has and which --match would read it, when `rule` cannot read the roster."""
    missing = lacking(rule, header, rows)
    if not missing:
        return
    usable = [name for name, other in rules.items() if not lacking(other, header, rows)]
    raise SystemExit(f"--match {rule.name} reads the column {', '.join(missing)}, which {roster} lacks; its columns "
                     f"are: {', '.join(header)}. "
                     + (f"Use --match {' or --match '.join(usable)}, which this roster has, or export"
                        if usable else "Export") + " the roster again from the LMS with that column.")


@dataclass
class Matching:
    pairs: dict[str, int] = field(default_factory=dict)  # nbgrader student id -> LMS row index
    lms_only: list[int] = field(default_factory=list)  # LMS rows with no nbgrader student
    ours_only: list[str] = field(default_factory=list)  # nbgrader students in no LMS row
    ambiguous: list[str] = field(default_factory=list)  # keys on two rows or two students: what is wrong, said

    @property
    def complete(self) -> bool:
        return not (self.lms_only or self.ours_only or self.ambiguous)


def match(rule: Rule, rows: list[dict[str, str]], students: list[Student]) -> Matching:
    found = Matching()
    by_key: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        key = rule.lms(row)
        if key:
            by_key.setdefault(key, []).append(index)
        else:
            found.lms_only.append(index)
    ours: dict[str, list[str]] = {}
    for student in students:
        ours.setdefault(rule.ours(student), []).append(student.id)
    reported: set[int] = set()
    for key, ids in ours.items():
        indices = by_key.get(key, []) if key else []
        if not indices:
            found.ours_only.extend(ids)
        elif len(ids) > 1 or len(indices) > 1:
            found.ambiguous.append(f"{rule.says} {key!r} is shared by {len(indices)} roster row(s) and nbgrader "
                                   f"student(s) {', '.join(ids)}: the rule needs one row for one student")
            reported.update(indices)
        else:
            found.pairs[ids[0]] = indices[0]
    paired = set(found.pairs.values()) | reported
    found.lms_only = sorted(found.lms_only + [i for indices in by_key.values() for i in indices if i not in paired])
    return found


def report(matching: Matching, rows: list[dict[str, str]], shown: Callable[[dict[str, str]], str],
           rule: Rule) -> list[str]:
    """Who was not matched, a line per side, and the keys that name more than one."""
    lines = []
    if matching.ours_only:
        lines.append(f"In the gradebook but not in the roster (by {rule.says}): {', '.join(matching.ours_only)}")
    if matching.lms_only:
        lines.append(f"In the roster but not in the gradebook (by {rule.says}): "
                     + "; ".join(shown(rows[i]) for i in matching.lms_only))
    return lines + matching.ambiguous


def advice(rule: Rule, choices: str) -> str:
    return (f"Students are matched by --match {rule.name} ({rule.says}); the rules are {choices}. Choose the rule "
            "your students' nbgrader ids follow, add a missing student's name or email with `nbgrader db student add "
            "ID --first-name ... --last-name ... --email ...`, or pass --allow-unmatched to leave the unmatched out "
            "of the upload (the LMS keeps their grades as they are).")


def student_name(student: Student) -> str:
    """The full name nbgrader knows: first and last name when the student table has them, else the id (a Moodle
    zip_collect id is the full name)."""
    if student.first_name or student.last_name:
        return name_key(f"{student.first_name or ''} {student.last_name or ''}")
    return name_key(student.id)
