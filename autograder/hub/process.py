"""Start a class hub, wait until it answers, and stop it with everything it started; start it again after a crash.

Everything a hub starts lives in its cgroup tree (autograder.box.cgroups), which the hub's folder records in
`state/cgroups.json`. So a hub always stops all of it, also what outlived a hub killed with `kill -9`, and a hub
started again after a crash first ends what the last one left running. While a hub runs, `state/hub.lock` is held:
a second start from the same folder is refused instead of fighting the first for its ports.
"""
from __future__ import annotations

import fcntl
import json
import os
import pwd
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from autograder.box import cgroups
from autograder.box.cgroups import Tree
from autograder.hub.layout import as_grader_in, grader_environment, lay_out
from autograder.hub.private_view import private_view, shown_paths
from autograder.hub.settings import SETTINGS_VARIABLE, HubSettings
from autograder.on_submit import policy
from course.about import NOTEBOOKS

CONFIG = Path(__file__).with_name("jupyterhub_config.py")
_locks: dict[int, int] = {}  # the hub's pid -> the lock file's descriptor, held until it stops


class HubRunning(RuntimeError):
    """A hub from this folder is running already."""


def hub_command(settings: HubSettings) -> list[str]:
    """The hub's command line, in the hub's private view of the file system (autograder.hub.private_view), with the
    hub's own copy of this package (code/, root's alone: autograder.hub.layout)."""
    config = settings.code / "autograder" / "hub" / CONFIG.name
    return private_view(shown_paths(settings.folder, settings.python, settings.proxy),
                        [f"{settings.python}/bin/jupyterhub", "-f", str(config)])


def hub_environment(settings: HubSettings) -> dict[str, str]:
    return {**os.environ, SETTINGS_VARIABLE: str(settings.folder / "settings.json"),
            "PYTHONPATH": str(settings.code),
            "PATH": f"{settings.python}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def start(settings: HubSettings, log: Path | None = None) -> subprocess.Popen:
    """Lay out the hub's folder, end what a crashed hub left running, and start the hub (which starts its proxy and
    services) in the background, in its cgroup."""
    if os.geteuid() != 0:
        raise SystemExit("A class hub runs every student's server as their own Unix account, so it must start as root "
                         "(sudo make hub).")
    try:
        policy.check(settings.on_submit, list(NOTEBOOKS))
    except ValueError as wrong:
        raise SystemExit(f"The hub did not start: the settings' {wrong}. The guide's *Grading at submission* lists "
                         "the keys and their values.") from None
    settings.folder.mkdir(parents=True, exist_ok=True)
    settings.state.mkdir(mode=0o700, exist_ok=True)
    lock = _lock(settings)
    try:
        left = end_leftovers(settings)
        if left:
            print(f"ended {left} process(es) that a hub from {settings.folder} left running when it stopped "
                  "without cleaning up (a crash, kill -9 or a reboot's half-stop)", flush=True)
        lay_out(settings)
        tree = Tree(settings.folder).make()
        grader = pwd.getpwnam(settings.grader)
        tree.delegate_to_grader(grader.pw_uid, grader.pw_gid)
        tree.save(settings.cgroups_record)
        check_graders_box(settings, tree)
        log = log or settings.state / "jupyterhub.log"
        hub_cgroup = tree.hub
        with open(log, "ab") as out:
            hub = subprocess.Popen(hub_command(settings), cwd=settings.state, env=hub_environment(settings),
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=lambda: hub_cgroup.add(0))
    except BaseException:
        os.close(lock)
        raise
    _locks[hub.pid] = lock
    return hub


def check_graders_box(settings: HubSettings, tree: Tree) -> None:
    """Make sure the grader can box each notebook it grades, with a user id of its own per box (its subordinate ids,
    autograder.hub.accounts), as its services will: a box made and gone into, as the grader, in the cgroup of
    grading at submission. SystemExit with why, where it cannot: the hub grades strangers' code unattended."""
    argv = [f"{settings.python}/bin/python", "-m", "autograder.box.check"]
    env = {**grader_environment(settings), **box_environment(tree)}
    shown = shown_paths(settings.folder, settings.python, settings.proxy)
    found = subprocess.run(private_view(shown, as_grader_in(settings, tree.grader("autograde"), argv)),
                           cwd=settings.course_dir, env=env, capture_output=True, text=True, timeout=120)
    try:
        said = json.loads(found.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        said = {"unavailable": (found.stderr or found.stdout).strip()[-600:]}
    if said.get("kind") != "subordinate":
        why = said.get("unavailable") or f"its boxes would run {said.get('describe')}"
        raise SystemExit(f"The hub did not start: the grader ({settings.grader}) cannot give each notebook it grades "
                         f"a box with a user id of its own: {why}. The guide's *Security* says what a hub needs "
                         "(bubblewrap, shadow's newuidmap, subordinate ids).")
    if said.get("notes"):
        raise SystemExit(f"The hub did not start: the grader's boxes would have no cgroup of their own: "
                         f"{'; '.join(said['notes'])}")


def box_environment(tree: Tree) -> dict[str, str]:
    """What tells the grader's processes where their boxes' cgroups go (autograder.box.box)."""
    from autograder.box.box import CGROUPS_VARIABLE
    return {CGROUPS_VARIABLE: tree.subtree(f"{cgroups.GRADER}/boxes").description()}


def _lock(settings: HubSettings) -> int:
    """Hold `state/hub.lock` for this hub's life; refuse when another hub from the same folder holds it."""
    path = settings.state / "hub.lock"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = Path(path).read_text().strip() or "?"
        os.close(descriptor)
        raise HubRunning(f"A hub from {settings.folder} is running already (process {holder}): stop it first "
                         "(Ctrl-C where it runs, or `systemctl stop` for the service).") from None
    os.ftruncate(descriptor, 0)
    os.write(descriptor, str(os.getpid()).encode())
    return descriptor


def end_leftovers(settings: HubSettings) -> int:
    """Kill whatever the last hub from this folder left running (its proxy, services, students' servers and their
    kernels), then remove its cgroups; how many processes were killed. JupyterHub, started next, finds the servers
    it remembers gone and starts each again when its student comes back."""
    tree = Tree.load(settings.cgroups_record)
    if tree is None:
        return 0
    killed = tree.everything.kill()
    tree.everything.remove()
    return killed


def wait_until_up(settings: HubSettings, process: subprocess.Popen, timeout: float = 120) -> None:
    """Return when the hub answers through its proxy; raise with the log's end when it stopped or took too long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the hub stopped at start (exit {process.returncode}):\n{_log_end(settings)}")
        try:
            with urllib.request.urlopen(f"{settings.url}/hub/api/", timeout=5) as answer:
                if json.load(answer).get("version"):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the hub did not answer at {settings.url} within {timeout:.0f} s:\n{_log_end(settings)}")


def stop(process: subprocess.Popen, settings: HubSettings, timeout: float = 90) -> int:
    """SIGTERM to the hub: it stops every server, its services and its proxy, then exits. A hub that has not exited
    within `timeout` seconds is killed; then every process still in the hub's cgroups (a student's background job,
    or everything, when the hub itself was killed) is killed too, and the cgroups removed."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    end_leftovers(settings)
    lock = _locks.pop(process.pid, None)
    if lock is not None:
        os.close(lock)
    return process.returncode


def _log_end(settings: HubSettings) -> str:
    log = settings.state / "jupyterhub.log"
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
