"""Graded as it is handed in (issue 51), on a real hub, in a real browser: students press Submit in the Assignment
List and nobody else acts; the service collects, grades, and JupyterLab shows each student a notice with their score
or with why it could not be graded; the grade is the instructor's `python -m autograder grade` for the same hand-in,
cell for cell; the instructor sees the queue; a service killed with -9 mid-job is started again and grades once; a
hand-in that sleeps an hour is graded as it stands within its budget while a classmate's is taken in at once.

The tests run in order, on one hub. Its policy for 03: each exercise's points before the due date, one graded
hand-in per student every 30 minutes; 02 gets 60 s a notebook (test 9). Screenshots: tests/artifacts/on-submit/."""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import expect

from autograder.demo.submissions import answered, solution_sources
from autograder.grading.autograde_process import BUDGET_SPENT
from autograder.grading.execute_timeouts import EXECUTE_TIMEOUTS
from autograder.on_submit.service import QUEUE
from autograder.paths import RELEASE, ROOT, SOURCE, notebook_path
from tests.browser import browser  # noqa: F401 (a fixture)
from tests.browser import VIEWPORT
from tests.conftest import copy_class
from tests.hub import Kernel, home_of, log_in, running_hub
from tests.test_hub_loop import assignments_tab, submit
from tests.test_hub_loop import log_in as log_in_in_browser

ADA, BOB, TEACHER = "sub-ada", "sub-bob", "sub-teacher"
A, WRONG = "03_masking", "02_attention"
POLICY = {"default": {"before_due": "points", "cooldown_minutes": 30}, WRONG: {"budget_seconds": 60}}
SHOTS = ROOT / "tests" / "artifacts" / "on-submit"
NOTICE = ".Toastify__toast"  # JupyterLab's notifications (deploy/grade-notice/ raises them)


@pytest.fixture(scope="module")
def hub():
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    with running_hub("sub", [ADA, BOB], [TEACHER], [A, WRONG], on_submit=POLICY, grading_jobs=2) as h:
        yield h


@pytest.fixture(scope="module")
def windows(browser, hub):  # noqa: F811
    """Each person's own browser window, kept across the tests; each window's last look saved at the end."""
    contexts = {}

    def window(name: str):
        if name not in contexts:
            contexts[name] = browser.new_context(viewport=VIEWPORT)
            contexts[name].new_page().set_default_timeout(120_000)
        return contexts[name].pages[0]

    yield window
    for name, context in contexts.items():
        context.pages[0].screenshot(path=SHOTS / f"last-{name}.png")
        context.close()


def put_in_place(hub, student: str, notebook: nbformat.NotebookNode) -> None:
    """`notebook` saved as `student`'s fetched 03 (as JupyterLab's save writes it: their own file)."""
    path = home_of(hub, student) / hub.course_id / A / f"{A}.ipynb"
    nbformat.write(notebook, path)
    account = pwd.getpwnam(student)
    os.chown(path, account.pw_uid, account.pw_gid)


def fetch(page) -> None:
    """The Assignments tab's Fetch of 03 (02 is released too)."""
    page.locator("#released_assignments_list .list_item", has_text=A).get_by_role("button", name="Fetch").click()
    page.locator("#fetched_assignments_list .list_item", has_text=A).first.wait_for()


def notice(page, *words: str):
    """The notice that holds all of `words` (the grade notice polls every 10 s)."""
    found = page.locator(NOTICE)
    for word in words:
        found = found.filter(has_text=word)
    expect(found.first).to_be_visible(timeout=300_000)
    expect(found.first).to_be_in_viewport(ratio=1)  # it has slid in
    page.wait_for_timeout(500)
    return found.first


