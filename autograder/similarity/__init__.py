"""`python -m autograder similarity`: which solutions of a class look copied, from each other or from public code.

Evidence for a person to review, never a verdict. The steps, one module each:

- `collect`: the solution cells of every hand-in, by grade_id, read through `autograder.handins.handin` (a link is never
  followed), the release notebook's code (boilerplate) and the files of `--reference` folders;
- `fingerprints`: winnowing over normalised tokens, by the `copydetect` library (its tokeniser, its winnowing, its
  matching), with a k-gram hash that does not depend on Python's hash seed;
- `shared_code`: fingerprints that most of the class holds are set aside;
- `scoring`: the evidence of every pair of students (and of every student against every reference file), at most 1
  an exercise, measured against what the class's pairs share, summed over exercises, and which pairs to read;
- `table` (terminal table and CSV) and `pages` (one offline HTML page per flagged pair, side by side);
- `screen`: the whole screen, from a course folder to the files it writes.
"""
