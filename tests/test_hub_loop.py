"""The whole class loop on a real hub, in a real browser (issue 41, part 3).

One hub (tests/hub.py) with 03_masking released; headless Chromium (tests/browser.py) logs in at the hub's login page:
1. loop-ada opens Nbgrader > Assignment List, fetches 03_masking, opens the notebook, writes her answers in its cells,
   runs it and sees every check pass, saves and submits from the Assignments tab;
2. loop-brian fetches it, uploads another assignment's notebook over it and submits that;
3. loop-teacher opens formgrader through the hub and presses Collect, then, in a terminal of formgrader's server
   (where the guide says grading runs on a hub), grades with `python -m autograder grade 03_masking` and releases
   with `python -m autograder release-feedback 03_masking`, the guide's own words;
4. loop-ada fetches her feedback in the Assignments tab and reads her score on the page; loop-brian reads why his
   hand-in could not be graded.

Every step leaves a numbered screenshot in tests/artifacts/hub-loop/; none shows a reference solution. The answers
are put into the cells through the browser (the editor's text input, as a paste), from the course's reference
solution: the test plays a student who solved it.
"""
from __future__ import annotations

import ast
import json
import pwd
import shutil
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

from autograder.paths import REFERENCE, ROOT, notebook_path
from tests.browser import browser  # noqa: F401 (a fixture)
from tests.browser import VIEWPORT
from tests.hub import PASSWORD, Terminal, home_of, running_hub
from tests.test_browser import menu, wait_for_idle_kernel, wait_for_notebook

A, WRONG = "03_masking", "02_attention"
ADA, BRIAN, TEACHER = "loop-ada", "loop-brian", "loop-teacher"
SHOTS = ROOT / "tests" / "artifacts" / "hub-loop"
MASKING_REFERENCE = REFERENCE / "masking.py"
SOLUTION_LINE = "key_position <= query_position"  # in the reference's causal_mask: no screenshot may show it
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
# Run All has finished (or stopped at an error): its first code cell has run and no cell waits ([*]). Out-of-view
# cells are not drawn on the hub (JupyterLab's default windowing), so their outputs are read once scrolled to.
RUN_ALL_DONE = f"""() => {{
  const prompts = [...document.querySelectorAll('{NOTEBOOK} .jp-CodeCell .jp-InputPrompt')].map(p => p.textContent);
  return prompts.length > 0 && /\\d/.test(prompts[0]) && !prompts.some(p => p.includes('*'));
}}"""


def answers() -> dict[str, str]:
    """Each function of the reference solution, as the student writes it in its cell (signature and docstring as the
    notebook gives them)."""
    text = MASKING_REFERENCE.read_text()
    return {node.name: ast.get_source_segment(text, node) for node in ast.parse(text).body
            if isinstance(node, ast.FunctionDef)}


@pytest.fixture(scope="module")
def hub():
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    # nbgrader's own loop by hand: grading at submission (tests/test_on_submit.py) is off for this class
    with running_hub("loop", [ADA, BRIAN], [TEACHER], [A], on_submit={"default": {"grade": False}}) as h:
        yield h


@pytest.fixture(scope="module")
def people(browser, hub):
    """Each person's own browser window (their own cookies), kept across the steps; closed at the end."""
    contexts = {}

    def window(name: str):
        if name not in contexts:
            contexts[name] = browser.new_context(viewport=VIEWPORT)
            contexts[name].new_page().set_default_timeout(120_000)
        return contexts[name].pages[0]

    window.contexts = contexts
    yield window
    for context in contexts.values():
        context.close()


@pytest.fixture(autouse=True)
def last_pages(request, people):
    """Each open window as the test left it, also when it failed: last-<test>-<person>.png."""
    yield
    for name, context in people.contexts.items():
        context.pages[0].screenshot(path=SHOTS / f"last-{request.node.name}-{name}.png")


shots = iter(range(1, 100))


def shot(page, name: str) -> Path:
    """The page as it is now, numbered in the order of the steps: tests/artifacts/hub-loop/NN-name.png."""
    # JupyterLab's first-run question about Jupyter news is off for the class (layout.py): nothing covers the page.
    expect(page.locator(".Toastify__toast", has_text="Jupyter news")).to_have_count(0)
    path = SHOTS / f"{next(shots):02d}-{name}.png"
    page.screenshot(path=path)
    return path


def log_in(page, hub, name: str, next_url: str = "", step: str = "") -> None:
    """The hub's login page, filled in and sent: JupyterLab opens (the person's server starts), or `next_url`."""
    page.goto(f"{hub.url}/hub/login" + (f"?next={next_url}" if next_url else ""))
    page.fill("#username_input", name)
    page.fill("#password_input", PASSWORD)
    if step:
        shot(page, step)
    page.click("#login_submit")
    if not next_url:
        page.locator(".jp-LabShell").wait_for(timeout=180_000)


def assignments_tab(page):
    """Nbgrader > Assignment List: the Assignments tab."""
    menu(page, "Nbgrader", "Assignment List")
    page.locator("#released_assignments_list_loading").wait_for(state="hidden")
    return page


