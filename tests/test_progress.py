"""`course.progress()`: per notebook and exercise, whether the visible checks pass, from the student's saved
notebooks, without running anything but their definitions."""
from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest
import torch

import course
from autograder.demo.submissions import write_submission
from autograder.paths import RELEASE, SOURCE, notebook_path
from course.about import NOTEBOOKS, snake_case
from course.progress import (FAILED, MISSING, NOT_CHECKED, NOT_WRITTEN, PASSED, as_html, as_text, as_widget,
                             check_notebooks, exercises, resolve)
from tests.notebooks import execute, grade_id

# Cells a student might add after solving: run, they would leave a file behind or stop everything.
TRAINING_CELLS = [
    "from pathlib import Path\nPath('training_ran.txt').write_text('this cell ran')",
    "losses = train_for_an_hour()\nraise SystemExit('a training cell ran')",
]


def hand_in(folder: Path, assignment: str, student: str) -> Path:
    """`folder/<assignment>/<assignment>.ipynb` as `student` wrote it ("release": untouched)."""
    target = notebook_path(folder, assignment)
    release = notebook_path(RELEASE, assignment)
    if student == "release":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(release.read_text())
    else:
        write_submission(student, release, notebook_path(SOURCE, assignment), target)
    return target


def statuses(results) -> dict[str, dict[str, str]]:
    return {r.assignment: {e.exercise: e.status for e in r.exercises} for r in results}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """01 untouched, 02 and 03 with known mistakes (03's masked_attention unwritten), 04 untouched, 05-07 missing."""
    folder = tmp_path_factory.mktemp("mixed")
    for assignment, student in [("01_positional_encoding", "release"), ("02_attention", "demo_partial"),
                                ("03_masking", "demo_partial"), ("04_attention_block", "release")]:
        hand_in(folder, assignment, student)
    return folder


def test_exercises_are_the_check_cells_of_each_notebook():
    """One truth: course.checks' check functions, in order, are exactly what the notebooks' check cells call."""
    for assignment in NOTEBOOKS:
        cells = [c for c in nbformat.read(notebook_path(RELEASE, assignment), as_version=4).cells
                 if (grade_id(c) or "").startswith("check_")]
        assert [(grade_id(c), c.source.strip()) for c in cells] == \
            [(f"check_{snake_case(name)}", f"check_{snake_case(name)}({name})") for name, _ in exercises(assignment)]


def test_notebook_names_resolve():
    assert resolve(()) == list(NOTEBOOKS)
    assert resolve(("04", "01_positional_encoding", 3, "masking")) == \
        ["01_positional_encoding", "03_masking", "04_attention_block"]
    with pytest.raises(ValueError, match="the notebooks are 01_positional_encoding"):
        resolve(("08",))
    with pytest.raises(TypeError, match="course.progress_bar.progress"):
        resolve((range(10), "training"))  # the training bar's old call says where the bar went


def test_passed_failed_not_written_not_checked_and_missing(mixed, monkeypatch):
    monkeypatch.chdir(mixed / "02_attention")  # as a notebook open beside the others
    rng = torch.random.get_rng_state()
    results = check_notebooks(bar=False)
    assert torch.equal(rng, torch.random.get_rng_state()), "checking moved the notebook's random numbers"
    assert statuses(results) == {
        "01_positional_encoding": {"positional_encoding": NOT_WRITTEN, "offset_rotation": NOT_WRITTEN,
                                   "TokenAndPositionEmbedding": NOT_WRITTEN},
        "02_attention": {"attention": FAILED},
        "03_masking": {"causal_mask": FAILED, "padding_mask": PASSED, "masked_attention": NOT_WRITTEN},
        # 04 carries 03's masked_attention over, which is unwritten: nothing of 04 can run yet.
        "04_attention_block": dict.fromkeys(["MultiHeadAttention", "LayerNorm", "FeedForward", "TransformerBlock"],
                                            NOT_CHECKED),
        **{a: dict.fromkeys([name for name, _ in exercises(a)], MISSING) for a in list(NOTEBOOKS)[4:]},
    }
    by_name = {r.assignment: r for r in results}
    attention = by_name["02_attention"].exercises[0]
    assert attention.summary.startswith("attention: ") and "query axis" in attention.summary  # the named mistake
    assert "masked_attention" in by_name["04_attention_block"].problem and "03_masking" in by_name["04_attention_block"].problem
    assert "05_transformer.ipynb is not next to this notebook" in by_name["05_transformer"].problem


