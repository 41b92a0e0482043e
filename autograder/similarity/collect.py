"""What the screen compares: each student's solution cells by grade_id, the release notebook's own code (boilerplate
that never counts), and the files of the instructor's `--reference` folders.

Hand-ins are read as grading reads them and only through `autograder.handins.handin`: a link, whether the notebook, the
assignment's folder or the student's folder, is never followed, so it hands in nothing to compare. Nothing is
written: the notebook compared is the one grading would take (`<assignment>.ipynb`, else the newest numbered
re-upload, else the only notebook in the folder), found without moving a file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.handins import handin
from autograder.handins.preflight import nbgrader_metadata, notebooks_in, re_uploads

REFERENCE_SUFFIXES = (".py", ".ipynb")  # what a --reference folder holds that is compared (code only)


@dataclass(frozen=True)
class Solution:
    """The code one student wrote in one solution cell (one exercise)."""
    student: str
    assignment: str
    exercise: str  # the cell's nbgrader grade_id
    code: str


@dataclass(frozen=True)
class ReferenceFile:
    """A public implementation the instructor keeps: one file of a `--reference` folder."""
    name: str  # the folder's name and the path inside it: `nanoGPT/model.py`
    code: str


def solution_code(notebook) -> dict[str, str]:
    """`grade_id -> source` of the notebook's code solution cells (written answers are prose and not compared); the
    first cell of a grade_id counts, as in grading."""
    found = {}
    for cell in notebook.cells:
        grade_id = nbgrader_metadata(cell).get("grade_id")
        if cell.cell_type == "code" and nbgrader_metadata(cell).get("solution") and grade_id and grade_id not in found:
            found[grade_id] = cell.source
    return found


def release_code(release_notebook: Path) -> list[str]:
    """Every code cell of the notebook the students were given, stubs included: boilerplate, never evidence."""
    notebook = nbformat.read(release_notebook, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def release_stubs(release_notebook: Path) -> dict[str, str]:
    """`grade_id -> source` of the release notebook's solution cells: the stubs the students were given."""
    return solution_code(nbformat.read(release_notebook, as_version=4))


def handed_in_notebook(folder: Path, assignment: str) -> Path | None:
    """The notebook grading would take from a student's assignment folder (None when there is none), found
    read-only and never through a link."""
    expected = folder / f"{assignment}.ipynb"
    again = re_uploads(folder, expected)
    if again:
        return max(again, key=again.get)
    if handin.is_real_file(expected):
        return expected
    others = notebooks_in(folder)
    return others[0] if len(others) == 1 else None


def read_notebook(path: Path):
    """The notebook at `path`, or None when it is no valid notebook (grading gives it 0; nothing to compare)."""
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, nbformat.reader.NotJSONError, ValueError, KeyError,
            TypeError, AttributeError):
        return None


def class_solutions(root: Path, assignments: list[str]) -> tuple[list[Solution], list[str]]:
    """Every solution cell handed in under `root/submitted` for `assignments`, and a note for each hand-in that
    gave nothing to compare (a link, no notebook, not a notebook)."""
    solutions, notes = [], []
    for hand in sorted(handin.hand_ins(root, assignments), key=lambda h: (h.student, assignments.index(h.assignment))):
        if hand.link:
            notes.append(f"{hand.student} / {hand.assignment}: {hand.link}")
            continue
        if not hand.folder.is_dir():
            continue
        path = handed_in_notebook(hand.folder, hand.assignment)
        notebook = read_notebook(path) if path else None
        if notebook is None:
            notes.append(f"{hand.student} / {hand.assignment}: no readable notebook, nothing compared")
            continue
        solutions += [Solution(hand.student, hand.assignment, exercise, code)
                      for exercise, code in solution_code(notebook).items()]
    return solutions, notes


def reference_files(folders: list[Path]) -> tuple[list[ReferenceFile], list[str]]:
    """The `.py` files and notebooks (their code cells) under each folder, real files only: a link there is not
    followed either. Returns the files and a note for each link met."""
    files, notes = [], []
    for folder in folders:
        if not folder.is_dir() or handin.is_link(folder):
            notes.append(f"--reference {folder}: not a folder (a link is not followed)")
            continue
        relatives, links = handin.real_files(folder)
        notes += [f"--reference {folder.name}: {note}" for note in links]
        for relative in relatives:
            path = folder / relative
            if path.suffix == ".py":
                code = path.read_text(errors="replace")
            elif path.suffix == ".ipynb":
                notebook = read_notebook(path)
                code = "" if notebook is None else "\n\n".join(
                    cell.source for cell in notebook.cells if cell.cell_type == "code")
            else:
                continue
            if code.strip():
                files.append(ReferenceFile(f"{folder.name}/{relative}", code))
    return files, notes
