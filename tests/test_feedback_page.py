"""The feedback page a student gets back, from a real `python -m autograder grade` (nbgrader autograde and
generate_feedback): an error of their code says which call raised and with what, long lines wrap, and the
mathematics shows without the network (MathML, no MathJax), checked in headless Chromium with the network blocked.

One submission of notebook 01 is graded: its `positional_encoding` raises on `d_model=1` only (so its check passes
and its hidden test fails on the error), and its `TokenAndPositionEmbedding` assumes tokens of shape (B, T) (so
its check fails on the error).
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

from autograder.demo.submissions import answered, solution_sources
from autograder.results.feedback_page import WRAPPING_CSS
from autograder.nbgrader_run import nbgrader
from autograder.paths import copy_course, notebook_path
from tests.browser import ARTIFACTS, CHROMIUM_ARGS, chromium
from tests.conftest import run_autograder

ASSIGNMENT = "01_positional_encoding"
STUDENT = "crashing_student"
# Solution edits that make the student's code raise (see the module docstring).
CRASHES = {
    "positional_encoding": [("table[:, 0::2] = torch.sin(angle)", "table[:, 0::2] = torch.sin(angle).squeeze(1)")],
    "token_and_position_embedding": [("length = tokens.shape[-1]", "length = tokens.size(1)")],
}
# Inline ($...$) or display ($$...$$) LaTeX left as text: what MathJax would have had to typeset.
RAW_MATH = re.compile(r"\$\$?[^$\n]*\\[a-zA-Z]+[^$\n]*\$\$?|\$[^$\s][^$\n]*[\^_][^$\n]*\$")


@pytest.fixture(scope="module")
def feedback(tmp_path_factory) -> Path:
    """The feedback page of the crashing submission, graded by `python -m autograder grade`."""
    root = copy_course(tmp_path_factory.mktemp("feedback") / "course")
    nbgrader("generate_assignment", ASSIGNMENT, "--force", root=root, quiet=True)
    source = notebook_path(root / "source", ASSIGNMENT)
    notebook = answered(notebook_path(root / "release", ASSIGNMENT), solution_sources(source), CRASHES)
    target = notebook_path(root / "submitted" / STUDENT, ASSIGNMENT)
    target.parent.mkdir(parents=True)
    nbformat.write(notebook, target)
    result = run_autograder(root, "grade", ASSIGNMENT, "--jobs", "1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    page = notebook_path(root / "feedback" / STUDENT, ASSIGNMENT).with_suffix(".html")
    assert page.exists(), f"no feedback page: {result.stdout[-2000:]}"
    return page


def cell_text(soup: BeautifulSoup, grade_id: str) -> str:
    """The text a student reads in the cell `grade_id` of the page (its outputs included)."""
    anchor = soup.find("a", attrs={"name": grade_id})
    assert anchor is not None, f"no cell {grade_id} on the page"
    cell = anchor.find_parent("div", class_="cell")
    return " ".join(cell.get_text(" ").split())


def test_a_hidden_test_names_the_call_that_raised_and_the_error(feedback):
    text = cell_text(BeautifulSoup(feedback.read_text(), "html.parser"), "hidden_positional_encoding")
    assert "HiddenTestFailed: positional_encoding(max_len=3, d_model=1) raised RuntimeError: The expanded size" in text
    assert "in positional_encoding: table[:, 0::2] = torch.sin(angle).squeeze(1)" in text
    assert "BEGIN HIDDEN TESTS" not in text and "observe" not in text


def test_a_visible_check_names_the_call_that_raised_its_shapes_and_the_error(feedback):
    text = cell_text(BeautifulSoup(feedback.read_text(), "html.parser"), "check_token_and_position_embedding")
    assert "(max_len tokens included): RuntimeError: The size of tensor a (5) must match the size of tensor b (3)" in text
    assert "TokenAndPositionEmbedding.forward(tokens=<int64 tensor of shape (2, 3, 5) on cpu>) raised it, at line " in text
    assert "of your cell, in TokenAndPositionEmbedding.forward: return self.embed(tokens)" in text


def test_output_text_wraps_at_the_edge_of_the_page(feedback):
    soup = BeautifulSoup(feedback.read_text(), "html.parser")
    style = soup.find("style", id="wrapping")
    assert style is not None and style.string.strip() == WRAPPING_CSS.strip()
    rule = re.search(r"([^{}]*)\{([^}]*white-space: pre-wrap[^}]*)\}", style.string)
    assert rule and "overflow-wrap: anywhere" in rule.group(2)
    boxes = soup.select(", ".join(s.strip() for s in rule.group(1).split(",")))
    errors = [box for box in boxes if "output_error" in " ".join(box.parent.get("class", []))]
    assert errors, "the wrapping rule selects no error output box"
    assert style.find_parent("head") is not None


def test_the_mathematics_is_mathml_and_needs_no_network(feedback):
    soup = BeautifulSoup(feedback.read_text(), "html.parser")
    assert len(soup.find_all("math")) > 10
    prose = " ".join(cell.get_text(" ") for cell in soup.select("div.text_cell_render"))
    assert not RAW_MATH.search(prose), f"LaTeX left for MathJax: {RAW_MATH.search(prose).group(0)!r}"
    scripts = [tag for tag in soup.find_all("script") if tag.get("src") or "MathJax" in (tag.string or "")]
    assert not scripts, f"the page loads scripts: {scripts}"
    assert not [link for link in soup.find_all("link") if link.get("href", "").startswith("http")]
    assert "mathjax" not in feedback.read_text().lower().replace("<!-- loading mathjax macro -->", "")


def test_the_page_reads_well_offline_in_chromium(feedback):
    executable = chromium()  # skips with the reason when there is none
    from playwright.sync_api import sync_playwright

    requested = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1000, "height": 900})
            context.route(re.compile(r"^(?!file:).*"), lambda route: (requested.append(route.request.url), route.abort()))
            page = context.new_page()
            page.goto(feedback.as_uri())
            page.wait_for_load_state("load")
            overflowing = page.evaluate("""() => [...document.querySelectorAll('div.output_subarea pre')]
                .filter(box => box.scrollWidth > box.clientWidth + 1).map(box => box.textContent.slice(0, 80))""")
            wrapping = page.evaluate("""() => [...document.querySelectorAll('div.output_error pre')]
                .map(box => [getComputedStyle(box).whiteSpace, getComputedStyle(box).overflowWrap])""")
            sizes = page.evaluate("""() => [...document.querySelectorAll('math')].map(m => {
                const r = m.getBoundingClientRect(); return [r.width, r.height]; })""")
            page.locator('a[name="hidden_positional_encoding"]').scroll_into_view_if_needed()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=ARTIFACTS / "feedback-page-crash.png")
            page.locator("div.text_cell_render math").first.scroll_into_view_if_needed()
            page.screenshot(path=ARTIFACTS / "feedback-page-math.png")
        finally:
            browser.close()
    assert wrapping and all(style == ["pre-wrap", "anywhere"] for style in wrapping), wrapping
    assert not overflowing, f"output boxes scroll sideways: {overflowing}"
    assert sizes and all(width > 0 and height > 0 for width, height in sizes), "a formula is not drawn"
    math_requests = [url for url in requested if "mathjax" in url.lower()]
    assert not math_requests, f"the page asked the network for its mathematics: {math_requests}"
