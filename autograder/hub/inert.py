"""What a student wrote renders inert on the grader's server (formgrader, the hub's service named after the course),
where it would otherwise run with the instructor's cookies on the hub's origin. Two mechanisms of the platform:

- nbconvert's sanitizing, made to cover what nbgrader's templates leave out. Formgrader's manual grading view and the
  feedback pages render a markdown cell as `markdown2html | strip_files_prefix`, never `clean_html` (nbconvert's own
  classic template adds it under `HTMLExporter.sanitize_html`, but nbgrader's templates replace that block). The
  grader's nbgrader settings (autograder.hub.layout) turn `sanitize_html` on (HTML and markdown outputs cleaned,
  JavaScript outputs and widget scripts dropped) and give `HTMLExporter.filters` this module's `strip_files_prefix`
  and `clean_html`: the same filters, ending in one sanitizer (`clean`) that keeps what markdown, MathML and tables
  make and nothing that runs: no script, no event handler, no `javascript:` link, no frame, no style, no form.
- A Content-Security-Policy on formgrader's pages (this module is a Jupyter Server extension of the grader's server;
  Jupyter Server's own `headers` setting is one policy for every page, JupyterLab's too). Every page of formgrader's
  runs only its own scripts: its files (`script-src 'self'`) and the inline scripts its templates write, each let in
  by its hash when it is one of them with nothing but a name's characters where the template fills in a value. So
  nothing that reached the page otherwise runs: a student's markup that got past the sanitizer, a student's name
  (which nbgrader's templates write unescaped), a name in the address (`manage_submissions/<name>`). A student's
  files, which formgrader serves as they are from `submissions/<id>/<file>` (an `.html` hand-in beside the notebook,
  reached by a link in it), are sandboxed as Jupyter Server sandboxes `/files/`, here with no script at all.
"""
from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache
from pathlib import Path

import bleach
from nbconvert.filters.strings import strip_files_prefix as nbconvert_strip_files_prefix
from tornado.web import OutputTransform

# What rendered markdown, nbconvert's outputs (a DataFrame's table) and the feedback page's MathML are made of.
MARKUP_TAGS = {"a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del", "details",
               "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li",
               "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "summary",
               "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var"}
MATHML_TAGS = {"math", "annotation", "maligngroup", "malignmark", "menclose", "merror", "mfenced", "mfrac", "mi",
               "mmultiscripts", "mn", "mo", "mover", "mpadded", "mphantom", "mprescripts", "mroot", "mrow", "ms",
               "mspace", "msqrt", "mstyle", "msub", "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder",
               "munderover", "none", "semantics"}