def test_a_solved_course_passes_without_running_training_cells(tmp_path, monkeypatch):
    for assignment in NOTEBOOKS:
        path = hand_in(tmp_path, assignment, "demo_perfect")
        notebook = nbformat.read(path, as_version=4)
        notebook.cells.extend(nbformat.v4.new_code_cell(source) for source in TRAINING_CELLS)
        nbformat.write(notebook, path)
    monkeypatch.chdir(tmp_path / "07_shakespeare")
    started = time.perf_counter()
    results = check_notebooks(bar=False)
    seconds = time.perf_counter() - started
    print(f"progress of a solved course: {seconds:.1f} s; slowest: " + ", ".join(
        f"{e.exercise} {e.seconds:.1f} s" for e in sorted((e for r in results for e in r.exercises),
                                                           key=lambda e: -e.seconds)[:3]))
    assert all(e.status == PASSED for r in results for e in r.exercises), as_text(results)
    assert sum(len(r.exercises) for r in results) == sum(len(exercises(a)) for a in NOTEBOOKS)
    assert not list(tmp_path.rglob("training_ran.txt")), "a training cell ran"


def test_an_error_in_the_students_code_and_a_deleted_definition(tmp_path, monkeypatch):
    path = hand_in(tmp_path, "01_positional_encoding", "demo_perfect")
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if grade_id(cell) == "positional_encoding":
            cell.source = "def positional_encoding(max_len, d_model):\n    raise RuntimeError('my own bug')"
    notebook.cells = [c for c in notebook.cells if grade_id(c) != "token_and_position_embedding"]
    nbformat.write(notebook, path)
    monkeypatch.chdir(tmp_path)
    (result,) = check_notebooks(["01_positional_encoding"], bar=False)
    raised, rotation, deleted = result.exercises
    assert raised.status == FAILED and raised.summary.endswith("RuntimeError: my own bug")
    assert "traceback" not in raised.summary  # the table has none to point at
    assert rotation.status == PASSED
    assert deleted.status == NOT_WRITTEN and "defines no `TokenAndPositionEmbedding`" in deleted.summary


def test_a_lone_notebook_in_colab_style_folder(tmp_path, monkeypatch):
    """Colab: notebooks uploaded side by side into one folder (`./<assignment>.ipynb`)."""
    hand_in(tmp_path / "nested", "01_positional_encoding", "demo_perfect").rename(tmp_path / "01_positional_encoding.ipynb")
    monkeypatch.chdir(tmp_path)
    (first, second) = check_notebooks(["01_positional_encoding", "02_attention"], bar=False)
    assert [e.status for e in first.exercises] == [PASSED, PASSED, PASSED]
    assert [e.status for e in second.exercises] == [MISSING] and second.path is None


def test_the_table_prints_outside_a_notebook(mixed, monkeypatch, capsys):
    monkeypatch.chdir(mixed / "01_positional_encoding")
    course.progress("02", "03")
    shown = capsys.readouterr().out
    assert "02_attention: 0/1 passed" in shown and "03_masking: 1/3 passed" in shown
    assert "✘ attention" in shown and "⏳ masked_attention" in shown and "✔ padding_mask" in shown
    assert "checking: 100%" in shown  # the progress bar, on stdout like the course's other bars
    assert "01_positional_encoding" not in shown.split("checking: 100%")[-1]  # only the notebooks asked for
    assert "1 of 4 exercises pass their checks" in shown


def test_html_table_escapes_and_shows_details(mixed, monkeypatch):
    monkeypatch.chdir(mixed)
    results = check_notebooks(["02_attention", "05_transformer"], bar=False)
    page = as_html(results)
    assert page.count("<table>") == 2 and "<details>" in page and "known mistake" in page
    assert "<code>DecoderOnlyTransformer</code>" in page and "notebook missing" in page


def test_the_widget_builds_and_checks_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    attention = hand_in(tmp_path, "02_attention", "demo_partial")
    results = check_notebooks(["01_positional_encoding", "02_attention"], bar=False)
    accordion = as_widget(results)
    assert accordion.titles == ("∅ 01_positional_encoding: notebook missing", "✘ 02_attention: 0/1 passed")
    assert accordion.selected_index == 1  # the first notebook with something to do opens
    table, again = accordion.children[1].children
    assert "✘ failed" in table.value and again.description == "Check again"
    hand_in(tmp_path, "02_attention", "demo_perfect")  # the student fixes it and saves
    later = time.time() + 5
    os.utime(attention, (later, later))  # a new modification time, however coarse the file system's clock
    again.click()
    assert accordion.titles[1] == "✔ 02_attention: 1/1 passed" and "✔ passed" in table.value
    assert "application/vnd.jupyter.widget-view+json" in accordion._repr_mimebundle_()


def test_in_a_live_kernel_it_shows_a_widget_with_a_table_for_other_viewers(mixed):
    scratch = mixed / "03_masking" / "scratch.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import course\ncourse.progress(3)")]),
                   scratch)
    notebook, _ = execute(scratch, grading=False)
    (shown,) = [o for o in notebook.cells[0].outputs if o.output_type == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in shown.data
    assert "<table>" in shown.data["text/html"] and "03_masking: 1/3 passed" in shown.data["text/plain"]


def test_under_grading_it_checks_nothing(mixed, monkeypatch, capsys):
    monkeypatch.chdir(mixed / "02_attention")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    course.progress()
    assert "does nothing while nbgrader runs the notebook" in capsys.readouterr().out
