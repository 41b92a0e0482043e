"""The class hub grades strangers' code unattended (issue 57): no process with more rights runs what a less trusted
account can write, and a hand-in graded at submission by the service, attacked in C-level form
(tests/box_attacks.py), is refused everything and changes nothing: the course directory, the gradebook, the queue,
a classmate's hand-in in the exchange, the machine's /tmp. Its kernel ran as one of the grader's subordinate ids."""
from __future__ import annotations

import os
import pwd
import shlex
import sqlite3
import stat
import time
from pathlib import Path

import psutil
import pytest
from nbgrader.api import Gradebook

from autograder.box.cgroups import Tree
from autograder.hub.accounts import ClassAccounts
from autograder.on_submit.service import QUEUE
from autograder.paths import notebook_path
from tests.box_attacks import ATTACKS, TOKEN, digest, hand_in_attack, host_uid, outcomes
from tests.hub import as_student, running_hub

EVA, GUS = "box-eva", "box-gus"
A = "02_attention"


@pytest.fixture(scope="module")
def hub():
    with running_hub("box", [EVA, GUS], [], [A], on_submit={"default": {"before_due": "points"}}, grading_jobs=1,
                     home_mb=0) as h:
        yield h


def _fetched(hub, name: str) -> Path:
    home = hub.homes / name
    ClassAccounts(hub).account(name, home)
    fetched = as_student(hub, name, "nbgrader", "fetch_assignment", A, "--course", hub.course_id, cwd=home)
    assert fetched.wait(120) == 0, fetched.stdout.read()
    return home


def _submit(hub, name: str, home: Path) -> None:
    submitted = as_student(hub, name, "nbgrader", "submit", A, "--course", hub.course_id, cwd=home)
    assert submitted.wait(120) == 0, submitted.stdout.read()


def _queue(hub) -> dict[str, tuple]:
    path = hub.course_dir / QUEUE
    if not path.exists():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as db:
        return {row[0]: tuple(row) for row in db.execute("SELECT * FROM handins ORDER BY folder")}


def _wait_graded(hub, student: str, timeout: float = 300) -> tuple:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [row for row in _queue(hub).values() if row[1] == student and row[5] in ("graded", "refused")]
        if done:
            return done[-1]
        time.sleep(0.5)
    raise AssertionError(f"{student}'s hand-in was not graded within {timeout:.0f} s: {_queue(hub)}")


def _others_grades(hub, student: str) -> dict:
    with Gradebook(f"sqlite:///{hub.course_dir / 'gradebook.db'}") as gb:
        return {(a.name, s.student.id): [(g.name, g.auto_score, g.manual_score) for n in s.notebooks for g in n.grades]
                for a in gb.assignments for s in a.submissions if s.student.id != student}


@pytest.fixture(scope="module")
def attacked(hub):
    """Gus hands in honestly and is graded; then Eva hands in the attack, aimed at the course directory, the queue,
    Gus's hand-in in inbound/ and the machine; the service grades it."""
    gus, eva = _fetched(hub, GUS), _fetched(hub, EVA)
    from autograder.demo.submissions import write_submission
    release, source = notebook_path(hub.course_dir / "release", A), notebook_path(hub.course_dir / "source", A)
    write_submission("demo_perfect", release, source, gus / hub.course_id / A / f"{A}.ipynb")
    os.chown(gus / hub.course_id / A / f"{A}.ipynb", *pwd.getpwnam(GUS)[2:4])
    _submit(hub, GUS, gus)
    _wait_graded(hub, GUS)
    inbound = hub.exchange / hub.course_id / "inbound"
    gus_hand_in = next(inbound.glob(f"{GUS}+{A}+*"))
    targets = {"root": str(hub.course_dir), "classmate": str(gus_hand_in / f"{A}.ipynb"),
               "queue": str(hub.course_dir / QUEUE), "inbound": str(inbound), "self": EVA}
    target = eva / hub.course_id / A / f"{A}.ipynb"
    hand_in_attack(release, source, target, targets)
    os.chown(target, *pwd.getpwnam(EVA)[2:4])
    leave_out = ("gradebook.db", "grading", "reports", "grades.csv", "on-submit", f"autograded/{EVA}",
                 f"feedback/{EVA}", f"submitted/{EVA}")
    before = (digest(hub.course_dir, leave_out), digest(gus_hand_in), _others_grades(hub, EVA),
              {k: v for k, v in _queue(hub).items() if v[1] != EVA})
    _submit(hub, EVA, eva)
    row = _wait_graded(hub, EVA)
    after = (digest(hub.course_dir, leave_out), digest(gus_hand_in), _others_grades(hub, EVA),
             {k: v for k, v in _queue(hub).items() if v[1] != EVA})
    found = outcomes(notebook_path(hub.course_dir / "autograded" / EVA, A))
    return row, found, before, after


