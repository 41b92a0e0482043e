"""The pages of grading at submission, behind the hub's login (JupyterHub's OAuth for services):

    <prefix>            a student: their own hand-ins and what became of each (the page refreshes itself while one
                        waits); an instructor (the course's formgrade group): the whole queue
    <prefix>api/mine    a student's hand-ins as JSON, for JupyterLab's notice (deploy/grade-notice/)
    <prefix>feedback/<assignment>
                        a student's own feedback page, once the policy lets them see it

Nobody sees anyone else's hand-in or result: a student's pages are made from their hub name alone. Nothing a student
wrote runs on these pages, which are on the hub's origin: every string is escaped, each page's Content-Security-Policy
lets no script run (its one inline style by its hash), and the feedback page, nbconvert's HTML of the student's own
notebook, is served in a CSP sandbox (an origin of its own, no script), as Jupyter Server serves `/files/`.
"""
from __future__ import annotations

import base64
import hashlib
import html
import os
import json
import time
import urllib.parse
from datetime import datetime

from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
from jupyterhub.utils import url_path_join
from tornado.web import Application, HTTPError, RequestHandler, authenticated

from autograder.handins.inbound import named_time_disagrees
from autograder.on_submit.queue import HandedIn
from autograder.on_submit.service import Service

WITHHELD = "received and graded: your score is shown after the due date"
STATE_WORDS = {"waiting": "waiting to be graded", "grading": "being graded", "graded": "graded",
               "refused": "could not be graded", "held": "not graded now", "superseded": "replaced by a later hand-in"}


def when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds).astimezone().strftime("%Y-%m-%d %H:%M:%S") if seconds else ""


def for_student(item: HandedIn) -> dict:
    """What its student may know of a hand-in."""
    shown = json.loads(item.shown) if item.shown else {}
    return {"hand_in": item.handed_in, "assignment": item.assignment, "state": item.state,
            "words": WITHHELD if shown.get("withheld") else STATE_WORDS[item.state],
            "score": shown.get("score", ""), "pending": shown.get("pending", ""),
            "exercises": shown.get("exercises", {}), "page": shown.get("page", False),
            "reason": item.reason,
            "finished": when(item.finished), "seconds": round(item.finished - item.arrived, 1) if item.finished else None}


STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}"
         "td,th{border-bottom:1px solid #ddd;padding:.3em .8em;text-align:left}.refused{color:#a00}"
         ".graded{color:#060}.named{color:#a60;font-size:.9em}")
