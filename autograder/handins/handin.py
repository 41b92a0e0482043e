"""What a student handed in: the real files under `submitted/<student>/<assignment>/`, and never what a link there
points at.

Links reach `submitted/` in ordinary ways: `git clone` of a student's repository, `unzip` or `tar` of a learning
platform's download, `cp -a` or `rsync -a` from a shared drive all restore them. A link is a name, not a file the
student wrote: followed, `helper.py -> ../../../autograder/authoring/reference/attention.py` would hand the course's own
solution to the graded kernel, and a notebook that is a link to a classmate's would earn the classmate's points. So
a link, to a file or a folder, relative or absolute, dangling or a chain, the notebook itself or the student's or
the assignment's folder, is not handed in: nothing reads through it, it gives the kernel nothing, and the instructor
is told where it pointed. Nor can a file beside the notebook stand in for the course's code: a `torch.py`, `course/`
or `autograder/` there is never imported in place of the installed one (the kernel's guard imports the installed
one, autograder.grading.guard.policy.InstalledFirst), and the instructor is told (`shadows`). Every reader of `submitted/`
asks this module: grading here (nbgrader reads a staged copy of the real files, `stage`), on a cluster (a worker is
sent the real files), preflight (a linked notebook is no notebook), a learning platform's collect (nbgrader
zip_collect with autograder.handins.zip_collect skips links), and what reads their results (feedback, the class report)
sees only what grading made of them.

What a hand-in is lives here too (`HandIn`, read by `hand_in`): its student, assignment and folder, the time and
secret `nbgrader submit` filed beside it, and its fingerprint. Grading, feedback, its release through the exchange and
the similarity screen read these, so a re-submission (the same notebook with a new time) or a refusal means the same
in each: the hand-in in `submitted/` is the one that counts, as in plain nbgrader (`nbgrader collect --update`
replaces it).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

NOT_FOLLOWED = "a link is not handed in and the grader never follows one"
TIMESTAMP = "timestamp.txt"  # what nbgrader submit files beside a hand-in: when it was handed in
SECRET = "submission_secret.txt"  # ... and the secret that ties the hand-in's feedback to the student's own copy
FROM_SUBMIT = (TIMESTAMP, SECRET)  # a hand-in that came through the exchange has both; feedback keeps them


def not_a_student(name: str) -> str:
    """Why a folder under submitted/ is no student's ("" when it may be one): unzipping on a Mac or copying from
    one leaves `__MACOSX/` and hidden folders behind."""
    if name == "__MACOSX":
        return "a Mac's zip metadata"
    if name.startswith((".", "__")):
        return "a hidden or system folder"
    return ""


def submitted_folders(root: Path) -> list[str]:
    """Every folder under `root/submitted`, a student's or not; one that is a link too (graded 0 with a note, never
    read)."""
    submitted = root / "submitted"
    return sorted(p.name for p in submitted.iterdir() if p.is_dir() or p.is_symlink()) if submitted.exists() else []


def students_in(root: Path) -> list[str]:
    """The students with a folder under `root/submitted`."""
    return [name for name in submitted_folders(root) if not not_a_student(name)]


def is_link(path: Path) -> bool:
    return os.path.islink(path)


def is_real_file(path: Path) -> bool:
    """A regular file that is no link (a dangling link or one to a file is not)."""
    return not os.path.islink(path) and path.is_file()


def link_note(path: Path, name: str) -> str:
    """What the instructor reads of the link at `path`: its name and where it pointed, never its target's content."""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return f"{name} is a link (to {target}): {NOT_FOLLOWED}"


def link_hash(path: Path) -> str:
    """What the ledger keeps of a hand-in that is a link: its target's name, never its content ("" when no link)."""
    return hashlib.sha256(f"link:{os.readlink(path)}".encode()).hexdigest() if is_link(path) else ""


def folder_link(submitted: Path, student: str, assignment: str) -> str:
    """The note when `submitted/<student>` or `submitted/<student>/<assignment>` is a link ("" when neither is)."""
    for path in (submitted / student, submitted / student / assignment):
        if is_link(path):
            return link_note(path, path.relative_to(submitted.parent).as_posix())
    return ""


def real_files(folder: Path) -> tuple[list[str], list[str]]:
    """The regular files under `folder` (paths within it, sorted), found without going through any link, and a
    note for each link met there (to a file or a folder, dangling or not: none is followed)."""
    files, notes = [], []
    if is_link(folder) or not folder.is_dir():
        return files, notes
    for here, folders, names in os.walk(folder):  # os.walk never descends into a linked folder
        base = Path(here)
        for name in sorted(folders + names):
            path = base / name
            relative = path.relative_to(folder).as_posix()
            if is_link(path):
                notes.append(link_note(path, relative))
            elif name in names and path.is_file():
                files.append(relative)
        folders[:] = sorted(name for name in folders if not is_link(base / name))
    return sorted(files), notes


