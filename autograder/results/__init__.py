"""What goes back to students and instructors once a hand-in is graded.

    scores            a student's score for an assignment: the one number every output gives (late policy included)
    extension         `python -m autograder extend`: more time for one student, in nbgrader's gradebook
    feedback          nbgrader's preprocessor for feedback pages: a failed hidden test shows its message only
    feedback_page     the feedback page a student reads, and the page of a hand-in that could not be graded; the
                      pages the gradebook no longer matches (`stale_pages`)
    release_feedback  `python -m autograder release-feedback`: feedback through the exchange, or the pages to send;
                      never a page the gradebook no longer matches
    report            the class report: pass rates, named mistakes, the spread of scores
    notes             how the grader's notes on a hand-in begin, which the report reads
    templates/        the feedback page's template

Uses: paths, nbgrader_run, handins and authoring (the known mistakes the report names). Never grading.
"""
