"""Carry-over: a later notebook gets the student's own earlier definitions, or the reference while grading."""
from pathlib import Path

import nbformat
import pytest
import torch

from autograder.demo.submissions import answered, solution_sources
from autograder.paths import RELEASE, SOURCE, notebook_path
from course.carryover import EarlierNotebookMissing, EarlierWorkUnfinished, from_earlier


def place(folder: Path, assignment: str, notebook) -> Path:
    """Write `notebook` as `folder/<assignment>/<assignment>.ipynb` and return that folder's parent."""
    target = notebook_path(folder, assignment)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return folder


def solved(assignment: str, edits=None):
    return answered(notebook_path(RELEASE, assignment), solution_sources(notebook_path(SOURCE, assignment)), edits)


@pytest.fixture
def next_door(tmp_path, monkeypatch):
    """Work from `tmp_path/04_attention_block/`, as a notebook in the folder beside the earlier ones."""
    here = tmp_path / "04_attention_block"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return tmp_path


def test_the_students_own_definition_is_used(next_door):
    place(next_door, "03_masking", solved("03_masking",
                                          {"causal_mask": [("key_position <= query_position", "key_position < query_position")]}))
    causal_mask = from_earlier("03_masking", "causal_mask")
    assert causal_mask.__module__ == "earlier_03_masking"
    assert not causal_mask(3).diagonal().any(), "the student's own (here: wrong) mask should be the one used"


def test_several_names_come_back_as_a_tuple(next_door):
    place(next_door, "03_masking", solved("03_masking"))
    causal_mask, padding_mask = from_earlier("03_masking", "causal_mask", "padding_mask")
    assert padding_mask(torch.tensor([1, 2]), 3).shape == (2, 1, 3) and causal_mask(2).all(-1)[-1]


def test_only_definitions_run(next_door):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%pip install nothing"),
        nbformat.v4.new_code_cell("import math\ndef causal_mask(T_q):\n    return math.pi\nraise RuntimeError('ran')"),
        nbformat.v4.new_code_cell("train_for_an_hour()"),
    ])
    place(next_door, "03_masking", notebook)
    assert from_earlier("03_masking", "causal_mask")(1) == pytest.approx(3.14159, abs=1e-5)


def test_a_missing_notebook_says_which_to_finish(next_door):
    with pytest.raises(EarlierNotebookMissing, match="03_masking.ipynb") as error:
        from_earlier("03_masking", "masked_attention")
    assert "Finish notebook 03_masking first" in str(error.value)


def test_an_unwritten_definition_says_so(next_door):
    place(next_door, "03_masking", nbformat.read(notebook_path(RELEASE, "03_masking"), as_version=4))
    with pytest.raises(EarlierWorkUnfinished, match="not written yet"):
        from_earlier("03_masking", "masked_attention")


def test_a_notebook_uploaded_beside_this_one_is_found(next_door):
    nbformat.write(solved("03_masking"), Path.cwd() / "03_masking.ipynb")  # Colab: everything in one folder
    assert from_earlier("03_masking", "causal_mask")(2).shape == (2, 2)


def test_under_grading_the_reference_stands_in(next_door, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert from_earlier("03_masking", "masked_attention").__module__ == "autograder.authoring.reference.masking"


@pytest.mark.parametrize("grading", [False, True], ids=["working", "graded"])
def test_notebook_04_runs_on_the_students_own_03_and_on_the_reference_when_graded(tmp_path, grading):
    """04 next to a 03 whose masked_attention ignores the mask: working, the 04 check sees that mistake;
    graded, the reference stands in and 04 earns its points."""
    from tests.notebooks import execute, grade_id, text_of

    place(tmp_path, "03_masking", solved("03_masking", {"masked_attention": [("if mask is not None:", "if False:")]}))
    place(tmp_path, "04_attention_block", solved("04_attention_block"))
    notebook, _ = execute(notebook_path(tmp_path, "04_attention_block"), grading=grading, allow_errors=True)
    carried = next(c for c in notebook.cells if grade_id(c) == "carryover")
    assert not any(o.output_type == "error" for o in carried.outputs), text_of(carried)
    check = next(c for c in notebook.cells if grade_id(c) == "check_multi_head_attention")
    failed = any(o.output_type == "error" for o in check.outputs)
    assert failed is not grading, text_of(check)
