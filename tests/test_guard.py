"""The guard of a graded kernel refuses what the policy forbids, logs it, and lets the rest through."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.grading.guard.policy import allowed, policy_for

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"

PROBE = textwrap.dedent("""
    import json, os, socket, subprocess, sys
    from pathlib import Path
    from IPython.core.interactiveshell import InteractiveShell
    from autograder.grading.guard.policy import install
    policy, course = json.loads(sys.argv[1]), Path(sys.argv[2])
    install(policy)
    InteractiveShell.instance()  # a shell exists: cells may run from now on, so the guard is on
    own = course / "autograded" / "alice" / "01_positional_encoding"

    def source_of_the_earlier_reference():
        import inspect
        try:
            return inspect.getsource(sys.modules["autograder.authoring.reference.attention"])
        except OSError as refused:  # inspect says "could not get source code" when the guard refused the file
            raise PermissionError(refused) from None
    attempts = {
        "write in its own folder": lambda: open(own / "model.pt", "w").write("x"),
        "read the gradebook": lambda: open(course / "gradebook.db").read(),
        "read another student's work": lambda: open(course / "submitted" / "bob" / "nb.ipynb").read(),
        "list the submissions": lambda: os.listdir(course / "submitted"),
        "write into another student's folder": lambda: open(course / "autograded" / "bob" / "x", "w"),
        "import this notebook's reference": lambda: __import__("autograder.authoring.reference.positional_encoding"),
        "import the hidden tests": lambda: __import__("autograder.authoring.hidden.positional_encoding"),
        "use the preloaded earlier reference": lambda: sys.modules["autograder.authoring.reference.attention"].attention,
        "read the earlier reference's source": source_of_the_earlier_reference,
        "open a socket to the internet": lambda: socket.create_connection(("192.0.2.1", 80), timeout=1),
        "resolve a host name": lambda: socket.getaddrinfo("pypi.org", 443),
        "start a process": lambda: subprocess.run(["true"]),
        "write into the Python environment": lambda: open(Path(sys.prefix) / "planted.pth", "w"),
        "write a start-up file for later kernels": lambda: open(Path.home() / ".ipython" / "x.py", "w"),
        "write a temporary file": lambda: open(Path(os.environ["PROBE_TMP"]) / "t.txt", "w").write("ok"),
        # a course package never imported before (a fresh copy, as on the hub) has no __pycache__ yet
        "import a course module whose bytecode cannot be cached": lambda: (
            sys.path.insert(0, str(course / "library")), __import__("never_imported")),
    }
    verdicts = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            verdicts[name] = "allowed"
        except PermissionError:
            verdicts[name] = "blocked"
        except OSError as other:  # e.g. a file that does not exist: the guard let it through
            verdicts[name] = "allowed"
    print(json.dumps(verdicts))
""")


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    course = tmp_path_factory.mktemp("guarded") / "course"
    for folder in ("autograded/alice/01_positional_encoding", "autograded/bob", "submitted/bob", "submitted/alice"):
        (course / folder).mkdir(parents=True)
    (course / "gradebook.db").write_text("grades")
    (course / "library").mkdir()
    (course / "library" / "never_imported.py").write_text("VALUE = 1\n")
    (course / "submitted" / "bob" / "nb.ipynb").write_text("{}")
    records = course / "grading" / "jobs" / "records"
    records.mkdir(parents=True)
    policy = policy_for(course.resolve(), PACKAGE, "01_positional_encoding", "alice", records.resolve(),
                        ["autograder.authoring.reference.attention"])
    tmp = tmp_path_factory.mktemp("scratch")
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(policy), str(course.resolve())],
                            capture_output=True, text=True, timeout=300, cwd=PACKAGE.parent,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PROBE_TMP": str(tmp),
                                 "PYTHONPATH": str(PACKAGE.parent), "TMPDIR": str(tmp)})
    assert result.returncode == 0, result.stderr[-3000:]
    log = [json.loads(line) for line in (records / "violations.jsonl").read_text().splitlines()]
    return json.loads(result.stdout.splitlines()[-1]), log


ALLOWED = {"write in its own folder", "import the hidden tests", "use the preloaded earlier reference",
           "write a temporary file", "import a course module whose bytecode cannot be cached"}


def test_the_guard_blocks_what_the_policy_forbids_and_nothing_else(verdicts):
    seen, _ = verdicts
    wrong = {name: verdict for name, verdict in seen.items() if (verdict == "allowed") != (name in ALLOWED)}
    assert not wrong, wrong


def test_every_blocked_attempt_is_logged_for_the_report(verdicts):
    seen, log = verdicts
    blocked = sum(1 for verdict in seen.values() if verdict == "blocked")
    assert len(log) >= blocked
    assert {entry["what"] for entry in log} == {"read the grader's files or other students' work",
                                                "write outside its own folder", "use the network",
                                                "start other processes"}
    assert any("gradebook.db" in entry["detail"] for entry in log)
    # Python caching bytecode is refused quietly: on the hub every honest hand-in was listed under tampering for it
    assert not [entry for entry in log if "__pycache__" in entry["detail"] and entry["what"].startswith("write")], log


@pytest.mark.parametrize("path, verdict", [
    ("/course/submitted/bob/x", False), ("/course/submitted/alice/x", True), ("/course/submittedX", True),
    ("/course/autograder/authoring/hidden/a.py", True), ("/course/autograder/authoring/reference/a.py", False), ("/elsewhere", True),
])
def test_the_longest_matching_prefix_decides(path, verdict):
    rules = [["/course/submitted", False], ["/course/submitted/alice", True], ["/course/autograder", False],
             ["/course/autograder/authoring/hidden", True]]
    assert allowed(path, rules) is verdict


def test_a_module_beside_the_notebook_never_stands_in_for_an_installed_one(tmp_path):
    """In a kernel under the policy, run in the hand-in's folder (which is on sys.path, as in Jupyter): `torch.py`,
    `course/`, `matplotlib/`, `difflib.py` there are not imported, the installed ones are; the student's own
    `helper.py` is."""
    folder = tmp_path / "autograded" / "alice" / "02_attention"
    for name in ("course/__init__.py", "matplotlib/__init__.py", "torch.py", "difflib.py", "helper.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("SHADOW = True\n")
    records = tmp_path / "records"
    records.mkdir()
    policy = policy_for(tmp_path.resolve(), PACKAGE, "02_attention", "alice", records.resolve(), [])
    probe = ("import json, sys; sys.path.remove('')\n"  # as a kernel starts: its folder joins sys.path later
             "from autograder.grading.guard.policy import install; install(json.loads(sys.argv[1]))\n"
             "sys.path.insert(0, '')\n"
             "import course, matplotlib, torch, difflib, helper\n"
             "modules = (course, matplotlib, torch, difflib, helper)\n"
             "print(json.dumps({m.__name__: hasattr(m, 'SHADOW') for m in modules}))")
    result = subprocess.run([sys.executable, "-c", probe, json.dumps(policy)], capture_output=True, text=True,
                            timeout=300, cwd=folder, env=dict(os.environ, PYTHONPATH=str(PACKAGE.parent)))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {"course": False, "matplotlib": False, "torch": False,
                                                          "difflib": False, "helper": True}
