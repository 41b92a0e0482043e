"""Grading at submission without a hub: the queue is fair and survives a crash (autograder/on_submit/queue.py), the
policy is read as the guide says and refuses what is no setting (policy.py), and one grading at a time holds in a
course directory (autograder/grading/lock.py). The whole path on a real hub: tests/test_on_submit.py."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from autograder.grading.lock import grading_lock
from autograder.on_submit.policy import SubmitPolicy, check, describe, policy_for
from autograder.on_submit.queue import HandedIn, Queue


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


@pytest.mark.parametrize("settings, said", [
    ({"default": {"before_dew": "score"}}, "before_dew is no setting; the settings are grade, before_due"),
    ({"03_masking": {"before_due": "everything"}}, "before_due is 'everything': it is one of score, points, page"),
    ({"default": {"to_lms": "always"}}, "to_lms is 'always': it is one of each, after_due, never"),
    ({"default": {"cooldown_minutes": -5}}, "0 or more"),
])
def test_a_policy_that_is_no_policy_is_refused_saying_what_is_wrong(settings, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(")):
        policy_for(settings, "03_masking")


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
    with pytest.raises(SystemExit, match="before_due is 'all': it is one of score, points, page"):
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
