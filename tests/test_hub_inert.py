"""A hand-in renders inert wherever a person opens it (issue 58): on a real hub, a student hands in 03 whose written
answer carries `<img onerror>`, `<script>`, `javascript:` links and an `<iframe srcdoc>`, whose code displays an
`<img onerror>`, with an HTML file beside it and a notebook whose name is a tag. Grading at submission grades it; then
formgrader's manual grading view, the student's file formgrader serves, and the service's pages carry none of it as
live markup, each with its Content-Security-Policy, and real Chromium runs none of it while formgrader's own scripts
run. Every script of the hand-in records itself in `window.__ran`, which stays undefined.

Also, without a hub: the service's pages escape every string, and the instructor's queue shows when each hand-in
arrived as the exchange knows it, and what is wrong with a time in its name."""
from __future__ import annotations

import json
import textwrap
import time

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbgrader.api import Gradebook

from autograder.demo.submissions import answered, solution_sources
from autograder.handins.inbound import as_nbgrader_time
from autograder.on_submit.queue import HandedIn
from autograder.on_submit.web import queue_page, student_page, when
from autograder.paths import RELEASE, SOURCE, notebook_path
from tests.browser import browser  # noqa: F401 (a fixture)
from tests.browser import VIEWPORT
from tests.hub import Kernel, log_in, running_hub
from tests.test_hub_loop import log_in as log_in_in_browser
from tests.test_on_submit import wait_for

EVE, TEACHER = "inert-eve", "inert-teacher"
A = "03_masking"
RAN = "window.__ran = (window.__ran || []).concat"
WRITTEN = textwrap.dedent(f"""\
    The mask goes first. <img src=x onerror="{RAN}('img')">

    <script>{RAN}('script')</script>

    <a href="javascript:{RAN}('link')">a link</a> and [another](javascript:{RAN.replace(' ', '')}('markdown-link'))

    <iframe srcdoc="<script>parent.__ran = ['iframe']</script>"></iframe>
    """)
SHOWN = f"""\nfrom IPython.display import HTML, display\ndisplay(HTML('<img src=x onerror="{RAN}(`output`)">'))\n"""
TAGGED_NAME = "<img src=x onerror=window.__ran=1>.ipynb"
HTML_FILE = f"<!doctype html><p>a page</p><script>{RAN}('file')</script>"


@pytest.fixture(scope="module")
def hub():
    with running_hub("inert", [EVE], [TEACHER], [A], on_submit={"default": {"before_due": "page"}}) as h:
        yield h


@pytest.fixture(scope="module")
def handed_in(hub) -> dict:
    """Eve's hand-in, graded at submission: her results as the notice reads them, and formgrader's address of it."""
    solutions = solution_sources(notebook_path(SOURCE, A))
    solutions["q3_mask_before_softmax"] = WRITTEN
    solutions["causal_mask"] += SHOWN
    notebook = answered(notebook_path(RELEASE, A), solutions)
    kernel = Kernel(hub, EVE)
    kernel.run(textwrap.dedent(f'''
        import subprocess
        os.chdir(os.path.expanduser("~"))
        done = subprocess.run(["nbgrader", "fetch_assignment", "{A}", "--course", "{hub.course_id}"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        folder = "{hub.course_id}/{A}/"
        open(folder + "{A}.ipynb", "w").write({nbformat.writes(notebook)!r})
        open(folder + {TAGGED_NAME!r}, "w").write('{{"cells": [], "metadata": {{}}, "nbformat": 4, "nbformat_minor": 5}}')
        open(folder + "page.html", "w").write({HTML_FILE!r})
        done = subprocess.run(["nbgrader", "submit", "{A}", "--course", "{hub.course_id}"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    '''))
    kernel.shut_down()
    session = log_in(hub, EVE)
    mine = wait_for(hub, session, EVE, 1)
    assert mine[0]["state"] == "graded" and mine[0]["page"], mine
    gradebook = Gradebook(f"sqlite:///{hub.course_dir / 'gradebook.db'}", course_id=hub.course_id)
    try:
        submission = gradebook.find_submission_notebook(A, A, EVE).id
    finally:
        gradebook.close()
    return {"mine": mine, "eve": session,
            "view": f"{hub.url}/services/{hub.course_id}/formgrader/submissions/{submission}/"}


def live_markup(soup: BeautifulSoup) -> list[str]:
    """Every element of `soup` that could run something: a script, a frame, an event handler, a javascript: link."""
    found = []
    for element in soup.find_all(True):
        if element.name in ("script", "iframe", "object", "embed"):
            found.append(str(element)[:120])
        found += [f"{element.name} {name}" for name in element.attrs if name.lower().startswith("on")]
        found += [f"{element.name} {value}" for name in ("href", "src", "srcdoc")
                  if (value := str(element.get(name, ""))).strip().lower().startswith("javascript:")
                  or name == "srcdoc" and value]
    return found


def directives(policy: str) -> dict[str, str]:
    return {part.split()[0]: part.strip() for part in policy.split(";") if part.strip()}


def test_formgraders_manual_grading_view_carries_none_of_it_and_runs_only_its_own_scripts(hub, handed_in):
    teacher = log_in(hub, TEACHER)
    answer = teacher.get(handed_in["view"])
    assert answer.status_code == 200 and "The mask goes first." in answer.text, (answer.status_code, answer.url)
    notebook = BeautifulSoup(answer.text, "html.parser").select_one("#notebook-container")
    assert live_markup(notebook) == [], "a student's markup is live in the manual grading view"
    assert "&lt;script&gt;" in answer.text, "what she wrote stays readable, as text"
    policy = directives(answer.headers.get("Content-Security-Policy", ""))
    assert "'unsafe-inline'" not in policy.get("script-src", "'unsafe-inline'"), policy
    assert policy.get("default-src") == "default-src 'none'" and policy.get("object-src") == "object-src 'none'", policy


