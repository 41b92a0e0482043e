"""The box a graded notebook runs in (autograder.box), attacked as a dishonest student would (tests/box_attacks.py:
issue 57's table in C-level form) inside an otherwise correct hand-in, graded by `python -m autograder grade` as
root: every attack is refused or sees nothing, the hand-in keeps its honest score, and the course directory, the
gradebook, the queue, the classmate's hand-in and the machine's /tmp are as they were. The same hand-in graded
without a box (`--student-code-runs-as-me`, on a machine without bubblewrap) shows each attack going through: what
the checks here catch."""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import psutil
import pytest
from nbgrader.api import Gradebook

from autograder.box.who import OWN_UIDS
from autograder.on_submit.queue import HandedIn, Queue
from autograder.paths import notebook_path
from tests.box_attacks import (ATTACKS, SECRET_NAMES, SECRET_VALUE, TOKEN, digest, hand_in_attack, host_uid,
                               outcomes)
from tests.conftest import copy_class

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0,
                                reason="grading as root, on Linux (where the box is made)")

ASSIGNMENT, ATTACKER, CLASSMATE = "02_attention", "mallory", "demo_perfect"
CHANGED_BY_GRADING = ("gradebook.db", "grading", "reports", "grades.csv", f"autograded/{ATTACKER}",
                      f"feedback/{ATTACKER}")  # what grading the attacker's hand-in writes; the rest must not change


class Attacked(NamedTuple):
    root: Path
    result: subprocess.CompletedProcess
    outcomes: dict[str, str]
    files_before: dict[str, str]
    files_after: dict[str, str]
    grades_before: dict
    grades_after: dict
    queue_before: list
    queue_after: list


def files(root: Path) -> dict[str, str]:
    """Every file of the course directory but what grading the attacker writes, with its SHA-256."""
    return digest(root, CHANGED_BY_GRADING)


def others_grades(root: Path) -> dict:
    """Every grade and comment of every student but the attacker, as the gradebook holds them."""
    found = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                if submission.student.id == ATTACKER:
                    continue
                found[(assignment.name, submission.student.id)] = [
                    (grade.name, grade.auto_score, grade.manual_score, grade.needs_manual_grade)
                    for notebook in submission.notebooks for grade in notebook.grades]
    return found


def queue_rows(path: Path) -> list:
    return [tuple(row) for row in Queue(path).db.execute("SELECT * FROM handins ORDER BY folder")]


def with_secrets(env: dict[str, str]) -> dict[str, str]:
    """`env` with what a grader's environment may hold that a hand-in must never see (the read_secrets attack)."""
    return {**env, **dict.fromkeys(SECRET_NAMES, SECRET_VALUE)}


def attack_and_grade(demo_root: Path, root: Path, *extra: str, command: list[str] | None = None,
                     env: dict[str, str] | None = None, owner: str | None = None) -> Attacked:
    """A copy of the demo class at `root` with the attacker's hand-in, graded by `python -m autograder grade`
    (behind `command`: another account, a machine without bubblewrap), with what the attacks aimed at before and
    after. `owner`: the account that owns the copy and grades it."""
    copy_class(demo_root, root)
    queue = root / "on-submit" / "queue.sqlite"
    Queue(queue).add(HandedIn(folder="gus+02_attention+2026-12-01 10:00:00.000000 UTC+abc", student="gus",
                              assignment=ASSIGNMENT, handed_in="2026-12-01 10:00:00.000000 UTC", arrived=1.0,
                              state="graded", score=3, max_score=3))
    classmate = notebook_path(root / "submitted" / CLASSMATE, ASSIGNMENT)
    targets = {"root": str(root), "classmate": str(classmate), "queue": str(queue), "inbound": str(root / "inbound"),
               "self": ATTACKER}
    hand_in_attack(notebook_path(root / "release", ASSIGNMENT), notebook_path(root / "source", ASSIGNMENT),
                   notebook_path(root / "submitted" / ATTACKER, ASSIGNMENT), targets)
    before = files(root), others_grades(root), queue_rows(queue)
    if owner is not None:
        subprocess.run(["chown", "-R", f"{owner}:{owner}", str(root.parent)], check=True)
    argv = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--jobs", "1", *extra]
    result = subprocess.run([*(command or []), *argv], cwd=root, env=with_secrets(env or dict(os.environ, PYTHONPATH=str(root))),
                            capture_output=True, text=True, timeout=900)
    autograded = notebook_path(root / "autograded" / ATTACKER, ASSIGNMENT)
    found = outcomes(autograded) if autograded.exists() else {}
    return Attacked(root, result, found, before[0], files(root), before[1], others_grades(root), before[2],
                    queue_rows(queue))


