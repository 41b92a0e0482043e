"""Issue 39: what the instructor reads after grading. The grade command's table counts as `reports/scores.csv` and the
class report do (a missing hand-in is 0 of its points; every student in the gradebook has a row) and fits a terminal
of 100 columns; the run's summary, the late penalty's lateness and the student's refusal page read as they should.

No notebook is run: the class is tests/lms_class.py's gradebook (nbgrader's own API), with a student who handed in
nothing added; the refusal's reason is preflight's own, for a real notebook of another assignment. An extension is nbgrader's own,
in that gradebook."""
from __future__ import annotations

import csv
import re
import warnings
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from nbgrader.api import Gradebook
from sqlalchemy.exc import SAWarning

from autograder.handins import preflight
from autograder.cli import run_summary
from autograder.demo.submissions import write_submission
from autograder.results.extension import grant_extension
from autograder.results.feedback_page import refusal_page
from autograder.paths import ROOT, notebook_path
from autograder.results.report import read_term, score_table, write_report
from autograder.results.scores import PENDING, PENDING_MARK, PENDING_NOTE, duration, pending_count
from tests.lms_class import A, B, class_gradebook


def _class(tmp_path_factory) -> Path:
    """The LMS tests' class, and nobody, who handed in nothing, as a course root with its reports written."""
    database = class_gradebook(tmp_path_factory, "gradebook.db")
    with Gradebook(f"sqlite:///{database}") as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's autoflush notice on a gradebook with submissions
        gb.add_student("nobody")
    write_report(database.parent, {})
    return database.parent


def _table_rows(table: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in table.splitlines() if line.startswith(("demo_", "nobody"))}


def test_the_table_counts_as_scores_csv_and_has_every_student(tmp_path_factory):
    root = _class(tmp_path_factory)
    table = score_table(read_term(root / "gradebook.db"))
    rows = _table_rows(table)
    with open(root / "reports" / "scores.csv") as f:
        scores = {row["student"]: row for row in csv.DictReader(f)}
    assert set(rows) == set(scores) and "nobody" in rows, table
    for student, row in scores.items():
        assert rows[student][-2].rstrip(PENDING_MARK) == f"{row['score']}/{row['of']}", (student, rows[student], row)
        assert rows[student][-1] == row["percent"], (student, rows[student], row)
    # demo_empty handed in A alone: 0 of A's 9 and 0 of B's 10, not 0 of 9
    assert rows["demo_empty"] == ["0/9", "missing", "0/19", "0.0"], rows["demo_empty"]
    assert rows["nobody"] == ["missing", "missing", "0/19", "0.0"], rows["nobody"]


def test_the_table_fits_a_terminal_and_says_pending_once(tmp_path_factory):
    root = _class(tmp_path_factory)
    table = score_table(read_term(root / "gradebook.db"), ["demo_broken / 03_masking: cell 1 raised NameError"])
    grid = table.split("\n\nNeeds a look:")[0]
    assert max(len(line) for line in grid.splitlines()) <= 100, grid
    assert _table_rows(table)["demo_broken"][:2] == ["7/9*", "6/10"], table
    assert table.count(PENDING) == 1 and PENDING_NOTE in table, table
    assert ("(late: -N): the late penalty, taken off everywhere; formgrader alone shows the points before it."
            in table.splitlines()), "formgrader cannot show the penalty: the table, where it shows, says so"
    assert table.endswith("Needs a look:\n  demo_broken / 03_masking: cell 1 raised NameError"), table
    report = (root / "reports" / "class_report.md").read_text()
    assert "| demo_broken | 7/9* | 6/10 | 13/19* |" in report and PENDING_NOTE in report, report


def test_the_summary_points_above_only_at_what_is_there():
    nothing = run_summary([SimpleNamespace(status="unchanged", reason="")] * 6, 0)
    assert nothing == ("0 graded, 6 skipped as unchanged since the last run, 0 refused, 0 under submitted/ not "
                       "graded, 0 need a look"), nothing
    some = run_summary([SimpleNamespace(status="refused", reason="wrong notebook")], 2)
    assert "1 refused (no gradable notebook: 0, with the reason under Needs a look)" in some, some
    assert "2 under submitted/ not graded (listed above)" in some and some.endswith("1 needs a look"), some


def test_a_count_of_written_answers_agrees_with_its_noun():
    assert [pending_count(n) for n in (1, 2)] == ["1 written answer not graded yet", "2 written answers not graded yet"]


def test_lateness_reads_as_a_person_says_it():
    said = [duration(seconds) for seconds in (0.4, 47.2844, 81, 725, 3600, 11_520.7, 86_400, 189_000)]
    assert said == ["0 s", "47 s", "1 min 21 s", "12 min", "1 h", "3 h 12 min", "1 day", "2 days 4 h"], said


def test_the_refusal_page_speaks_to_the_student(tmp_path):
    wrong = notebook_path(tmp_path / "erin", A)  # notebook 02 handed in as 03
    write_submission("demo_perfect", notebook_path(ROOT / "release", "02_attention"),
                     notebook_path(ROOT / "source", "02_attention"), wrong)
    reason = preflight.check(wrong.parent, wrong.name, notebook_path(ROOT / "release", A)).fatal
    assert "ask for" in reason, reason  # preflight's words are the instructor's
    page = refusal_page(tmp_path / "page.html", A, "erin", "0 / 9", reason).read_text()
    assert "this is notebook 02_attention, not 03_masking." in page, page
    assert "ask for" not in page and "graded 0" not in page, page
    assert f"Hand in <code>{A}.ipynb</code>" in page, page


