"""The evidence against each pair, and whether a person should look at it.

Each exercise gives a pair at most 1 (a long passage of rare code up to 1.5), and evidence adds up only as
exercises corroborate each other. An exercise is compared in both forms of the code (`canonical`): as written
(comments, names, layout, order of definitions and dead code aside) and rewritten into one canonical form (API
forms, temporaries, loops and the rest made one too).
In each form, two things weigh, whichever weighs more:
- rare code shared (`rare_evidence`): the share of the smaller answer's own code that the other holds, every
  fingerprint weighed by how rare it is in the class (held by two students: 1; by `h`: 1 / (h - 1)), in full from
  `FULL_RARE` such fingerprints. Two students who write what others write too share little that is rare. A long
  passage of rare code is more than one exercise's worth: beyond `LONG_RARE` fingerprints, each `FULL_RARE` more
  adds one more, up to `MAX_EXERCISE` (one exercise alone is never a flag);
- the same answer, which nobody else wrote (`same_evidence`): how much of the larger answer the two share, to the
  power `SAME_POWER` (all but a line or two), in full from `FULL_SHARED` fingerprints, divided by one more than the
  classmates whose overlap with either of them comes within `CROWD_MARGIN` of theirs. In the canonical form this
  weighs `CANONICAL_SAME` only: honest students who chose the same steps often write the same canonical code;
the larger, scaled by what the shorter answer's student wrote (`fingerprints.written_tokens`: none from
`LENGTH_FROM` tokens, in full from `LENGTH_FULL`), less `EXERCISE_FLOOR` (what honest pairs share here and there).
A pair's evidence is the sum over the exercises both answered, in "exercises' worth", and one more term,
corroboration: in how many exercises the two wrote the same canonical answer (`TWIN_SHARE` of the smaller, at least
`TWIN_MIN_SHARED` fingerprints), beyond what the two students' own rates of such twins with their other classmates
make likely (`expected + TWIN_SPREAD x sqrt(expected) + 1`), each exercise beyond it worth `TWIN_WORTH`: a copy
rewritten by hand is the same canonical code in most exercises, two honest students in a few.

A pair is flagged from the class's far-out fence (Tukey: third quartile + 3 x the interquartile range of every
pair's evidence, pairs with none included), never below `CORROBORATED`, 1.6 exercises' worth; it is worth a look
from the inner fence (1.5 x), never below `WORTH_A_LOOK`. Each student is matched against each `--reference` file
with the rare-code measure (a fingerprint the file and `h` students hold weighs 1 / h), listed apart and flagged by
the same rule over the student-file pairs. bench/README.md gives the figures on the corpora of tests/.
"""
from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from autograder.similarity.fingerprints import Fingerprint

FULL_RARE = 20.0  # rarity-weighted shared fingerprints from which rare code counts in full
LONG_RARE = 30.0  # ... beyond which it counts for more (bench/README.md's honest pairs: 31 at most, copies to 180)
MAX_EXERCISE = 1.4  # the most one exercise's rare code can weigh (less the floor: 1.5 exercises' worth, never a flag alone)
FULL_SHARED = 12  # shared fingerprints from which the same answer counts in full
SAME_POWER = 4  # the same answer: the share of the larger answer both hold, to this power
CROWD_MARGIN = 0.2  # classmates this close to a pair's overlap with either of them make their answer common
CANONICAL_SAME = 0.3  # what the same canonical answer (not the same written one) weighs
LENGTH_FROM, LENGTH_FULL = 10, 130  # written code tokens: an exercise weighs nothing below, in full from
EXERCISE_FLOOR = 0.2  # an exercise's evidence below this is what honest pairs share here and there
TWIN_SHARE = 0.9  # two answers are canonical twins when the other holds this share of the smaller ...
TWIN_MIN_SHARED = 10  # ... and at least this many fingerprints
TWIN_SPREAD = 3.0  # twins beyond expected + this many standard deviations (Poisson) + 1 corroborate
TWIN_WORTH = 1.0  # what each of those twins is worth: an exercise's worth
CORROBORATED = 1.6  # the least evidence flagged: one exercise wholly alike and most of another
WORTH_A_LOOK = 1.0  # the least evidence worth a look: one exercise's worth
FENCE, INNER_FENCE = 3.0, 1.5  # Tukey's fences: Q3 + FENCE x IQR of the class's evidence
MIN_EXERCISE_EVIDENCE = 0.05  # an exercise is listed as matched from this much evidence
FORMS = ("as written", "rewritten")  # the two forms compared, as the pages name them