@pytest.fixture(scope="module")
def boxed(demo_class, tmp_path_factory):
    return attack_and_grade(demo_class[0], tmp_path_factory.mktemp("boxed") / "course")


def test_every_attack_ran_and_was_refused(boxed):
    assert boxed.result.returncode == 0, boxed.result.stdout[-2000:] + boxed.result.stderr[-3000:]
    assert sorted(boxed.outcomes) == sorted(ATTACKS), boxed.outcomes
    went_through = {name: said for name, said in boxed.outcomes.items() if not said.startswith("refused")}
    assert not went_through, went_through


def test_the_kernel_ran_as_a_user_id_of_its_own_never_root(boxed):
    said = boxed.outcomes["whoami"]
    assert "uid 1000 " in said and OWN_UIDS[0] <= host_uid(said) < OWN_UIDS[0] + OWN_UIDS[1], said


def test_its_processes_and_files_in_memory_were_bounded_and_are_gone(boxed):
    forked = int(boxed.outcomes["fork_many"].split("forked ")[1].split()[0])
    assert 0 < forked < 256, boxed.outcomes["fork_many"]  # the box's pids limit, not the machine's
    for name, bound in (("fill_tmp", 512), ("fill_shm", 256)):
        written = int(boxed.outcomes[name].split()[1])
        assert written <= bound and "full" in boxed.outcomes[name], boxed.outcomes[name]
    assert not Path(f"/tmp/{TOKEN}").exists() and not Path(f"/dev/shm/{TOKEN}").exists()
    first, count = OWN_UIDS
    owned = [path for top in (Path("/tmp"), Path("/dev/shm")) for path in [*top.glob("*"), *top.glob("*/*")]
             if _owner(path) is not None and first <= _owner(path) < first + count]
    assert not owned, owned  # a box owns nothing outside itself
    boxes = [p.info for p in psutil.process_iter(["pid", "uids", "cmdline"])
             if p.info["uids"] and first <= p.info["uids"].real < first + count]
    assert not [p for p in boxes if str(boxed.root) in " ".join(p["cmdline"] or [])], boxes


def _owner(path: Path) -> int | None:
    try:
        return path.lstat().st_uid
    except OSError:
        return None


def test_nothing_it_aimed_at_changed(boxed):
    assert boxed.files_after == boxed.files_before, {
        path for path in set(boxed.files_after) | set(boxed.files_before)
        if boxed.files_after.get(path) != boxed.files_before.get(path)}
    assert boxed.grades_after == boxed.grades_before
    assert boxed.queue_after == boxed.queue_before
    assert not (boxed.root / "sitecustomize.py").exists()


def test_the_hand_in_keeps_its_honest_score(boxed):
    with Gradebook(f"sqlite:///{boxed.root / 'gradebook.db'}") as gb:
        attacker = gb.find_submission(ASSIGNMENT, ATTACKER)
        honest = gb.find_submission(ASSIGNMENT, CLASSMATE)
        assert (attacker.code_score, attacker.max_code_score) == (honest.code_score, honest.max_code_score)
        assert attacker.code_score == attacker.max_code_score > 0


def test_the_feedback_page_holds_nothing_of_the_solutions(boxed):
    page = notebook_path(boxed.root / "feedback" / ATTACKER, ASSIGNMENT).with_suffix(".html").read_text()
    source = notebook_path(boxed.root / "source", "03_masking").read_bytes()[:64]
    reference = (boxed.root / "autograder" / "authoring" / "reference" / "attention.py").read_bytes()[:64]
    assert "ATTACK read_source: refused" in page
    for secret in (source, reference):
        assert repr(secret)[2:40] not in page


HIDE_BUBBLEWRAP = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   'mount --bind /dev/null "$(command -v bwrap)" && exec "$@"', "sh"]


