"""The instructor's policy for grading at submission, per assignment (the class hub's settings, `on_submit`).

    {"on_submit": {"default": {"grade": true, "before_due": "score"},
                   "07_shakespeare": {"grade": false}}}

Each assignment takes the "default" entry, then its own entry over it; a key left out keeps the value below.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

# The time one notebook of a hand-in may take to grade at submission, unless the policy says otherwise. The course's
# own notebooks grade in 1.9 to 20.1 s each (the reference's solutions, one job, quiet 2 cores: bench/README.md, "One
# job, phase by phase"; 06 and 07 the slowest, for their training cells) and 13 to 18 s at 16 at once (the demo class
# on the GPU machine). At submission a notebook is graded on one core of its own, and when the students are busy too
# the grader's half of the machine gives it at least half a core: twice its quiet time, 40 s for 06. 120 s leaves three
# times that again for a burst of hand-ins and for a correct solution slower than the reference (the slowest measured,
# a row-by-row generate in 05, took 116 s four at once before it was mended); a round then waits 2 minutes for a
# hand-in that sleeps (3 for one whose code will not stop when asked), not the course's 300 s a cell, 900 s a notebook.
BUDGET_SECONDS = 120
# The least and most a policy may give: under 10 s not even a kernel's start and `import torch` fit on a busy
# machine; past the grader's own limit for a whole notebook (autograder.grading.job.NOTEBOOK_TIME_LIMIT) no budget
# would end it.
BUDGET_RANGE = (10, 900)
SHOWN = ("received", "score", "points", "page")  # what a student sees of a graded hand-in before the due date
TO_LMS = ("each", "after_due", "never")


@dataclass(frozen=True)
class SubmitPolicy:
    grade: bool = field(default=True, metadata={"meaning": "a hand-in is graded as it arrives (false: only when the "
                                                            "instructor runs python -m autograder grade)"})
    before_due: str = field(default="score", metadata={
        "meaning": 'what a student sees before the due date: "received" (only that the hand-in was received and '
                   'graded, the score kept until the due date), "score" (the total), "points" (each exercise\'s '
                   'points too) or "page" (the whole feedback page, hidden tests\' messages included); after the due '
                   "date, the page. An assignment with no due date is always before it"})
    graded_hand_ins: int = field(default=0, metadata={
        "meaning": "how many hand-ins of one student are graded before the due date (0: all); later ones wait for "
                   "the due date"})
    cooldown_minutes: float = field(default=0, metadata={
        "meaning": "the least time between two graded hand-ins of one student (a hand-in sooner waits, saying until "
                   "when)"})
    to_lms: str = field(default="after_due", metadata={
        "meaning": 'when a score goes to the LMS (with the LTI login): "each" graded hand-in, "after_due" (each '
                   "student's once, when their own due date, their extension included, has passed), or \"never\" "
                   "(the instructor runs lms push)"})
    budget_seconds: float = field(default=BUDGET_SECONDS, metadata={
        "meaning": f"how long one notebook of a hand-in may take to grade (default {BUDGET_SECONDS} s, six times the "
                   "course's slowest; from 10 to 900): a cell still running then is stopped, and the notebook is "
                   "graded as it stands, saying so"})

    def __post_init__(self):
        if self.before_due not in SHOWN:
            raise ValueError(f"on_submit before_due is {self.before_due!r}: it is one of {', '.join(SHOWN)}")
        if self.to_lms not in TO_LMS:
            raise ValueError(f"on_submit to_lms is {self.to_lms!r}: it is one of {', '.join(TO_LMS)}")
        if self.before_due == "received" and self.to_lms == "each":
            raise ValueError('on_submit before_due is "received" (the score kept until the due date) but to_lms is '
                             '"each", which would show it in the LMS at once: choose to_lms "after_due" (or "never")')
        if self.graded_hand_ins < 0 or self.cooldown_minutes < 0:
            raise ValueError("on_submit graded_hand_ins and cooldown_minutes are 0 or more")
        low, high = BUDGET_RANGE
        if isinstance(self.budget_seconds, bool) or not isinstance(self.budget_seconds, (int, float)) \
                or not low <= self.budget_seconds <= high:
            raise ValueError(f"on_submit budget_seconds is {self.budget_seconds!r}: it is a number of seconds from "
                             f"{low} to {high} (the default, {BUDGET_SECONDS}, is six times the course's slowest "
                             "notebook)")


    def waits_for_due_date(self) -> list[str]:
        """What this policy keeps until the due date, in words (none: nothing waits for one)."""
        waits = []
        if self.grade and self.before_due != "page":
            waits.append("the feedback pages are not released" + (" and the scores not shown"
                                                                   if self.before_due == "received" else ""))
        if self.to_lms == "after_due":
            waits.append("no score goes to the LMS (to_lms after_due)")
        if self.grade and self.graded_hand_ins:
            waits.append(f"hand-ins past the first {self.graded_hand_ins} are not graded")
        return waits


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
