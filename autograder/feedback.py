"""nbgrader preprocessor for feedback pages: a failed hidden test shows its message, not its source.

nbgrader's ClearHiddenTests empties the hidden region of a cell's source, but the traceback of a
failed hidden test still quotes the lines around the failure, hidden ones included. This keeps only
the last line of such tracebacks (`HiddenTestFailed: ...`), which says what went wrong: a value that differs, or,
when the student's code raised, the call that raised with its arguments' shapes, the error and the student's line
(`autograder.hidden.observe.observe_or_explain`).
"""
from nbgrader.preprocessors import NbGraderPreprocessor


class ShortenHiddenTestTracebacks(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and "BEGIN HIDDEN TESTS" in cell.source:
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources
