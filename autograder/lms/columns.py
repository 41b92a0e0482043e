"""Each notebook's own column in the LMS, known by id and kept with the course (issue 48).

A notebook's grades go only to its own column. No column is ever picked because its title shares a word with the
notebook (`Self-attention quiz` is not 02's, `The attention block` is 04's, not 02's): the first export of a
notebook stops and shows the export's candidates, those titled exactly as the notebook (`02_attention`,
`02 Attention`, `Attention`), and the instructor confirms one, once, with `--column 02_attention=40151` (or `=new`
for a new column). The course keeps it in `lms/columns.json` beside the gradebook: Canvas's assignment by its id (the
number in brackets; its title may change), Moodle's grade item by its header (Moodle's export has no ids, and its
import maps a column by that header), with the item's maximum the instructor gave (`--item-max`: Moodle's export
does not say it). Every later export uses what is kept and says so; a kept column the export lacks stops it.
"""
from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from autograder.paths import RELEASE, notebook_path

COLUMNS_FILE = "columns.json"
NEW = "new"  # --column ASSIGNMENT=new: a new column, which the LMS makes from the upload


def columns_file(gradebook: Path) -> Path:
    """Where the course keeps its notebooks' LMS columns: lms/columns.json beside the gradebook."""
    return Path(gradebook).resolve().parent / "lms" / COLUMNS_FILE


@dataclass
class Kept:
    """lms/columns.json: LMS ("canvas", "moodle") -> notebook -> what is known of its column."""
    path: Path
    known: dict[str, dict[str, dict]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Kept:
        try:
            return cls(path, json.loads(path.read_text()) if path.exists() else {})
        except json.JSONDecodeError:
            raise SystemExit(f"{path} is not the JSON `lms export` keeps: move it aside and run again; the export "
                             "then asks for each notebook's column once more.") from None

    def get(self, lms: str, assignment: str) -> dict:
        return self.known.get(lms, {}).get(assignment, {})

    def keep(self, lms: str, assignment: str, entry: dict) -> None:
        self.known.setdefault(lms, {})[assignment] = entry

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = self.path.with_name(self.path.name + ".new")
        fresh.write_text(json.dumps(self.known, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        os.replace(fresh, self.path)


@dataclass(frozen=True)
class Target:
    """Where a notebook's grades go in the upload."""
    header: str  # the upload's column: the export's own, or a new one
    shown: str  # as the instructor reads it: `Attention (40151)`, `a new Canvas assignment "02_attention"`
    keep: dict  # what lms/columns.json keeps of it
    maximum: float | None  # the LMS's points for it, when known (a new column: the notebook's own)
    new: bool = False
    how: str = ""  # how it is known: "confirmed now", "kept", ...


@dataclass(frozen=True)
class Question:
    """A notebook whose column is not known yet: the line that shows the candidates, and the option that confirms
    the one proposed ("" when there is none to propose)."""
    line: str
    option: str


def key(text: str) -> tuple[str, ...]:
    """A title's words as compared: case folded, `_`, `-`, `·` and other punctuation as spaces, numbers without
    leading zeros (`02_attention`, `02 · Attention` and `2 attention` alike)."""
    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())
    return tuple(str(int(w)) if w.isdigit() else w for w in words)


def notebook_title(assignment: str) -> str:
    """The notebook's own title, from the first heading of its release (`# 02 · Attention` gives `Attention`); ""
    for an assignment the course does not have."""
    path = notebook_path(RELEASE, assignment)
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    for cell in cells:
        source = "".join(cell.get("source", "")) if cell.get("cell_type") == "markdown" else ""
        heading = re.search(r"^#\s+(.+)$", source, re.M)
        if heading:
            return re.sub(r"^\d+\s*[·.:-]?\s*", "", heading[1].strip())
    return ""


def titles(assignment: str) -> list[str]:
    """What a column titled as the notebook is titled: `02_attention`, `02 Attention`, `Attention`."""
    number = assignment.split("_", 1)[0]
    title = notebook_title(assignment)
    found = [assignment] + ([f"{number} {title}", title] if title else [])
    return list(dict.fromkeys(found))


def titled_as(title: str, assignment: str) -> bool:
    """Whether an LMS column's `title` is the notebook's, word for word (never a title that merely shares a word)."""
    return key(title) in {key(t) for t in titles(assignment)}


def ask(questions: dict[str, Question], lms: str, columns: list[str], path: Path, extra: str = "") -> str:
    """The refusal of an export whose notebooks' columns are not all known: each notebook with its candidates, the
    export's columns, and the options to confirm them."""
    options = " ".join(q.option for q in questions.values() if q.option)
    return (f"Not written: the course does not know yet which {lms} column holds "
            + ("this notebook's" if len(questions) == 1 else "these notebooks'") + " grades. Confirm each once; it "
            f"is kept in {path} for every later export:\n" + "\n".join(f"  {q.line}" for q in questions.values())
            + f"\nThe {lms} export's columns: " + ("; ".join(columns) or "none") + "."
            + (f"\nIf that is right, run again with: {options}" if options else "") + extra)
