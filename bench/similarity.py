"""Issues 31, 40 and 52: the similarity screen proven on three corpora, before and after, beside copydetect, and
timed on classes of growing size.

- Corpus A (tests/similarity_corpus.py): seven honest students (the wild sources and the loop solutions), seven
  copies of them, the six public sources as reference files. A copy pair counts as found when it is flagged, or
  when both students are flagged against the public file their code is (the screen attributes it to the file).
- Corpus B (tests/similarity_corpus_b.py), drawn from a seed: 24 honest students of four kinds and a tutorial pair,
  8 copiers with mechanical disguises (one partial, one of a public file).
- Corpus C (tests/similarity_corpus_c.py, issue 52), drawn from a seed: corpus B's honest students and those of
  tests/wild, copiers who rewrite by hand (whole sets light, medium and strong, partial copies of 3 and 5 exercises,
  one copier of two classmates, every mechanical disguise at once, a verbatim control, a rewrite of a public file).

For each class: pairs flagged (and, after, worth a look), precision and recall of the flags, ROC AUC of the evidence
(copy pairs against every other pair), for the screen before (`--before`, a git revision: its `autograder` and
`course` packages screen the same class in a subprocess), the screen now, and copydetect run the same way: its
tokeniser and winnowing over each student's raw code (one file per student, all their answers), the release's code
and the class-common code set aside, flagged above its default display threshold (0.33). Under the table, for each
screen and class: the copies missed (evidence and rank), the honest pairs flagged or worth a look, the highest
honest pair, and the students flagged against a reference file.

The timing classes have N students x 7 notebooks: each student answers every exercise with a solution of corpus A
taken at random (seeded) and passed through one of its copy transformations at random, so every exercise has
thousands of passages shared by many students. Timed: `python -m autograder similarity --jobs 2`'s work (screen,
CSV, pages) in this process, `--runs` times (the median shown, and each run with the load average around it).

    .venv/bin/python bench/similarity.py --before 4fe4a1b --students    # the corpus tables, before issue 52 and now
    .venv/bin/python bench/similarity.py --no-corpus --students 200     # the timing class of 200 students only
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from copydetect import compare_files  # noqa: E402
from copydetect.utils import filter_code, get_token_coverage, winnow  # noqa: E402

from autograder.handins.preflight import nbgrader_metadata  # noqa: E402
from autograder.paths import notebook_path  # noqa: E402
from autograder.similarity import collect, shared_code  # noqa: E402
from course.about import NOTEBOOKS  # noqa: E402
from tests import similarity_corpus as corpus  # noqa: E402
from tests import similarity_corpus_b as corpus_b  # noqa: E402
from tests import similarity_corpus_c as corpus_c  # noqa: E402

COPYDETECT_DISPLAY = 0.33  # copydetect's default display threshold: pairs above it are in its report
NOISE, GUARANTEE = 25, 30  # copydetect's defaults (k and the guarantee threshold, in normalised characters)
# The seeds of bench/README.md. Corpus B: 7, 11, 1, 2, 3 chose issue 40's parameters, 13 and 17 were drawn after;
# issue 52's first parameters were chosen on all seven. Corpus C: 1 to 5 chose them; 22110 was drawn after them
# (tests/test_similarity_rewrites.py's), 43209, 94710, 1230 and 47576 after that screen was committed. Issue 52's
# second round chose its parameters on all of these and on B 76415, 58473, 61504, 31024 and C 78777, 36863, 4911,
# 34458, 41378, 78463 (drawn after ec0a989); B 83775, 89587, 13250 and C 93974, 69823, 10936, 49196, 51577 were
# drawn after c2e2995 and looked at, not used to choose 030d58b's length; B 93879, 57359, 30058 and C 27375, 90123,
# 614, 81931, 72070 were drawn after 030d58b, and nothing of the screen was changed after they were looked at.
SEEDS_B = [1, 2, 3, 7, 11, 13, 17, 76415, 58473, 61504, 31024, 83775, 89587, 13250, 93879, 57359, 30058]
SEEDS_C = [1, 2, 3, 4, 5, 22110, 43209, 94710, 1230, 47576, 78777, 36863, 4911, 34458, 41378, 78463, 93974, 69823,
           10936, 49196, 51577, 27375, 90123, 614, 81931, 72070]
TRANSFORMS = [lambda code: code, corpus.renamed, corpus.comments_rewritten, corpus.reordered,
              corpus.dead_code_added]


# ---- copydetect, run the same way


@dataclass
class CopydetectFile:
    """copydetect's fingerprint of one answer, with the attributes `copydetect.compare_files` reads."""
    raw_code: str
    filtered_code: str
    offsets: np.ndarray
    hash_idx: dict
    hashes: set = field(default_factory=set)
    k: int = NOISE

    @property
    def token_coverage(self) -> float:
        return get_token_coverage({h: self.hash_idx[h] for h in self.hashes}, self.k, len(self.filtered_code))


