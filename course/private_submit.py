"""`nbgrader submit` on the class hub: a hand-in that only its author and the grader can reach.

nbgrader 0.9's own submit copies a hand-in into the exchange's inbound/ with its files' own modes, then leaves the
folder 0777 and its files 0644: anyone who knows or guesses the folder's name can read it, add to it and empty it.
`PrivateSubmit` copies it under umask 077, each folder made 0700 and each file 0600 as it is written, so that no
moment leaves any of it open to another account, then leaves the folders 0750 and the files 0640. The grader reads
them through their group, which each hand-in takes from inbound/: the hub makes inbound/ the grader's, of the
grader's own group, and 3733 (setgid: every folder made there gets that group; sticky: only a folder's owner or the
grader may rename or remove it; autograder/hub/layout.py). Classmates can do nothing with it. Everything else is
nbgrader's submit (tests/test_nbgrader_upstream.py runs nbgrader's own tests against it and lists the deliberate
differences). The class hub's student settings select it: `c.ExchangeFactory.submit =
"course.private_submit.PrivateSubmit"`; it is in the student package because a student's server imports only that.
"""
from __future__ import annotations

import os
import secrets
import shutil

from nbgrader.exchange.default.submit import ExchangeSubmit
from nbgrader.utils import ignore_patterns

HANDIN_FOLDER_MODE = 0o750  # the student's, read by the grader's group
HANDIN_FILE_MODE = 0o640
PRIVATE_UMASK = 0o077  # while it is copied: the student's alone


def copy_privately(source: str, target: str, ignore) -> None:
    """`source` copied to `target` as shutil.copytree copies it (links followed, `ignore` as its ignore), without its
    modes: under PRIVATE_UMASK each folder is made 0700 and each file 0600, where copytree would give each its
    source's mode (a home's 0755 and 0644) before nbgrader set the hand-in's own."""
    names = os.listdir(source)
    ignored = set(ignore(source, names))
    os.mkdir(target)
    for name in names:
        if name in ignored:
            continue
        path, copy = os.path.join(source, name), os.path.join(target, name)
        if os.path.isdir(path):
            copy_privately(path, copy, ignore)
        else:
            shutil.copyfile(path, copy)
            info = os.stat(path)
            os.utime(copy, ns=(info.st_atime_ns, info.st_mtime_ns))  # as copytree's copy2 keeps them


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit, whose hand-in is its student's and the grader's alone (see the module)."""

    def copy_files(self):
        """nbgrader's copy_files (its checks and log, timestamp.txt, the submission secret, the copy in the student's
        own cache), the hand-in in inbound/ copied privately and left 0750, its files 0640 (nbgrader: 0777)."""
        self.init_release()
        submission_secret = secrets.token_hex(64)
        dest_path = os.path.join(self.inbound_path, self.assignment_filename)
        cached = self.assignment_filename.rsplit("+", 1)[0] if self.add_random_string else self.assignment_filename
        cache_path = os.path.join(self.cache_path, cached)
        self.log.info("Source: {}".format(self.src_path))
        self.log.info("Destination: {}".format(dest_path))
        self.check_filename_diff()
        before = os.umask(PRIVATE_UMASK)
        try:
            self._copy_into_inbound(self.src_path, dest_path)
            self._write_beside(dest_path, submission_secret)
            self.set_perms(dest_path, fileperms=HANDIN_FILE_MODE, dirperms=HANDIN_FOLDER_MODE)
        finally:
            os.umask(before)
        if not os.path.isdir(self.cache_path):
            os.makedirs(self.cache_path)
        self.do_copy(self.src_path, cache_path)
        self._write_beside(cache_path, submission_secret)
        self.log.info("Submitted as: {} {} {}".format(self.coursedir.course_id, self.coursedir.assignment_id,
                                                      str(self.timestamp)))

    def _copy_into_inbound(self, source: str, target: str) -> None:
        """nbgrader's do_copy (its size limit, ignored and too large files), copied privately."""
        size, limit = self.get_size(source), 1000 * self.coursedir.max_dir_size
        if size > limit:
            self.log.error("Directory size is too big")
            raise RuntimeError(f"Directory size is too big. Size is {size}, maximum size is {limit}")
        copy_privately(source, target, ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                                       max_file_size=self.coursedir.max_file_size, log=self.log))

    def _write_beside(self, folder: str, submission_secret: str) -> None:
        with open(os.path.join(folder, "timestamp.txt"), "w") as fh:
            fh.write(self.timestamp)
        with open(os.path.join(folder, "submission_secret.txt"), "w") as fh:
            fh.write(submission_secret)