def links(folder: Path) -> list[str]:
    """A note for every link under `folder` (see `real_files`)."""
    return real_files(folder)[1]


def stage(folder: Path, target: Path) -> Path:
    """Copy the real files handed in under `folder` to `target` (made afresh), links left behind: what nbgrader reads
    when it grades this hand-in on this machine."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for relative in real_files(folder)[0]:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(folder / relative, target / relative, follow_symlinks=False)
    return target


def _installed(name: str) -> bool:
    """Whether this environment has a module `name` of its own (the course, the grader, torch, the standard
    library...), found without the current folder."""
    here = os.path.realpath(os.curdir)
    entries = [e for e in sys.path if isinstance(e, str) and e and os.path.realpath(e) != here]
    return name in sys.builtin_module_names or importlib.machinery.PathFinder.find_spec(name, entries) is not None


def shadows(folder: Path) -> list[str]:
    """A note for each module handed in beside the notebook under the name of an installed one (`torch.py`,
    `course/`): the graded kernel imports the installed one, never this."""
    names = {}
    for relative in real_files(folder)[0]:
        top, _, rest = relative.partition("/")
        if not rest and top.endswith(".py"):
            names[top[:-3]] = top
        elif rest == "__init__.py":
            names[top] = f"{top}/"
    return [f"{shown} has the name of a module the course or the grader uses ({name}): the graded notebook "
            f"imports the installed {name}, never this one" for name, shown in sorted(names.items())
            if name.isidentifier() and _installed(name)]


@dataclass(frozen=True)
class HandIn:
    """One student's hand-in of one assignment, as every reader of `submitted/` sees it."""
    student: str
    assignment: str
    folder: Path  # submitted/<student>/<assignment>
    link: str  # the note when that folder or the student's is a link ("" when neither): nothing is read through it
    timestamp: str  # when it was handed in, as nbgrader submit wrote it in timestamp.txt ("" when none)
    secret: str  # nbgrader submit's submission_secret.txt ("" when none)

    @property
    def exists(self) -> bool:
        return bool(self.link) or self.folder.exists()

    def lacks(self) -> list[str]:
        """What of nbgrader submit's files (`FROM_SUBMIT`) this hand-in lacks: [] when it came through the exchange."""
        return [name for name in FROM_SUBMIT if not is_real_file(self.folder / name)] if not self.link else \
            list(FROM_SUBMIT)

    def fingerprint(self) -> str:
        """What a grade of it depends on, hashed: every real file handed in (the notebook, the files beside it, its
        time and secret) and the links met, by name. The same notebook handed in again with a new time is another
        hand-in, graded again with its new time, as plain nbgrader grades it."""
        if self.link:
            return link_hash(self.folder) or hashlib.sha256(f"link:{self.link}".encode()).hexdigest()
        digest = hashlib.sha256()
        files, notes = real_files(self.folder)
        for relative in files:
            digest.update(f"{relative}\n".encode())
            digest.update(hashlib.sha256((self.folder / relative).read_bytes()).hexdigest().encode())
        for note in notes:
            digest.update(f"{note}\n".encode())
        return digest.hexdigest()

    def notebook_names(self) -> list[str]:
        """The names (without .ipynb) of the notebooks handed in, the assignment's own first: nbgrader's exchange
        delivers a feedback page only under the name of a notebook in the student's copy."""
        handed = [] if self.link else sorted(p.stem for p in self.folder.glob("*.ipynb") if is_real_file(p))
        return [self.assignment, *(name for name in handed if name != self.assignment)]

    def file_submit_records(self, folder: Path) -> None:
        """Copy this hand-in's timestamp.txt and submission_secret.txt into `folder` (its feedback's), where nbgrader
        release_feedback reads them; a file it lacks is removed there, so no earlier hand-in's stays."""
        for name in FROM_SUBMIT:
            if name in self.lacks():
                (folder / name).unlink(missing_ok=True)
            else:
                shutil.copyfile(self.folder / name, folder / name)


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip() if is_real_file(path) else ""
    except (OSError, UnicodeDecodeError):
        return ""


def hand_in(submitted: Path, student: str, assignment: str) -> HandIn:
    """The hand-in of `assignment` by `student` under `submitted/` (read without following any link)."""
    folder = submitted / student / assignment
    link = folder_link(submitted, student, assignment)
    if link:
        return HandIn(student, assignment, folder, link, "", "")
    return HandIn(student, assignment, folder, "", _read_text(folder / TIMESTAMP), _read_text(folder / SECRET))


def hand_ins(root: Path, assignments: list[str]) -> list[HandIn]:
    """Every hand-in under `root/submitted` of `assignments`, by assignment then student."""
    found = [hand_in(root / "submitted", student, assignment) for assignment in assignments
             for student in students_in(root)]
    return [found_one for found_one in found if found_one.exists]
