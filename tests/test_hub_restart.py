"""A class hub starts again from its folder (issue 47, item 3), as an instructor starts it: `python -m autograder hub
--settings settings.json`, after Ctrl-C, after `kill -9` of the hub and of the command that started it, and after a
reboot (every process and cgroup gone). Each time the released assignment is not released again, the accounts, the
hand-in, the gradebook and the student's files are kept, nothing needs a `chown` by hand, what a crash left running
is ended, and the student, with the same browser session, lands in a working server without any step of their own.
The tests run in order, on one hub folder."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from autograder.box.cgroups import Tree
from autograder.hub.cli import free_ports
from autograder.hub.settings import HubSettings
from autograder.paths import ROOT
from tests.class_accounts import made_by, remove_accounts
from tests.hub import PASSWORD, Kernel, home_of, log_in, open_server, why_no_hub

ADA, TEACHER, ASSIGNMENT = "rst-ada", "rst-teacher", "03_masking"


class Class:
    """The class's hub folder and settings, the running command, and Ada's browser session across restarts."""

    def __init__(self, folder: Path):
        port, hub_port, proxy_api_port, formgrader_port = free_ports(4)
        self.settings = HubSettings(root=str(folder), port=port, hub_port=hub_port, proxy_api_port=proxy_api_port,
                                    formgrader_port=formgrader_port, grader="grader-rst", password=PASSWORD,
                                    students=[ADA], instructors=[TEACHER], assignments=[ASSIGNMENT])
        self.file = folder.parent / f"{folder.name}-settings.json"
        self.file.write_text(__import__("json").dumps(__import__("dataclasses").asdict(self.settings)))
        self.command: subprocess.Popen | None = None
        self.output: list[str] = []
        self.session = None

    def start(self) -> str:
        """`python -m autograder hub --settings ...` until it says the hub is up; what it printed."""
        self.output = []
        self.command = subprocess.Popen([sys.executable, "-m", "autograder", "hub", "--settings", str(self.file)],
                                        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            line = self.command.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if "Ctrl-C stops it" in line:
                return "".join(self.output)
        raise AssertionError(f"the hub did not come up again:\n{''.join(self.output)}\n{self.log()[-3000:]}")

    def log(self) -> str:
        log = self.settings.state / "jupyterhub.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def hub_pid(self) -> int:
        return int((self.settings.state / "jupyterhub.pid").read_text())

    def released_at(self) -> float:
        return (self.settings.exchange / self.settings.course_id / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
                ).stat().st_mtime

    def ada_works(self) -> Kernel:
        """Ada, with the browser session she had before, opens her server (the hub starts it: no step of hers) and
        runs a cell there."""
        open_server(self.settings, self.session, ADA, timeout=240)
        kernel = Kernel(self.settings, ADA, session=self.session)
        assert kernel.run("print(6 * 7)").strip() == "42"
        return kernel


@pytest.fixture(scope="module")
def course():
    why = why_no_hub()
    if why:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="hub-rst-", dir="/tmp"))
    each = Class(folder)
    try:
        yield each
    finally:
        if each.command is not None and each.command.poll() is None:
            each.command.send_signal(signal.SIGINT)
            try:
                each.command.wait(120)
            except subprocess.TimeoutExpired:
                each.command.kill()
        tree = Tree.load(each.settings.cgroups_record)
        if tree is not None:
            tree.everything.kill()
            tree.everything.remove()
        made = made_by(each.settings)
        shutil.rmtree(folder, ignore_errors=True)
        each.file.unlink(missing_ok=True)
        remove_accounts(made)


def test_1_a_class_works_and_ada_hands_in(course):
    course.start()
    course.session = log_in(course.settings, ADA)
    kernel = course.ada_works()
    kernel.run(textwrap.dedent(f'''
        import subprocess
        os.chdir(os.path.expanduser("~"))
        for step in (["fetch_assignment", "{ASSIGNMENT}"], ["submit", "{ASSIGNMENT}"]):
            done = subprocess.run(["nbgrader", *step, "--course", "{course.settings.course_id}"],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        open(os.path.expanduser("~/notes.txt"), "w").write("kept across restarts")
    '''))
    course.inbound = sorted(p.name for p in (course.settings.exchange / course.settings.course_id / "inbound")
                            .glob(f"{ADA}+{ASSIGNMENT}+*"))
    assert len(course.inbound) == 1, course.inbound
    course.first_release = course.released_at()


def test_2_after_ctrl_c_it_starts_again_and_releases_nothing_twice(course):
    course.command.send_signal(signal.SIGINT)
    rest = course.command.communicate(timeout=150)[0]
    assert "stopped (exit 0)" in rest, rest
    time.sleep(1.5)  # a second release would leave a later modification time than the first
    course.start()
    assert course.released_at() == course.first_release, "the released assignment was released again"
    inbound = course.settings.exchange / course.settings.course_id / "inbound"
    assert sorted(p.name for p in inbound.glob(f"{ADA}+{ASSIGNMENT}+*")) == course.inbound
    course.ada_works()
    assert (home_of(course.settings, ADA) / "notes.txt").read_text() == "kept across restarts"


def test_3_a_second_start_from_the_same_folder_is_refused_while_it_runs(course):
    second = subprocess.run([sys.executable, "-m", "autograder", "hub", "--settings", str(course.file)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert second.returncode != 0 and "is running already" in second.stdout + second.stderr, second
    assert course.command.poll() is None, "the running hub stopped"


def test_4_after_kill_9_what_the_crash_left_is_ended_and_ada_carries_on(course):
    tree = Tree.load(course.settings.cgroups_record)
    ada_server = [pid for pid in tree.student(ADA).pids()
                  if b"jupyterhub-singleuser" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert ada_server, "Ada's server should be running before the crash"
    os.kill(course.command.pid, signal.SIGKILL)  # the command that started the hub, then the hub itself
    os.kill(course.hub_pid(), signal.SIGKILL)
    course.command.wait()
    time.sleep(1)
    left = tree.everything.pids()
    assert left, "nothing was left running: the crash proves nothing"
    printed = course.start()
    assert "ended" in printed and "left running" in printed, printed
    assert not [pid for pid in left if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"], left
    course.ada_works()
    assert (home_of(course.settings, ADA) / "notes.txt").read_text() == "kept across restarts"


def test_5_after_a_reboot_it_starts_again(course):
    """A reboot: every process of the class gone, and the cgroups with them (nothing stopped the hub cleanly)."""
    tree = Tree.load(course.settings.cgroups_record)
    os.kill(course.command.pid, signal.SIGKILL)
    tree.everything.kill()
    course.command.wait()
    tree.everything.remove()
    course.start()
    course.ada_works()
    assert (home_of(course.settings, ADA) / "notes.txt").read_text() == "kept across restarts"
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course.settings.course_dir / 'gradebook.db'}") as gradebook:
        assert [a.name for a in gradebook.assignments] == [ASSIGNMENT]
