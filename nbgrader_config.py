"""nbgrader settings for this course. The repository root is the course directory."""
import os

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import ClearHiddenTests, GetGrades

from autograder.grading.execute_in_a_job import autograde_preprocessors
from autograder.grading.execute_timeouts import EXECUTE_TIMEOUTS
from autograder.results.feedback import CourseScore, ShortenHiddenTestTracebacks
from autograder.results.feedback_page import FeedbackPage

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "transformers-from-scratch"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".DS_Store"]

# The kernel, named explicitly: the `python3` kernel of the environment that runs nbgrader.
c.Execute.kernel_name = "python3"
# How long to wait on it, in grading and Validate alike, on a loaded machine too (autograder/grading/execute_timeouts.py).
for name, seconds in EXECUTE_TIMEOUTS.items():
    setattr(c.Execute, name, seconds)
c.Execute.interrupt_on_timeout = True
# A hand-in's code runs only in the course's own grading jobs, each notebook in its box (autograder/box/): nbgrader's own
# autograde, the command and formgrader's Autograde button, refuses and says to run `python -m autograder grade`.
c.Autograde.autograde_preprocessors = autograde_preprocessors()

# nbgrader gives 0 points to a test cell with anything on stderr: under nbgrader every notebook's set-up cell has the
# kernel show stderr as stdout (course/graded_output.py), in autograde and validate alike, so no filter is needed here.

# A graded cell a student deleted comes back from the source version instead of being lost.
c.OverwriteCells.add_missing_cells = True

# Feedback pages show each test's result, never the source of the hidden tests (nor in tracebacks).
c.GenerateFeedback.preprocessors = [GetGrades, CourseScore, CSSHTMLHeaderPreprocessor, ShortenHiddenTestTracebacks,
                                    ClearHiddenTests]
# ... on a page a student can read anywhere: mathematics as MathML (no MathJax from the network), long output lines
# wrapped at the page's edge (autograder/results/feedback_page.py).
c.GenerateFeedback.exporter_class = FeedbackPage

# Keep feedback and autograded copies small.
c.LimitOutput.max_lines = 500
c.LimitOutput.max_traceback = 60

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
