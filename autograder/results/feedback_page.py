"""The feedback page a student reads, online or offline: nbgrader's feedback page with two changes.

- Mathematics is MathML, made from the LaTeX of markdown cells when the page is made (`latex2mathml`, pure
  Python), and every browser draws MathML itself: the page loads no MathJax from a CDN, so the mathematics shows
  in an exam room, from a local copy or a zip of feedback as well as online. (MathJax shipped with the page would
  add a megabyte of script to every page, and a PyPI copy of it to the environment, for what MathML does natively.)
- Output text wraps at the page's edge instead of scrolling sideways inside its box, so a verdict ("This is a
  known mistake: ...", a hidden test's message, the call that raised) is read in full.
- Scores are written as every other output of the course writes them (`3 / 11`, `2.5 / 11`), where nbgrader's
  template writes `3.0 / 11.0`; a refused hand-in's page (`refusal_page`) writes its `0 / 11` the same way.
- A written answer that waits to be graded by hand (autograder.results.scores.waiting_answers) reads `Not graded yet`
  where nbgrader's page gives its points, with `earlier answer: 1 / 2` when it was handed in again after it was graded
  (nbgrader keeps, and counts, the earlier answer's mark); a note at the top says what the score counts meanwhile.
- Every page carries, in its head, the record of the gradebook it was made from (`gradebook_state`) and the score it
  shows: `stale_pages` finds each page that the gradebook no longer matches (a grade, a comment, a penalty changed
  since), which `python -m autograder grade` writes anew and `release-feedback` refuses to send.

`nbgrader_config.py` makes it the exporter of `nbgrader generate_feedback` (`GenerateFeedback.exporter_class`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from html import escape, unescape
from pathlib import Path

import nbgrader
from latex2mathml.converter import convert
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbgrader.api import Gradebook, MissingEntry

from autograder.results.scores import PENDING, score_of

try:  # jinja2's name for it, as nbconvert imports it
    from jinja2 import pass_context
except ImportError:  # pragma: no cover: jinja2 < 3
    from jinja2 import contextfilter as pass_context

TEMPLATES = Path(__file__).parent / "templates"  # feedback_page/: nbgrader's feedback template without MathJax
NBGRADER_TEMPLATES = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"

# Output boxes (printed text, errors, results) wrap long lines at the edge of the page; MathML shows at the size of
# the text around it; a failed check's ✘ line and a traceback keep their colours (nbgrader's page has no rules for
# nbconvert's ANSI classes).
WRAPPING_CSS = """
div.output_area pre, div.output_subarea pre, div.output_text pre {
  white-space: pre-wrap;
  overflow-wrap: anywhere;
  word-break: normal;
  overflow-x: visible;
}
div.output_subarea {
  max-width: 100%;
  min-width: 0;
}
math {
  font-size: 1.1em;
}
.ansi-bold { font-weight: bold; }
.ansi-red-fg, .ansi-red-intense-fg { color: #b22b31; }
.ansi-green-fg, .ansi-green-intense-fg { color: #007427; }
.ansi-yellow-fg, .ansi-yellow-intense-fg { color: #b27d12; }
.ansi-blue-fg, .ansi-blue-intense-fg { color: #0065ca; }
.ansi-cyan-fg, .ansi-cyan-intense-fg { color: #0e7a8d; }
math[display="block"] {
  margin: 0.6em 0;
  overflow-x: auto;
}
"""


def mathml(latex: str, display: str) -> str:
    """`latex` as a MathML element (`display` "inline" or "block"); LaTeX it cannot convert stays visible as code."""
    try:
        return convert(latex.strip(), display=display)
    except Exception:  # noqa: BLE001: one unusual formula must not cost the student the whole page
        return f'<code class="latex">{escape(latex)}</code>'


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, with `$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]` and `\\begin{...}` math as MathML."""

    def inline_math(self, body: str) -> str:
        return mathml(body, "inline")

    def block_math(self, body: str) -> str:
        return mathml(body, "block")

    def latex_environment(self, name: str, body: str) -> str:
        return mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", "block")


def as_written(value, precision=0, method="common") -> str:
    """The page's `round` filter, which nbgrader's template applies to every score (`| float | round(2)`): the score
    rounded as it asks, written as the course writes a number (`3`, `2.5`), not `3.0`."""
    return f"{round(float(value), precision):g}"


class FeedbackPage(HTMLExporter):
    """nbgrader's feedback page with MathML in place of MathJax, output text that wraps, scores as the course writes
    them."""

    def default_filters(self):
        yield from super().default_filters()
        yield "round", as_written

    def __init__(self, **kwargs):
        # Keyword arguments win over configuration (nbgrader configures HTMLExporter with its own template).
        kwargs.setdefault("template_name", "feedback_page")
        kwargs.setdefault("extra_template_basedirs", [str(TEMPLATES), str(NBGRADER_TEMPLATES)])
        super().__init__(**kwargs)

    @pass_context
    def markdown2html(self, context, source: str) -> str:
        cell = context.get("cell", {})
        renderer = MathMLRenderer(
            escape=False,
            attachments=cell.get("attachments", {}),
            embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text,
            exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options,
        )
        return MarkdownWithMath(renderer=renderer).render(source)

    def from_notebook_node(self, nb, resources=None, **kw):
        output, resources = super().from_notebook_node(nb, resources, **kw)
        style = f'<style type="text/css" id="wrapping">{WRAPPING_CSS}</style>\n'
        output = output.replace("</head>", style + "</head>", 1)
        info = (resources or {}).get("nbgrader", {})
        output = output.replace("<head>", "<head>\n" + record_tags(info.get("gradebook_state", ""),
                                                                   info.get("score_text", "")), 1)
        waiting = info.get("waiting", [])
        if waiting:  # the score above is not final yet: say so where the student reads it, and at each answer
            note = f'<p id="pending">{pending_note(waiting)}</p>'
            output = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + note, output, count=1)
            for answer in waiting:
                output = not_graded_yet(output, answer["cell"], answer["earlier"], answer["max_score"])
        return output, resources


def pending_note(waiting: list[dict]) -> str:
    """The note at the top of a page with written answers not graded yet (`waiting`: CourseScore's, per answer its
    `earlier` mark or None): what the score counts for them until they are graded."""
    never = [w for w in waiting if w["earlier"] is None]
    again = [w for w in waiting if w["earlier"] is not None]
    marks = ", ".join(f"{w['earlier']:g} / {w['max_score']:g}" for w in again)
    head = f"<strong>{PENDING.capitalize()}</strong> ({len(waiting)} of them): "
    if not again:
        return head + "the score counts them as 0 until your instructor grades them."
    if not never:
        one = len(again) == 1
        return head + (f"you handed {'it' if one else 'them'} in again after {'it was' if one else 'they were'} "
                       f"graded, so the score counts the earlier {'answer’s mark' if one else 'answers’ marks'} "
                       f"({marks}) until your instructor grades the new one{'' if one else 's'}.")
    return head + (f"the score counts {len(never)} as 0 and, for {len(again)} you handed in again after grading, the "
                   f"earlier mark ({marks}), until your instructor grades them.")


def not_graded_yet(page: str, cell: str, earlier: float | None, max_score: float) -> str:
    """`page` with the written answer `cell` marked `Not graded yet` where nbgrader's template gives its points, in the
    list at the top and above the answer, with `earlier answer: 1 / 2` when it had a mark."""
    said = "not graded yet" + (f"; earlier answer: {earlier:g} / {max_score:g}" if earlier is not None else "")
    page = re.sub(rf'(<a href="#{re.escape(cell)}">[^<]*</a> )\(Score: [^)]*\)', lambda m: f"{m.group(1)}({said})",
                  page, count=1)
    return re.sub(rf'(<a name="{re.escape(cell)}"></a>\s*<div class="panel-heading">(?:(?!</div>).)*?'
                  r'<span class="pull-right">\s*)Score: [^<]*?(\s*<a href="#top">)',
                  lambda m: m.group(1) + said[0].upper() + said[1:] + m.group(2), page, count=1, flags=re.S)


# In the head of every feedback page: what the gradebook held when the page was made, and the score the page shows.
STATE_TAG, SCORE_TAG = "autograder-gradebook", "autograder-score"


def record_tags(state: str, score: str) -> str:
    return (f'<meta name="{STATE_TAG}" content="{escape(state)}">\n'
            f'<meta name="{SCORE_TAG}" content="{escape(score)}">\n')


def gradebook_state(gb: Gradebook, assignment: str, student: str) -> str:
    """A digest of everything a feedback page of (`assignment`, `student`) shows from the gradebook: the score as the
    course gives it, each graded cell's points and whether it waits for grading, each comment; "" when the gradebook
    holds no such hand-in. Two pages with one state say the same."""
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        return ""
    score = score_of(gb, assignment, student)
    parts = [score.text(), *(f"{w.notebook}/{w.cell} waits" for w in score.waiting)]
    for notebook in sorted(submission.notebooks, key=lambda n: n.name):
        parts.append(f"{notebook.name} late {float(notebook.late_submission_penalty or 0):g}")
        parts += [f"{notebook.name}/{g.name} {float(g.score or 0):g}/{float(g.max_score or 0):g}"
                  for g in sorted(notebook.grades, key=lambda g: g.name)]
        parts += [f"{notebook.name}/{c.name} said {c.comment or ''}" for c in sorted(notebook.comments,
                                                                                   key=lambda c: c.name)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def page_record(page: Path) -> tuple[str, str] | None:
    """The gradebook state and the score a page says it was made from (`record_tags`); None for a page without them
    (made before the course wrote them, or by something else)."""
    with page.open("rb") as f:
        head = f.read(8192).decode("utf-8", "replace")
    state = re.search(rf'<meta name="{STATE_TAG}" content="([^"]*)">', head)
    score = re.search(rf'<meta name="{SCORE_TAG}" content="([^"]*)">', head)
    return (unescape(state[1]), unescape(score[1]) if score else "") if state else None


@dataclass(frozen=True)
class Stale:
    """A feedback page that no longer says what the gradebook holds."""
    page: Path
    assignment: str
    student: str
    says: str  # the score the page shows ("" when it does not say)
    now: str  # the score as the gradebook gives it now ("" when it holds no such hand-in)

    def line(self, root: Path) -> str:
        """`feedback/alice/03_masking/03_masking.html: it says 3/11, the gradebook 4/11`."""
        where = self.page.relative_to(root).as_posix() if self.page.is_relative_to(root) else str(self.page)
        if not self.now:
            return f"{where}: the gradebook holds no hand-in of {self.assignment} by {self.student}"
        if not self.says:
            return f"{where}: made before the course recorded on each page what it shows; the gradebook says {self.now}"
        if self.says == self.now:
            return f"{where}: it says {self.now}, with other points or comments per cell than the gradebook's"
        return f"{where}: it says {self.says}, the gradebook {self.now}"


def stale_pages(root: Path, assignments: list[str] | None = None, student: str | None = None) -> list[Stale]:
    """Every feedback page under root/feedback (of `assignments`, of `student`, when given) that the gradebook no
    longer matches: a grade, a comment or a late penalty changed since it was made (a written answer graded in
    formgrader, or another run that wrote some pages and not this one)."""
    folder = root / "feedback"
    if not folder.is_dir() or not (root / "gradebook.db").exists():
        return []
    found = []
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for page in sorted(folder.glob("*/*/*.html")):
            who, assignment = page.parent.parent.name, page.parent.name
            if (assignments is not None and assignment not in assignments) or (student is not None and who != student):
                continue
            state, record = gradebook_state(gb, assignment, who), page_record(page)
            if record is None or record[0] != state:
                score = score_of(gb, assignment, who) if state else None
                found.append(Stale(page, assignment, who, record[1] if record else "",
                                   score.text() if score else ""))
    return found


# The grader's own clauses in a refusal's reason, said to the instructor (autograder.handins.preflight): not for the student.
FOR_THE_INSTRUCTOR = ("graded 0", "ask ", "the next grading run")


def for_the_student(reason: str) -> str:
    """What was wrong with the hand-in, as the refusal's `reason` says it, without the clauses meant for the
    instructor: `this is notebook 01_positional_encoding, not 03_masking: graded 0; ask for 03_masking.ipynb` gives
    `this is notebook 01_positional_encoding, not 03_masking`."""
    parts = [part.strip().removesuffix(": graded 0") for part in reason.split("; ")]
    return "; ".join(part for part in parts if part and not part.startswith(FOR_THE_INSTRUCTOR))


REFUSED = "Your hand-in could not be graded"  # the words of a refusal page (`refusal_page`), by which it is known


def is_refusal_page(page: Path) -> bool:
    """Whether `page` is a refusal page (`refusal_page`), which nbgrader's generate_feedback cannot make again."""
    return f"<strong>{REFUSED}</strong>" in page.read_text(errors="replace")


def refusal_page(path: Path, assignment: str, student: str, score: str, reason: str, state: str = "",
                 score_text: str = "") -> Path:
    """The feedback page of a hand-in that could not be graded (the wrong notebook, a file that is no notebook, a
    link): nbgrader makes none, as it graded nothing, so the student would never learn why the score is 0. `state`
    and `score_text`: the gradebook it was made from (`gradebook_state`, `Score.text`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""<!DOCTYPE html>
<html><head>
{record_tags(state, score_text)}<meta charset="utf-8"><title>{escape(assignment)}: feedback</title></head>
<body style="font-family: sans-serif; max-width: 50em; margin: 2em auto;">
<h1>{escape(assignment)} (Score: {escape(score)})</h1>
<p>Student: {escape(student)}</p>
<p><strong>{REFUSED}</strong>, so it scores 0 for now: {escape(for_the_student(reason))}.</p>
<p>Hand in <code>{escape(assignment)}.ipynb</code>, the notebook of this assignment, and ask your instructor to grade it
again.</p>
</body></html>
""")
    return path
