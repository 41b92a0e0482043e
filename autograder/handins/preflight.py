"""Look at a handed-in notebook before nbgrader runs it: what can be repaired is, and everything is reported.

nbgrader itself restores a deleted graded cell, a changed cell type, changed points and an edited test cell
from the gradebook, silently. The instructor should still hear about it, so each of these becomes a line of
the submission's reason. What nbgrader cannot handle, preflight repairs first: a notebook handed in under
another name is graded under its own; a graded cell that appears twice keeps its label on the first copy only;
a cell with a label the assignment does not have loses it (nbgrader then restores the cell it replaced).
A file that is not a notebook, or another assignment's notebook, cannot be graded: the reason says so once and
the grade is zero. A re-upload beside an earlier hand-in (`03_masking-2.ipynb`, `03_masking (1).ipynb`) is the
one graded. A cell as an earlier release gave it (its nbgrader checksum still matches) is no student's change.
A notebook that is a link is no notebook handed in: it is never read, and nothing is written through it
(autograder.handins.handin).
"""
from __future__ import annotations

import copy
import itertools
import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.utils import compute_checksum

from autograder.handins import handin


REPAIRED = ".handed-in"  # the suffix of the hand-in as it was, kept beside the notebook preflight repaired


@dataclass
class Preflight:
    fatal: str = ""  # why the notebook cannot be graded at all ("" when it can)
    notes: list[str] = field(default_factory=list)  # what was found (and repaired) in a gradable notebook


def nbgrader_metadata(cell) -> dict:
    """A cell's nbgrader metadata (grade_id, solution, points...), {} where it has none."""
    return cell.metadata.get("nbgrader", {})


def _graded_cells(notebook) -> dict[str, object]:
    return {nbgrader_metadata(c)["grade_id"]: c for c in notebook.cells if nbgrader_metadata(c).get("grade_id")}


def _with_cell_ids(raw):
    """The notebook's JSON with an id for every cell nbformat 4.5 wants one for and that was saved without one (an
    older front end's save): nbformat would add them itself, with a MissingIDFieldWarning on every grading run."""
    if not (isinstance(raw, dict) and raw.get("nbformat") == 4 and raw.get("nbformat_minor", 0) >= 5):
        return raw
    cells = [cell for cell in raw.get("cells", []) if isinstance(cell, dict)]
    taken = {cell.get("id") for cell in cells}
    for index, cell in enumerate(cells):
        if "id" not in cell:
            cell["id"] = next(name for n in itertools.count() if (name := f"cell-{index}-{n}") not in taken)
            taken.add(cell["id"])
    return raw


def _read(path: Path) -> tuple[object | None, str]:
    try:
        raw = _with_cell_ids(json.loads(path.read_text()))
        notebook = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(notebook)
    except json.JSONDecodeError as exc:
        return None, (f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}): graded 0; "
                      "ask for a new upload")
    except UnicodeDecodeError:
        return None, f"{path.name} is not a text file: graded 0; ask for a new upload"
    except Exception as exc:  # noqa: BLE001: nbformat's validation errors vary by version
        return None, f"{path.name} is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]}): graded 0"
    return notebook, ""


def upload_number(path: Path, stem: str) -> int | None:
    """Which upload of `stem` the file is: 0 for `stem.ipynb`, N for `stem-N.ipynb` or `stem (N).ipynb` (how learning
    platforms and browsers name a file uploaded or downloaded again), None for any other name."""
    found = re.fullmatch(rf"{re.escape(stem)}(?:-(\d+)| \((\d+)\))?\.ipynb", path.name)
    return None if found is None else int(found.group(1) or found.group(2) or 0)


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks handed in in `folder`, sorted: real files only, never a link."""
    return sorted(p for p in folder.glob("*.ipynb") if handin.is_real_file(p)) if folder.is_dir() else []


def _put(source: Path, expected: Path) -> None:
    """Copy `source` to `expected`; a link there is replaced, never written through."""
    if handin.is_link(expected):
        expected.unlink()
    shutil.copyfile(source, expected)


def re_uploads(folder: Path, expected: Path) -> dict[Path, int]:
    """The numbered re-uploads of `expected` in `folder` (`03_masking-2.ipynb` -> 2)."""
    numbered = {path: upload_number(path, expected.stem) for path in notebooks_in(folder)}
    return {path: number for path, number in numbered.items() if number}


def latest_upload(expected: Path, again: dict[Path, int]) -> tuple[Path, str]:
    """The newest of the re-uploads `again` (highest number) becomes `expected`; an earlier hand-in under that name
    is kept beside it as `<name>.earlier` unless it is already a copy of one of them."""
    newest = max(again, key=again.get)
    note = f"handed in again as {newest.name}; graded that one"
    if handin.is_real_file(expected):
        graded = graded_bytes(expected)
        if newest.read_bytes() in graded:
            return expected, note
        if not any(path.read_bytes() in graded for path in again):
            shutil.move(expected, _free_name(expected.with_name(expected.name + ".earlier")))
        expected.with_name(expected.name + REPAIRED).unlink(missing_ok=True)
    _put(newest, expected)
    return expected, note


def graded_bytes(graded: Path) -> set[bytes]:
    """The notebook `graded` as it is and, when preflight repaired it, as it was handed in: a file with either
    content is that hand-in, not another."""
    before_repair = graded.with_name(graded.name + REPAIRED)
    return {graded.read_bytes()} | ({before_repair.read_bytes()} if handin.is_real_file(before_repair) else set())


def _free_name(path: Path) -> Path:
    number, candidate = 1, path
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}-{number}")
    return candidate


def find_notebook(folder: Path, expected: Path) -> tuple[Path | None, str]:
    """The notebook to grade in a student's assignment folder, and a note when it had another name."""
    again = re_uploads(folder, expected)
    if again:
        return latest_upload(expected, again)
    if handin.is_real_file(expected):
        return expected, ""
    others = [path for path in notebooks_in(folder) if path != expected]
    if len(others) == 1:
        _put(others[0], expected)
        return expected, f"handed in as {others[0].name}; graded as {expected.name}"
    if not others:
        return None, f"no notebook named {expected.name} was handed in: graded 0"
    return None, (f"no notebook named {expected.name}, and {len(others)} others "
                  f"({', '.join(p.name for p in others)}): graded 0; ask which one to grade")


