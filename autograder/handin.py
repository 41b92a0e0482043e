"""What a student handed in: the real files under `submitted/<student>/<assignment>/`, and never what a link there
points at.

Links reach `submitted/` in ordinary ways: `git clone` of a student's repository, `unzip` or `tar` of a learning
platform's download, `cp -a` or `rsync -a` from a shared drive all restore them. A link is a name, not a file the
student wrote: followed, `helper.py -> ../../../autograder/reference/attention.py` would hand the course's own
solution to the graded kernel, and a notebook that is a link to a classmate's would earn the classmate's points. So
a link, to a file or a folder, relative or absolute, dangling or a chain, the notebook itself or the student's or
the assignment's folder, is not handed in: nothing reads through it, it gives the kernel nothing, and the instructor
is told where it pointed. Nor can a file beside the notebook stand in for the course's code: a `torch.py`, `course/`
or `autograder/` there is never imported in place of the installed one (the kernel's guard imports the installed
one, autograder.guard.policy.InstalledFirst), and the instructor is told (`shadows`). Every reader of `submitted/`
asks this module: grading here (nbgrader reads a staged copy of the real files, `stage`), on a cluster (a worker is
sent the real files), preflight (a linked notebook is no notebook), a learning platform's collect (nbgrader
zip_collect with autograder.zip_collect skips links), and what reads their results (feedback, the class report)
sees only what grading made of them.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import os
import shutil
import sys
from pathlib import Path

NOT_FOLLOWED = "a link is not handed in and the grader never follows one"


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


def with_links(sha256: str, notes: list[str]) -> str:
    """The ledger's hash of a hand-in whose notebook hashes to `sha256`, changed by the links beside it (`notes`):
    a link replaced by the real file regrades it. Without links, the notebook's own hash."""
    return hashlib.sha256("\n".join([sha256, *notes]).encode()).hexdigest() if notes else sha256


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
