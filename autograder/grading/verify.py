"""The grader's own verdict on a notebook nbgrader has just autograded under the guard.

In a guarded kernel the hidden-test cells only record what they observe of the student's code, and each
visible check records that it ran and passed. Here, in the grader's process, where student code never runs:
- each hidden test's recording is judged against the reference's observation (`autograder.authoring.hidden.observe`);
  a test that recorded nothing earns nothing;
- a check cell earns its point only if (a) its check recorded a pass, (b) no cell before it tampers with what
  the check relies on (`autograder.grading.tamper_scan`), and (c) the grader's own verdict on the hidden test of the
  same exercise (`check_X` -> `hidden_X`, judged here by `hidden_verdict`) passes;
- what the guard blocked, and code the grader cannot follow, are listed for the instructor.
Scores are corrected in the job's private gradebook before it is merged, and each graded cell of the
autograded notebook shows the verdict, so the feedback tells the student what failed.

Why (c): a visible check runs in the student's kernel, on the same torch, numpy, builtins, `course` package and
`sys.modules` the student's code can rebind at run time, and no static reading of the cells can see every
spelling of that (an alias of `setattr`, `type(torch).__setattr__`, a string given to `exec`...). So (a) and (b)
can be forged; (c) cannot: it is computed here, from a recording judged against the reference, by code the
kernel never reaches. It costs an honest student nothing they would not lose anyway: every known mistake a
check names also fails the hidden test (tests/test_mutants.py), so a check point withheld by (c) is one whose
code is wrong; the check cell says why ("not counted: the grader's own test of X found it wrong: ...") and the
class report lists it apart from tampering, since a check can miss an honest mistake.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import json
import warnings
from pathlib import Path

import nbformat
import torch
from nbgrader.api import Gradebook, MissingEntry

from autograder.grading import tamper_scan
from autograder.results.notes import UNCONFIRMED
from autograder.authoring.hidden.observe import HiddenTestFailed, compare, reference_observation
from course.about import NOTEBOOKS, snake_case


def hidden_tests(assignment: str) -> list:
    """The hidden tests of notebook `assignment` (each `test_<exercise>` built by `hidden_test`)."""
    module = importlib.import_module(f"autograder.authoring.hidden.{NOTEBOOKS[assignment]}")
    return [test for name, test in vars(module).items() if name.startswith("test_") and hasattr(test, "observe")]


def prepare(assignments: list[str]) -> None:
    """Observe the reference for every hidden test of `assignments` now, once, quietly (training prints its
    progress), so that the grading jobs find the observations ready."""
    with contextlib.redirect_stdout(io.StringIO()):
        for assignment in assignments:
            for test in hidden_tests(assignment):
                reference_observation(test)


def hidden_verdict(test, records: Path) -> str | None:
    """None when the recording of `test` in `records` matches the reference; otherwise why not."""
    exercise = test.observe.__name__.removeprefix("observe_")
    path = records / f"{exercise}.pt"
    if not path.exists():
        return "the hidden test recorded nothing: its cell did not run as written"
    try:
        recorded = torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001: anything unreadable earns nothing
        return f"the hidden test's recording could not be read ({type(exc).__name__})"
    if not isinstance(recorded, dict):
        return "the hidden test's recording is not what the test writes"
    try:
        compare(recorded, reference_observation(test))
    except HiddenTestFailed as failure:
        return str(failure)
    return None




class _HiddenVerdicts:
    """`hidden_verdict` of each exercise of one graded notebook, judged once whether its hidden-test cell or its
    check cell asks first."""

    def __init__(self, assignment: str, records: Path):
        self.module = importlib.import_module(f"autograder.authoring.hidden.{NOTEBOOKS[assignment]}")
        self.records = records
        self.verdicts: dict[str, str | None] = {}

    def __call__(self, exercise: str) -> str | None:
        if exercise not in self.verdicts:
            test = getattr(self.module, f"test_{exercise}", None)
            if test is None:  # never the kernel's word instead: the grader cannot judge this cell, so says so
                raise LookupError(f"no hidden test in {self.module.__name__} for the exercise {exercise!r}")
            self.verdicts[exercise] = hidden_verdict(test, self.records)
        return self.verdicts[exercise]


def _passed_checks(records: Path) -> set[str]:
    passed = set()
    path = records / "checks.jsonl"
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []:
        try:
            passed.add(f"check_{snake_case(json.loads(line)['passed'])}")
        except (ValueError, KeyError, TypeError):
            continue
    return passed


def _blocked(records: Path) -> list[str]:
    path = records / "violations.jsonl"
    seen = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []:
        try:
            entry = json.loads(line)
            where = f" in cell [{entry['cell']}]" if entry.get("cell") else ""
            seen.setdefault(entry["what"], f"blocked: it tried to {entry['what']}{where} ({entry['detail']})")
        except (ValueError, KeyError, TypeError):
            seen.setdefault("?", "blocked: something the guard refused (its log was tampered with)")
    return list(seen.values())


OUTPUT_LIMIT = 1_000_000  # bytes one output of a graded notebook may take (an image, HTML, text); past it, removed


def cap_outputs(notebook) -> list[str]:
    """Replace each output larger than OUTPUT_LIMIT with a short notice (nbgrader caps printed lines, not images
    or HTML); return a note per cell that had one."""
    notes = []
    for index, cell in enumerate(notebook.cells, start=1):
        for position, output in enumerate(cell.get("outputs", []) if cell.cell_type == "code" else []):
            size = len(json.dumps(output))
            if size > OUTPUT_LIMIT:
                notice = (f"[an output of {size / 1e6:.1f} MB was removed: a graded notebook's outputs may be "
                          f"{OUTPUT_LIMIT / 1e6:g} MB each]\n")
                cell.outputs[position] = nbformat.v4.new_output("stream", name="stdout", text=notice)
                notes.append(f"cell {index} made an output of {size / 1e6:.1f} MB; it was removed")
    return list(dict.fromkeys(notes))


INERT_TYPES = ("text/plain", "image/png", "image/jpeg", "image/gif")  # what a graded notebook's outputs keep


def inert_outputs(notebook) -> None:
    """Keep of each rich output only what is text or a picture (INERT_TYPES): the box writes the outputs, and none
    of its HTML, JavaScript, SVG, Markdown or widgets runs where a person opens the feedback. An output that had
    only those keeps their source as text."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data")
            if not isinstance(data, dict) or set(data) <= set(INERT_TYPES):
                continue
            kept = {kind: value for kind, value in data.items() if kind in INERT_TYPES}
            if not kept:
                source = next(iter(data.values()))
                source = source if isinstance(source, str) else json.dumps(source)
                kept = {"text/plain": f"[{', '.join(sorted(data))}, shown as text]\n{source[:20_000]}"}
            output["data"] = kept
            if isinstance(output.get("metadata"), dict):
                output["metadata"] = {kind: value for kind, value in output["metadata"].items() if kind in kept}


