"""The class report, from the gradebook and the autograded notebooks: how each exercise went, the spread of
scores over the term, the hand-ins missing, the mistakes the feedback named most often, tampering and what the
guard blocked, the visible checks the grader's own tests contradicted, and the submissions that need a look.

It covers the whole class as the gradebook holds it, whatever was graded last: every student in the gradebook
and every assignment at least one of them handed in, in course order. A missing hand-in scores 0 of its
assignment's points.

Writes, under `reports/`: `class_report.md` (the summary), `exercise_pass_rates.csv`, `scores.csv`,
`named_mistakes.csv` and `score_histogram.png`.
"""
from __future__ import annotations

import csv
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from nbgrader.api import Gradebook

from autograder.authoring.mistakes import all_mistakes
from autograder.results.scores import (EARLIER_NOTE, LATE_NOTE, PENDING, PENDING_MARK, PENDING_NOTE, Score,
                                       earlier_lines, score_of)
from autograder.results.notes import TAMPERING, UNCONFIRMED
from course.about import NOTEBOOKS

NAMED = "This is a known mistake: "


@dataclass
class Standing:
    """One student's scores over the covered assignments (autograder.results.scores: the number every output gives)."""
    student: str
    scores: dict[str, Score | None]  # assignment -> its score; None when not handed in
    late_penalty: float

    @property
    def missing(self) -> list[str]:
        return [assignment for assignment, score in self.scores.items() if score is None]

    @property
    def earned(self) -> float:
        return sum(score.total for score in self.scores.values() if score is not None)

    @property
    def pending(self) -> int:
        return sum(score.pending for score in self.scores.values() if score is not None)

    def cell(self, assignment: str) -> str:
        """The table's cell of `assignment`: its score (`Score.cell`) or `missing` (0 of its points)."""
        score = self.scores[assignment]
        return "missing" if score is None else score.cell()


@dataclass
class Term:
    """What the report covers, as the gradebook holds it."""
    maxima: dict[str, float]  # covered assignment -> its points (written answers included), in course order
    standings: list[Standing]  # one per student in the gradebook, by name
    passed: Counter  # (assignment, graded cell) -> handed-in submissions that earned its full points
    graded: Counter  # (assignment, graded cell) -> handed-in submissions

    @property
    def top(self) -> float:
        """The points of the whole covered term."""
        return sum(self.maxima.values())

    def earlier(self) -> list[str]:
        """`alice / 02_attention: earlier answer: 1/2` for each hand-in whose written answer, handed in again after it
        was graded, waits to be graded again (autograder.results.scores.earlier_lines)."""
        return earlier_lines({(s.student, a): score for s in self.standings for a, score in s.scores.items()})

    def percent(self, standing: Standing) -> float:
        return 100 * standing.earned / self.top if self.top else 0.0

    def total(self, standing: Standing) -> str:
        """The table's total: `10/17` (a missing hand-in counts 0 of its points), `*` while written answers wait."""
        return f"{standing.earned:g}/{self.top:g}" + (PENDING_MARK if standing.pending else "")


def needs_a_look(outcomes) -> list[str]:
    """`student / assignment: reason` of each graded outcome (autograder.grading.engine.Outcome) with a reason."""
    return [f"{o.student} / {o.assignment}: {o.reason}" for o in outcomes if o.reason]


# Above the grade command's table, wrapped to fit a terminal of 100 columns.
TABLE_TITLE = ("Scores: autograded and manual points (written answers once graded in formgrader), less the late "
               "penalty; a missing hand-in counts 0 of its points. The same numbers as grades.csv, "
               "reports/scores.csv, the class report and the feedback.")


def score_table(term: Term, needs_a_look: list[str] = ()) -> str:
    """The grade command's table: a row per student in the gradebook, a column per covered notebook, the total
    and percent of the term (as `scores.csv`), one note for the written answers not graded yet, then
    `needs_a_look` (`student / assignment: reason`)."""
    header = ["student", *(a.split("_", 1)[0] for a in term.maxima), "total", "%"]
    rows = [header] + [[s.student, *(s.cell(a) for a in term.maxima), term.total(s), f"{term.percent(s):.1f}"]
                       for s in term.standings]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    if any(s.pending for s in term.standings):
        lines.append(PENDING_NOTE)
    if term.earlier():
        lines += [EARLIER_NOTE] + [f"    {line}" for line in term.earlier()]
    if any(s.late_penalty for s in term.standings):
        lines.append(LATE_NOTE)
    if not term.standings:
        lines.append("(no student in the gradebook yet)")
    if needs_a_look:
        lines += ["", "Needs a look:"] + [f"  {line}" for line in needs_a_look]
    return "\n".join(textwrap.wrap(TABLE_TITLE, 100) + lines)


