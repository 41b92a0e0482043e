"""The evidence against each pair: summed over every exercise and notebook both answered, and whether a person should
look at the pair.

In one exercise, a pair's evidence is the weight of the fingerprints both hold (`shared_code`: what most of the
class holds counts 0, what only the two hold counts 1 each). Over a term it adds up: one shared four-line function
is weak, six shared exercises are strong. A cell with fewer than `MIN_FINGERPRINTS` fingerprints of its own (after
the release's code is removed) is too short to judge: its evidence still adds up, but it never flags a pair alone.
A pair is flagged when its evidence reaches `FLAG_EVIDENCE` and comes from a cell long enough to judge or from more
than one exercise. Each student is also matched against each `--reference` file the same way (a fingerprint weighs
1 / the number of students holding it), listed apart, naming the file, and flagged from `FLAG_REFERENCE_EVIDENCE`.
The thresholds were set on the corpus of tests/similarity_corpus.py (bench/README.md gives its figures).
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from autograder.similarity import shared_code
from autograder.similarity.fingerprints import Fingerprint

FLAG_EVIDENCE = 40.0  # summed evidence (weighted fingerprints) from which a pair is shown to a person
# A public implementation holds one way of writing every exercise, idioms included, where a classmate holds one
# answer each: a reference file needs more evidence to be named.
FLAG_REFERENCE_EVIDENCE = 100.0
MIN_EXERCISE_EVIDENCE = 2.0  # an exercise counts as matched from this much evidence
MIN_FINGERPRINTS = 40  # about six lines of code: a cell with fewer fingerprints of its own is too short to judge

Exercise = tuple[str, str]  # (assignment, grade_id)


@dataclass
class ExerciseMatch:
    """What two hand-ins (or a hand-in and a reference file) share in one exercise."""
    assignment: str
    exercise: str
    evidence: float  # the weight of the fingerprints both hold
    matched: int  # how many counted fingerprints both hold
    overlap: float  # matched / the counted fingerprints of the smaller of the two
    short: bool  # a cell of the two is too short to judge


@dataclass
class PairEvidence:
    """Everything the screen found between `first` and `second` (two students, or a student and a reference file)."""
    first: str
    second: str
    kind: str  # "students" or "reference"
    matches: list[ExerciseMatch] = field(default_factory=list)
    answered_both: int = 0  # exercises both answered (for a reference file: the student's)

    @property
    def evidence(self) -> float:
        return sum(m.evidence for m in self.matches)

    @property
    def matched(self) -> list[ExerciseMatch]:
        """The exercises that count as matched, strongest first."""
        return sorted((m for m in self.matches if m.evidence >= MIN_EXERCISE_EVIDENCE),
                      key=lambda m: (-m.evidence, m.assignment, m.exercise))

    @property
    def only_short(self) -> bool:
        """All the evidence comes from one cell too short to judge."""
        matched = self.matched
        return len(matched) == 1 and matched[0].short

    @property
    def threshold(self) -> float:
        return FLAG_EVIDENCE if self.kind == "students" else FLAG_REFERENCE_EVIDENCE

    @property
    def flagged(self) -> bool:
        return self.evidence >= self.threshold and bool(self.matched) and not self.only_short

    def sort_key(self):
        return (-round(self.evidence, 6), self.first, self.second)


def too_short(fingerprint: Fingerprint) -> bool:
    return len(fingerprint.hash_idx) < MIN_FINGERPRINTS


def _match(exercise: Exercise, first: Fingerprint, second: Fingerprint, common: int, evidence: float
           ) -> ExerciseMatch:
    smaller = min(len(first.hashes), len(second.hashes)) or 1
    return ExerciseMatch(exercise[0], exercise[1], evidence, common, common / smaller,
                         too_short(first) or too_short(second))


def student_pairs(cells: dict[Exercise, dict[str, Fingerprint]], holding: dict[Exercise, dict[int, int]],
                  weighted: bool = True) -> list[PairEvidence]:
    """Every pair of students with evidence, ranked (strongest first, then by name). `cells` holds each exercise's
    fingerprints by student, shared code already set aside; `holding` how many students hold each fingerprint.
    With `weighted` off, every shared fingerprint weighs 1 (the plain fingerprint tool)."""
    pairs: dict[tuple[str, str], PairEvidence] = {}
    answered: dict[tuple[str, str], int] = defaultdict(int)
    for exercise in sorted(cells):
        by_student = cells[exercise]
        students = sorted(by_student)
        for pair in itertools.combinations(students, 2):
            answered[pair] += 1
        index: dict[int, list[str]] = defaultdict(list)
        for student in students:
            for value in by_student[student].hashes:
                index[value].append(student)
        evidence: dict[tuple[str, str], float] = defaultdict(float)
        common: dict[tuple[str, str], int] = defaultdict(int)
        for value, who in index.items():
            if len(who) < 2:
                continue
            weight = shared_code.pair_weight(holding[exercise][value]) if weighted else 1.0
            for pair in itertools.combinations(who, 2):
                evidence[pair] += weight
                common[pair] += 1
        for pair in sorted(evidence):
            found = pairs.setdefault(pair, PairEvidence(pair[0], pair[1], "students"))
            found.matches.append(_match(exercise, by_student[pair[0]], by_student[pair[1]], common[pair],
                                        evidence[pair]))
    for pair, found in pairs.items():
        found.answered_both = answered[pair]
    return sorted(pairs.values(), key=PairEvidence.sort_key)


def reference_matches(cells: dict[Exercise, dict[str, Fingerprint]], holding: dict[Exercise, dict[int, int]],
                      references: dict[Exercise, dict[str, Fingerprint]], weighted: bool = True
                      ) -> list[PairEvidence]:
    """Every student's evidence against every reference file, ranked. `references` holds, for each exercise, the
    reference files' fingerprints with that exercise's boilerplate and shared code set aside."""
    found: dict[tuple[str, str], PairEvidence] = {}
    answered: dict[str, int] = defaultdict(int)
    for exercise in sorted(cells):
        index: dict[int, list[str]] = defaultdict(list)
        for name, reference in sorted(references.get(exercise, {}).items()):
            for value in reference.hashes:
                index[value].append(name)
        for student, cell in sorted(cells[exercise].items()):
            answered[student] += 1
            evidence: dict[str, float] = defaultdict(float)
            common: dict[str, int] = defaultdict(int)
            for value in cell.hashes:
                for name in index.get(value, ()):
                    evidence[name] += shared_code.reference_weight(holding[exercise][value]) if weighted else 1.0
                    common[name] += 1
            for name in sorted(evidence):
                pair = found.setdefault((student, name), PairEvidence(student, name, "reference"))
                pair.matches.append(_match(exercise, cell, references[exercise][name], common[name],
                                           evidence[name]))
    for (student, _), pair in found.items():
        pair.answered_both = answered[student]
    return sorted(found.values(), key=PairEvidence.sort_key)
