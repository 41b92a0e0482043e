"""Solutions from the wild and loop-based solutions (issues 11.6, 17.2), graded end to end as one class.

Each student of `tests/wild` hands in the release notebooks with the solution cells it covers filled in; one
`python -m autograder grade --jobs 2` run (real nbgrader, guarded kernels, the grader's own verdicts) grades
them all. A covered exercise earns every autograded point of its graded cells (`check_<exercise>`,
`hidden_<exercise>`), unless the source declares it a named mistake: code genuinely wrong for the exercise API,
which must lose the points of exactly the cells it names. Exercises a source does not cover keep their stubs and
are not asserted on. Written answers are graded by hand and not looked at here.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.nbgrader_run import nbgrader
from autograder.paths import notebook_path
from course.about import NOTEBOOKS
from tests import wild
from tests.wild import noisy
from tests.conftest import copy_course, run_autograder
from tests.notebooks import grade_id, text_of

STUDENTS = wild.students()


class Corpus(NamedTuple):
    root: Path
    filled: dict  # (student, assignment) -> grade_ids of the solution cells it filled
    scores: dict  # (student, assignment) -> {graded code cell: (auto_score, max_score)}
    messages: dict  # (student, assignment, graded cell) -> what the autograded cell showed
    streams: dict  # (student, assignment, graded cell) -> {"stdout": text, "stderr": text}, whole


def _exercises_of(assignment: str) -> list[str]:
    return wild.solution_cells(notebook_path(Path(__file__).resolve().parent.parent / "release", assignment))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    root = copy_course(tmp_path_factory.mktemp("wild") / "course")
    nbgrader("generate_assignment", "--force", "*", root=root, quiet=True)  # records them in gradebook.db
    filled = {}
    for name, student in STUDENTS.items():
        for assignment in NOTEBOOKS:
            if not set(student.cells) & set(_exercises_of(assignment)):
                continue  # nothing of this notebook is covered: nothing handed in
            filled[(name, assignment)] = wild.write_submission(
                student, notebook_path(root / "release", assignment),
                notebook_path(root / "submitted" / name, assignment))
    result = run_autograder(root, "grade", "--jobs", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    scores, messages, streams = {}, {}, {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student, assignment in filled:
            for notebook in gb.find_submission(assignment, student).notebooks:
                scores[(student, assignment)] = {
                    g.name: (g.auto_score, g.max_score) for g in notebook.grades if g.cell_type == "code"}
    for student, assignment in filled:
        autograded = notebook_path(root / "autograded" / student, assignment)
        if autograded.exists():
            for cell in nbformat.read(autograded, as_version=4).cells:
                if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
                    messages[(student, assignment, grade_id(cell))] = _shown(cell)
                    streams[(student, assignment, grade_id(cell))] = {
                        name: "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == name)
                        for name in ("stdout", "stderr")}
    return Corpus(root, filled, scores, messages, streams)


def _shown(cell) -> str:
    """What a graded cell showed (its end), and what it wrote to stderr: nbgrader scores such a cell as failed."""
    shown = text_of(cell).strip()[-1500:]
    stderr = "".join(o.text for o in cell.get("outputs", []) if o.output_type == "stream" and o.name == "stderr")
    if stderr.strip():
        shown += f"\n[the cell wrote to stderr, which nbgrader scores as a failure: {stderr.strip()[:400]}]"
    return shown


def _cases():
    for student, solution in STUDENTS.items():
        for assignment in NOTEBOOKS:
            for exercise in _exercises_of(assignment):
                if exercise in solution.cells:
                    yield pytest.param(student, assignment, exercise, id=f"{student}-{exercise}")


def _lost(corpus: Corpus, student: str, assignment: str, exercise: str) -> dict:
    """The graded cells of `exercise` that scored below their maximum, with what each showed."""
    table = corpus.scores[(student, assignment)]
    return {cell: corpus.messages.get((student, assignment, cell), "")
            for cell in (f"check_{exercise}", f"hidden_{exercise}") if table[cell][0] < table[cell][1]}


@pytest.mark.parametrize("student, assignment, exercise", list(_cases()))
def test_covered_exercise_scores_as_its_source_deserves(corpus, student, assignment, exercise):
    assert exercise in corpus.filled[(student, assignment)], f"the release of {assignment} has no cell {exercise}"
    lost = _lost(corpus, student, assignment, exercise)
    known = STUDENTS[student].mistakes.get(exercise)
    if known is None:
        assert not lost, f"{student} ({STUDENTS[student].source}) is correct but lost points in {exercise}:\n" + \
            "\n".join(f"--- {cell}:\n{message}" for cell, message in lost.items())
    else:
        assert set(lost) == set(known.loses), (
            f"{student}'s named mistake in {exercise} ({known.why}) should lose {sorted(known.loses)}, "
            f"lost {sorted(lost)}")


def test_the_noisy_student_wrote_to_stderr_in_every_graded_cell_and_it_is_shown(corpus):
    """The `noisy` student's full points above are not for lack of noise: each of its graded cells ran its code,
    which wrote to stderr, and the cell shows those lines as stdout (course/graded_output.py)."""
    cells = {key: shown for key, shown in corpus.streams.items() if key[0] == "noisy"}
    covered = {(a, f"{kind}_{e}") for (s, a), filled in corpus.filled.items() if s == "noisy" for e in filled
               for kind in ("check", "hidden")}
    assert covered and covered <= {(a, cell) for _, a, cell in cells}
    for (_, assignment, cell), shown in cells.items():
        if (assignment, cell) in covered:
            assert noisy.MARKER in shown["stdout"], f"{assignment} {cell} shows no line its code wrote to stderr"
            assert not shown["stderr"], f"{assignment} {cell} still has stderr output: {shown['stderr'][:300]}"


def test_every_source_is_credited_and_covers_something():
    for name, student in STUDENTS.items():
        assert student.source, f"{name} does not say where its code comes from"
        assert student.cells, f"{name} covers no exercise"
        assert set(student.mistakes) <= set(student.cells), f"{name} names a mistake in an exercise it does not cover"


def test_each_exercise_has_a_loop_and_a_host_read_solution():
    every = {exercise for assignment in NOTEBOOKS for exercise in _exercises_of(assignment)}
    for student in ("loops", "loops_item"):
        assert set(STUDENTS[student].cells) == every, f"{student} misses {sorted(every - set(STUDENTS[student].cells))}"
        assert not STUDENTS[student].mistakes, "loop solutions are correct: they must earn every point"
