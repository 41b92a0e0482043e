"""The evidence against each pair, and whether a person should look at it.

Each exercise gives a pair at most 1: one long shared cell cannot outweigh consistent copying across exercises,
and evidence adds up only as exercises corroborate each other. In one exercise:
- `overlap`: of the smaller answer's fingerprints (the release's code and the class's shared code set aside, and
  what a `--reference` file holds attributed to that file, not to the pair), the share the other answer holds;
- measured against the class: `excess` is how far the overlap rises above what one pair in ten of the class
  reaches in that exercise (`CLASS_QUANTILE`), from 0 (no more than honest pairs commonly share) to 1 (all);
- scaled by how much there is to judge: by the shared fingerprints (full from `FULL_SHARED`) and by what the
  shorter of the two answers wrote (`fingerprints.written_tokens`: code tokens without comments, docstrings,
  prints and blank lines; nothing below `SHORT_FLOOR_TOKENS`, full from `SHORT_FULL_TOKENS`), so the few lines
  of a short exercise, which honest students write alike, count for little however they are padded.
A pair's evidence is the sum over every exercise both answered, in "exercises' worth". It is flagged from the
class's own far-out fence (Tukey: third quartile + 3 x the interquartile range of every pair's evidence, pairs
with none included) and never below `CORROBORATED`, two whole exercises: one matched exercise alone is weak.
Each student is matched against each `--reference` file the same way (the overlap is the share of the student's
answer the file holds, with no class quantile: a file is not a classmate), listed apart and flagged by the same
rule over the student-file pairs. bench/README.md gives the figures on both corpora of tests/.
"""
from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from autograder.similarity.fingerprints import Fingerprint

CLASS_QUANTILE = 0.9  # overlap that one pair in ten of the class reaches in an exercise: honest convergence
FULL_SHARED = 40  # shared fingerprints (about six lines) from which an exercise's overlap counts in full
SHORT_FLOOR_TOKENS = 30  # an answer of fewer written code tokens gives no evidence (a line or two)
SHORT_FULL_TOKENS = 90  # ... and counts in full from this many (about eight lines)
CORROBORATED = 2.0  # the least evidence flagged: two exercises' worth
FENCE = 3.0  # Tukey's far-out fence: Q3 + FENCE x IQR of the class's evidence
MIN_EXERCISE_EVIDENCE = 0.05  # an exercise is listed as matched from this much evidence

Exercise = tuple[str, str]  # (assignment, grade_id)


@dataclass
class ExerciseMatch:
    """What two hand-ins (or a hand-in and a reference file) share in one exercise."""
    assignment: str
    exercise: str
    evidence: float  # 0 to 1: this exercise's part of the pair's evidence
    matched: int  # how many counted fingerprints both hold
    overlap: float  # matched / the counted fingerprints of the smaller answer (of the student's, for a file)
    short: bool  # an answer of the two is short in what its student wrote: it counts for less


@dataclass
class PairEvidence:
    """Everything the screen found between `first` and `second` (two students, or a student and a reference file)."""
    first: str
    second: str
    kind: str  # "students" or "reference"
    matches: list[ExerciseMatch] = field(default_factory=list)
    answered_both: int = 0  # exercises both answered (for a reference file: the student's)
    threshold: float = CORROBORATED  # the class's flag threshold (`flag_threshold`)

    @property
    def evidence(self) -> float:
        return sum(m.evidence for m in self.matches)

    @property
    def matched(self) -> list[ExerciseMatch]:
        """The exercises that count as matched, strongest first."""
        return sorted((m for m in self.matches if m.evidence >= MIN_EXERCISE_EVIDENCE),
                      key=lambda m: (-m.evidence, m.assignment, m.exercise))

    @property
    def flagged(self) -> bool:
        return self.evidence >= self.threshold

    def sort_key(self):
        return (-round(self.evidence, 6), self.first, self.second)


def length_weight(written: int) -> float:
    """How much an answer of `written` code tokens can weigh: 0 below the floor, 1 from the full length."""
    return min(1.0, max(0.0, (written - SHORT_FLOOR_TOKENS) / (SHORT_FULL_TOKENS - SHORT_FLOOR_TOKENS)))


def is_short(written: int) -> bool:
    return written < SHORT_FULL_TOKENS


def class_level(overlaps: list[float], pairs: int, quantile: float = CLASS_QUANTILE) -> float:
    """The overlap `quantile` of an exercise's `pairs` reach (those missing from `overlaps` share nothing); 0 in a
    class too small for one pair in ten to be the class's habit rather than a copy (fewer than 10 pairs)."""
    if pairs < round(1 / (1 - quantile)):
        return 0.0
    ranked = [0.0] * (pairs - len(overlaps)) + sorted(overlaps)
    return ranked[int(quantile * (pairs - 1))]


