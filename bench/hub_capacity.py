"""How many students one machine's class hub holds: N simulated students log in at once and run a notebook.

Usage (as root, on a machine where the hub tests run):
    .venv/bin/python bench/hub_capacity.py                      # N = 2 (about a minute)
    .venv/bin/python bench/hub_capacity.py --students 5 10 20   # one fresh hub for each N

For each N, a fresh hub on loopback (`autograder/hub`, the real JupyterHub, proxy, formgrader service and idle
culler), with the students `cap-s001` ... (real Unix accounts, made at their first spawn, kept afterwards). All N
students, one thread each, then at the same moment:
1. log in (shared password) and wait for their own server to answer: the spawn time, from the login to their
   server's page answering through the proxy (the hub's progress stream says when it is ready);
2. fetch the assignment from the assignment list (nbgrader's exchange), write the reference solution into its
   solution cells (what a student who solved it types), start a kernel through their server's kernel API and run
   every code cell in order over the kernel's websocket, as JupyterLab's "Run All" does: the run time (kernel start
   to the last cell's reply) and the check cells' own time; any error in a cell is a failure;
3. with every kernel still alive, the memory of each student's processes (their server and kernel, found by their
   Unix account), and of the hub, its proxy and the formgrader service: PSS, USS and RSS from /proc.
Then every student stops their server, the hub stops, and no process of a student's account may be left.

Everyone pressing "Run All" at the same instant is the worst case for the CPU: the times are upper bounds for a
class whose students work at their own pace, and upper bounds again when other work shares the machine (the load
average is in the table). Prints a markdown row per N; bench/README.md has the figures and what they mean.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import pwd
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import nbformat
import psutil
import requests
import websocket

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.demo.submissions import solution_sources  # noqa: E402
from autograder.hub import process  # noqa: E402
from autograder.hub.settings import HubSettings  # noqa: E402
from autograder.paths import SOURCE, notebook_path  # noqa: E402
from tests.hub import PASSWORD, free_ports, log_in, why_no_hub  # noqa: E402

PREFIX = "cap-"
GRADER = "cap-grader"
MiB = 1024 * 1024


def student_names(count: int) -> list[str]:
    return [f"{PREFIX}s{i:03d}" for i in range(1, count + 1)]


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (of 5 values, p95 is the largest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else float("nan")


class Student:
    """One simulated student: their figures, or what failed."""

    def __init__(self, name: str):
        self.name = name
        self.spawn_s = self.run_s = self.check_s = None
        self.failure: str | None = None
        self.memory: dict = {}
        self.session: requests.Session | None = None


class Monitor(threading.Thread):
    """Samples the load average and the students' total memory every `every` seconds, until stopped."""

    def __init__(self, uids: set[int], every: float = 2.0):
        super().__init__(daemon=True)
        self.uids, self.every = uids, every
        self.stopped = threading.Event()
        self.max_load = os.getloadavg()[0]
        self.max_students_pss = 0

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            self.max_load = max(self.max_load, os.getloadavg()[0])
            total = sum(m["pss"] for m in memory_by_uid(self.uids).values())
            self.max_students_pss = max(self.max_students_pss, total)


def _memory(proc: psutil.Process) -> dict | None:
    try:
        info = proc.memory_full_info()
        return {"pss": info.pss, "uss": info.uss, "rss": info.rss}
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def _add(total: dict, part: dict | None) -> None:
    for key, value in (part or {}).items():
        total[key] = total.get(key, 0) + value
    if part:
        total["processes"] = total.get("processes", 0) + 1


def memory_by_uid(uids: set[int]) -> dict[int, dict]:
    """uid -> the summed PSS, USS and RSS of every process that account runs."""
    totals: dict[int, dict] = {}
    for proc in psutil.process_iter(["uids", "cmdline"]):
        uid = proc.info["uids"].real if proc.info["uids"] else None
        if uid in uids:
            memory = _memory(proc)
            _add(totals.setdefault(uid, {}), memory)
            if memory and "ipykernel_launcher" in " ".join(proc.info["cmdline"] or []):
                totals[uid]["kernel_pss"] = totals[uid].get("kernel_pss", 0) + memory["pss"]
    return {uid: totals.get(uid, {"pss": 0, "uss": 0, "rss": 0, "processes": 0}) for uid in uids}


def hub_memory(hub_process: int, grader_uid: int, student_uids: set[int]) -> dict[str, dict]:
    """The hub's own processes by role: the hub (JupyterHub and its launcher), the proxy, formgrader, the culler."""
    roles: dict[str, dict] = {"hub": {}, "proxy": {}, "formgrader": {}, "idle culler": {}}
    try:
        tree = [psutil.Process(hub_process), *psutil.Process(hub_process).children(recursive=True)]
    except psutil.NoSuchProcess:
        return roles
    for proc in tree:
        try:
            uid, command = proc.uids().real, " ".join(proc.cmdline())
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if uid in student_uids:
            continue
        role = ("formgrader" if uid == grader_uid else "proxy" if "configurable-http-proxy" in command
                else "idle culler" if "jupyterhub_idle_culler" in command else "hub")
        _add(roles[role], _memory(proc))
    return roles


