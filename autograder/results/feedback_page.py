"""The feedback page a student reads, online or offline: nbgrader's feedback page with two changes.

- Mathematics is MathML, made from the LaTeX of markdown cells when the page is made (`latex2mathml`, pure
  Python), and every browser draws MathML itself: the page loads no MathJax from a CDN, so the mathematics shows
  in an exam room, from a local copy or a zip of feedback as well as online. (MathJax shipped with the page would
  add a megabyte of script to every page, and a PyPI copy of it to the environment, for what MathML does natively.)
- Output text wraps at the page's edge instead of scrolling sideways inside its box, so a verdict ("This is a
  known mistake: ...", a hidden test's message, the call that raised) is read in full.
- Scores are written as every other output of the course writes them (`3 / 11`, `2.5 / 11`), where nbgrader's
  template writes `3.0 / 11.0`; a refused hand-in's page (`refusal_page`) writes its `0 / 11` the same way.

`nbgrader_config.py` makes it the exporter of `nbgrader generate_feedback` (`GenerateFeedback.exporter_class`).
"""
from __future__ import annotations

import re
from html import escape
from pathlib import Path

import nbgrader
from latex2mathml.converter import convert
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from autograder.results.scores import PENDING

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
        pending = (resources or {}).get("nbgrader", {}).get("pending", 0)
        if pending:  # the score above is not final yet: say so where the student reads it
            note = (f'<p id="pending"><strong>{PENDING.capitalize()}</strong> ({pending} of them): the score counts '
                    'them as 0 until your instructor grades them.</p>')
            output = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + note, output, count=1)
        return output, resources


# The grader's own clauses in a refusal's reason, said to the instructor (autograder.handins.preflight): not for the student.
FOR_THE_INSTRUCTOR = ("graded 0", "ask ", "the next grading run")


def for_the_student(reason: str) -> str:
    """What was wrong with the hand-in, as the refusal's `reason` says it, without the clauses meant for the
    instructor: `this is notebook 01_positional_encoding, not 03_masking: graded 0; ask for 03_masking.ipynb` gives
    `this is notebook 01_positional_encoding, not 03_masking`."""
    parts = [part.strip().removesuffix(": graded 0") for part in reason.split("; ")]
    return "; ".join(part for part in parts if part and not part.startswith(FOR_THE_INSTRUCTOR))


def refusal_page(path: Path, assignment: str, student: str, score: str, reason: str) -> Path:
    """The feedback page of a hand-in that could not be graded (the wrong notebook, a file that is no notebook, a
    link): nbgrader makes none, as it graded nothing, so the student would never learn why the score is 0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{escape(assignment)}: feedback</title></head>
<body style="font-family: sans-serif; max-width: 50em; margin: 2em auto;">
<h1>{escape(assignment)} (Score: {escape(score)})</h1>
<p>Student: {escape(student)}</p>
<p><strong>Your hand-in could not be graded</strong>, so it scores 0 for now: {escape(for_the_student(reason))}.</p>
<p>Hand in <code>{escape(assignment)}.ipynb</code>, the notebook of this assignment, and ask your instructor to grade it
again.</p>
</body></html>
""")
    return path
