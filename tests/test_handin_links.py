"""A hand-in is only what was handed in: a link in `submitted/` is never followed (issue 26).

One class of notebook 02 hand-ins, brought into `submitted/` the ways links really arrive there: a real `git clone`
of each student's repository, a tar archive unpacked by `tar`, a zip unpacked by `unzip` (both restore links), a
folder copied by `cp -a` (links kept). Every kind of link (to a file, to a folder, relative, absolute, dangling, a
chain, the notebook itself, the student's or the assignment's folder) points at the reference, the gradebook,
`source/`, a classmate's notebook or a file outside the course. The class is graded once on this machine and once
on a Dask cluster; each link earns no point its student's own code would not, reaches no graded kernel, and the
class report names it with where it pointed. The honest controls (a solved notebook; a notebook that imports the
student's own module handed in beside it) keep full points on both paths.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.demo.submissions import write_submission
from autograder.grading.engine import GRADING_DIR
from autograder.grading.ledger import Ledger
from autograder.nbgrader_run import nbgrader
from autograder.paths import REFERENCE, ROOT, notebook_path
from tests.conftest import copy_course, run_autograder
from tests.test_cluster import cluster  # noqa: F401 (the module's Dask scheduler and workers)

ASSIGNMENT = "02_attention"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
# The student's own attention, written here (not the reference's text): what an honest helper module holds.
OWN_MODULE = '''import torch


def attention(Q, K, V):
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / K.shape[-1] ** 0.5
    weights = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, V), weights
'''
# A notebook whose attention cell only imports it from a module beside it.
FROM_HELPER = "from helper import attention"
FROM_HELPER_PACKAGE = "from helper.attention import attention"
# A notebook that takes the solution from the source notebook through a link to source/.
FROM_SOURCE = '''import json
_cells = json.load(open("course_source/02_attention/02_attention.ipynb"))["cells"]
exec("".join(next(c["source"] for c in _cells if c["metadata"].get("nbgrader", {}).get("grade_id") == "attention")))
'''

# Modules handed in beside a notebook under the names of the course's, the grader's and their libraries' own: each
# says so if it is ever imported.
SHADOWS = ["course/__init__.py", "autograder/__init__.py", "nbgrader/__init__.py", "torch.py", "matplotlib/__init__.py",
           "tqdm.py"]

# student -> (how the folder reaches submitted/, what the attention cell holds ("solved", "release": untouched),
#             {path in the hand-in: link target},
#             the points the student's own code earns, what the report must say of it)
# Link targets: "{root}" is the course root, "{outside}" a folder outside the course (a shared drive); a target
# without either is relative, as the student wrote it in their repository or archive.
CLASS = {
    # honest controls
    "honest_solved": ("cp -a", "solved", {}, 3, None),
    "honest_module": ("git", FROM_HELPER, {}, 3, None),
    "honest_module_tar": ("tar", FROM_HELPER, {}, 3, None),
    # the student's own module, beside modules named like the course's, the grader's, torch's...
    "shadows": ("git", FROM_HELPER, {}, 3, "torch.py has the name of a module the course or the grader uses (torch)"),
    # a module beside the notebook that is a link to the reference
    "ref_relative": ("git", FROM_HELPER, {"helper.py": "../../../autograder/authoring/reference/attention.py"}, 0,
                     "helper.py is a link (to ../../../autograder/authoring/reference/attention.py)"),
    "ref_absolute": ("tar", FROM_HELPER, {"helper.py": "{root}/autograder/authoring/reference/attention.py"}, 0,
                     "helper.py is a link (to {root}/autograder/authoring/reference/attention.py)"),
    "ref_chain": ("zip", FROM_HELPER, {"helper.py": "hop.py", "hop.py": "../../../autograder/authoring/reference/attention.py"},
                  0, "helper.py is a link (to hop.py)"),
    "ref_folder": ("cp -a", FROM_HELPER_PACKAGE, {"helper": "../../../autograder/authoring/reference"}, 0,
                   "helper is a link (to ../../../autograder/authoring/reference)"),
    "dangling": ("tar", FROM_HELPER, {"helper.py": "../../nobody/attention.py"}, 0,
                 "helper.py is a link (to ../../nobody/attention.py)"),
    # a file outside the course (a shared drive), solved correctly
    "outside": ("zip", FROM_HELPER, {"helper.py": "{outside}/attention.py"}, 0,
                "helper.py is a link (to {outside}/attention.py)"),
    # the gradebook beside a solved notebook: the notebook earns its own 3, the gradebook reaches no kernel
    "gradebook": ("git", "solved", {"grades.db": "../../../gradebook.db"}, 3,
                  "grades.db is a link (to ../../../gradebook.db)"),
    # source/ beside the notebook, read by the attention cell
    "source_folder": ("cp -a", FROM_SOURCE, {"course_source": "../../../source"}, 0,
                      "course_source is a link (to ../../../source)"),
    # the notebook itself a link: to a classmate's notebook, to the source notebook; a "re-upload" that is a link
    "notebook_classmate": ("git", None, {NOTEBOOK: f"../../honest_solved/{ASSIGNMENT}/{NOTEBOOK}"}, 0,
                           f"{NOTEBOOK} is a link (to ../../honest_solved/{ASSIGNMENT}/{NOTEBOOK})"),
    "notebook_source": ("tar", None, {NOTEBOOK: f"{{root}}/source/{ASSIGNMENT}/{NOTEBOOK}"}, 0,
                        f"{NOTEBOOK} is a link (to {{root}}/source/{ASSIGNMENT}/{NOTEBOOK})"),
    "reupload_link": ("tar", "release", {f"{ASSIGNMENT}-1.ipynb": f"../../honest_solved/{ASSIGNMENT}/{NOTEBOOK}"}, 0,
                      f"{ASSIGNMENT}-1.ipynb is a link (to ../../honest_solved/{ASSIGNMENT}/{NOTEBOOK})"),
    # the assignment's folder a link to a classmate's; the student's whole folder a link to a classmate's
    "assignment_folder": ("zip", None, {".": f"../honest_solved/{ASSIGNMENT}"}, 0,
                          f"submitted/assignment_folder/{ASSIGNMENT} is a link (to ../honest_solved/{ASSIGNMENT})"),
    "student_folder": ("cp -a", None, {"..": "honest_solved"}, 0,
                       "submitted/student_folder is a link (to honest_solved)"),
}


def _run(*command: str, cwd: Path) -> None:
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)


def _notebook(root: Path, attention: str) -> nbformat.NotebookNode:
    """The solved notebook 02, its attention cell replaced by `attention` unless that is "solved"; the release
    notebook untouched for "release"."""
    if attention == "release":
        return nbformat.read(notebook_path(root / "release", ASSIGNMENT), as_version=4)
    target = root / "scratch" / NOTEBOOK
    write_submission("demo_perfect", notebook_path(root / "release", ASSIGNMENT),
                     notebook_path(root / "source", ASSIGNMENT), target)
    notebook = nbformat.read(target, as_version=4)
    if attention != "solved":
        next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "attention").source = \
            attention
    return notebook


def _student_tree(root: Path, outside: Path, folder: Path, student: str) -> None:
    """`folder/<student>/`, as the student made it: the assignment's folder with the notebook, their own module
    where the notebook imports one, and the links."""
    _, attention, links, _, _ = CLASS[student]
    mine = folder / student / ASSIGNMENT
    if ".." in links:  # the whole folder is a link
        folder.mkdir(parents=True, exist_ok=True)
        (folder / student).symlink_to(links[".."])
        return
    if "." in links:
        mine.parent.mkdir(parents=True)
        mine.symlink_to(links["."])
        return
    mine.mkdir(parents=True)
    if attention is not None:
        nbformat.write(_notebook(root, attention), mine / NOTEBOOK)
        if attention == FROM_HELPER and "helper.py" not in links:
            (mine / "helper.py").write_text(OWN_MODULE)
    if student == "shadows":
        for name in SHADOWS:
            (mine / name).parent.mkdir(exist_ok=True)
            (mine / name).write_text(f"print('SHADOWED {name}')\n")
    for name, target in links.items():
        (mine / name).symlink_to(target.format(root=root, outside=outside))


def hand_in(root: Path, outside: Path) -> None:
    """The class under `root/submitted`, each student's folder brought there by the tool an instructor uses."""
    (outside / "attention.py").parent.mkdir(parents=True, exist_ok=True)
    (outside / "attention.py").write_text(OWN_MODULE)  # correct, but no hand-in of this student
    students, submitted = root / "students", root / "submitted"
    submitted.mkdir()
    for student, (tool, *_) in CLASS.items():
        _student_tree(root, outside, students, student)
        if tool == "git":  # a repository per student (GitHub Classroom), cloned by the instructor
            repository = students / student / ASSIGNMENT
            _run("git", "init", "-q", cwd=repository)
            _run("git", "add", ".", cwd=repository)
            _run("git", "-c", "user.name=s", "-c", "user.email=s@example.org", "commit", "-qm", "hand-in",
                 cwd=repository)
            (submitted / student).mkdir()
            _run("git", "clone", "-q", str(repository), ASSIGNMENT, cwd=submitted / student)
        elif tool == "tar":  # a platform's download, unpacked with tar
            _run("tar", "-cf", str(root / f"{student}.tar"), student, cwd=students)
            _run("tar", "-xf", str(root / f"{student}.tar"), cwd=submitted)
        elif tool == "zip":  # a zip made with links stored (-y), unpacked with unzip
            _run("zip", "-q", "-r", "-y", str(root / f"{student}.zip"), student, cwd=students)
            _run("unzip", "-q", str(root / f"{student}.zip"), cwd=submitted)
        else:  # a folder copied from a shared drive, links kept
            _run("cp", "-a", str(students / student), str(submitted / student), cwd=root)
    shutil.rmtree(root / "scratch", ignore_errors=True)
    for student, (_, _, links, _, _) in CLASS.items():  # the links arrived as links, each tool as its own
        name = next(iter(links), None)
        if name is not None:
            path = (submitted / student if name == ".." else submitted / student / ASSIGNMENT if name == "." else
                    submitted / student / ASSIGNMENT / name)
            assert path.is_symlink(), f"{student}: {path} arrived as no link"


