"""Nobody reaches what is not theirs on the class hub (issue 41, item 4), each proven against a running hub from the
student's side, as a student can act: code run in their own kernel on their own server, reached through the hub
(/user/<name>/api/kernels and its websocket channels), with the permissions and the token that server has.

Each check also runs a positive control where one exists (the student reads their own file, their own environment,
the student package), so a denial never passes because the probe itself is broken."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from autograder.hub.accounts import as_account
from autograder.hub.layout import grader_environment
from autograder.paths import REFERENCE, ROOT
from tests.hub import Kernel, home_of, log_in, running_hub, view_of

ADA, BOB, TEACHER = "sec-ada", "sec-bob", "sec-teacher"
ASSIGNMENT = "03_masking"
DENIED = ("PermissionError", "FileNotFoundError")

@pytest.fixture(scope="module")
def hub():
    # Grading at submission off: its service collects each hand-in as it comes, which would take away the junk this
    # file drops into inbound/ before the collect that names it (the hub's collect clears what is no hand-in).
    with running_hub("sec", [ADA, BOB], [TEACHER], [ASSIGNMENT], on_submit={"default": {"grade": False}}) as h:
        yield h


@pytest.fixture(scope="module")
def ada(hub):
    kernel = Kernel(hub, ADA)
    yield kernel
    kernel.shut_down()


@pytest.fixture(scope="module")
def bob(hub):
    kernel = Kernel(hub, BOB)
    yield kernel
    kernel.shut_down()


@pytest.fixture(scope="module")
def ada_handed_in(hub, ada) -> Path:
    """Ada fetches and submits 03 from her kernel with nbgrader, as her terminal would; her hand-in's folder."""
    ada.run(textwrap.dedent(f'''
        import subprocess
        os.chdir(os.path.expanduser("~"))
        for step in (["fetch_assignment", "{ASSIGNMENT}"], ["submit", "{ASSIGNMENT}"]):
            done = subprocess.run(["nbgrader", *step, "--course", "{hub.course_id}"], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
    '''))
    folders = list((hub.exchange / hub.course_id / "inbound").glob(f"{ADA}+{ASSIGNMENT}+*"))
    assert len(folders) == 1, folders
    return folders[0]


def test_a_student_cannot_read_another_students_home(hub, ada, bob):
    ada.run('open(os.path.expanduser("~/notes.txt"), "w").write("ada\'s own notes")\n'
            'os.chmod(os.path.expanduser("~/notes.txt"), 0o644)')  # even a file she left readable to all
    bob.run('open(os.path.expanduser("~/notes.txt"), "w").write("bob\'s own notes")')
    home = hub.homes / ADA
    assert (home_of(hub, ADA) / "notes.txt").read_text() == "ada's own notes"
    # her kernel's sockets and connection file (its key) are in her private /run/user
    connections = list((view_of(hub, ADA) / "run" / "user").glob("kernel-*.json"))
    assert connections, "Ada's kernel has no connection file in her /run/user"
    seen = bob.answer(f'print(json.dumps([read("{home}/notes.txt"), listing("{home}"), '
                      f'read("/run/user/{connections[0].name}"), read(os.path.expanduser("~/notes.txt"))]))')
    assert seen[:3] in (["PermissionError"] * 3, ["FileNotFoundError"] * 3) and seen[3] == "read", seen


