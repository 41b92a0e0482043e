"""Issues 31 and 40: the similarity screen, proven on two corpora beside copydetect and timed on classes of growing
size.

Corpus A is tests/similarity_corpus.py's: seven honest students (the wild sources and the loop solutions), seven
copies of them (verbatim, renamed, comments rewritten, reordered, dead code added, all four, and a copy of nanoGPT
with names and comments changed), and the six public sources as reference files. A copy pair counts as found when it
is flagged, or when both students are flagged against the public file their code is (the screen attributes what
they share to the file). Corpus B is tests/similarity_corpus_b.py's, built apart (its own sources and disguises, a
partial copy of 3 exercises, idiom students, two honest students who took one layer from the same public
tutorial), drawn from each `--seeds` value. For each: pairs flagged, precision and recall of the flags, ROC AUC of
the evidence (copy pairs against every other pair), the partial copy's rank, and copydetect's own similarity on the
same class (one file per student, the release's code and the class-common code set aside, flagged above its
default display threshold, 0.33).

The timing classes have N students x 7 notebooks: each student answers every exercise with a solution of the corpus
taken at random (seeded) and passed through one of the copy transformations at random, so every exercise has
thousands of passages shared by many students: more shared code than an honest class, a hard case for the pair
scoring. Timed: `python -m autograder similarity --jobs 2`'s work (screen, CSV, pages) in this process.

    .venv/bin/python bench/similarity.py                    # corpus figures, then 50, 100 and 200 students
    .venv/bin/python bench/similarity.py --students 200     # one class size
    .venv/bin/python bench/similarity.py --students            # the corpus figures only (corpus B: seeds 7 11 13 17)
"""
from __future__ import annotations

import argparse
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from copydetect import compare_files  # noqa: E402

from autograder.similarity.screen import screen, write  # noqa: E402
from course.about import NOTEBOOKS  # noqa: E402
from tests import similarity_corpus as corpus  # noqa: E402
from tests import similarity_corpus_b as corpus_b  # noqa: E402

COPYDETECT_DISPLAY = 0.33  # copydetect's default display threshold: pairs above it are in its report
TRANSFORMS = [lambda code: code, corpus.renamed, corpus.comments_rewritten, corpus.reordered,
              corpus.dead_code_added]


def copydetect_scores(found) -> dict[tuple[str, str], float]:
    """copydetect's similarity of every pair of students, as if each student were one file of all their answers:
    the tokens of each that overlap the other over the tokens of each, the larger of the two (its display
    similarity), with the screen's boilerplate and class-common code already set aside."""
    coverage = {s: 0.0 for s in found.students}
    for by_student in found.cells.values():
        for student, cell in by_student.items():
            coverage[student] += cell.token_coverage
    overlap: dict[tuple[str, str], list[float]] = {}
    for by_student in found.cells.values():
        names = sorted(by_student)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                _, _, (slices1, slices2) = compare_files(by_student[first], by_student[second])
                if len(slices1) and slices1.ndim == 2 and slices1.shape[1]:
                    both = overlap.setdefault((first, second), [0.0, 0.0])
                    both[0] += float(np.sum(slices1[1] - slices1[0]))
                    both[1] += float(np.sum(slices2[1] - slices2[0]))
    return {pair: max(a / (coverage[pair[0]] or 1), b / (coverage[pair[1]] or 1))
            for pair, (a, b) in overlap.items()}


def through_references(found) -> dict[tuple[str, str], float]:
    """Pairs of students both flagged against one reference file (the screen attributes what they share to the
    file), with the smaller of their two evidences against it."""
    by_file: dict[str, dict[str, float]] = {}
    for match in found.references:
        if match.flagged:
            by_file.setdefault(match.second, {})[match.first] = match.evidence
    pairs: dict[tuple[str, str], float] = {}
    for students in by_file.values():
        names = sorted(students)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                pairs[(first, second)] = max(pairs.get((first, second), 0.0), min(students[first], students[second]))
    return pairs