def home(hub, name: str) -> Path:
    """The folder in `name`'s home that Fetch fills (the exchange puts each course under its id)."""
    return home_of(hub, name) / hub.course_id / A


def gradebook_score(hub, student: str) -> tuple[float, float]:
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{hub.course_dir / 'gradebook.db'}", hub.course_id) as gb:
        submission = gb.find_submission(A, student)
        return submission.score, submission.max_score


def inbound(hub, student: str) -> list[Path]:
    return sorted((hub.exchange / hub.course_id / "inbound").glob(f"{student}+{A}+*"))


def fetch(page, hub, student: str) -> None:
    page.locator("#released_assignments_list").get_by_role("button", name="Fetch").click()
    page.locator("#fetched_assignments_list .assignment-notebooks-link").wait_for()
    fetched = home(hub, student) / f"{A}.ipynb"
    assert fetched.is_file(), f"Fetch put nothing at {fetched}"
    assert fetched.stat().st_uid == pwd.getpwnam(student).pw_uid, "the fetched notebook is not the student's"


def submit(page) -> None:
    page.locator(".lm-TabBar-tab", has_text="Assignments").click()
    page.locator("#fetched_assignments_list").get_by_role("button", name="Submit").click()
    page.locator("#submitted_assignments_list .nested_list_item").first.wait_for()


def test_1_ada_fetches_writes_runs_and_submits(hub, people):
    page = people(ADA)
    log_in(page, hub, ADA, step="ada-login-page")
    assignments_tab(page)
    page.locator("#released_assignments_list").get_by_text(A, exact=True).wait_for()
    shot(page, "ada-assignments-released")
    fetch(page, hub, ADA)
    shot(page, "ada-fetched")

    page.locator("#fetched_assignments_list .assignment-notebooks-link").click()  # the assignment's notebooks
    page.locator("#fetched_assignments_list .nested_list_item").get_by_text(A, exact=True).click()
    wait_for_notebook(page)
    notebook = page.locator(NOTEBOOK)
    for name, code in answers().items():
        cell = notebook.locator(".jp-CodeCell", has_text=f"def {name}(").first
        cell.evaluate("cell => cell.scrollIntoView({block: 'center'})")
        cell.locator(".cm-content").click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(code)
        page.keyboard.press("Escape")
        cell.locator(".jp-Cell-inputCollapser").click()  # her answer folded away: no screenshot shows it
    wait_for_idle_kernel(page)
    menu(page, "Run", "Run All Cells")
    page.wait_for_function(RUN_ALL_DONE, timeout=300_000, polling=500)
    wait_for_idle_kernel(page)  # the last output has arrived
    for name in answers():  # each check cell's output, as she scrolls to it
        check = notebook.locator(".jp-CodeCell", has_text=f"check_{name}({name})").first
        check.evaluate("cell => cell.scrollIntoView({block: 'center'})")
        said = check.locator(".jp-OutputArea").first
        expect(said).to_contain_text(f"{name}: all checks passed.", timeout=30_000)
        assert "✘" not in said.inner_text(), said.inner_text()
    assert not page.get_by_text(SOLUTION_LINE).first.is_visible(), "the screenshot would show the solution"
    shot(page, "ada-checks-pass")

    page.keyboard.press("Control+s")
    page.locator(".lm-TabBar-tab.jp-mod-dirty", has_text=f"{A}.ipynb").wait_for(state="detached")
    saved = nbformat.read(home(hub, ADA) / f"{A}.ipynb", as_version=4)
    assert "masked_attention: all checks passed." in json.dumps(saved), "her runs were not saved"
    submit(page)
    shot(page, "ada-submitted")
    handed_in = inbound(hub, ADA)
    assert len(handed_in) == 1, handed_in
    assert (handed_in[0] / f"{A}.ipynb").read_bytes() == (home(hub, ADA) / f"{A}.ipynb").read_bytes()


def test_2_brian_hands_in_another_assignments_notebook(hub, people):
    page = people(BRIAN)
    log_in(page, hub, BRIAN)
    assignments_tab(page)
    fetch(page, hub, BRIAN)
    for folder, shown in ((hub.course_id, f"/{hub.course_id}/"), (A, f"/{hub.course_id}/{A}/")):
        page.locator(".jp-DirListing-itemText").get_by_text(folder, exact=True).dblclick()
        page.wait_for_function(f"() => document.querySelector('.jp-FileBrowser .jp-BreadCrumbs').innerText"
                               f".replace(/\\s/g, '') === {shown!r}")
    wrong = notebook_path(ROOT / "release", WRONG).read_bytes()
    with page.expect_file_chooser() as chooser:
        page.locator(".jp-FileBrowser .jp-ToolbarButtonComponent[title='Upload Files']").click()
    chooser.value.set_files({"name": f"{A}.ipynb", "mimeType": "application/x-ipynb+json", "buffer": wrong})
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_text("already exists").wait_for()
    shot(page, "brian-uploads-another-notebook")
    dialog.get_by_role("button", name="Overwrite").click()
    uploaded = home(hub, BRIAN) / f"{A}.ipynb"
    for _ in range(120):  # the upload's last request writes the file
        if uploaded.read_bytes() == wrong:
            break
        page.wait_for_timeout(500)
    assert uploaded.read_bytes() == wrong, "the upload did not replace the fetched notebook"
    submit(page)
    shot(page, "brian-submitted")
    handed_in = inbound(hub, BRIAN)
    assert len(handed_in) == 1 and (handed_in[0] / f"{A}.ipynb").read_bytes() == wrong, handed_in