def test_an_extension_moves_the_due_date_before_or_after_the_hand_in(tmp_path_factory):
    """Issue 48: an extension for a student who had not handed in yet was refused. It waits beside the gradebook
    until the hand-in is graded, then nbgrader holds it and the late penalty is worked out with it."""
    from autograder.results.extension import WAITING, grant_waiting_extensions
    from autograder.grading.engine import apply_late_policy
    database = class_gradebook(tmp_path_factory, "gradebook.db")
    said = grant_extension(database, A, "demo_partial", days=2, hours=3)
    assert said.startswith(f"demo_partial / {A}: extended by 2 days 3 h; due 2026-12-06 20:00:00 (UTC)"), said
    with Gradebook(f"sqlite:///{database}") as gb:
        assert gb.find_submission(A, "demo_partial").duedate == datetime(2026, 12, 6, 20, 0)
        assert gb.find_submission(A, "demo_perfect").duedate == datetime(2026, 12, 4, 17, 0), "hers alone"
    assert grant_extension(database, A, "demo_partial") == f"demo_partial / {A}: no extension; due 2026-12-04 17:00:00."

    said = grant_extension(database, B, "demo_empty", days=1)
    assert said == (f"demo_empty / {B}: extended by 1 day; due 2026-12-05 17:00:00 (UTC). demo_empty has not handed "
                    f"it in yet: the extension waits in {WAITING} and counts from the first grading of their "
                    "hand-in."), said
    said = grant_extension(database, B, "dmo_empty", days=1)
    assert "dmo_empty is not in the gradebook yet: if that is not their id, take it back with `python -m autograder " \
        f"extend {B} --student dmo_empty --days 0`" in said, said
    assert grant_extension(database, B, "dmo_empty") == f"dmo_empty / {B}: no extension; due 2026-12-04 17:00:00."
    with Gradebook(f"sqlite:///{database}") as gb, warnings.catch_warnings():  # her hand-in, 20 h late, graded
        warnings.simplefilter("ignore", SAWarning)
        gb.add_submission(B, "demo_empty", timestamp=datetime(2026, 12, 5, 13, 0))
    assert grant_waiting_extensions(database) == [f"demo_empty / {B}: the extension you gave before the hand-in "
                                                  "counts now; due 2026-12-05 17:00:00"]
    assert not (database.parent / WAITING).exists(), "nbgrader holds it now"
    assert apply_late_policy(database.parent, [B]) == []
    with Gradebook(f"sqlite:///{database}") as gb:
        submission = gb.find_submission(B, "demo_empty")
        assert submission.duedate == datetime(2026, 12, 5, 17, 0) and submission.total_seconds_late == 0


def test_the_progress_bar_draws_every_notebook_as_it_is_graded(tmp_path_factory, monkeypatch, capsys):
    """Issue 48: `make demo`'s bar sat at 7/35 for minutes while the ledger grew. tqdm by default draws a step only
    after `miniters` more, a number it learns from the pace of the steps it drew: a burst of refused hand-ins, each
    recorded in a few hundredths of a second, teaches it to wait for several more, and the next steps are notebooks
    minutes apart. Here eight unreadable hand-ins are refused at once (30 ms each), then three notebooks finish a
    minute apart (nbgrader's autograde stood in for: a grade the grader could not make, recorded as real ones are),
    on tqdm's own clock: the bar draws each of the three."""
    import tqdm.std
    from autograder.grading import engine as grading
    root = class_gradebook(tmp_path_factory, "gradebook.db").parent
    release = notebook_path(root / "release", A)
    release.parent.mkdir(parents=True)
    release.write_bytes(notebook_path(ROOT / "release", A).read_bytes())
    for n in range(8):
        unreadable = notebook_path(root / "submitted" / f"unreadable{n}", A)
        unreadable.parent.mkdir(parents=True)
        unreadable.write_text("{ not a notebook")
    for n in range(3):
        notebook = notebook_path(root / "submitted" / f"slow{n}", A)
        notebook.parent.mkdir(parents=True)
        notebook.write_bytes(release.read_bytes())
    clock = [1000.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: clock[0])
    monkeypatch.setattr(tqdm.std.tqdm, "monitor_interval", 0)  # no thread of its own, on the real clock
    recorded = grading.record

    def record(*args, **kwargs):
        recorded(*args, **kwargs)
        clock[0] += 0.03

    def slowly(root, todo, template, jobs, limits, say=lambda doing: None):
        say("1 at a time")
        for job in todo:
            clock[0] += 60
            job.reason = f"stood in for nbgrader; {grading.TRY_AGAIN}"
            yield job

    monkeypatch.setattr(grading, "record", record)
    monkeypatch.setattr(grading, "run_here", slowly)
    graded = grading.grade(root, [A], feedback=False)
    assert len(graded) == 11
    drawn = [int(found) for found in re.findall(r"autograding:[^\r\n]*?\| *(\d+)/11 ", capsys.readouterr().err)]
    assert {9, 10, 11} <= set(drawn), f"the bar drew {drawn}"
