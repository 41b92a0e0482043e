"""The ranked evidence as a person reads it: a table in the terminal and the same rows as CSV."""
from __future__ import annotations

import csv
from pathlib import Path

from autograder.similarity.scoring import CORROBORATED, PairEvidence

NOT_A_VERDICT = ("Evidence for a person to review, not a verdict: shared code can have an honest reason (a "
                 "textbook idiom, a study group the course allows, the same tutorial), and a copy rewritten by hand "
                 "or by a language model is not seen. Read the pair pages before drawing any conclusion.")
HOW_TO_READ = ("evidence: in exercises' worth, each exercise 0 to 1: how much of the smaller answer the two share "
               "beyond what the class's pairs commonly share there (code most of the class shares, the release "
               "notebook's code and what a --reference file holds count 0), less for a short answer. Flagged above "
               f"the class's own far-out fence, never below {CORROBORATED:g} (two exercises). exercises: matched of "
               "those both answered. 'short': an answer short in what its student wrote, counted for less.")
CSV_COLUMNS = ["rank", "kind", "first", "second", "evidence", "flagged", "matched_exercises", "answered_both",
               "strongest", "short_cells", "page"]


def status(pair: PairEvidence) -> str:
    return "FLAGGED" if pair.flagged else ""


def strongest(pair: PairEvidence, count: int = 3) -> str:
    """The exercises that weigh most, with how much of the smaller cell they share: `attention 100%`."""
    return ", ".join(f"{m.exercise} {m.overlap:.0%}" + (" (short)" if m.short else "")
                     for m in pair.matched[:count])


def rows(pairs: list[PairEvidence], pages: dict[tuple[str, str], Path], base: Path) -> list[list[str]]:
    found = []
    for rank, pair in enumerate(pairs, 1):
        page = pages.get((pair.first, pair.second))
        found.append([str(rank), pair.kind, pair.first, pair.second, f"{pair.evidence:.2f}",
                      "yes" if pair.flagged else "no", str(len(pair.matched)), str(pair.answered_both),
                      strongest(pair), str(sum(1 for m in pair.matched if m.short)),
                      page.relative_to(base).as_posix() if page else ""])
    return found


def write_csv(path: Path, pairs: list[PairEvidence], pages: dict[tuple[str, str], Path], base: Path) -> Path:
    """Every pair with evidence, ranked, one row each (`CSV_COLUMNS`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(rows(pairs, pages, base))
    return path


def terminal_table(pairs: list[PairEvidence], title: str, shown: int = 15) -> str:
    """The flagged pairs and, below them, the next strongest (up to `shown` rows in all), as aligned columns."""
    listed = pairs[:max(shown, sum(1 for p in pairs if p.flagged))]
    header = ["#", "first", "second", "evidence", "exercises", "strongest", ""]
    body = [[str(i), p.first, p.second, f"{p.evidence:.2f}", f"{len(p.matched)}/{p.answered_both}", strongest(p),
             status(p)] for i, p in enumerate(listed, 1)]
    table = [header] + body
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    more = len(pairs) - len(listed)
    tail = [f"... and {more} more with less evidence (all in the CSV)"] if more > 0 else []
    flagged = sum(1 for p in pairs if p.flagged)
    threshold = f" (flagged from {pairs[0].threshold:.2f})" if pairs else ""
    return "\n".join([f"{title}: {flagged} flagged of {len(pairs)} with any evidence{threshold}", *lines, *tail])
