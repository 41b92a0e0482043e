"""The grading engine: every hand-in ends with a grade, its reason, or a clear word why not.

    engine              `python -m autograder grade`: the class's hand-ins in parallel and resumably, then
                        feedback, the late policy and the report
    job                 one student's notebook of one assignment: nbgrader autograde in a sandboxed process of its own
    autograde_process   that process, forked from a warm server with nbgrader already imported
    warm_server         what the server does once, so that no job does it again
    warm_kernel         a job's kernel, forked with torch and ipykernel imported, gone into its box
    sandbox             nothing a job starts outlives it; its memory capped; no network
    guard/              the audit hook in a graded kernel: what student code may not read, write or start
    verify              the grader's own verdict on a graded notebook: hidden tests judged here, not in the kernel
    tamper_scan         code in a hand-in that tampers with grading, named for the instructor
    ledger              one line per finished grade: a killed run resumes where it stopped
    gradebook_merge     a job's private gradebook merged into the class's
    execute_timeouts    how long nbgrader waits on a kernel, for grading and Validate alike
    cluster             the same jobs as tasks on a Dask cluster

Each job's kernel runs in a box of its own (autograder.box).

Uses: paths, box, nbgrader_run, handins, results and authoring.
"""
