"""Start a class hub, wait until it answers, and stop it with everything it started."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from autograder.hub.layout import lay_out
from autograder.hub.private_view import private_view, shown_paths
from autograder.hub.settings import SETTINGS_VARIABLE, HubSettings

CONFIG = Path(__file__).with_name("jupyterhub_config.py")


def hub_command(settings: HubSettings) -> list[str]:
    """The hub's command line, in the hub's private view of the file system."""
    config = settings.course_dir / "autograder" / "hub" / CONFIG.name
    return private_view(shown_paths(settings.folder, settings.python, settings.proxy),
                        [f"{settings.python}/bin/jupyterhub", "-f", str(config)])


def hub_environment(settings: HubSettings) -> dict[str, str]:
    """The hub imports this package from the course directory: the repository is hidden in its view."""
    return {**os.environ, SETTINGS_VARIABLE: str(settings.folder / "settings.json"),
            "PYTHONPATH": str(settings.course_dir),
            "PATH": f"{settings.python}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def start(settings: HubSettings, log: Path | None = None) -> subprocess.Popen:
    """Lay out the hub's folder and start the hub (which starts its proxy and services) in the background."""
    if os.geteuid() != 0:
        raise SystemExit("A class hub runs every student's server as their own Unix account, so it must start as root "
                         "(sudo make hub).")
    lay_out(settings)
    log = log or settings.state / "jupyterhub.log"
    with open(log, "ab") as out:
        return subprocess.Popen(hub_command(settings), cwd=settings.state, env=hub_environment(settings),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


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


def stop(process: subprocess.Popen, timeout: float = 90) -> int:
    """SIGTERM to the hub: it stops every server, its services and its proxy, then exits. A hub that has not exited
    within `timeout` seconds is killed, and so is every process still in its mount namespace: each student's server
    runs in a session of its own, so nothing else would stop it, and a server left running keeps its account busy."""
    namespace = mount_namespace(process.pid)
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if namespace is not None and namespace != mount_namespace(os.getpid()):
        for pid in processes_in(namespace):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return process.returncode


def mount_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def processes_in(namespace: str) -> list[int]:
    """Every process in the mount namespace `namespace` (as /proc/<pid>/ns/mnt names it)."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and mount_namespace(int(entry)) == namespace]


def _log_end(settings: HubSettings) -> str:
    log = settings.state / "jupyterhub.log"
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