def hand_in(kernel: Kernel, course: str, assignment: str, notebook: nbformat.NotebookNode, as_assignment: str = "") -> None:
    """Fetch `assignment`, put `notebook` in its place (named as `as_assignment`'s, when given), and submit: the
    student's own commands, in their own kernel."""
    name = as_assignment or assignment
    kernel.run(textwrap.dedent(f'''
        import subprocess
        os.chdir(os.path.expanduser("~"))
        if not os.path.isdir("{course}/{name}"):
            done = subprocess.run(["nbgrader", "fetch_assignment", "{name}", "--course", "{course}"],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        open("{course}/{name}/{name}.ipynb", "w").write({nbformat.writes(notebook)!r})
        done = subprocess.run(["nbgrader", "submit", "{name}", "--course", "{course}"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    '''))


def results(hub, session, name: str, starting_ok: bool = False) -> list[dict] | None:
    """`name`'s hand-ins as the notice reads them; with `starting_ok`, None while the service is (re)starting (the
    proxy answers 503 until it listens)."""
    answer = session.get(f"{hub.url}/services/autograde/api/mine")
    if starting_ok and answer.status_code in (502, 503):
        return None
    assert answer.status_code == 200 and answer.url.endswith("/api/mine"), (answer.status_code, answer.url)
    return answer.json()


def wait_for(hub, session, name: str, count: int, timeout: float = 600) -> list[dict]:
    """`name`'s results once `count` hand-ins are no longer waiting or being graded (fails with the service's log)."""
    deadline = time.monotonic() + timeout
    mine = None
    while time.monotonic() < deadline:
        mine = results(hub, session, name, starting_ok=True)
        if mine is None:
            time.sleep(1)
            continue
        done = [item for item in mine if item["state"] not in ("waiting", "grading") or item["reason"]]
        if len(done) >= count:
            return mine
        time.sleep(2)
    raise AssertionError(f"{name}'s hand-ins were not graded in {timeout:.0f} s: {mine}\n"
                         f"{(hub.state / 'jupyterhub.log').read_text()[-4000:]}")


@pytest.fixture(scope="module")
def bob(hub):
    kernel = Kernel(hub, BOB)
    yield kernel
    kernel.shut_down()


def solved(assignment: str) -> nbformat.NotebookNode:
    return answered(notebook_path(RELEASE, assignment), solution_sources(notebook_path(SOURCE, assignment)))


def test_1_ada_submits_and_a_notice_gives_her_score_with_no_instructor_step(hub, windows):
    page = windows(ADA)
    log_in_in_browser(page, hub, ADA)
    assignments_tab(page)
    fetch(page)
    put_in_place(hub, ADA, solved(A))
    submit(page)
    started = time.monotonic()
    shown = notice(page, f"{A}, handed in", "9/11")
    took = time.monotonic() - started
    assert shown.inner_text().count("written answers not graded yet") == 1, shown.inner_text()
    page.screenshot(path=SHOTS / "1-ada-notice-with-her-score.png")
    mine = results(hub, log_in(hub, ADA), ADA)
    assert len(mine) == 1 and mine[0]["state"] == "graded", json.dumps(mine)
    assert mine[0]["score"].startswith("9/11") and mine[0]["pending"] == "written answers not graded yet", mine
    assert mine[0]["exercises"] == {"causal_mask": "3/3", "padding_mask": "3/3", "masked_attention": "3/3"}, mine
    assert not mine[0]["page"], "the policy shows points, not the page, before the due date"
    with page.context.expect_page() as opened:  # the notice's button: her page of results, in a new tab
        shown.get_by_role("button", name="Your hand-ins").click()
    results_page = opened.value
    results_page.wait_for_load_state()
    assert "causal_mask 3/3" in results_page.inner_text("body"), results_page.inner_text("body")
    results_page.screenshot(path=SHOTS / "2-ada-her-hand-ins.png")
    results_page.close()
    print(f"Submit to notice: {took:.1f} s")


