"""The hand-ins waiting to be graded at submission, and what became of each: one SQLite file in the course directory
(`on-submit/queue.sqlite`, the grader's), so that nothing is lost or graded twice across a restart.

A hand-in is a folder of the exchange's inbound/, `<student>+<assignment>+<time>+<random>`, and goes through

    waiting    in the queue (with `not_before`: not before that time, the student's cooldown; at the due date, at once)
    grading    taken by the grader; a service started again after a crash puts it back to waiting
    graded     graded: its score, and what its student may see
    refused    not graded, with the reason (not the student's own, or no gradable notebook)
    held       not graded now: the policy's number of graded hand-ins before the due date is reached
    superseded a later hand-in of the same student and assignment arrived before it was taken

Fair: each round takes at most one hand-in per student, those who were served longest ago first, so one student's
ten hand-ins never delay another's first; of one student's waiting hand-ins of an assignment only the newest is
graded (nbgrader collects the newest). The newest is the one that arrived last (`arrived`, the exchange's time), never
the one whose name says the latest time (`handed_in`, which the student's own process writes).
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, fields
from pathlib import Path

STATES = ("waiting", "grading", "graded", "refused", "held", "superseded")


@dataclass
class HandedIn:
    folder: str  # its name in inbound/
    student: str
    assignment: str
    handed_in: str  # the time in its name, as the student's nbgrader submit wrote it: how they know it, never trusted
    arrived: float  # when the exchange got it (epoch seconds: autograder.handins.inbound.exchange_time)
    state: str = "waiting"
    not_before: float = 0.0
    started: float = 0.0
    finished: float = 0.0
    score: float | None = None
    max_score: float | None = None
    pending: float = 0.0  # points of written answers not graded yet
    reason: str = ""  # why it was refused or held (for the student and the instructor)
    shown: str = ""  # what its student sees of the result (JSON)
    sent: str = ""  # what went to the LMS, if anything

    @property
    def waited(self) -> float:
        return (self.finished or time.time()) - self.arrived


COLUMNS = [f.name for f in fields(HandedIn)]


class Queue:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"CREATE TABLE IF NOT EXISTS handins ({', '.join(COLUMNS)}, PRIMARY KEY (folder))")
        # the students and assignments whose due date has passed and been acted on (autograder.on_submit.service)
        self.db.execute("CREATE TABLE IF NOT EXISTS due (student, assignment, PRIMARY KEY (student, assignment))")

    def due_not_handled(self) -> list[tuple[str, str]]:
        """Each (student, assignment) with a hand-in whose due date was not yet acted on."""
        return self.db.execute("SELECT DISTINCT student, assignment FROM handins WHERE (student, assignment) NOT IN "
                               "(SELECT student, assignment FROM due) ORDER BY student, assignment").fetchall()

    def due_handled(self, student: str, assignment: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO due VALUES (?, ?)", [student, assignment])

    def recover(self) -> int:
        """After a crash: hand-ins taken but not finished wait again (the grading ledger keeps any grade that was
        committed, so none is graded twice); how many."""
        return self.db.execute("UPDATE handins SET state = 'waiting', started = 0 WHERE state = 'grading'").rowcount

    def add(self, item: HandedIn) -> bool:
        """Put a hand-in in the queue, once: False when the queue knew it already."""
        values = [getattr(item, name) for name in COLUMNS]
        cursor = self.db.execute(f"INSERT OR IGNORE INTO handins VALUES ({', '.join('?' * len(COLUMNS))})", values)
        return cursor.rowcount == 1

    def known(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT folder FROM handins")}

    def update(self, item: HandedIn) -> None:
        sets = ", ".join(f"{name} = ?" for name in COLUMNS[1:])
        self.db.execute(f"UPDATE handins SET {sets} WHERE folder = ?",
                        [getattr(item, name) for name in COLUMNS[1:]] + [item.folder])

    def all(self, student: str | None = None) -> list[HandedIn]:
        """Every hand-in (only `student`'s, when given), the latest first."""
        where, args = ("WHERE student = ?", [student]) if student else ("", [])
        rows = self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM handins {where} ORDER BY arrived DESC, folder DESC",
                               args)
        return [HandedIn(*row) for row in rows]

    def graded_count(self, student: str, assignment: str) -> int:
        return self.db.execute("SELECT COUNT(*) FROM handins WHERE student = ? AND assignment = ? AND state = "
                               "'graded'", [student, assignment]).fetchone()[0]

    def last_graded(self, student: str, assignment: str) -> float:
        """When `student`'s last hand-in of `assignment` was taken to be graded (0: never)."""
        return self.db.execute("SELECT COALESCE(MAX(started), 0) FROM handins WHERE student = ? AND assignment = ? "
                               "AND state IN ('graded', 'grading')", [student, assignment]).fetchone()[0]

    def waiting(self, now: float | None = None) -> int:
        """How many hand-ins wait that may be graded now."""
        now = time.time() if now is None else now
        return self.db.execute("SELECT COUNT(*) FROM handins WHERE state = 'waiting' AND not_before <= ?",
                               [now]).fetchone()[0]

    def take(self, count: int, now: float | None = None) -> list[HandedIn]:
        """The next round: up to `count` hand-ins, one per student, marked grading (see the module)."""
        now = time.time() if now is None else now
        waiting = [item for item in reversed(self.all()) if item.state == "waiting"]  # oldest first
        newest: dict[tuple[str, str], HandedIn] = {}
        for item in waiting:
            earlier = newest.get((item.student, item.assignment))
            if earlier is None:
                newest[(item.student, item.assignment)] = item
                continue
            by_arrival = (earlier.arrived, earlier.folder) <= (item.arrived, item.folder)
            older, newer = (earlier, item) if by_arrival else (item, earlier)
            older.state, older.reason, older.finished = "superseded", f"the hand-in of {newer.handed_in} came after it", now
            self.update(older)
            newest[(item.student, item.assignment)] = newer
        ready = [item for item in newest.values() if item.not_before <= now]
        served = {row[0]: row[1] for row in self.db.execute(
            "SELECT student, MAX(started) FROM handins WHERE started > 0 GROUP BY student")}
        ready.sort(key=lambda item: (served.get(item.student, 0.0), item.arrived))
        chosen, students = [], set()
        for item in ready:
            if item.student in students:
                continue
            students.add(item.student)
            item.state, item.started = "grading", now
            self.update(item)
            chosen.append(item)
            if len(chosen) == count:
                break
        return chosen
