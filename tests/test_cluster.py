"""`python -m autograder grade --scheduler ADDRESS`: a real Dask scheduler and two real workers on this machine, each
worker in a scratch copy of the course of its own (no hand-ins, no gradebook), grade what the local run grades, to
the same cell, a notebook that imports a module handed in beside it too; the adversarial class gains nothing through
a worker; a worker killed mid-run loses no grade; an address where nothing listens fails at once with what to do."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import nbformat
import psutil
import pytest
from nbgrader.api import Gradebook

from autograder.demo.submissions import STUDENTS, write_submission
from autograder.grading.engine import GRADING_DIR
from autograder.grading.ledger import Ledger
from autograder.paths import notebook_path
from tests import adversarial
from tests.conftest import copy_class, copy_course, run_autograder

GRADED = ["01_positional_encoding", "02_attention", "03_masking"]  # the demo class's quick notebooks
LOST = "the cluster could not grade it"  # the reason of a task Dask gave up on


class Cluster(NamedTuple):
    address: str
    workers: list[subprocess.Popen]


def _start(command: list[str], cwd: Path, log: Path) -> subprocess.Popen:
    """`command` in a process group of its own (so that it and all it starts can be ended together)."""
    return subprocess.Popen(command, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(cwd)), stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _end(process: subprocess.Popen) -> None:
    """Kill `process`, its process group and every process it started."""
    try:
        tree = [process.pid] + [p.pid for p in psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two workers (the nanny's default, one thread each), each worker in its own copy of the
    course; all ended at the end, also on failure."""
    folder = tmp_path_factory.mktemp("cluster")
    processes = []
    try:
        scheduler_file = folder / "scheduler.json"
        processes.append(_start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0",
                                 "--dashboard-address", ":0", "--scheduler-file", str(scheduler_file)],
                                folder, folder / "scheduler.log"))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        workers = []
        for name in ("worker-1", "worker-2"):
            scratch = copy_course(folder / name)
            assert not (scratch / "submitted").exists() and not (scratch / "gradebook.db").exists()
            workers.append(_start([sys.executable, "-m", "distributed.cli.dask_worker", address, "--name", name,
                                   "--nthreads", "1", "--dashboard-address", ":0",
                                   "--local-directory", str(scratch / "dask")], scratch, folder / f"{name}.log"))
        processes += workers
        from distributed import Client
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=120)
        yield Cluster(address, workers)
    finally:
        for process in reversed(processes):
            _end(process)


def _cells(root: Path, assignments: list[str], students) -> dict:
    """(assignment, student, notebook, cell) -> (auto_score, needs_manual_grade) of every grade, and -> auto_comment
    of every comment, as the gradebook at `root` holds them."""
    found = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for a in assignments:
            for s in students:
                for notebook in gb.find_submission(a, s).notebooks:
                    for grade in notebook.grades:
                        found[(a, s, notebook.name, grade.name)] = (grade.auto_score, grade.needs_manual_grade)
                    for comment in notebook.comments:
                        found[(a, s, notebook.name, comment.name, "comment")] = comment.auto_comment
    return found


def _regrade_copy(demo_root: Path, target: Path, assignments: list[str]) -> Path:
    """A copy of the demo class with the submissions of `assignments` taken out of its gradebook, to grade again."""
    copy_class(demo_root, target, "autograded", "feedback", GRADING_DIR)
    with Gradebook(f"sqlite:///{target / 'gradebook.db'}") as gb:
        for assignment in assignments:
            for student in STUDENTS:
                gb.remove_submission(assignment, student)
    return target


