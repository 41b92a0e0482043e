"""`course.progress()`: which exercises of which notebooks pass their visible checks, in one view.

It reads your saved notebooks next to the current one (the same places carry-over looks: `../<assignment>/
<assignment>.ipynb`, then `./<assignment>.ipynb`), runs only their definitions (imports, functions, classes and
carry-overs, as `course.carryover` does: no plots, no training cells) and then each exercise's visible check
quietly. It always uses your own code, and does nothing while nbgrader runs a notebook.

The exercises of a notebook are the `check_<exercise>(<Name>)` functions of its module in `course.checks`, in
order; each checks the definition the notebook gives `<Name>` (the check cells call exactly these, a test
proves it). A table shows the result (HTML in a notebook, text elsewhere); where ipywidgets is live, an
accordion per notebook with a "Check again" button.

A whole solved course takes about 4 s on a CPU, under 2 s once the notebooks' definitions are loaded (they are
cached until a file changes); the slowest check is `check_sample` (07), about 1 s.

The training progress bar is another thing: `course.progress_bar.progress`.
"""
from __future__ import annotations

import contextlib
import html
import importlib
import inspect
import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from course.about import NOTEBOOKS
from course.carryover import SEARCH, load_definitions, locate
from course.runtime import under_grading

PASSED, FAILED, NOT_WRITTEN, MISSING, NOT_CHECKED = (
    "passed", "failed", "not written yet", "notebook missing", "not checked")
SYMBOL = {PASSED: "✔", FAILED: "✘", NOT_WRITTEN: "⏳", MISSING: "∅", NOT_CHECKED: "⚠"}


@dataclass
class ExerciseProgress:
    exercise: str        # the public name the check takes, e.g. "TokenAndPositionEmbedding"
    status: str          # PASSED, FAILED, NOT_WRITTEN, MISSING or NOT_CHECKED
    message: str = ""    # what the check said (the whole message; `summary` is its first line)
    seconds: float = 0.0

    @property
    def summary(self) -> str:
        """The message's first line, and the known mistake when the check named one."""
        lines = [line.strip() for line in self.message.strip().splitlines() if line.strip()]
        named = [line for line in lines[1:] if line.startswith("This is a known mistake:")]
        return (lines[0] if lines else "") + (f" ({named[0][len('This is a ') :]})" if named else "")


@dataclass
class NotebookProgress:
    assignment: str
    path: Path | None                  # None when the notebook is missing
    exercises: list[ExerciseProgress] = field(default_factory=list)
    problem: str = ""                  # why its exercises could not be checked, when they could not
    load_seconds: float = 0.0          # reading the notebook and running its definitions

    @property
    def passed(self) -> int:
        return sum(e.status == PASSED for e in self.exercises)

    @property
    def headline(self) -> str:
        if self.path is None:
            return f"{self.assignment}: notebook missing"
        if self.problem:
            return f"{self.assignment}: not checked"
        return f"{self.assignment}: {self.passed}/{len(self.exercises)} passed"


def exercises(assignment: str) -> list[tuple[str, object]]:
    """`(name, check)` for each exercise of `assignment`, in the notebook's order: its module's `check_*`
    functions, each taking the definition it checks under that definition's name."""
    module = importlib.import_module(f"course.checks.{NOTEBOOKS[assignment]}")
    checks = [f for n, f in vars(module).items()
              if n.startswith("check_") and inspect.isfunction(f) and f.__module__ == module.__name__]
    return [(next(iter(inspect.signature(check).parameters)), check) for check in checks]


def resolve(notebooks) -> list[str]:
    """Assignment names from what a student may type: "03_masking", "03", 3 or "masking"."""
    if not notebooks:
        return list(NOTEBOOKS)
    found = []
    for wanted in notebooks:
        if isinstance(wanted, bool) or not isinstance(wanted, (str, int)):
            raise TypeError(f"course.progress() takes notebook names, not {type(wanted).__name__}; the progress bar "
                            "for a training loop is course.progress_bar.progress.")
        matches = [a for a in NOTEBOOKS
                   if str(wanted) in (a, NOTEBOOKS[a], a[:2]) or (isinstance(wanted, int) and int(a[:2]) == wanted)]
        if not matches:
            raise ValueError(f"There is no notebook {wanted!r}; the notebooks are {', '.join(NOTEBOOKS)}.")
        found.extend(m for m in matches if m not in found)
    return [a for a in NOTEBOOKS if a in found]


