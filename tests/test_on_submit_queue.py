"""Grading at submission without a hub: the queue is fair and survives a crash (autograder/on_submit/queue.py), the
policy is read as the guide says and refuses what is no setting (policy.py), and one grading at a time holds in a
course directory (autograder/grading/lock.py). The whole path on a real hub: tests/test_on_submit.py."""
from __future__ import annotations

import html
import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.grading.lock import grading_lock
from autograder.handins.inbound import exchange_time
from autograder.on_submit.policy import SubmitPolicy, check, describe, policy_for
from autograder.on_submit.queue import HandedIn, Queue
from autograder.on_submit.service import Service


def handed_in(queue: Queue, student: str, assignment: str, when: float, stamp: str = "") -> HandedIn:
    stamp = stamp or f"2026-11-28 10:{int(when):02d}:00.000000 UTC"
    item = HandedIn(f"{student}+{assignment}+{stamp}+x{when}", student, assignment, stamp, when)
    assert queue.add(item)
    return item


def test_one_students_ten_hand_ins_never_delay_anothers_first(tmp_path):
    queue = Queue(tmp_path / "queue.sqlite")
    for n in range(10):
        handed_in(queue, "ada", f"0{n % 7 + 1}_x{n}", when=n)  # ten hand-ins of ten assignments, all first
    handed_in(queue, "bob", "03_masking", when=20)
    rounds = [[item.student for item in queue.take(1, now=100 + n)] for n in range(3)]
    assert rounds[:2] == [["ada"], ["bob"]], rounds  # bob waits for one of ada's, not ten
    assert [item.student for item in queue.take(2, now=200)] == ["ada"], "one per student and round"


def test_a_round_takes_one_hand_in_per_student_those_served_longest_ago_first(tmp_path):
    queue = Queue(tmp_path / "queue.sqlite")
    handed_in(queue, "ada", "01_a", when=1)
    assert [i.student for i in queue.take(1, now=10)] == ["ada"]
    handed_in(queue, "ada", "02_b", when=11)
    handed_in(queue, "cy", "01_a", when=12)
    handed_in(queue, "bob", "01_a", when=13)
    assert [i.student for i in queue.take(3, now=20)] == ["cy", "bob", "ada"]


def test_of_one_students_waiting_hand_ins_only_the_newest_is_graded(tmp_path):
    queue = Queue(tmp_path / "queue.sqlite")
    first = handed_in(queue, "ada", "03_masking", when=1, stamp="2026-11-28 10:00:00.000000 UTC")
    handed_in(queue, "ada", "03_masking", when=2, stamp="2026-11-28 10:05:00.000000 UTC")
    taken = queue.take(4, now=10)
    assert [i.handed_in for i in taken] == ["2026-11-28 10:05:00.000000 UTC"]
    older = next(i for i in queue.all() if i.folder == first.folder)
    assert older.state == "superseded" and "10:05" in older.reason


def test_the_newest_hand_in_is_the_one_that_arrived_last_whatever_its_name_says(tmp_path):
    """A folder's name holds the time the student's own process wrote (`--Exchange.timestamp_format`, say): a hand-in
    named for 2099 that arrived first does not stand in for the one that arrived after it."""
    queue = Queue(tmp_path / "queue.sqlite")
    forged = handed_in(queue, "ada", "03_masking", when=1, stamp="2099-01-01 00:00:00.000000 UTC")
    honest = handed_in(queue, "ada", "03_masking", when=2, stamp="2026-11-28 10:05:00.000000 UTC")
    assert [i.folder for i in queue.take(4, now=10)] == [honest.folder]
    older = next(i for i in queue.all() if i.folder == forged.folder)
    assert older.state == "superseded" and "10:05" in older.reason, older


def test_a_hand_in_in_its_cooldown_waits_until_then(tmp_path):
    queue = Queue(tmp_path / "queue.sqlite")
    item = handed_in(queue, "ada", "03_masking", when=1)
    item.not_before = 50
    queue.update(item)
    assert queue.waiting(now=10) == 0 and queue.take(1, now=10) == []
    assert queue.waiting(now=60) == 1 and [i.folder for i in queue.take(1, now=60)] == [item.folder]


