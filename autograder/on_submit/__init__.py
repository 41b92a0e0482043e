"""Graded as it is handed in (issue 51): on the class hub, each hand-in is collected, graded and its result given
back to its student by a service, with no instructor step.

    policy     the instructor's policy per assignment: graded at submission or not, what a student sees before
               the due date, how many graded hand-ins and how often, when the score goes to the LMS
    queue      the hand-ins and what became of each, fair between students, kept across restarts
    service    the loop: inbound/ watched, hand-ins collected with the owner checks, graded by the engine, results
               released and sent as the policy says
    web        the pages: a student's own results, the instructor's queue
    __main__   `python -m autograder.on_submit`, which the hub starts as the grader

Uses: grading, results, handins and paths (lms push runs as its own command). Never hub: the hub starts it with the
settings it needs on its command line.
"""
