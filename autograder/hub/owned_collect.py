"""`nbgrader collect` that takes a hand-in only from the student it is named for.

nbgrader's exchange names each hand-in folder in `inbound/` `<student>+<assignment>+<timestamp>+<random>`, and
plain `nbgrader collect` believes the name: inbound is writable by every account, so a student can write a folder
named for a classmate (with a later time, so it replaces theirs), or hand in a link to a file only the grader may
read (the grader's collect copies what the link points to). Plain nbgrader only warns about the first, deep in its
log (`CollectApp.check_owner`), and still collects it.

`OwnedCollect` keeps a hand-in only when its folder and everything in it belong to the named student's Unix account
and nothing in it is a link; it picks each student's newest such hand-in, and tells the instructor of every other one
(in `nbgrader collect`'s output and in formgrader's Collect dialog). The class hub's grader config sets it:
`c.ExchangeFactory.collect = "autograder.hub.owned_collect.OwnedCollect"`.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import stat

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect, groupby
from nbgrader.utils import check_mode, ignore_patterns


class NotTheirs(OSError):
    """A file of a hand-in that is not the named student's own, found while it is copied."""


def copy_own_file(uid: int):
    """A copy function for shutil.copytree that copies a regular file of account `uid`, never through a link: what it
    copies is checked as it is opened, so a file swapped for a link after the hand-in was checked is not followed."""
    def copy(source: str, target: str) -> str:
        try:
            descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as error:
            raise NotTheirs(f"{os.path.basename(source)} could not be opened without following a link ({error})")
        with os.fdopen(descriptor, "rb") as opened:
            info = os.fstat(opened.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
                raise NotTheirs(f"{os.path.basename(source)} is not the student's own file")
            with open(target, "wb") as copied:
                shutil.copyfileobj(opened, copied)
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        return target
    return copy


def foreign_reason(folder: str, student: str) -> str | None:
    """Why the hand-in `folder`, named for `student`, is not theirs; None when it is all theirs."""
    try:
        uid = pwd.getpwnam(student).pw_uid
    except KeyError:
        return f"no account is named {student}"
    paths = [folder]
    for parent, folders, files in os.walk(folder):
        paths += [os.path.join(parent, name) for name in folders + files]
    for path in paths:
        info = os.lstat(path)
        shown = "the folder" if path == folder else os.path.relpath(path, folder) + " in it"
        if stat.S_ISLNK(info.st_mode):
            return f"{shown} is a link (to {os.readlink(path)})"
        if info.st_uid != uid:
            try:
                owner = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                owner = f"account number {info.st_uid}"
            return f"{shown} belongs to {owner}"
    return None


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
        student_id = self.coursedir.student_id or "*"
        pattern = os.path.join(self.inbound_path, f"{student_id}+{self.coursedir.assignment_id}+*")
        records = []
        self.refused = []
        for path in sorted(glob.glob(pattern)):
            record = self._path_to_record(path)
            reason = foreign_reason(path, record["username"])
            if reason is None:
                records.append(record)
            else:
                self.refused.append((record["filename"], reason))
        for filename, reason in self.refused:
            self.log.warning("Not collected: inbound/%s is named for %s, but %s. A hand-in counts only when its "
                             "folder and every file in it are that student's own, and none is a link: look at it "
                             "before anyone is graded for it.", filename, filename.split("+", 1)[0], reason)
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

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy of a hand-in, each file opened without following a link and checked to be the student's:
        a hand-in changed between the check and the copy is not collected, and the instructor is told."""
        student = os.path.basename(src).split("+", 1)[0]
        if self.get_size(src) > 1000 * self.coursedir.max_dir_size:
            raise RuntimeError(f"Directory size is too big: {src}")
        try:
            shutil.copytree(src, dest, copy_function=copy_own_file(pwd.getpwnam(student).pw_uid),
                            ignore=ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                                   max_file_size=self.coursedir.max_file_size, log=self.log))
        except (shutil.Error, OSError) as error:
            shutil.rmtree(dest, ignore_errors=True)
            self.log.warning("Not collected: inbound/%s changed while it was copied (%s). Look at it before anyone is "
                             "graded for it.", os.path.basename(src), error)