def check_notebooks(assignments=None, search=SEARCH, bar: bool = True) -> list[NotebookProgress]:
    """Find, load and check each notebook of `assignments` (default: all); a text progress bar with `bar`.
    `search`: the folders, relative to the working directory, where carry-over looks too."""
    from course.progress_bar import progress as progress_bar

    results = [_locate(assignment, search) for assignment in (assignments or list(NOTEBOOKS))]
    todo = [(result, name, check) for result in results if result.path is not None
            for name, check in exercises(result.assignment)]
    steps = progress_bar(todo, "checking") if bar and todo else todo
    for result, name, check in steps:
        if hasattr(steps, "set_postfix_str"):
            steps.set_postfix_str(f"{result.assignment[:2]} {name}", refresh=False)
        result.exercises.append(_check_one(result, name, check))
    return results


def _locate(assignment: str, search) -> NotebookProgress:
    path = locate(assignment, search)
    if path is None:
        return NotebookProgress(
            assignment, None, [ExerciseProgress(name, MISSING) for name, _ in exercises(assignment)],
            problem=f"{assignment}.ipynb is not next to this notebook: keep it in a folder {assignment}/ beside this "
                    "notebook's folder (or, in Colab, upload it to this notebook's folder).")
    return NotebookProgress(assignment, path)


def _check_one(result: NotebookProgress, name: str, check) -> ExerciseProgress:
    """Run one visible check on the notebook's own `name`, its printed lines captured."""
    if result.problem:
        return ExerciseProgress(name, NOT_CHECKED, result.problem)
    import torch

    printed = io.StringIO()
    started = time.perf_counter()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            module = load_definitions(result.path)  # cached until the file changes; runs no training cell
    except Exception as exc:  # a definition cell or a carry-over failed: nothing of this notebook can be checked
        result.problem = f"its definitions do not run: {_one_line(exc)}"
        return ExerciseProgress(name, NOT_CHECKED, result.problem)
    result.load_seconds += time.perf_counter() - started
    started = time.perf_counter()
    if not hasattr(module, name):
        return ExerciseProgress(name, NOT_WRITTEN, f"The notebook defines no `{name}`: is its cell still there?")
    status, message = PASSED, ""
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers as they were
            check(getattr(module, name))
    except AssertionError as exc:  # CheckFailed (and NotWrittenYet, its kind): the check's own message
        status, message = FAILED, str(exc.args[0]) if exc.args else "the check failed"
    except Exception as exc:  # raised outside the check's steps (they turn the student's errors into CheckFailed)
        status, message = FAILED, f"{name}: {_one_line(exc)}"
    else:
        waiting = [line for line in printed.getvalue().splitlines() if line.startswith("⏳")]
        if waiting:  # the check said which part is still a stub: the status says it all
            status = NOT_WRITTEN
    return ExerciseProgress(name, status, message, time.perf_counter() - started)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def as_text(results: list[NotebookProgress]) -> str:
    """A plain table: a line per exercise under a line per notebook."""
    width = max((len(e.exercise) for r in results for e in r.exercises), default=10)
    lines = []
    for result in results:
        lines.append(result.headline)
        if result.problem:
            lines.append(f"  {SYMBOL[MISSING if result.path is None else NOT_CHECKED]} {result.problem}")
        for e in result.exercises:
            detail = "" if e.status in (PASSED, MISSING, NOT_CHECKED) else f"  {e.summary}"
            seconds = f"{e.seconds:5.1f} s" if e.status in (PASSED, FAILED) else " " * 7
            lines.append(f"  {SYMBOL[e.status]} {e.exercise:<{width}}  {e.status:<15} {seconds}{detail}".rstrip())
    total = sum(len(r.exercises) for r in results)
    lines.append(f"{sum(r.passed for r in results)} of {total} exercises pass their checks "
                 "(read from the saved notebooks: save first).")
    return "\n".join(lines)