def test_3_teacher_collects_in_formgrader_and_grades(hub, people):
    page = people(TEACHER)
    formgrader = f"/services/{hub.course_id}/formgrader"
    log_in(page, hub, TEACHER, next_url=formgrader)
    row = page.locator("tr", has_text=A)
    row.locator("td.collect a").wait_for()
    assert page.url.startswith(f"{hub.url}{formgrader}"), page.url
    shot(page, "teacher-formgrader")
    with page.expect_response(lambda answer: answer.url.endswith(f"/assignment/{A}/collect")) as answer:
        row.locator("td.collect a").click()
    dialog = page.locator(".modal-dialog")
    dialog.wait_for()
    page.wait_for_function("() => document.getAnimations().length === 0")  # the dialog has faded in
    shot(page, "teacher-collected")
    assert answer.value.json()["success"], answer.value.json()
    assert f"Successfully collected submissions of '{A}'" in dialog.inner_text(), dialog.inner_text()
    for student in (ADA, BRIAN):
        collected = notebook_path(hub.course_dir / "submitted" / student, A)
        assert collected.read_bytes() == (inbound(hub, student)[0] / f"{A}.ipynb").read_bytes(), collected
    dialog.get_by_role("button", name="OK").click()

    # Where the guide says grading runs on a hub: a terminal of formgrader's server (its JupyterLab's File > New >
    # Terminal), with the guide's commands as written; the page shows what they print.
    service = f"{hub.url}/services/{hub.course_id}/"
    page.goto(f"{service}lab")
    menu(page, "File", "New")
    page.locator(".lm-Menu-itemLabel").get_by_text("Terminal", exact=True).click()
    page.locator(".jp-Terminal").wait_for()
    terminal = Terminal(hub, {c["name"]: c["value"] for c in page.context.cookies(service)})
    graded = terminal.run(f"python -m autograder grade {A}")
    assert gradebook_score(hub, ADA) == (9.0, 11.0), graded  # every automatic point; the written answer waits
    assert gradebook_score(hub, BRIAN) == (0.0, 11.0), graded
    assert f"{BRIAN} / {A}: this is notebook {WRONG}, not {A}" in graded, graded
    assert "blocked" not in graded and "Tampering" not in graded, graded  # the grader's copy has no __pycache__
    released = terminal.run(f"python -m autograder release-feedback {A}")
    assert f"released through the exchange for 2 students ({ADA}, {BRIAN})" in released, released
    shot(page, "teacher-terminal-graded")

    page.goto(f"{hub.url}{formgrader}/gradebook/{A}/{A}")
    page.get_by_role("button", name="Show All Names").click()
    row = page.locator("tr", has=page.get_by_text(ADA, exact=True))
    row.wait_for()
    assert "9 / 11" in row.inner_text(), row.inner_text()
    shot(page, "teacher-formgrader-scores")


def open_feedback(page) -> object:
    """Fetch Feedback in the Assignments tab, then its "(view feedback)" link and the page in the folder it opens:
    the page's frame."""
    assignments_tab(page)
    submitted = page.locator("#submitted_assignments_list")
    submitted.get_by_role("button", name="Fetch Feedback").click()
    submitted.get_by_text("(view feedback)").wait_for()
    submitted.get_by_text("(view feedback)").click()
    page.locator(".jp-DirListing-itemText").get_by_text(f"{A}.html", exact=True).dblclick()
    frame = page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
    frame.locator("h1").first.wait_for()
    return frame


def test_4_students_read_their_feedback(hub, people):
    page = people(ADA)
    frame = open_feedback(page)
    score, max_score = gradebook_score(hub, ADA)
    text = frame.locator("body").inner_text()
    assert f"{A} (Score: {score:g} / {max_score:g})" in text, text[:500]
    solution_below = frame.locator("body").evaluate(
        f"body => [...body.querySelectorAll('pre')].filter(p => p.textContent.includes({SOLUTION_LINE!r}))"
        ".every(p => p.getBoundingClientRect().top > window.innerHeight)")
    assert solution_below, "the screenshot would show the solution"
    shot(page, "ada-feedback")
    pages = list((home(hub, ADA) / "feedback").glob(f"*/{A}.html"))
    assert len(pages) == 1, pages

    page = people(BRIAN)
    frame = open_feedback(page)
    text = " ".join(frame.locator("body").inner_text().split())
    assert f"{A} (Score: 0 / 11)" in text, text
    assert (f"Your hand-in could not be graded, so it scores 0 for now: this is notebook {WRONG}, not {A}."
            in text), text
    shot(page, "brian-refusal-page")
