"""What a hand-in is and how it arrives.

    handin            a student's hand-in: the real files under submitted/<student>/<assignment>/, never what a
                      link there points at; staged copies for grading
    preflight         a handed-in notebook looked at before nbgrader runs it: repaired where it can be, reported
    zip_collect       nbgrader zip_collect that never follows a link (hand-ins downloaded from an LMS)
    exchange_archive  `make new-term`'s part in the exchange: last term's hand-ins and feedback moved aside

(Collect from the exchange on the class hub, which checks each hand-in's owner, is autograder.hub.owned_collect.)

Uses: paths and nbgrader_run. Nothing else of autograder.
"""