def test_every_attack_ran_in_the_service_and_was_refused(attacked):
    row, found, _, _ = attacked
    assert row[5] == "graded", row
    assert sorted(found) == sorted(ATTACKS), found
    went_through = {name: said for name, said in found.items() if not said.startswith("refused")}
    assert not went_through, went_through


def test_the_kernel_ran_as_one_of_the_graders_subordinate_ids(hub, attacked):
    _, found, _, _ = attacked
    first, count = next((int(f), int(c)) for name, f, c in (line.split(":") for line in
                                                           Path("/etc/subuid").read_text().split())
                        if name == hub.grader)
    said = found["whoami"]
    assert "uid 1000 " in said and first <= host_uid(said) < first + count, (said, first, count)
    left = [p.info for p in psutil.process_iter(["pid", "uids"]) if p.info["uids"]
            and first <= p.info["uids"].real < first + count]
    assert not left, left


def test_nothing_of_the_course_the_queue_or_the_classmate_changed(attacked):
    _, _, before, after = attacked
    for name, was, now in zip(("course directory", "gus's hand-in", "others' grades", "others' queue rows"),
                              before, after):
        assert now == was, name
    assert not Path(f"/tmp/{TOKEN}").exists() and not Path(f"/dev/shm/{TOKEN}").exists()


def test_the_attackers_honest_answers_keep_their_points(hub, attacked):
    with Gradebook(f"sqlite:///{hub.course_dir / 'gradebook.db'}") as gb:
        eva, gus = gb.find_submission(A, EVA), gb.find_submission(A, GUS)
        assert eva.code_score == gus.code_score == eva.max_code_score > 0


def _trusted(path: Path, uid: int) -> list[str]:
    """Why `path` (and the folders above it) is not safe for a process of `uid` to import or read settings from:
    each must be root's or `uid`'s own, and writable by no one else (a sticky folder such as /tmp aside)."""
    found = []
    for part in [path, *path.parents]:
        try:
            info = part.stat()
        except FileNotFoundError:
            continue
        sticky = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        if info.st_uid not in (0, uid):
            found.append(f"{part} is {pwd.getpwuid(info.st_uid).pw_name}'s")
        elif info.st_mode & 0o022 and not sticky:
            found.append(f"{part} is writable by its group or everyone ({oct(info.st_mode & 0o777)})")
    return found


def test_no_long_running_process_of_the_hub_imports_or_reads_settings_a_lesser_account_can_write(hub):
    """For each process in the hub's cgroups: its user, its PYTHONPATH, its working folder (`python -m` imports from
    it) and its settings files (JupyterHub's -f, nbgrader's and Jupyter's config where it runs) with their owners;
    every one is root's or the process's own account's, and no one else may change it."""
    tree = Tree.load(hub.cgroups_record)
    listed, wrong = [], []
    for pid in tree.everything.pids():
        try:
            process = psutil.Process(pid)
            uid, environ, cwd, cmdline = process.uids().real, process.environ(), Path(process.cwd()), process.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if not cmdline or "python" not in Path(cmdline[0]).name and "jupyter" not in " ".join(cmdline[:2]):
            continue
        paths = [Path(p) for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [cwd]
        if "-f" in cmdline:
            paths.append(Path(cmdline[cmdline.index("-f") + 1]))
        paths += [cwd / "nbgrader_config.py"] + [Path(p) for p in environ.get("JUPYTER_CONFIG_PATH", "").split(
            os.pathsep) if p]
        listed.append(f"{pid} {pwd.getpwuid(uid).pw_name}: {shlex.join(cmdline[:3])} "
                      f"PYTHONPATH={environ.get('PYTHONPATH', '')} cwd={cwd}")
        for path in paths:
            for why in _trusted(path, uid):
                wrong.append(f"{pid} ({pwd.getpwuid(uid).pw_name}, {shlex.join(cmdline[:3])}): {why}")
    assert any(" root: " in line and "jupyterhub" in line for line in listed), listed
    assert any(f" {hub.grader}: " in line for line in listed), listed
    assert not wrong, "\n".join(wrong + ["", *listed])
