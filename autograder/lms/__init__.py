"""Grades back to the learning platform (issue 30).

`python -m autograder lms export canvas|moodle` writes a file the LMS's own grade import takes, built on the
instructor's roster export from that LMS; `lms push` posts the scores over LTI 1.3 Assignment and Grade Services;
`lms keys` makes the key pair that an LMS administrator registers for the push. Every score is `score_of`'s, as the
gradebook holds it now (a stale late penalty is refused), in the notebook's own column, on its own scale.

One job per module: `marks` (what the gradebook says, per student and assignment, and whether it may go),
`csv_files` (reading and writing an LMS's CSV), `roster` (who in the LMS is who in nbgrader), `columns` (which LMS
column is each notebook's, confirmed once and kept), `canvas` and `moodle` (their layouts), `keys`, `lti_config`,
`lti_client` (tokens and requests), `lti_ledger` (what was sent), `lti_push`, `term` (last term's LMS files, moved by
`make new-term`), and `commands` (the command line).
"""
