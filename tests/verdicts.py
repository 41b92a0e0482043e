"""Issue 25.2: does a check's pass agree with the grader's verdict? Every mutant and correct variant of
tests/mutants and every known mistake of autograder/authoring/mistakes runs through both the visible check
(`course.checks.check_<exercise>`) and the hidden test (`autograder.authoring.hidden.<module>.test_<exercise>`), and each
case is one `Verdict`. A disagreement is a case where one side passes and the other fails.

`python -m tests.verdicts` prints the audit as a Markdown table (disagreements first; `--all` for every case).
"""
from __future__ import annotations

import contextlib
import importlib
import io
import sys
from dataclasses import dataclass

from autograder.authoring.mistakes import for_exercise
from course.device import available_devices
from tests.exercises import MUTANT_MODULES, hidden_test, visible_check


@dataclass(frozen=True)
class Verdict:
    module: str
    exercise: str
    kind: str  # "variant", "mutant" or "known mistake"
    name: str
    check: str | None  # the check's failure, None when it passed
    hidden: str | None  # the hidden test's failure, None when it passed
    closing: str  # the check's last printed line when it passed ("🎉 ..."), else ""

    @property
    def agree(self) -> bool:
        return (self.check is None) == (self.hidden is None)

    @property
    def key(self) -> tuple[str, str]:
        return self.exercise, self.name


def _run(call) -> tuple[str | None, str]:
    """(the failure of `call()` or None, the last line it printed), its printing kept off the screen."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            call()
    except Exception as exc:  # noqa: BLE001: any failure loses the cell's points
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", ""
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    return None, lines[-1] if lines else ""


def cases():
    """(module, exercise, kind, implementation) for every listed mutant, variant and known mistake. A mutant that only a
    second device can tell from a correct implementation (NEEDS_SECOND_DEVICE) is left out where the CPU is the only
    device: there it is a correct implementation, and tests/test_mutants.py holds it to that."""
    one_device = len(available_devices()) < 2
    for module in MUTANT_MODULES:
        listing = importlib.import_module(f"tests.mutants.{module}")
        device_only = getattr(listing, "NEEDS_SECOND_DEVICE", set())
        for exercise, impl in listing.VARIANTS:
            yield module, exercise, "variant", impl
        for exercise, impl in listing.MUTANTS:
            if not (one_device and impl in device_only):
                yield module, exercise, "mutant", impl
        for exercise in dict.fromkeys(e for e, _ in listing.MUTANTS + listing.VARIANTS):
            for known in for_exercise(exercise):
                yield module, exercise, "known mistake", known.impl


def verdict(module: str, exercise: str, kind: str, impl) -> Verdict:
    check, closing = _run(lambda: visible_check(exercise)(impl))
    hidden, _ = _run(lambda: hidden_test(module, exercise)(impl))
    return Verdict(module, exercise, kind, impl.__name__, check, hidden, closing)


def audit(only: set[str] | None = None) -> list[Verdict]:
    """Every case's verdicts (of the exercises in `only`, when given)."""
    return [verdict(*case) for case in cases() if only is None or case[1] in only]


def _cell(failure: str | None) -> str:
    return "pass" if failure is None else "FAIL: " + failure.replace("|", "/")[:150]


def table(verdicts: list[Verdict], everything: bool = False) -> str:
    rows = [v for v in verdicts if everything or not v.agree]
    lines = ["| exercise | implementation | kind | check | hidden test | check's closing line |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {v.exercise} | {v.name} | {v.kind} | {_cell(v.check)} | {_cell(v.hidden)} | {v.closing} |"
              for v in sorted(rows, key=lambda v: (v.agree, v.module, v.exercise, v.kind, v.name))]
    disagreements = sum(not v.agree for v in verdicts)
    return "\n".join(lines) + f"\n\n{disagreements} disagreements in {len(verdicts)} cases.\n"


if __name__ == "__main__":
    exercises = {a for a in sys.argv[1:] if not a.startswith("--")} or None
    found = []
    for case in cases():
        if exercises is None or case[1] in exercises:
            found.append(verdict(*case))
            print(("  " if found[-1].agree else "≠ ") + table([found[-1]], everything=True).splitlines()[2],
                  file=sys.stderr, flush=True)
    print(table(found, everything="--all" in sys.argv))