def _errored(cell) -> bool:
    return any(output.get("output_type") == "error" for output in cell.get("outputs", []))


def _show(cell, message: str | None, passed_text: str) -> None:
    """Replace the recording notice in `cell`'s outputs with the grader's verdict."""
    cell.outputs = [o for o in cell.get("outputs", [])
                    if not (o.get("output_type") == "stream" and "Recorded for the grader" in o.get("text", ""))]
    if message is None:
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=passed_text + "\n"))
    else:
        cell.outputs.append(nbformat.v4.new_output("error", ename="HiddenTestFailed", evalue=message,
                                                   traceback=[f"HiddenTestFailed: {message}"]))


def verify(autograded: Path, assignment: str, student: str, records: Path, database: Path) -> list[str]:
    """Judge the autograded notebook at `autograded` with its `records`; correct the scores of `student` in the
    gradebook at `database`; return what the instructor should read (empty when nothing)."""
    notebook = nbformat.read(autograded, as_version=4)
    capped = cap_outputs(notebook)
    inert_outputs(notebook)
    judge = _HiddenVerdicts(assignment, records)
    findings = tamper_scan.scan(notebook)
    tampered = tamper_scan.affected_checks(notebook, findings)
    passed = _passed_checks(records)
    zero: dict[str, str] = {}
    unconfirmed: list[str] = []  # check cells that recorded a pass the grader's own hidden verdict contradicts
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id", "")
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution") or _errored(cell):
            continue
        if "BEGIN HIDDEN TESTS" in cell.source:
            message = judge(grade_id.removeprefix("hidden_"))
            _show(cell, message, "✔ Hidden tests passed: the grader compared your outputs with the reference.")
            if message:
                zero[grade_id] = message
        elif grade_id in tampered:
            message = f"not counted: {tampered[grade_id][0].text()}, which a check relies on"
            _show(cell, message, "")
            zero[grade_id] = message
        elif grade_id.startswith("check_") and grade_id not in passed:
            message = f"not counted: `{grade_id}` did not run as written (was it replaced or skipped?)"
            _show(cell, message, "")
            zero[grade_id] = message
        elif grade_id.startswith("check_") and (verdict := judge(grade_id.removeprefix("check_"))):
            exercise = grade_id.removeprefix("check_")
            message = f"not counted: the grader's own test of `{exercise}` found it wrong: {verdict}"
            _show(cell, message, "")
            zero[grade_id] = message
            unconfirmed.append(grade_id)
    mode = autograded.stat().st_mode  # nbgrader leaves it read-only (0444): only root could write it as it is
    autograded.chmod(mode | 0o200)
    nbformat.write(notebook, autograded)
    autograded.chmod(mode)
    _correct_scores(database, assignment, student, notebook_name=autograded.stem, zero=zero)
    costly = dict.fromkeys(finding.text() for found in tampered.values() for finding in found)  # each named once
    notes = [f"tampering: {text} (the checks after it earn nothing)" for text in costly]
    notes += [f"not counted: {grade_id}: {message}" for grade_id, message in zero.items()
              if not grade_id.startswith("hidden_") and grade_id not in tampered and grade_id not in unconfirmed]
    notes += [f"{UNCONFIRMED} {grade_id} passed in the notebook, but the grader's own test found it wrong"
              for grade_id in unconfirmed]
    notes += [f"{grade_id}: {message}" for grade_id, message in zero.items()
              if grade_id.startswith("hidden_") and ("recorded nothing" in message or "recording" in message)]
    notes += capped + _blocked(records)
    notes += [f"look at: {finding.text()}" for finding in findings if not finding.costs_points()]
    return notes


def _correct_scores(database: Path, assignment: str, student: str, notebook_name: str, zero: dict[str, str]) -> None:
    if not zero:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Gradebook(f"sqlite:///{database}") as gb:
            for grade_id in zero:
                try:
                    grade = gb.find_grade(grade_id, notebook_name, assignment, student)
                except MissingEntry:
                    continue
                grade.auto_score = 0
            gb.db.commit()