ALLOWED_TAGS = MARKUP_TAGS | MATHML_TAGS
EVERY_TAG_MAY_HAVE = {"class", "id", "title", "lang", "dir", "align"}
TAG_MAY_HAVE = {
    "a": {"href", "name"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan", "scope"},
    "col": {"span"}, "colgroup": {"span"}, "ol": {"start", "type"}, "details": {"open"},
    **{tag: {"display", "xmlns", "mathvariant", "stretchy", "fence", "separator", "separators", "accent",
             "accentunder", "lspace", "rspace", "minsize", "maxsize", "movablelimits", "largeop", "symmetric",
             "form", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame",
             "width", "height", "depth", "linethickness", "displaystyle", "scriptlevel", "notation", "open",
             "close", "encoding", "voffset", "numalign", "denomalign", "bevelled"} for tag in MATHML_TAGS},
}
URL_SCHEMES = ["http", "https", "mailto", "data"]  # data: only for an image's src (`may_have`)


def may_have(tag: str, name: str, value: str) -> bool:
    """Whether `tag` keeps its attribute `name`: the lists above, and a `data:` address only as an image's source
    (a plot embedded in markdown), never as a link."""
    if name not in EVERY_TAG_MAY_HAVE | TAG_MAY_HAVE.get(tag, set()):
        return False
    return not (name == "href" and value.strip().lower().startswith("data:"))


def clean(html: str) -> str:
    """`html` with only markup that runs nothing; anything else stays visible as text (`<script>` shows as
    `&lt;script&gt;`), so the instructor sees what the student wrote."""
    html = html.decode() if isinstance(html, bytes) else str(html)
    return bleach.clean(html, tags=ALLOWED_TAGS, attributes=may_have, protocols=URL_SCHEMES, strip=False,
                        strip_comments=True)


def clean_html(element) -> str:
    """nbconvert's `clean_html` filter (outputs, raw cells under `sanitize_html`) with `clean`'s wider list, so a
    heading or a paragraph is kept rather than shown as its tags."""
    return clean(element)


def strip_files_prefix(text: str) -> str:
    """nbconvert's `strip_files_prefix` filter, which ends nbgrader's rendering of every markdown cell and comment,
    then `clean`."""
    return clean(nbconvert_strip_files_prefix(text))


# The grader's server: a policy for formgrader's pages, a sandbox for the student's files it serves.
FORMGRADER = re.compile(r"/formgrader/(?P<rest>.*)$")
STUDENT_FILE = re.compile(r"submissions/[^/]+/.+")  # also the Prev/Next redirects there, which carry no body
TEMPLATES = Path(__import__("nbgrader").__file__).parent / "server_extensions" / "formgrader" / "templates"
SCRIPT = re.compile(r"<script\b(?P<attributes>[^>]*)>(?P<body>.*?)</script\s*>", re.DOTALL | re.IGNORECASE)
HANDLER = re.compile(r"""\son[a-z]+="(?P<code>[^"{}]*)\"""")
FILLED_IN = re.compile(r"\{\{-?.*?-?\}\}", re.DOTALL)
NAME_CHARACTERS = r"[\w.:/@+ -]*"  # what a course, assignment, notebook or student id, or a base URL, is made of
STUDENT_FILE_POLICY = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"


@lru_cache(maxsize=1)
def formgrader_code() -> tuple[list[re.Pattern], list[str]]:
    """Formgrader's own inline scripts, as patterns of their text (a filled-in value: name characters only), and the
    code of its inline event handlers (`onclick="toggle_name(true);"`), read from nbgrader's templates."""
    scripts, handlers = [], set()
    for template in sorted([*TEMPLATES.glob("*.tpl"), *TEMPLATES.glob("*/*.j2")]):
        text = template.read_text()
        for script in SCRIPT.finditer(text):
            body = script["body"]
            if "src=" in script["attributes"] or "{%" in body or not body.strip():
                continue  # a file (script-src 'self'), or a script whose text the template builds: not let in
            parts = FILLED_IN.split(body)
            scripts.append(re.compile(NAME_CHARACTERS.join(re.escape(part) for part in parts)))
        handlers.update(handler["code"] for handler in HANDLER.finditer(text))
    return scripts, sorted(handlers)


def digest(code: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode()).digest()).decode() + "'"


def formgrader_policy(page: str, frame_ancestors: str = "frame-ancestors 'none'") -> str:
    """The Content-Security-Policy of a formgrader page whose HTML is `page`: its own files and, by hash, those of its
    inline scripts that are formgrader's own; no other script, no plugin, frame, form or connection elsewhere."""
    scripts, handlers = formgrader_code()
    own = sorted({digest(body) for body in (m["body"] for m in SCRIPT.finditer(page)
                                             if "src=" not in m["attributes"])
                  if any(pattern.fullmatch(body) for pattern in scripts)})
    handler_hashes = ["'unsafe-hashes'", *map(digest, handlers)] if handlers else []
    return "; ".join([
        "default-src 'none'", " ".join(["script-src 'self'", *own, *handler_hashes]),
        "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self' data:", "connect-src 'self'",
        "form-action 'self'", "base-uri 'none'", "object-src 'none'", frame_ancestors])


class FormgraderPolicy(OutputTransform):
    """Sets each formgrader response's Content-Security-Policy once its handler has written it (the policy of an HTML
    page depends on the page): `formgrader_policy` for a page, `STUDENT_FILE_POLICY` for a student's file."""

    def __init__(self, request):
        super().__init__(request)
        match = FORMGRADER.search(request.path)
        self.rest = match["rest"] if match else None

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if self.rest is None or self.rest.startswith("static/"):
            return status_code, headers, chunk
        before = headers.get("Content-Security-Policy", "")
        ancestors = next((part.strip() for part in before.split(";") if part.strip().startswith("frame-ancestors")),
                         "frame-ancestors 'none'")
        if STUDENT_FILE.fullmatch(self.rest):
            headers["Content-Security-Policy"] = f"{STUDENT_FILE_POLICY}; {ancestors}"
        elif headers.get("Content-Type", "").startswith("text/html"):
            # A page sent in pieces is judged by none of them: none of its inline scripts runs.
            page = chunk.decode("utf-8", "replace") if finishing else ""
            headers["Content-Security-Policy"] = formgrader_policy(page, ancestors)
        return status_code, headers, chunk


def _jupyter_server_extension_points():
    return [{"module": "autograder.hub.inert"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """First of the server's transforms, so that it reads each page before any compression."""
    serverapp.web_app.transforms.insert(0, FormgraderPolicy)
    serverapp.log.info("autograder.hub.inert: formgrader's pages run only formgrader's scripts")
