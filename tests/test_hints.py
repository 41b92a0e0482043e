"""Every exercise has two or three progressive hints in collapsed cells right after it, and no hint gives a solution away.

An exercise is a cell that nbgrader marks as a solution (autograded code and manually graded written answers alike).
Its hints live in one locked, ungraded markdown cell with grade_id `hints_<exercise>`, after the exercise and its
`check_`/`hidden_` cells and before the next exercise; each hint is an HTML `<details>` block (closed until
clicked in JupyterLab, Colab and the classic notebook alike) with a `<summary>` title.

The leak rule: every line between `### BEGIN SOLUTION` and `### END SOLUTION` is normalised (a code line loses its
trailing `# comment`; all whitespace and backticks are removed). It is trivial, and not compared, when what is
left is shorter than 12 characters, is `return` followed by a single name (`return x`, `return self.weights`),
or has no letter or digit (lone brackets, blank lines). Every other solution line must not occur, as a substring,
in the notebook's hint text normalised the same way (its HTML tags removed too).
"""
from __future__ import annotations

import re

import nbformat
import pytest

from autograder.paths import RELEASE, SOURCE, notebook_path
from course.about import NOTEBOOKS
from tests.notebooks import grade_id

MIN_LENGTH = 12
DETAILS = re.compile(r"<details(?P<attrs>[^>]*)>\s*<summary>(?P<summary>.*?)</summary>(?P<body>.*?)</details>", re.S)


def _notebook(folder, assignment):
    return nbformat.read(notebook_path(folder, assignment), as_version=4)


def _exercises(notebook) -> list[tuple[int, str]]:
    return [(i, grade_id(c)) for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("solution")]


def _solution_lines(cell) -> list[str]:
    lines, inside = [], False
    for line in cell.source.splitlines():
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def normalise(text: str) -> str:
    return re.sub(r"[\s`]+", "", text)


def is_trivial(normalised: str) -> bool:
    return (len(normalised) < MIN_LENGTH or re.fullmatch(r"return[\w.]*", normalised) is not None
            or not re.search(r"[A-Za-z0-9]", normalised))


def significant_solution_lines(cell) -> list[str]:
    """The solution lines of `cell` that a hint must not contain, normalised."""
    found = []
    for line in _solution_lines(cell):
        if cell.cell_type == "code":
            line = re.sub(r"\s#\s.*$", "", line)  # a trailing comment is explanation, not solution
        normalised = normalise(line)
        if not is_trivial(normalised):
            found.append(normalised)
    return found


def hint_text(notebook) -> str:
    cells = [c for c in notebook.cells if (grade_id(c) or "").startswith("hints_")]
    return normalise(re.sub(r"</?(?:details|summary|b|i|em|strong|code)\b[^>]*>", "", "\n".join(c.source for c in cells)))


def leaked_lines(notebook) -> list[str]:
    hints = hint_text(notebook)
    return [line for _, exercise in _exercises(notebook)
            for line in significant_solution_lines(next(c for c in notebook.cells if grade_id(c) == exercise))
            if line in hints]


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_every_exercise_has_two_or_three_collapsed_hints_after_it(assignment):
    notebook = _notebook(SOURCE, assignment)
    ids = [grade_id(c) for c in notebook.cells]
    exercises = _exercises(notebook)
    assert exercises, "no exercises found"
    problems = []
    for n, (at, exercise) in enumerate(exercises):
        if f"hints_{exercise}" not in ids:
            problems.append(f"{exercise}: no hint cell hints_{exercise}")
            continue
        where = ids.index(f"hints_{exercise}")
        next_exercise = exercises[n + 1][0] if n + 1 < len(exercises) else len(notebook.cells)
        between = {i for i in ids[at + 1: where]}
        if not at < where < next_exercise or not between <= {f"check_{exercise}", f"hidden_{exercise}"}:
            problems.append(f"{exercise}: its hints are not right after it (and its check and hidden tests)")
        cell = notebook.cells[where]
        meta = cell.metadata["nbgrader"]
        if cell.cell_type != "markdown" or not meta.get("locked") or meta.get("grade") or meta.get("solution"):
            problems.append(f"{exercise}: the hint cell must be a locked, ungraded markdown cell, not a solution")
        hints = list(DETAILS.finditer(cell.source))
        if not 2 <= len(hints) <= 3 or cell.source.count("<details") != len(hints):
            problems.append(f"{exercise}: {len(hints)} well-formed hints (<details><summary>...</summary>...</details>)")
        for hint in hints:
            if "open" in hint["attrs"]:
                problems.append(f"{exercise}: a hint is open; every hint starts collapsed")
            if not hint["summary"].strip() or len(normalise(hint["body"])) < 40:
                problems.append(f"{exercise}: a hint without a title or with (almost) no text")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_no_hint_contains_a_solution_line(assignment):
    leaks = leaked_lines(_notebook(SOURCE, assignment))
    assert not leaks, "hints that give away solution lines:\n" + "\n".join(leaks)


