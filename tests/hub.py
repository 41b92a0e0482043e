"""A real class hub for the hub tests: `running_hub(...)` starts one on loopback in a fresh folder, on free ports,
with accounts named for the test file (so test files on other workers never share an account), and stops it.

Use it as a module-scoped fixture: a hub takes about 20 s to lay out and start, a student's first server 5 to 15 s.
Tests skip, saying why, where a hub cannot run: not root, no `useradd`/`unshare`, or no proxy (`make setup` installs
it with npm)."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import requests

from autograder.hub import process
from autograder.hub.cli import free_ports
from autograder.hub.settings import PROXY, HubSettings

PASSWORD = "hub-test-password"


def why_no_hub() -> str | None:
    """Why a hub cannot run on this machine, or None."""
    if os.geteuid() != 0:
        return "a class hub runs each student's server as their own Unix account: it needs root"
    for tool in ("useradd", "unshare", "setpriv"):
        if not shutil.which(tool, path="/usr/sbin:/usr/bin:/sbin:/bin"):
            return f"no {tool} on this machine"
    if not PROXY.exists():
        return f"no proxy at {PROXY}: make setup installs it with npm (Node.js and npm needed)"
    return None


@contextlib.contextmanager
def running_hub(tag: str, students: list[str], instructors: list[str], assignments: list[str], **settings):
    """A hub with `students` and `instructors` (shared-password login, `PASSWORD`), `assignments` released; its
    grader account is `grader-<tag>`. Yields its HubSettings; the folder is removed afterwards."""
    why = why_no_hub()
    if why:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix=f"hub-{tag}-", dir="/tmp"))
    port, hub_port, proxy_api_port, formgrader_port = free_ports(4)
    hub = HubSettings(root=str(folder), port=port, hub_port=hub_port, proxy_api_port=proxy_api_port,
                      formgrader_port=formgrader_port, grader=f"grader-{tag}", password=PASSWORD,
                      students=students, instructors=instructors, assignments=assignments, **settings)
    started = None
    try:
        started = process.start(hub)
        process.wait_until_up(hub, started)
        yield hub
    finally:
        if started is not None:
            process.stop(started, hub)
        shutil.rmtree(folder, ignore_errors=True)


def log_in(hub: HubSettings, name: str, password: str = PASSWORD) -> requests.Session:
    """A browser-like session logged in to the hub as `name` (shared-password login)."""
    session = requests.Session()
    session.get(f"{hub.url}/hub/login")
    answer = session.post(f"{hub.url}/hub/login", data={"username": name, "password": password,
                                                        "_xsrf": session.cookies.get("_xsrf")})
    assert f"/user/{name}/" in answer.url or "/hub/spawn" in answer.url, f"{name} did not log in: {answer.url}"
    return session


def open_server(hub: HubSettings, session: requests.Session, name: str, timeout: float = 120) -> requests.Session:
    """Start `name`'s server (when it is not running) and follow the hub's OAuth into it: the session can then use
    the server's API, with the X-XSRFToken header set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = session.get(f"{hub.url}/user/{name}/lab")
        if answer.status_code == 200 and answer.url.startswith(f"{hub.url}/user/{name}/"):
            session.headers["X-XSRFToken"] = session.cookies.get("_xsrf", path=f"/user/{name}/") or \
                session.cookies.get("_xsrf") or ""
            return session
        time.sleep(1)
    raise AssertionError(f"{name}'s server did not open within {timeout:.0f} s: {answer.status_code} {answer.url}\n"
                         f"{(hub.state / 'jupyterhub.log').read_text()[-3000:]}")
