"""`nbgrader zip_collect` that never follows a link: the plugins the instructor guide configures.

nbgrader's own extractor follows links: a tar member that links to another member is unpacked as a copy of it
(so a student's "notebook" linking to a classmate's becomes the classmate's notebook), and an unpacked folder
put in `archive/` is copied with its links followed (to the reference, to anything on the machine). Here, a link
is no file handed in (autograder.handins.handin): a link member of a zip or tar archive, a link among unpacked files and a
link in `extracted/` are each skipped with a warning that names it and where it pointed; everything else is
collected as nbgrader collects it.
"""
from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

from nbgrader.plugins import ExtractorPlugin, FileNameCollectorPlugin

from autograder.handins.handin import NOT_FOLLOWED, is_link, link_note


def _archive_stem(name: str) -> str:
    stem, ext = os.path.splitext(name)
    return os.path.splitext(stem)[0] if os.path.splitext(stem)[1] == ".tar" else stem


class HandInExtractor(ExtractorPlugin):
    """nbgrader's ExtractorPlugin (each archive into a folder of its name, archives inside archives too, other
    files copied), links skipped."""

    def extract(self, archive_path: str, extracted_path: str) -> None:
        if not os.listdir(archive_path):
            self.log.warning("No files found in directory: %s", archive_path)
            return
        for here, folders, names in os.walk(archive_path):  # never into a linked folder
            extract_to = os.path.normpath(os.path.join(extracted_path, os.path.relpath(here, archive_path)))
            os.makedirs(extract_to, exist_ok=True)
            for name in sorted(folders + names):
                path = Path(here) / name
                shown = os.path.relpath(path, archive_path)
                if is_link(path):
                    self.log.warning("Skipped %s", link_note(path, shown))
                elif name in folders:
                    continue
                elif os.path.splitext(name)[1] in self.zip_ext:
                    self.log.info("Extracting from: %s", path)
                    self._unpack_tree(str(path), os.path.join(extract_to, _archive_stem(name)))
                else:
                    shutil.copy2(path, os.path.join(extract_to, name))

    def _unpack_tree(self, archive: str, dest: str) -> None:
        """`archive` into `dest`, then every archive found in it into a folder beside it, until none is left."""
        os.makedirs(dest, exist_ok=True)
        self._unpack(archive, dest)
        done: set[str] = set()
        while True:
            found = [os.path.join(here, name) for here, _, names in os.walk(dest) for name in names
                     if os.path.splitext(name)[1] in self.zip_ext and os.path.join(here, name) not in done]
            if not found:
                return
            for inner in found:
                target = os.path.join(os.path.dirname(inner), _archive_stem(os.path.basename(inner)))
                os.makedirs(target, exist_ok=True)
                self._unpack(inner, target)
                done.add(inner)

    def _unpack(self, archive: str, dest: str) -> None:
        name = os.path.basename(archive)
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zipped:
                for member in zipped.infolist():
                    if stat.S_ISLNK(member.external_attr >> 16):
                        target = zipped.read(member).decode(errors="replace")
                        self.log.warning("Skipped %s:%s is a link (to %s): %s", name, member.filename, target,
                                         NOT_FOLLOWED)
                    else:
                        zipped.extract(member, dest)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tarred:
                members = []
                for member in tarred:
                    if member.issym() or member.islnk():
                        self.log.warning("Skipped %s:%s is a link (to %s): %s", name, member.name, member.linkname,
                                         NOT_FOLLOWED)
                    elif member.isfile() or member.isdir():
                        members.append(member)
                tarred.extractall(dest, members=members, filter="data")
        else:
            raise ValueError(f"{archive} is neither a zip nor a tar archive: unpack it yourself into "
                             f"{os.path.dirname(archive)} and collect again")


class HandInCollector(FileNameCollectorPlugin):
    """nbgrader's FileNameCollectorPlugin (its `named_regexp` and `valid_ext` as configured), a link never
    collected."""

    def collect(self, submitted_file: str):
        if is_link(Path(submitted_file)):
            self.log.warning("Skipped %s", link_note(Path(submitted_file), submitted_file))
            return None
        return super().collect(submitted_file)
