"""On the class hub a hand-in is its student's and the grader's alone, its time is the exchange's, and what is no
hand-in does not stay in inbound/ (issue 58, items 2, 3 and 5), each proven on a running hub: Gus hands in from his
own server (nbgrader there, with the hub's student settings and software, as his Assignment List runs it), Eva acts
from her own kernel, and later hand-ins are made by the students' own accounts with their server's settings; the
instructor collects with `nbgrader collect` and formgrader's Collect button, and grades with `nbgrader autograde`, as
the grader."""
from __future__ import annotations

import grp
import json
import os
import pwd
import subprocess
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.grading.execute_in_a_job import UNBOXED_OPTION
from autograder.handins.inbound import as_nbgrader_time
from autograder.hub.accounts import as_account
from autograder.hub.layout import grader_environment
from autograder.hub.private_view import private_view, shown_paths
from tests.hub import Kernel, as_student, log_in, running_hub

EVA, GUS, TEACHER = "ex-eva", "ex-gus", "ex-teacher"
A = "01_positional_encoding"
FUTURE, PAST = "2099-01-01 00:00:00.000000 UTC", "2020-01-01 00:00:00.000000 UTC"


@pytest.fixture(scope="module")
def hub():
    # Grading at submission holds every hand-in (it still records when the hub first saw each): the test collects.
    with running_hub("exch", [EVA, GUS], [TEACHER], [A], on_submit={"default": {"grade": False}}, home_mb=0) as h:
        yield h


@pytest.fixture(scope="module")
def eva(hub):
    kernel = Kernel(hub, EVA)
    yield kernel
    kernel.shut_down()


@pytest.fixture(scope="module")
def gus(hub):
    kernel = Kernel(hub, GUS)
    yield kernel
    kernel.shut_down()


def _inbound(hub) -> Path:
    return hub.exchange / hub.course_id / "inbound"


def _hand_ins(hub, student: str) -> set[Path]:
    return set(_inbound(hub).glob(f"{student}+{A}+*"))


def _notebook_with(home: Path, course_id: str, words: str) -> None:
    """The student's fetched notebook, with a markdown cell saying `words` (kept: it is the student's own file)."""
    path = home / course_id / A / f"{A}.ipynb"
    notebook = json.loads(path.read_text())
    notebook["cells"] = [cell for cell in notebook["cells"] if cell.get("id") != "said"]
    notebook["cells"].append({"cell_type": "markdown", "id": "said", "metadata": {}, "source": words})
    path.write_text(json.dumps(notebook))


def _submit(hub, name: str, *options: str) -> Path:
    """`nbgrader submit` as the student's own account with their server's settings; the hand-in's folder."""
    before = _hand_ins(hub, name)
    submitted = as_student(hub, name, "nbgrader", "submit", A, "--course", hub.course_id, *options,
                           cwd=hub.homes / name)
    assert submitted.wait(120) == 0, submitted.stdout.read()
    [made] = _hand_ins(hub, name) - before
    return made


def _as_grader(hub, *argv: str) -> str:
    """`argv` as the grader in the course directory, in the hub's view of the file system (where the Python
    environment is every account's), as the instructor's terminal runs it; its output."""
    shown = shown_paths(hub.folder, hub.python, hub.proxy)
    done = subprocess.run(private_view(shown, as_account(hub.grader, [f"{hub.python}/bin/{argv[0]}", *argv[1:]])),
                          cwd=hub.course_dir, capture_output=True, text=True, env=grader_environment(hub), timeout=1200)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    return done.stdout + done.stderr


def _collect(hub, *options: str) -> str:
    return _as_grader(hub, "nbgrader", "collect", A, *options)


def _latest_change(handin: Path) -> float:
    """When the kernel last saw the hand-in or anything in it change (what collect takes as its time)."""
    return max(os.lstat(path).st_ctime for path in [handin, *handin.rglob("*")])


@pytest.fixture(scope="module")
def gus_handed_in(hub, gus) -> Path:
    """Gus fetches and submits from his own server's kernel, as his Assignment List does; his hand-in's folder."""
    gus.run(textwrap.dedent(f'''
        import subprocess
        os.chdir(os.path.expanduser("~"))
        done = subprocess.run(["nbgrader", "fetch_assignment", "{A}", "--course", "{hub.course_id}"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        path = "{hub.course_id}/{A}/{A}.ipynb"
        notebook = json.load(open(path))
        notebook["cells"].append({{"cell_type": "markdown", "id": "said", "metadata": {{}}, "source": "gus, first"}})
        json.dump(notebook, open(path, "w"))
        done = subprocess.run(["nbgrader", "submit", "{A}", "--course", "{hub.course_id}"], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr
    '''))
    [handin] = _hand_ins(hub, GUS)
    return handin