def _as_released(cell, original) -> bool:
    """Whether `cell` is as some release gave it, though the current one (`original`) differs: the nbgrader checksum
    in its metadata still matches it, or, for an answer cell (whose source is the student's), matches the current
    cell with its points."""
    stored = nbgrader_metadata(cell).get("checksum")
    candidates = [cell]
    if nbgrader_metadata(original).get("solution"):
        candidates.append(copy.deepcopy(original))
        candidates[-1].metadata.nbgrader["points"] = nbgrader_metadata(cell).get("points", 0)
    try:
        return bool(stored) and stored in {compute_checksum(candidate) for candidate in candidates}
    except (KeyError, TypeError, ValueError):  # metadata too damaged to be a release's
        return False


def other_assignment(notebook, released, release_notebook: Path) -> str:
    """The assignment whose notebook this is, when it is another one than `released` (the notebook read from
    `release_notebook`): "" unless it has none of this assignment's graded cells and some of another one's."""
    handed = _answer_and_test_cells(notebook)
    if not handed or handed & _answer_and_test_cells(released):
        return ""
    for other in sorted(release_notebook.parent.parent.glob("*/*.ipynb")):
        if other != release_notebook and handed & _answer_and_test_cells(nbformat.read(other, as_version=4)):
            return other.stem
    return ""


def _answer_and_test_cells(notebook) -> set[str]:
    """The grade ids of the cells that are an assignment's own (answers and tests; `setup` and the like recur)."""
    return {grade_id for grade_id, cell in _graded_cells(notebook).items()
            if nbgrader_metadata(cell).get("grade") or nbgrader_metadata(cell).get("solution")}


def check(folder: Path, expected_name: str, release_notebook: Path) -> Preflight:
    """Check (and where needed repair) the submission in `folder` against the notebook the student was given."""
    result = Preflight()
    path, note = find_notebook(folder, folder / expected_name)
    if path is None:
        result.fatal = note
        return result
    if note:
        result.notes.append(note)
    graded = graded_bytes(path)
    ignored = [other.name for other in notebooks_in(folder) if other != path
               and upload_number(other, path.stem) is None and other.read_bytes() not in graded]
    if ignored:
        result.notes.append(f"also in the folder, not graded: {', '.join(ignored)}")
    notebook, fatal = _read(path)
    if notebook is None:
        result.fatal = fatal
        return result
    released = nbformat.read(release_notebook, as_version=4)
    given = _graded_cells(released)
    other = other_assignment(notebook, released, release_notebook)
    if other:
        result.fatal = (f"this is notebook {other}, not {release_notebook.stem}: graded 0; "
                        f"ask for {release_notebook.name}")
        return result
    counts = Counter(filter(None, (nbgrader_metadata(c).get("grade_id") for c in notebook.cells)))
    repaired = False
    for grade_id, count in counts.items():
        if count > 1:
            result.notes.append(f"graded cell '{grade_id}' appears {count} times; the first one counts")
            for cell in [c for c in notebook.cells if nbgrader_metadata(c).get("grade_id") == grade_id][1:]:
                del cell.metadata["nbgrader"]
            repaired = True
    for cell in notebook.cells:
        grade_id = nbgrader_metadata(cell).get("grade_id")
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
        points, given_points = nbgrader_metadata(cell).get("points"), nbgrader_metadata(original).get("points")
        if nbgrader_metadata(original).get("grade") and points != given_points and not _as_released(cell, original):
            result.notes.append(f"the points of '{grade_id}' were changed from {given_points} to {points}; restored")
        if (nbgrader_metadata(original).get("locked") and cell.source != original.source
                and not _as_released(cell, original)):
            result.notes.append(f"the locked cell '{grade_id}' was edited; the original restored")
    if repaired:
        shutil.copyfile(path, path.with_name(path.name + REPAIRED))
        nbformat.write(notebook, path)
    return result