def class_row(label: str, found, positives: set, partial: tuple[str, str] | None) -> list[str]:
    """The figures of one screened class: the screen's and copydetect's, one row each."""
    everyone = found.students
    all_pairs = {(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]}
    rows = []
    screen_scores = {(p.first, p.second): p.evidence for p in found.pairs}
    screen_flagged = {(p.first, p.second) for p in found.pairs if p.flagged}
    for pair, evidence in through_references(found).items():
        screen_scores[pair] = max(screen_scores.get(pair, 0.0), evidence)
        screen_flagged.add(pair)
    detector = copydetect_scores(found)
    detector_flagged = {k for k, v in detector.items() if v > COPYDETECT_DISPLAY}
    for tool, scores, flagged in (("the screen", screen_scores, screen_flagged),
                                  ("copydetect", detector, detector_flagged)):
        scores = {k: scores.get(k, 0.0) for k in all_pairs}
        precision, recall = corpus.precision_recall(flagged, positives)
        auc = corpus.roc_auc(scores, positives)
        rank = "-"
        if partial:
            ranked = sorted(all_pairs, key=lambda k: (-scores[k], k))
            place = ranked.index(partial) + 1
            above = sum(1 for k in ranked[:place - 1] if k not in positives)
            rank = f"#{place} ({above})"
        rows.append(f"| {label} | {tool} | {len(flagged)} of {len(all_pairs)} | {precision:.3f} | {recall:.2f} | "
                    f"{auc:.4f} | {rank} |")
    return rows


def corpus_b_rows(seeds: list[int]) -> list[str]:
    rows = []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder) / "course"
            root.mkdir()
            copies = corpus_b.build_class(root, seed)
            references = corpus_b.write_references(Path(folder))
            found = screen(root, list(NOTEBOOKS), [references], jobs=2)
            positives = {tuple(sorted(k)) for k in copies.items()}
            partial = tuple(sorted(("copy_partial", copies["copy_partial"])))
            rows += class_row(f"corpus B, seed {seed}", found, positives, partial)
            attributed = [f"{p.first}->{p.second}" for p in found.references if p.flagged]
            rows.append(f"| corpus B, seed {seed} | the screen, reference files | flagged: "
                        f"{', '.join(attributed) or 'none'} | | | | |")
    return rows


def corpus_a_rows() -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        copies = corpus.build_class(root)
        references = corpus.write_references(root / "refs")
        found = screen(root, list(NOTEBOOKS), [references], jobs=2)
        everyone = found.students
        positives = {(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]
                     if corpus.is_copy_pair(a, b, copies)}
        return class_row("tests/ corpus", found, positives, None)


def synthetic_class(root: Path, students: int, seed: int = 0) -> None:
    honest = corpus.honest_cells()
    by_exercise: dict[str, list[str]] = {}
    for name, cells in honest.items():
        for grade_id in cells:
            by_exercise.setdefault(grade_id, []).append(name)
    rng = random.Random(seed)
    import shutil
    shutil.copytree(corpus.RELEASE, root / "release")
    for number in range(students):
        cells = {}
        for grade_id, names in sorted(by_exercise.items()):
            original = rng.choice(sorted(names))
            cells[grade_id] = rng.choice(TRANSFORMS)(honest[original][grade_id])
        corpus.write_hand_in(root, f"student{number:03d}", cells)


def time_class(students: int, jobs: int) -> str:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        synthetic_class(root, students)
        started = time.perf_counter()
        found = screen(root, list(NOTEBOOKS), jobs=jobs)
        screened = time.perf_counter() - started
        written = write(found, root / "out")
        total = time.perf_counter() - started
        cells = sum(len(c) for c in found.cells.values())
    return (f"| {students} students x 7 notebooks ({cells} answers) | {platform.machine()}, {jobs} processes | "
            f"{screened:.1f} s | {total:.1f} s | {len(found.pairs)} pairs with evidence, {len(written.pages)} "
            f"pages | {time.strftime('%Y-%m-%d')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="*", default=[50, 100, 200])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="*", default=[7, 11, 13, 17], help="corpus B's seeds")
    args = parser.parse_args()
    if not args.no_corpus:
        corpus_tables(args.seeds)
    print("| class | machine | screen | screen + CSV + pages | found | date |")
    print("| --- | --- | --- | --- | --- | --- |")
    for students in args.students:
        print(time_class(students, args.jobs), flush=True)


def corpus_tables(seeds: list[int]) -> None:
    print("| class | tool | pairs flagged | precision | recall | ROC AUC | partial copy's rank (honest pairs above) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(corpus_a_rows() + corpus_b_rows(seeds)), flush=True)
    print()


if __name__ == "__main__":
    main()
