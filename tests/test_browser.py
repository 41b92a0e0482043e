"""JupyterLab with nbgrader in a real browser: a student runs a notebook and reads its checks, an instructor
sees the assignments in the formgrader, and nbgrader's Validate button passes a solved notebook.

One `jupyter lab` server (started with `make lab`'s options) in a scratch course copy serves all three tests;
headless Chromium (the system's, driven by Playwright) opens it. Every step leaves a screenshot in
tests/artifacts/browser/; `COURSE_UPDATE_SCREENSHOTS=1` also rewrites the ones the README shows, in
docs/screenshots/. Without Chromium or Playwright the tests skip and say why.
"""
from __future__ import annotations

import nbformat
import pytest

from autograder.demo.submissions import write_submission
from autograder.nbgrader_run import nbgrader
from autograder.paths import copy_course, notebook_path
from course.about import NOTEBOOKS
from tests.browser import browser  # noqa: F401 (a fixture)
from tests.browser import VIEWPORT, LabServer, clear_artifacts, lab_command_options, save_screenshot

FIRST = "01_positional_encoding"
EXERCISES = ["positional_encoding", "offset_rotation", "TokenAndPositionEmbedding"]  # the check titles of notebook 01
SOLVED = f"solved/{FIRST}/{FIRST}.ipynb"  # the demo class's perfect answers to notebook 01, in the copy

# True once "Run All" has finished: no cell waits ([*]) and the last code cell has run, or a cell failed.
RUN_ALL_FINISHED = """() => {
  const notebook = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
  if (!notebook) return false;
  const prompts = [...notebook.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
  if (prompts.some(p => p.includes('*'))) return false;
  const failed = notebook.querySelector("[data-mime-type='application/vnd.jupyter.error']");
  return failed !== null || /\\[\\d+\\]/.test(prompts[prompts.length - 1]);
}"""


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory):
    """JupyterLab as `make lab` starts it, in a course copy whose gradebook holds every released assignment
    and which has a solved notebook 01 in `solved/`."""
    clear_artifacts()
    root = copy_course(tmp_path_factory.mktemp("lab") / "course")
    nbgrader("generate_assignment", "--force", "*", root=root, quiet=True)  # records them in gradebook.db
    write_submission("demo_perfect", notebook_path(root / "release", FIRST), notebook_path(root / "source", FIRST),
                     root / SOLVED)
    hide_solutions(root / SOLVED)
    server = LabServer(root, tmp_path_factory.mktemp("lab-home"), lab_command_options())
    try:
        server.wait_until_up()
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(browser, lab, request):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    try:
        save_screenshot(page, f"{request.node.name}-last")  # the page as the test left it, also when it failed
    finally:
        context.close()


def open_lab(page, lab, path: str = "/") -> None:
    """JupyterLab at `path` (its default URL, or a notebook's `/lab/tree/...`) in a fresh workspace: no tab of
    an earlier test comes back."""
    page.goto(lab.page_url(f"{path}?reset"))
    page.locator(".jp-LabShell").wait_for()


def menu(page, menu_name: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel").get_by_text(menu_name, exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text(item, exact=True).click()


def wait_for_notebook(page) -> None:
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell").first.wait_for()


def open_in_file_browser(page, *names: str) -> None:
    for name in names:
        page.locator(".jp-DirListing-itemText").get_by_text(name, exact=True).dblclick()


def folder_shown(page) -> str:
    """The file browser's folder, as its breadcrumbs show it: "/release/"."""
    return "".join(page.locator(".jp-FileBrowser .jp-BreadCrumbs").inner_text().split())


def wait_for_idle_kernel(page) -> None:
    page.locator(".jp-StatusBar-Widget").get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=180_000)


def run_all_cells(page) -> str:
    """Run > Run All Cells, wait until every cell has run and the kernel is idle; the text of all outputs.
    Fails when a cell raised."""
    wait_for_idle_kernel(page)
    menu(page, "Run", "Run All Cells")
    page.wait_for_function(RUN_ALL_FINISHED, timeout=300_000, polling=500)
    wait_for_idle_kernel(page)  # the last output has arrived once the kernel says it is idle
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    errors = notebook.locator("[data-mime-type='application/vnd.jupyter.error']").all_inner_texts()
    assert not errors, "a cell raised:\n" + "\n".join(errors)
    return "\n".join(notebook.locator(".jp-OutputArea-output").all_inner_texts())


