"""`lms push`: an assignment's scores to the LMS over LTI 1.3 Assignment and Grade Services 2.0.

The course's members come from Names and Role Provisioning; each nbgrader student is found among the learners by
`Student.lms_user_id` when nbgrader has it, else by the config's rule (email, name or id), and the LMS user id is
then kept in `Student.lms_user_id`. The line item is the one tagged with the assignment's name, created when there is
none (its tag is the notebook's name: an exact key, never a title that shares a word). Each score is `score_of`'s,
refused while a late penalty is stale (autograder.results.scores.refuse_stale) and against a line item out of other points
than the notebook (the LMS would scale it) or below a score (extra credit, which it would cut), posted as the spec's
Score (userId, scoreGiven, scoreMaximum, activityProgress, gradingProgress, an ISO-8601 timestamp, a comment),
recorded in the ledger once the platform took it, and finally read back from the platform's results: a score the
platform holds otherwise is not counted as sent, nor said to be.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.api import Gradebook

from autograder.lms.lti_client import LEARNER, Platform, Refused
from autograder.lms.lti_config import LtiConfig
from autograder.lms.lti_ledger import Ledger
from autograder.lms.marks import Mark, marks_of, maximum_problems, refuse_pending
from autograder.lms.roster import Rule, match, name_key, plain, student_name

RULES = {
    "email": Rule("email", "email", lambda m: plain(m.get("email", "")), lambda s: plain(s.email or "")),
    "name": Rule("name", "full name", lambda m: name_key(m.get("name", "") or
                                                         f"{m.get('given_name', '')} {m.get('family_name', '')}"),
                 student_name),
    "id": Rule("id", "LMS user id", lambda m: str(m.get("user_id", "")), lambda s: s.id),
}


@dataclass
class Outcome:
    assignment: str
    dry_run: bool
    lines: list[str] = field(default_factory=list)
    sent: int = 0
    unchanged: int = 0
    not_sent: list[str] = field(default_factory=list)
    failed: str = ""

    def text(self) -> str:
        verb = "would send" if self.dry_run else "sent"
        summary = (f"{self.assignment}: {verb} {self.sent} score(s); {self.unchanged} unchanged since the last push "
                   f"(not sent again); {len(self.not_sent)} not sent (listed).")
        parts = self.lines + [f"  not sent: {line}" for line in self.not_sent] + [summary]
        if self.failed:
            parts.append(f"Stopped: {self.failed}\nWhat was sent is recorded; run the same command again and it "
                         "sends only what is left.")
        return "\n".join(parts)


def score_for(mark: Mark, user_id: str, missing: str, comment: bool) -> dict | None:
    """The AGS Score for `mark` (None: nothing to send)."""
    if mark.score is None and missing != "zero":
        return None
    score = {"userId": user_id, "scoreGiven": mark.value("zero"), "scoreMaximum": mark.max_score,
             "activityProgress": "Submitted" if mark.score else "Initialized",
             "gradingProgress": "PendingManual" if mark.pending else "FullyGraded",
             "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds")}
    if comment:
        score["comment"] = mark.note()
    return score


def _learners(members: list[dict]) -> tuple[list[dict], list[dict]]:
    """(active learners, inactive or deleted ones)."""
    learners = [m for m in members if any(r in (LEARNER, "Learner") for r in m.get("roles", []))]
    active = [m for m in learners if m.get("status", "Active") == "Active"]
    return active, [m for m in learners if m not in active]


def _user_ids(gb: Gradebook, config: LtiConfig, members: list[dict], outcome: Outcome, keep: bool,
              only: set[str] | None = None) -> dict[str, str]:
    """nbgrader student id -> LMS user id; who has none is reported in `outcome` (of `only`, when given)."""
    active, gone = _learners(members)
    known = {m["user_id"] for m in active}
    students = list(gb.students)
    found = {s.id: s.lms_user_id for s in students if s.lms_user_id and s.lms_user_id in known}
    taken = set(found.values())
    rest = [s for s in students if s.id not in found]
    rule = RULES[config.match]
    matching = match(rule, [m for m in active if m["user_id"] not in taken], rest)
    free = [m for m in active if m["user_id"] not in taken]
    for student, index in matching.pairs.items():
        found[student] = free[index]["user_id"]
        if keep:
            gb.update_or_create_student(student, lms_user_id=free[index]["user_id"])
    for student in matching.ours_only:
        if only is not None and student not in only:
            continue
        inactive = [m for m in gone if rule.lms(m) == rule.ours(gb.find_student(student))]
        outcome.not_sent.append(f"{student}: " + (f"inactive in the LMS ({inactive[0].get('status')})" if inactive
                                else f"not among the course's learners in the LMS (by {rule.says})"))
    outcome.not_sent += matching.ambiguous
    if matching.lms_only and only is None:
        outcome.lines.append("In the LMS, not in the gradebook (nothing to send): "
                             + ", ".join(free[i].get("name") or free[i]["user_id"] for i in matching.lms_only))
    return found


def push(gb: Gradebook, config: LtiConfig, assignment: str, dry_run: bool = False, missing: str = "skip",
         pending: str = "mark", comment: bool = True, course: Path | None = None,
         students: set[str] | None = None) -> Outcome:
    """`course`: the course directory whose nbgrader_config.py gives the late policy (default: the config's);
    `students`: only theirs (grading at submission sends each student's when their own due date passes), else all."""
    if students is not None:
        unknown = sorted(students - {student.id for student in gb.students})
        if unknown:
            raise SystemExit(f"Nothing sent: --student {', '.join(unknown)} is no student of the gradebook.")
    marks = marks_of(gb, [assignment], course or config.path.parent.parent, "Nothing sent")
    if students is not None:
        marks = {key: mark for key, mark in marks.items() if key[0] in students}
    refuse_pending(marks, pending, "--pending skip (send nothing for them) or --pending mark (send the score so "
                   "far, marked PendingManual)")
    outcome = Outcome(assignment, dry_run)
    platform = Platform(config)
    ledger = Ledger(config.sent_file)
    try:
        users = _user_ids(gb, config, platform.members(), outcome, keep=not dry_run, only=students)
        top = next(iter(marks.values())).max_score if marks else 0.0
        item = platform.line_item(assignment, assignment, top, create=False)
        if item is not None:
            theirs = float(item.get_score_maximum() or 0.0)
            blockers = maximum_problems(assignment, f"the LMS's line item {item.get_label() or assignment!r}", theirs,
                                        marks, f"set its maximum to {top:g} in the LMS and push again (the LMS would "
                                        f"scale every score to its {theirs:g}).")
            if blockers:
                raise SystemExit("Nothing sent:\n" + "\n".join(f"  {b}" for b in blockers))
        elif not dry_run:
            item = platform.line_item(assignment, assignment, top, create=True)
        item_id = item.get_id() if item else ""
        if item is None:
            outcome.lines.append(f"would create the line item {assignment!r} (tag {assignment!r}, out of {top:g})")
        else:  # the notebook's column in the LMS, as the dry run shows it before the first push
            outcome.lines.append(f"{assignment} -> the LMS's line item {item.get_label() or assignment!r} (tag "
                                 f"{assignment!r}, out of {float(item.get_score_maximum() or top):g})")
        sent_now: dict[str, int] = {}  # LMS user id -> the index of its "sent" line
        names = {user_id: student for student, user_id in users.items()}
        for student, user_id in sorted(users.items()):
            if (student, assignment) not in marks:
                continue  # not one of `students`
            mark = marks[student, assignment]
            score = score_for(mark, user_id, missing, comment)
            if score is None:
                outcome.not_sent.append(f"{student}: not handed in (--missing zero sends 0)")
            elif mark.pending and pending == "skip":
                outcome.not_sent.append(f"{student}: written answers not graded yet (--pending skip)")
            elif item_id and ledger.already(item_id, score):
                outcome.unchanged += 1
            elif dry_run:
                outcome.sent += 1
                outcome.lines.append(f"would send {student} (LMS user {user_id}): {score}")
            else:
                platform.post_score(item, score)
                ledger.record(item_id, score)
                sent_now[user_id] = len(outcome.lines)
                outcome.sent += 1
                outcome.lines.append(f"sent {student} (LMS user {user_id}): {mark.note()}")
        if item is not None and not dry_run:
            lines, differing = read_back(platform, item, ledger.sent.get(item_id, {}), names)
            gone = {sent_now[user_id] for user_id in differing if user_id in sent_now}
            outcome.lines = [line for index, line in enumerate(outcome.lines) if index not in gone] + lines
            if differing:
                ledger.forget(item_id, differing)
                outcome.sent -= len(gone)
                outcome.failed = (f"the LMS holds {len(differing)} score(s) other than sent (listed above); they are "
                                  "not counted as sent, and the next run sends them again.")
    except Refused as refused:
        outcome.failed = str(refused)
    return outcome


def read_back(platform: Platform, item, sent: dict[str, dict],
              names: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """The platform's results against what it was sent: (a line per difference, or one that all agree; the LMS user
    ids whose result differs). `names`: LMS user id -> nbgrader student, to name who differs."""
    results = {r.get("userId"): r for r in platform.results(item)}
    wrong, differing = [], []
    for user_id, score in sent.items():
        result = results.get(user_id)
        who = f"{names[user_id]} (LMS user {user_id})" if names and user_id in names else f"user {user_id}"
        if result is None:
            wrong.append(f"{who}: the LMS has no result, though it took {score['scoreGiven']:g}")
            differing.append(user_id)
            continue
        given, top = float(result.get("resultScore") or 0), float(result.get("resultMaximum") or 1)
        ours = score["scoreGiven"] / score["scoreMaximum"] if score["scoreMaximum"] else 0.0
        if abs(given / top - ours) > 1e-6:
            wrong.append(f"{who}: the LMS shows {given:g}/{top:g}, "
                         f"it was sent {score['scoreGiven']:g}/{score['scoreMaximum']:g}")
            differing.append(user_id)
    if wrong:
        return ["Read back, the LMS differs from what it was sent:"] + [f"  {w}" for w in wrong], differing
    return [f"Read back: the LMS holds all {len(sent)} score(s) as sent."], []