Exercise = tuple[str, str]  # (assignment, grade_id)


@dataclass
class ExerciseMatch:
    """What two hand-ins (or a hand-in and a reference file) share in one exercise."""
    assignment: str
    exercise: str
    evidence: float  # 0 to 1: this exercise's part of the pair's evidence
    matched: int  # how many fingerprints both hold (in the form that weighed most)
    overlap: float  # the share of the smaller answer the other holds, in that form
    short: bool  # the shorter answer is short in what its student wrote: it counts for less
    form: str = FORMS[0]  # the form that weighed most: as written, or rewritten into the canonical form


@dataclass
class PairEvidence:
    """Everything the screen found between `first` and `second` (two students, or a student and a reference file)."""
    first: str
    second: str
    kind: str  # "students" or "reference"
    matches: list[ExerciseMatch] = field(default_factory=list)
    answered_both: int = 0  # exercises both answered (for a reference file: the student's)
    twins: int = 0  # exercises with the same canonical answer
    expected_twins: float = 0.0  # how many the two students' rates of twins in the class make likely
    threshold: float = CORROBORATED  # the class's flag threshold (`flag_threshold`)
    look_threshold: float = WORTH_A_LOOK  # the class's worth-a-look threshold

    @property
    def corroboration(self) -> float:
        """What the canonical twins beyond the likely add (see the module's docstring)."""
        likely = self.expected_twins + TWIN_SPREAD * math.sqrt(self.expected_twins) + 1
        return TWIN_WORTH * max(0.0, self.twins - likely)

    @property
    def evidence(self) -> float:
        return sum(m.evidence for m in self.matches) + self.corroboration

    @property
    def matched(self) -> list[ExerciseMatch]:
        """The exercises that count as matched, strongest first."""
        return sorted((m for m in self.matches if m.evidence >= MIN_EXERCISE_EVIDENCE),
                      key=lambda m: (-m.evidence, m.assignment, m.exercise))

    @property
    def flagged(self) -> bool:
        return self.evidence >= self.threshold

    @property
    def worth_a_look(self) -> bool:
        """Weaker evidence than a flag, but more than the class's pairs commonly have: not flagged."""
        return not self.flagged and self.evidence >= self.look_threshold

    def sort_key(self):
        return (-round(self.evidence, 6), self.first, self.second)


def length_weight(written: int) -> float:
    """How much an answer of `written` code tokens can weigh: 0 up to `LENGTH_FROM`, 1 from `LENGTH_FULL`."""
    return min(1.0, max(0.0, (written - LENGTH_FROM) / (LENGTH_FULL - LENGTH_FROM)))


def is_short(written: int) -> bool:
    return written < LENGTH_FULL


def rarity(holders: int) -> float:
    """What a fingerprint `holders` students hold weighs in each pair of them (1 / (holders - 1); alone: 1)."""
    return 1.0 / max(1, holders - 1)


def rare_evidence(shared: float, smaller_own: float) -> float:
    """Rare code shared: `shared` rarity-weighted fingerprints of the smaller answer's `smaller_own`."""
    share = min(1.0, shared / (smaller_own or 1.0))
    beyond = share * max(0.0, shared - LONG_RARE) / FULL_RARE  # a long passage: more than one exercise's worth
    return share * min(1.0, shared / FULL_RARE) + min(MAX_EXERCISE - 1.0, beyond)


def same_evidence(share: float, shared: int, crowd: int) -> float:
    """The same answer: `share` of the larger answer both hold, `shared` fingerprints, `crowd` classmates as close."""
    return share ** SAME_POWER * min(1.0, shared / FULL_SHARED) / (1 + crowd)


def exercise_evidence(evidence: float, written: int) -> float:
    """An exercise's part of a pair's evidence: the larger measure, scaled by length, less the floor."""
    return max(0.0, evidence * length_weight(written) - EXERCISE_FLOOR) / (1.0 - EXERCISE_FLOOR)


@dataclass
class _Form:
    """One exercise in one form of the code: every pair's two measures."""
    evidence: dict  # pair -> the larger measure
    shared: dict  # pair -> fingerprints both hold
    overlap: dict  # pair -> the share of the smaller answer the other holds
    twins: set  # pairs of canonical twins