def covered_assignments(gb: Gradebook) -> list[str]:
    """Every assignment in the gradebook that someone handed in, in course order (any other after, by name)."""
    order = list(NOTEBOOKS)
    handed_in = [assignment.name for assignment in gb.assignments if assignment.num_submissions]
    return sorted(handed_in, key=lambda name: (order.index(name) if name in order else len(order), name))


def standing(gb: Gradebook, student: str, assignments: list[str]) -> Standing:
    """The score of each of `assignments` that `student` handed in, and their late penalties."""
    scores = {assignment: score_of(gb, assignment, student) for assignment in assignments}
    return Standing(student, scores, sum(score.penalty for score in scores.values() if score is not None))


def exercise_counts(gb: Gradebook, assignments: list[str]) -> tuple[Counter, Counter]:
    """Per (assignment, graded code cell): how many handed-in submissions passed it, and how many were graded."""
    passed, graded = Counter(), Counter()
    for assignment in assignments:
        for submission in gb.find_assignment(assignment).submissions:
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.cell_type != "code" or not grade.max_score:
                        continue
                    key = (assignment, grade.name)
                    graded[key] += 1
                    passed[key] += (grade.auto_score or 0) >= grade.max_score
    return passed, graded


def read_term(gradebook: Path) -> Term:
    """The whole class as `gradebook` holds it."""
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        assignments = covered_assignments(gb)
        maxima = {assignment: gb.find_assignment(assignment).max_score for assignment in assignments}
        standings = [standing(gb, student.id, assignments) for student in sorted(gb.students, key=lambda s: s.id)]
        passed, graded = exercise_counts(gb, assignments)
    return Term(maxima, standings, passed, graded)


def _mistake_ids() -> dict[str, str]:
    """Known-mistake message -> "exercise: id", for every known mistake."""
    return {m.message: f"{m.exercise}: {m.id}" for m in all_mistakes()}


def named_mistakes(autograded: Path) -> Counter:
    """How often each known mistake was named in the outputs of the autograded notebooks under `autograded`."""
    ids, found = _mistake_ids(), Counter()
    for path in autograded.glob("*/*/*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                text = "\n".join([output.get("text", ""), output.get("evalue", ""), *output.get("traceback", [])])
                messages = {line.split(NAMED, 1)[1].strip().removesuffix("\x1b[0m")
                            for line in text.splitlines() if NAMED in line}  # once per output
                for message in messages:
                    found[ids.get(message, message[:80])] += 1
    return found


def write_pass_rates(path: Path, term: Term) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "graded cell", "passed", "graded", "pass rate"])
        for (assignment, cell), n in sorted(term.graded.items()):
            writer.writerow([assignment, cell, term.passed[(assignment, cell)], n,
                             f"{term.passed[(assignment, cell)] / n:.2f}"])


def write_scores(path: Path, term: Term) -> None:
    """One row per student: each covered assignment's score as every output gives it (`9/11`, `0/11 (late: -9)`,
    `9/11 (written answers not graded yet)`: autograder.results.scores) or `missing`, then the term's totals."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *term.maxima, "score", "of", "percent", "missing", "late penalty",
                         "written answers not graded"])
        for s in term.standings:
            cells = ["missing" if s.scores[a] is None else s.scores[a].text() for a in term.maxima]
            writer.writerow([s.student, *cells, f"{s.earned:g}", f"{term.top:g}", f"{term.percent(s):.1f}",
                             len(s.missing), f"{s.late_penalty:g}", s.pending])


def write_named_mistakes(path: Path, mistakes: Counter) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["mistake", "times named"])
        writer.writerows(mistakes.most_common())


def plural(count: int, noun: str) -> str:
    """`1 student`, `2 students`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def score_histogram(percents: list[float], title: str) -> Figure:
    """How many students scored each tenth of the points; a student count is a whole number."""
    fig = Figure(figsize=(7, 3.5))
    ax = fig.add_subplot()
    ax.hist(percents, bins=[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100.01], color="tab:blue", edgecolor="white")
    ax.set(xlabel="score (% of the term's points)", ylabel="students", title=title)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    return fig


def histogram_title(term: Term) -> str:
    missing = sum(len(s.missing) for s in term.standings)
    return (f"{plural(len(term.standings), 'student')}, {plural(len(term.maxima), 'notebook')}, "
            f"{plural(missing, 'hand-in')} missing")


