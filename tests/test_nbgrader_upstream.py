"""The class hub's collect (autograder.hub.owned_collect.OwnedCollect) and its students' submit
(course.private_submit.PrivateSubmit) keep every behaviour nbgrader's own tests promise, except the owner rule (issue
47, items 6 and 7), the hand-in's modes and its time (issue 58, items 2 and 3).

nbgrader's exchange tests ship in its wheel (nbgrader/tests/apps/); they run here, unchanged, with a Jupyter config
folder whose nbgrader_config.py selects the course's collect and submit for every nbgrader command they start.
DELIBERATE is the one list of the tests that differ and why; every other test passes. The tests after it show, with
real nbgrader commands on a real exchange, what nbgrader's tests cannot: the groupshared modes of a hand-in the owner
rule keeps, a copy that fails part-way, what else is left in inbound/, the modes a hand-in is left with, and its time.
"""
from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import nbformat
import nbgrader.tests.apps
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.tests import run_nbgrader

OWNED_COLLECT = "autograder.hub.owned_collect.OwnedCollect"
PRIVATE_SUBMIT = "course.private_submit.PrivateSubmit"
UPSTREAM = Path(nbgrader.tests.apps.__file__).parent
EXCHANGE_TESTS = ["test_nbgrader_collect.py", "test_nbgrader_fetch_assignment.py", "test_nbgrader_fetchfeedback.py",
                  "test_nbgrader_releaseassignment.py", "test_nbgrader_releasefeedback.py", "test_nbgrader_submit.py",
                  "test_nbgrader_list.py"]
UPSTREAM_COUNT = 67  # nbgrader 0.9.6's tests in those files (requirements.txt pins it)

# Where nbgrader's own tests and the course's collect differ, each on purpose: the test, what its failure says, why.
# The first three hand in as "foobar_student", a name no account has, from the account running the tests.
DELIBERATE = {
    "test_nbgrader_collect.py::TestNbGraderCollect::test_owner_check": (
        "no account is named foobar_student",
        "nbgrader collects a hand-in owned by another account with a warning that CollectApp.check_owner=False "
        "silences; OwnedCollect never collects it and always names it to the instructor (a student could otherwise "
        "hand in as a classmate)"),
    "test_nbgrader_collect.py::TestNbGraderCollect::test_permissions[False]": (
        "submitted/foobar_student/ps1",
        "it reads the modes of submitted/foobar_student/ps1, which OwnedCollect does not collect (the owner rule); "
        "test_collected_modes_are_nbgraders below checks the same modes on a hand-in the rule keeps"),
    "test_nbgrader_collect.py::TestNbGraderCollect::test_permissions[True]": (
        "submitted/foobar_student/ps1",
        "as test_permissions[False], with CourseDirectory.groupshared = True"),
    "test_nbgrader_submit.py::TestNbGraderSubmit::test_submit_readonly": (
        "assert 0 == 4",
        "it wants a hand-in's files readable by every account (0644); PrivateSubmit leaves them 0640, the student's "
        "and the grader's group's alone (test_a_hand_in_is_its_students_and_the_graders_groups_alone below)"),
    "test_nbgrader_fetchfeedback.py::TestNbGraderFetchFeedback::test_single_file": (
        "ps1/feedback/",
        "it wants the student's feedback folder named by the collected copy's timestamp.txt; fetch_feedback names it "
        "by the time the student's own submit wrote (what they know their hand-in by), and OwnedCollect writes the "
        "exchange's time in the copy (test_a_hand_in_is_collected_with_the_exchanges_time below)"),
}