def _graded_class(root: Path, outside: Path, *options: str) -> dict:
    """Release 02 in the course copy at `root`, hand the class in, grade it; what the grading left."""
    nbgrader("generate_assignment", ASSIGNMENT, "--force", root=root, quiet=True)
    hand_in(root, outside)
    started = time.perf_counter()
    result = run_autograder(root, "grade", ASSIGNMENT, *options)
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        scores = {s: gb.find_submission(ASSIGNMENT, s).code_score for s in CLASS}
    reasons = {s: e.reason for (_, s), e in Ledger(root / GRADING_DIR / "ledger.jsonl").entries().items()}
    report = (root / "reports" / "class_report.md").read_text()
    return {"root": root, "outside": outside, "scores": scores, "reasons": reasons, "report": report,
            "stdout": result.stdout, "seconds": seconds}


@pytest.fixture(scope="module")
def graded_here(tmp_path_factory) -> dict:
    root = copy_course(tmp_path_factory.mktemp("here"))
    return _graded_class(root, tmp_path_factory.mktemp("shared-drive"), "--jobs", "2")


@pytest.fixture(scope="module")
def graded_on_dask(tmp_path_factory, cluster) -> dict:  # noqa: F811
    root = copy_course(tmp_path_factory.mktemp("dask"))
    return _graded_class(root, tmp_path_factory.mktemp("shared-drive"), "--scheduler", cluster.address)


