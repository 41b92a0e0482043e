"""Collecting from a learning platform, as the instructor guide shows it: the guide's own regular expressions in
the real `nbgrader zip_collect`, on downloads shaped like Canvas's and Moodle's (with the `__MACOSX` copies a Mac
adds to a zip), and the class they collect graded by `python -m autograder grade`."""
from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.nbgrader_run import nbgrader
from autograder.paths import ROOT
from tests.conftest import copy_course, run_autograder
from tests.test_guides import python_blocks

ASSIGNMENT = "03_masking"
GUIDE = ROOT / "docs" / "instructor-guide.md"
APPLEDOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        "  # how a Mac's `._` copy begins: no notebook

# zip entry -> who handed it in (None: no student's notebook); what each platform's download holds.
CANVAS = {  # "Download Submissions", unpacked and packed again on a Mac: one folder, flat files
    f"submissions/doejane_12345_6789012_{ASSIGNMENT}.ipynb": "Jane Doe",
    f"submissions/roeric_LATE_23456_6789013_{ASSIGNMENT}.ipynb": "Eric Roe (late)",
    f"submissions/lovelaceada_34567_6789014_{ASSIGNMENT}-1.ipynb": "Ada Lovelace (uploaded again)",
    "submissions/doejane_12345_6789012_notes.txt": None,
    "submissions/.DS_Store": None,
    f"__MACOSX/submissions/._doejane_12345_6789012_{ASSIGNMENT}.ipynb": None,
    f"__MACOSX/submissions/._lovelaceada_34567_6789014_{ASSIGNMENT}-1.ipynb": None,
}
CANVAS_COLLECTED = {
    f"12345/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "Jane Doe",
    f"23456/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "Eric Roe (late)",
    f"34567/{ASSIGNMENT}/{ASSIGNMENT}-1.ipynb": "Ada Lovelace (uploaded again)",
}
MOODLE = {  # "Download all submissions": a folder per student, and from an older Moodle one flat file each
    f"TFS-03 Masking-4711.zip:Jane Doe_4321_assignsubmission_file_/{ASSIGNMENT}.ipynb": "Jane Doe",
    "TFS-03 Masking-4711.zip:Eric Roe_4322_assignsubmission_file_/my masking.ipynb": "Eric Roe (other name)",
    f"TFS-03 Masking-4711.zip:Zoë Ångström_4323_assignsubmission_file_/{ASSIGNMENT}.ipynb": "Zoë Ångström",
    "TFS-03 Masking-4711.zip:Zoë Ångström_4323_assignsubmission_file_/notes.pdf": None,
    f"TFS-03 Masking-4711.zip:__MACOSX/Jane Doe_4321_assignsubmission_file_/._{ASSIGNMENT}.ipynb": None,
    "TFS-03 Masking-4711.zip:__MACOSX/Eric Roe_4322_assignsubmission_file_/._my masking.ipynb": None,
    f"older.zip:Ada Lovelace_4324_assignsubmission_file_{ASSIGNMENT}.ipynb": "Ada Lovelace (flat file)",
    f"older.zip:__MACOSX/._Ada Lovelace_4324_assignsubmission_file_{ASSIGNMENT}.ipynb": None,
}
MOODLE_COLLECTED = {
    f"Jane Doe/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "Jane Doe",
    f"Eric Roe/{ASSIGNMENT}/my masking.ipynb": "Eric Roe (other name)",
    f"Zoë Ångström/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "Zoë Ångström",
    f"Ada Lovelace/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "Ada Lovelace (flat file)",
}


def hand_in(student: str) -> str:
    """The release notebook with a cell that says who handed it in."""
    notebook = nbformat.read(ROOT / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(f"handed in by {student}"))
    return nbformat.writes(notebook)


def handed_in_by(path: Path) -> str:
    return nbformat.read(path, as_version=4).cells[-1].source.removeprefix("handed in by ")