COLOR = {PASSED: "#1a7f37", FAILED: "#cf222e", NOT_WRITTEN: "#9a6700", MISSING: "#6e7781", NOT_CHECKED: "#9a6700"}


def as_html(results: list[NotebookProgress], headings: bool = True) -> str:
    """An HTML table per notebook (with a heading each unless `headings` is False)."""
    parts = []
    for result in results:
        if headings:
            parts.append(f"<h4 style='margin:0.6em 0 0.2em'>{html.escape(result.headline)}</h4>")
        if result.problem:
            parts.append(f"<p style='margin:0.2em 0'>{html.escape(result.problem)}</p>")
        rows = []
        for e in result.exercises:
            detail = "" if e.status in (PASSED, MISSING, NOT_CHECKED) else html.escape(e.summary)
            if e.status == FAILED and e.message.strip() != e.summary:
                detail = (f"<details><summary>{detail}</summary><pre style='white-space:pre-wrap'>"
                          f"{html.escape(e.message.strip())}</pre></details>")
            seconds = f"{e.seconds:.1f} s" if e.status in (PASSED, FAILED) else ""
            rows.append(f"<tr><td><code>{html.escape(e.exercise)}</code></td>"
                        f"<td style='color:{COLOR[e.status]};white-space:nowrap'>{SYMBOL[e.status]} {e.status}</td>"
                        f"<td style='text-align:right'>{seconds}</td><td style='text-align:left'>{detail}</td></tr>")
        parts.append("<table><thead><tr><th>exercise</th><th>status</th><th>time</th><th>what the check said</th>"
                     f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return "\n".join(parts)


def as_widget(results: list[NotebookProgress], search=SEARCH):
    """An accordion with a pane per notebook (its table and a "Check again" button), failing ones open."""
    import ipywidgets as widgets

    panes, accordion = [], widgets.Accordion()

    def pane(index: int, result: NotebookProgress):
        table = widgets.HTML(as_html([result], headings=False))
        again = widgets.Button(description="Check again", icon="refresh",
                               tooltip=f"Save {result.assignment}.ipynb, then check it again")

        def recheck(_button):
            again.disabled, again.description = True, "Checking…"
            try:
                fresh = check_notebooks([result.assignment], search=search, bar=False)[0]
                table.value = as_html([fresh], headings=False)
                accordion.set_title(index, _title(fresh))
            finally:
                again.disabled, again.description = False, "Check again"

        again.on_click(recheck)
        return widgets.VBox([table, again])

    accordion.children = [pane(i, r) for i, r in enumerate(results)]
    for i, result in enumerate(results):
        accordion.set_title(i, _title(result))
    unfinished = [i for i, r in enumerate(results) if r.path is not None and r.passed < len(r.exercises)]
    accordion.selected_index = unfinished[0] if unfinished else None
    return accordion


def _title(result: NotebookProgress) -> str:
    """The notebook's headline after the symbol of its worst exercise."""
    worst = next((s for s in (MISSING, NOT_CHECKED, FAILED, NOT_WRITTEN) if any(e.status == s for e in result.exercises)),
                 PASSED)
    return f"{SYMBOL[worst]} {result.headline}"


def _where() -> str:
    """"widget" in a live notebook, "html" in a notebook without widgets, "text" anywhere else."""
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return "text"
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return "html"
    return "widget"


def progress(*notebooks) -> None:
    """Show which exercises pass their visible checks: every notebook, or those named
    (`course.progress("03_masking")`, `course.progress(3, 4)`). Reads the saved notebooks: save first."""
    assignments = resolve(notebooks)
    if under_grading():
        print("course.progress() shows your progress while you work; it does nothing while nbgrader runs the notebook.")
        return
    results = check_notebooks(assignments)
    where = _where()
    if where == "text":
        print(as_text(results))
        return
    from IPython.display import HTML, display

    if where == "html":
        display(HTML(as_html(results)))
        return
    bundle = as_widget(results)._repr_mimebundle_()
    bundle.update({"text/plain": as_text(results), "text/html": as_html(results)})  # for viewers without widgets
    display(bundle, raw=True)


__all__ = ["progress", "check_notebooks", "exercises", "as_text", "as_html", "as_widget"]
