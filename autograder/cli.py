"""`python -m autograder <command>`: the instructor's command line."""
from __future__ import annotations

import argparse
import time


def _reference(args) -> None:
    from autograder.build_reference import write_references
    for path in write_references():
        print(f"wrote {path}")


def _fixtures(args) -> None:
    from autograder.fixtures import write_fixtures
    for path in write_fixtures():
        print(f"wrote {path}")


def _release(args) -> None:
    from autograder.release import release
    for path in release():
        print(f"released {path}")


def _demo(args) -> None:
    from autograder.demo import run_demo
    run_demo()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("reference", help="regenerate autograder/reference/ from the source notebooks' solutions"
                        ).set_defaults(run=_reference)
    commands.add_parser("fixtures", help="regenerate course/fixtures/ from the reference and the known mistakes"
                        ).set_defaults(run=_fixtures)
    commands.add_parser("release", help="nbgrader generate_assignment for every notebook, then validate --invert"
                        ).set_defaults(run=_release)
    demo = commands.add_parser("demo", help="build a demo class, grade it with nbgrader, print the scores")
    demo.set_defaults(run=_demo)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    args.run(args)
    print(f"({args.command} took {time.perf_counter() - started:.0f} s)")
    return 0
