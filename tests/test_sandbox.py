"""autograder.grading.sandbox: nothing a graded command starts outlives it, and its memory is capped."""
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the subreaper is Linux's")

SANDBOX = [sys.executable, "-m", "autograder.grading.sandbox"]


def _detached_sleeper(marker: str) -> str:
    return ("import subprocess, sys\n"
            f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{marker}'], "
            "start_new_session=True)\n")


def _running(marker: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]


def test_a_detached_process_is_ended_when_the_command_ends():
    marker = "sandbox-test-detached"
    result = subprocess.run([*SANDBOX, "--", sys.executable, "-c", _detached_sleeper(marker)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0
    assert "ended 1 process(es)" in result.stderr
    assert not _running(marker)


def test_stopping_the_sandbox_ends_everything_it_started():
    marker = "sandbox-test-stopped"
    code = _detached_sleeper(marker) + "import time\ntime.sleep(600)\n"
    sandbox = subprocess.Popen([*SANDBOX, "--", sys.executable, "-c", code], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not _running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(marker), "the detached sleeper did not start"
    sandbox.terminate()
    sandbox.wait(timeout=30)
    assert not _running(marker)


def test_an_allocation_past_the_cap_fails_in_the_command_alone():
    result = subprocess.run([*SANDBOX, "--memory-mb", "400", "--", sys.executable, "-c",
                             "x = bytearray(800 * 1024 ** 2)"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "MemoryError" in result.stderr
    fine = subprocess.run([*SANDBOX, "--memory-mb", "400", "--", sys.executable, "-c", "x = bytearray(100 * 1024 ** 2)"],
                          capture_output=True, text=True, timeout=60)
    assert fine.returncode == 0, fine.stderr


NETWORK_PROBE = ("import socket\n"
                 "try:\n    socket.create_connection(('192.0.2.1', 80), timeout=2)\n"
                 "except OSError as error:\n    print('refused:', error.errno)\n")


def test_a_command_gets_no_network_and_keeps_loopback():
    result = subprocess.run([*SANDBOX, "--no-network", "--", sys.executable, "-c", NETWORK_PROBE + (
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "socket.create_connection(s.getsockname()); print('loopback works')\n")],
        capture_output=True, text=True, timeout=60)
    if "the network stays reachable" in result.stderr:
        pytest.skip(f"this machine allows no network namespace: {result.stderr.strip()}")
    assert "loopback works" in result.stdout, result.stderr
    assert "refused: 101" in result.stdout, result.stdout  # ENETUNREACH: no route out of the namespace


GRADER_SCRIPT = """
import numpy, sys, torch  # as in bench/grading.py: a forked job re-imports this script, and these start threads
from pathlib import Path
from autograder.grading import autograde_process
from autograder.nbgrader_run import environment
if __name__ == "__main__":
    folder = Path(sys.argv[1])
    finished = autograde_process.autograde(["--version"], folder, environment(), folder / "log", 3072, 120, None)
    print(finished.returncode)
    print(finished.log)
"""


def test_a_grading_job_forked_from_the_warm_server_runs_sandboxed(tmp_path):
    """Where the sandbox command can cut the network, a job forked from the warm server by a script whose imports
    start threads must cut it too."""
    probe = subprocess.run([*SANDBOX, "--no-network", "--", sys.executable, "-c", "pass"], capture_output=True,
                           text=True, timeout=60)
    if "the network stays reachable" in probe.stderr:
        pytest.skip(f"this machine allows no network namespace: {probe.stderr.strip()}")
    script = tmp_path / "grader.py"
    script.write_text(GRADER_SCRIPT)
    result = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert result.stdout.splitlines()[0] == "0", result.stdout + result.stderr
    assert "the network stays reachable" not in result.stdout, result.stdout
