"""One HTML page per flagged pair: the two solutions of each matched exercise side by side, the passages they share
marked (found by `copydetect.compare_files` and marked by `copydetect.utils.highlight_overlap`).

A page is one self-contained file: its style is inline and it has no script at all, so it opens offline, from a
USB stick or an archive, and loads nothing from a network. Each page says it is evidence for a person to review.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
from copydetect import compare_files
from copydetect.utils import highlight_overlap

from autograder.similarity.fingerprints import Fingerprint
from autograder.similarity.scoring import ExerciseMatch, PairEvidence
from autograder.similarity.table import HOW_TO_READ, NOT_A_VERDICT, strongest

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
.note { background: #fff4d6; border-left: 4px solid #e0a800; padding: .6em 1em; }
table.summary td, table.summary th { padding: .2em .8em; text-align: left; border-bottom: 1px solid #ddd; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; font-size: 12px; line-height: 1.35; }
mark { background: #ffb3b3; }
h3 { margin-top: 1.6em; }
"""
LEFT, RIGHT = "\u0001", "\u0002"  # placeholders for the marks, put in before escaping


def page_name(first: str, second: str) -> str:
    """A file name for the pair that any file system takes."""
    def safe(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    return f"{safe(first)}--{safe(second)}.html"


def marked(code: str, slices: np.ndarray) -> str:
    """`code`, escaped for HTML, with the passages in `slices` (copydetect's 2 x N starts and ends) marked."""
    if slices.ndim != 2 or slices.shape[1] == 0:
        return html.escape(code)
    text, _ = highlight_overlap(code, slices, LEFT, RIGHT)
    return html.escape(text).replace(LEFT, "<mark>").replace(RIGHT, "</mark>")


def exercise_section(match: ExerciseMatch, first: Fingerprint, second: Fingerprint, names: tuple[str, str]) -> str:
    _, _, (slices_first, slices_second) = compare_files(first, second)
    short = " &middot; a cell too short to judge alone" if match.short else ""
    return (f"<h3>{html.escape(match.assignment)} / {html.escape(match.exercise)}</h3>"
            f"<p>evidence {match.evidence:.1f} &middot; {match.matched} shared fingerprints, {match.overlap:.0%} of "
            f"the smaller answer{short}</p>"
            f'<div class="side"><div><b>{html.escape(names[0])}</b><pre>{marked(first.raw_code, slices_first)}</pre>'
            f'</div><div><b>{html.escape(names[1])}</b><pre>{marked(second.raw_code, slices_second)}</pre></div></div>')


def pair_page(pair: PairEvidence, cells: dict, others: dict) -> str:
    """The page of `pair`: `cells[exercise][student]` holds the first's fingerprints, `others[exercise][name]` the
    second's (the class's cells again, or the reference files')."""
    rows = "".join(f"<tr><td>{html.escape(m.assignment)}</td><td>{html.escape(m.exercise)}</td>"
                   f"<td>{m.evidence:.1f}</td><td>{m.overlap:.0%}</td><td>{'short' if m.short else ''}</td></tr>"
                   for m in pair.matched)
    sections = "".join(exercise_section(m, cells[(m.assignment, m.exercise)][pair.first],
                                        others[(m.assignment, m.exercise)][pair.second], (pair.first, pair.second))
                       for m in pair.matched)
    against = "reference file" if pair.kind == "reference" else "student"
    title = f"{pair.first} and {pair.second}"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>"
            f"<h1>Similarity: {html.escape(pair.first)} and {html.escape(pair.second)} ({against})</h1>"
            f'<p class="note"><b>{html.escape(NOT_A_VERDICT)}</b></p>'
            f"<p>Evidence {pair.evidence:.1f} over {len(pair.matched)} matched exercises of {pair.answered_both} "
            f"answered by both; strongest: {html.escape(strongest(pair))}.</p>"
            f"<p><small>{html.escape(HOW_TO_READ)} Marked: passages of at least 25 normalised characters (names, "
            "comments and spacing ignored) both hold, the release notebook's code and the class's shared code "
            "left out.</small></p>"
            f'<table class="summary"><tr><th>notebook</th><th>exercise</th><th>evidence</th><th>of the smaller'
            f"</th><th></th></tr>{rows}</table>{sections}</body></html>")


def write_pages(folder: Path, pairs: list[PairEvidence], cells: dict, others: dict) -> dict[tuple[str, str], Path]:
    """A page for each flagged pair in `folder`; returns (first, second) -> its path."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for pair in pairs:
        if pair.flagged:
            path = folder / page_name(pair.first, pair.second)
            path.write_text(pair_page(pair, cells, others), encoding="utf-8")
            written[(pair.first, pair.second)] = path
    return written