def answer(notebook: nbformat.NotebookNode, solutions: dict[str, str]) -> None:
    """Type the solutions into the fetched notebook's solution cells, as a student who solved them does."""
    for cell in notebook.cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        if nbgrader.get("solution"):
            if nbgrader.get("grade_id") not in solutions:
                raise RuntimeError(f"no solution for the cell {nbgrader.get('grade_id')!r}: is the source notebook "
                                   "the release's?")
            cell.source = solutions[nbgrader["grade_id"]]


def wait_for_server(hub: HubSettings, session: requests.Session, name: str, deadline: float) -> None:
    """Follow the hub's spawn progress (as the spawn-pending page does) until the server is ready, then open it
    (the hub's OAuth into the server) and set the server's XSRF header."""
    xsrf = session.cookies.get("_xsrf", path="/hub/") or session.cookies.get("_xsrf")
    with session.get(f"{hub.url}/hub/api/users/{name}/server/progress", params={"_xsrf": xsrf}, stream=True,
                     headers={"Accept": "text/event-stream"}, timeout=(10, max(1.0, deadline - time.monotonic()))) as s:
        if s.status_code == 200:
            for line in s.iter_lines(decode_unicode=True):
                if line and line.startswith("data:"):
                    event = json.loads(line[5:])
                    if event.get("ready") or event.get("failed"):
                        if event.get("failed"):
                            raise RuntimeError(f"the spawn failed: {event.get('message')}")
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError("the spawn did not finish in time")
    while True:  # ready (or the stream was refused): open the server, as the browser's redirect does
        answer = session.get(f"{hub.url}/user/{name}/lab", timeout=30)
        if answer.status_code == 200 and answer.url.startswith(f"{hub.url}/user/{name}/"):
            session.headers["X-XSRFToken"] = session.cookies.get("_xsrf", path=f"/user/{name}/") or ""
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server did not answer in time: {answer.status_code} {answer.url}")
        time.sleep(0.5)


def run_cells(hub: HubSettings, session: requests.Session, name: str, folder: str,
              notebook: nbformat.NotebookNode, cell_timeout: float) -> tuple[float, float]:
    """Start a kernel in `folder` through the server's API, run every code cell in order over its websocket, shut
    the kernel down only at the end of the round (it stays for the memory count). Returns (run, check cells) s."""
    api = f"{hub.url}/user/{name}/api"
    started = time.monotonic()
    answer = session.post(f"{api}/kernels", json={"name": "python3", "path": folder}, timeout=60)
    answer.raise_for_status()
    kernel = answer.json()["id"]
    cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
    socket = websocket.create_connection(
        f"ws://{hub.ip}:{hub.port}/user/{name}/api/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}",
        cookie=cookies, header=[f"X-XSRFToken: {session.headers.get('X-XSRFToken', '')}"], timeout=cell_timeout)
    check_s = 0.0
    try:
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            cell_started = time.monotonic()
            error = execute(socket, cell.source)
            if error:
                raise RuntimeError(f"cell {index} ({cell.metadata.get('nbgrader', {}).get('grade_id')}): {error}")
            if cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith("check_"):
                check_s += time.monotonic() - cell_started
    finally:
        socket.close()
    return time.monotonic() - started, check_s