@pytest.fixture(params=["here", "dask"])
def graded(request) -> dict:
    return request.getfixturevalue(f"graded_{'here' if request.param == 'here' else 'on_dask'}")


def _expected_line(graded: dict, student: str) -> str | None:
    line = CLASS[student][4]
    return None if line is None else line.format(root=graded["root"], outside=graded["outside"])


def test_a_link_earns_nothing_its_own_code_would_not(graded):
    expected = {student: points for student, (*_, points, _) in CLASS.items()}
    assert graded["scores"] == expected, graded["stdout"][-3000:]


def test_the_report_names_every_link_and_where_it_pointed(graded):
    section = graded["report"].split("## Submissions that need a look", 1)[1]
    for student in CLASS:
        line = _expected_line(graded, student)
        if line is None:
            assert not graded["reasons"].get(student), (student, graded["reasons"].get(student))
            assert f"- {student} /" not in section
        else:
            assert line in graded["reasons"].get(student, ""), (student, graded["reasons"].get(student))
            assert any(f"- {student} / {ASSIGNMENT}:" in l and line in l for l in section.splitlines()), \
                (student, section)


def test_nothing_a_link_pointed_at_reaches_a_graded_kernel(graded):
    """Nothing of a link's target lands in autograded/ or feedback/ (where a later kernel or the student reads)."""
    root = graded["root"]
    for folder in ("autograded", "feedback"):
        for path in (root / folder).rglob("*"):
            assert not path.is_symlink(), path
        for student, (_, _, links, _, _) in CLASS.items():
            for name in links:
                if name not in (".", "..", NOTEBOOK):
                    assert not (root / folder / student / ASSIGNMENT / name).exists(), (folder, student, name)
    reference = (root / REFERENCE.relative_to(ROOT) / "attention.py").read_bytes()
    for path in (root / "autograded").rglob("*.py"):
        assert path.read_bytes() != reference, path


