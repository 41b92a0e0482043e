"""Known mistakes: plausible wrong implementations, each with the message that teaches its fix.

The fixture generator stores each mistake's output on the fixture inputs (its fingerprint), so the
visible checks can name the mistake without shipping its code. tests/mutants use the same list and
add mistakes the feedback does not name.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Mistake:
    exercise: str  # the exercise's public name, e.g. "positional_encoding"
    id: str
    message: str
    impl: Callable


REGISTRY: dict[str, list[Mistake]] = {}


def mistake(exercise: str, message: str):
    """Register the decorated function or class as a known mistake in `exercise`."""
    def register(impl):
        REGISTRY.setdefault(exercise, []).append(Mistake(exercise, impl.__name__, message, impl))
        return impl
    return register


def all_mistakes() -> list[Mistake]:
    """Every known mistake of every notebook."""
    from course.about import NOTEBOOKS
    for module in NOTEBOOKS.values():
        importlib.import_module(f"autograder.authoring.mistakes.{module}")
    return [m for mistakes in REGISTRY.values() for m in mistakes]


def for_exercise(exercise: str) -> list[Mistake]:
    return [m for m in all_mistakes() if m.exercise == exercise]
