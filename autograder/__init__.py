"""Instructor-only tools: hidden reference, known mistakes, fixtures, hidden tests, and the CLI.

Never shipped to students: the `course` wheel excludes this package, and tests prove that no
reference code reaches `course/` or `release/`.
"""
