"""The whole screen: from a course folder's hand-ins (and reference folders) to ranked evidence, then to the files a
person reads. Reads nothing outside the course folder and the `--reference` folders named, and sends nothing
anywhere; the same hand-ins give the same ranking in every run."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from autograder.paths import notebook_path
from autograder.similarity import collect, shared_code
from autograder.similarity.fingerprints import Fingerprint, all_kgram_hashes, fingerprint, fingerprint_all
from autograder.similarity.pages import write_pages
from autograder.similarity.scoring import Exercise, PairEvidence, reference_matches, student_pairs
from autograder.similarity.table import HOW_TO_READ, NOT_A_VERDICT, terminal_table, write_csv

OUTPUT = Path("reports") / "similarity"  # under the course folder: similarity.csv, references.csv, pairs/*.html


@dataclass
class Screen:
    """What the screen found."""
    pairs: list[PairEvidence]  # pairs of students, ranked
    references: list[PairEvidence]  # student against reference file, ranked
    cells: dict[Exercise, dict[str, Fingerprint]]  # each exercise's answers, shared code set aside
    reference_cells: dict[Exercise, dict[str, Fingerprint]]
    students: list[str]
    set_aside: dict[Exercise, int] = field(default_factory=dict)  # fingerprints set aside as shared, by exercise
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[PairEvidence]:
        return [p for p in self.pairs if p.flagged]

    @property
    def flagged_references(self) -> list[PairEvidence]:
        return [p for p in self.references if p.flagged]


def screen(root: Path, assignments: list[str], reference_folders: list[Path] = (), set_aside_shared: bool = True,
           jobs: int = 1) -> Screen:
    """Screen the hand-ins under `root/submitted` for `assignments`, fingerprinting on `jobs` processes. With
    `set_aside_shared` off, code the class shares counts as much as code two students alone share and an overlap
    counts as it stands, not against the class's (a plain fingerprint tool; for tests and comparison)."""
    solutions, notes = collect.class_solutions(root, assignments)
    boilerplate = {a: set().union(*map(all_kgram_hashes, collect.release_code(notebook_path(root / "release", a))))
                   for a in assignments}
    stubs = {a: collect.release_stubs(notebook_path(root / "release", a)) for a in assignments}
    cells: dict[Exercise, dict[str, Fingerprint]] = defaultdict(dict)
    found_all = fingerprint_all([(s.code, f"{s.student}: {s.exercise}", s.assignment,
                                  stubs[s.assignment].get(s.exercise, "")) for s in solutions], boilerplate, jobs)
    for solution, found in zip(solutions, found_all):
        if found.hashes:  # a stub handed back as given holds nothing of the student's
            cells[(solution.assignment, solution.exercise)][solution.student] = found
    shared, set_aside, kept = {}, {}, {}
    for exercise, by_student in sorted(cells.items()):
        shared[exercise] = set()
        for form in ("canonical", "surface"):
            counts = shared_code.holders([(f if form == "canonical" else f.surface).hashes
                                          for f in by_student.values()])
            shared[exercise] |= shared_code.shared_fingerprints(counts, len(by_student)) if set_aside_shared else set()
        set_aside[exercise] = len(shared[exercise])
        kept[exercise] = {student: f.without(shared[exercise]) for student, f in by_student.items()}
    files, reference_notes = collect.reference_files(list(reference_folders))
    whole = {f.name: fingerprint(f.code, f.name, pieces=True) for f in files}
    reference_cells = {}
    for exercise in kept:
        removed = boilerplate[exercise[0]] | shared[exercise]
        reference_cells[exercise] = {name: f.without(removed) for name, f in whole.items()}
    held = set().union(*(all_kgram_hashes(f.code, pieces=True) for f in files))  # every run a file holds
    attributed = {exercise: held for exercise in kept}
    pairs = student_pairs(kept, attributed, relative_to_class=set_aside_shared)
    references = reference_matches(kept, reference_cells)
    students = sorted({s.student for s in solutions})
    return Screen(pairs, references, kept, reference_cells, students, set_aside, notes + reference_notes)


@dataclass
class Written:
    """The files a screen wrote."""
    pairs_csv: Path
    references_csv: Path
    pages: dict  # (first, second) -> page, for the flagged pairs and reference matches and those worth a look


def write(found: Screen, out: Path) -> Written:
    """similarity.csv and references.csv (every pair with evidence, ranked) and a page per flagged pair and per pair
    worth a look (pairs/<first>--<second>.html, references/<student>--<file>.html) under `out`, made afresh."""
    for old in [*out.glob("pairs/*.html"), *out.glob("references/*.html")]:
        old.unlink()
    pages = write_pages(out / "pairs", found.pairs, found.cells, found.cells)
    pages.update(write_pages(out / "references", found.references, found.cells, found.reference_cells))
    return Written(write_csv(out / "similarity.csv", found.pairs, pages, out),
                   write_csv(out / "references.csv", found.references, pages, out), pages)


def summary(found: Screen, written: Written, out: Path) -> str:
    """What the terminal shows: the note that this is no verdict, both ranked tables, where the files are."""
    parts = [NOT_A_VERDICT, HOW_TO_READ, "",
             terminal_table(found.pairs, f"Pairs of students ({len(found.students)} students)")]
    if any(found.reference_cells.values()):  # reference folders were given
        parts += ["", terminal_table(found.references, "Students against reference files")]
    set_aside = sum(found.set_aside.values())
    parts += ["", f"Set aside as code most of the class shares: {set_aside} fingerprints over "
                  f"{sum(1 for n in found.set_aside.values() if n)} of {len(found.set_aside)} exercises."]
    if found.notes:
        parts += ["Not compared:"] + [f"  {note}" for note in found.notes]
    parts += [f"Ranked pairs: {written.pairs_csv}", f"Reference matches: {written.references_csv}",
              f"Pages of the flagged pairs and those worth a look ({len(written.pages)}): {out / 'pairs'}"
              + (f" and {out / 'references'}" if any(p.parent.name == 'references' for p in written.pages.values())
                 else "")]
    return "\n".join(parts)