@pytest.fixture(scope="module")
def demo_on_cluster(cluster, demo_class, tmp_path_factory) -> Path:
    """The demo class's quick notebooks graded again on the cluster in one run, with student `modular`'s notebook 01
    beside them (its positional encoding in a module of its own: `_hand_in_with_a_module_beside`)."""
    demo_root, _ = demo_class
    root = _regrade_copy(demo_root, tmp_path_factory.mktemp("demo-on-cluster") / "course", GRADED)
    _hand_in_with_a_module_beside(root)
    result = run_autograder(root, "grade", *GRADED, "--scheduler", cluster.address, "--jobs", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root


def test_the_cluster_grades_the_demo_class_as_this_machine_does(demo_on_cluster, demo_class):
    demo_root, root = demo_class[0], demo_on_cluster
    assert _cells(root, GRADED, STUDENTS) == _cells(demo_root, GRADED, STUDENTS)
    for assignment in GRADED:
        for student in STUDENTS:
            here = notebook_path(root / "autograded" / student, assignment)
            assert here.exists() == notebook_path(demo_root / "autograded" / student, assignment).exists(), here
    assert len(Ledger(root / GRADING_DIR / "ledger.jsonl").entries()) == len(GRADED) * len(STUDENTS) + 1, \
        "every demo student's notebook and modular's"
    assert not (root / GRADING_DIR / "jobs").exists(), "private gradebooks are removed after the run"


# A student's own module beside notebook 01, reading a number from a data file in a folder below: the notebook's
# positional_encoding cell only imports it. Written here, not taken from the reference.
OWN_MODULE = """import torch
from pathlib import Path

BASE = float((Path(__file__).parent / "data" / "base.txt").read_text())


def positional_encoding(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    frequency = BASE ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)[:, : d_model // 2]
    return table.to(torch.get_default_dtype())
"""


def _hand_in_with_a_module_beside(root: Path) -> None:
    """Student `modular` hands in notebook 01 in the class at `root`: demo_perfect's solved notebook, its positional
    encoding in a module of their own beside the notebook (`my_encoding.py`, reading `data/base.txt`)."""
    assignment = GRADED[0]
    handed_in = notebook_path(root / "submitted" / "modular", assignment)
    write_submission("demo_perfect", notebook_path(root / "release", assignment),
                     notebook_path(root / "source", assignment), handed_in)
    notebook = nbformat.read(handed_in, as_version=4)
    next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "positional_encoding").source \
        = "from my_encoding import positional_encoding"
    nbformat.write(notebook, handed_in)
    (handed_in.parent / "my_encoding.py").write_text(OWN_MODULE)
    (handed_in.parent / "data").mkdir()
    (handed_in.parent / "data" / "base.txt").write_text("10000\n")


def test_a_module_handed_in_beside_the_notebook_reaches_the_worker(demo_on_cluster, demo_class):
    """nbgrader copies what a student hands in beside the notebook next to it before it runs it; a worker must get
    those files too, or the same hand-in scores differently on a cluster (before workers got them, this one scored
    3 of 9 there and 9 here). Graded on the cluster in the demo class's run, it scores every cell as demo_perfect's
    notebook, the same code written in the notebook, scored on this machine (the local run imports a module handed
    in beside: tests/test_handin_links.py's honest_module)."""
    demo_root, root = demo_class[0], demo_on_cluster
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        submission = gb.find_submission(GRADED[0], "modular")
        assert (submission.code_score, submission.max_code_score) == (9, 9)
    on_cluster = {key[2:]: value for key, value in _cells(root, GRADED[:1], ["modular"]).items()}
    here = {key[2:]: value for key, value in _cells(demo_root, GRADED[:1], ["demo_perfect"]).items()}
    assert on_cluster == here