def excess(overlap: float, level: float) -> float:
    """How far `overlap` rises above the class's `level`: 0 at or below it, 1 for everything shared."""
    return 0.0 if level >= 1.0 else max(0.0, (overlap - level) / (1.0 - level))


def exercise_evidence(overlap: float, level: float, shared: int, written: int) -> float:
    return excess(overlap, level) * min(1.0, shared / FULL_SHARED) * length_weight(written)


def flag_threshold(evidence: list[float], pairs: int) -> float:
    """The class's far-out fence over the evidence of all `pairs` (those missing from `evidence` have none), and
    at least `CORROBORATED`."""
    if pairs < 4:
        return CORROBORATED
    values = [0.0] * (pairs - len(evidence)) + list(evidence)
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return max(CORROBORATED, third + FENCE * (third - first))


def _set_thresholds(found: list[PairEvidence], pairs: int) -> list[PairEvidence]:
    threshold = flag_threshold([p.evidence for p in found], pairs)
    for pair in found:
        pair.threshold = threshold
    return sorted(found, key=PairEvidence.sort_key)


def student_pairs(cells: dict[Exercise, dict[str, Fingerprint]], attributed: dict[Exercise, set[int]] | None = None,
                  relative_to_class: bool = True) -> list[PairEvidence]:
    """Every pair of students with evidence, ranked (strongest first, then by name). `cells` holds each exercise's
    fingerprints by student, shared code already set aside; `attributed` each exercise's fingerprints a reference
    file holds (they count for that file, not for the pair). With `relative_to_class` off, the overlap counts as
    it stands (a plain fingerprint tool)."""
    attributed = attributed or {}
    pairs: dict[tuple[str, str], PairEvidence] = {}
    answered: dict[tuple[str, str], int] = defaultdict(int)
    students_all = sorted({s for by_student in cells.values() for s in by_student})
    for exercise in sorted(cells):
        by_student = cells[exercise]
        students = sorted(by_student)
        for pair in itertools.combinations(students, 2):
            answered[pair] += 1
        index: dict[int, list[str]] = defaultdict(list)
        for student in students:
            for value in by_student[student].hashes - attributed.get(exercise, set()):
                index[value].append(student)
        common: dict[tuple[str, str], int] = defaultdict(int)
        for who in index.values():
            for pair in itertools.combinations(who, 2):
                common[pair] += 1
        overlaps = {pair: shared / (min(len(by_student[pair[0]].hashes), len(by_student[pair[1]].hashes)) or 1)
                    for pair, shared in common.items()}
        n = len(students)
        level = class_level(list(overlaps.values()), n * (n - 1) // 2) if relative_to_class else 0.0
        for pair in sorted(common):
            first, second = by_student[pair[0]], by_student[pair[1]]
            written = min(first.written, second.written)
            found = pairs.setdefault(pair, PairEvidence(pair[0], pair[1], "students"))
            found.matches.append(ExerciseMatch(
                exercise[0], exercise[1], exercise_evidence(overlaps[pair], level, common[pair], written),
                common[pair], overlaps[pair], is_short(written)))
    for pair, found in pairs.items():
        found.answered_both = answered[pair]
    n = len(students_all)
    return _set_thresholds(list(pairs.values()), n * (n - 1) // 2)


def reference_matches(cells: dict[Exercise, dict[str, Fingerprint]],
                      references: dict[Exercise, dict[str, Fingerprint]]) -> list[PairEvidence]:
    """Every student's evidence against every reference file, ranked. `references` holds, for each exercise, the
    reference files' fingerprints with that exercise's boilerplate and shared code set aside."""
    found: dict[tuple[str, str], PairEvidence] = {}
    answered: dict[str, int] = defaultdict(int)
    files = sorted({name for by_file in references.values() for name in by_file})
    for exercise in sorted(cells):
        index: dict[int, list[str]] = defaultdict(list)
        for name, reference in sorted(references.get(exercise, {}).items()):
            for value in reference.hashes:
                index[value].append(name)
        for student, cell in sorted(cells[exercise].items()):
            answered[student] += 1
            common: dict[str, int] = defaultdict(int)
            for value in cell.hashes:
                for name in index.get(value, ()):
                    common[name] += 1
            for name in sorted(common):
                overlap = common[name] / (len(cell.hashes) or 1)
                pair = found.setdefault((student, name), PairEvidence(student, name, "reference"))
                pair.matches.append(ExerciseMatch(exercise[0], exercise[1],
                                                  exercise_evidence(overlap, 0.0, common[name], cell.written),
                                                  common[name], overlap, is_short(cell.written)))
    for (student, _), pair in found.items():
        pair.answered_both = answered[student]
    return _set_thresholds(list(found.values()), len(answered) * len(files))