def test_2_the_grade_is_the_instructors_grade_of_the_same_hand_in(hub, tmp_path):
    """The course directory copied without its grades, then graded by `python -m autograder grade 03_masking`, as an
    instructor would: every cell's points and comment equal the service's."""
    course = copy_class(hub.course_dir, tmp_path / "course", "grading", "autograded", "feedback", "on-submit")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.remove_submission(A, ADA)
    graded = subprocess.run([sys.executable, "-m", "autograder", "grade", A], cwd=course,
                            env={**os.environ, "PYTHONPATH": str(course)}, capture_output=True, text=True,
                            timeout=1800)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]

    def cells(root):
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            submission = gb.find_submission(A, ADA)
            return {(g.name, float(g.score or 0), g.needs_manual_grade) for nb in submission.notebooks for g in nb.grades}

    assert cells(course) == cells(hub.course_dir)
    shutil.rmtree(course, ignore_errors=True)


def test_3_the_wrong_notebook_is_refused_and_its_student_reads_why(hub, windows):
    page = windows(BOB)
    log_in_in_browser(page, hub, BOB)
    assignments_tab(page)
    fetch(page)
    put_in_place(hub, BOB, solved(WRONG))
    submit(page)
    shown = notice(page, f"{A}, handed in", "could not be graded")
    assert f"this is notebook {WRONG}, not {A}" in shown.inner_text(), shown.inner_text()
    page.screenshot(path=SHOTS / "3-bob-notice-why-not-graded.png")
    mine = results(hub, log_in(hub, BOB), BOB)
    assert mine[0]["state"] == "refused" and f"this is notebook {WRONG}, not {A}" in mine[0]["reason"], mine


def test_4_a_hand_in_within_the_cooldown_waits_and_says_until_when(hub, windows):
    page = windows(ADA)
    assignments_tab(page)
    submit(page)
    shown = notice(page, "one hand-in of this assignment is graded every 30 minutes")
    assert "graded at " in shown.inner_text(), shown.inner_text()
    page.screenshot(path=SHOTS / "4-ada-second-hand-in-waits.png")
    latest = results(hub, log_in(hub, ADA), ADA)[0]
    assert latest["state"] == "waiting" and latest["reason"].startswith("graded at "), latest


def test_5_the_instructor_sees_the_queue_and_a_student_only_their_own(hub, windows):
    page = windows(TEACHER)
    log_in_in_browser(page, hub, TEACHER, next_url=f"/services/{hub.course_id}/formgrader")
    page.goto(f"{hub.url}/services/autograde/")
    table = page.locator("table").inner_text()
    for words in ([ADA, A, "graded", "9/11"], [BOB, A, "refused", f"this is notebook {WRONG}"], [ADA, "waiting"]):
        assert any(all(word in row for word in words) for row in table.splitlines()), (words, table)
    page.screenshot(path=SHOTS / "5-teacher-the-queue.png")
    ada, bob = log_in(hub, ADA), log_in(hub, BOB)
    own = ada.get(f"{hub.url}/services/autograde/").text
    assert ADA in own and BOB not in own, own[:500]
    assert BOB not in json.dumps(results(hub, ada, ADA)) and ADA not in json.dumps(results(hub, bob, BOB))
    assert ada.get(f"{hub.url}/services/autograde/feedback/{A}").status_code == 404, "no page before the due date"


def test_6_a_service_killed_mid_job_is_started_again_and_grades_once(hub, bob):
    """kill -9 of the service while it grades: the hub starts it again, it takes the hand-in up again, and the
    grading ledger holds one grade of it."""
    hand_in(bob, hub.course_id, A, solved(A))
    deadline = time.monotonic() + 300
    service = None
    while service is None and time.monotonic() < deadline:
        state = [item["state"] for item in results(hub, bob.session, BOB)][0]
        if state == "grading":
            service = next((int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                            and b"autograder.on_submit" in (p / "cmdline").read_bytes()), None)
        time.sleep(0.2)
    assert service is not None, "Bob's second hand-in was never seen being graded"
    os.kill(service, signal.SIGKILL)
    mine = wait_for(hub, bob.session, BOB, 2, timeout=900)
    assert mine[0]["state"] == "graded" and mine[0]["score"].startswith("9/11"), mine
    ledger = [json.loads(line) for line in (hub.course_dir / "grading" / "ledger.jsonl").read_text().splitlines()]
    mine_done = [entry for entry in ledger if entry.get("student") == BOB and entry.get("assignment") == A]
    assert len({entry.get("sha256") for entry in mine_done}) == len(mine_done) == 2, mine_done  # each hand-in once


