"""What the course's authors write, and the builds made from it.

    reference/        the hidden reference solutions, generated from the source notebooks' solution cells
    build_reference   `python -m autograder reference`: generates reference/ (never edited by hand)
    hidden/           what the hidden test cells call: fresh inputs, observations the grader judges
    mistakes/         known mistakes: plausible wrong implementations, each with the message that teaches its fix
    fixtures/         `python -m autograder fixtures`: the visible checks' fixtures in course/fixtures/
    release           `python -m autograder release`: the student versions in release/ (nbgrader generate_assignment)

Uses: paths, nbgrader_run, and the student package `course`. Nothing else of autograder.
"""