@pytest.fixture(scope="module")
def unboxed(demo_class, tmp_path_factory):
    """The same attack graded on a machine without bubblewrap (a mount namespace where `bwrap` is /dev/null), first
    as is, then with `--student-code-runs-as-me`."""
    root = tmp_path_factory.mktemp("unboxed") / "course"
    try:
        refused = attack_and_grade(demo_class[0], root, command=HIDE_BUBBLEWRAP)
        ledger = (root / "grading" / "ledger.jsonl").read_text()
        argv = [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--jobs", "1", "--student-code-runs-as-me"]
        ran = subprocess.run([*HIDE_BUBBLEWRAP, *argv], cwd=root, env=dict(os.environ, PYTHONPATH=str(root)),
                             capture_output=True, text=True, timeout=900)
        yield refused, ledger, ran, outcomes(notebook_path(root / "autograded" / ATTACKER, ASSIGNMENT))
    finally:
        for left in (Path(f"/tmp/{TOKEN}"), Path(f"/dev/shm/{TOKEN}")):
            left.unlink(missing_ok=True)


def test_without_a_box_grading_refuses_before_it_starts_and_says_what_to_do(unboxed):
    refused, ledger_after_refusal, _, _ = unboxed
    assert refused.result.returncode != 0
    said = refused.result.stdout + refused.result.stderr
    assert "bubblewrap is not installed" in said and "--student-code-runs-as-me" in said, said[-2000:]
    assert "Traceback" not in said
    assert ATTACKER not in ledger_after_refusal and not refused.outcomes  # nothing of the hand-in ran


def test_graded_unboxed_the_same_attacks_go_through(unboxed):
    _, _, ran, found = unboxed
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "runs as you" in ran.stdout + ran.stderr
    for name in ("read_source", "read_reference", "read_gradebook_uri", "sitecustomize", "update_gradebook",
                 "list_hand_ins", "append_to_classmate", "raw_syscall_open"):
        assert found[name].startswith("ok"), (name, found[name])
    assert found["whoami"].startswith("ok uid 0")


@pytest.fixture(scope="module", params=["self"])
def as_an_account(request, demo_class):
    """The same attack graded by an ordinary account without subordinate ids (an instructor's laptop): its boxes are
    the account itself, with no capability, seeing only the box. (An account with subordinate ids, whose boxes get
    ids of their own, is the class hub's grader: tests/test_hub_box.py; `params=["subordinate"]` runs it here.)"""
    from autograder.hub.accounts import as_account
    from autograder.hub.private_view import private_view
    name = f"tfs-box-{request.param[:3]}-{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", name], check=True, capture_output=True)
    try:
        ranges = [line.split(":") for line in Path("/etc/subuid").read_text().split() if line.startswith(name + ":")]
        if request.param == "self" and ranges:
            span = f"{ranges[0][1]}-{int(ranges[0][1]) + int(ranges[0][2]) - 1}"
            subprocess.run(["usermod", "--del-subuids", span, "--del-subgids", span, name], check=True)
        elif request.param == "subordinate" and not ranges:
            from autograder.hub.accounts import give_subordinate_ids
            give_subordinate_ids(name)
        folder = Path(tempfile.mkdtemp(prefix="tfs-box-", dir="/var/tmp"))  # on disk, as a course directory is
        folder.chmod(0o755)
        root = folder / "course"
        shown = [Path(sys.prefix), Path(sys.base_prefix), folder]  # the account reaches only these
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(folder), "PYTHONPATH": str(root),
               "LANG": "C.UTF-8"}
        graded = attack_and_grade(demo_class[0], root, command=private_view(shown, as_account(name, [])), env=env,
                                  owner=name)
        yield request.param, pwd.getpwnam(name), graded
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def test_an_ordinary_accounts_grading_boxes_each_notebook_too(as_an_account):
    kind, account, graded = as_an_account
    assert graded.result.returncode == 0, graded.result.stdout[-2000:] + graded.result.stderr[-3000:]
    said = graded.result.stdout
    assert ("as a user id of its own" in said) == (kind == "subordinate"), said[:600]
    assert sorted(graded.outcomes) == sorted(ATTACKS), graded.outcomes
    went_through = {name: said for name, said in graded.outcomes.items() if not said.startswith("refused")}
    assert not went_through, went_through
    host = host_uid(graded.outcomes["whoami"])
    if kind == "subordinate":
        first, count = next((int(f), int(c)) for n, f, c in (line.split(":") for line in
                                                            Path("/etc/subuid").read_text().split()) if n == account.pw_name)
        assert first <= host < first + count
    else:
        assert host == account.pw_uid  # the account itself, seeing nothing but its box
    assert graded.files_after == graded.files_before and graded.grades_after == graded.grades_before
    assert graded.queue_after == graded.queue_before


def test_root_grades_no_course_directory_another_account_can_change(tmp_path):
    """As root, grading runs the course directory's nbgrader_config.py and package: one another account could change
    is refused before anything runs, naming the file and whose it is."""
    from autograder.paths import copy_course
    root = copy_course(tmp_path / "course")
    os.chown(root / "nbgrader_config.py", 65534, 65534)
    refused = subprocess.run([sys.executable, "-m", "autograder", "grade"], cwd=root,
                             env=dict(os.environ, PYTHONPATH=str(root)), capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "nbgrader_config.py is nobody's" in refused.stderr, refused.stderr[-1000:]
    os.chown(root / "nbgrader_config.py", 0, 0)
    (root / "autograder" / "paths.py").chmod(0o666)
    refused = subprocess.run([sys.executable, "-m", "autograder", "grade"], cwd=root,
                             env=dict(os.environ, PYTHONPATH=str(root)), capture_output=True, text=True, timeout=120)
    assert "paths.py is writable by its group or everyone" in refused.stderr, refused.stderr[-1000:]