def test_after_a_crash_what_was_being_graded_waits_again_and_nothing_is_lost(tmp_path):
    queue = Queue(tmp_path / "queue.sqlite")
    for n, student in enumerate(["ada", "bob", "cy"]):
        handed_in(queue, student, "03_masking", when=n)
    taken = queue.take(2, now=10)
    assert len(taken) == 2
    again = Queue(tmp_path / "queue.sqlite")  # the service started again after kill -9
    assert again.recover() == 2
    assert sorted(i.state for i in again.all()) == ["waiting"] * 3
    assert not again.add(HandedIn(taken[0].folder, "ada", "03_masking", "", 99)), "a hand-in is queued once"


def test_the_policy_takes_the_default_then_the_assignments_own_entry():
    settings = {"default": {"before_due": "points", "cooldown_minutes": 10}, "07_shakespeare": {"grade": False}}
    assert policy_for(settings, "03_masking") == SubmitPolicy(before_due="points", cooldown_minutes=10)
    assert policy_for(settings, "07_shakespeare") == SubmitPolicy(grade=False, before_due="points", cooldown_minutes=10)
    assert policy_for({}, "03_masking") == SubmitPolicy()
    assert policy_for({"03_masking": {"budget_seconds": 45}}, "03_masking").budget_seconds == 45


def test_a_notebooks_budget_at_submission_is_six_times_the_courses_slowest_unless_the_policy_says():
    """The default fits the course: the slowest reference notebook (06's, 20.1 s to grade on a quiet 2-core machine:
    bench/README.md) times six, far under the course's own 300 s a cell; an assignment's entry changes it."""
    assert SubmitPolicy().budget_seconds == 120
    assert "budget_seconds" in describe() and "graded as it stands" in describe()


