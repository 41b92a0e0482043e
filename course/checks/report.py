"""How a visible check talks to the student: one line per passed step, a short clear failure."""
from __future__ import annotations

import json
import os
from typing import Callable

RECORDS_VARIABLE = "COURSE_GRADING_RECORDS"  # set only in a kernel graded by `python -m autograder grade`


class CheckFailed(AssertionError):
    """A check found a wrong result. Shown in the notebook as its message alone, without a traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"\x1b[1;31m✘ {self.args[0]}\x1b[0m"]


class NotWrittenYet(CheckFailed):
    """The exercise still raises the stub's NotImplementedError."""


def fail(message: str) -> None:
    raise CheckFailed(message)


def run_steps(title: str, steps: list[tuple[str, Callable[[], None]]], done: str = "all checks passed.") -> None:
    """Run the steps of one check in order and print a line for each.

    The first failing step stops the check: a `CheckFailed` is re-raised with its teaching message,
    and any other exception from the student's code propagates unchanged so its traceback points at
    their line. An exercise that still raises the stub's `NotImplementedError` prints "not written
    yet" and lets the notebook run on; under nbgrader (validate or autograde) it fails instead.
    """
    for label, step in steps:
        try:
            step()
        except NotImplementedError as exc:
            if str(exc):  # torch's own NotImplementedErrors say why; the stub's is bare
                raise
            message = (f"{title}: not written yet. Replace `raise NotImplementedError()` in its cell "
                       "with your code, run that cell, then run this check again.")
            if os.environ.get("NBGRADER_EXECUTION"):  # graded or validated: an unwritten exercise fails
                raise NotWrittenYet(message) from None
            print(f"⏳ {message}")  # working interactively: say what is left, let "Run All" go on
            return
        except CheckFailed as exc:
            raise CheckFailed(f"{title}: {label}\n  {exc.args[0]}") from None
        except Exception:
            print(f"✘ {title}: {label} raised an error (see the traceback below)")
            raise
        print(f"✔ {title}: {label}")
    if done:
        print(f"🎉 {title}: {done}")
        _record_passed(title)


def _record_passed(title: str) -> None:
    """Tell the grader this check ran as written and passed: a check cell whose function was replaced or skipped
    earns nothing."""
    folder = os.environ.get(RECORDS_VARIABLE)
    if folder:
        with open(os.path.join(folder, "checks.jsonl"), "a", encoding="utf-8") as log:
            log.write(json.dumps({"passed": title}) + "\n")



def assert_written(title: str, attempt: Callable[[], object]) -> None:
    """Fail (under grading) or say what is left (interactively) while `attempt()` hits the stub.

    The hidden-test cells call this in their visible part, so an unanswered notebook fails every
    graded cell and `nbgrader validate --invert` can prove that no stub earns a point.
    """
    run_steps(title, [("is written; its hidden tests run when your notebook is graded", attempt)], done="")