# The service's own pages: their one inline style, by its hash, and nothing else at all (no script, no image).
PAGE_POLICY = ("default-src 'none'; style-src 'sha256-" + base64.b64encode(hashlib.sha256(STYLE.encode()).digest())
               .decode() + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
# nbconvert's HTML of a student's notebook: an origin of its own (no cookies, no hub API) and no script; its inline
# styles and embedded images only.
FEEDBACK_POLICY = ("sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
                   "frame-ancestors 'none'")


class Base(HubOAuthenticated, RequestHandler):
    policy = "default-src 'none'; frame-ancestors 'none'"  # the JSON answers and the error pages: nothing to run

    def set_default_headers(self):
        """Every answer, an error's too: its policy, and its type as sent (a browser never guesses HTML)."""
        self.set_header("Content-Security-Policy", self.policy)
        self.set_header("X-Content-Type-Options", "nosniff")

    @property
    def service(self) -> Service:
        return self.settings["service"]

    def name(self) -> str:
        return self.get_current_user()["name"]

    def teaches(self) -> bool:
        return self.settings["instructors"] in (self.get_current_user().get("groups") or [])


class Mine(Base):
    def check_xsrf_cookie(self):
        """JupyterLab's notice reads this with fetch(), not as a navigation, which JupyterHub's cookie login accepts
        only with an XSRF token that a page of the student's server cannot read (the service's cookie has the
        service's path). A GET of one's own results asked from the hub's own origin needs none: the browser says so
        in Sec-Fetch-Site, which no other site's page can set, and such a page could not read the answer anyway."""
        if self.request.method == "GET" and self.request.headers.get("Sec-Fetch-Site") == "same-origin":
            return
        super().check_xsrf_cookie()

    @authenticated
    def get(self):
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(json.dumps([for_student(item) for item in self.service.queue.all(self.name())]))


class Page(Base):
    policy = PAGE_POLICY

    @authenticated
    def get(self):
        self.set_header("Cache-Control", "no-store")
        if self.teaches():
            self.write(queue_page(self.service.queue.all(), self.service.without_due_date()))
        else:
            self.write(student_page(self.name(), [for_student(item) for item in self.service.queue.all(self.name())],
                                    self.settings["prefix"]))


class Feedback(Base):
    policy = FEEDBACK_POLICY

    @authenticated
    def get(self, assignment: str):
        mine = [for_student(item) for item in self.service.queue.all(self.name()) if item.assignment == assignment]
        if not any(item["page"] for item in mine):
            raise HTTPError(404, "no feedback page of yours for this assignment is shown yet")
        pages = sorted((self.service.root / "feedback" / self.name() / assignment).glob("*.html"))
        if not pages:
            raise HTTPError(404, "no feedback page of yours for this assignment")
        self.set_header("Cache-Control", "no-store")
        self.write(pages[0].read_bytes())


def student_page(name: str, items: list[dict], prefix: str) -> str:
    busy = any(item["state"] in ("waiting", "grading") for item in items)
    rows = []
    for item in items:
        what = str(item["score"] or item["words"])  # the score says when written answers are not graded yet
        detail = item["reason"]
        if item["exercises"]:
            points = ", ".join(f"{k} {v}" for k, v in item["exercises"].items())
            detail = f"{points}. {detail}" if detail else points
        detail = html.escape(detail)
        if item["page"]:
            link = html.escape(f"{prefix}feedback/{urllib.parse.quote(item['assignment'])}")
            detail += f' <a href="{link}">the feedback page</a>'
        rows.append(f'<tr class="{html.escape(item["state"])}"><td>{html.escape(item["assignment"])}</td>'
                    f'<td>{html.escape(item["hand_in"])}</td><td>{html.escape(item["words"])}</td>'
                    f'<td><b>{html.escape(what)}</b></td><td>{detail}</td></tr>')
    refresh = '<meta http-equiv="refresh" content="5">' if busy else ""
    table = ("<table><tr><th>assignment</th><th>handed in</th><th></th><th>score</th><th></th></tr>"
             + "".join(rows) + "</table>") if rows else "<p>Nothing handed in yet.</p>"
    return (f"<!doctype html><html><head><meta charset='utf-8'>{refresh}<title>Your hand-ins</title>"
            f"<style>{STYLE}</style></head><body><h1>Your hand-ins, {html.escape(name)}</h1>"
            "<p>Each hand-in is graded as it arrives (Assignment List, Submit); this page shows what became of it, "
            "and refreshes itself while one waits.</p>" + table + "</body></html>")


def arrival(item: HandedIn) -> str:
    """When the exchange says `item` arrived and, where the time in its folder's name disagrees, what is wrong."""
    disagreement = named_time_disagrees(item.folder, item.arrived)
    shown = html.escape(when(item.arrived))
    return f'{shown}<br><span class="named">{html.escape(disagreement)}</span>' if disagreement else shown


def instructors_score(item: HandedIn) -> str:
    """A hand-in's score as the instructor reads it on the queue page, also while its student sees none yet."""
    shown = json.loads(item.shown) if item.shown else {}
    if shown.get("withheld") and item.score is not None:
        return f"{item.score:g}/{item.max_score or 0:g} (shown to the student after the due date)"
    return str(shown.get("score", ""))


def queue_page(items: list[HandedIn], notes: list[str] = ()) -> str:
    """The whole queue, for the instructors; `notes`: lines above it (an assignment that waits for a due date)."""
    counts = {state: sum(1 for item in items if item.state == state) for state in STATE_WORDS}
    rows = "".join(
        f'<tr class="{html.escape(item.state)}"><td>{html.escape(item.student)}</td>'
        f"<td>{html.escape(item.assignment)}</td><td>{arrival(item)}</td>"
        f"<td>{html.escape(item.state)}</td>"
        f"<td>{html.escape(instructors_score(item))}</td>"
        f"<td>{html.escape(item.reason)}</td><td>{round(item.waited, 1)} s</td></tr>" for item in items)
    summary = ", ".join(f"{count} {state}" for state, count in counts.items() if count) or "nothing yet"
    busy = counts["waiting"] or counts["grading"]
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            + ('<meta http-equiv="refresh" content="5">' if busy else "")
            + f"<title>Grading at submission</title><style>{STYLE}</style></head><body>"
            f"<h1>Grading at submission</h1><p>{summary}, at {when(time.time())}</p>"
            + "".join(f'<p class="named">{html.escape(note)}</p>' for note in notes) + "<table><tr><th>student</th>"
            "<th>assignment</th><th>arrived</th><th>state</th><th>score</th><th>reason</th><th>submit to done</th>"
            f"</tr>{rows}</table></body></html>")


def application(service: Service, prefix: str, instructors: str) -> Application:
    """The pages under `prefix` (JupyterHub's JUPYTERHUB_SERVICE_PREFIX), for `service`; `instructors`: the hub
    group whose members see the whole queue."""
    return Application([
        (prefix, Page), (url_path_join(prefix, "api/mine"), Mine),
        (url_path_join(prefix, r"feedback/([\w.-]+)"), Feedback),
        (url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler),
    ], service=service, prefix=prefix, instructors=instructors, cookie_secret=os.urandom(32))
