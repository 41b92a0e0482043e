"""How a visible check talks to the student: one line per passed step, a short clear failure, and when the
student's own code raises, which call raised, with what, and on which of their lines (`course.checks.crash`)."""
from __future__ import annotations

import json
import os
import warnings
from contextlib import contextmanager
from typing import Callable

from course.checks.crash import describe_crash_in_check, student_traceback

RECORDS_VARIABLE = "COURSE_GRADING_RECORDS"  # set only in a kernel graded by `python -m autograder grade`


class CheckFailed(AssertionError):
    """A check found a wrong result. Shown in the notebook as its message alone, without a traceback; when the
    failure is an error the student's code raised (its `__cause__`), that error's traceback follows, from the
    student's outermost call on, for their own debugging."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        lines = [f"\x1b[1;31m✘ {self.args[0]}\x1b[0m"]
        if self.__cause__ is not None and not isinstance(self.__cause__, CheckFailed):
            lines += ["", "\x1b[2mThe traceback of that error, from your call on:\x1b[0m",
                      *student_traceback(self.__cause__)]
        return lines


class NotWrittenYet(CheckFailed):
    """The exercise still raises the stub's NotImplementedError."""


def fail(message: str) -> None:
    raise CheckFailed(message)


@contextmanager
def warnings_on_stdout():
    """While inside, a warning (the student's code calling `float()` on a tensor that needs a gradient, say) is
    printed on stdout as a `⚠` line instead of on stderr: nbgrader scores a graded cell that wrote anything to
    stderr as failed, and a warning is no mistake."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            yield
        finally:
            shown = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)
            for text in shown:
                print(f"⚠ {text}")


def is_stub(exc: BaseException) -> bool:
    """An unwritten exercise: the stub's bare `NotImplementedError()` (torch's own NotImplementedErrors say why)."""
    return isinstance(exc, NotImplementedError) and not str(exc)


def run_steps(title: str, steps: list[tuple[str, Callable[[], None]]], done: str = "all checks passed.") -> None:
    """Run the steps of one check in order and print a line for each.

    The first failing step stops the check: a `CheckFailed` is re-raised with its teaching message, and any
    other exception from the student's code becomes a `CheckFailed` that names the call that raised (with its
    arguments' shapes), the error and the student's line; in a notebook the error's traceback follows it. An
    exercise that still raises the stub's `NotImplementedError` prints "not written yet" and lets the notebook
    run on; under nbgrader (validate or autograde) it fails instead.
    """
    for label, step in steps:
        try:
            with warnings_on_stdout():
                step()
        except CheckFailed as exc:
            raise CheckFailed(f"{title}: {label}\n  {exc.args[0]}") from exc.__cause__
        except Exception as exc:  # noqa: BLE001: whatever the student's code raised, said in words
            if not is_stub(exc):
                raise CheckFailed(f"{title}: {label}: {describe_crash_in_check(exc)}") from exc
            message = (f"{title}: not written yet. Replace `raise NotImplementedError()` in its cell "
                       "with your code, run that cell, then run this check again.")
            if os.environ.get("NBGRADER_EXECUTION"):  # graded or validated: an unwritten exercise fails
                raise NotWrittenYet(message) from None
            print(f"⏳ {message}")  # working interactively: say what is left, let "Run All" go on
            return
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
