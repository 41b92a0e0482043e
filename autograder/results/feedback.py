"""nbgrader preprocessor for feedback pages: a failed hidden test shows its message, not its source.

nbgrader's ClearHiddenTests empties the hidden region of a cell's source, but the traceback of a
failed hidden test still quotes the lines around the failure, hidden ones included. This keeps only
the last line of such tracebacks (`HiddenTestFailed: ...`), which says what went wrong: a value that differs, or,
when the student's code raised, the call that raised with its arguments' shapes, the error and the student's line
(`autograder.authoring.hidden.observe.observe_or_explain`).
"""
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.results.feedback_page import gradebook_state
from autograder.results.scores import score_of


class ShortenHiddenTestTracebacks(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and "BEGIN HIDDEN TESTS" in cell.source:
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class CourseScore(NbGraderPreprocessor):
    """After nbgrader's GetGrades: the page's score is the course's one number (autograder.results.scores.score_of, the
    same as grades.csv and the grade command's table); the page says which written answers are not graded yet (one
    handed in again after it was graded with its earlier answer's mark) and carries the record of the gradebook it was
    made from (`gradebook_state`), by which a page the gradebook no longer matches is found (`stale_pages`)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            score = score_of(gb, info["assignment"], info["student"])
            info["gradebook_state"] = gradebook_state(gb, info["assignment"], info["student"])
        if score is not None:
            info["score"], info["max_score"], info["pending"] = score.total, score.max_score, score.pending
            info["score_text"] = score.text()
            info["waiting"] = [{"cell": w.cell, "max_score": w.max_score, "earlier": w.earlier}
                               for w in score.waiting if w.notebook == info["notebook"]]
        return nb, resources