def test_a_student_cannot_read_the_reference_the_sources_or_the_gradebook(hub, bob):
    course = hub.course_dir
    secret = [course / REFERENCE.relative_to(ROOT) / "masking.py", course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
              course / "gradebook.db", REFERENCE / "masking.py",
              ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"]
    for path in secret:
        assert path.exists(), f"{path} should exist on the machine: the check below would prove nothing"
    folders = [course, course / REFERENCE.relative_to(ROOT), course / "source", REFERENCE,
               ROOT / "source"]
    released = hub.exchange / hub.course_id / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    student_package = hub.software / "course" / "__init__.py"
    seen = bob.answer(f'print(json.dumps({{"files": [read(p) for p in {[str(p) for p in secret]!r}], '
                      f'"folders": [listing(p) for p in {[str(p) for p in folders]!r}], '
                      f'"released": read("{released}"), "package": read("{student_package}")}}))')
    assert all(answer in DENIED for answer in seen["files"]), list(zip(secret, seen["files"]))
    assert all(answer in DENIED for answer in seen["folders"]), list(zip(folders, seen["folders"]))
    assert seen["released"] == seen["package"] == "read", seen


def test_a_student_cannot_list_or_read_another_students_hand_in(hub, bob, ada_handed_in):
    inbound = ada_handed_in.parent
    student, assignment, timestamp, random = ada_handed_in.name.split("+")
    guessed = inbound / f"{student}+{assignment}+{timestamp}"  # the right name and time, without the random part
    seen = bob.answer(f'print(json.dumps([listing("{inbound}"), glob.glob("{inbound}/{ADA}+*"), '
                      f'read("{guessed}/{ASSIGNMENT}.ipynb"), listing("{guessed}")]))')
    assert seen == ["PermissionError", [], "FileNotFoundError", "FileNotFoundError"], seen


def test_a_students_server_token_is_refused_all_but_its_own_groups(hub, ada, bob):
    """The token in the student's kernel (JUPYTERHUB_API_TOKEN) reads its owner's groups, which nbgrader's assignment
    list needs, and opens its own server; everything else is refused: the hub's admin API, another's server (Ada's
    is running), formgrader through the proxy and on its own port."""
    api = "os.environ['JUPYTERHUB_API_URL']"
    service = f"services/{hub.course_id}/formgrader"
    asks = {
        "own groups": f"call({api} + '/user')",
        "own server": f"call('{hub.url}/user/{BOB}/api/contents')",
        "list users": f"call({api} + '/users')",
        "another user": f"call({api} + '/users/{ADA}')",
        "no such user": f"call({api} + '/users/sec-nobody')",
        "start another's server": f"call({api} + '/users/{ADA}/server', 'POST', {{}})",
        "stop another's server": f"call({api} + '/users/{ADA}/server', 'DELETE')",
        "list groups": f"call({api} + '/groups')",
        "the instructors' group": f"call({api} + '/groups/{hub.formgrader_group}')",
        "join the instructors": f"call({api} + '/groups/{hub.formgrader_group}/users', 'POST', "
                                f"{{'users': ['{BOB}']}})",
        "a token of more scopes": f"call({api} + '/users/{BOB}/tokens', 'POST', {{'scopes': ['admin:users']}})",
        "formgrader": f"call('{hub.url}/{service}/')",
        "formgrader's API": f"call('{hub.url}/{service}/api/assignments')",
        "formgrader on its port": f"call('http://127.0.0.1:{hub.formgrader_port}/{service}/api/assignments')",
        "another's server": f"call('{hub.url}/user/{ADA}/api/contents')",
        "another's kernels": f"call('{hub.url}/user/{ADA}/api/kernels')",
    }
    seen = bob.answer("print(json.dumps({" + ", ".join(f"{k!r}: {v}" for k, v in asks.items()) + "}))")
    status = {ask: answer[0] for ask, answer in seen.items()}
    own = json.loads(seen["own groups"][1])
    assert status["own groups"] == 200 and own["name"] == BOB and own["groups"] == [hub.student_group], seen
    assert status["own server"] == 200, seen["own server"]
    # JupyterHub answers a user the token may not see as it answers one who does not exist: nothing is told.
    assert status["another user"] == 404 and seen["another user"] == seen["no such user"], seen
    refused = {ask: code for ask, code in status.items() if ask not in ("own groups", "own server", "another user",
                                                                         "no such user")}
    assert set(refused.values()) == {403}, refused


def _pids(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (what any account may read in /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_a_student_cannot_read_the_hubs_the_proxys_or_the_services_secrets(hub, bob):
    hub_pids = _pids(str(hub.code / "autograder" / "hub" / "jupyterhub_config.py"))
    proxy_pids = _pids(f"--api-port {hub.proxy_api_port}")
    service_pids = _pids(f"--ServerApp.root_dir={hub.course_dir}")
    processes = {"hub": hub_pids, "proxy": proxy_pids, "formgrader": service_pids}
    assert all(processes.values()), processes
    # The secrets are there, and are what they guard: the proxy's token in its environment, the service's token in its.
    assert b"CONFIGPROXY_AUTH_TOKEN=" in Path(f"/proc/{proxy_pids[0]}/environ").read_bytes()
    assert b"JUPYTERHUB_API_TOKEN=" in Path(f"/proc/{service_pids[0]}/environ").read_bytes()
    # settings.json holds the demo's shared password.
    files = [hub.state / "jupyterhub_cookie_secret", hub.state / "jupyterhub.sqlite", hub.folder / "settings.json"]
    assert all(path.exists() for path in files), files
    environs = {name: [f"/proc/{pid}/environ" for pid in pids] for name, pids in processes.items()}
    seen = bob.answer(f'print(json.dumps({{"state": listing("{hub.state}"), '
                      f'"files": [read(p) for p in {[str(p) for p in files]!r}], '
                      f'"environ": {{k: [read(p) for p in v] for k, v in {environs!r}.items()}}, '
                      f'"grader home": listing("{hub.course_dir.parent}"), '
                      f'"own environ": "JUPYTERHUB_API_TOKEN=" in open("/proc/self/environ").read()}}))')
    # Not in a student's view at all (FileNotFoundError), or there and refused (PermissionError)
    assert seen["state"] in DENIED and all(answer in DENIED for answer in seen["files"]), seen
    assert seen["grader home"] in DENIED, seen
    assert all(answer in DENIED for answers in seen["environ"].values() for answer in answers), seen
    assert seen["own environ"] is True, "the probe cannot read even its own environment: it proves nothing"
def _collect(hub, *options: str) -> str:
    """`nbgrader collect --update` as the grader, in the course directory, as the instructor runs it; its output."""
    done = subprocess.run(as_account(hub.grader, [f"{hub.python}/bin/nbgrader", "collect", ASSIGNMENT, "--update",
                                                  *options]),
                          cwd=hub.course_dir, capture_output=True, text=True, env=grader_environment(hub))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def _collected(hub) -> dict[str, str]:
    """What collecting put in submitted/: each student's notebook's text; then submitted/ is emptied for the next."""
    submitted = hub.course_dir / "submitted"
    found = {path.parent.parent.name: path.read_text() for path in submitted.glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")}
    shutil.rmtree(submitted, ignore_errors=True)
    return found


def test_a_student_cannot_hand_in_as_someone_else(hub, bob, ada_handed_in):
    """Bob writes into inbound, which every account may write, a hand-in named for Ada (an hour after hers, so it
    would replace it), and one of his own whose notebook is a link to the grader's source notebook (the grader's
    collect would copy the solution in), and a file that is no hand-in. Plain nbgrader collects both hand-ins; the
    hub's collect, from the command and from formgrader's Collect button, takes Ada's own hand-in and neither of Bob's,
    and names all three to the instructor (the hand-ins it refused each time: they stay in inbound/; the file it
    removes the first time)."""
    inbound = ada_handed_in.parent
    ada_time = (ada_handed_in / "timestamp.txt").read_text()
    later = f"{int(ada_time[:4]) + 1}{ada_time[4:]}"
    released = hub.exchange / hub.course_id / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    source = hub.course_dir / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    forged, linked = f"{ADA}+{ASSIGNMENT}+{later}+forged", f"{BOB}+{ASSIGNMENT}+{later}+linked"
    bob.run(textwrap.dedent(f'''
        notebook = json.load(open("{released}"))
        notebook["cells"].append({{"cell_type": "markdown", "id": "forged", "metadata": {{}},
                                  "source": "written by {BOB}"}})
        for folder in ("{inbound}/{forged}", "{inbound}/{linked}"):
            os.mkdir(folder)
            open(folder + "/timestamp.txt", "w").write("{later}")
        json.dump(notebook, open("{inbound}/{forged}/{ASSIGNMENT}.ipynb", "w"))
        os.symlink("{source}", "{inbound}/{linked}/{ASSIGNMENT}.ipynb")
        open("{inbound}/notes.txt", "w").write("{BOB} was here")
    '''))
    dropped = "Not collected: inbound/notes.txt is no hand-in: a file, not a folder."
    ada_own = (ada_handed_in / f"{ASSIGNMENT}.ipynb").read_text()
    assert "BEGIN SOLUTION" in source.read_text() and "BEGIN SOLUTION" not in ada_own

    # Plain nbgrader: the name is believed, and the link is followed.
    _collect(hub, "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect")
    plain = _collected(hub)
    assert f"written by {BOB}" in plain[ADA] and "BEGIN SOLUTION" in plain[BOB], "the attack no longer works"

    # The hub's collect, as `nbgrader collect`.
    output = _collect(hub)
    assert _collected(hub) == {ADA: ada_own}, output
    assert f"Not collected: inbound/{forged} is named for {ADA}, but the folder belongs to {BOB}" in output, output
    assert f"Not collected: inbound/{linked} is named for {BOB}, but {ASSIGNMENT}.ipynb in it is a link (to " \
           f"{source})" in output, output
    assert dropped in output, output

    # The hub's collect, from formgrader's Collect button (the instructor's request through the hub).
    teacher = log_in(hub, TEACHER)
    formgrader = f"{hub.url}/services/{hub.course_id}/formgrader"
    assert teacher.get(f"{formgrader}/").status_code == 200
    answer = teacher.post(f"{formgrader}/api/assignment/{ASSIGNMENT}/collect",
                          headers={"X-XSRFToken": teacher.cookies.get("_xsrf", path=f"/services/{hub.course_id}/")
                                   or teacher.cookies.get("_xsrf") or ""})
    assert answer.status_code == 200 and answer.json()["success"], answer.text
    assert f"Not collected: inbound/{forged}" in answer.json()["log"], answer.json()["log"]
    assert f"Not collected: inbound/{linked}" in answer.json()["log"], answer.json()["log"]
    assert not (inbound / "notes.txt").exists(), "the collect before left what is no hand-in (test_hub_exchange.py)"
    assert _collected(hub) == {ADA: ada_own}


def test_a_student_cannot_put_their_own_course_folder_in_the_exchange(hub, bob):
    """Every account may write in the exchange's root (nbgrader asks it): without its sticky bit, Bob could move the
    course's folder aside and put his own in its place, so the class would fetch his assignment and hand in to an
    inbound he reads. (Last in the file: were the move to succeed, it is put back at once.)"""
    course = hub.exchange / hub.course_id
    released = course / "outbound" / ASSIGNMENT
    seen = bob.answer(textwrap.dedent(f'''
        changed = [probe(lambda: open("{released}/{ASSIGNMENT}.ipynb", "a")),
                   probe(lambda: open("{released}/extra.py", "w")), probe(lambda: os.rename("{released}", "{released}-x"))]
        assert changed == ["PermissionError"] * 3, f"the released assignment could be changed: {{changed}}"
        try:
            os.rename("{course}", "{course}-moved")
        except OSError as error:
            print(json.dumps(type(error).__name__))
        else:
            os.rename("{course}-moved", "{course}")
            print(json.dumps("moved"))
    '''))
    assert seen == "PermissionError", f"{BOB} could move the course's exchange folder: {seen}"


def test_a_hand_in_changed_into_a_link_after_its_check_is_not_followed(tmp_path, caplog):
    """The race the ownership check alone leaves: a student's own hand-in passes the check, then its notebook is
    swapped for a link to a file only the grader reads before the copy. The hub's collect opens each file without
    following a link, so nothing is copied, the instructor is told and the collect fails. (No hub needed: the swap is
    made between the check and the copy, as a student looping the swap could make it.)"""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError

    from autograder.handins.inbound import foreign_reason
    from autograder.hub.owned_collect import OwnedCollect

    owner = pwd.getpwuid(os.getuid()).pw_name  # the files below are this account's own, as a student's are theirs
    secret = tmp_path / "source.ipynb"
    secret.write_text("### BEGIN SOLUTION")
    handin = tmp_path / "inbound" / f"{owner}+{ASSIGNMENT}+2026-01-01 00:00:00.000000 UTC+abc"
    handin.mkdir(parents=True)
    (handin / "timestamp.txt").write_text("2026-01-01 00:00:00.000000 UTC")
    (handin / f"{ASSIGNMENT}.ipynb").write_text("{}")
    assert foreign_reason(str(handin), owner) is None  # the check passes
    (handin / f"{ASSIGNMENT}.ipynb").unlink()
    (handin / f"{ASSIGNMENT}.ipynb").symlink_to(secret)  # then the swap
    collect = OwnedCollect(coursedir=CourseDirectory(root=str(tmp_path), assignment_id=ASSIGNMENT),
                           authenticator=Authenticator())
    collect.inbound_path, collect.src_records = str(handin.parent), [collect._path_to_record(str(handin))]
    with pytest.raises(ExchangeError):
        collect.copy_files()  # what `nbgrader collect` runs after the check
    assert list((tmp_path / "submitted" / owner).iterdir()) == [], list((tmp_path / "submitted").rglob("*"))
    assert f"Not collected: inbound/{handin.name} could not be copied ({ASSIGNMENT}.ipynb could not be opened " \
           "without following a link" in caplog.text, caplog.text
