"""One HTML page per flagged pair and per pair worth a look: the two solutions of each matched exercise side by side,
the lines behind what they share marked (`Fingerprint.lines_of`, in the form of the code that weighed most, marked
by `copydetect.utils.highlight_overlap`), every line numbered. A student's cell is shown whole; a reference file,
often thousands of lines long, only by its matched passages, each with `CONTEXT_LINES` lines around it and its line
range.

A page is one self-contained file: its style is inline and it has no script at all, so it opens offline, from a
USB stick or an archive, and loads nothing from a network. The two columns share the window's width and long lines
wrap inside their column, so nothing runs off the screen of a narrow window. Each page says it is evidence for a
person to review.
"""
from __future__ import annotations

import html
import re
from bisect import bisect_right
from pathlib import Path

import numpy as np
from copydetect.utils import highlight_overlap

from autograder.similarity.fingerprints import Fingerprint
from autograder.similarity.scoring import FORMS, ExerciseMatch, PairEvidence
from autograder.similarity.table import HOW_TO_READ, NOT_A_VERDICT, strongest

# minmax(0, 1fr): a column is never wider than its half, whatever its longest line (1fr alone grows to fit it).
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; overflow-wrap: anywhere; }
.note { background: #fff4d6; border-left: 4px solid #e0a800; padding: .6em 1em; }
table.summary td, table.summary th { padding: .2em .8em; text-align: left; border-bottom: 1px solid #ddd; }
.side { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1em; }
pre { background: #f6f8fa; padding: .6em; margin: .3em 0 .8em; font-size: 12px; line-height: 1.35;
      white-space: pre-wrap; overflow-wrap: anywhere; }
pre .line { display: block; padding-left: var(--gutter); text-indent: calc(-1 * var(--gutter)); }
pre .ln { display: inline-block; width: calc(var(--gutter) - 1ch); margin-right: 1ch; text-indent: 0; text-align: right;
          color: #888; user-select: none; }
.where { margin: .5em 0 0; font-size: 12px; color: #555; }
mark { background: #ffb3b3; }
h3 { margin-top: 1.6em; }
"""
LEFT, RIGHT = "\u0001", "\u0002"  # placeholders for the marks, put in before escaping
CONTEXT_LINES = 3  # lines shown before and after each matched passage of a reference file


def page_name(first: str, second: str) -> str:
    """A file name for the pair that any file system takes."""
    def safe(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    return f"{safe(first)}--{safe(second)}.html"


def has_passages(slices: np.ndarray) -> bool:
    """Whether copydetect's slices (2 x N starts and ends; an empty 1-d array when nothing matched) hold any."""
    return slices.ndim == 2 and slices.shape[1] > 0


def marked_lines(code: str, slices: np.ndarray) -> list[str]:
    """The lines of `code`, escaped for HTML, with the passages in `slices` marked. A mark is closed at the end of
    each line it spans and opened again on the next, so any run of the lines stands alone."""
    text = highlight_overlap(code, slices, LEFT, RIGHT)[0] if has_passages(slices) else code
    lines, inside = [], False
    for line in text.split("\n"):
        opened = inside
        last = max(line.rfind(LEFT), line.rfind(RIGHT))
        if last >= 0:
            inside = line[last] == LEFT
        body = html.escape(line).replace(LEFT, "<mark>").replace(RIGHT, "</mark>")
        lines.append(("<mark>" if opened else "") + body + ("</mark>" if inside else ""))
    return lines


def numbered(lines: list[str], first: int) -> str:
    """A code block of `lines` (HTML already), numbered from `first`; a long line wraps under its own text."""
    gutter = len(str(first + len(lines) - 1)) + 1
    body = "".join(f'<span class="line"><span class="ln">{number}</span>{line}</span>'
                   for number, line in enumerate(lines, first))
    return f'<pre style="--gutter: {gutter}ch">{body}</pre>'


def line_count(code: str) -> int:
    """How many lines `code` has (a last newline ends the last line; it starts none)."""
    return code.count("\n") + (0 if code.endswith("\n") else 1)


def whole_code(code: str, slices: np.ndarray) -> str:
    """All of `code` (a student's cell), its passages in `slices` marked."""
    return numbered(marked_lines(code, slices)[:line_count(code)], 1)


def passage_lines(code: str, slices: np.ndarray) -> list[tuple[int, int]]:
    """The first and last line (counted from 1) of each passage in `slices`."""
    line_starts = [0] + [newline.end() for newline in re.finditer("\n", code)]
    return [(bisect_right(line_starts, start), bisect_right(line_starts, max(start, end - 1)))
            for start, end in zip(slices[0].tolist(), slices[1].tolist())]


def excerpts(passages: list[tuple[int, int]], total: int, context: int = CONTEXT_LINES) -> list[tuple[int, int]]:
    """The runs of lines to show: each passage with `context` lines around it, runs that meet merged into one."""
    runs: list[tuple[int, int]] = []
    for first, last in sorted(passages):
        first, last = max(1, first - context), min(total, last + context)
        if runs and first <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], max(runs[-1][1], last))
        else:
            runs.append((first, last))
    return runs


def matched_passages(code: str, slices: np.ndarray) -> str:
    """The passages of a long file (a reference file) in `slices`, each with its line range and `CONTEXT_LINES`
    lines around it; the rest of the file is left out."""
    total = line_count(code)
    runs = excerpts(passage_lines(code, slices), total) if has_passages(slices) else []
    lines = marked_lines(code, slices)
    shown = "".join(f'<p class="where">lines {first}&ndash;{last} of {total}</p>'
                    f"{numbered(lines[first - 1:last], first)}" for first, last in runs)
    return (f'<p class="where">{total} lines; shown: the matched passages, {CONTEXT_LINES} lines around each.</p>'
            f"{shown}")


def line_slices(code: str, lines: set[int]) -> np.ndarray:
    """copydetect's slices (2 x N character starts and ends) of `lines` of `code` (counted from 1), a run of
    neighbouring lines as one slice."""
    starts = [0] + [newline.end() for newline in re.finditer("\n", code)]
    ends = [start - 1 for start in starts[1:]] + [len(code)]
    runs: list[list[int]] = []
    for line in sorted(n for n in lines if 1 <= n <= len(starts)):
        if runs and line == runs[-1][1] + 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    if not runs:
        return np.array([], dtype=np.int64)
    return np.array([[starts[a - 1] for a, _ in runs], [ends[b - 1] for _, b in runs]], dtype=np.int64)


def shared_slices(match: ExerciseMatch, first: Fingerprint, second: Fingerprint) -> tuple[np.ndarray, np.ndarray]:
    """The lines of each side behind the fingerprints both hold, in the form of the code `match` was found in."""
    def form(fingerprint: Fingerprint) -> Fingerprint:
        return fingerprint.surface if match.form == FORMS[0] and fingerprint.surface else fingerprint
    a, b = form(first), form(second)
    both = a.hashes & b.hashes
    return line_slices(a.raw_code, a.lines_of(both)), line_slices(b.raw_code, b.lines_of(both))


def exercise_section(match: ExerciseMatch, first: Fingerprint, second: Fingerprint, names: tuple[str, str],
                     against_file: bool) -> str:
    """One matched exercise: the first's cell beside the second's (the whole cell, or a reference file's matched
    passages when `against_file`)."""
    slices_first, slices_second = shared_slices(match, first, second)
    right = (matched_passages if against_file else whole_code)(second.raw_code, slices_second)
    short = " &middot; short in what its student wrote, so it counts for less" if match.short else ""
    form = (" &middot; found once both are rewritten into one form (API forms, temporaries, loops and order made "
            "one): the code may read differently") if match.form == FORMS[1] else ""
    return (f"<h3>{html.escape(match.assignment)} / {html.escape(match.exercise)}</h3>"
            f"<p>evidence {match.evidence:.2f} of at most 1 &middot; {match.matched} shared fingerprints, {match.overlap:.0%} of "
            f"the smaller answer{short}{form}</p>"
            f'<div class="side"><div><b>{html.escape(names[0])}</b>{whole_code(first.raw_code, slices_first)}</div>'
            f"<div><b>{html.escape(names[1])}</b>{right}</div></div>")


def pair_page(pair: PairEvidence, cells: dict, others: dict) -> str:
    """The page of `pair`: `cells[exercise][student]` holds the first's fingerprints, `others[exercise][name]` the
    second's (the class's cells again, or the reference files')."""
    rows = "".join(f"<tr><td>{html.escape(m.assignment)}</td><td>{html.escape(m.exercise)}</td>"
                   f"<td>{m.evidence:.2f}</td><td>{m.overlap:.0%}</td><td>{'short' if m.short else ''}</td></tr>"
                   for m in pair.matched)
    against_file = pair.kind == "reference"
    sections = "".join(exercise_section(m, cells[(m.assignment, m.exercise)][pair.first],
                                        others[(m.assignment, m.exercise)][pair.second], (pair.first, pair.second),
                                        against_file)
                       for m in pair.matched)
    against = "reference file" if against_file else "student"
    title = f"{pair.first} and {pair.second}"
    standing = (f"flagged from {pair.threshold:.2f}" if pair.flagged else
                f"worth a look from {pair.look_threshold:.2f}, flagged from {pair.threshold:.2f}")
    twins = (f" The same code once rewritten into one form in {pair.twins} exercises, where this class makes "
             f"{pair.expected_twins:.1f} likely: {pair.corroboration:.2f} of the evidence." if pair.corroboration
             else "")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>"
            f"<h1>Similarity: {html.escape(pair.first)} and {html.escape(pair.second)} ({against})</h1>"
            f'<p class="note"><b>{html.escape(NOT_A_VERDICT)}</b></p>'
            f"<p>Evidence {pair.evidence:.2f} ({standing}) over {len(pair.matched)} matched "
            f"exercises of {pair.answered_both} answered by both; strongest: {html.escape(strongest(pair))}."
            f"{html.escape(twins)}</p>"
            f"<p><small>{html.escape(HOW_TO_READ)} Marked: the lines behind what the two share, the release "
            "notebook's code and the class's shared code left out.</small></p>"
            f'<table class="summary"><tr><th>notebook</th><th>exercise</th><th>evidence</th><th>of the smaller'
            f"</th><th></th></tr>{rows}</table>{sections}</body></html>")


def write_pages(folder: Path, pairs: list[PairEvidence], cells: dict, others: dict) -> dict[tuple[str, str], Path]:
    """A page for each flagged pair and each pair worth a look in `folder`; returns (first, second) -> its path."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for pair in pairs:
        if pair.flagged or pair.worth_a_look:
            path = folder / page_name(pair.first, pair.second)
            path.write_text(pair_page(pair, cells, others), encoding="utf-8")
            written[(pair.first, pair.second)] = path
    return written
