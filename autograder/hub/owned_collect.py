"""`nbgrader collect` that takes a hand-in only from the student it is named for.

nbgrader's exchange names each hand-in folder in `inbound/` `<student>+<assignment>+<timestamp>+<random>`, and
plain `nbgrader collect` believes the name: inbound is writable by every account, so a student can write a folder
named for a classmate (with a later time, so it replaces theirs), or hand in a link to a file only the grader may
read (the grader's collect copies what the link points to). Plain nbgrader only warns about the first, deep in its
log (`CollectApp.check_owner`), and still collects it.

`OwnedCollect` keeps a hand-in only when its folder and everything in it belong to the named student's Unix account
and nothing in it is a link, and tells the instructor of every other one (in `nbgrader collect`'s output and in
formgrader's Collect dialog). The time of a hand-in is the exchange's (autograder.handins.inbound.exchange_time: when
the kernel last saw it or anything in it change), never the one in its name or its timestamp.txt, which the
student's own process writes: each student's newest hand-in, and with `--before-duedate` the newest before the due
date, is chosen by it; the collected copy's timestamp.txt, which autograde reads for the late penalty, says it; and
where the name's time disagrees, or the hand-in changed after the hub first saw it (the grading service's queue,
read-only), the instructor is told. Everything else in `inbound/` (a file, a link, a folder not named as nbgrader
names a hand-in) is never collected: it is removed, or, a folder the grader may not empty, renamed aside within
inbound/, and named with its owner. A hand-in is copied into a hidden folder beside its place in `submitted/` and
moved there only once it is whole, so a copy that fails part-way leaves the copy collected before it as it was; the
collect then exits with an error that names it. Everything else is nbgrader's collect as its own tests promise it
(tests/test_nbgrader_upstream.py runs them against this class and lists the deliberate differences). The class hub's
grader config sets it: `c.ExchangeFactory.collect = "autograder.hub.owned_collect.OwnedCollect"`.
"""
from __future__ import annotations

import contextlib
import fnmatch
import os
import pwd
import shutil
import sqlite3
import stat
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect, groupby
from nbgrader.utils import check_mode, ignore_patterns

from autograder.handins.inbound import (HANDIN_NAME, as_nbgrader_time, changed_after_seen, clear_away, exchange_time,
                                       foreign_reason, named_time_disagrees, not_a_handin, owner_of)

# The grading service's queue in the course directory (autograder.on_submit.service.QUEUE, whose import loads the
# grading engine: tests/test_hub_exchange.py keeps the two the same): when the hub first saw each hand-in.
QUEUE = Path("on-submit") / "queue.sqlite"

class NotTheirs(OSError):
    """A file of a hand-in that is not the named student's own, found while it is copied."""


