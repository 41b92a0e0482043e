"""The class report, from the gradebook and the autograded notebooks: how each exercise went, the spread of
scores, the mistakes the feedback named most often, tampering and what the guard blocked, the visible checks
the grader's own tests contradicted, and the submissions that need a look.

Writes, under `reports/`: `class_report.md` (the summary), `exercise_pass_rates.csv`, `scores.csv`,
`named_mistakes.csv` and `score_histogram.png`.
"""
from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

TAMPERING = ("tampering:", "blocked:", "not counted:", "look at:")  # how autograder.verify's notes begin

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
from nbgrader.api import Gradebook, MissingEntry  # noqa: E402

from autograder.mistakes import all_mistakes  # noqa: E402
from autograder.verify import UNCONFIRMED  # noqa: E402

NAMED = "This is a known mistake: "


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


def write_report(root: Path, assignments: list[str], reasons: dict[tuple[str, str], str]) -> Path:
    """Write the class report under root/reports; return the path of its summary."""
    out = root / "reports"
    out.mkdir(parents=True, exist_ok=True)
    passed, attempted, totals = Counter(), Counter(), {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        students = [s.id for s in gb.students]
        for student in students:
            for assignment in assignments:
                try:
                    submission = gb.find_submission(assignment, student)
                except MissingEntry:  # not handed in
                    continue
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        if grade.cell_type != "code" or not grade.max_score:
                            continue
                        key = (assignment, grade.name)
                        attempted[key] += 1
                        passed[key] += (grade.auto_score or 0) >= grade.max_score
                score = totals.setdefault(student, [0.0, 0.0])
                score[0] += submission.code_score
                score[1] += submission.max_code_score
    with (out / "exercise_pass_rates.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["assignment", "graded cell", "passed", "graded", "pass rate"])
        for (assignment, cell), n in sorted(attempted.items()):
            writer.writerow([assignment, cell, passed[(assignment, cell)], n, f"{passed[(assignment, cell)] / n:.2f}"])
    with (out / "scores.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "autograded score", "of"])
        for student, (score, top) in sorted(totals.items()):
            writer.writerow([student, f"{score:g}", f"{top:g}"])
    mistakes = named_mistakes(root / "autograded")
    with (out / "named_mistakes.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["mistake", "times named"])
        writer.writerows(mistakes.most_common())
    fig, ax = plt.subplots(figsize=(7, 3.5))
    fractions = [100 * s / t for s, t in totals.values() if t]
    ax.hist(fractions, bins=[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100.01], color="tab:blue", edgecolor="white")
    ax.set(xlabel="autograded score (% of the points)", ylabel="students", title=f"{len(fractions)} students")
    fig.tight_layout()
    fig.savefig(out / "score_histogram.png", dpi=100)
    plt.close(fig)

    lines = ["# Class report", "", f"{len(totals)} students, {len(assignments)} notebooks.", "",
             "## Exercises with the lowest pass rates", "", "| notebook | graded cell | pass rate |", "| --- | --- | --- |"]
    rates = sorted(attempted, key=lambda k: passed[k] / attempted[k])
    lines += [f"| {a} | {c} | {passed[(a, c)]}/{attempted[(a, c)]} |" for a, c in rates[:15]]
    lines += ["", "## Mistakes the feedback named most often", "", "| mistake | times |", "| --- | --- |"]
    lines += [f"| {m} | {n} |" for m, n in mistakes.most_common(15)] or ["| (none) | |"]
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
    summary = out / "class_report.md"
    summary.write_text("\n".join(lines))
    return summary