def _account() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def _environment(**more: str) -> dict[str, str]:
    """The tests' environment for nbgrader: its `alembic` on PATH, USER set (nbgrader's tests read it), no pytest
    variables of this run."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", USER=_account(), **more)
    return env


def test_nbgraders_exchange_tests_pass_against_the_course_collect_but_the_deliberate_differences(tmp_path):
    config = tmp_path / "jupyter-config"
    config.mkdir()
    (config / "nbgrader_config.py").write_text(f"c.ExchangeFactory.collect = {OWNED_COLLECT!r}\n"
                                              f"c.ExchangeFactory.submit = {PRIVATE_SUBMIT!r}\n")
    report = tmp_path / "upstream.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-c", os.devnull,
                           "--rootdir", str(UPSTREAM), f"--junitxml={report}", *EXCHANGE_TESTS],
                          cwd=UPSTREAM, env=_environment(JUPYTER_CONFIG_PATH=str(config)), capture_output=True,
                          text=True, timeout=1200)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = {}
    for case in ElementTree.parse(report).iter("testcase"):
        module, cls = case.get("classname").rsplit(".", 2)[-2:]
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        results[f"{module}.py::{cls}::{case.get('name')}"] = (
            "skipped" if case.find("skipped") is not None else
            "passed" if problem is None else (problem.get("message", "") + "\n" + (problem.text or "")))
    assert len(results) == UPSTREAM_COUNT, f"nbgrader's exchange tests are now {len(results)}: look at the change"
    differing = {test: outcome for test, outcome in results.items() if outcome != "passed"}
    assert set(differing) == set(DELIBERATE), {test: outcome[-1500:] for test, outcome in differing.items()
                                               if test not in DELIBERATE} or sorted(set(DELIBERATE) - set(differing))
    for test, (shown, _) in DELIBERATE.items():
        assert shown in differing[test], f"{test} fails for another reason:\n{differing[test][-2000:]}"


@pytest.fixture
def nbgrader_here(monkeypatch):
    """Real nbgrader commands in a course directory, run as nbgrader's own tests run them (in this process, through
    nbgrader.tests.run_nbgrader: seconds less each than a new process)."""
    for key, value in _environment().items():
        monkeypatch.setenv(key, value)

    def run(course: Path, *args: str, returncode: int = 0) -> str:
        monkeypatch.chdir(course)
        return run_nbgrader(list(args), retcode=returncode)
    return run


def _course(run, tmp_path: Path, *settings: str) -> Path:
    """A course directory with one released assignment (ps1) in an exchange of its own, handed in with the course's
    submit and collected with its collect; the account running the tests is the student, with its assignment in
    home/ps1/."""
    course, exchange, home = tmp_path / "course", tmp_path / "exchange", tmp_path / "home"
    for folder in (course / "release" / "ps1", exchange, home / "ps1"):
        folder.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_code_cell("answer = 42")]), course / "release" / "ps1" / "p1.ipynb")
    (course / "nbgrader_config.py").write_text("\n".join([
        f"c.CourseDirectory.root = {str(course)!r}", "c.CourseDirectory.course_id = 'abc101'",
        f"c.Exchange.root = {str(exchange)!r}", f"c.Exchange.cache = {str(tmp_path / 'cache')!r}",
        f"c.Exchange.assignment_dir = {str(home)!r}", f"c.ExchangeFactory.collect = {OWNED_COLLECT!r}",
        f"c.ExchangeFactory.submit = {PRIVATE_SUBMIT!r}", *settings]))
    run(course, "release_assignment", "ps1")
    return course


def _submit(run, course: Path, answer: str, *options: str) -> Path:
    """The student's p1.ipynb, with `answer`, handed in with `nbgrader submit`: its folder in inbound/."""
    nbformat.write(new_notebook(cells=[new_code_cell(answer)]), course.parent / "home" / "ps1" / "p1.ipynb")
    inbound = course.parent / "exchange" / "abc101" / "inbound"
    before = set(inbound.iterdir()) if inbound.exists() else set()
    run(course, "submit", "ps1", *options)
    [handin] = set(inbound.iterdir()) - before
    return handin


def _mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o7777)[2:]


def test_collected_modes_are_nbgraders(tmp_path, nbgrader_here):
    """nbgrader's test_permissions on a hand-in the owner rule keeps: with CourseDirectory.groupshared the collected
    folder and files are nbgrader's (it adds 2770 and 660: the group may read and write them), without it the
    collected folder keeps the hand-in's mode and its files are 644. nbgrader's test wants 2777 and 777 for the folder
    because nbgrader's submit leaves the hand-in 0777; the course's leaves it 0750."""
    course = _course(nbgrader_here, tmp_path)
    collected = course / "submitted" / _account() / "ps1"
    for groupshared in (False, True):
        with open(course / "nbgrader_config.py", "a") as config:
            config.write(f"\nc.CourseDirectory.groupshared = {groupshared}\n")
        _submit(nbgrader_here, course, f"answer = {groupshared}")
        nbgrader_here(course, "collect", "--update", "ps1")
        seen = {"folder": _mode(collected), "notebook": _mode(collected / "p1.ipynb")}
        assert seen == ({"folder": "2770", "notebook": "664"} if groupshared else
                        {"folder": "750", "notebook": "644"}), f"groupshared = {groupshared}: {seen}"


