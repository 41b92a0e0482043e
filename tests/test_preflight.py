"""Preflight, on its own (no nbgrader run): which file of a student's folder is graded, which notebook it is, and
which changes are the student's. The whole term (tests/test_term.py) shows the same through real grading."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import compute_checksum

from autograder.handins import preflight
from autograder.grading.engine import not_a_student, students_in
from autograder.paths import RELEASE, notebook_path

MASKING = "03_masking"
RELEASED = notebook_path(RELEASE, MASKING)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "submitted" / "student" / MASKING
    folder.mkdir(parents=True)
    return folder


def _check(folder: Path) -> preflight.Preflight:
    return preflight.check(folder, f"{MASKING}.ipynb", RELEASED)


def _with_marker(text: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(RELEASED, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(text))
    return notebook


def _cell(notebook, grade_id: str):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_a_numbered_re_upload_is_graded_and_the_first_hand_in_kept(tmp_path):
    folder = _folder(tmp_path)
    nbformat.write(_with_marker("first"), folder / f"{MASKING}.ipynb")
    nbformat.write(_with_marker("third"), folder / f"{MASKING}-3.ipynb")
    nbformat.write(_with_marker("second"), folder / f"{MASKING}-2.ipynb")
    found = _check(folder)
    assert found.fatal == "" and f"handed in again as {MASKING}-3.ipynb; graded that one" in found.notes
    assert "third" in (folder / f"{MASKING}.ipynb").read_text()
    assert "first" in (folder / f"{MASKING}.ipynb.earlier").read_text(), "the first hand-in is kept, not overwritten"

    nbformat.write(_with_marker("fourth"), folder / f"{MASKING} (4).ipynb")  # a browser's name for a new download
    _check(folder)
    assert "fourth" in (folder / f"{MASKING}.ipynb").read_text()
    assert sorted(p.name for p in folder.glob("*.earlier*")) == [f"{MASKING}.ipynb.earlier"], \
        "the grader's own copy of a re-upload is no hand-in to keep"


def test_without_a_re_upload_the_notebook_is_graded_as_it_is_and_others_are_named(tmp_path):
    folder = _folder(tmp_path)
    nbformat.write(_with_marker("only"), folder / f"{MASKING}.ipynb")
    nbformat.write(_with_marker("scratch"), folder / "my scratch.ipynb")
    before = (folder / f"{MASKING}.ipynb").read_bytes()
    assert _check(folder).notes == ["also in the folder, not graded: my scratch.ipynb"]
    assert (folder / f"{MASKING}.ipynb").read_bytes() == before


def test_a_lone_notebook_under_another_name_is_graded_every_time_without_a_false_note(tmp_path):
    folder = _folder(tmp_path)
    nbformat.write(_with_marker("mine"), folder / "my work.ipynb")
    assert _check(folder).notes == [f"handed in as my work.ipynb; graded as {MASKING}.ipynb"]
    assert _check(folder).notes == [], "the second run sees the grader's own copy: nothing to say"


@pytest.mark.parametrize("name, number", [("03_masking.ipynb", 0), ("03_masking-12.ipynb", 12),
                                          ("03_masking (2).ipynb", 2), ("03_masking_v2.ipynb", None),
                                          ("01_positional_encoding-1.ipynb", None)])
def test_upload_numbers(name, number):
    assert preflight.upload_number(Path(name), MASKING) == number


def test_another_assignments_notebook_is_named_once(tmp_path):
    folder = _folder(tmp_path)
    shutil.copyfile(notebook_path(RELEASE, "01_positional_encoding"), folder / f"{MASKING}.ipynb")
    found = _check(folder)
    assert found.fatal == "this is notebook 01_positional_encoding, not 03_masking: graded 0; ask for 03_masking.ipynb"
    assert found.notes == []


def test_points_and_tests_as_an_earlier_release_gave_them_are_not_the_students_change(tmp_path):
    """An earlier release made hidden_causal_mask worth 3 and its test said something else: its checksum matches."""
    folder = _folder(tmp_path)
    notebook = nbformat.read(RELEASED, as_version=4)
    test_cell, answer_cell = _cell(notebook, "hidden_causal_mask"), _cell(notebook, "q3_mask_before_softmax")
    test_cell.metadata.nbgrader["points"] = 3
    test_cell.source += "\n# an earlier version of this test"
    test_cell.metadata.nbgrader["checksum"] = compute_checksum(test_cell)
    answer_cell.metadata.nbgrader["points"] = 4
    answer_cell.metadata.nbgrader["checksum"] = compute_checksum(answer_cell)
    answer_cell.source = "My answer: the mask acts on the scores."
    nbformat.write(notebook, folder / f"{MASKING}.ipynb")
    assert _check(folder).notes == []


def test_points_and_tests_the_student_changed_are_reported(tmp_path):
    folder = _folder(tmp_path)
    notebook = nbformat.read(RELEASED, as_version=4)
    _cell(notebook, "hidden_causal_mask").metadata.nbgrader["points"] = 30
    _cell(notebook, "q3_mask_before_softmax").metadata.nbgrader["points"] = 20
    _cell(notebook, "check_padding_mask").source = "pass"
    nbformat.write(notebook, folder / f"{MASKING}.ipynb")
    notes = _check(folder).notes
    assert "the points of 'hidden_causal_mask' were changed from 2 to 30; restored" in notes
    assert "the points of 'q3_mask_before_softmax' were changed from 2 to 20; restored" in notes
    assert "the locked cell 'check_padding_mask' was edited; the original restored" in notes


def test_stray_folders_are_no_students(tmp_path):
    for name in ("alice", "__MACOSX", ".ipynb_checkpoints", "bob"):
        (tmp_path / "submitted" / name).mkdir(parents=True)
    assert students_in(tmp_path) == ["alice", "bob"]
    assert not_a_student("__MACOSX") == "a Mac's zip metadata" and not_a_student("alice") == ""


def _marker(path: Path) -> str:
    return nbformat.read(path, as_version=4).cells[-1].source


def test_a_notebook_that_is_a_link_is_never_graded_nor_written_through(tmp_path):
    """Links handed in as notebooks (autograder.handins.handin): the expected name linked to a classmate's notebook, or
    dangling into the grader's folder, with the student's own notebook under another name; a "re-upload" that is
    a link beside a real hand-in. The student's real notebook is graded; no link's target is read or written."""
    classmate = tmp_path / "submitted" / "classmate" / MASKING / f"{MASKING}.ipynb"
    classmate.parent.mkdir(parents=True)
    nbformat.write(_with_marker("the classmate's"), classmate)

    linked = _folder(tmp_path)
    (linked / f"{MASKING}.ipynb").symlink_to(classmate)
    nbformat.write(_with_marker("mine"), linked / "my masking.ipynb")
    result = _check(linked)
    assert not result.fatal and not (linked / f"{MASKING}.ipynb").is_symlink()
    assert _marker(linked / f"{MASKING}.ipynb") == "mine" and _marker(classmate) == "the classmate's"

    dangling = tmp_path / "other" / MASKING
    dangling.mkdir(parents=True)
    (dangling / f"{MASKING}.ipynb").symlink_to(tmp_path / "grader" / "planted.ipynb")
    nbformat.write(_with_marker("mine"), dangling / "my masking.ipynb")
    assert not _check(dangling).fatal and not (tmp_path / "grader" / "planted.ipynb").exists()
    assert _marker(dangling / f"{MASKING}.ipynb") == "mine"

    again = tmp_path / "again" / MASKING
    again.mkdir(parents=True)
    nbformat.write(_with_marker("mine"), again / f"{MASKING}.ipynb")
    (again / f"{MASKING}-1.ipynb").symlink_to(classmate)
    assert not _check(again).fatal and _marker(again / f"{MASKING}.ipynb") == "mine"

    alone = tmp_path / "alone" / MASKING
    alone.mkdir(parents=True)
    (alone / f"{MASKING}.ipynb").symlink_to(classmate)
    assert _check(alone).fatal == f"no notebook named {MASKING}.ipynb was handed in: graded 0"


def test_a_notebook_saved_without_cell_ids_is_read_without_a_warning(tmp_path):
    """Older Jupyter front ends save nbformat 4.5 cells without ids: nbformat gives them ids, and its
    MissingIDFieldWarning reached the instructor's terminal on every grading run."""
    import warnings

    from autograder.handins.preflight import _read

    saved = json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])))
    for cell in saved["cells"]:
        del cell["id"]
    path = tmp_path / "01_positional_encoding.ipynb"
    path.write_text(json.dumps(saved))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        notebook, why = _read(path)
    assert why == "" and notebook.cells[0].source == "x = 1" and notebook.cells[0].id