@pytest.mark.parametrize("settings, said", [
    ({"default": {"before_dew": "score"}}, "before_dew is no setting; the settings are grade, before_due"),
    ({"03_masking": {"before_due": "everything"}}, "before_due is 'everything': it is one of received, score, points, "
                                                   "page"),
    ({"default": {"before_due": "received", "to_lms": "each"}}, 'before_due is "received" .the score kept until the '
                                                                'due date. but to_lms is "each"'),
    ({"default": {"to_lms": "always"}}, "to_lms is 'always': it is one of each, after_due, never"),
    ({"default": {"cooldown_minutes": -5}}, "0 or more"),
    ({"03_masking": {"budget_seconds": "2 minutes"}}, "budget_seconds is '2 minutes': it is a number of seconds from 10 "
                                                      "to 900"),
    ({"default": {"budget_seconds": 3}}, "budget_seconds is 3: it is a number of seconds from 10 to 900"),
    ({"default": {"budget_seconds": 3600}}, "budget_seconds is 3600: it is a number of seconds from 10 to 900"),
])
def test_a_policy_that_is_no_policy_is_refused_saying_what_is_wrong(settings, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(")):
        policy_for(settings, "03_masking")


def test_a_budget_gives_each_cell_what_is_left_of_it_then_a_short_time_and_never_no_limit():
    """nbclient's timeout for each cell under a notebook's budget (autograder.grading.autograde_process.Budget): what
    is left, within the course's cell limit; once spent, the short time the cells after the stopped one get; never 0,
    which nbclient reads as no limit at all."""
    from autograder.grading.autograde_process import Budget
    now = time.monotonic()
    assert Budget(100, now - 40, cell_seconds=300, late_cell_seconds=10)(None) in (60, 61)
    assert Budget(900, now, cell_seconds=300, late_cell_seconds=10)(None) == 300
    assert Budget(100, now - 200, cell_seconds=300, late_cell_seconds=10)(None) == 10
    assert Budget(100, now - 99.999, cell_seconds=300, late_cell_seconds=10)(None) >= 1


def test_the_guide_lists_every_policy_key():
    from autograder.paths import ROOT
    guide = (ROOT / "docs" / "instructor-guide.md").read_text()
    assert "### Grading at submission" in guide, "the guide's hub section has no part on grading at submission"
    guide = guide.split("### Grading at submission", 1)[1].split("\n## ", 1)[0]
    for line in describe().splitlines():
        key = line.split()[0].rsplit(".", 1)[-1]
        assert f"`{key}`" in guide, f"the guide does not explain the on_submit key {key}"


def test_one_grading_at_a_time_in_a_course_directory_and_the_second_is_told_for_whom(tmp_path):
    waited = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from autograder.grading.lock import grading_lock
        with grading_lock(Path({str(tmp_path)!r}), "the instructor's grade", say=lambda s: print(s, flush=True)):
            print("got it", time.monotonic(), flush=True)
    """)], stdout=subprocess.PIPE, text=True)
    said = []
    with grading_lock(tmp_path, "grading at submission", say=said.append):
        with grading_lock(tmp_path, "the same process again", say=said.append):  # re-entrant: no wait
            pass
        time.sleep(3)
        released = time.monotonic()
    out = waited.communicate(timeout=60)[0].splitlines()
    assert said == []
    assert out[0].startswith("waiting: grading at submission (process ") and "is grading in" in out[0], out
    assert out[1].startswith("got it") and float(out[1].split()[-1]) >= released - 0.5, out


def test_the_lock_is_freed_when_its_holder_is_killed(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from autograder.grading.lock import grading_lock
        with grading_lock(Path({str(tmp_path)!r}), "a grading killed with -9"):
            print("holding", flush=True)
            time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    holder.kill()
    holder.wait()
    done = threading.Event()

    def take():
        with grading_lock(tmp_path, "the next", say=lambda s: None):
            done.set()

    threading.Thread(target=take, daemon=True).start()
    assert done.wait(30), "a lock of a killed process was never freed"


def test_the_due_date_is_acted_on_once_per_student_and_assignment(tmp_path):
    queue = Queue(tmp_path / "queue.sqlite")
    handed_in(queue, "ada", "03_masking", when=1)
    handed_in(queue, "ada", "03_masking", when=2)
    handed_in(queue, "bob", "03_masking", when=3)
    assert queue.due_not_handled() == [("ada", "03_masking"), ("bob", "03_masking")]
    queue.due_handled("ada", "03_masking")
    assert Queue(tmp_path / "queue.sqlite").due_not_handled() == [("bob", "03_masking")]


def test_an_on_submit_entry_that_is_no_assignment_is_refused():
    from course.about import NOTEBOOKS
    with pytest.raises(ValueError, match="entry '07_shakspeare', which is neither \"default\" nor an assignment"):
        check({"07_shakspeare": {"grade": False}}, list(NOTEBOOKS))
    check({"default": {}, "07_shakespeare": {"grade": False}}, list(NOTEBOOKS))


def test_a_hub_whose_policy_is_wrong_does_not_start_and_says_what_to_fix(tmp_path):
    import os

    from autograder.hub import process
    from autograder.hub.settings import HubSettings
    if os.geteuid() != 0:
        pytest.skip("a hub starts as root only")
    settings = HubSettings(root=str(tmp_path / "hub"), on_submit={"default": {"before_due": "all"}})
    with pytest.raises(SystemExit, match="before_due is 'all': it is one of received, score, points, page"):
        process.start(settings)
    assert not (tmp_path / "hub").exists(), "nothing is laid out for a hub that does not start"


def test_another_thread_of_the_same_process_waits_for_the_lock(tmp_path):
    """Re-entrant within one thread only: the service's web thread (or any other) never slips past its grading."""
    said, got = [], threading.Event()

    def other():
        with grading_lock(tmp_path, "another thread", say=said.append):
            got.set()

    with grading_lock(tmp_path, "grading at submission", say=said.append):
        thread = threading.Thread(target=other, daemon=True)
        thread.start()
        assert not got.wait(2), "a second thread took the lock the first holds"
    assert got.wait(30) and said and said[0].startswith("waiting: grading at submission"), said


def a_course(tmp_path: Path) -> tuple[Path, Path]:
    """A course directory whose gradebook has 03_masking released, and its exchange's inbound/."""
    root, inbound = tmp_path / "course", tmp_path / "exchange" / "inbound"
    root.mkdir()
    inbound.mkdir(parents=True)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.add_assignment("03_masking")
    return root, inbound


def submitted(inbound: Path, student: str, stamp: str = "2026-11-28 10:00:00.000000 UTC") -> Path:
    """A hand-in folder as `nbgrader submit` makes it in inbound/."""
    folder = inbound / f"{student}+03_masking+{stamp}+{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "03_masking.ipynb").write_text("{}")
    return folder


def test_a_hand_in_that_came_while_the_service_was_stopped_arrived_when_the_exchange_got_it(tmp_path):
    """Its student's wait counts from their Submit (the exchange's time of the folder), not from when a service started
    later first looked."""
    root, inbound = a_course(tmp_path)
    folder = submitted(inbound, "no-such-ada")
    time.sleep(2)  # the service is down a while
    looked = time.time()
    added = Service(root, inbound, {}).scan()
    assert [item.folder for item in added] == [folder.name]
    assert added[0].arrived == exchange_time(str(folder)) and added[0].arrived < looked - 1, (added[0].arrived, looked)


def test_intake_goes_on_while_grading_waits(tmp_path):
    """While the instructor's `python -m autograder grade` holds the course directory, the service's round waits for
    it (autograder.grading.lock); hand-ins that come meanwhile are in the queue all the same, with their own times."""
    root, inbound = a_course(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from autograder.grading.lock import grading_lock
        with grading_lock(Path({str(root)!r}), "python -m autograder grade"):
            print("holding", flush=True)
            time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)
    stop = threading.Event()
    try:
        assert holder.stdout.readline().strip() == "holding"
        first = submitted(inbound, "no-such-ada")
        service = Service(root, inbound, {})
        grading = threading.Thread(target=service.run, args=(stop,), kwargs={"pause": 0.2}, daemon=True)
        grading.start()
        queue = Queue(root / "on-submit" / "queue.sqlite")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.name not in queue.known():
            time.sleep(0.2)
        second = submitted(inbound, "no-such-bob")
        while time.monotonic() < deadline and second.name not in queue.known():
            time.sleep(0.2)
        states = {item.folder: item for item in queue.all()}
        assert second.name in states, "a hand-in that came while a round waited for the lock was not taken in"
        assert states[first.name].state == "waiting", "the round began: the lock did not hold it back"
        assert states[second.name].arrived == exchange_time(str(second))
    finally:
        stop.set()
        holder.kill()
        holder.wait()
    grading.join(60)
    assert not grading.is_alive(), "the service did not stop when asked"


def a_graded_hand_in(service: Service, student: str, shows: str) -> HandedIn:
    """A hand-in of 03_masking graded 7 of 9, shown to its student as the policy's `shows` says."""
    item = HandedIn(f"{student}+03_masking+2026-12-01 10:00:00.000000 UTC+x", student, "03_masking",
                    "2026-12-01 10:00:00.000000 UTC", time.time(), state="graded", score=7.0, max_score=9.0)
    item.shown = json.dumps(service.shown(item, shows))
    service.queue.add(item)
    return item


def test_received_shows_only_that_the_hand_in_was_graded_and_the_score_comes_at_the_due_date(tmp_path):
    """Issue 59: an instructor who wants hand-ins graded on arrival and scores seen only after the due date had no
    policy for it. `before_due: "received"`: the student reads that it was received and graded, no score, no points;
    the instructor's queue has the score; once the due date has passed, the student's score is shown."""
    from autograder.on_submit.web import WITHHELD, for_student, queue_page, student_page
    root, inbound = a_course(tmp_path)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("03_masking", duedate=datetime.utcnow() + timedelta(days=1))
        gb.add_student("ada")
    service = Service(root, inbound, {"default": {"before_due": "received"}})
    item = a_graded_hand_in(service, "ada", service.policy("03_masking").before_due)
    seen = for_student(service.queue.all("ada")[0])
    assert seen["score"] == "" and seen["exercises"] == {} and seen["words"] == WITHHELD, seen
    assert "7/9" not in student_page("ada", [seen], "/services/autograde/")
    assert "7/9 (shown to the student after the due date)" in queue_page(service.queue.all())
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("03_masking", duedate=datetime.utcnow() - timedelta(minutes=1))
        with gb.db.no_autoflush:
            gb.add_submission("03_masking", "ada")
    assert service.at_due_dates() == [("ada", "03_masking")]
    after = for_student(service.queue.all("ada")[0])
    assert after["score"].startswith("0/") and after["words"] != WITHHELD, (item.folder, after)


def test_an_assignment_without_a_due_date_is_named_on_the_queue_page_with_what_waits_for_one(tmp_path):
    """Issue 59: grading at submission with no due date held `before_due` for ever, and nothing said so. The
    instructor's queue page names the assignment, what waits (the page, the LMS), and how to give it a due date; a
    policy that waits for nothing says nothing."""
    from autograder.on_submit.web import queue_page
    root, inbound = a_course(tmp_path)  # 03_masking, no due date
    waiting = Service(root, inbound, {"default": {"before_due": "points"}})
    a_graded_hand_in(waiting, "ada", "points")
    (line,) = waiting.without_due_date()
    assert line.startswith("03_masking has no due date, so it is always before it: the feedback pages are not "
                           "released; no score goes to the LMS (to_lms after_due)."), line
    assert "nbgrader db assignment add 03_masking --duedate" in line
    assert html.escape(line) in queue_page(waiting.queue.all(), waiting.without_due_date())
    assert Service(root, inbound, {"default": {"before_due": "page", "to_lms": "never"}}).without_due_date() == []