def test_a_copy_that_fails_part_way_keeps_the_earlier_hand_in_and_fails_the_collect(tmp_path, nbgrader_here):
    """The newer hand-in holds, beside its notebook, a named pipe the student made in their own folder: no file to
    copy. The collect has begun to copy the hand-in when the pipe fails it: the hand-in collected before stays whole
    in submitted/, no half copy is left, the instructor is told which hand-in and why, and the command exits 1."""
    course = _course(nbgrader_here, tmp_path)
    _submit(nbgrader_here, course, "answer = 'first'")
    nbgrader_here(course, "collect", "ps1")
    collected = course / "submitted" / _account() / "ps1"
    first = {path.name: path.read_bytes() for path in collected.iterdir()}
    later = _submit(nbgrader_here, course, "answer = 'second'")
    os.mkfifo(later / "zz-pipe")
    # Its own process, with a limit: a collect that opens the pipe to read it waits forever for a writer.
    done = subprocess.run([sys.executable, "-m", "nbgrader", "collect", "--update", "ps1"], cwd=course,
                          env=_environment(), capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"Not collected: inbound/{later.name} could not be copied (zz-pipe is no regular file); the hand-in " \
           f"collected before stays in submitted/{_account()}/ps1." in output, output
    assert f"1 hand-in not collected, each named above: {later.name}" in output, output
    assert {path.name: path.read_bytes() for path in collected.iterdir()} == first
    assert sorted(path.name for path in collected.parent.iterdir()) == ["ps1"], "a half copy was left behind"


def test_what_is_left_in_inbound_that_is_no_hand_in_is_named_removed_and_never_collected(tmp_path, nbgrader_here):
    """Every account may write in inbound/. A file, a link and folders not named as nbgrader names a hand-in (one
    with the assignment's name but no time, which nbgrader's collect cannot even read; one with a file in it) are each
    named to the instructor in collect's output and removed (the account collecting here may remove them all: the
    hub's test_hub_exchange.py sets aside what the grader cannot empty), those too that a student named `.set-aside-*`
    as collect names what it sets aside; only the real hand-in is collected, and it stays in inbound/."""
    course = _course(nbgrader_here, tmp_path)
    handin = _submit(nbgrader_here, course, "answer = 1")
    inbound = handin.parent
    (inbound / "notes.txt").write_text("not a hand-in")
    (inbound / ".hidden").write_text("not a hand-in either")
    (inbound / f"{_account()}+ps1+2026-01-01 00:00:00.000000 UTC+link").symlink_to(handin)
    (inbound / "a folder").mkdir()
    (inbound / "a folder" / "inside.txt").write_text("junk")
    (inbound / f"{_account()}+ps1+not a time+x").mkdir()
    (inbound / ".set-aside-notes").write_text("named as collect names what it sets aside")
    (inbound / ".set-aside-link").symlink_to(handin)
    (inbound / ".set-aside-folder").mkdir()
    (inbound / ".set-aside-folder" / "inside.txt").write_text("junk")
    output = nbgrader_here(course, "collect", "ps1")
    told = "; nothing else in inbound/ is ever collected."
    for name, why in {"notes.txt": "a file, not a folder", ".hidden": "a file, not a folder",
                      f"{_account()}+ps1+2026-01-01 00:00:00.000000 UTC+link": f"a link (to {handin})",
                      "a folder": "a folder not named <student>+<assignment>+<time>+<random>",
                      f"{_account()}+ps1+not a time+x": "a folder whose name has no time in it ('not a time')",
                      ".set-aside-notes": "a file, not a folder", ".set-aside-link": f"a link (to {handin})",
                      ".set-aside-folder": "a folder not named <student>+<assignment>+<time>+<random>"}.items():
        assert f"Not collected: inbound/{name} is no hand-in: {why}. It was {_account()}'s and is removed. nbgrader " \
               f"submit hands in a folder named <student>+<assignment>+<time>+<random>{told}" in output, output
    submitted = course / "submitted"
    assert [path.name for path in submitted.iterdir()] == [_account()], list(submitted.iterdir())
    assert (submitted / _account() / "ps1" / "p1.ipynb").read_bytes() == (handin / "p1.ipynb").read_bytes()
    assert [path.name for path in inbound.iterdir()] == [handin.name], "collect left something that is no hand-in"


def test_a_hand_in_is_its_students_and_the_graders_groups_alone(tmp_path, nbgrader_here):
    """The course's submit leaves the hand-in's folders 0750 and its files 0640 (nbgrader's own: 0777 and 0644), in
    inbound/ only: the student's own cached copy keeps nbgrader's modes. The grader reads it through its group; the
    hub makes that the grader's own (test_hub_exchange.py tries it as a classmate)."""
    course = _course(nbgrader_here, tmp_path)
    home = course.parent / "home" / "ps1"
    (home / "data").mkdir()
    (home / "data" / "table.csv").write_text("a,b\n")
    (home / "p1.ipynb").write_text("{}")
    for path in (home, home / "data", home / "data" / "table.csv", home / "p1.ipynb"):
        path.chmod(0o777 if path.is_dir() else 0o666)  # the copy takes no mode from the student's own files
    handin = _submit(nbgrader_here, course, "answer = 1")
    seen = {str(path.relative_to(handin)): _mode(path) for path in [handin, *handin.rglob("*")]}
    assert seen == {".": "750", "data": "750", "data/table.csv": "640", "p1.ipynb": "640", "timestamp.txt": "640",
                    "submission_secret.txt": "640"}, seen
    nbgrader_here(course, "collect", "ps1")
    assert (course / "submitted" / _account() / "ps1" / "data" / "table.csv").read_text() == "a,b\n"


def _stamp(course: Path) -> str:
    return (course / "submitted" / _account() / "ps1" / "timestamp.txt").read_text()


def _latest_change(handin: Path) -> float:
    return max(os.lstat(path).st_ctime for path in [handin, *handin.rglob("*")])


def test_a_hand_in_is_collected_with_the_exchanges_time(tmp_path, nbgrader_here):
    """Hand-ins whose names say 2099 and 2020 (`--Exchange.timestamp_format`, which the student's own process sets),
    then an honest one: collect takes the honest one, the last to arrive, as the newest; its timestamp.txt in
    submitted/ is the exchange's time of it (when the kernel last saw it change), never its name's; the instructor
    is told of each name that disagrees. A hand-in rewritten after it arrived is one of its rewriting."""
    from autograder.handins.inbound import as_nbgrader_time

    course = _course(nbgrader_here, tmp_path)
    named = "--Exchange.timestamp_format={} 00:00:00.000000 UTC"
    future = _submit(nbgrader_here, course, "answer = 'future'", named.format("2099-01-01"))
    past = _submit(nbgrader_here, course, "answer = 'past'", named.format("2020-01-01"))
    honest = _submit(nbgrader_here, course, "answer = 'honest'")
    output = nbgrader_here(course, "collect", "ps1")
    assert "'honest'" in (course / "submitted" / _account() / "ps1" / "p1.ipynb").read_text()
    assert _stamp(course) == as_nbgrader_time(_latest_change(honest)), (_stamp(course), honest.name)
    for handin, said in ((future, "later than it arrived"), (past, "earlier than it arrived")):
        assert f"Time of inbound/{handin.name}: its name says {handin.name.split('+')[2]}, {said} " \
               f"({as_nbgrader_time(_latest_change(handin))})" in output, output
    assert f"Time of inbound/{honest.name}" not in output, output

    # The honest hand-in's notebook rewritten in place (its folder's own ctime stays): its time is the rewriting's.
    notebook = nbformat.read(honest / "p1.ipynb", as_version=4)
    notebook.cells[0].source = "answer = 'rewritten'"
    with open(honest / "p1.ipynb", "w") as rewritten:
        rewritten.write(json.dumps(notebook))
    assert os.lstat(honest / "p1.ipynb").st_ctime > os.lstat(honest).st_ctime or \
        os.lstat(honest / "p1.ipynb").st_ctime_ns > os.lstat(honest).st_ctime_ns
    nbgrader_here(course, "collect", "--update", "ps1")
    assert "'rewritten'" in (course / "submitted" / _account() / "ps1" / "p1.ipynb").read_text()
    assert _stamp(course) == as_nbgrader_time(os.lstat(honest / "p1.ipynb").st_ctime)


def test_a_hand_in_that_changed_after_the_hub_saw_it_is_named(tmp_path, nbgrader_here):
    """The grading service's queue says when the hub first saw each hand-in; a hand-in whose last change is later
    than that (its student rewrote it) is named to the instructor with both times; without a queue, or with one
    that cannot be read, collect goes on by the exchange's own time."""
    from autograder.handins.inbound import as_nbgrader_time
    from autograder.hub.owned_collect import QUEUE
    from autograder.on_submit.queue import HandedIn, Queue

    course = _course(nbgrader_here, tmp_path)
    handin = _submit(nbgrader_here, course, "answer = 1")
    seen = _latest_change(handin) - 3600
    student, assignment, named = handin.name.split("+")[:3]
    Queue(course / QUEUE).add(HandedIn(handin.name, student, assignment, named, seen))
    output = nbgrader_here(course, "collect", "ps1")
    assert f"Time of inbound/{handin.name}: it changed at {as_nbgrader_time(_latest_change(handin))}, after the " \
           f"hub first saw it ({as_nbgrader_time(seen)})" in output, output
    (course / QUEUE).write_text("no database")
    output = nbgrader_here(course, "collect", "--update", "ps1")
    assert "The grading service's queue" in output and "could not be read" in output, output
    assert _stamp(course) == as_nbgrader_time(_latest_change(handin))