def summary_lines(term: Term, mistakes: Counter, reasons: dict[tuple[str, str], str],
                  misplaced: list[str] = ()) -> list[str]:
    """The lines of class_report.md."""
    covered = f"notebooks {', '.join(term.maxima)}" if term.maxima else "no notebook handed in yet"
    pending = sum(1 for s in term.standings for score in s.scores.values() if score is not None and score.pending)
    lines = ["# Class report", "", f"{plural(len(term.standings), 'student')}; {covered}.", "",
             "## Scores", "", "Autograded and manual points, less the late penalty: the numbers of `grades.csv`, "
             "`scores.csv`, the grade command's table and the feedback; a missing hand-in counts 0 of its points." + (
                 f" {plural(pending, 'hand-in')} with {PENDING}: their totals are not final." if pending else ""), "",
             "| student | " + " | ".join(term.maxima) + " | total |", "| --- |" + " --- |" * (len(term.maxima) + 1)]
    lines += [f"| {s.student} | " + " | ".join(s.cell(a) for a in term.maxima) + f" | {term.total(s)} |"
              for s in term.standings]
    lines += ["", "\\" + PENDING_NOTE] if pending else []  # a markdown list item without the backslash
    lines += ["", EARLIER_NOTE.strip()] + [f"- {line}" for line in term.earlier()] if term.earlier() else []
    lines += ["", LATE_NOTE] if any(s.late_penalty for s in term.standings) else []
    lines += ["",
             "## Exercises with the lowest pass rates", "", "| notebook | graded cell | pass rate |", "| --- | --- | --- |"]
    rates = sorted(term.graded, key=lambda k: term.passed[k] / term.graded[k])
    lines += [f"| {a} | {c} | {term.passed[(a, c)]}/{term.graded[(a, c)]} |" for a, c in rates[:15]]
    lines += ["", "## Mistakes the feedback named most often", "", "| mistake | times |", "| --- | --- |"]
    lines += [f"| {m} | {n} |" for m, n in mistakes.most_common(15)] or ["| (none) | |"]
    lines += ["", "## Missing hand-ins", "",
              "Each counts 0 of its notebook's points in `scores.csv` and the histogram.", ""]
    lines += [f"- {s.student} / {a}" for s in term.standings for a in s.missing] or ["(none)"]
    lines += ["", "## Under submitted/ but not graded", "",
              "Not a hand-in of a released assignment: each says what to do, then grade again.", ""]
    lines += [f"- {line}" for line in misplaced] or ["(none)"]
    lines += ["", "## Tampering and blocked attempts", "",
              "Checks after a tampering cell earned nothing; what the guard blocked failed in the student's cell.", ""]
    lines += [f"- {s} / {a}: {part}" for (a, s), r in sorted(reasons.items()) for part in r.split("; ")
              if part.startswith(TAMPERING)] or ["(none)"]
    lines += ["", "## Checks passed in the notebook that the grader's own tests found wrong", "",
              "Not counted. Either the visible check missed a mistake (a check worth strengthening), or something in "
              "the kernel made it pass in a way the scan could not read: this list accuses nobody.", ""]
    lines += [f"- {s} / {a}: {part.removeprefix(UNCONFIRMED).strip()}" for (a, s), r in sorted(reasons.items())
              for part in r.split("; ") if part.startswith(UNCONFIRMED)] or ["(none)"]
    lines += ["", "## Submissions that need a look", ""]
    lines += [f"- {s} / {a}: {r}" for (a, s), r in sorted(reasons.items()) if r] or ["(none)"]
    lines += ["", "![score histogram](score_histogram.png)", ""]
    return lines


def write_report(root: Path, reasons: dict[tuple[str, str], str], misplaced: list[str] = ()) -> Path:
    """Write the class report of the whole term under root/reports; return the path of its summary.

    `reasons`: (assignment, student) -> why that graded submission needs a look ("" when it does not)."""
    out = root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    term = read_term(root / "gradebook.db")
    mistakes = named_mistakes(root / "autograded")
    write_pass_rates(out / "exercise_pass_rates.csv", term)
    write_scores(out / "scores.csv", term)
    write_named_mistakes(out / "named_mistakes.csv", mistakes)
    score_histogram([term.percent(s) for s in term.standings], histogram_title(term)).savefig(
        out / "score_histogram.png", dpi=100)
    summary = out / "class_report.md"
    summary.write_text("\n".join(summary_lines(term, mistakes, reasons, misplaced)))
    return summary