def kgram_hashes(text: str) -> np.ndarray:
    """copydetect's k-gram hashes with BLAKE2b in place of Python's salted hash(), so every run is the same."""
    return np.array([int.from_bytes(hashlib.blake2b(text[i:i + NOISE].encode(), digest_size=8).digest(), "big") >> 11
                     for i in range(len(text) - NOISE + 1)], dtype=np.int64)


def copydetect_file(code: str, boilerplate: set[int]) -> CopydetectFile:
    filtered, offsets = filter_code(code, "code.py", language="python")
    kept: dict[int, list[int]] = {}
    if len(filtered) >= NOISE:
        hashes, positions = winnow(kgram_hashes(filtered), GUARANTEE - NOISE + 1, remove_duplicates=False)
        for value, position in zip(hashes.tolist(), positions.tolist()):
            if value not in boilerplate:
                kept.setdefault(value, []).append(position)
    return CopydetectFile(code, filtered, offsets, kept, set(kept))


def copydetect_scores(root: Path) -> tuple[list[str], dict[tuple[str, str], float]]:
    """copydetect's similarity of every pair of students, as if each student were one file of all their answers:
    the tokens of each that overlap the other over the tokens of each, the larger of the two (its display
    similarity), with the release's code and the class-common code set aside."""
    solutions, _ = collect.class_solutions(root, list(NOTEBOOKS))
    boilerplate = {}
    for assignment in NOTEBOOKS:
        found: set[int] = set()
        for cell in collect.release_code(notebook_path(root / "release", assignment)):
            filtered, _ = filter_code(cell, "code.py", language="python")
            found |= set(kgram_hashes(filtered).tolist()) if len(filtered) >= NOISE else set()
        boilerplate[assignment] = found
    cells: dict[tuple[str, str], dict[str, CopydetectFile]] = {}
    for s in solutions:
        cells.setdefault((s.assignment, s.exercise), {})[s.student] = copydetect_file(s.code, boilerplate[s.assignment])
    for by_student in cells.values():
        common = shared_code.shared_fingerprints(shared_code.holders([f.hashes for f in by_student.values()]),
                                                 len(by_student))
        for f in by_student.values():
            f.hashes -= common
    students = sorted({s.student for s in solutions})
    coverage = {s: 0.0 for s in students}
    overlap: dict[tuple[str, str], list[float]] = {}
    for by_student in cells.values():
        for student, cell in by_student.items():
            coverage[student] += cell.token_coverage
        names = sorted(by_student)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                _, _, (slices1, slices2) = compare_files(by_student[first], by_student[second])
                if len(slices1) and slices1.ndim == 2 and slices1.shape[1]:
                    both = overlap.setdefault((first, second), [0.0, 0.0])
                    both[0] += float(np.sum(slices1[1] - slices1[0]))
                    both[1] += float(np.sum(slices2[1] - slices2[0]))
    return students, {pair: max(a / (coverage[pair[0]] or 1), b / (coverage[pair[1]] or 1))
                      for pair, (a, b) in overlap.items()}


# ---- the screen, now and before


