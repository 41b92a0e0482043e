"""Look at a handed-in notebook before nbgrader runs it: what can be repaired is, and everything is reported.

nbgrader itself restores a deleted graded cell, a changed cell type, changed points and an edited test cell
from the gradebook, silently. The instructor should still hear about it, so each of these becomes a line of
the submission's reason. What nbgrader cannot handle, preflight repairs first: a notebook handed in under
another name is graded under its own; a graded cell that appears twice keeps its label on the first copy only;
a cell with a label the assignment does not have loses it (nbgrader then restores the cell it replaced).
A file that is not a notebook cannot be graded: the reason says so and the grade is zero.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat


@dataclass
class Preflight:
    fatal: str = ""  # why the notebook cannot be graded at all ("" when it can)
    notes: list[str] = field(default_factory=list)  # what was found (and repaired) in a gradable notebook


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _graded_cells(notebook) -> dict[str, object]:
    return {_nbgrader(c)["grade_id"]: c for c in notebook.cells if _nbgrader(c).get("grade_id")}


def _read(path: Path) -> tuple[object | None, str]:
    try:
        json.loads(path.read_text())
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    except json.JSONDecodeError as exc:
        return None, (f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}): graded 0; "
                      "ask for a new upload")
    except UnicodeDecodeError:
        return None, f"{path.name} is not a text file: graded 0; ask for a new upload"
    except Exception as exc:  # noqa: BLE001: nbformat's validation errors vary by version
        return None, f"{path.name} is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]}): graded 0"
    return notebook, ""


def find_notebook(folder: Path, expected: Path) -> tuple[Path | None, str]:
    """The notebook to grade in a student's assignment folder, and a note when it had another name."""
    if expected.exists():
        return expected, ""
    others = sorted(folder.glob("*.ipynb")) if folder.exists() else []
    if len(others) == 1:
        shutil.copyfile(others[0], expected)
        return expected, f"handed in as {others[0].name}; graded as {expected.name}"
    if not others:
        return None, f"no notebook named {expected.name} was handed in: graded 0"
    return None, (f"no notebook named {expected.name}, and {len(others)} others "
                  f"({', '.join(p.name for p in others)}): graded 0; ask which one to grade")


def check(folder: Path, expected_name: str, release_notebook: Path) -> Preflight:
    """Check (and where needed repair) the submission in `folder` against the notebook the student was given."""
    result = Preflight()
    path, note = find_notebook(folder, folder / expected_name)
    if path is None:
        result.fatal = note
        return result
    if note:
        result.notes.append(note)
    notebook, fatal = _read(path)
    if notebook is None:
        result.fatal = fatal
        return result
    given = _graded_cells(nbformat.read(release_notebook, as_version=4))
    counts = Counter(_nbgrader(c).get("grade_id") for c in notebook.cells if _nbgrader(c).get("grade_id"))
    repaired = False
    for grade_id, count in counts.items():
        if count > 1:
            result.notes.append(f"graded cell '{grade_id}' appears {count} times; the first one counts")
            for cell in [c for c in notebook.cells if _nbgrader(c).get("grade_id") == grade_id][1:]:
                del cell.metadata["nbgrader"]
            repaired = True
    for cell in notebook.cells:
        grade_id = _nbgrader(cell).get("grade_id")
        if grade_id and grade_id not in given:
            result.notes.append(f"a cell is labelled '{grade_id}', which is not in the assignment; it earns nothing")
            del cell.metadata["nbgrader"]
            repaired = True
    handed = _graded_cells(notebook)
    for grade_id in given:
        if grade_id not in handed:
            result.notes.append(f"graded cell '{grade_id}' was deleted or relabelled; restored from the assignment")
    for grade_id, cell in handed.items():
        original = given.get(grade_id)
        if original is None:
            continue
        if cell.cell_type != original.cell_type:
            result.notes.append(f"graded cell '{grade_id}' was turned into {cell.cell_type}; restored")
        points, given_points = _nbgrader(cell).get("points"), _nbgrader(original).get("points")
        if _nbgrader(original).get("grade") and points != given_points:
            result.notes.append(f"the points of '{grade_id}' were changed from {given_points} to {points}; restored")
        if _nbgrader(original).get("locked") and cell.source != original.source:
            result.notes.append(f"the locked cell '{grade_id}' was edited; the original restored")
    if repaired:
        shutil.copyfile(path, path.with_suffix(".ipynb.handed-in"))
        nbformat.write(notebook, path)
    return result
