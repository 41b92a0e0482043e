"""Issue 31: the similarity screen, proven on a corpus and timed on classes of growing size.

The corpus is tests/similarity_corpus.py's: seven honest students (the wild sources and the loop solutions), seven
copies of them (verbatim, renamed, comments rewritten, reordered, dead code added, all four, and a copy of nanoGPT
with names and comments changed), and the six public sources as reference files. Printed: precision and recall of
the flags and the ROC AUC of the evidence, for pairs of students and for students against reference files, with the
shared-code safeguard on and off.

The timing classes have N students x 7 notebooks: each student answers every exercise with a solution of the corpus
taken at random (seeded) and passed through one of the copy transformations at random, so every exercise has
thousands of passages shared by many students: more shared code than an honest class, a hard case for the pair
scoring. Timed: `python -m autograder similarity --jobs 2`'s work (screen, CSV, pages) in this process.

    .venv/bin/python bench/similarity.py                    # corpus figures, then 50, 100 and 200 students
    .venv/bin/python bench/similarity.py --students 200     # one class size
"""
from __future__ import annotations

import argparse
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder.similarity.screen import screen, write  # noqa: E402
from course.about import NOTEBOOKS  # noqa: E402
from tests import similarity_corpus as corpus  # noqa: E402

TRANSFORMS = [lambda code: code, corpus.renamed, corpus.comments_rewritten, corpus.reordered,
              corpus.dead_code_added]


def corpus_figures() -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        copies = corpus.build_class(root)
        references = corpus.write_references(root / "refs")
        for set_aside in (True, False):
            found = screen(root, list(NOTEBOOKS), [references], set_aside_shared=set_aside, jobs=2)
            pairs = {(p.first, p.second): p for p in found.pairs}
            everyone = found.students
            all_pairs = {(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]}
            scores = {key: (pairs[key].evidence if key in pairs else 0.0) for key in all_pairs}
            positives = {key for key in all_pairs if corpus.is_copy_pair(*key, copies)}
            flagged = {key for key, p in pairs.items() if p.flagged}
            precision, recall = corpus.precision_recall(flagged, positives)
            auc = corpus.roc_auc(scores, positives)
            lowest_copy = min(scores[k] for k in positives)
            highest_honest = max(scores[k] for k in all_pairs - positives)
            rows.append(f"| students, shared code {'set aside' if set_aside else 'counted (off)'} | "
                        f"{len(everyone)} students, {len(positives)} copy pairs of {len(all_pairs)} | "
                        f"{precision:.2f} | {recall:.2f} | {auc:.3f} | lowest copy {lowest_copy:.1f}, highest "
                        f"honest {highest_honest:.1f} |")
            files = sorted({p.second for p in found.references} | {f"public/{n}.py" for n in corpus.PUBLIC})
            by_key = {(p.first, p.second): p for p in found.references}
            keys = {(s, f) for s in everyone for f in files}
            ref_scores = {k: (by_key[k].evidence if k in by_key else 0.0) for k in keys}
            ref_positives = {k for k in keys if corpus.is_copied_from(*k, copies)}
            ref_flagged = {k for k, p in by_key.items() if p.flagged}
            precision, recall = corpus.precision_recall(ref_flagged, ref_positives)
            auc = corpus.roc_auc(ref_scores, ref_positives)
            rows.append(f"| students against reference files, shared code {'set aside' if set_aside else 'counted'}"
                        f" | {len(keys)} student-file pairs, {len(ref_positives)} copied | {precision:.2f} | "
                        f"{recall:.2f} | {auc:.3f} | lowest copied "
                        f"{min(ref_scores[k] for k in ref_positives):.1f}, highest other "
                        f"{max(ref_scores[k] for k in keys - ref_positives):.1f} |")
    return rows


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
    args = parser.parse_args()
    if not args.no_corpus:
        print("| what | corpus | precision | recall | ROC AUC | evidence |")
        print("| --- | --- | --- | --- | --- | --- |")
        print("\n".join(corpus_figures()))
        print()
    print("| class | machine | screen | screen + CSV + pages | found | date |")
    print("| --- | --- | --- | --- | --- | --- |")
    for students in args.students:
        print(time_class(students, args.jobs), flush=True)


if __name__ == "__main__":
    main()
