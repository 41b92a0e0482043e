"""The instructor's policy for grading at submission, per assignment (the class hub's settings, `on_submit`).

    {"on_submit": {"default": {"grade": true, "before_due": "score"},
                   "07_shakespeare": {"grade": false}}}

Each assignment takes the "default" entry, then its own entry over it; a key left out keeps the value below.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

SHOWN = ("score", "points", "page")  # what a student sees of a graded hand-in before the due date
TO_LMS = ("each", "after_due", "never")


@dataclass(frozen=True)
class SubmitPolicy:
    grade: bool = field(default=True, metadata={"meaning": "a hand-in is graded as it arrives (false: only when the "
                                                            "instructor runs python -m autograder grade)"})
    before_due: str = field(default="score", metadata={
        "meaning": 'what a student sees before the due date: "score" (the total), "points" (each exercise\'s '
                   'points too) or "page" (the whole feedback page, hidden tests\' messages included); after the due '
                   "date, the page"})
    graded_hand_ins: int = field(default=0, metadata={
        "meaning": "how many hand-ins of one student are graded before the due date (0: all); later ones wait for "
                   "the due date"})
    cooldown_minutes: float = field(default=0, metadata={
        "meaning": "the least time between two graded hand-ins of one student (a hand-in sooner waits, saying until "
                   "when)"})
    to_lms: str = field(default="after_due", metadata={
        "meaning": 'when a score goes to the LMS (with the LTI login): "each" graded hand-in, once "after_due", or '
                   '"never" (the instructor runs lms push)'})

    def __post_init__(self):
        if self.before_due not in SHOWN:
            raise ValueError(f"on_submit before_due is {self.before_due!r}: it is one of {', '.join(SHOWN)}")
        if self.to_lms not in TO_LMS:
            raise ValueError(f"on_submit to_lms is {self.to_lms!r}: it is one of {', '.join(TO_LMS)}")
        if self.graded_hand_ins < 0 or self.cooldown_minutes < 0:
            raise ValueError("on_submit graded_hand_ins and cooldown_minutes are 0 or more")


def policy_for(settings: dict, assignment: str) -> SubmitPolicy:
    """`assignment`'s policy from the settings' `on_submit` entries; a ValueError naming a key that is no setting."""
    values: dict = {}
    for entry in ("default", assignment):
        given = settings.get(entry) or {}
        unknown = set(given) - {f.name for f in dataclasses.fields(SubmitPolicy)}
        if unknown:
            raise ValueError(f"on_submit {entry}: {', '.join(sorted(unknown))} is no setting; the settings are "
                             + ", ".join(f.name for f in dataclasses.fields(SubmitPolicy)))
        values.update(given)
    return SubmitPolicy(**values)


def check(settings: dict, assignments: list[str]) -> None:
    """A ValueError naming what is wrong in the settings' `on_submit`: an entry that is neither "default" nor one of
    `assignments`, a key that is no setting, a value that is none of those allowed."""
    for entry in settings:
        if entry != "default" and entry not in assignments:
            raise ValueError(f"on_submit has an entry {entry!r}, which is neither \"default\" nor an assignment of "
                             f"the course ({', '.join(assignments)})")
        policy_for(settings, entry)


def describe() -> str:
    """Every policy key, a line each: for the guide."""
    return "\n".join(f"  on_submit.<assignment>.{f.name:<17} {f.metadata['meaning']}"
                     for f in dataclasses.fields(SubmitPolicy))