def test_what_a_worker_is_sent_of_a_hand_in(tmp_path, monkeypatch):
    """Every file beside the notebook and below it, by path within the folder; a file over the size cap stays here
    with a note that names it; a link (noted by the grader for both paths: tests/test_handin_links.py) is not sent,
    nor is anything below a linked folder."""
    from autograder.grading import cluster
    from autograder.grading.job import Job

    handed_in = notebook_path(tmp_path / "submitted" / "ann", GRADED[0])
    (handed_in.parent / "data").mkdir(parents=True)
    handed_in.write_bytes(b"{}")
    (handed_in.parent / "timestamp.txt").write_text("2026-11-24 10:00:00")
    (handed_in.parent / "data" / "base.txt").write_text("10000")
    (handed_in.parent / "big.bin").write_bytes(bytes(21))
    (handed_in.parent / "grades").symlink_to(tmp_path / "gradebook.db")
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "attention.py").write_text("solution")
    (handed_in.parent / "data" / "solutions").symlink_to(tmp_path / "reference")
    monkeypatch.setattr(cluster, "MAX_FILE_BYTES", 20)
    job = Job(GRADED[0], "ann", "sha")
    notebook, beside = cluster._handed_in(tmp_path, job)
    assert notebook == b"{}"
    assert beside == {"timestamp.txt": b"2026-11-24 10:00:00", "data/base.txt": b"10000"}
    assert [note.split(",")[0] for note in job.notes] == ["big.bin"]
    assert "max_file_size" in job.notes[0]


# Attacks on the grader's files, the other students, the network, the checks, and processes: what a worker that
# leaked (another root, another environment) would let through.
ATTACKS = ["calls_the_reference", "reads_the_gradebook", "writes_into_another_students_folder", "uses_the_network",
           "patches_allclose", "redefines_the_checks", "forks_natively_past_the_guard", "points_changed_to_100",
           "renamed_notebook", "invalid_json"]
REASONS = {"calls_the_reference": "tried to read the grader's files", "reads_the_gradebook": "gradebook.db",
           "writes_into_another_students_folder": "tried to write outside its own folder",
           "uses_the_network": "tried to use the network", "patches_allclose": "reassigns `torch.allclose`",
           "forks_natively_past_the_guard": "ended 3 process(es) the graded notebook left running",
           "points_changed_to_100": "from 1 to 100; restored", "invalid_json": "is not valid JSON"}


def test_the_adversarial_class_gains_nothing_through_a_worker(cluster, demo_class, tmp_path):
    """The same scores and reasons as tests/test_adversarial.py holds the local run to."""
    demo_root, _ = demo_class
    root = tmp_path / "course"
    copy_class(demo_root, root, "submitted", "autograded", "feedback", GRADING_DIR)
    students = [s for s in adversarial.hand_in(root) if s in adversarial.HONEST or s in ATTACKS]
    for folder in (root / "submitted").iterdir():
        if folder.name not in students:
            shutil.rmtree(folder)
    result = run_autograder(root, "grade", adversarial.ASSIGNMENT, "--scheduler", cluster.address,
                            "--cell-timeout", "15", "--notebook-timeout", "30")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {s: (gb.find_submission(adversarial.ASSIGNMENT, s).code_score,
                      gb.find_submission(adversarial.ASSIGNMENT, s).max_code_score) for s in students}
    reasons = {s: e.reason for (_, s), e in Ledger(root / GRADING_DIR / "ledger.jsonl").entries().items()}
    assert scores["honest_perfect"] == (9, 9) and scores["honest_partial"] == (6, 9), scores
    for attack in ATTACKS:
        assert scores[attack][1] == 9 and scores[attack][0] <= 6, (attack, scores[attack])
        assert reasons.get(attack), f"{attack} has no reason for the instructor"
        assert REASONS.get(attack, "") in reasons[attack], (attack, reasons[attack])
    assert scores["patches_allclose"] == (4, 9) and scores["redefines_the_checks"] == (5, 9), scores
    assert scores["points_changed_to_100"] == scores["renamed_notebook"] == (6, 9), scores
    left = [p for w in cluster.workers for p in psutil.Process(w.pid).children(recursive=True)
            if adversarial.MARKER in " ".join(p.cmdline())]
    assert not left, "a graded notebook's process outlived its grading on a worker"


