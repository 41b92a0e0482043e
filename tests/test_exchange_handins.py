"""Hand-ins through nbgrader's exchange, as the grade, the feedback and its release read them (autograder.handins.handin): a
copy of the demo class (tests/conftest.py) whose students hand in with the real `nbgrader submit` and are collected
with the real `nbgrader collect --update`.

- demo_perfect hands in the notebook already graded, again, after the due date: graded again, with its time and
  late penalty (it was "skipped as unchanged", on time);
- erin's first hand-in is another assignment's notebook: refused, and her refusal page goes out through the exchange;
- demo_perfect then hands in that wrong notebook: the refusal is the hand-in that counts (grades.csv, autograded/,
  feedback/), filed under its own time, and the page released for the earlier hand-in stays.
"""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.paths import notebook_path
from tests.conftest import run_autograder

A, OTHER = "03_masking", "02_attention"
COURSE = "transformers-from-scratch"


def nbgrader(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, capture_output=True, text=True,
                            timeout=300)
    assert not check or result.returncode == 0, f"nbgrader {' '.join(args)}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result


def autograder(root: Path, *args: str) -> subprocess.CompletedProcess:
    result = run_autograder(root, *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def submit(root: Path, home: Path, student: str, notebook: Path) -> str:
    """`nbgrader submit` of `notebook` as `student`'s 03_masking, from their own folder and cache: its time."""
    folder = home / student / A
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copyfile(notebook, folder / f"{A}.ipynb")
    nbgrader(root, "submit", A, f"--student={student}", f"--Exchange.assignment_dir={home / student}",
             f"--Exchange.cache={home / student / 'cache'}")
    return max(path.read_text() for path in (home / student / "cache" / COURSE).glob(f"{student}+{A}+*/timestamp.txt"))


def fetch_feedback(root: Path, home: Path, student: str) -> dict[str, str]:
    """What `nbgrader fetch_feedback` brings `student`: each page's text by the hand-in's time and the page's name
    (nothing when nothing was released for them)."""
    nbgrader(root, "fetch_feedback", A, f"--student={student}", f"--Exchange.assignment_dir={home / student}",
             f"--Exchange.cache={home / student / 'cache'}", check=False)
    return {f"{page.parent.name}/{page.name}": page.read_text()
            for page in (home / student / A / "feedback").glob("*/*.html")}


def grades(root: Path) -> dict[str, dict]:
    with open(root / "grades.csv") as f:
        return {row["student_id"]: row for row in csv.DictReader(f) if row["assignment"] == A}


@pytest.fixture(scope="module")
def exchange_class(demo_class, tmp_path_factory):
    base = tmp_path_factory.mktemp("exchange-class")
    root = base / "course"
    shutil.copytree(demo_class[0], root, symlinks=True)
    exchange, home = base / "exchange", base / "home"
    exchange.mkdir()
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.Exchange.root = {str(exchange)!r}\nc.LateSubmissionPlugin.penalty_method = 'zero'\n")
    nbgrader(root, "release_assignment", A)
    due = datetime.now(timezone.utc) - timedelta(minutes=1)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:  # what `nbgrader db assignment add --duedate` does
        gb.update_or_create_assignment(A, duedate=f"{due:%Y-%m-%d %H:%M:%S} UTC")
    wrong = notebook_path(root / "release", OTHER)
    runs = {"graded": grades(root)}
    times = {"perfect late": submit(root, home, "demo_perfect", notebook_path(root / "submitted" / "demo_perfect", A)),
             "erin": submit(root, home, "erin", wrong)}
    nbgrader(root, "collect", "--update", A)
    runs["first"] = autograder(root, "grade", A).stdout
    runs["first grades"] = grades(root)
    runs["first release"] = autograder(root, "release-feedback", A).stdout
    times["perfect wrong"] = submit(root, home, "demo_perfect", wrong)
    nbgrader(root, "collect", "--update", A)
    runs["second"] = autograder(root, "grade", A).stdout
    runs["second grades"] = grades(root)
    runs["second release"] = autograder(root, "release-feedback", A).stdout
    fetched = {student: fetch_feedback(root, home, student) for student in ("demo_perfect", "erin")}
    return root, runs, times, fetched


def test_the_same_notebook_handed_in_late_is_graded_again_with_its_time(exchange_class):
    _, runs, times, _ = exchange_class
    before, after = runs["graded"]["demo_perfect"], runs["first grades"]["demo_perfect"]
    assert float(before["score"]) > 0 and float(before["late_submission_penalty"]) == 0, before
    # demo_invalid's unreadable hand-in, refused in the demo's run, is counted as refused, not as skipped
    assert "1 graded, 3 skipped as unchanged since the last run, 2 refused" in runs["first"], runs["first"][-1500:]
    assert after["timestamp"].startswith(times["perfect late"][:19]), (after, times)
    assert float(after["late_submission_penalty"]) == float(after["raw_score"]) > 0, after
    assert float(after["score"]) == 0, "handed in after the due date, under the policy 'zero'"


def test_a_wrong_first_hand_in_gets_its_refusal_page_through_the_exchange(exchange_class):
    _, runs, times, fetched = exchange_class
    assert "feedback/erin/" not in runs["first release"], runs["first release"]
    assert "(demo_perfect, erin)" in runs["first release"], runs["first release"]
    page = fetched["erin"].get(f"{times['erin']}/{A}.html", "nothing fetched")
    assert f"this is notebook {OTHER}, not {A}" in page, page


def test_a_wrong_re_hand_in_counts_under_its_own_time_and_the_earlier_page_stays(exchange_class):
    root, runs, times, fetched = exchange_class
    row = runs["second grades"]["demo_perfect"]
    assert row["timestamp"].startswith(times["perfect wrong"][:19]) and float(row["raw_score"]) == 0, row
    autograded = notebook_path(root / "autograded" / "demo_perfect", A).read_text()
    assert "could not be graded" in autograded and "def " not in autograded, \
        "autograded/ holds the refusal's stand-in (formgrader's graded 0), not the earlier hand-in"
    feedback = notebook_path(root / "feedback" / "demo_perfect", A).parent
    assert (feedback / "timestamp.txt").read_text() == times["perfect wrong"]
    pages = fetched["demo_perfect"]
    assert f"this is notebook {OTHER}, not {A}" in pages.get(f"{times['perfect wrong']}/{A}.html", ""), pages.keys()
    earlier = pages.get(f"{times['perfect late']}/{A}.html", "")
    assert "could not be graded" not in earlier and "Score" in earlier, "the earlier hand-in's page was overwritten"