def test_inbound_is_the_graders_with_its_group_setgid_and_sticky(hub, eva, gus):
    """inbound/ (3733) is the grader's, of the grader's own group, which no student is in (their servers made their
    accounts)."""
    info = _inbound(hub).stat()
    grader = pwd.getpwnam(hub.grader)
    assert (info.st_uid, info.st_gid, oct(info.st_mode & 0o7777)) == (grader.pw_uid, grader.pw_gid, "0o3733")
    assert grp.getgrgid(grader.pw_gid).gr_mem == [], "the grader's group has members"
    for student in (EVA, GUS):
        assert grader.pw_gid not in os.getgrouplist(student, pwd.getpwnam(student).pw_gid), student


def test_a_classmate_who_knows_its_name_cannot_read_list_add_to_rename_or_remove_a_hand_in(hub, eva, gus,
                                                                                            gus_handed_in):
    """Eva, given the name of Gus's hand-in (which nbgrader #978 says a guess can reach), tries everything on it from
    her own kernel; each is refused. Gus reads his own, and the grader collects it whole."""
    handin, inbound = gus_handed_in, _inbound(hub)
    notebook = handin / f"{A}.ipynb"
    seen = eva.answer(textwrap.dedent(f'''
        target, notebook, inbound = "{handin}", "{notebook}", "{inbound}"
        own = inbound + "/{EVA}+{A}+{PAST}+own"
        os.mkdir(own)
        tried = {{
            "read its notebook": read(notebook),
            "list it": listing(target),
            "add a file": probe(lambda: open(target + "/extra.txt", "w").write("eva")),
            "change its notebook": probe(lambda: open(notebook, "a").write("eva")),
            "remove its notebook": probe(lambda: os.unlink(notebook)),
            "rename its notebook": probe(lambda: os.rename(notebook, target + "/moved.ipynb")),
            "rename it": probe(lambda: os.rename(target, inbound + "/{EVA}+renamed")),
            "remove it": probe(lambda: os.rmdir(target)),
            "put her own folder in its place": probe(lambda: os.rename(own, target)),
            "open it to all": probe(lambda: os.chmod(target, 0o777)),
            "list inbound": listing(inbound),
        }}
        if os.path.isdir(own):
            os.rmdir(own)
        print(json.dumps(tried))
    '''))
    assert set(seen.values()) == {"PermissionError"}, seen
    grader_gid = pwd.getpwnam(hub.grader).pw_gid
    modes = {str(path.relative_to(handin)): (oct(path.stat().st_mode & 0o777), path.stat().st_gid == grader_gid)
             for path in [handin, *handin.rglob("*")]}
    assert set(modes.values()) == {("0o750", True), ("0o640", True)} and modes["."] == ("0o750", True), modes
    assert gus.answer(f'print(json.dumps(read("{notebook}")))') == "read", "Gus cannot read his own hand-in"
    output = _collect(hub)
    collected = hub.course_dir / "submitted" / GUS / A / f"{A}.ipynb"
    assert collected.read_bytes() == notebook.read_bytes() and "gus, first" in collected.read_text(), output


@pytest.fixture(scope="module")
def junk(hub, eva, gus_handed_in) -> dict[str, str]:
    """What Eva drops in inbound/ from her kernel, name -> what it is."""
    inbound = _inbound(hub)
    eva.run(textwrap.dedent(f'''
        inbound = "{inbound}"
        open(inbound + "/notes.txt", "w").write("eva was here")
        os.symlink("/etc/passwd", inbound + "/shortcut")
        os.mkdir(inbound + "/empty")
        os.mkdir(inbound + "/stuff")  # hers: the grader may not empty it
        open(inbound + "/stuff/keep.txt", "w").write("eva's")
        os.mkdir(inbound + "/open")  # hers, but every account may write in it
        os.chmod(inbound + "/open", 0o777)
        open(inbound + "/open/file.txt", "w").write("eva's")
        os.mkdir(inbound + "/{EVA}+{A}+not a time+x")
    '''))
    return {"notes.txt": "a file, not a folder", "shortcut": "a link (to /etc/passwd)",
            "empty": "a folder not named <student>+<assignment>+<time>+<random>",
            "stuff": "a folder not named <student>+<assignment>+<time>+<random>",
            "open": "a folder not named <student>+<assignment>+<time>+<random>",
            f"{EVA}+{A}+not a time+x": "a folder whose name has no time in it ('not a time')"}


def test_what_is_no_hand_in_is_removed_or_set_aside_and_named(hub, junk, gus_handed_in):
    """Collect removes what the grader may remove (a file, a link, an empty folder, a folder it may empty); Eva's own
    folder, which the grader may not empty and Linux lets it move only within inbound/, is renamed there out of the
    way; each is named to the instructor, and a later collect names what is still set aside. The hand-ins stay."""
    inbound = _inbound(hub)
    output = _collect(hub)
    aside = inbound / ".set-aside-stuff"
    told = ". nbgrader submit hands in a folder named <student>+<assignment>+<time>+<random>; nothing else in " \
           "inbound/ is ever collected."
    for name, why in junk.items():
        done = (f"It is {EVA}'s and the grader cannot empty it: set aside as inbound/.set-aside-stuff; only {EVA} or "
                f"root can remove it (sudo rm -r '{aside}')") if name == "stuff" else f"It was {EVA}'s and is removed"
        assert f"Not collected: inbound/{name} is no hand-in: {why}. {done}{told}" in output, output
    left = sorted(path.name for path in inbound.iterdir())
    assert left == sorted([".set-aside-stuff", gus_handed_in.name]), left
    assert (aside / "keep.txt").read_text() == "eva's"
    again = _collect(hub)
    assert f"Not collected: inbound/.set-aside-stuff is no hand-in: a folder not named <student>+<assignment>+<time>+" \
           f"<random>. It is {EVA}'s and the grader cannot empty it; its name marks it as set aside already (by an " \
           f"earlier collect, or by {EVA}): only {EVA} or root can remove it" in again, again
    assert sorted(path.name for path in inbound.iterdir()) == left