def _compare(counted: dict[str, set[int]], same_weight: float, plain: bool = False) -> _Form:
    """Every pair's evidence in one exercise and form; `counted` holds each student's fingerprints that count. With
    `plain`, each shared fingerprint weighs 1 and nothing is measured against the class."""
    index: dict[int, list[str]] = defaultdict(list)
    for student in sorted(counted):
        for value in counted[student]:
            index[value].append(student)
    weight = {value: 1.0 if plain else rarity(len(who)) for value, who in index.items()}
    own = {s: sum(weight[v] for v in counted[s]) for s in counted}
    rare: dict[tuple[str, str], float] = defaultdict(float)
    shared: dict[tuple[str, str], int] = defaultdict(int)
    for value, who in index.items():
        for pair in itertools.combinations(who, 2):
            rare[pair] += weight[value]
            shared[pair] += 1
    both = {pair: n / (max(len(counted[pair[0]]), len(counted[pair[1]])) or 1) for pair, n in shared.items()}
    near: dict[str, list[float]] = defaultdict(list)  # each student's shares with the others, ascending
    for (first, second), share in both.items():
        near[first].append(share)
        near[second].append(share)
    for values in near.values():
        values.sort()
    evidence, overlap = {}, {}
    for pair, n in shared.items():
        crowd = 0 if plain else max(len(near[s]) - bisect.bisect_left(near[s], both[pair] - CROWD_MARGIN)
                                    for s in pair) - 1
        evidence[pair] = max(rare_evidence(rare[pair], min(own[pair[0]], own[pair[1]])),
                             same_weight * same_evidence(both[pair], n, crowd))
        overlap[pair] = n / (min(len(counted[pair[0]]), len(counted[pair[1]])) or 1)
    twins = {pair for pair, share in overlap.items() if share >= TWIN_SHARE and shared[pair] >= TWIN_MIN_SHARED}
    return _Form(evidence, shared, overlap, twins)


def flag_threshold(evidence: list[float], pairs: int, fence: float = FENCE, floor: float = CORROBORATED) -> float:
    """The class's Tukey fence over the evidence of all `pairs` (those missing from `evidence` have none), and at
    least `floor`."""
    if pairs < 4:
        return floor
    values = [0.0] * (pairs - len(evidence)) + list(evidence)
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return max(floor, third + fence * (third - first))


def _set_thresholds(found: list[PairEvidence], pairs: int) -> list[PairEvidence]:
    """The pairs with any evidence, ranked, each with the class's thresholds."""
    found = [p for p in found if p.evidence > 0]
    evidence = [p.evidence for p in found]
    threshold = flag_threshold(evidence, pairs)
    look = min(threshold, flag_threshold(evidence, pairs, INNER_FENCE, WORTH_A_LOOK))
    for pair in found:
        pair.threshold, pair.look_threshold = threshold, look
    return sorted(found, key=PairEvidence.sort_key)


