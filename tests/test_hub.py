"""`make hub`'s command, `python -m autograder hub`, as a person runs it: it prints where to log in and with which
accounts; a demo student sees the released assignments in their own server, the instructor opens formgrader through
the hub and a student is refused it; Ctrl-C stops the hub with every server, service and the proxy."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from autograder.hub.cli import DEMO_INSTRUCTORS, DEMO_STUDENTS, free_ports
from autograder.hub.settings import HubSettings
from autograder.paths import ROOT
from course.about import NOTEBOOKS
from tests.class_accounts import made_by, remove_accounts, remove_accounts_of_gone_test_hubs
from tests.hub import log_in, open_server, view_of, why_no_hub


class Demo:
    def __init__(self, process: subprocess.Popen, folder: Path, output: list[str]):
        self.process, self.folder, self.output = process, folder, output
        self.settings = HubSettings.load(folder / "settings.json")
        self.password = re.search(r"password:\s+(\S+)", "".join(output)).group(1)


def _read_until(process: subprocess.Popen, marker: str, output: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        output.append(line)
        if marker in line:
            return
    raise AssertionError(f"no {marker!r} from `python -m autograder hub`:\n{''.join(output)}")


def _processes_under(folder: Path) -> list[str]:
    """Every process that works in the hub's folder (the hub, the proxy, formgrader, each student's server and
    kernel) or names it on its command line."""
    found = []
    for each in psutil.process_iter(["cmdline", "cwd"]):
        try:
            if str(folder) in (each.info["cwd"] or "") or any(str(folder) in part for part in each.info["cmdline"] or []):
                found.append(f"{each.pid}: {' '.join(each.info['cmdline'] or [])}")
        except psutil.Error:
            pass
    return found


@pytest.fixture(scope="module")
def demo():
    why = why_no_hub()
    if why:
        pytest.skip(why)
    remove_accounts_of_gone_test_hubs()  # a killed run's tfs-grader would stop this demo as a machine's own account
    folder = Path(tempfile.mkdtemp(prefix="hub-demo-", dir="/tmp"))
    (port,) = free_ports(1)
    process = subprocess.Popen([sys.executable, "-m", "autograder", "hub", "--root", str(folder), "--port", str(port)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    output: list[str] = []
    try:
        _read_until(process, "Ctrl-C stops it", output, timeout=240)
        yield Demo(process, folder, output)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                process.kill()
        made = made_by(HubSettings.load(folder / "settings.json")) if (folder / "settings.json").exists() else {}
        shutil.rmtree(folder, ignore_errors=True)
        remove_accounts(made)  # the demo's names are free for the next run, whose hub makes them again


def test_it_prints_where_to_log_in_and_the_accounts(demo):
    text = "".join(demo.output)
    assert f"open {demo.settings.url}/" in text
    assert all(name in text for name in DEMO_STUDENTS + DEMO_INSTRUCTORS), text
    assert f"/services/{demo.settings.course_id}/formgrader" in text, text


def test_a_student_sees_every_released_assignment_in_their_own_server(demo):
    student = DEMO_STUDENTS[0]
    session = open_server(demo.settings, log_in(demo.settings, student, demo.password), student)
    answer = session.get(f"{demo.settings.url}/user/{student}/assignments",
                         params={"course_id": demo.settings.course_id})
    assert sorted(a["assignment_id"] for a in answer.json()["value"]) == sorted(NOTEBOOKS), answer.text
    assert session.get(f"{demo.settings.url}/user/{student}/api/contents").status_code == 200


def test_the_instructor_opens_formgrader_and_a_student_is_refused(demo):
    formgrader = f"{demo.settings.url}/services/{demo.settings.course_id}/formgrader"
    answer = log_in(demo.settings, DEMO_INSTRUCTORS[0], demo.password).get(formgrader)
    assert answer.status_code == 200 and "Manage Assignments" in answer.text, (answer.status_code, answer.url)
    assert log_in(demo.settings, DEMO_STUDENTS[1], demo.password).get(formgrader).status_code == 403


def test_a_students_kernel_talks_to_their_server_over_their_own_sockets(demo):
    """Kernels on loopback ports raced each other when a class started them at once ("Address already in use",
    bench/hub_capacity.py): a student's kernel uses Unix sockets, in /run/user of their own view, theirs alone."""
    import json
    import pwd
    import stat
    student = DEMO_STUDENTS[0]
    session = open_server(demo.settings, log_in(demo.settings, student, demo.password), student)
    api = f"{demo.settings.url}/user/{student}/api/kernels"
    kernel = session.post(api, json={"name": "python3"}).json()["id"]
    try:
        restarted = session.post(f"{api}/{kernel}/restart", timeout=180)  # answers once the kernel replied
        assert restarted.status_code == 200, (restarted.status_code, restarted.text[:500])
        account = pwd.getpwnam(student)
        folder = view_of(demo.settings, student) / "run" / "user"
        connection = json.loads((folder / f"kernel-{kernel}.json").read_text())
        assert connection["transport"] == "ipc" and connection["ip"].startswith("/run/user/"), connection
        mode = folder.stat()
        assert (mode.st_uid, stat.S_IMODE(mode.st_mode) & 0o077) == (account.pw_uid, 0), oct(mode.st_mode)
    finally:
        session.delete(f"{api}/{kernel}")


def test_ctrl_c_stops_the_hub_and_everything_it_started(demo):
    running = _processes_under(demo.folder)
    assert any("jupyterhub-singleuser" in line and "--ServerApp.root_dir" not in line for line in running), running
    demo.process.send_signal(signal.SIGINT)
    demo.process.wait(90)
    rest = demo.process.stdout.read()
    assert "stopped (exit 0)" in rest, rest
    deadline = time.monotonic() + 20
    while _processes_under(demo.folder) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _processes_under(demo.folder), _processes_under(demo.folder)


def test_stopping_a_hub_stops_what_outlived_it_in_its_cgroups(tmp_path):
    """A student's server runs in a session of its own, and a student's job can leave their server's too: if the hub
    dies first (or is killed when it does not stop in time), nothing else stops them. `process.stop` kills what is
    left in the hub's cgroup tree, wherever in it, and removes the tree."""
    if why_no_hub():
        pytest.skip(why_no_hub())
    from autograder.hub import process
    from autograder.box.cgroups import Tree
    settings = HubSettings(root=str(tmp_path))
    settings.state.mkdir()
    tree = Tree(settings.folder).make()
    tree.save(settings.cgroups_record)
    student = tree.student("stand-in").make()
    hub = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: tree.hub.add(0), start_new_session=True)
    server = subprocess.Popen(["sh", "-c", "setsid sleep 300 & exec sleep 300"],
                              preexec_fn=lambda: student.add(0), start_new_session=True)
    deadline = time.monotonic() + 20
    while len(tree.everything.pids()) < 3:
        assert time.monotonic() < deadline, f"the stand-ins did not start: {tree.everything.pids()}"
        time.sleep(0.1)
    left = tree.everything.pids()
    os.kill(hub.pid, signal.SIGKILL)  # the hub is gone first, as after kill -9
    hub.wait()
    process.stop(hub, settings, timeout=10)
    server.wait(5)
    assert not [pid for pid in left if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"], left
    assert not any(folder.exists() for folder in tree.everything.folders), "the hub's cgroups were left behind"