def test_each_worker_is_asked_how_it_boxes_before_grading(cluster):
    """The box check runs on every worker (each makes its own boxes); a worker that cannot box is named, with what to
    do, before anything is graded."""
    from distributed import Client

    from autograder.box.check import check
    from autograder.grading.cluster import how_workers_box, refuse_workers_that_cannot_box
    with Client(cluster.address, timeout=30) as client:
        boxing = how_workers_box(client)
        workers = set(client.scheduler_info()["workers"])
    assert set(boxing) == workers and len(workers) == 2, boxing
    assert set(boxing.values()) == {check().who.kind}, boxing  # the workers run as this test, on this machine
    refuse_workers_that_cannot_box(boxing)  # nothing to refuse
    with pytest.raises(SystemExit) as refused:
        refuse_workers_that_cannot_box({**boxing, "tcp://10.0.0.9:4711": "cannot: bubblewrap is not installed"})
    said = str(refused.value)
    assert "tcp://10.0.0.9:4711 (bubblewrap is not installed)" in said and "apt install bubblewrap" in said, said
    assert not any(worker in said for worker in workers), said


def test_a_scheduler_nobody_runs_fails_at_once_and_says_what_to_do(demo_class, tmp_path):
    demo_root, _ = demo_class
    root = tmp_path / "course"
    copy_class(demo_root, root, "autograded", "feedback", GRADING_DIR)
    started = time.monotonic()
    result = run_autograder(root, "grade", "--scheduler", "tcp://127.0.0.1:9")
    assert result.returncode != 0
    assert time.monotonic() - started < 60, "it should give up after its 10 s connect timeout"
    assert "No Dask scheduler answered at tcp://127.0.0.1:9" in result.stderr, result.stderr[-2000:]
    assert "leave out --scheduler" in result.stderr and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert not (root / GRADING_DIR).exists(), "nothing was written before it gave up"


def _grading_worker(workers: list[subprocess.Popen]) -> subprocess.Popen | None:
    """A worker with an nbgrader job under way: a process forked from its forkserver."""
    for worker in workers:
        try:
            tree = psutil.Process(worker.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        servers = [p for p in tree if "forkserver" in " ".join(p.cmdline())]
        if any(server.children() for server in servers):
            return worker
    return None


def test_a_worker_killed_mid_run_loses_no_grade(cluster, demo_class, tmp_path):
    """Runs last: it ends one of the two workers."""
    demo_root, _ = demo_class
    assignments = GRADED[:2]
    root = _regrade_copy(demo_root, tmp_path / "course", assignments)
    grading = subprocess.Popen([sys.executable, "-m", "autograder", "grade", *assignments, "--scheduler",
                                cluster.address], cwd=root, env=dict(os.environ, PYTHONPATH=str(root)),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim, deadline = None, time.monotonic() + 300
    while victim is None and grading.poll() is None and time.monotonic() < deadline:
        victim = _grading_worker(cluster.workers)
        time.sleep(0.2)
    assert victim is not None, "no worker was seen grading"
    _end(victim)
    stdout, stderr = grading.communicate(timeout=600)
    assert grading.returncode == 0, stdout[-3000:] + stderr[-3000:]

    entries = Ledger(root / GRADING_DIR / "ledger.jsonl").entries()
    expected = {(a, s) for a in assignments for s in STUDENTS}
    assert set(entries) == expected, f"missing from the ledger: {expected - set(entries)}"
    cells, local = _cells(root, assignments, STUDENTS), _cells(demo_root, assignments, STUDENTS)
    given_up = {(a, s) for (a, s), entry in entries.items() if LOST in entry.reason}
    for key, value in local.items():
        if (key[0], key[1]) in given_up:
            assert cells[key] == (0, False) or key[-1] == "comment", key
        else:
            assert cells[key] == value, f"{key}: {cells[key]} on the cluster, {value} here"
    print(f"killed worker {victim.pid} mid-task; rescheduled and graded as here: {len(expected - given_up)}; "
          f"given up by Dask, recorded as zero with a reason: {sorted(given_up)}")