def scroll_to_cell(page, text: str) -> None:
    """Scroll the open notebook so that the code cell containing `text` and its output are in the middle."""
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell", has_text=text).first
    cell.evaluate("cell => cell.scrollIntoView({block: 'center'})")


def test_student_runs_a_release_notebook_and_reads_its_checks(page, lab):
    """JupyterLab as `make lab` starts it shows release/; notebook 01, opened from there, runs top to bottom
    in the real UI: every unwritten exercise says so, and nothing fails."""
    open_lab(page, lab)  # the default URL, as `make lab` opens it
    page.locator(".jp-DirListing-itemText").get_by_text(FIRST, exact=True).wait_for()
    assert folder_shown(page) == "/release/"
    listed = page.locator(".jp-DirListing-itemText").all_inner_texts()
    assert set(NOTEBOOKS) <= set(listed), listed
    save_screenshot(page, "student-01-release-folder")

    open_in_file_browser(page, FIRST, f"{FIRST}.ipynb")
    wait_for_notebook(page)
    save_screenshot(page, "student-02-notebook-opened")
    text = run_all_cells(page)
    save_screenshot(page, "student-03-run-all-finished")
    for exercise in EXERCISES:
        assert f"{exercise}: not written yet" in text, text
    assert "✘" not in text, text
    scroll_to_cell(page, "check_positional_encoding(positional_encoding)")
    save_screenshot(page, "student-04-not-written-yet")


def hide_solutions(path) -> None:
    """Collapse the inputs of the solution cells (JupyterLab shows "..."): the screenshots of a solved notebook
    must not show a reference solution."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    nbformat.write(notebook, path)


def test_student_sees_every_check_pass_in_a_solved_notebook(page, lab):
    open_lab(page, lab, f"/lab/tree/{SOLVED}")
    wait_for_notebook(page)
    text = run_all_cells(page)
    for exercise in EXERCISES:
        assert f"{exercise}: all checks passed." in text, text
    assert "✘" not in text and "not written yet" not in text, text
    scroll_to_cell(page, "check_positional_encoding(positional_encoding)")
    assert not page.get_by_text("torch.arange(max_len").first.is_visible(), "the screenshot would show the solution"
    save_screenshot(page, "lab-checks", readme=True)


def test_instructor_sees_every_assignment_in_the_formgrader(page, lab):
    """Nbgrader > Formgrader in JupyterLab lists every assignment, and its links work: the server's root
    is the course directory, so an assignment's name opens its source folder in the file browser."""
    open_lab(page, lab)
    page.locator(".jp-DirListing-itemText").get_by_text(FIRST, exact=True).wait_for()  # the layout is restored
    page.keyboard.press("Control+b")  # hide the file browser: the formgrader's table gets the width
    page.locator(".jp-FileBrowser").wait_for(state="hidden")
    menu(page, "Nbgrader", "Formgrader")
    formgrader = page.frame_locator(".jp-MainAreaWidget iframe")
    names = formgrader.locator("table td.name a")
    names.get_by_text(list(NOTEBOOKS)[-1], exact=True).wait_for()
    assert names.all_inner_texts() == list(NOTEBOOKS)
    assert formgrader.get_by_text("exchange directory").count() == 0
    formgrader.locator("body").evaluate("body => window.scrollTo(0, body.scrollHeight)")
    save_screenshot(page, "formgrader-assignments", readme=True)

    names.get_by_text(FIRST, exact=True).click()
    page.locator(".jp-DirListing-itemText").get_by_text(f"{FIRST}.ipynb", exact=True).wait_for()
    assert folder_shown(page) == f"/source/{FIRST}/"
    save_screenshot(page, "formgrader-source-folder")


def test_validate_button_passes_a_solved_notebook(page, lab):
    open_lab(page, lab, f"/lab/tree/{SOLVED}")
    wait_for_notebook(page)
    wait_for_idle_kernel(page)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar .validate-button").click()
    save_screenshot(page, "validate-01-validating")
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_text("Validation Results").wait_for(timeout=600_000)  # nbgrader runs the whole notebook
    assert "Success! Your notebook passes all the tests." in dialog.inner_text(), dialog.inner_text()
    save_screenshot(page, "validate", readme=True)
