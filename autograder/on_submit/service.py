"""Grading at submission: each hand-in that arrives in the exchange's inbound/ is collected with the course's owner
checks, graded by the same engine as `python -m autograder grade` (same sandbox, reasons, late policy and
extensions), and its result given to its student as the policy says (autograder.on_submit.policy): the score, each
exercise's points, or the feedback page, released through the exchange; and, with the LTI login, sent to the LMS
through `lms push` and its ledger when the policy says.

It runs as the grader, in the course directory, as the class hub's service (autograder/hub/jupyterhub_config.py).
Intake, a thread of its own with its own connection to the queue, looks at inbound/ every second and records each new
hand-in with the time the exchange got it (autograder.handins.inbound.exchange_time), whatever grading is doing. The
grading loop grades a round of waiting hand-ins at a time, at most `jobs` at once (autograder.on_submit.queue says
which: one per student, fairly), each notebook within the policy's `budget_seconds`, past which it is graded as it
stands (autograder.grading.job.at_submission), so one slow hand-in holds a round up for that long at most. Every
step is recorded in the queue, so a service started again (after a crash, `kill -9`, a restart of the hub) carries
on where it stopped, and the grading ledger (autograder.grading.ledger) keeps any grade already committed from being
made twice.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.api import MissingEntry

from autograder.grading import autograde_process
from autograder.grading.engine import GRADING_DIR, class_outputs, grade, gradebook
from autograder.grading.job import at_submission
from autograder.grading.ledger import Ledger
from autograder.grading.lock import grading_lock
from autograder.handins.inbound import exchange_time, foreign_reason, not_a_handin
from autograder.nbgrader_run import environment
from autograder.on_submit.policy import SubmitPolicy, policy_for
from autograder.on_submit.queue import HandedIn, Queue
from autograder.results.extension import due_date
from autograder.results.release_feedback import release_feedback
from autograder.results.scores import PENDING, score_of

log = logging.getLogger("autograde-on-submit")
QUEUE = Path("on-submit") / "queue.sqlite"  # in the course directory
# Hand-ins graded in one round, per job: a round's own cost (the gradebook's copy, merging, feedback pages) is paid
# once for all of them, and a round's results wait for its last notebook (bench/README.md, grading at submission).
ROUND_PER_JOB = 3


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)  # naive UTC, as nbgrader keeps its times


class Service:
    """The grading loop of one course directory (`root`), whose exchange's inbound/ is `inbound`."""

    def __init__(self, root: Path, inbound: Path, policies: dict, jobs: int = 1, lti: bool = False):
        self.root, self.inbound, self.policies, self.jobs, self.lti = root, inbound, policies, jobs, lti
        self.queue = Queue(root / QUEUE)  # grading's, and the pages'
        self.arrivals = Queue(root / QUEUE)  # intake's own connection: it writes while a round grades
        recovered = self.queue.recover()
        if recovered:
            log.info("%d hand-in(s) were being graded when the service stopped: they are graded now", recovered)
        self.last_export = 0.0
        self.changed_since_export = False

    # --- arriving

    def policy(self, assignment: str) -> SubmitPolicy:
        return policy_for(self.policies, assignment)

    def released(self) -> set[str]:
        with gradebook(self.root) as gb:
            return {assignment.name for assignment in gb.assignments}

    def scan(self) -> list[HandedIn]:
        """Put every new hand-in of inbound/ in the queue (anything else there is collect's to name), arrived when the
        exchange got it: a service started after the hand-in counts its student's wait from their Submit all the
        same. The new ones."""
        known, added = self.arrivals.known(), []
        released = None
        for name in sorted(os.listdir(self.inbound)) if self.inbound.is_dir() else []:
            if name in known or not_a_handin(str(self.inbound / name)):
                continue
            try:
                arrived = exchange_time(str(self.inbound / name))
            except OSError:  # gone since the listing
                continue
            student, assignment, stamp = name.rsplit("+", 3)[:3]
            released = self.released() if released is None else released
            item = HandedIn(name, student, assignment, stamp, arrived)
            if assignment not in released:
                item.state, item.reason = "refused", f"{assignment} is not an assignment of this course"
            else:
                self.admit(item)
            if self.arrivals.add(item):
                added.append(item)
                log.info("arrived: %s (%s)", name, item.state)
        return added

    def admit(self, item: HandedIn) -> None:
        """The policy at arrival: graded now, later (the cooldown), at the due date, or only by the instructor."""
        policy = self.policy(item.assignment)
        if not policy.grade:
            item.state, item.reason = "held", ("this assignment is graded by your instructor, not as it is handed in")
            return
        if not self.before_due(item):
            return
        count = self.arrivals.graded_count(item.student, item.assignment)
        if policy.graded_hand_ins and count >= policy.graded_hand_ins:
            item.state = "held"
            item.reason = (f"you had {count} hand-in{'s' if count > 1 else ''} graded before the due date, as many as "
                           "this assignment gives: your latest hand-in is graded after the due date")
            return
        last = self.arrivals.last_graded(item.student, item.assignment)
        if policy.cooldown_minutes and last:
            item.not_before = last + policy.cooldown_minutes * 60
            if item.not_before > item.arrived:
                when = datetime.fromtimestamp(item.not_before).astimezone().strftime("%H:%M")
                item.reason = (f"graded at {when}: one hand-in of this assignment is graded every "
                               f"{policy.cooldown_minutes:g} minutes (a later hand-in before then takes its place)")

    def before_due(self, item: HandedIn) -> bool:
        due = due_date(self.root / "gradebook.db", item.assignment, item.student)
        return due is None or utc_now() <= due

    # --- grading

    def grade_round(self) -> list[HandedIn]:
        """Take the next round of waiting hand-ins, collect and grade them; what was done. One grading at a time in
        the course directory: while the instructor grades in a terminal, the round waits (autograder.grading.lock)."""
        if not self.queue.waiting():
            return []
        with grading_lock(self.root, "grading at submission", say=log.info):
            taken = self.queue.take(self.jobs * ROUND_PER_JOB)
            if not taken:
                return []
            gradable = []
            for item in taken:
                refused = self.collect(item)
                if refused:
                    item.state, item.reason, item.finished = "refused", refused, time.time()
                    self.queue.update(item)
                else:
                    gradable.append(item)
            for budget in sorted({self.policy(item.assignment).budget_seconds for item in gradable}):
                these = [item for item in gradable if self.policy(item.assignment).budget_seconds == budget]
                only = {(item.assignment, item.student) for item in these}
                outcomes = grade(self.root, sorted({a for a, _ in only}), jobs=self.jobs, show_progress=False,
                                 only=only, report=False, limits=at_submission(budget))
                by_key = {(o.assignment, o.student): o for o in outcomes}
                for item in these:
                    self.finish(item, by_key.get((item.assignment, item.student)))
        self.changed_since_export = True
        return taken

    def collect(self, item: HandedIn) -> str:
        """nbgrader's collect of this hand-in, with the course's owner checks (OwnedCollect); "" when it is in
        submitted/ now, else why not (said to the instructor: a forged folder is no student's business)."""
        path = self.inbound / item.folder
        if not path.is_dir():
            return "it was no longer in inbound/ when its turn came"
        foreign = foreign_reason(str(path), item.student)
        if foreign:
            return f"not collected: it is named for {item.student}, but {foreign}"
        # forked from the grading engine's warm nbgrader process, not a new interpreter (a second less a hand-in)
        finished = autograde_process.command(
            ["collect", item.assignment, f"--student={item.student}", "--update", f"--CourseDirectory.root={self.root}"],
            self.root, environment(), self.root / GRADING_DIR / "collect.log")
        if finished.returncode != 0:
            said = [line for line in finished.log.splitlines() if "Not collected" in line or "ERROR" in line]
            return "not collected: " + (said[-1].split("]", 1)[-1].strip() if said else "nbgrader collect failed")
        return ""

    def finish(self, item: HandedIn, outcome) -> None:
        item.finished = time.time()
        if outcome is None:
            item.state, item.reason = "refused", "the grader could not grade it; your instructor will"
            self.queue.update(item)
            return
        policy, before = self.policy(item.assignment), self.before_due(item)
        points = outcome.points
        item.score = points.total if points else 0.0
        item.max_score = points.max_score if points else outcome.max_score
        item.pending = float(points.pending) if points else 0.0
        item.reason = outcome.reason  # why it scored what it did, where the grader says (a crash, a time-out)
        item.state = "refused" if outcome.status == "refused" else "graded"
        shows = "page" if not before else policy.before_due
        item.shown = json.dumps(self.shown(item, shows))
        if shows == "page" or item.state == "refused":
            released, by_hand, error = release_feedback(self.root, item.assignment, item.student)
            if error or not released:
                log.warning("feedback of %s not released: %s", item.folder, error or "; ".join(by_hand) or "no page")
        if self.lti and (policy.to_lms == "each" or (policy.to_lms == "after_due" and not before)):
            item.sent = self.to_lms(item.assignment, [item.student])
        self.queue.update(item)
        log.info("graded: %s %s", item.folder, item.shown)

    def shown(self, item: HandedIn, shows: str) -> dict:
        """What `item`'s student sees: the score (written answers not graded yet, late penalty), and with "points"
        each exercise's; with "page" that the feedback page is theirs to fetch; with "received" only that it was
        received and graded (`withheld`: the score comes at the due date)."""
        with gradebook(self.root) as gb:
            score = score_of(gb, item.assignment, item.student)
            exercises = {}
            if shows in ("points", "page"):
                try:
                    for notebook in gb.find_submission(item.assignment, item.student).notebooks:
                        for cell in notebook.grades:
                            if cell.cell_type == "code":
                                name = cell.name.removeprefix("check_").removeprefix("hidden_")
                                got, top = exercises.get(name, (0.0, 0.0))
                                exercises[name] = (got + float(cell.score or 0), top + float(cell.max_score or 0))
                except MissingEntry:
                    pass
        if shows == "received":
            return {"score": "", "pending": "", "reason": "", "exercises": {}, "page": False, "withheld": True}
        return {"score": score.text() if score else "", "pending": PENDING if score and score.pending else "",
                "reason": item.reason, "exercises": {k: f"{v[0]:g}/{v[1]:g}" for k, v in exercises.items()},
                "page": shows == "page"}

    def to_lms(self, assignment: str, students: list[str]) -> str:
        """`python -m autograder lms push --assignment ASSIGNMENT --student ...` of `students` alone, in the course
        directory, with its gradebook and lms/lti.toml (its ledger sends only what changed, and reads it back); its
        last line."""
        only = [option for student in students for option in ("--student", student)]
        result = subprocess.run([sys.executable, "-m", "autograder", "lms", "push", "--assignment", assignment, *only,
                                 "--config", str(self.root / "lms" / "lti.toml"),
                                 "--gradebook", str(self.root / "gradebook.db")],
                                cwd=self.root,
                                capture_output=True, text=True, timeout=600)
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        return (lines[-1] if lines else f"lms push exited {result.returncode}")[:300]

    # --- the due date

    def at_due_dates(self) -> list[tuple[str, str]]:
        """What a due date changes, once per student and assignment when it has passed (their extension included):
        a hand-in held back by the policy's count or waiting out a cooldown is graded now; the latest graded
        hand-in's feedback page is released and shown (a score withheld until now shown with it, or alone where the
        page could not be released); where the policy sends scores "after_due", that student's score goes to the LMS,
        once, at their own due date. The (student, assignment) pairs handled."""
        handled, pushes, now = [], {}, time.time()
        for student, assignment in self.queue.due_not_handled():
            due = due_date(self.root / "gradebook.db", assignment, student)
            if due is None or utc_now() <= due:
                continue
            policy = self.policy(assignment)
            with grading_lock(self.root, "grading at submission", say=log.info):
                items = [item for item in self.queue.all(student) if item.assignment == assignment]
                for item in items:
                    if (item.state == "held" and policy.grade) or (item.state == "waiting" and item.not_before > now):
                        item.state, item.not_before, item.reason = "waiting", 0.0, ""
                        self.queue.update(item)
                latest = next((item for item in items if item.state == "graded"), None)
                if latest and not json.loads(latest.shown or "{}").get("page"):
                    released, by_hand, error = release_feedback(self.root, assignment, student)
                    if released or json.loads(latest.shown or "{}").get("withheld"):
                        latest.shown = json.dumps(self.shown(latest, "page" if released else "score"))
                        self.queue.update(latest)
                    if not released:
                        log.warning("feedback of %s not released at the due date: %s", latest.folder,
                                    error or "; ".join(by_hand) or "no page")
            self.queue.due_handled(student, assignment)
            handled.append((student, assignment))
            if self.lti and policy.to_lms == "after_due":
                pushes.setdefault(assignment, []).append(student)  # each at their own due date, never the class's
        for assignment, students in sorted(pushes.items()):
            log.info("after the due date, to the LMS: %s of %s: %s", assignment, ", ".join(students),
                     self.to_lms(assignment, students))
        return handled

    def without_due_date(self) -> list[str]:
        """For the instructor, a line for each assignment with hand-ins in the queue whose policy waits for a due
        date the gradebook does not give it: until it has one, it is always before the due date."""
        queued = {item.assignment for item in self.queue.all()}
        lines = []
        with gradebook(self.root) as gb:
            for assignment in gb.assignments:
                waits = self.policy(assignment.name).waits_for_due_date() if assignment.name in queued else []
                if assignment.duedate is None and waits:
                    lines.append(f"{assignment.name} has no due date, so it is always before it: {'; '.join(waits)}. "
                                 "Give it one in formgrader (Manage Assignments, its due date) or with `nbgrader db "
                                 f"assignment add {assignment.name} --duedate '2026-12-18 17:00:00 Europe/London'`.")
        return lines

    # --- the instructor's outputs, now and then

    def export_when_quiet(self, every: float = 300) -> None:
        """grades.csv and the class report, at most every `every` seconds while hand-ins are graded."""
        if self.changed_since_export and time.time() - self.last_export > every:
            with grading_lock(self.root, "grading at submission", say=log.info):
                class_outputs(self.root, Ledger(self.root / GRADING_DIR / "ledger.jsonl").entries(), check=False)
            self.last_export, self.changed_since_export = time.time(), False

    def intake(self, stop: threading.Event, pause: float = 1.0) -> None:
        """Record each hand-in of inbound/ as it comes (scan, every `pause` seconds) until `stop` is set."""
        while not stop.is_set():
            try:
                self.scan()
            except Exception:  # noqa: BLE001: one bad look never stops intake
                log.exception("a look at inbound/ failed; the next one tries again")
            stop.wait(pause)

    def run(self, stop: threading.Event | None = None, pause: float = 1.0, due_every: float = 20.0) -> None:
        """Intake in a thread of its own, and here grading until `stop` is set; every `due_every` seconds, the due
        dates."""
        stop = stop or threading.Event()
        threading.Thread(target=self.intake, args=(stop, pause), name="intake", daemon=True).start()
        last_due = 0.0
        while not stop.is_set():
            try:
                if time.time() - last_due > due_every:
                    self.at_due_dates()
                    last_due = time.time()
                if not self.grade_round():
                    self.export_when_quiet()
                    stop.wait(pause)
            except Exception:  # noqa: BLE001: one bad round never stops grading at submission
                log.exception("a round of grading at submission failed; the next round tries again")
                stop.wait(pause)
