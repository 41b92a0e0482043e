"""The ranked evidence as a person reads it: a table in the terminal and the same rows as CSV."""
from __future__ import annotations

import csv
from pathlib import Path

from autograder.similarity.scoring import CORROBORATED, FORMS, WORTH_A_LOOK, PairEvidence

NOT_A_VERDICT = ("Evidence for a person to review, not a verdict: shared code can have an honest reason (a "
                 "textbook idiom, a study group the course allows, the same tutorial), and code rewritten with a new "
                 "structure, or by a language model, may not be seen. Read the pair pages before drawing any "
                 "conclusion.")
HOW_TO_READ = ("evidence: in exercises' worth, each exercise 0 to 1 (to 1.5 for a long passage): the rare code two answers share and the same "
               "answer nobody else in the class wrote, compared as written and once both are rewritten into one "
               "form (API forms, temporaries, loops and order made one), less for a short answer; the release "
               "notebook's code, code most of the class shares and what a --reference file holds count 0. Exercises "
               "with the same rewritten code, beyond what pairs of your class commonly have, add to it. Flagged "
               f"above the class's own far-out fence, never below {CORROBORATED:g}; worth a look above its inner "
               f"fence, never below {WORTH_A_LOOK:g}. exercises: matched of those both answered. 'rewritten': found "
               "once both are rewritten. 'short': an answer short in what its student wrote, counted for less.")
CSV_COLUMNS = ["rank", "kind", "first", "second", "evidence", "flagged", "worth_a_look", "matched_exercises",
               "answered_both", "same_rewritten", "strongest", "short_cells", "page"]


def status(pair: PairEvidence) -> str:
    return "FLAGGED" if pair.flagged else "worth a look" if pair.worth_a_look else ""


def strongest(pair: PairEvidence, count: int = 3) -> str:
    """The exercises that weigh most, with how much of the smaller cell they share: `attention 100%`."""
    return ", ".join(f"{m.exercise} {m.overlap:.0%}" + (" rewritten" if m.form == FORMS[1] else "")
                     + (" (short)" if m.short else "") for m in pair.matched[:count])


def rows(pairs: list[PairEvidence], pages: dict[tuple[str, str], Path], base: Path) -> list[list[str]]:
    found = []
    for rank, pair in enumerate(pairs, 1):
        page = pages.get((pair.first, pair.second))
        found.append([str(rank), pair.kind, pair.first, pair.second, f"{pair.evidence:.2f}",
                      "yes" if pair.flagged else "no", "yes" if pair.worth_a_look else "no", str(len(pair.matched)),
                      str(pair.answered_both), str(pair.twins) if pair.kind == "students" else "", strongest(pair),
                      str(sum(1 for m in pair.matched if m.short)), page.relative_to(base).as_posix() if page else ""])
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
    """The flagged pairs and those worth a look and, below them, the next strongest (up to `shown` rows in all), as
    aligned columns."""
    listed = pairs[:max(shown, sum(1 for p in pairs if p.flagged or p.worth_a_look))]
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
    look = sum(1 for p in pairs if p.worth_a_look)
    threshold = f" (flagged from {pairs[0].threshold:.2f}, worth a look from {pairs[0].look_threshold:.2f})" \
        if pairs else ""
    return "\n".join([f"{title}: {flagged} flagged, {look} worth a look, of {len(pairs)} with any evidence"
                      f"{threshold}", *lines, *tail])