def guide_expression(platform: str) -> str:
    """The instructor guide's python block that configures zip_collect for `platform`."""
    blocks = [block for block in python_blocks(GUIDE.read_text())
              if "named_regexp" in block and block.lstrip().startswith(f"# {platform}")]
    assert len(blocks) == 1, f"the instructor guide shows no one python block for {platform} (`# {platform}: ...`)"
    return blocks[0]


def download(root: Path, entries: dict[str, str | None], default_zip: str) -> None:
    """The platform's zips, unopened, where the guide says to put them: `downloaded/<assignment>/archive/`."""
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    for entry, student in entries.items():
        name, _, inside = entry.rpartition(":") if ".zip:" in entry else (default_zip, "", entry)
        with zipfile.ZipFile(archive / name, "a") as zipped:
            if student is not None:
                zipped.writestr(inside, hand_in(student))
            elif Path(inside).name.startswith("._"):
                zipped.writestr(inside, APPLEDOUBLE)
            else:
                zipped.writestr(inside, b"not a notebook\n")


def zip_collect(root: Path, platform: str, entries: dict[str, str | None]):
    """A course copy with `entries` downloaded and the guide's lines for `platform` in its nbgrader_config.py,
    after `nbgrader zip_collect <assignment> --force`."""
    copy_course(root)
    with (root / "nbgrader_config.py").open("a") as config:
        config.write(f"\n{guide_expression(platform)}")
    download(root, entries, default_zip=f"{platform.lower()}.zip")
    return nbgrader("zip_collect", ASSIGNMENT, "--force", root=root, check=False, quiet=True)


def collected(root: Path) -> dict[str, str]:
    submitted = root / "submitted"
    return {path.relative_to(submitted).as_posix(): handed_in_by(path)
            for path in sorted(submitted.rglob("*")) if path.is_file()}


@pytest.fixture(scope="module")
def classes(tmp_path_factory) -> dict[str, Path]:
    roots = {}
    for platform, entries in (("Canvas", CANVAS), ("Moodle", MOODLE)):
        root = tmp_path_factory.mktemp(platform.lower()) / "course"
        result = zip_collect(root, platform, entries)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        roots[platform] = root
    return roots


def test_canvas_collects_one_notebook_per_canvas_user_id(classes):
    """The ordinary, the late and the uploaded-again hand-in; no `__MACOSX` student, no text file."""
    assert collected(classes["Canvas"]) == CANVAS_COLLECTED


def test_moodle_collects_one_notebook_per_full_name(classes):
    """Folders and flat files; a notebook under another name keeps it; no `__MACOSX` student, no pdf."""
    assert collected(classes["Moodle"]) == MOODLE_COLLECTED


def test_the_download_stays_where_the_guide_says(classes):
    for root in classes.values():
        extracted = root / "downloaded" / ASSIGNMENT / "extracted"
        assert any(extracted.rglob("*.ipynb")), "zip_collect unpacks into downloaded/<assignment>/extracted/"