def as_grader(hub, code: str) -> str:
    """`code` run by the grader account in the course directory (its gradebook stays the grader's own)."""
    account = pwd.getpwnam(hub.grader)
    done = subprocess.run(["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups",
                           sys.executable, "-c", textwrap.dedent(code)], cwd=hub.course_dir, capture_output=True,
                          text=True, env={**os.environ, "HOME": str(hub.course_dir.parent)}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_7_at_the_due_date_the_waiting_hand_in_is_graded_and_the_page_is_released(hub, windows):
    """03 is due in 40 s: ada's hand-in waiting out her cooldown is graded once the due date has passed, with no
    step of anyone's, and from then on she may open her feedback page (before it, the policy showed points only)."""
    as_grader(hub, f"""
        from datetime import datetime, timedelta, timezone
        from nbgrader.api import Gradebook
        with Gradebook("sqlite:///gradebook.db") as gb:
            gb.find_assignment({A!r}).duedate = datetime.now(timezone.utc).replace(tzinfo=None) + timedelta(seconds=40)
            gb.db.commit()
    """)
    session = log_in(hub, ADA)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        mine = results(hub, session, ADA, starting_ok=True) or []
        if mine and mine[0]["state"] == "graded" and mine[0]["page"]:
            break
        time.sleep(2)
    assert mine[0]["state"] == "graded" and mine[0]["score"].startswith("9/11") and mine[0]["page"], mine
    page = session.get(f"{hub.url}/services/autograde/feedback/{A}")
    assert page.status_code == 200 and f"{A}" in page.text, page.status_code
    window = windows(ADA)
    notice(window, f"{A}, handed in {mine[0]['hand_in']}", "9/11")
    window.screenshot(path=SHOTS / "6-ada-graded-at-the-due-date.png")


def test_8_a_hand_in_that_kills_its_kernel_says_why_and_the_queue_goes_on(hub, windows):
    """After the due date (test 7) no cooldown holds: bob hands in a notebook whose first answer ends its own kernel
    (os._exit); his result says what happened, and ada's hand-in after it is graded as usual."""
    crash = solved(A)
    cell = next(c for c in crash.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code")
    cell.source = "import os\nos._exit(1)\n" + cell.source
    page = windows(BOB)
    put_in_place(hub, BOB, crash)
    assignments_tab(page)
    submit(page)
    ada = windows(ADA)
    put_in_place(hub, ADA, solved(A))
    assignments_tab(ada)
    submit(ada)
    session = log_in(hub, BOB)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        bobs = results(hub, session, BOB, starting_ok=True) or []
        if len(bobs) == 3 and bobs[0]["state"] in ("graded", "refused"):
            break
        time.sleep(2)
    assert bobs[0]["state"] in ("graded", "refused") and bobs[0]["reason"], bobs[0]
    assert not bobs[0]["score"].startswith("9/11"), bobs[0]
    shown = notice(page, f"{A}, handed in {bobs[0]['hand_in']}")
    page.screenshot(path=SHOTS / "7-bob-kernel-ended.png")
    assert bobs[0]["reason"][:40] in shown.inner_text().replace("\n", " "), (bobs[0]["reason"], shown.inner_text())
    adas = wait_for(hub, log_in(hub, ADA), ADA, 3)
    assert adas[0]["state"] == "graded" and adas[0]["score"].startswith("9/11"), adas[0]
    notice(ada, f"{A}, handed in {adas[0]['hand_in']}", "9/11")


def queued(hub) -> dict[str, dict]:
    """The service's queue as it is now, each hand-in by its folder's name (read-only: the service writes it)."""
    with contextlib.closing(sqlite3.connect(f"file:{hub.course_dir / QUEUE}?mode=ro", uri=True, timeout=30)) as db:
        db.row_factory = sqlite3.Row
        return {row["folder"]: dict(row) for row in db.execute("SELECT * FROM handins")}


def wait_in_queue(hub, what: str, found, timeout: float = 600):
    """The first of `found(queue)`'s answers that is not None, asked every 0.2 s (fails with the service's log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = found(queued(hub))
        if answer is not None:
            return answer
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen in {timeout:.0f} s: {queued(hub)}\n"
                         f"{(hub.state / 'jupyterhub.log').read_text()[-4000:]}")


def test_9_a_hand_in_that_sleeps_holds_up_no_classmates_intake_and_is_graded_as_it_stands(hub, bob):
    """bob's 02 defines a correct `attention`, then sleeps an hour in the same cell. While it is being graded, ada hands
    in: her hand-in is in the queue at once, arrived when she pressed Submit (the exchange's time, not when grading let
    the service look). bob's is stopped when 02's budget (60 s, the policy) is spent, not at the course's 300 s a cell,
    and graded as it stands: his correct function earns its points, and his reason says what was stopped and why."""
    ada = Kernel(hub, ADA)  # her server ready before bob's budget starts to run
    sleeper = solved(WRONG)
    cell = next(c for c in sleeper.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code")
    cell.source += "\n\nimport time\ntime.sleep(3600)\n"
    hand_in(bob, hub.course_id, WRONG, sleeper)
    bobs = wait_in_queue(hub, "bob's 02 being graded", lambda q: next(
        (f for f, row in q.items() if (row["student"], row["assignment"], row["state"]) == (BOB, WRONG, "grading")),
        None))
    before = {folder for folder, row in queued(hub).items() if row["student"] == ADA}
    pressed = time.time()
    hand_in(ada, hub.course_id, A, solved(A))
    done = time.time()
    adas, bob_then = wait_in_queue(hub, "ada's hand-in in the queue", lambda q: next(
        ((row, q[bobs]["state"]) for f, row in q.items() if row["student"] == ADA and f not in before), None))
    ada.shut_down()
    assert bob_then == "grading", f"ada's hand-in was seen only once bob's was {bob_then}: intake waited for grading"
    assert pressed - 1 <= adas["arrived"] <= done + 1, (pressed, adas["arrived"], done)

    graded = wait_in_queue(hub, "bob's 02 graded", lambda q: q[bobs] if q[bobs]["state"] not in ("waiting", "grading")
                           else None)
    assert graded["state"] == "graded", graded
    assert "was still running when the notebook's 60 s of grading at submission ran out: it was stopped there and " \
           "the notebook graded as it stands" in graded["reason"], graded["reason"]
    shown = json.loads(graded["shown"])
    assert shown["score"].startswith("3/5") and shown["exercises"] == {"attention": "3/3"}, shown
    ledger = [json.loads(line) for line in (hub.course_dir / "grading" / "ledger.jsonl").read_text().splitlines()]
    seconds = [entry["seconds"] for entry in ledger if entry.get("student") == BOB and entry.get("assignment") == WRONG]
    assert len(seconds) == 1 and seconds[0] < EXECUTE_TIMEOUTS["timeout"], seconds  # the budget stopped it, not 300 s
    autograded = nbformat.read(notebook_path(hub.course_dir / "autograded" / BOB, WRONG), as_version=4)
    stopped = [c for c in autograded.cells if any(o.get("ename") == BUDGET_SPENT for o in c.get("outputs", []))]
    assert len(stopped) == 1 and "time.sleep(3600)" in stopped[0].source, [c.source[:80] for c in stopped]