def test_nothing_beside_the_notebook_stands_in_for_the_courses_code(graded):
    """`course/`, `autograder/`, `torch.py`... beside the notebook are never imported in the graded kernel (each
    prints SHADOWED when it is), the student's own `helper.py` still is, and the report names each of them."""
    autograded = graded["root"] / "autograded" / "shadows" / ASSIGNMENT
    assert "SHADOWED" not in (autograded / NOTEBOOK).read_text()
    assert graded["scores"]["shadows"] == 3
    for name in SHADOWS:
        shown = name.removesuffix("__init__.py")
        assert f"{shown} has the name of a module the course or the grader uses" in graded["reasons"]["shadows"]


def test_a_hand_in_that_cannot_be_read_stops_no_other(tmp_path, monkeypatch):
    """A hand-in whose files fail to stage (changed or unreadable since preflight) gets a reason of its own; the
    next job is graded as usual."""
    from autograder.grading import engine as grading
    from autograder.grading.engine import run_here
    from autograder.grading.job import Job, Limits

    for student in ("ann", "bob"):
        handed_in = notebook_path(tmp_path / "submitted" / student, ASSIGNMENT)
        handed_in.parent.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), handed_in)
    (tmp_path / "submitted" / "ann" / ASSIGNMENT / "data.bin").write_bytes(b"x")
    (tmp_path / "submitted" / "ann" / ASSIGNMENT / "data.bin").chmod(0)
    template = tmp_path / "grading" / "jobs" / "template.db"
    template.parent.mkdir(parents=True)
    template.write_bytes(b"")
    monkeypatch.setattr(grading, "prepare", lambda assignments: None)
    monkeypatch.setattr(grading, "autograde_one", lambda root, job, threads, limits: job)
    if os.access(tmp_path / "submitted" / "ann" / ASSIGNMENT / "data.bin", os.R_OK):  # root reads anything
        real_stage = grading.handin.stage

        def stage(folder, target):
            if "ann" in folder.parts:
                raise PermissionError(13, "Permission denied", str(folder / "data.bin"))
            return real_stage(folder, target)
        monkeypatch.setattr(grading.handin, "stage", stage)
    done = {job.student: job for job in run_here(tmp_path, [Job(ASSIGNMENT, s, "sha") for s in ("ann", "bob")],
                                                 template, 1, Limits())}
    assert "its files could not be read" in done["ann"].reason and "data.bin" in done["ann"].reason
    assert done["bob"].reason == ""
    assert (done["bob"].submitted / "bob" / ASSIGNMENT / NOTEBOOK).exists()