def test_a_students_own_file_that_formgrader_serves_is_sandboxed(hub, handed_in):
    teacher = log_in(hub, TEACHER)
    answer = teacher.get(handed_in["view"] + "page.html")
    assert answer.status_code == 200 and "a page" in answer.text, answer.status_code
    policy = directives(answer.headers.get("Content-Security-Policy", ""))
    assert policy.get("sandbox") == "sandbox", f"no script-free sandbox: {policy}"


def test_in_chromium_the_view_and_her_file_run_none_of_her_scripts(hub, handed_in, browser):  # noqa: F811
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    blocked = []
    page.on("console", lambda message: blocked.append(message.text) if "Content Security Policy" in message.text
            else None)
    log_in_in_browser(page, hub, TEACHER, next_url=f"/services/{hub.course_id}/formgrader/")
    page.wait_for_url("**/formgrader/**")
    page.goto(handed_in["view"], wait_until="networkidle")
    page.get_by_text("The mask goes first.").wait_for()
    assert page.evaluate("window.__ran") is None, f"her scripts ran: {page.evaluate('window.__ran')}"
    # formgrader's own: its files and its inline scripts (the submission's id), and the grade it loaded in the form
    assert page.evaluate("typeof submission_id + ' ' + typeof Backbone + ' ' + typeof toggle_name") == \
        "string object function", blocked
    page.goto(handed_in["view"] + "page.html", wait_until="load")
    assert page.evaluate("window.__ran") is None, "her HTML file's script ran on the hub's origin"
    context.close()


def test_the_services_pages_escape_her_strings_and_sandbox_her_feedback_page(hub, handed_in):
    eve = handed_in["eve"]
    assert TAGGED_NAME in handed_in["mine"][0]["reason"], handed_in["mine"]  # the reason names the file
    own = eve.get(f"{hub.url}/services/autograde/")
    assert own.status_code == 200 and TAGGED_NAME in BeautifulSoup(own.text, "html.parser").get_text(), own.text
    assert BeautifulSoup(own.text, "html.parser").find("img") is None, "the reason's tag is live on her page"
    assert directives(own.headers["Content-Security-Policy"])["default-src"] == "default-src 'none'"
    assert own.headers["X-Content-Type-Options"] == "nosniff"
    feedback = eve.get(f"{hub.url}/services/autograde/feedback/{A}")
    assert feedback.status_code == 200 and "The mask goes first." in feedback.text, feedback.status_code
    assert directives(feedback.headers["Content-Security-Policy"]).get("sandbox") == "sandbox", feedback.headers
    assert live_markup(BeautifulSoup(feedback.text, "html.parser").body) == [], "the feedback page has live markup"
    mine = eve.get(f"{hub.url}/services/autograde/api/mine")
    assert mine.headers["X-Content-Type-Options"] == "nosniff" and "Content-Security-Policy" in mine.headers
    teacher = log_in(hub, TEACHER)
    queue = teacher.get(f"{hub.url}/services/autograde/")
    assert "Grading at submission" in queue.text and BeautifulSoup(queue.text, "html.parser").find("img") is None
    assert directives(queue.headers["Content-Security-Policy"])["default-src"] == "default-src 'none'"


# Without a hub: the pages as the service writes them.

def test_a_students_page_escapes_the_reason_beside_the_feedback_link():
    item = {"hand_in": "2030-01-01 10:00:00.000000 UTC", "assignment": A, "state": "graded", "words": "graded",
            "score": "9 / 11", "pending": "", "exercises": {"<b>causal_mask</b>": "1 / 1"}, "page": True,
            "reason": f"also in the folder, not graded: {TAGGED_NAME}", "finished": "", "seconds": 1.0}
    page = BeautifulSoup(student_page("eve", [item], "/services/autograde/"), "html.parser")
    assert page.find("img") is None and page.find("b", string="causal_mask") is None, page
    assert TAGGED_NAME in page.get_text() and "<b>causal_mask</b> 1 / 1" in page.get_text()
    assert [a["href"] for a in page.find_all("a")] == [f"/services/autograde/feedback/{A}"]


def test_the_queue_shows_when_each_hand_in_arrived_and_what_is_wrong_with_the_time_in_its_name():
    arrived = time.time() - 60
    honest = HandedIn(folder=f"ada+{A}+{as_nbgrader_time(arrived - 1)}+a1", student="ada", assignment=A,
                      handed_in=as_nbgrader_time(arrived - 1), arrived=arrived, state="graded",
                      shown=json.dumps({"score": "9 / 11"}))
    forged = HandedIn(folder=f"<i>bob</i>+{A}+2020-01-01 00:00:00.000000 UTC+b2", student="<i>bob</i>",
                      assignment=A, handed_in="2020-01-01 00:00:00.000000 UTC", arrived=arrived, state="waiting")
    page = BeautifulSoup(queue_page([honest, forged]), "html.parser")
    rows = [[cell.get_text(" ") for cell in row.find_all("td")] for row in page.find_all("tr")[1:]]
    assert rows[0][2] == when(arrived), rows[0]
    assert rows[1][2].startswith(when(arrived)) and \
        f"its name says 2020-01-01 00:00:00.000000 UTC, earlier than it arrived ({as_nbgrader_time(arrived)})" \
        in rows[1][2], rows[1]
    assert rows[1][0] == "<i>bob</i>" and page.find("i") is None
