"""A real class hub for the hub tests: `running_hub(...)` starts one on loopback in a fresh folder, on free ports,
with accounts named for the test file (so test files on other workers never share an account), and stops it.

Use it as a module-scoped fixture: a hub takes about 20 s to lay out and start, a student's first server 5 to 15 s.
Tests skip, saying why, where a hub cannot run: not root, no `useradd`/`unshare`, or no proxy (`make setup` installs
it with npm)."""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import requests
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from autograder.hub import process
from autograder.box.cgroups import Tree
from autograder.hub.cli import free_ports
from autograder.hub.settings import PROXY, HubSettings
from tests.class_accounts import made_by, remove_accounts, remove_accounts_of_gone_test_hubs

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
    remove_accounts_of_gone_test_hubs()
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
        made = made_by(hub)  # the next run has a new folder, whose hub uses only accounts it made itself
        shutil.rmtree(folder, ignore_errors=True)
        remove_accounts(made)


def as_student(hub: HubSettings, name: str, *command: str, cwd: Path) -> subprocess.Popen:
    """`command` as the student's account, with their server's nbgrader settings (the hub's student config); the
    hub's own login check is left out (no server, so no hub token): nbgrader's NoAuthPlugin."""
    account = pwd.getpwnam(name)
    env = {"PATH": f"{hub.python}/bin:/usr/bin:/bin", "HOME": str(cwd), "JUPYTER_CONFIG_PATH": str(hub.student_config),
           "LANG": "C.UTF-8"}
    return subprocess.Popen(["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups",
                             *command, "--Authenticator.plugin_class=nbgrader.auth.NoAuthPlugin"],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def view_of(hub: HubSettings, name: str) -> Path:
    """The root of `name`'s view of the file system (autograder.hub.spawner), as a test reads it from outside: their
    server's /proc/<pid>/root. Their home, their /tmp and /run/user are seen only there."""
    for pid in Tree.load(hub.cgroups_record).student(name).pids():
        try:
            if b"jupyterhub-singleuser" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return Path(f"/proc/{pid}/root")
        except OSError:
            pass
    raise AssertionError(f"{name}'s server is not running: their view exists only while it runs")


def home_of(hub: HubSettings, name: str) -> Path:
    """`name`'s home as their server sees it (a file system only their view mounts)."""
    return view_of(hub, name) / hub.homes.relative_to("/") / name


def log_in(hub: HubSettings, name: str, password: str = PASSWORD) -> requests.Session:
    """A browser-like session logged in to the hub as `name` (shared-password login)."""
    session = requests.Session()
    session.get(f"{hub.url}/hub/login")
    answer = session.post(f"{hub.url}/hub/login", data={"username": name, "password": password,
                                                        "_xsrf": session.cookies.get("_xsrf")})
    assert f"/user/{name}/" in answer.url or "/hub/spawn" in answer.url, f"{name} did not log in: {answer.url}"
    return session


# What the hub's "server not running" page runs when implicit_spawn_seconds is set (jupyterhub_config.py).
IMPLICIT_SPAWN = re.compile(r'var spawn_url = "([^"]+)";\s*var implicit_spawn_seconds = \d')


def open_server(hub: HubSettings, session: requests.Session, name: str, timeout: float = 120) -> requests.Session:
    """Start `name`'s server (when it is not running) and follow the hub's OAuth into it: the session can then use
    the server's API, with the X-XSRFToken header set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = session.get(f"{hub.url}/user/{name}/lab")
        spawn = IMPLICIT_SPAWN.search(answer.text) if answer.status_code == 424 else None
        if spawn:  # "your server is not running": the page's script goes on to spawn it by itself, as here
            answer = session.get(f"{hub.url}{spawn.group(1)}")
        if answer.status_code == 200 and answer.url.startswith(f"{hub.url}/user/{name}/"):
            session.headers["X-XSRFToken"] = session.cookies.get("_xsrf", path=f"/user/{name}/") or \
                session.cookies.get("_xsrf") or ""
            return session
        time.sleep(1)
    raise AssertionError(f"{name}'s server did not open within {timeout:.0f} s: {answer.status_code} {answer.url}\n"
                         f"{(hub.state / 'jupyterhub.log').read_text()[-3000:]}")


# What every probe kernel defines first: each probe answers "read" or the exception's name, never raises.
PRELUDE = textwrap.dedent('''
    import glob, json, os, urllib.error, urllib.request

    def probe(action):
        try:
            action()
        except OSError as error:
            return type(error).__name__
        return "read"

    def read(path):
        return probe(lambda: open(path, "rb").read(16))

    def listing(path):
        return probe(lambda: os.listdir(path))

    def call(url, method="GET", body=None, token=None):
        """The HTTP status of a request made with this server's own API token (the one its owner has)."""
        token = token or os.environ["JUPYTERHUB_API_TOKEN"]
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")
''')


class Kernel:
    """A kernel in `name`'s own server, opened through the hub with their logged-in session."""

    def __init__(self, hub, name: str, session: requests.Session | None = None):
        self.hub, self.name = hub, name
        self.session = open_server(hub, session or log_in(hub, name), name)
        answer = self.session.post(f"{hub.url}/user/{name}/api/kernels", json={"name": "python3"})
        assert answer.status_code == 201, (answer.status_code, answer.text)
        self.id = answer.json()["id"]
        self.run(PRELUDE)

    def shut_down(self) -> None:
        self.session.delete(f"{self.hub.url}/user/{self.name}/api/kernels/{self.id}")

    def run(self, code: str, timeout: float = 120) -> str:
        """`code`'s standard output; an AssertionError with the traceback when it raised."""
        def execute() -> str:
            return asyncio.run(asyncio.wait_for(self._execute(code), timeout))
        try:
            asyncio.get_running_loop()  # Playwright's sync API runs one in this thread: run beside it
        except RuntimeError:
            return execute()
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(execute).result()

    def answer(self, code: str, timeout: float = 120) -> dict:
        """The JSON value `code` prints on its last line."""
        return json.loads(self.run(code, timeout).strip().splitlines()[-1])

    async def _execute(self, code: str) -> str:
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.session.cookies
                            if c.path in ("/", f"/user/{self.name}/", "/hub/"))
        url = f"ws://{self.hub.ip}:{self.hub.port}/user/{self.name}/api/kernels/{self.id}/channels"
        connection = await websocket_connect(HTTPRequest(url, headers={"Cookie": cookies}))
        msg_id = uuid.uuid4().hex
        connection.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": uuid.uuid4().hex,
                       "username": self.name, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        output, error = [], None
        try:
            while True:
                raw = await connection.read_message()
                assert raw is not None, f"{self.name}'s kernel closed its channels"
                message = json.loads(raw)
                if message.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = message["msg_type"], message["content"]
                if kind == "stream":
                    output.append(content["text"])
                elif kind == "error":
                    error = "\n".join(content["traceback"])
                elif kind == "status" and content["execution_state"] == "idle":
                    break
        finally:
            connection.close()
        assert error is None, f"{self.name}'s kernel raised:\n{error}\n--- and printed:\n{''.join(output)}"
        return "".join(output)


class Terminal:
    """A terminal of formgrader's server, the one *File > New > Terminal* opens at /services/<course>/lab: its shell
    as the grader account, started by the hub's start-up file (etc/grader/bashrc). Driven over the terminal's
    websocket, as the page's terminal is, with the instructor's own cookies."""

    PROMPT = re.compile(r"\S+:\S+\$ $")  # the grader's prompt, `tfs-grader:/srv/class-hub/grader/course$ `

    def __init__(self, hub: HubSettings, cookies: dict[str, str]):
        """The terminal the instructor's page opened last (a new one when none is open)."""
        self.base = f"{hub.url}/services/{hub.course_id}"
        self.cookies = "; ".join(f"{name}={value}" for name, value in cookies.items())
        headers = {"Cookie": self.cookies, "X-XSRFToken": cookies.get("_xsrf", "")}
        open_ones = requests.get(f"{self.base}/api/terminals", headers=headers).json()
        if not open_ones:
            answer = requests.post(f"{self.base}/api/terminals", headers=headers)
            assert answer.status_code == 200, (answer.status_code, answer.text[:500])
            open_ones = [answer.json()]
        self.name = open_ones[-1]["name"]
        self.ws = self.base.replace("http://", "ws://") + f"/terminals/websocket/{self.name}"

    def run(self, command: str, timeout: float = 900) -> str:
        """Type `command` and Enter; what the terminal shows until its prompt is back (colours taken out). Plain
        blocking websocket: a browser test's own event loop is running in this thread."""
        import websocket  # websocket-client, which jupyter_server needs too

        deadline = time.monotonic() + timeout
        connection = websocket.create_connection(self.ws, header=[f"Cookie: {self.cookies}"], timeout=timeout)
        try:
            connection.send(json.dumps(["set_size", 50, 250]))  # wide: no command is wrapped
            shown = ""
            while not self.PROMPT.search(_plain(shown)):  # a shell ready for the command
                shown += self._read(connection, deadline)
            connection.send(json.dumps(["stdin", command + "\r"]))
            shown = ""
            while command not in _plain(shown) or not self.PROMPT.search(_plain(shown)):
                shown += self._read(connection, deadline)
        finally:
            connection.close()
        return _plain(shown)

    @staticmethod
    def _read(connection, deadline: float) -> str:
        assert time.monotonic() < deadline, "the terminal's command did not end in time"
        kind, *content = json.loads(connection.recv())
        return content[0] if kind == "stdout" else ""


def _plain(text: str) -> str:
    """Terminal output without its colour and cursor codes, with plain line ends."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", text).replace("\r\n", "\n").replace("\r", "")