def test_two_moodle_students_with_one_name_stop_zip_collect_until_one_is_renamed(tmp_path):
    """As the guide says: the full name is the id, zip_collect refuses to pick one of two namesakes, and the zip
    unpacked into archive/ with one folder renamed collects both."""
    namesakes = {f"Jane Doe_4321_assignsubmission_file_/{ASSIGNMENT}.ipynb": "Jane Doe",
                 f"Jane Doe_4399_assignsubmission_file_/{ASSIGNMENT}.ipynb": "the other Jane Doe"}
    root = tmp_path / "course"
    result = zip_collect(root, "Moodle", namesakes)
    assert result.returncode != 0
    assert "Duplicate submission file" in result.stdout + result.stderr

    archive = root / "downloaded" / ASSIGNMENT / "archive"
    shutil.unpack_archive(archive / "moodle.zip", archive)
    (archive / "moodle.zip").unlink()
    (archive / "Jane Doe_4399_assignsubmission_file_").rename(archive / "Jane B Doe_4399_assignsubmission_file_")
    result = nbgrader("zip_collect", ASSIGNMENT, "--force", root=root, check=False, quiet=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert collected(root) == {f"Jane Doe/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "Jane Doe",
                               f"Jane B Doe/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": "the other Jane Doe"}


def test_a_collected_class_is_graded(classes, tmp_path):
    """Both downloads' students in one course copy, graded: each has a submission, and no one else is a student."""
    root = copy_course(tmp_path / "course")
    for collected_root in classes.values():
        shutil.copytree(collected_root / "submitted", root / "submitted", dirs_exist_ok=True)
    nbgrader("generate_assignment", ASSIGNMENT, "--force", root=root, quiet=True)  # the gradebook, quickly
    result = run_autograder(root, "grade", ASSIGNMENT, "--jobs", "2")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    students = {path.split("/")[0] for path in {**CANVAS_COLLECTED, **MOODLE_COLLECTED}}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        assert {student.id for student in gradebook.students} == students
        for student in students:
            submission = gradebook.find_submission(ASSIGNMENT, student)
            assert submission.max_score > 0, f"{student}: {ASSIGNMENT} has no graded submission"


# Downloads holding links, made by the tools that make them (who handed in -> the link's target, None: a notebook)
LINKED_DOWNLOADS = {
    "tar": {"doejane_12345_6789012": None, "roeric_23456_6789013": "doejane_12345_6789012",
            "lovelaceada_34567_6789014": "{root}/source/" + f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"},
    "zip": {"hoppergrace_45678_6789015": None, "turingalan_56789_6789016": "hoppergrace_45678_6789015"},
    "cp -a": {"liskovbarbara_67890_6789017": None, "thompsonken_78901_6789018": "liskovbarbara_67890_6789017"},
}


def _linked_download(root: Path, tool: str, folder: Path) -> None:
    """`folder/submissions/` as the platform's files, packed by `tool` (tar; zip -y, which stores links) into
    the archive folder, or copied there unpacked with `cp -a`."""
    submissions = folder / tool.replace(" ", "") / "submissions"
    submissions.mkdir(parents=True)
    for who, target in LINKED_DOWNLOADS[tool].items():
        name = submissions / f"{who}_{ASSIGNMENT}.ipynb"
        if target is None:
            name.write_text(hand_in(who))
        else:
            name.symlink_to(target.format(root=root) if "{root}" in target else f"{target}_{ASSIGNMENT}.ipynb")
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    packs = {"tar": ["tar", "-czf", str(archive / "canvas-tar.tar.gz"), "submissions"],
             "zip": ["zip", "-q", "-r", "-y", str(archive / "canvas-zip.zip"), "submissions"],
             "cp -a": ["cp", "-a", "submissions", str(archive / "canvas-unpacked")]}
    subprocess.run(packs[tool], cwd=submissions.parent, check=True, capture_output=True)


def test_a_link_in_a_download_is_never_collected(tmp_path):
    """A download holding links, made with `tar`, with `zip -y` and unpacked with `cp -a` into archive/: with the
    guide's lines zip_collect collects only the notebooks handed in, never a link (nbgrader's own extractor gave the
    student whose file linked to a classmate's the classmate's notebook), and warns of each link, where it pointed."""
    root = tmp_path / "course"
    copy_course(root)
    with (root / "nbgrader_config.py").open("a") as config:
        config.write(f"\n{guide_expression('Canvas')}")
    for tool in LINKED_DOWNLOADS:
        _linked_download(root, tool, tmp_path / "download")
    result = nbgrader("zip_collect", ASSIGNMENT, "--force", root=root, check=False, quiet=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    real = {who.split("_")[1]: who for links in LINKED_DOWNLOADS.values() for who, t in links.items() if t is None}
    assert collected(root) == {f"{number}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb": who for number, who in real.items()}
    assert not [path for path in (root / "downloaded").rglob("*") if path.is_symlink() and "extracted" in path.parts]
    log = result.stdout + result.stderr
    for links in LINKED_DOWNLOADS.values():
        for who, target in links.items():
            if target is not None:
                shown = target.format(root=root) if "{root}" in target else f"{target}_{ASSIGNMENT}.ipynb"
                assert f"{who}_{ASSIGNMENT}.ipynb is a link (to {shown})" in log, (who, log[-3000:])