def copy_own_file(uid: int):
    """A copy function for shutil.copytree that copies a regular file of account `uid`, never through a link: what it
    copies is checked as it is opened, so a file swapped for a link after the hand-in was checked is not followed
    (and a named pipe is refused, not waited on)."""
    def copy(source: str, target: str) -> str:
        try:
            descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:
            raise NotTheirs(f"{os.path.basename(source)} could not be opened without following a link ({error})")
        with os.fdopen(descriptor, "rb") as opened:
            info = os.fstat(opened.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise NotTheirs(f"{os.path.basename(source)} is no regular file")
            if info.st_uid != uid:
                raise NotTheirs(f"{os.path.basename(source)} is not the student's own file")
            with open(target, "wb") as copied:
                shutil.copyfileobj(opened, copied)
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        return target
    return copy


class OwnedCollect(ExchangeCollect):
    """nbgrader's collect, of hand-ins that belong to the student they are named for (see the module)."""

    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not check_mode(self.inbound_path, read=True, execute=True):
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        pattern = f"{self.coursedir.student_id or '*'}+{self.coursedir.assignment_id}+*"
        first_seen = self._first_sights()
        records = []
        for name in sorted(os.listdir(self.inbound_path)):
            path = os.path.join(self.inbound_path, name)
            reason = not_a_handin(path)
            if reason is not None:
                self._clear_away(name, reason)
            elif fnmatch.fnmatchcase(name, pattern):
                record = self._path_to_record(path)
                reason = foreign_reason(path, record["username"])
                if reason is None:
                    record["arrived"] = self._exchange_time(name, first_seen.get(name))
                    record["timestamp"] = _naive_utc(record["arrived"])
                    records.append(record)
                else:
                    self.log.warning("Not collected: inbound/%s is named for %s, but %s. A hand-in counts only when "
                                     "its folder and every file in it are that student's own, and none is a link: "
                                     "look at it before anyone is graded for it.", name, record["username"], reason)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        self.src_records = []
        for handins in groupby(records, lambda item: item["username"]).values():
            handins = self._sort_by_timestamp(handins)
            if self.duedate is not None and self.before_duedate:
                in_time = [h for h in handins if h["timestamp"] <= self.duedate]
                handins = in_time or handins
            self.src_records.append(handins[0])

    def _exchange_time(self, name: str, first_seen: float | None) -> float:
        """The time of the hand-in inbound/`name` (autograder.handins.inbound.exchange_time, epoch seconds); where its
        name's time disagrees, or it changed after the hub first saw it, the instructor is told."""
        arrived = exchange_time(os.path.join(self.inbound_path, name))
        wrong = changed_after_seen(arrived, first_seen) or named_time_disagrees(name, arrived)
        if wrong:
            self.log.warning("Time of inbound/%s: %s. Its time is the exchange's, %s, never one its student's own "
                             "process wrote: collect takes the newest hand-in by it, and the copy's timestamp.txt in "
                             "submitted/ (so the late penalty) says it.", name, wrong, as_nbgrader_time(arrived))
        return arrived

    def _first_sights(self) -> dict[str, float]:
        """When the hub first saw each hand-in of inbound/ (epoch seconds), as grading at submission recorded it in
        its queue, opened read-only; {} where the course has no queue (no grading at submission)."""
        path = Path(self.coursedir.root) / QUEUE
        if not path.is_file():
            return {}
        try:
            with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=30)) as db:
                return {folder: arrived for folder, arrived in db.execute("SELECT folder, arrived FROM handins")}
        except sqlite3.Error as error:
            self.log.warning("The grading service's queue (%s) could not be read (%s): each hand-in's time is its "
                             "folder's alone.", path, error)
            return {}

    def _clear_away(self, name: str, reason: str) -> None:
        """inbound/`name`, which is no hand-in, removed or set aside (autograder.handins.inbound.clear_away), and named
        to the instructor."""
        path = os.path.join(self.inbound_path, name)
        try:
            owner = owner_of(path)
            aside = clear_away(path)
        except FileNotFoundError:  # its owner took it away since inbound/ was listed
            return
        except OSError as error:
            done = f"It could not be removed ({error}): look at it"
        else:
            if aside is None:
                done = f"It was {owner}'s and is removed"
            elif aside == path:
                done = (f"It is {owner}'s and the grader cannot empty it; its name marks it as set aside already (by "
                        f"an earlier collect, or by {owner}): only {owner} or root can remove it (sudo rm -r '{path}')")
            else:
                done = (f"It is {owner}'s and the grader cannot empty it: set aside as inbound/"
                        f"{os.path.basename(aside)}; only {owner} or root can remove it (sudo rm -r '{aside}')")
        self.log.warning("Not collected: inbound/%s is no hand-in: %s. %s. nbgrader submit hands in a folder named %s; "
                         "nothing else in inbound/ is ever collected.", name, reason, done, HANDIN_NAME)

    def copy_files(self):
        """nbgrader's copy_files (which hand-in replaces which, and what it logs), each hand-in copied whole beside its
        place before it takes it: one that fails leaves the copy collected before it, and fails the collect."""
        assignment = self.coursedir.assignment_id
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect", assignment, self.coursedir.course_id)
        else:
            self.log.info("Processing %d submissions of '%s' for course '%s'", len(self.src_records), assignment,
                          self.coursedir.course_id)
        failed = []
        for record in self.src_records:
            student = record["username"]
            src_path = os.path.join(self.inbound_path, record["filename"])
            dest_path = self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment)
            updating = os.path.isdir(dest_path)
            if updating:
                existing = self.coursedir.get_existing_timestamp(dest_path)
                newer = self.update and (existing is None or record["timestamp"] > existing)
                if not (newer or (self.before_duedate and existing != record["timestamp"])):
                    self.log.info("No newer submission to collect: %s %s" if self.update else
                                  "Submission already exists, use --update to update: %s %s", student, assignment)
                    continue
            self.log.info("Updating submission: %s %s" if updating else "Collecting submission: %s %s",
                          student, assignment)
            os.makedirs(os.path.dirname(dest_path), exist_ok=True)
            staging = tempfile.mkdtemp(prefix=f".{os.path.basename(dest_path)}.collecting-",
                                       dir=os.path.dirname(dest_path))  # hidden: grading skips it (handin.py)
            copy, before = os.path.join(staging, "copy"), os.path.join(staging, "before")
            try:
                self.do_copy(src_path, copy)
                self._stamp(record, copy)
                if updating:
                    os.rename(dest_path, before)
                os.rename(copy, dest_path)
            except (OSError, shutil.Error, RuntimeError) as error:
                if os.path.isdir(before) and not os.path.lexists(dest_path):
                    os.rename(before, dest_path)
                failed.append(record["filename"])
                kept = (f"the hand-in collected before stays in {os.path.relpath(dest_path, self.coursedir.root)}"
                        if updating else "nothing of it is in submitted/")
                self.log.error("Not collected: inbound/%s could not be copied (%s); %s. Look at it before anyone is "
                               "graded for it.", record["filename"], error, kept)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        if failed:
            self.fail(f"{len(failed)} hand-in{'s' if len(failed) > 1 else ''} not collected, each named above: "
                      f"{', '.join(failed)}")

    def _stamp(self, record: dict, copy: str) -> None:
        """The copy's timestamp.txt, which nbgrader autograde reads for the late penalty, says the exchange's time of
        the hand-in (measured again once it is copied: a change during the copy makes it later)."""
        arrived = exchange_time(os.path.join(self.inbound_path, record["filename"]))
        if arrived != record["arrived"]:
            self.log.warning("Time of inbound/%s: it changed while it was collected; its time is now %s.",
                             record["filename"], as_nbgrader_time(arrived))
            record["arrived"], record["timestamp"] = arrived, _naive_utc(arrived)
        with open(os.path.join(copy, "timestamp.txt"), "w") as stamp:
            stamp.write(as_nbgrader_time(arrived))

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy of a hand-in (its size limit, ignored files, groupshared modes), each file opened without
        following a link and checked to be the student's: a hand-in changed between the check and the copy raises
        NotTheirs, and nothing of it is left at `dest`."""
        student = os.path.basename(src).rsplit("+", 3)[0]
        size, limit = self.get_size(src), 1000 * self.coursedir.max_dir_size
        if size > limit:
            raise RuntimeError(f"it is {size} bytes, over CourseDirectory.max_dir_size ({limit} bytes)")
        try:
            shutil.copytree(src, dest, copy_function=copy_own_file(pwd.getpwnam(student).pw_uid),
                            ignore=ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                                   max_file_size=self.coursedir.max_file_size, log=self.log))
        except shutil.Error as error:  # copytree goes on past a file it could not copy, then raises them all
            shutil.rmtree(dest, ignore_errors=True)
            raise NotTheirs("; ".join(str(why) for _, _, why in error.args[0])) from None
        except OSError:
            shutil.rmtree(dest, ignore_errors=True)
            raise
        if self.coursedir.groupshared:  # as nbgrader's: the group may read and write what is collected
            for folder, _, files in os.walk(dest):
                self._add_mode(folder, 0o2770, 0o2777)
                for name in files:
                    self._add_mode(os.path.join(folder, name), 0o660, 0o777)

    def _add_mode(self, path: str, bits: int, mask: int) -> None:
        mode = os.stat(path).st_mode
        if mode & bits != bits:
            try:
                os.chmod(path, (mode | bits) & mask)
            except PermissionError:
                self.log.warning("Could not update permissions of %s to make it groupshared", path)


def _naive_utc(seconds: float) -> datetime:
    """An epoch time as nbgrader compares times (naive UTC), to the microsecond its timestamp.txt keeps."""
    return datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)
