"""nbgrader's Execute for this course directory: a hand-in's code runs only inside one of the course's grading jobs.

Plain `nbgrader autograde` and formgrader's *Autograde* button would start the notebook's kernel as whoever runs them
(the grader's account on the hub, an instructor, root), with the solutions, the gradebook and every hand-in in view,
outside the box (autograder.box) and the guard. The course's nbgrader_config.py puts ExecuteInAJob in Autograde's
place for Execute, so those two refuse before the notebook's first cell and say what to run instead, while the
course's own jobs (autograder.grading.autograde_process, which calls `entered_job` in each job before nbgrader starts)
run as they always did. `--ExecuteInAJob.student_code_runs_as_me=True` runs plain nbgrader anyway, as its name says.
"""
from __future__ import annotations

from nbgrader.preprocessors import Execute
from traitlets import Bool

_in_a_job = False


def entered_job() -> None:
    """This process is one of the course's grading jobs (its kernel goes into its box, or runs unboxed only where the
    grader said --student-code-runs-as-me)."""
    global _in_a_job
    _in_a_job = True


class NotInAGradingJob(RuntimeError):
    pass


def refusal(assignment: str) -> str:
    return (f"This would run the hand-in's code as you, outside the box a graded notebook runs in: nbgrader's own "
            f"autograde (the command, and formgrader's Autograde button) cannot box it. Grade with "
            f"`python -m autograder grade {assignment}` instead (in a terminal of the course directory; on the class "
            f"hub, formgrader's File > New > Terminal), which boxes every notebook and keeps your manual grades. To run "
            f"nbgrader's own autograde unboxed anyway, add {UNBOXED_OPTION}.")


def autograde_preprocessors() -> list:
    """nbgrader's Autograde preprocessors (its default list) with Execute replaced by ExecuteInAJob."""
    from nbgrader.converters import Autograde
    preprocessors = Autograde.class_traits()["autograde_preprocessors"].default()
    return [ExecuteInAJob if preprocessor is Execute else preprocessor for preprocessor in preprocessors]


class ExecuteInAJob(Execute):
    """nbgrader's Execute, which refuses (NotInAGradingJob, before any cell runs) outside a grading job."""

    student_code_runs_as_me = Bool(False, help="Run the hand-in's code as this account, outside any box (nbgrader's "
                                   "own autograde, unguarded): it can read and change everything you can.").tag(
                                       config=True)

    def preprocess(self, nb, resources, *args, **kwargs):
        if not (_in_a_job or self.student_code_runs_as_me):
            assignment = (resources.get("nbgrader") or {}).get("assignment", "<assignment>")
            raise NotInAGradingJob(refusal(assignment))
        return super().preprocess(nb, resources, *args, **kwargs)


# nbgrader's command-line option that runs its own autograde unboxed (the tests' unguarded control, the grading bench)
UNBOXED_OPTION = f"--{ExecuteInAJob.__name__}.student_code_runs_as_me=True"
