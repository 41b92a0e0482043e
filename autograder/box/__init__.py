"""The box a graded notebook runs in: a stranger's code, run unattended, that can take nothing and break nothing.

    who            who a box's processes are on this machine (a user id of its own: root's range or this account's
                   subordinate ids; or this account with no capability), and the ids each box holds
    view           what a box sees: bubblewrap's arguments for its file system (read-only but for a few folders in
                   memory of bounded size)
    box            a box started (bubblewrap), gone into by the kernel's process, read out and ended
    job_namespace  the grading job's network namespace, with only loopback, where nbgrader and the kernel talk
    enter          `python -m autograder.box.enter`: a cold kernel goes into the box as a warm one does
    check          whether this machine can make a box, proven by making one
    cgroups        control groups: a box's memory and processes at once, and the class hub's tree

Every path that runs student code for a grade runs it here: `python -m autograder grade` (autograder.grading), the
Dask workers, and grading at submission on the class hub. The guard (autograder.grading.guard) stays inside the box
as the layer that names what a student tried.
"""