# The screen's pairs and reference matches on a class, as JSON: (first, second, evidence, flagged, worth a look).
# The same program screens with this tree's package (in process) and with a revision's (its `autograder` and
# `course` exported into a folder, run there in a subprocess, so nothing of this tree is imported).
SCREEN = """
import json, sys
from pathlib import Path
from autograder.similarity.screen import screen
from course.about import NOTEBOOKS
found = screen(Path(sys.argv[1]), list(NOTEBOOKS), [Path(sys.argv[2])], jobs=int(sys.argv[3]))
print(json.dumps({"students": found.students,
                  "pairs": [(p.first, p.second, p.evidence, p.flagged, getattr(p, "worth_a_look", False))
                            for p in found.pairs],
                  "references": [(p.first, p.second, p.evidence, p.flagged, False) for p in found.references]}))
"""


def screened(root: Path, references: Path, jobs: int, tree: Path = REPO) -> dict:
    """The screen of the package under `tree` on a class, in a subprocess."""
    out = subprocess.run([sys.executable, "-c", SCREEN, str(root), str(references), str(jobs)], capture_output=True,
                         text=True, cwd=str(tree), env={**os.environ, "PYTHONPATH": str(tree)})
    if out.returncode:
        raise RuntimeError(f"the screen under {tree} failed:\n{out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


def export(revision: str, folder: Path) -> Path:
    """`revision`'s autograder and course packages, exported into `folder`."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "autograder", "course"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def through_references(found: dict) -> dict[tuple[str, str], float]:
    """Pairs of students both flagged against one reference file, with the smaller of their two evidences."""
    by_file: dict[str, dict[str, float]] = {}
    for first, second, evidence, flagged, _ in found["references"]:
        if flagged:
            by_file.setdefault(second, {})[first] = evidence
    pairs: dict[tuple[str, str], float] = {}
    for students in by_file.values():
        names = sorted(students)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                pairs[(first, second)] = max(pairs.get((first, second), 0.0), min(students[first], students[second]))
    return pairs


def figures(found: dict, positives: set) -> tuple[tuple[str, float, float, float], str]:
    """(pairs flagged, precision, recall, ROC AUC) of one screen on a class, and what it did with each copy and
    honest pair: copies missed (evidence and rank), honest pairs flagged or worth a look, reference files flagged."""
    everyone = found["students"]
    all_pairs = {(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]}
    scores = {(a, b): evidence for a, b, evidence, _, _ in found["pairs"]}
    flagged = {(a, b) for a, b, _, f, _ in found["pairs"] if f}
    look = {(a, b) for a, b, _, _, w in found["pairs"] if w}
    for pair, evidence in through_references(found).items():
        scores[pair] = max(scores.get(pair, 0.0), evidence)
        flagged.add(pair)
    scores = {k: scores.get(k, 0.0) for k in all_pairs}
    precision, recall = corpus.precision_recall(flagged, positives)
    auc = corpus.roc_auc(scores, positives)
    shown = f"{len(flagged)}" + (f" (+{len(look - flagged)} worth a look)" if look - flagged else "")
    ranked = sorted(all_pairs, key=lambda k: (-scores[k], k))
    top_honest = max((scores[k] for k in all_pairs - positives), default=0.0)

    def named(pairs) -> str:
        return ", ".join(f"{a}-{b} {scores[(a, b)]:.2f} (#{ranked.index((a, b)) + 1}"
                         f"{', worth a look' if (a, b) in look else ''})" for a, b in sorted(pairs)) or "none"
    files = [f"{a}->{b}" for a, b, _, f, _ in found["references"] if f]
    shown_to_a_person = flagged | look
    look_precision, look_recall = corpus.precision_recall(shown_to_a_person, positives)
    notes = (f"missed: {named(positives - flagged)}; honest flagged: {named(flagged - positives)}; "
             f"honest worth a look: {named(look - flagged - positives)}; highest honest pair {top_honest:.2f}; "
             f"reference files flagged: {', '.join(files) or 'none'}; flagged or worth a look: precision "
             f"{look_precision:.3f}, recall {look_recall:.3f}")
    return (shown, precision, recall, auc), notes


def copydetect_figures(root: Path, positives: set) -> tuple[str, float, float, float]:
    everyone, scores = copydetect_scores(root)
    all_pairs = {(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]}
    flagged = {k for k, v in scores.items() if v > COPYDETECT_DISPLAY}
    precision, recall = corpus.precision_recall(flagged, positives)
    return str(len(flagged)), precision, recall, corpus.roc_auc({k: scores.get(k, 0.0) for k in all_pairs}, positives)


def reprinted_class(root: Path, copy: Path) -> None:
    """The class under `root` copied to `copy` with every solution cell of every student re-printed: through
    `ast.unparse` for one student in two, and then restyled (spaces inside brackets, blank lines, comments
    replaced: `tests/similarity_corpus_b.restyled`) for the others."""
    shutil.copytree(root, copy)
    for number, student in enumerate(sorted(p.name for p in (copy / "submitted").iterdir())):
        for path in sorted((copy / "submitted" / student).rglob("*.ipynb")):
            notebook = nbformat.read(path, as_version=4)
            for cell in notebook.cells:
                if cell.cell_type == "code" and nbgrader_metadata(cell).get("solution"):
                    try:
                        again = ast.unparse(ast.parse(cell.source))
                    except SyntaxError:
                        continue
                    cell.source = corpus_b.restyled(again) if number % 2 else again
            nbformat.write(notebook, path)


def same_evidence(found: dict, again: dict) -> str:
    """Whether a re-printed class gave every pair and reference match the same evidence and flag."""
    def table(screened: dict) -> dict:
        return {(a, b): (round(evidence, 9), flagged) for a, b, evidence, flagged, _ in
                screened["pairs"] + screened["references"]}
    before, after = table(found), table(again)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return "the same" if not changed else f"{len(changed)} changed: " + ", ".join(
        f"{a}-{b} {before.get((a, b))} -> {after.get((a, b))}" for a, b in changed[:5])


# ---- the corpora


def build(kind: str, seed: int | None, folder: Path) -> tuple[Path, Path, set]:
    """A class of corpus `kind` under `folder`: (its course folder, its reference folder, its copy pairs)."""
    root = folder / "course"
    root.mkdir(parents=True)
    if kind == "A":
        copies = corpus.build_class(root)
        references = corpus.write_references(folder / "refs")
        everyone = sorted(p.name for p in (root / "submitted").iterdir())
        return root, references, {(a, b) for i, a in enumerate(everyone) for b in everyone[i + 1:]
                                  if corpus.is_copy_pair(a, b, copies)}
    if kind == "B":
        copies = corpus_b.build_class(root, seed)
        return root, corpus_b.write_references(folder), {tuple(sorted(k)) for k in copies.items()}
    copied = corpus_c.build_class(root, seed)
    return root, corpus_c.write_references(folder), corpus_c.copy_pairs(copied)


def corpus_rows(classes: list[tuple[str, int | None]], before: str | None, jobs: int, reprint: bool) -> list[str]:
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as old:
        if before:
            export(before, Path(old))
        for kind, seed in classes:
            label = f"corpus {kind}" + (f", seed {seed}" if seed is not None else "")
            with tempfile.TemporaryDirectory() as folder:
                root, references, positives = build(kind, seed, Path(folder))
                cells = []
                for name, tree in ([("before", Path(old))] if before else []) + [("now", REPO)]:
                    found = screened(root, references, jobs, tree)
                    row, note = figures(found, positives)
                    cells.append(row)
                    notes.append(f"- {label}, {name}: {note}")
                if reprint:
                    reprinted_class(root, Path(folder) / "reprinted")
                    again = screened(Path(folder) / "reprinted", references, jobs)
                    notes.append(f"- {label}, now, every answer re-printed and restyled: evidence "
                                 f"{same_evidence(found, again)}")
                cells.append(copydetect_figures(root, positives))
            rows.append(f"| {label} | {len(positives)} | " + " | ".join(
                f"{shown} | {precision:.3f} | {recall:.3f} | {auc:.4f}" for shown, precision, recall, auc in cells)
                + " |")
            print(rows[-1], flush=True)
    print()
    print("\n".join(notes))
    return rows


def corpus_tables(classes: list[tuple[str, int | None]], before: str | None, jobs: int, reprint: bool) -> None:
    tools = ([f"before ({before})"] if before else []) + ["now", "copydetect"]
    print("| class | copy pairs | " + " | ".join(f"{t}: flagged | precision | recall | ROC AUC" for t in tools) + " |")
    print("| --- | --- | " + " | ".join("--- | --- | --- | ---" for _ in tools) + " |", flush=True)
    corpus_rows(classes, before, jobs, reprint)
    print()


# ---- timing


def synthetic_class(root: Path, students: int, seed: int = 0) -> None:
    honest = corpus.honest_cells()
    by_exercise: dict[str, list[str]] = {}
    for name, cells in honest.items():
        for grade_id in cells:
            by_exercise.setdefault(grade_id, []).append(name)
    rng = random.Random(seed)
    shutil.copytree(corpus.RELEASE, root / "release")
    for number in range(students):
        cells = {}
        for grade_id, names in sorted(by_exercise.items()):
            original = rng.choice(sorted(names))
            cells[grade_id] = rng.choice(TRANSFORMS)(honest[original][grade_id])
        corpus.write_hand_in(root, f"student{number:03d}", cells)


def cpu() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.machine()) if Path("/proc/cpuinfo").exists() else ""
    return f"{model or platform.machine()}, {os.cpu_count()} cores"


def time_class(students: int, jobs: int, runs: int) -> str:
    """The screen, its CSV and pages on one synthetic class, `runs` times: the medians, and each run's time with
    the 1-minute load average before and after it (other work on a shared machine shows there)."""
    from autograder.similarity.screen import screen, write
    screen_s, total_s, each = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        synthetic_class(root, students)
        for run in range(runs):
            load = os.getloadavg()[0]
            started = time.perf_counter()
            found = screen(root, list(NOTEBOOKS), jobs=jobs)
            screen_s.append(time.perf_counter() - started)
            written = write(found, root / f"out{run}")
            total_s.append(time.perf_counter() - started)
            each.append(f"{total_s[-1]:.1f} s (load {load:.1f}-{os.getloadavg()[0]:.1f})")
        cells = sum(len(c) for c in found.cells.values())
    return (f"| {students} students x 7 notebooks ({cells} answers) | {cpu()}, {jobs} processes | "
            f"{np.median(screen_s):.1f} s | {np.median(total_s):.1f} s | {', '.join(each)} | {len(found.pairs)} pairs "
            f"with evidence, {sum(p.flagged for p in found.pairs)} flagged, {len(written.pages)} pages | "
            f"{time.strftime('%Y-%m-%d')} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="*", default=[50, 100, 200])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reprint", action="store_true",
                        help="also screen each class with every answer re-printed and restyled: the same evidence?")
    parser.add_argument("--runs", type=int, default=3, help="runs of each timing class (their median is shown)")
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--before", metavar="REVISION", help="also screen each class with this revision's screen")
    parser.add_argument("--seeds-b", type=int, nargs="*", default=SEEDS_B, help="corpus B's seeds")
    parser.add_argument("--seeds-c", type=int, nargs="*", default=SEEDS_C, help="corpus C's seeds")
    args = parser.parse_args()
    if not args.no_corpus:
        classes = [("A", None)] + [("B", s) for s in args.seeds_b] + [("C", s) for s in args.seeds_c]
        corpus_tables(classes, args.before, args.jobs, args.reprint)
    if args.students:
        print(f"| class | machine | screen (median of {args.runs}) | screen + CSV + pages (median) | each run "
              "(load before-after) | found | date |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for students in args.students:
            print(time_class(students, args.jobs, args.runs), flush=True)


if __name__ == "__main__":
    main()