def execute(socket: websocket.WebSocket, code: str) -> str | None:
    """Run `code` in the kernel (Jupyter's messaging protocol, as JupyterLab sends it); its error, or None."""
    msg_id = uuid.uuid4().hex
    socket.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "", "session": uuid.uuid4().hex,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    error, replied, idle = None, False, False
    while not (replied and idle):
        message = json.loads(socket.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = message["header"]["msg_type"]
        if kind == "error":
            error = f"{message['content']['ename']}: {message['content']['evalue']}"
        elif kind == "execute_reply":
            replied = True
            if message["content"]["status"] != "ok" and not error:
                error = f"{message['content'].get('ename', 'error')}: {message['content'].get('evalue', '')}"
        elif kind == "status" and message["content"]["execution_state"] == "idle":
            idle = True
    return error


def one_student(hub: HubSettings, student: Student, assignment: str, solutions: dict[str, str],
                start: threading.Barrier, done: threading.Barrier, timeout: float) -> None:
    try:
        start.wait(timeout=120)
        began = time.monotonic()
        deadline = began + timeout
        session = student.session = log_in(hub, student.name)
        wait_for_server(hub, session, student.name, deadline)
        student.spawn_s = time.monotonic() - began
        user = f"{hub.url}/user/{student.name}"
        fetched = session.post(f"{user}/assignments/fetch", timeout=120,
                               data={"course_id": hub.course_id, "assignment_id": assignment})
        fetched.raise_for_status()
        folder = f"{hub.course_id}/{assignment}"
        mine = session.get(f"{user}/api/contents/{folder}/{assignment}.ipynb", timeout=60)
        if mine.status_code != 200:
            raise RuntimeError(f"the fetched notebook is not in {folder}: {mine.status_code} {fetched.text[:300]}")
        content = nbformat.from_dict(mine.json()["content"])
        answer(content, solutions)
        session.put(f"{user}/api/contents/{folder}/{assignment}.ipynb", timeout=60,
                    json={"type": "notebook", "format": "json", "content": content}).raise_for_status()
        student.run_s, student.check_s = run_cells(hub, session, student.name, folder, content,
                                                   cell_timeout=max(10.0, deadline - time.monotonic()))
    except Exception as error:  # noqa: BLE001 (every failure is counted and shown, none stops the others)
        student.failure = f"{type(error).__name__}: {error}"[:500]
    finally:
        try:
            done.wait(timeout=timeout + 180)
        except threading.BrokenBarrierError:
            pass


def stop_servers(hub: HubSettings, students: list[Student], timeout: float = 120) -> list[str]:
    """Each student stops their own server (the hub's API, as the Control Panel's Stop button). The ones that did
    not stop."""
    for student in students:
        if student.session is None:
            continue
        xsrf = student.session.cookies.get("_xsrf", path="/hub/") or ""
        try:
            student.session.delete(f"{hub.url}/hub/api/users/{student.name}/server", timeout=30,
                                   headers={"X-XSRFToken": xsrf})
        except requests.RequestException:
            pass
    uids = {pwd.getpwnam(s.name).pw_uid: s.name for s in students if _exists(s.name)}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and leftovers(set(uids)):
        time.sleep(1)
    return sorted({uids[p.info["uids"].real] for p in leftovers(set(uids))})


def leftovers(uids: set[int]) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def one_round(count: int, assignment: str, timeout: float) -> dict:
    """A fresh hub, `count` students at once, everything stopped afterwards. The round's figures."""
    solutions = solution_sources(notebook_path(SOURCE, assignment))
    folder = Path(tempfile.mkdtemp(prefix=f"hub-cap-{count}-", dir="/tmp"))
    port, hub_port, proxy_api_port, formgrader_port = free_ports(4)
    names = student_names(count)
    hub = HubSettings(root=str(folder), port=port, hub_port=hub_port, proxy_api_port=proxy_api_port,
                      formgrader_port=formgrader_port, grader=GRADER, password=PASSWORD, students=names,
                      instructors=[], assignments=[assignment])
    load_before = os.getloadavg()
    hub_started = time.monotonic()
    started = process.start(hub)
    students = [Student(name) for name in names]
    result: dict = {"students": count, "assignment": assignment}
    try:
        process.wait_until_up(hub, started, timeout=300)
        result["hub_start_s"] = time.monotonic() - hub_started
        available_before = psutil.virtual_memory().available
        start, done = threading.Barrier(count + 1), threading.Barrier(count + 1)
        threads = [threading.Thread(target=one_student, args=(hub, s, assignment, solutions, start, done, timeout),
                                    daemon=True) for s in students]
        for thread in threads:
            thread.start()
        start.wait(timeout=120)
        monitor = Monitor(set())
        monitor.start()
        began = time.monotonic()
        for _ in range(2):  # the accounts exist after their first spawn: watch them from then on
            time.sleep(5)
            monitor.uids = {pwd.getpwnam(n).pw_uid for n in names if _exists(n)}
        try:
            done.wait(timeout=timeout + 120)
        except threading.BrokenBarrierError:
            pass
        result["round_s"] = time.monotonic() - began
        monitor.uids = {pwd.getpwnam(n).pw_uid for n in names if _exists(n)}
        by_uid = memory_by_uid(monitor.uids)
        for student in students:
            if _exists(student.name):
                student.memory = by_uid.get(pwd.getpwnam(student.name).pw_uid, {})
        result["memory_available_drop"] = available_before - psutil.virtual_memory().available
        result["hub_memory"] = hub_memory(started.pid, pwd.getpwnam(GRADER).pw_uid, monitor.uids)
        monitor.stopped.set()
        monitor.join(10)
        result["max_load"] = max(monitor.max_load, os.getloadavg()[0])
        result["max_students_pss"] = monitor.max_students_pss
        result["not_stopped"] = stop_servers(hub, students)
    finally:
        process.stop(started, hub)
        uids = {pwd.getpwnam(n).pw_uid for n in names if _exists(n)}
        left = leftovers(uids)
        for proc in left:  # a student's process the hub did not stop: count it, end it
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        result["left_running"] = len(left)
        log = hub.state / "jupyterhub.log"
        if log.exists():  # kept for reading when something failed
            result["hub_log"] = str(shutil.copy(log, Path(tempfile.gettempdir()) / f"hub-cap-{count}.log"))
        shutil.rmtree(folder, ignore_errors=True)
    result["load_before"] = load_before[0]
    result["load_after"] = os.getloadavg()[0]
    result["per_student"] = [{"name": s.name, "spawn_s": s.spawn_s, "run_s": s.run_s, "check_s": s.check_s,
                              "failure": s.failure, "memory": s.memory} for s in students]
    return result


def summary(result: dict) -> dict:
    ok = [s for s in result["per_student"] if not s["failure"]]
    spawns = [s["spawn_s"] for s in result["per_student"] if s["spawn_s"] is not None]
    runs = [s["run_s"] for s in ok]
    checks = [s["check_s"] for s in ok]
    mem = [s["memory"] for s in ok if s["memory"].get("processes")]
    hub = result["hub_memory"]
    return {
        "spawn": (percentile(spawns, 0.5), percentile(spawns, 0.95)),
        "run": (percentile(runs, 0.5), percentile(runs, 0.95)),
        "check": (percentile(checks, 0.5), percentile(checks, 0.95)),
        **{key: (sum(m.get(key, 0) for m in mem) / len(mem) / MiB if mem else float("nan"),
                 max((m.get(key, 0) for m in mem), default=0) / MiB) for key in ("pss", "uss", "rss", "kernel_pss")},
        "hub": hub["hub"].get("pss", 0) / MiB, "proxy": hub["proxy"].get("pss", 0) / MiB,
        "formgrader": hub["formgrader"].get("pss", 0) / MiB, "culler": hub["idle culler"].get("pss", 0) / MiB,
        "failed": len(result["per_student"]) - len(ok) + result["left_running"] + len(result["not_stopped"]),
    }


HEADER = ("| N | spawn p50 / p95 | Run All p50 / p95 | check cells p50 / p95 | per student PSS (mean / max; peak "
          "of all students' sum / N; of it the kernel) | "
          "USS | RSS | hub / proxy / formgrader / culler PSS | failed | load avg 1 min (before / max / after) |\n"
          + "| --- " * 10 + "|")


def row(result: dict) -> str:
    s = summary(result)
    return (f"| {result['students']} | {s['spawn'][0]:.1f} / {s['spawn'][1]:.1f} s | {s['run'][0]:.1f} / "
            f"{s['run'][1]:.1f} s | {s['check'][0]:.2f} / {s['check'][1]:.2f} s | {s['pss'][0]:.0f} / "
            f"{s['pss'][1]:.0f}; {result['max_students_pss'] / result['students'] / MiB:.0f}; {s['kernel_pss'][0]:.0f} MiB | {s['uss'][0]:.0f} MiB | {s['rss'][0]:.0f} MiB | {s['hub']:.0f} / "
            f"{s['proxy']:.0f} / {s['formgrader']:.0f} / {s['culler']:.0f} MiB | "
            f"{s['failed']} of {result['students']} | "
            f"{result['load_before']:.2f} / {result['max_load']:.2f} / {result['load_after']:.2f} |")


def _interrupted(number, frame):
    raise KeyboardInterrupt(f"signal {number}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[2], help="class sizes, one fresh hub each")
    parser.add_argument("--assignment", default="03_masking", help="the notebook every student runs")
    parser.add_argument("--timeout", type=float, default=900, help="seconds each student has, login to last cell")
    parser.add_argument("--json", type=Path, help="write every student's figures here")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _interrupted)  # `timeout` or kill: stop the hub and the servers on the way out
    why = why_no_hub()
    if why:
        raise SystemExit(f"bench/hub_capacity.py cannot run here: {why}")
    memory = psutil.virtual_memory().total / MiB / 1024
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, {memory:.1f} GiB, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {args.assignment}", flush=True)
    results = []
    for count in args.students:
        result = one_round(count, args.assignment, args.timeout)
        results.append(result)
        print(f"N={count}: round {result.get('round_s', float('nan')):.0f} s; hub start "
              f"{result.get('hub_start_s', float('nan')):.0f} s", flush=True)
        for student in result["per_student"]:
            if student["failure"]:
                print(f"  {student['name']} failed: {student['failure']}", flush=True)
        if any(s["failure"] for s in result["per_student"]) and result.get("hub_log"):
            print(f"  the hub's log: {result['hub_log']}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(HEADER)
    for result in results:
        print(row(result))


if __name__ == "__main__":
    main()
