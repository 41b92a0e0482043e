"""Code most of the class shares is set aside.

A short exercise has few ways to be written: ten honest students writing the textbook idiom of a six-line
attention function all hold the same fingerprints, and a plain fingerprint tool scores each of their pairs 1.00, as
high as a renamed copy. So, for each exercise, a fingerprint held by at least `SHARED_FRACTION` of the students who
answered it (and by at least `SHARED_MIN_STUDENTS`, so that three copies in a class of five are not taken for the
class's idiom) is set aside: it is evidence of nothing. What fewer share still counts, measured against what the
class's pairs commonly share in that exercise (`scoring`).
"""
from __future__ import annotations

import math
from collections import Counter

SHARED_FRACTION = 0.5
SHARED_MIN_STUDENTS = 5


def holders(hash_sets: list[set[int]]) -> Counter:
    """hash -> how many of the students' fingerprint sets hold it."""
    counts: Counter = Counter()
    for hashes in hash_sets:
        counts.update(hashes)
    return counts


def shared_threshold(students: int) -> int:
    """How many of `students` must hold a fingerprint for it to be set aside as the class's shared code."""
    return max(SHARED_MIN_STUDENTS, math.ceil(SHARED_FRACTION * students))


def shared_fingerprints(counts: Counter, students: int) -> set[int]:
    """The fingerprints set aside: held by at least `shared_threshold(students)` students."""
    threshold = shared_threshold(students)
    return {value for value, count in counts.items() if count >= threshold}