def student_pairs(cells: dict[Exercise, dict[str, Fingerprint]], attributed: dict[Exercise, set[int]] | None = None,
                  relative_to_class: bool = True) -> list[PairEvidence]:
    """Every pair of students with evidence, ranked (strongest first, then by name). `cells` holds each exercise's
    fingerprints by student, shared code already set aside; `attributed` each exercise's fingerprints a reference
    file holds (they count for that file, not for the pair). With `relative_to_class` off, every shared fingerprint
    weighs 1, the same answer is not measured against classmates and twins do not corroborate (a plain fingerprint
    tool)."""
    attributed = attributed or {}
    pairs: dict[tuple[str, str], PairEvidence] = {}
    answered: dict[tuple[str, str], int] = defaultdict(int)
    twins: dict[tuple[str, str], int] = defaultdict(int)
    twinned_in: dict[tuple[str, str], set[Exercise]] = defaultdict(set)  # each pair's exercises of twins
    twin_rate: dict[str, list[tuple[int, int]]] = defaultdict(list)  # per exercise answered: (twinned, answered)
    students_all = sorted({s for by_student in cells.values() for s in by_student})
    for exercise in sorted(cells):
        by_student = cells[exercise]
        students = sorted(by_student)
        for pair in itertools.combinations(students, 2):
            answered[pair] += 1
        out = attributed.get(exercise, set())
        rewritten = _compare({s: by_student[s].hashes - out for s in students}, CANONICAL_SAME,
                             not relative_to_class)
        written = rewritten
        if all(by_student[s].surface is not None for s in students):
            written = _compare({s: by_student[s].surface.hashes - out for s in students}, 1.0, not relative_to_class)
        twinned: dict[str, int] = defaultdict(int)
        for pair in rewritten.twins:
            twins[pair] += 1
            twinned_in[pair].add(exercise)
            twinned[pair[0]] += 1
            twinned[pair[1]] += 1
        for student in students:
            twin_rate[student].append((twinned[student], len(students)))
        for pair in sorted(set(written.evidence) | set(rewritten.evidence)):
            _, form, found_in = max(((f.evidence[pair], -i, f) for i, f in enumerate((written, rewritten))
                                     if pair in f.evidence), key=lambda c: c[:2])
            form = -form
            length = min(by_student[pair[0]].written, by_student[pair[1]].written)
            found = pairs.setdefault(pair, PairEvidence(pair[0], pair[1], "students"))
            found.matches.append(ExerciseMatch(
                exercise[0], exercise[1], exercise_evidence(found_in.evidence[pair], length),
                found_in.shared[pair], found_in.overlap[pair], is_short(length), FORMS[form]))
    exercises_of: dict[str, set[Exercise]] = defaultdict(set)
    for exercise, by_student in cells.items():
        for student in by_student:
            exercises_of[student].add(exercise)
    rates = {student: dict(zip(sorted(exercises_of[student]), values)) for student, values in twin_rate.items()}
    for pair, found in pairs.items():
        found.answered_both = answered[pair]
        if relative_to_class:
            found.twins = twins[pair]
            both = exercises_of[pair[0]] & exercises_of[pair[1]]
            found.expected_twins = sum(_twin_rate(rates[s][e], e in twinned_in[pair]) for s in pair for e in both) / 2
    n = len(students_all)
    return _set_thresholds(list(pairs.values()), n * (n - 1) // 2)


def _twin_rate(twinned_answered: tuple[int, int], with_partner: bool) -> float:
    """The share of a student's other classmates (the partner left out) who wrote their canonical answer to an
    exercise: (twins, students who answered it), and whether one of those twins is the partner."""
    twinned, answered = twinned_answered
    return (twinned - with_partner) / max(1, answered - 2)


def reference_matches(cells: dict[Exercise, dict[str, Fingerprint]],
                      references: dict[Exercise, dict[str, Fingerprint]]) -> list[PairEvidence]:
    """Every student's evidence against every reference file, ranked. `references` holds, for each exercise, the
    reference files' fingerprints with that exercise's boilerplate and shared code set aside. A fingerprint the file
    and `h` students hold weighs 1 / h in each student's match with the file; both forms of the code are compared."""
    found: dict[tuple[str, str], PairEvidence] = {}
    answered: dict[str, int] = defaultdict(int)
    files = sorted({name for by_file in references.values() for name in by_file})
    for exercise in sorted(cells):
        best: dict[tuple[str, str], ExerciseMatch] = {}
        for form in range(len(FORMS)):
            def hashes(fingerprint: Fingerprint) -> set[int]:
                return (fingerprint.surface if form == 0 and fingerprint.surface else fingerprint).hashes
            index: dict[int, list[str]] = defaultdict(list)
            for name, reference in sorted(references.get(exercise, {}).items()):
                for value in hashes(reference):
                    index[value].append(name)
            holders: dict[int, int] = defaultdict(int)
            for cell in cells[exercise].values():
                for value in hashes(cell):
                    holders[value] += 1
            for student, cell in sorted(cells[exercise].items()):
                shared: dict[str, float] = defaultdict(float)
                common: dict[str, int] = defaultdict(int)
                for value in hashes(cell):
                    for name in index.get(value, ()):
                        shared[name] += 1.0 / holders[value]
                        common[name] += 1
                own = sum(1.0 / holders[h] if h in index else rarity(holders[h]) for h in hashes(cell))
                for name in sorted(common):
                    evidence = exercise_evidence(rare_evidence(shared[name], own), cell.written)
                    key = (student, name)
                    if key not in best or evidence > best[key].evidence:
                        best[key] = ExerciseMatch(exercise[0], exercise[1], evidence, common[name],
                                                  min(1.0, common[name] / (len(hashes(cell)) or 1)),
                                                  is_short(cell.written), FORMS[form])
        for student in cells[exercise]:
            answered[student] += 1
        for key, match in sorted(best.items()):
            found.setdefault(key, PairEvidence(key[0], key[1], "reference")).matches.append(match)
    for (student, _), pair in found.items():
        pair.answered_both = answered[student]
    return _set_thresholds(list(found.values()), len(answered) * len(files))