def test_a_hand_in_is_collected_and_graded_with_the_exchanges_time(hub, eva, gus_handed_in):
    """The due date passes after Gus's first hand-in. Then Eva hands in with a name that says 2020, and Gus with one
    that says 2099 and later honestly. Collect takes Gus's honest hand-in, the last to arrive, as his newest (with the
    name believed, the 2099 one would be newest for ever), writes each collected copy's timestamp.txt with the
    exchange's time, and tells the instructor of both names, in its output and in formgrader's Collect dialog; the
    gradebook's submission times are the exchange's, so both are late."""
    due = datetime.now(timezone.utc).replace(tzinfo=None)
    assert datetime.fromtimestamp(_latest_change(gus_handed_in), timezone.utc).replace(tzinfo=None) < due
    _as_grader(hub, "nbgrader", "db", "assignment", "add", A, f"--duedate={due.isoformat(' ')} UTC")
    for name in (EVA, GUS):
        home = hub.homes / name
        if not (home / hub.course_id / A).is_dir():
            fetched = as_student(hub, name, "nbgrader", "fetch_assignment", A, "--course", hub.course_id, cwd=home)
            assert fetched.wait(120) == 0, fetched.stdout.read()
    _notebook_with(hub.homes / EVA, hub.course_id, "eva, late, named 2020")
    eva_past = _submit(hub, EVA, f"--Exchange.timestamp_format={PAST}")
    _notebook_with(hub.homes / GUS, hub.course_id, "gus, named 2099")
    gus_future = _submit(hub, GUS, f"--Exchange.timestamp_format={FUTURE}")
    _notebook_with(hub.homes / GUS, hub.course_id, "gus, later, honest")
    gus_later = _submit(hub, GUS)

    output = _collect(hub, "--update")
    submitted = hub.course_dir / "submitted"
    assert "gus, later, honest" in (submitted / GUS / A / f"{A}.ipynb").read_text(), output
    assert "eva, late, named 2020" in (submitted / EVA / A / f"{A}.ipynb").read_text(), output
    stamps = {name: (submitted / name / A / "timestamp.txt").read_text() for name in (EVA, GUS)}
    assert stamps == {EVA: as_nbgrader_time(_latest_change(eva_past)),
                      GUS: as_nbgrader_time(_latest_change(gus_later))}, stamps
    warned = [f"Time of inbound/{eva_past.name}: its name says {PAST}, earlier than it arrived",
              f"Time of inbound/{gus_future.name}: its name says {FUTURE}, later than it arrived"]
    assert all(line in output for line in warned), output
    assert f"Time of inbound/{gus_later.name}" not in output, output

    teacher = log_in(hub, TEACHER)
    formgrader = f"{hub.url}/services/{hub.course_id}/formgrader"
    assert teacher.get(f"{formgrader}/").status_code == 200
    answer = teacher.post(f"{formgrader}/api/assignment/{A}/collect",
                          headers={"X-XSRFToken": teacher.cookies.get("_xsrf", path=f"/services/{hub.course_id}/")
                                   or teacher.cookies.get("_xsrf") or ""})
    assert answer.status_code == 200 and answer.json()["success"], answer.text
    assert all(line in answer.json()["log"] for line in warned), answer.json()["log"]

    # nbgrader's own autograde, which reads each copy's timestamp.txt (unboxed: this class's hand-ins are the test's)
    _as_grader(hub, "nbgrader", "autograde", A, "--create", UNBOXED_OPTION)
    with Gradebook(f"sqlite:///{hub.course_dir / 'gradebook.db'}") as gb:
        times = {name: gb.find_submission(A, name).timestamp for name in (EVA, GUS)}
        late = {name: gb.find_submission(A, name).total_seconds_late for name in (EVA, GUS)}
    exchange = {name: datetime.fromtimestamp(_latest_change(path), timezone.utc).replace(tzinfo=None)
                for name, path in ((EVA, eva_past), (GUS, gus_later))}
    assert times == exchange and all(when > due for when in times.values()), (times, exchange, due)
    assert late[EVA] > 0 and late[GUS] > 0, late


def test_collect_reads_the_queue_where_grading_at_submission_keeps_it():
    """owned_collect names the queue's path itself (importing the service would load the grading engine into every
    collect): the two are the same."""
    from autograder.hub.owned_collect import QUEUE
    from autograder.on_submit.service import QUEUE as SERVICE_QUEUE

    assert QUEUE == SERVICE_QUEUE
