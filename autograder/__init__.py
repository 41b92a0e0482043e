"""The instructor's package: a hand-in comes in, is graded, and its results go out.

    cli, __main__   `python -m autograder <command>`: the instructor's command line
    paths           where things live in the course directory
    box/            the box a graded notebook runs in: bubblewrap's namespaces, a user id of its own, a read-only
                    view of only what it needs, bounded memory, processes, disk and time; control groups
    nbgrader_run    nbgrader's own commands, run with this environment's tools

    authoring/      what the course's authors write: reference solutions, hidden tests, known mistakes, the
                    visible checks' fixtures, and the builds of the reference and the release
    handins/        what a hand-in is and how it arrives: its one home, its checks before grading, zip and exchange
                    collection
    results/        what goes back: scores (late policy, extensions), feedback pages and their release, the report
    grading/        the engine: grading jobs, warm kernels, the sandbox and the guard, the ledger, the gradebook
                    merge, the grader's verdicts, the Dask path
    demo/ hub/ lms/ similarity/
                    what is built on them: the demo class, the class hub, grades to the LMS, the similarity screen

A package imports only downward: paths, box and nbgrader_run at the bottom; authoring and handins, which use neither
each other nor anything above; results, which uses them; grading, which uses all three; and demo, hub, lms and
similarity, which use what they need below but never each other; the command line over all. No two modules import
each other, and the student package `course` never imports this one. pyproject.toml's [tool.importlinter]
contracts say so, and `make test` checks them (tests/test_layers.py).

Never shipped to students: the `course` wheel excludes this package, and tests prove that no reference code reaches
`course/` or `release/`.
"""