def test_the_leak_rule_catches_a_pasted_solution_line():
    notebook = _notebook(SOURCE, "03_masking")
    ids = [grade_id(c) for c in notebook.cells]
    line = next(l for l in _solution_lines(notebook.cells[ids.index("padding_mask")]) if "arange" in l)
    hints = notebook.cells[ids.index("hints_padding_mask")]
    hints.source = hints.source.replace("</details>", f"Try `{line.strip()}`\n</details>", 1)
    assert leaked_lines(notebook), "a solution line pasted into a hint went unnoticed"


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_the_release_keeps_the_hints_as_they_are(assignment):
    source = {grade_id(c): c.source for c in _notebook(SOURCE, assignment).cells if (grade_id(c) or "").startswith("hints_")}
    release = {grade_id(c): c.source for c in _notebook(RELEASE, assignment).cells if (grade_id(c) or "").startswith("hints_")}
    assert release == source, "regenerate the release: python -m autograder release"


def solution_calls(cell) -> set[str]:
    """The names of the functions and methods the solution of `cell` calls (`torch.flip(x)`, `x.flip()`: `flip`)."""
    import ast
    import textwrap

    tree = ast.parse(textwrap.dedent("\n".join(_solution_lines(cell))))
    return {node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))}


def named_in(text: str, names: set[str]) -> set[str]:
    return {name for name in names if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)|\.{re.escape(name)}(?!\w)", text)}


def whole_recipes(notebook) -> list[str]:
    """Exercises whose hints, all together, name every function the solution calls (two or more), besides those the
    exercise's own stub already names (a docstring that gives `len(ids) // seq_len` gives `len`)."""
    found = []
    for _, exercise in _exercises(notebook):
        cell = next(c for c in notebook.cells if grade_id(c) == exercise)
        if cell.cell_type != "code":
            continue
        stub = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", cell.source, flags=re.S)
        calls = solution_calls(cell) - named_in(stub, solution_calls(cell))
        hints = next(c for c in notebook.cells if grade_id(c) == f"hints_{exercise}").source
        if len(calls) >= 2 and named_in(hints, calls) == calls:
            found.append(f"{exercise}: the hints name every call of the solution: {sorted(calls)}")
    return found


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_the_hints_leave_the_student_a_step_to_find(assignment):
    """The last hint gives the last idea, not the code: the hints together never name every function the solution
    calls (02's attention, 03's padding_mask, 06's reversal_batch and 07's chunk all did)."""
    recipes = whole_recipes(_notebook(SOURCE, assignment))
    assert not recipes, "\n".join(recipes)


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_no_student_text_sends_the_student_to_the_course_spec(assignment):
    """A student has no course specification, only the notebook: no markdown of a release notebook names one (07's
    first tokenize hint said "The course spec names the tool"; a hint names the tool or the idea itself)."""
    said = [f"{grade_id(cell)}: {line.strip()}" for cell in _notebook(RELEASE, assignment).cells
            if cell.cell_type == "markdown" for line in cell.source.splitlines()
            if re.search(r"\bspec(ification)?s?\b", line, re.I)]
    assert not said, "\n".join(said)
