"""The guard of a graded kernel: what student code may not do while `python -m autograder grade` runs it.

`policy.py` holds the rules and installs them as a Python audit hook (PEP 578), which no code can remove once
added; `site/sitecustomize.py` installs it when a kernel starts, before any cell runs. Blocked: reading the
grader's files (the reference, the gradebook, other students' work), writing outside the notebook's own
folder, the network, and starting processes. Each blocked attempt raises PermissionError in the student's cell
and is written to a log the grader reads, so the report can flag it.
"""
