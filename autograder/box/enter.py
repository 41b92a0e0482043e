"""`python -m autograder.box.enter ENTRY -- COMMAND...`: run COMMAND inside the running box ENTRY names (its JSON,
autograder.box.box.Entry), as a kernel forked warm goes in (autograder.box.box.go_in). For a kernel started cold
(a restart, another kernel spec, a warm copy the machine could not fork): jupyter_client starts this in its place."""
from __future__ import annotations

import os
import sys

from autograder.box.box import Entry, carry_connection_file, go_in, inside_environment


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("usage: python -m autograder.box.enter ENTRY -- COMMAND...")
    entry, command = Entry.from_json(argv[0]), argv[2:]
    command, carry = carry_connection_file(command)
    try:
        os.setsid()  # a process group of its own, which jupyter_client signals (where it did not make one already)
    except PermissionError:
        pass
    go_in(entry, carry)
    os.execve(command[0], command, inside_environment(dict(os.environ)))


if __name__ == "__main__":
    main(sys.argv[1:])
