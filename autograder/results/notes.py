"""How the grader's notes on a hand-in begin: autograder.grading.verify writes them, the class report reads them."""

UNCONFIRMED = "unconfirmed:"  # a check passed in the kernel that the grader's own hidden test contradicts
TAMPERING = ("tampering:", "blocked:", "not counted:", "look at:")  # what the report lists under Tampering
