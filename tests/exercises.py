"""How a test finds an exercise's visible check and hidden test from its public name."""
import importlib

from course.about import NOTEBOOKS, snake_case

MUTANT_MODULES = list(NOTEBOOKS.values())


def visible_check(exercise: str):
    return getattr(importlib.import_module("course.checks"), f"check_{snake_case(exercise)}")


def hidden_test(module: str, exercise: str):
    return getattr(importlib.import_module(f"autograder.authoring.hidden.{module}"), f"test_{snake_case(exercise)}")


def module_of(exercise: str) -> str:
    for module in MUTANT_MODULES:
        mistakes = importlib.import_module(f"tests.mutants.{module}")
        if any(e == exercise for e, _ in mistakes.MUTANTS + mistakes.VARIANTS):
            return module
    raise LookupError(exercise)
